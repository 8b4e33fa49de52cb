//! Attempt hooks (docs/retries.md §6.7): Rust closures run around every attempt a call makes — each retry
//! and each redirect hop — through the C `humus_attempt_hooks` table, on the settings (every call of a
//! client) or on one request.
//!
//! The closures are shared behind an `Arc` handed to the library as `user_data`: each table the library
//! holds owns one reference, released by its `destroy` exactly once, so the closures are dropped when the
//! last settings, client, request or call holding them is freed. Panics never cross into C: `before` turns
//! one (or an `Err`) into a failing callback, which ends the call with `HUMUS_E_CALLBACK`; `after` cannot
//! fail the call through C, so a panic in it is kept on the thread for the blocking call that ran it
//! (`Client::execute`, `Client::stream`), which then fails.
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::sync::Arc;

use humus_http_sys as sys;

use crate::classify::Attempt;
use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::settings::Settings;

/// What a `before` hook returns on failure: any error (`?` on an [`Error`], an `io::Error`, or
/// `"text".into()`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

type BeforeFn = dyn Fn(&mut AttemptRequest<'_>) -> Result<(), BoxError> + Send + Sync + 'static;
type AfterFn = dyn Fn(&Attempt<'_>) + Send + Sync + 'static;

/// Code run around every attempt a call makes, each retry and each redirect hop included (docs/retries.md §6.7),
/// as Python's `event_hooks` and C's `humus_attempt_hooks`: [`before`](AttemptHooks::before) just before the
/// attempt is sent, able to add or replace its headers; [`after`](AttemptHooks::after) once it is back, before
/// the classifier sees it. Install them on [`Settings::set_attempt_hooks`] (every call of a client built from
/// them) or [`Request::attempt_hooks`](crate::Request::attempt_hooks) (that request's calls, after the
/// settings' hooks).
///
/// **Threads.** Both run on the thread that drives the attempt: the caller's for
/// [`Client::execute`](crate::Client::execute) and [`Client::stream`](crate::Client::stream), the runtime's
/// event-loop thread for [`Client::submit`](crate::Client::submit), [`Client::submit_stream`](crate::Client::submit_stream)
/// and the `tower` service — possibly several at once for different calls, hence `Send + Sync`. They must be
/// short and must not block (on the loop they hold up every call of the runtime) nor call the client.
///
/// **Failures.** A `before` that returns `Err` or panics ends the call with
/// [`ErrorKind::Callback`](crate::ErrorKind::Callback): the attempt is not sent, the breaker gets no verdict,
/// no budget is charged, no retry follows; [`Error::panic_message`] carries what the hook said
/// (`"the attempt hook before failed: <your error>"` or `"... panicked: <message>"`). `after` cannot fail a
/// call in the C ABI; a panic in it is caught, and a blocking call that ran it then fails with
/// [`ErrorKind::Callback`](crate::ErrorKind::Callback) carrying the message (its response, already counted
/// by the breaker, is dropped); on the event loop (asynchronous calls) it is caught and dropped.
///
/// The closures are dropped once, when the last settings, client, request or call holding them is freed.
/// They should not capture the client or runtime (that would keep them alive forever).
#[derive(Default)]
pub struct AttemptHooks {
    before: Option<Box<BeforeFn>>,
    after: Option<Box<AfterFn>>,
}

impl AttemptHooks {
    /// No hooks yet: add [`before`](AttemptHooks::before), [`after`](AttemptHooks::after) or both (a table
    /// with neither is refused when installed, with [`ErrorKind::Program`](crate::ErrorKind::Program)).
    pub fn new() -> AttemptHooks {
        AttemptHooks::default()
    }

    /// Runs `hook` for every attempt the breaker and the bulkhead let go, just before it is sent: it reads the
    /// attempt's method, URL, number and headers, and may set headers for this attempt only
    /// ([`AttemptRequest::set_header`]). Returning `Err` ends the call (see [`AttemptHooks`]). Replaces a
    /// `before` set earlier.
    pub fn before<F>(mut self, hook: F) -> AttemptHooks
    where
        F: Fn(&mut AttemptRequest<'_>) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        self.before = Some(Box::new(hook));
        self
    }

    /// Runs `hook` once per attempt that reached the transport, before the classifier: its response's status
    /// and headers ([`Attempt::status`], [`Attempt::headers`]), or its error when it got no response
    /// ([`Attempt::error`]). Replaces an `after` set earlier.
    pub fn after<F>(mut self, hook: F) -> AttemptHooks
    where
        F: Fn(&Attempt<'_>) + Send + Sync + 'static,
    {
        self.after = Some(Box::new(hook));
        self
    }

    /// Hands the closures to the library through `install` (`humus_settings_set_attempt_hooks` or
    /// `humus_request_set_attempt_hooks` on a live object): one `Arc` reference is the table's, released by
    /// its `destroy`, or at once when the library refuses the table.
    pub(crate) fn install(
        hooks: &Arc<AttemptHooks>,
        install: impl FnOnce(*const sys::humus_attempt_hooks, *mut *mut sys::humus_error) -> sys::humus_status,
    ) -> Result<(), Error> {
        let user_data = Arc::into_raw(Arc::clone(hooks));
        let table = sys::humus_attempt_hooks {
            user_data: user_data.cast_mut().cast(),
            before: hooks.before.as_ref().map(|_| before_trampoline as _),
            after: hooks.after.as_ref().map(|_| after_trampoline as _),
            destroy: Some(release),
            ..sys::HUMUS_ATTEMPT_HOOKS_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        let status = install(&table, &mut err);
        if status != sys::HUMUS_OK {
            // SAFETY: refused, so the library will never call destroy: that reference is still ours.
            drop(unsafe { Arc::from_raw(user_data) });
        }
        ffi::check(status, err)
    }
}

impl std::fmt::Debug for AttemptHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptHooks")
            .field("before", &self.before.is_some())
            .field("after", &self.after.is_some())
            .finish()
    }
}

impl Settings {
    /// Installs attempt hooks for every call of a client built from these settings (docs/retries.md §6.7);
    /// replaces hooks set before. Copies of the settings ([`Settings::try_clone`], a client's own) share them.
    /// [`ErrorKind::Program`](crate::ErrorKind::Program) for a table with neither hook.
    pub fn set_attempt_hooks(&mut self, hooks: AttemptHooks) -> Result<(), Error> {
        let raw = self.raw_mut();
        AttemptHooks::install(&Arc::new(hooks), |table, err| {
            // SAFETY: we own the settings exclusively (&mut self); the table is copied by the call.
            unsafe { sys::humus_settings_set_attempt_hooks(raw, table, err) }
        })
    }
}

/// One attempt's request as a `before` hook sees it: borrowed for the hook's call, on its thread.
pub struct AttemptRequest<'a> {
    raw: *mut sys::humus_attempt_request,
    _borrow: PhantomData<&'a mut sys::humus_attempt_request>,
}

impl AttemptRequest<'_> {
    /// The method, e.g. `"GET"`.
    pub fn method(&self) -> &str {
        // SAFETY: the request is live for the hook's call, which `&self` cannot outlive.
        unsafe { ffi::borrowed_str(sys::humus_attempt_request_method(self.raw)) }.unwrap_or("")
    }

    /// The full URL of this attempt (a redirect hop's own).
    pub fn url(&self) -> &str {
        // SAFETY: as in `method`.
        unsafe { ffi::borrowed_str(sys::humus_attempt_request_url(self.raw)) }.unwrap_or("")
    }

    /// 1 for the first attempt of a request; a redirect hop starts again at 1.
    pub fn number(&self) -> u32 {
        // SAFETY: the request is live.
        u32::try_from(unsafe { sys::humus_attempt_request_number(self.raw) }).unwrap_or(0)
    }

    /// The headers this attempt is to send, in order: the configured ones, the call context's and the
    /// request's own, with what earlier [`set_header`](AttemptRequest::set_header) calls changed. The
    /// transport adds `Host`, `Content-Length` and the like after, and `traceparent` when a span sink traces
    /// the call. Copied (bytes that are not UTF-8 replaced with U+FFFD).
    pub fn headers(&self) -> Vec<(String, String)> {
        // SAFETY: the request is live and not changed during this call (`&self`); the strings are copied
        // before any set_header could invalidate them.
        unsafe {
            (0..sys::humus_attempt_request_header_count(self.raw))
                .filter_map(|i| {
                    let name = ffi::copy_str(sys::humus_attempt_request_header_name(self.raw, i))?;
                    let value = ffi::copy_str(sys::humus_attempt_request_header_value(self.raw, i))?;
                    Some((name, value))
                })
                .collect()
        }
    }

    /// The first value of a header this attempt is to send (case-insensitive name), as
    /// [`headers`](AttemptRequest::headers) lists them.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers().into_iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// Adds a header to this attempt, replacing every header of that name; the next attempt starts again
    /// from the call's own headers. Checked as [`Request::header`](crate::Request::header) is, and a header the
    /// client owns (`Host`, `Content-Length`, `Transfer-Encoding`, `Connection`, ...) is refused too:
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the header (return it with
    /// `?` to end the call).
    pub fn set_header(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let (n, v) = (ffi::c_string(name, name)?, ffi::c_string(value, name)?);
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the request is live, lent to this hook exclusively (`&mut self`); strings valid for the call.
        let status = unsafe { sys::humus_attempt_request_set_header(self.raw, n.as_ptr(), v.as_ptr(), &mut err) };
        ffi::check(status, err)
    }
}

impl std::fmt::Debug for AttemptRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptRequest")
            .field("number", &self.number())
            .field("method", &self.method())
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// `before` of the table: the hook's `Ok` sends the attempt; an `Err` or a panic fails the call, its reason
/// kept for the call's error.
///
/// # Safety
/// Called by the library with the `user_data` of `install` (a live `AttemptHooks` with a `before`) and a
/// live attempt request.
unsafe extern "C" fn before_trampoline(
    user_data: *mut c_void,
    request: *mut sys::humus_attempt_request,
) -> sys::humus_status {
    // SAFETY: user_data is the AttemptHooks shared by install, alive until destroy; shared use is fine (Sync).
    let hooks = unsafe { &*user_data.cast_const().cast::<AttemptHooks>() };
    let Some(before) = &hooks.before else {
        return sys::HUMUS_OK;
    };
    let mut view = AttemptRequest { raw: request, _borrow: PhantomData };
    match panic::catch("the attempt hook before", Report::ToCall, || before(&mut view)) {
        Some(Ok(())) => sys::HUMUS_OK,
        Some(Err(e)) => {
            panic::remember(format!("the attempt hook before failed: {e}"));
            sys::HUMUS_E_CALLBACK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}

/// `after` of the table. It cannot fail the call through C: a panic is kept for the blocking call on this
/// thread (see the module's comment).
///
/// # Safety
/// Called by the library with the `user_data` of `install` and a live attempt.
unsafe extern "C" fn after_trampoline(user_data: *mut c_void, attempt: *const sys::humus_attempt) {
    // SAFETY: as in before_trampoline.
    let hooks = unsafe { &*user_data.cast_const().cast::<AttemptHooks>() };
    let Some(after) = &hooks.after else {
        return;
    };
    let attempt = Attempt::borrowed(attempt);
    let _ = panic::catch("the attempt hook after", Report::ToBlockingCall, || after(&attempt));
}

/// `destroy` of the table: the library's reference to the hooks goes.
///
/// # Safety
/// `user_data` came from `Arc::<AttemptHooks>::into_raw` in `install`, and the library calls `destroy`
/// exactly once per table.
unsafe extern "C" fn release(user_data: *mut c_void) {
    // SAFETY: the caller's contract: one reference leaked by install, released once.
    let hooks = unsafe { Arc::from_raw(user_data.cast_const().cast::<AttemptHooks>()) };
    // The closures' captured values may panic in Drop; that must not unwind into the library.
    let _ = panic::catch("the attempt hooks' destructor", Report::Drop, move || drop(hooks));
}
