//! `Request`: one call's request, built with chained methods. The C request is built as they run; the first
//! refusal (a bad header, a zero timeout) is kept and becomes the outcome of every call made with the
//! request, as the conformance vectors expect ("that refusal is the call's outcome").
use std::ffi::c_void;
use std::io::{self, Read, Seek, SeekFrom};
use std::ptr::{self, NonNull};
use std::sync::{Mutex, TryLockError};
use std::time::Duration;

use humus_http_sys as sys;

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::panic::{self, Report};

/// Per-call override of the retry rules (docs/retries.md §4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RetryMode {
    /// The rules decide: idempotent methods and requests with an idempotency key are retried.
    #[default]
    Default,
    /// One attempt only.
    Forbid,
    /// Vouches for a request the rules would not retry (budget, deadline and breaker still apply).
    Force,
}

/// The call context (docs/telemetry.md §12): what the request being served carries, passed on to the dependency. Parts
/// left `None` are not sent; the `X-Request-ID` is never invented, and the `Authorization` is sent only
/// with the setting `forward_authorization`, and only a Bearer token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallContext {
    /// W3C `traceparent` of the request being served: the parent of the attempt spans.
    pub traceparent: Option<String>,
    /// W3C `tracestate`.
    pub tracestate: Option<String>,
    /// W3C `baggage` (its `humus.fault` member drives failure injection, docs/failure-injection.md §14).
    pub baggage: Option<String>,
    /// The `X-Request-ID` to pass on.
    pub request_id: Option<String>,
    /// The caller's `Authorization` (a Bearer token is forwarded only with `forward_authorization`).
    pub authorization: Option<String>,
}

/// One call's request (method, absolute URL, headers, body, per-call options). Send it with
/// [`Client::execute`](crate::Client::execute) or [`Client::submit`](crate::Client::submit), as many times
/// and from as many threads as you like.
///
/// Building never fails on the spot: the first refusal is kept (see [`Request::error`]) and every call made
/// with the request fails with it, having sent nothing.
pub struct Request {
    raw: Option<NonNull<sys::humus_request>>,
    error: Option<Error>,
    method: String,
    url: String,
}

// SAFETY: a C request is not bound to a thread.
unsafe impl Send for Request {}
// SAFETY: the header: "Not thread-safe: build it on one thread; humus_client_do only reads it, so one
// request may then be sent by several threads at once." Every change here takes `self` by value, so only
// reads (humus_client_do, humus_client_submit, which copies it) are reachable through `&Request`.
unsafe impl Sync for Request {}

impl Drop for Request {
    fn drop(&mut self) {
        if let Some(raw) = self.raw {
            // SAFETY: ours; no call is using it (calls borrow the request).
            unsafe { sys::humus_request_free(raw.as_ptr()) }
        }
    }
}

impl Request {
    /// A request of `method` (an RFC 9110 token, case-sensitive: `"GET"`) for an absolute http/https `url`
    /// on the client's origin (another origin fails with [`ErrorKind::CrossOrigin`] when sent).
    pub fn new(method: &str, url: &str) -> Request {
        let mut request = Request { raw: None, error: None, method: method.into(), url: url.into() };
        let made = check_scheme(url)
            .and_then(|()| ffi::c_string(method, "method"))
            .and_then(|m| Ok((m, ffi::c_string(url, "url")?)))
            .and_then(|(method, url)| {
                let mut raw: *mut sys::humus_request = ptr::null_mut();
                let mut err: *mut sys::humus_error = ptr::null_mut();
                // SAFETY: both strings are valid during the call; out-parameters are ours.
                let status = unsafe { sys::humus_request_new(method.as_ptr(), url.as_ptr(), &mut raw, &mut err) };
                ffi::check(status, err)?;
                NonNull::new(raw).ok_or_else(|| {
                    Error::new(ErrorKind::Internal, "humus_request_new: returned no request", Vec::new())
                })
            });
        match made {
            Ok(raw) => request.raw = Some(raw),
            Err(e) => request.error = Some(e),
        }
        request
    }

    /// A GET request.
    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    /// A HEAD request.
    pub fn head(url: &str) -> Request {
        Request::new("HEAD", url)
    }

    /// A POST request (not retried unless it carries an idempotency key or [`RetryMode::Force`]).
    pub fn post(url: &str) -> Request {
        Request::new("POST", url)
    }

    /// A PUT request.
    pub fn put(url: &str) -> Request {
        Request::new("PUT", url)
    }

    /// A PATCH request (not retried unless it carries an idempotency key or [`RetryMode::Force`]).
    pub fn patch(url: &str) -> Request {
        Request::new("PATCH", url)
    }

    /// A DELETE request.
    pub fn delete(url: &str) -> Request {
        Request::new("DELETE", url)
    }

    /// Applies one C setter unless an earlier step failed; its failure becomes the request's error.
    fn apply(mut self, step: impl FnOnce(*mut sys::humus_request) -> Result<(), Error>) -> Request {
        if self.error.is_none() {
            if let Some(raw) = self.raw {
                if let Err(e) = step(raw.as_ptr()) {
                    self.error = Some(e);
                }
            }
        }
        self
    }

    /// Adds a header (repeat for several values). An invalid name, or a value with CR, LF or NUL, is refused
    /// naming the header (docs/transport.md §10.5).
    pub fn header(self, name: &str, value: &str) -> Request {
        self.apply(|raw| {
            let (n, v) = (ffi::c_string(name, name)?, ffi::c_string(value, name)?);
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; strings are valid during the call.
            ffi::check(unsafe { sys::humus_request_set_header(raw, n.as_ptr(), v.as_ptr(), &mut err) }, err)
        })
    }

    /// Sets the body; the bytes are copied, so every attempt can replay them.
    pub fn body(self, body: impl AsRef<[u8]>) -> Request {
        self.apply(|raw| {
            let body = body.as_ref();
            // SAFETY: we own the request; `body` is valid for `len` bytes during the call (copied).
            ffi::check(unsafe { sys::humus_request_set_body(raw, body.as_ptr().cast(), body.len()) }, ptr::null_mut())
        })
    }

    /// Makes `body` the request's body, streamed as each attempt goes out (`humus_request_set_body_reader`)
    /// rather than copied: a GiB upload needs one buffer of memory. A [`Body::from_seekable`] is rewound for
    /// every attempt; a [`Body::from_reader`] cannot be, so the request makes **one** attempt whatever its
    /// method, idempotency key or [`RetryMode`] (docs/bodies.md §7), and serves one call (a second fails with
    /// [`ErrorKind::Misuse`]). A reader's error or panic fails the attempt with [`ErrorKind::Callback`], its
    /// message in [`Error::panic_message`]. The reader runs on the thread that drives the attempt — the
    /// caller's for [`Client::execute`](crate::Client::execute) and [`Client::stream`](crate::Client::stream),
    /// the event loop for [`Client::submit`](crate::Client::submit), where it must not block — and is
    /// dropped once, when the request and its calls are done with it. Replaces a body set before.
    pub fn body_stream(self, body: Body) -> Request {
        self.apply(|raw| {
            let mut table = sys::HUMUS_BODY_READER_INIT;
            table.length = body.length.and_then(|n| i64::try_from(n).ok()).unwrap_or(-1);
            table.read = Some(read_body);
            if matches!(body.source, Source::Seekable(_)) {
                table.rewind = Some(rewind_body);
            }
            table.destroy = Some(panic::destroy_box::<BodyReader>);
            let reader = Box::into_raw(Box::new(BodyReader { source: Mutex::new(body.source) }));
            table.user_data = reader.cast();
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; the table is copied; user_data is ours until destroy runs.
            let status = unsafe { sys::humus_request_set_body_reader(raw, &table, &mut err) };
            if status != sys::HUMUS_OK {
                // SAFETY: refused, so the library will never call destroy: the box is still ours alone.
                drop(unsafe { Box::from_raw(reader) });
            }
            ffi::check(status, err)
        })
    }

    /// Sets the `Idempotency-Key` header: the request becomes safe to send twice (docs/retries.md §4). The key must
    /// be non-empty, without CR, LF or NUL.
    pub fn idempotency_key(self, key: &str) -> Request {
        self.apply(|raw| {
            let key = ffi::c_string(key, "Idempotency-Key")?;
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; `key` is valid during the call.
            ffi::check(unsafe { sys::humus_request_set_idempotency_key(raw, key.as_ptr(), &mut err) }, err)
        })
    }

    /// Overrides the retry rules for this request (docs/retries.md §4).
    pub fn retry(self, mode: RetryMode) -> Request {
        self.apply(|raw| {
            let mode = match mode {
                RetryMode::Default => sys::HUMUS_RETRY_MODE_DEFAULT,
                RetryMode::Forbid => sys::HUMUS_RETRY_MODE_FORBID,
                RetryMode::Force => sys::HUMUS_RETRY_MODE_FORCE,
            };
            let mut err = ptr::null_mut();
            // SAFETY: we own the request; `err` is our out-parameter.
            let status = unsafe { sys::humus_request_set_retry(raw, mode, &mut err) };
            ffi::check(status, err)
        })
    }

    /// The caller's bound on the whole call; it ends at the earlier of this and the `timeout` setting.
    /// Whole milliseconds, rounded up; zero is refused (deadlines cannot be turned off, docs/timeouts.md §8), and so is
    /// more than an hour.
    pub fn timeout(self, timeout: Duration) -> Request {
        self.timeout_ms(i64::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(i64::MAX))
    }

    /// [`timeout`](Request::timeout) in milliseconds, as the C ABI takes it: values ≤ 0 are refused.
    pub fn timeout_ms(self, ms: i64) -> Request {
        self.apply(|raw| {
            let mut err = ptr::null_mut();
            // SAFETY: we own the request; `err` is our out-parameter.
            let status = unsafe { sys::humus_request_set_timeout_ms(raw, ms, &mut err) };
            ffi::check(status, err)
        })
    }

    /// Sets the call context (docs/telemetry.md §12). A value with CR, LF or NUL is refused, naming it.
    pub fn context(self, context: &CallContext) -> Request {
        self.apply(|raw| {
            let part =
                |value: &Option<String>, name: &str| value.as_deref().map(|v| ffi::c_string(v, name)).transpose();
            let traceparent = part(&context.traceparent, "traceparent")?;
            let tracestate = part(&context.tracestate, "tracestate")?;
            let baggage = part(&context.baggage, "baggage")?;
            let request_id = part(&context.request_id, "X-Request-ID")?;
            let authorization = part(&context.authorization, "Authorization")?;
            let ptr = |s: &Option<std::ffi::CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; every string (or NULL, "unset") is valid during the call.
            let status = unsafe {
                sys::humus_request_set_context(
                    raw,
                    ptr(&traceparent),
                    ptr(&tracestate),
                    ptr(&baggage),
                    ptr(&request_id),
                    ptr(&authorization),
                    &mut err,
                )
            };
            ffi::check(status, err)
        })
    }

    /// Calls made with this request — blocking and asynchronous — can be cancelled through `token` (the C
    /// request and every call made with it hold the library's token, so `token` may be dropped first).
    pub fn cancel_token(self, token: &CancelToken) -> Request {
        self.apply(|raw| {
            // SAFETY: we own the request and the token is live; humus_request_set_cancel has no err: its
            // only failure is a bad handle, which it reports by status alone.
            ffi::check(unsafe { sys::humus_request_set_cancel(raw, token.raw()) }, ptr::null_mut())
        })
    }

    /// The method given.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The URL given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The first refusal while building, if any: what every call made with this request fails with.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// The C request to send, or the building error.
    pub(crate) fn raw(&self) -> Result<*const sys::humus_request, Error> {
        match (&self.error, self.raw) {
            (Some(e), _) => Err(e.clone()),
            (None, Some(raw)) => Ok(raw.as_ptr()),
            (None, None) => Err(Error::new(ErrorKind::Internal, "request: not built", Vec::new())),
        }
    }
}

/// A request body streamed from a reader ([`Request::body_stream`]).
pub struct Body {
    source: Source,
    length: Option<u64>,
}

enum Source {
    Once(Box<dyn Read + Send>),
    Seekable(Box<dyn ReadSeek + Send>),
}

trait ReadSeek: Read + Seek {}
impl<T: Read + Seek + ?Sized> ReadSeek for T {}

impl Body {
    /// A body read once from `reader`: `length` bytes (sent with a Content-Length), or of unknown length
    /// (`None`: sent chunked on HTTP/1.1). It cannot be replayed: the request makes one attempt.
    pub fn from_reader(reader: impl Read + Send + 'static, length: Option<u64>) -> Body {
        Body { source: Source::Once(Box::new(reader)), length }
    }

    /// A body that can be replayed: each attempt seeks `reader` back to its start (offset 0) and reads it
    /// to its end. Its length is found by seeking to the end (unknown if that fails).
    pub fn from_seekable(mut reader: impl Read + Seek + Send + 'static) -> Body {
        let length = reader.seek(SeekFrom::End(0)).and_then(|end| reader.seek(SeekFrom::Start(0)).map(|_| end)).ok();
        Body { source: Source::Seekable(Box::new(reader)), length }
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let replayable = matches!(self.source, Source::Seekable(_));
        f.debug_struct("Body").field("length", &self.length).field("replayable", &replayable).finish()
    }
}

/// What the library's body reader holds as user_data. The library calls it one call at a time; the mutex
/// makes a breach of that (one request sent by two threads at once) a failing callback rather than a race.
struct BodyReader {
    source: Mutex<Source>,
}

impl BodyReader {
    fn with<R>(&self, f: impl FnOnce(&mut Source) -> io::Result<R>) -> io::Result<R> {
        match self.source.try_lock() {
            Ok(mut source) => f(&mut source),
            Err(TryLockError::WouldBlock) => Err(io::Error::other("the body is being read by another call")),
            Err(TryLockError::Poisoned(_)) => Err(io::Error::other("the body's reader panicked before")),
        }
    }
}

/// `read` of the body reader: fills up to `cap` bytes, 0 at the end.
unsafe extern "C" fn read_body(
    user_data: *mut c_void,
    buf: *mut c_void,
    cap: usize,
    n: *mut usize,
) -> sys::humus_status {
    // SAFETY: user_data is the BodyReader installed by body_stream, live until destroy.
    let reader = unsafe { &*user_data.cast::<BodyReader>() };
    // SAFETY: the library lends `cap` writable bytes at `buf` for this call. They may be uninitialised,
    // and a `&mut [u8]` must not see that: zeroed first.
    let buf = unsafe {
        ptr::write_bytes(buf.cast::<u8>(), 0, cap);
        std::slice::from_raw_parts_mut(buf.cast::<u8>(), cap)
    };
    let read = panic::catch("the request body's reader", Report::ToCall, || {
        reader.with(|source| loop {
            let got = match source {
                Source::Once(r) => r.read(buf),
                Source::Seekable(r) => r.read(buf),
            };
            match got {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        })
    });
    body_status(read, "read", |k| {
        // SAFETY: the library's out-parameter for this call.
        unsafe { *n = k }
    })
}

/// `rewind` of a seekable body: back to offset 0.
unsafe extern "C" fn rewind_body(user_data: *mut c_void) -> sys::humus_status {
    // SAFETY: as in read_body.
    let reader = unsafe { &*user_data.cast::<BodyReader>() };
    let rewound = panic::catch("the request body's seek", Report::ToCall, || {
        reader.with(|source| match source {
            Source::Seekable(r) => r.seek(SeekFrom::Start(0)).map(drop),
            Source::Once(_) => Err(io::Error::other("a body from a reader cannot be rewound")),
        })
    });
    body_status(rewound, "seek", drop)
}

/// The status of a body callback: OK (after `ok` took the value), or a failing callback whose reason is
/// kept for the call's error (a panic's was kept by `catch`).
fn body_status<T>(outcome: Option<io::Result<T>>, what: &str, ok: impl FnOnce(T)) -> sys::humus_status {
    match outcome {
        Some(Ok(value)) => {
            ok(value);
            sys::HUMUS_OK
        }
        Some(Err(e)) => {
            panic::remember(format!("the request body's {what} failed: {e}"));
            sys::HUMUS_E_CALLBACK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}

/// Refuses a scheme other than http and https, as `humus_request_new` documents; the library itself lets
/// one through (the call then fails as cross-origin), so the binding checks it. A URL without `://` is left
/// to the library, which refuses it.
fn check_scheme(url: &str) -> Result<(), Error> {
    match url.split_once("://") {
        Some((scheme, _)) if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") => {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("url: the scheme \"{scheme}\" is not http or https"),
                vec!["url".to_string()],
            ))
        }
        _ => Ok(()),
    }
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}
