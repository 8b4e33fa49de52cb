//! `Response`: what the dependency answered, copied out of the C response, which is freed at once — that
//! closes it, so its result is counted by the breaker and its probe slot freed without waiting for the
//! caller (docs/bodies.md §7; the core has already buffered the whole body). `StreamingResponse`: the same
//! head, its body read from the connection as the caller asks (`std::io::Read`), the C response freed on
//! drop.
use std::io;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use humus_http_sys as sys;

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::trace::{self, AttemptRecord};

/// Everything of a response but its body, copied out of a live C response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) attempts: u32,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) http_version: String,
    pub(crate) reason: String,
    pub(crate) url: String,
    pub(crate) redirects: Vec<Redirect>,
}

/// One redirect a call followed, with its head (`humus_response_redirect_at` and the
/// `humus_response_redirect_*` accessors): the 3xx status, the URL of the request that got it, and the
/// reason phrase, HTTP version and headers as the final response's accessors give them — what curl `-L -i`
/// prints for each hop. [`Response::redirects`] lists them oldest first, as Python's `Response.history` and
/// Go's `Response.Redirects`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Redirect {
    /// The redirect's status: 301, 302, 303, 307 or 308.
    pub status: u16,
    /// The URL of the request that got this redirect (the call's own for the first).
    pub url: String,
    /// Its reason phrase as the server sent it, as [`Response::reason`]: `""` over HTTP/2 or when it sent none.
    pub reason: String,
    /// `"1.1"` or `"2"`.
    pub http_version: String,
    /// Its headers in the order received, repeated names included (`Location` among them), bounded as the
    /// final response's are (`max_response_headers`). Bytes that are not UTF-8 are replaced with U+FFFD.
    pub headers: Vec<(String, String)>,
}

impl Redirect {
    /// The first value of one of its headers, by case-insensitive name (`"location"`); `None` if absent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The `count` headers `header_at` reads (`humus_response_header_at` or `humus_response_redirect_header_at`),
/// copied in order; one the library refuses is left out.
///
/// # Safety
/// `header_at` fills its two out-parameters with strings valid until it is called again, or fails.
unsafe fn copy_headers(
    count: usize,
    header_at: impl Fn(usize, *mut *const std::ffi::c_char, *mut *const std::ffi::c_char) -> sys::humus_status,
) -> Vec<(String, String)> {
    let mut headers = Vec::with_capacity(count);
    for i in 0..count {
        let mut name: *const std::ffi::c_char = ptr::null();
        let mut value: *const std::ffi::c_char = ptr::null();
        if header_at(i, &mut name, &mut value) == sys::HUMUS_OK {
            // SAFETY: the caller's contract: both strings are valid now.
            headers
                .push(unsafe { (ffi::copy_str(name).unwrap_or_default(), ffi::copy_str(value).unwrap_or_default()) });
        }
    }
    headers
}

/// Redirect `i` of a live response, or `None` when the library has none at `i`.
///
/// # Safety
/// `resp` is a live response.
unsafe fn copy_redirect(resp: *mut sys::humus_response, i: usize) -> Option<Redirect> {
    let mut status: i32 = 0;
    let mut url: *const std::ffi::c_char = ptr::null();
    // SAFETY: accessors of a live response (the caller's contract); borrowed strings are copied at once.
    unsafe {
        if sys::humus_response_redirect_at(resp, i, &mut status, &mut url) != sys::HUMUS_OK {
            return None;
        }
        Some(Redirect {
            status: u16::try_from(status).unwrap_or(0),
            url: ffi::copy_str(url).unwrap_or_default(),
            reason: ffi::copy_str(sys::humus_response_redirect_reason(resp, i)).unwrap_or_default(),
            http_version: ffi::copy_str(sys::humus_response_redirect_http_version(resp, i)).unwrap_or_default(),
            headers: copy_headers(sys::humus_response_redirect_header_count(resp, i), |j, name, value| {
                sys::humus_response_redirect_header_at(resp, i, j, name, value)
            }),
        })
    }
}

impl Head {
    /// # Safety
    /// `resp` is a live response.
    pub(crate) unsafe fn copy(resp: *mut sys::humus_response) -> Head {
        // SAFETY: accessors of a live response; borrowed strings are copied.
        unsafe {
            Head {
                status: u16::try_from(sys::humus_response_status(resp)).unwrap_or(0),
                attempts: u32::try_from(sys::humus_response_attempts(resp)).unwrap_or(0),
                headers: copy_headers(sys::humus_response_header_count(resp), |i, name, value| {
                    sys::humus_response_header_at(resp, i, name, value)
                }),
                http_version: ffi::copy_str(sys::humus_response_http_version(resp)).unwrap_or_default(),
                reason: ffi::copy_str(sys::humus_response_reason(resp)).unwrap_or_default(),
                url: ffi::copy_str(sys::humus_response_url(resp)).unwrap_or_default(),
                redirects: (0..sys::humus_response_redirect_count(resp))
                    .filter_map(|i| copy_redirect(resp, i))
                    .collect(),
            }
        }
    }
}

/// The rest of a live response's body, copied (`humus_response_body`: a streamed one is read to its end
/// first, bounded by `max_response_body`).
///
/// # Safety
/// `resp` is a live response no other thread uses.
unsafe fn copy_body(resp: *mut sys::humus_response) -> Result<Vec<u8>, Error> {
    let mut data: *const std::ffi::c_void = ptr::null();
    let mut len: usize = 0;
    let mut err: *mut sys::humus_error = ptr::null_mut();
    // SAFETY: the caller's contract; on success `data` is valid for `len` bytes until the response is freed.
    unsafe {
        ffi::check(sys::humus_response_body(resp, &mut data, &mut len, &mut err), err)?;
        if data.is_null() || len == 0 {
            return Ok(Vec::new());
        }
        Ok(std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec())
    }
}

/// The accessors of a response's head, the same on [`Response`] and [`StreamingResponse`].
macro_rules! head_accessors {
    () => {
        /// The HTTP status, e.g. 200.
        pub fn status(&self) -> u16 {
            self.head.status
        }

        /// Whether the status is 2xx.
        pub fn is_success(&self) -> bool {
            (200..300).contains(&self.head.status)
        }

        /// Attempts the call made, redirects' requests included (`humus_response_attempts`).
        pub fn attempts(&self) -> u32 {
            self.head.attempts
        }

        /// The first value of a header, by case-insensitive name; `None` if absent.
        pub fn header(&self, name: &str) -> Option<&str> {
            self.head.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
        }

        /// Every header in the order received, repeated names included. Bytes that are not UTF-8 are
        /// replaced with U+FFFD.
        pub fn headers(&self) -> &[(String, String)] {
            &self.head.headers
        }

        /// `"1.1"` or `"2"`.
        pub fn http_version(&self) -> &str {
            &self.head.http_version
        }

        /// The reason phrase of the status line as the server sent it (`humus_response_reason`): `"OK"`,
        /// `"Not Found"`, a custom one as it is; `""` when it sent none, and always over HTTP/2, which has
        /// none (reqwest has no such accessor: its `StatusCode::canonical_reason` is the standard phrase of
        /// the status, not the wire's). The library keeps at most its first 256 bytes, each control byte a
        /// space (docs/transport.md §10.7); bytes that are not UTF-8 are replaced with U+FFFD.
        pub fn reason(&self) -> &str {
            &self.head.reason
        }

        /// The URL of the last request, after redirects within the origin.
        pub fn url(&self) -> &str {
            &self.head.url
        }

        // Links by full path, as below.
        /// The redirects the call followed to get this response, oldest first (empty when it followed none,
        /// or with [`Request::follow_redirects(false)`](crate::Request::follow_redirects)): each hop's 3xx
        /// status, the URL of the request that got it, and its head (reason phrase, HTTP version, headers),
        /// as Python's `Response.history` and Go's `Response.Redirects`.
        #[doc(alias = "history")]
        pub fn redirects(&self) -> &[crate::Redirect] {
            &self.head.redirects
        }

        // Links by full path: this text is expanded into other modules, where short ones do not resolve.
        /// The error a 4xx or 5xx status makes, as reqwest's `error_for_status_ref`:
        /// [`ErrorKind::HttpStatus`](crate::ErrorKind::HttpStatus) with the status
        /// ([`Error::http_status`](crate::Error::http_status)) and the attempts made, the response kept; `Ok`
        /// for any other status. The URL is not repeated in the message (it may carry a token in its query).
        pub fn error_for_status_ref(&self) -> Result<&Self, Error> {
            match self.head.status_error() {
                Some(e) => Err(e),
                None => Ok(self),
            }
        }
    };
}
pub(crate) use head_accessors;

impl Head {
    pub(crate) fn status_error(&self) -> Option<Error> {
        let status = self.status;
        let side = match status {
            400..=499 => "a client error",
            500..=599 => "a server error",
            _ => return None,
        };
        let mut e = Error::new(
            ErrorKind::HttpStatus(status),
            format!("the response's status is {status} ({side})"),
            vec!["status".to_string()],
        );
        e.set_attempts(self.attempts);
        Some(e)
    }
}

/// [`serde_json::from_slice`] as the `json` methods report it: [`ErrorKind::Protocol`], the body not being the
/// JSON asked for.
#[cfg(feature = "json")]
fn decode_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| {
        Error::new(ErrorKind::Protocol, format!("the body is not the JSON asked for: {e}"), vec!["body".to_string()])
    })
}

/// The response a call returned: whatever its status (404, 500, the last 503 — the caller decides what it
/// means, docs/retries.md §6.6). Plain data: `Send`, `Sync`, no tie to the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    head: Head,
    body: Vec<u8>,
    /// The decision trace's JSON, copied with the rest (the C response is freed at once).
    trace: String,
}

impl Response {
    /// Copies a library response and frees it.
    ///
    /// # Safety
    /// `resp` is NULL or a response the library handed over, not used after this call.
    pub(crate) unsafe fn from_raw(resp: *mut sys::humus_response) -> Result<Response, Error> {
        if resp.is_null() {
            return Err(no_response());
        }
        // SAFETY: `resp` is live until the free below; what is read is copied.
        let copied = unsafe {
            copy_body(resp).map(|body| Response {
                head: Head::copy(resp),
                body,
                trace: trace::response_text(resp).unwrap_or_default(),
            })
        };
        // SAFETY: ours, freed once.
        unsafe { sys::humus_response_free(resp) };
        copied
    }

    /// A response made of its parts, for the unit tests of the `http` conversions.
    #[cfg(all(test, feature = "http"))]
    pub(crate) fn from_parts(head: Head, body: Vec<u8>) -> Response {
        Response { head, body, trace: String::new() }
    }

    head_accessors!();

    /// The whole body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.body)
    }

    /// The call's decision trace (docs/trace.md §20): one record per attempt, in order, this response's own
    /// last. Copied out with the response (the C ABI renders it as JSON, parsed here when asked for).
    pub fn trace(&self) -> Vec<AttemptRecord> {
        trace::parse(&self.trace)
    }

    /// The body, moved out.
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// The response itself for a status below 400, or the error a 4xx or 5xx makes (see
    /// [`error_for_status_ref`](Response::error_for_status_ref)), as reqwest's `error_for_status`.
    pub fn error_for_status(self) -> Result<Response, Error> {
        match self.head.status_error() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }

    /// The body deserialised from JSON (cargo feature `json`), as reqwest's `Response::json`; a body that
    /// is not that JSON is [`ErrorKind::Protocol`] naming `body`, with serde's reason.
    #[cfg(feature = "json")]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        decode_json(&self.body)
    }
}

pub(crate) fn no_response() -> Error {
    Error::new(ErrorKind::Internal, "the library reported success with no response", Vec::new())
}

/// A response whose body is still on its connection ([`Client::stream`]): its head is here, its body is
/// read with [`std::io::Read`] (each `read` is one `humus_response_read` into the caller's buffer, so memory
/// stays at that buffer whatever the body's size), or whole with [`bytes`](StreamingResponse::bytes) /
/// [`text`](StreamingResponse::text) / [`into_response`](StreamingResponse::into_response).
///
/// The call is not over until the body is read to its end (`read` returns 0) or the response dropped: that
/// is when the breaker counts its result — as it was classified, for a body dropped early; a read failing
/// mid-body is a breaker failure (docs/bodies.md §7) — and until then the call holds its bulkhead slot and
/// its connection. It borrows its [`Client`], which it must not outlive. `Send`, not `Sync`: reads on one
/// response never overlap.
pub struct StreamingResponse<'c> {
    raw: NonNull<sys::humus_response>,
    head: Head,
    _client: PhantomData<&'c Client>,
}

// SAFETY: a C response is not bound to a thread; every use takes `&mut self` or `self` (reads) or only
// reads the copied head, so calls on one response never overlap ("not concurrently on one response").
unsafe impl Send for StreamingResponse<'_> {}

impl Drop for StreamingResponse<'_> {
    fn drop(&mut self) {
        // SAFETY: ours, freed once; the borrow of the client keeps it alive until now.
        unsafe { sys::humus_response_free(self.raw.as_ptr()) }
    }
}

impl<'c> StreamingResponse<'c> {
    /// Takes a response of `humus_client_open`.
    ///
    /// # Safety
    /// `resp` is NULL or a response the library handed over, of a call on a client that lives for `'c`.
    /// The C response holds its request's cancel token itself, for the reads.
    pub(crate) unsafe fn from_raw(resp: *mut sys::humus_response) -> Result<StreamingResponse<'c>, Error> {
        let raw = NonNull::new(resp).ok_or_else(no_response)?;
        // SAFETY: live, ours.
        let head = unsafe { Head::copy(raw.as_ptr()) };
        Ok(StreamingResponse { raw, head, _client: PhantomData })
    }

    head_accessors!();

    /// The call's decision trace so far (docs/trace.md §20), rendered from the live response: complete once
    /// the body was read to its end; before, the last record's `breaker_after` is `None` (the body still
    /// holds the verdict, docs/bodies.md §7).
    pub fn trace(&self) -> Vec<AttemptRecord> {
        // SAFETY: live until drop, and freed by no other thread (reads take `&mut self`, drop `self`).
        unsafe { trace::response_text(self.raw.as_ptr()) }.map_or_else(Vec::new, |text| trace::parse(&text))
    }

    /// The rest of the body (all of it if nothing was read yet), read to its end: bounded by
    /// `max_response_body` (past it [`ErrorKind::TooLarge`], no breaker verdict), or the failure of a read.
    pub fn bytes(self) -> Result<Vec<u8>, Error> {
        // SAFETY: ours; `self` is consumed, so nothing reads it at the same time.
        unsafe { copy_body(self.raw.as_ptr()) }
    }

    /// [`bytes`](StreamingResponse::bytes) as UTF-8 text (bytes that are not UTF-8 are an
    /// [`ErrorKind::Protocol`] error).
    pub fn text(self) -> Result<String, Error> {
        String::from_utf8(self.bytes()?)
            .map_err(|e| Error::new(ErrorKind::Protocol, format!("the body is not UTF-8: {e}"), Vec::new()))
    }

    /// The rest of the body deserialised from JSON (cargo feature `json`): [`bytes`](StreamingResponse::bytes),
    /// then as [`Response::json`].
    #[cfg(feature = "json")]
    pub fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, Error> {
        decode_json(&self.bytes()?)
    }

    /// The buffered [`Response`]: the head and the rest of the body, as [`bytes`](StreamingResponse::bytes).
    pub fn into_response(self) -> Result<Response, Error> {
        let head = self.head.clone();
        // SAFETY: ours, alive until `self` drops at the end; the trace is read once the body has ended.
        let body = unsafe { copy_body(self.raw.as_ptr()) }?;
        // SAFETY: the same live response, read after its body ended, as the comment above says.
        let trace = unsafe { trace::response_text(self.raw.as_ptr()) }.unwrap_or_default();
        Ok(Response { head, body, trace })
    }
}

/// A read failing mid-body is an [`io::Error`] whose inner error is the [`Error`] (`get_ref()` and
/// `downcast_ref::<humus_http::Error>()`), of kind `ConnectionReset` for [`ErrorKind::ConnectionLost`],
/// `TimedOut` for [`ErrorKind::Timeout`], `Interrupted` never (a cancelled read is `Other`: it will not
/// succeed again). Every later read fails the same way.
impl io::Read for StreamingResponse<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut n: usize = 0;
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: ours, used by this `&mut self` alone; `buf` is valid for `buf.len()` bytes during the call.
        let status = unsafe {
            sys::humus_response_read(self.raw.as_ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut n, &mut err)
        };
        ffi::check(status, err).map_err(|e| {
            let kind = match e.kind() {
                ErrorKind::ConnectionLost => io::ErrorKind::ConnectionReset,
                ErrorKind::Timeout => io::ErrorKind::TimedOut,
                _ => io::ErrorKind::Other,
            };
            io::Error::new(kind, e)
        })?;
        Ok(n)
    }
}

impl std::fmt::Debug for StreamingResponse<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingResponse")
            .field("status", &self.head.status)
            .field("attempts", &self.head.attempts)
            .field("url", &self.head.url)
            .finish_non_exhaustive()
    }
}
