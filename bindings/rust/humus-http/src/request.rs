//! `Request`: one call's request, built with chained methods. The C request is built as they run; the first
//! refusal (a bad header, a zero timeout) is kept and becomes the outcome of every call made with the
//! request, as the conformance vectors expect ("that refusal is the call's outcome").
use std::ptr::{self, NonNull};
use std::time::Duration;

use humus_http_sys as sys;

use crate::cancel::CancelToken;
use crate::error::{Error, ErrorKind};
use crate::ffi;

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
