//! `Request`: one call's request, built with chained methods. The C request is built as they run; the first
//! refusal (a bad header, a zero timeout) is kept and becomes the outcome of every call made with the
//! request, as the conformance vectors expect ("that refusal is the call's outcome").
//!
//! Each step is also kept, so the C request can be made again for another URL: `query` changes the URL,
//! and a relative URL is joined onto the base_url of the client that sends it (the C ABI takes the URL
//! only at `humus_request_new`).
use std::ffi::c_void;
use std::io::{self, Read, Seek, SeekFrom};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, TryLockError};
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

/// One call's request (method, URL, headers, body, per-call options). Send it with
/// [`Client::execute`](crate::Client::execute) or [`Client::submit`](crate::Client::submit), as many times
/// and from as many threads as you like.
///
/// The URL is absolute (`https://payments:8443/v1/x`), or relative (`/v1/x`, `v1/x?a=1`): a relative one is
/// joined onto the `base_url` of the client that sends it, as Python's client joins it — `base_url`'s scheme,
/// authority and path, a `/` added after the path if it has none, then the URL without its leading `/`s (so
/// `/v1/x` on `https://payments:8443/api` is `https://payments:8443/api/v1/x`). A client of an
/// [`Upstreams`](crate::Upstreams) registry does not know its base_url: a relative URL sent through one fails
/// with [`ErrorKind::InvalidArgument`] naming `url`.
///
/// Building never fails on the spot: the first refusal is kept (see [`Request::error`]) and every call made
/// with the request fails with it, having sent nothing. A relative request's steps are checked as they
/// run too, on a C request for the placeholder origin `http://relative.invalid`, which is never sent.
pub struct Request {
    raw: Option<Arc<RawRequest>>,
    /// The C request of a relative URL joined onto the last client's base_url: (that prefix, the request).
    joined: Mutex<Option<(String, Arc<RawRequest>)>>,
    /// Every step applied, to build the C request again for another URL.
    steps: Vec<Step>,
    error: Option<Error>,
    method: String,
    url: String,
}

/// One builder step on a C request, kept to be applied again.
type Step = Arc<dyn Fn(*mut sys::humus_request) -> Result<(), Error> + Send + Sync>;

/// A C request this binding owns, freed on drop. Shared (`Arc`) by a [`Request`] and the calls using it.
pub(crate) struct RawRequest(NonNull<sys::humus_request>);

// SAFETY: a C request is not bound to a thread.
unsafe impl Send for RawRequest {}
// SAFETY: the header: "Not thread-safe: build it on one thread; humus_client_do only reads it, so one
// request may then be sent by several threads at once." A RawRequest is changed only while being built,
// before it is shared; afterwards only reads (humus_client_do, humus_client_submit, which copies it) reach it.
unsafe impl Sync for RawRequest {}

impl Drop for RawRequest {
    fn drop(&mut self) {
        // SAFETY: ours; no call is using it (calls hold the Arc).
        unsafe { sys::humus_request_free(self.0.as_ptr()) }
    }
}

impl RawRequest {
    /// `humus_request_new` of `method` and `url`, then every step in order.
    fn build(method: &str, url: &str, steps: &[Step]) -> Result<RawRequest, Error> {
        check_scheme(url)?;
        let (m, u) = (ffi::c_string(method, "method")?, ffi::c_string(url, "url")?);
        let mut raw: *mut sys::humus_request = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: both strings are valid during the call; out-parameters are ours.
        let status = unsafe { sys::humus_request_new(m.as_ptr(), u.as_ptr(), &mut raw, &mut err) };
        ffi::check(status, err)?;
        let raw = NonNull::new(raw)
            .map(RawRequest)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "humus_request_new: returned no request", Vec::new()))?;
        for step in steps {
            step(raw.0.as_ptr())?;
        }
        Ok(raw)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::humus_request {
        self.0.as_ptr()
    }
}

/// The origin a relative request is checked on while it is built (never sent: a client joins it).
const PLACEHOLDER_PREFIX: &str = "http://relative.invalid/";

/// Whether `url` is absolute (has a scheme), as opposed to a path to join onto a base_url.
fn is_absolute(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    })
}

/// `prefix` (a base_url's scheme://authority/path/, see [`base_prefix`]) and a relative URL, joined.
fn join(prefix: &str, relative: &str) -> String {
    format!("{prefix}{}", relative.trim_start_matches('/'))
}

/// What relative URLs are joined onto: `base_url`'s scheme, authority and path, ending in `/` (its query and
/// fragment dropped), as Python's `_prefix_of`.
pub(crate) fn base_prefix(base_url: &str) -> String {
    let after_scheme = base_url.find("://").map_or(0, |i| i + 3);
    let end = base_url[after_scheme..].find(['?', '#']).map_or(base_url.len(), |i| after_scheme + i);
    let base = &base_url[..end];
    if base.ends_with('/') {
        base.to_string()
    } else {
        format!("{base}/")
    }
}

/// `application/x-www-form-urlencoded` (the WHATWG serializer, as reqwest's `serde_urlencoded`): ASCII
/// letters, digits and `*-._` kept, a space as `+`, every other byte of the UTF-8 as `%XX`.
fn form_encode<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    fn push(out: &mut String, s: &str) {
        for b in s.bytes() {
            match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(char::from(b)),
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
    }
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        push(&mut out, k.as_ref());
        out.push('=');
        push(&mut out, v.as_ref());
    }
    out
}

impl Request {
    /// A request of `method` (an RFC 9110 token, case-sensitive: `"GET"`) for `url`: an absolute http/https
    /// URL on the client's origin (another origin fails with [`ErrorKind::CrossOrigin`] when sent), or a
    /// relative one that the client joins onto its base_url (see [`Request`]).
    pub fn new(method: &str, url: &str) -> Request {
        let mut request = Request {
            raw: None,
            joined: Mutex::new(None),
            steps: Vec::new(),
            error: None,
            method: method.into(),
            url: url.into(),
        };
        request.rebuild();
        request
    }

    /// Builds the C request for the current URL again (a relative one on the placeholder origin), with
    /// every step so far.
    fn rebuild(&mut self) {
        let url = if is_absolute(&self.url) { self.url.clone() } else { join(PLACEHOLDER_PREFIX, &self.url) };
        self.raw = None;
        *self.joined.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        match RawRequest::build(&self.method, &url, &self.steps) {
            Ok(raw) => self.raw = Some(Arc::new(raw)),
            Err(e) => self.error = Some(e),
        }
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

    /// Applies one C setter unless an earlier step failed; its failure becomes the request's error. The
    /// step is kept, to be applied again to a C request built for another URL.
    fn apply(mut self, step: impl Fn(*mut sys::humus_request) -> Result<(), Error> + Send + Sync + 'static) -> Request {
        if self.error.is_none() {
            if let Some(raw) = &self.raw {
                // Not shared yet: only this request holds the Arc while it is being built.
                if let Err(e) = step(raw.0.as_ptr()) {
                    self.error = Some(e);
                    return self;
                }
            }
            self.steps.push(Arc::new(step));
        }
        self
    }

    /// Adds a header (repeat for several values). An invalid name, or a value with CR, LF or NUL, is refused
    /// naming the header (docs/transport.md §10.5).
    pub fn header(self, name: &str, value: &str) -> Request {
        let (name, value) = (name.to_string(), value.to_string());
        self.apply(move |raw| {
            let (n, v) = (ffi::c_string(&name, &name)?, ffi::c_string(&value, &name)?);
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; strings are valid during the call.
            ffi::check(unsafe { sys::humus_request_set_header(raw, n.as_ptr(), v.as_ptr(), &mut err) }, err)
        })
    }

    /// Sends no header `name` (case-insensitive) unless one is set after this step, as curl's `-H 'Name:'`
    /// (`humus_request_remove_header`, docs/transport.md §10.5): removes the ones set before, and leaves out
    /// those the client would add itself — the settings' `headers`, the [`CallContext`]'s, the per-attempt ones
    /// (a span's `traceparent`, `deadline_header`) and libcurl's own `Accept`, `User-Agent` and
    /// `Accept-Encoding` (without an `Accept-Encoding` the body comes as sent, not decoded). A
    /// [`header`](Request::header) of the name after this step is sent; one set to `""` is sent empty (curl's
    /// `-H 'Name;'`). The headers a caller may not set (`Host`, the framing and connection headers) may not be
    /// removed either: refused naming the header, as [`header`](Request::header) refuses them.
    pub fn remove_header(self, name: &str) -> Request {
        let name = name.to_string();
        self.apply(move |raw| {
            let n = ffi::c_string(&name, &name)?;
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; `n` is valid during the call.
            ffi::check(unsafe { sys::humus_request_remove_header(raw, n.as_ptr(), &mut err) }, err)
        })
    }

    /// Appends `pairs` to the URL's query, form-encoded (`?a=1&b=x+y`; after a query the URL has, before its
    /// fragment), as reqwest's `RequestBuilder::query`. Repeat for more; an empty slice changes nothing. The
    /// C request is built again for the new URL, with every step so far.
    pub fn query<K: AsRef<str>, V: AsRef<str>>(mut self, pairs: &[(K, V)]) -> Request {
        let encoded = form_encode(pairs);
        if encoded.is_empty() {
            return self;
        }
        let (base, fragment) = self.url.split_at(self.url.find('#').unwrap_or(self.url.len()));
        let separator = match base.find('?') {
            None => "?",
            Some(_) if base.ends_with('?') || base.ends_with('&') => "",
            Some(_) => "&",
        };
        self.url = format!("{base}{separator}{encoded}{fragment}");
        if self.error.is_none() {
            self.rebuild();
        }
        self
    }

    /// Sets `pairs` form-encoded as the body, with `Content-Type: application/x-www-form-urlencoded`, as
    /// reqwest's `RequestBuilder::form`.
    pub fn form<K: AsRef<str>, V: AsRef<str>>(self, pairs: &[(K, V)]) -> Request {
        self.header("Content-Type", "application/x-www-form-urlencoded").body(form_encode(pairs))
    }

    /// Sets `value` serialised as JSON as the body, with `Content-Type: application/json`, as reqwest's
    /// `RequestBuilder::json` (cargo feature `json`). A value serde cannot serialise (a map with non-string
    /// keys) is the request's refusal: [`ErrorKind::InvalidArgument`] naming `body`.
    #[cfg(feature = "json")]
    pub fn json<T: serde::Serialize + ?Sized>(mut self, value: &T) -> Request {
        match serde_json::to_vec(value) {
            Ok(body) => self.header("Content-Type", "application/json").body(body),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("body: the value cannot be serialised as JSON: {e}"),
                        vec!["body".to_string()],
                    ));
                }
                self
            }
        }
    }

    /// Sets the body; the bytes are copied, so every attempt can replay them.
    pub fn body(self, body: impl AsRef<[u8]>) -> Request {
        let body = body.as_ref().to_vec();
        self.apply(move |raw| {
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
        let length = body.length.and_then(|n| i64::try_from(n).ok()).unwrap_or(-1);
        let seekable = matches!(body.source, Source::Seekable(_));
        // One reader, shared by every C request built for this request (another URL builds another).
        let reader = Arc::new(BodyReader { source: Mutex::new(body.source) });
        self.apply(move |raw| {
            let mut table = sys::HUMUS_BODY_READER_INIT;
            table.length = length;
            table.read = Some(read_body);
            if seekable {
                table.rewind = Some(rewind_body);
            }
            table.destroy = Some(release_body);
            let user_data = Arc::into_raw(Arc::clone(&reader));
            table.user_data = user_data.cast_mut().cast();
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; the table is copied; user_data is the library's until destroy runs.
            let status = unsafe { sys::humus_request_set_body_reader(raw, &table, &mut err) };
            if status != sys::HUMUS_OK {
                // SAFETY: refused, so the library will never call destroy: that reference is still ours.
                drop(unsafe { Arc::from_raw(user_data) });
            }
            ffi::check(status, err)
        })
    }

    /// Sets the `Idempotency-Key` header: the request becomes safe to send twice (docs/retries.md §4). The key must
    /// be non-empty, without CR, LF or NUL.
    pub fn idempotency_key(self, key: &str) -> Request {
        let key = key.to_string();
        self.apply(move |raw| {
            let key = ffi::c_string(&key, "Idempotency-Key")?;
            let mut err: *mut sys::humus_error = ptr::null_mut();
            // SAFETY: we own the request; `key` is valid during the call.
            ffi::check(unsafe { sys::humus_request_set_idempotency_key(raw, key.as_ptr(), &mut err) }, err)
        })
    }

    /// Whether calls made with this request follow redirects within the origin (docs/origin.md §2): `true`, the
    /// default, follows up to 10 (each hop is listed in [`Response::redirects`](crate::Response::redirects));
    /// `false` returns the first 3xx as the response, its `Location` for the caller to decide, as Python's
    /// `follow_redirects=False` and Go's `http.ErrUseLastResponse`.
    pub fn follow_redirects(self, follow: bool) -> Request {
        self.apply(move |raw| {
            let mut err = ptr::null_mut();
            // SAFETY: we own the request; `err` is our out-parameter.
            let status = unsafe { sys::humus_request_set_follow_redirects(raw, i32::from(follow), &mut err) };
            ffi::check(status, err)
        })
    }

    /// Runs `hooks` around every attempt of this request's calls, after the settings' hooks
    /// (docs/retries.md §6.7; see [`AttemptHooks`](crate::AttemptHooks) for what they may do, on which thread, and
    /// how a failing one ends the call). Replaces hooks set on this request before; the closures are shared
    /// by every C request built for it and dropped once, when the last of them and its calls are freed.
    pub fn attempt_hooks(self, hooks: crate::AttemptHooks) -> Request {
        let hooks = Arc::new(hooks);
        self.apply(move |raw| {
            crate::AttemptHooks::install(&hooks, |table, err| {
                // SAFETY: we own the request (being built, not shared yet); the table is copied by the call.
                unsafe { sys::humus_request_set_attempt_hooks(raw, table, err) }
            })
        })
    }

    /// Overrides the retry rules for this request (docs/retries.md §4).
    pub fn retry(self, mode: RetryMode) -> Request {
        self.apply(move |raw| {
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

    /// Bounds the call by an absolute deadline, such as an incoming request's
    /// (`deadline_from_headers`, feature `http`; docs/timeouts.md §8.4): its timeout becomes what is
    /// left now, in whole milliseconds rounded down, at least 1 (a deadline already passed ends the call at once
    /// with a timeout) and at most an hour (the `timeout` setting's bound). Build the request when the call is
    /// made: the time left is taken here.
    pub fn deadline(self, deadline: std::time::Instant) -> Request {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        self.timeout_ms(i64::try_from(left.as_millis()).unwrap_or(i64::MAX).clamp(1, 3_600_000))
    }

    /// [`timeout`](Request::timeout) in milliseconds, as the C ABI takes it: values ≤ 0 are refused.
    pub fn timeout_ms(self, ms: i64) -> Request {
        self.apply(move |raw| {
            let mut err = ptr::null_mut();
            // SAFETY: we own the request; `err` is our out-parameter.
            let status = unsafe { sys::humus_request_set_timeout_ms(raw, ms, &mut err) };
            ffi::check(status, err)
        })
    }

    /// Sets the call context (docs/telemetry.md §12). A value with CR, LF or NUL is refused, naming it.
    pub fn context(self, context: &CallContext) -> Request {
        let context = context.clone();
        self.apply(move |raw| {
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
        let token = token.clone();
        self.apply(move |raw| {
            // SAFETY: we own the request and the token is live; humus_request_set_cancel has no err: its
            // only failure is a bad handle, which it reports by status alone.
            ffi::check(unsafe { sys::humus_request_set_cancel(raw, token.raw()) }, ptr::null_mut())
        })
    }

    /// The method given.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The URL given, with the [`query`](Request::query) pairs added; a relative one as it is (the client
    /// that sends it joins it onto its base_url).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The first refusal while building, if any: what every call made with this request fails with.
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// The C request to send through a client whose base_url gives `prefix` ([`base_prefix`]; `None`: the
    /// client does not know it), or the building error. An absolute URL's is the one built step by step; a
    /// relative URL's is built joined onto `prefix` the first time, and kept for the next call with it.
    pub(crate) fn raw_for(&self, prefix: Option<&str>) -> Result<Arc<RawRequest>, Error> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let Some(raw) = &self.raw else {
            return Err(Error::new(ErrorKind::Internal, "request: not built", Vec::new()));
        };
        if is_absolute(&self.url) {
            return Ok(Arc::clone(raw));
        }
        let Some(prefix) = prefix else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "url: a relative URL needs a client that knows its base_url (Client::new); \
                 a client of an Upstreams registry takes absolute URLs",
                vec!["url".to_string()],
            ));
        };
        let mut joined = self.joined.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((for_prefix, raw)) = joined.as_ref() {
            if for_prefix == prefix {
                return Ok(Arc::clone(raw));
            }
        }
        let raw = Arc::new(RawRequest::build(&self.method, &join(prefix, &self.url), &self.steps)?);
        *joined = Some((prefix.to_string(), Arc::clone(&raw)));
        Ok(raw)
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

/// `destroy` of the body reader: the library's reference to the shared reader goes.
///
/// # Safety
/// `user_data` came from `Arc::<BodyReader>::into_raw` and the library calls `destroy` exactly once.
unsafe extern "C" fn release_body(user_data: *mut c_void) {
    // SAFETY: the caller's contract: one reference leaked by body_stream, released once.
    let reader = unsafe { Arc::from_raw(user_data.cast_const().cast::<BodyReader>()) };
    // The reader's Drop may panic; it must not unwind into the library.
    let _ = panic::catch("the request body's destructor", Report::Drop, move || drop(reader));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_form_encoded() {
        assert_eq!(form_encode(&[("a b", "x&y=z"), ("é", "*-._~/")]), "a+b=x%26y%3Dz&%C3%A9=*-._%7E%2F");
        assert_eq!(form_encode::<&str, &str>(&[]), "");
    }

    #[test]
    fn relative_urls_join_as_in_python() {
        assert_eq!(base_prefix("https://p:8443"), "https://p:8443/");
        assert_eq!(base_prefix("https://p:8443/api?x=1#f"), "https://p:8443/api/");
        assert_eq!(join(&base_prefix("https://p:8443/api/"), "//v1/x?q"), "https://p:8443/api/v1/x?q");
        assert!(is_absolute("HTTPS://p/x") && !is_absolute("/a://b") && !is_absolute("v1/x"));
    }

    #[test]
    fn query_goes_before_the_fragment_and_keeps_the_steps() {
        let request = Request::get("http://p/x?a=1#top").header("X-A", "1").query(&[("b", "2")]);
        assert_eq!(request.url(), "http://p/x?a=1&b=2#top");
        assert!(request.error().is_none());
        let refused = Request::get("http://p/x").header("Bad\nName", "v").query(&[("b", "2")]);
        assert_eq!(refused.error().map(Error::kind), Some(ErrorKind::InvalidArgument));
    }
}
