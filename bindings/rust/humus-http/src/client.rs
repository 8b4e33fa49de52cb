//! `Client`: one per dependency (docs/README.md §1), shared by every caller and thread. Blocking calls are here;
//! asynchronous ones are in `call.rs`.
use std::ptr::{self, NonNull};
use std::sync::Arc;

use humus_http_sys as sys;

use crate::breaker::{BreakerCounts, CircuitState};
use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::panic;
use crate::request::{base_prefix, RawRequest, Request};
use crate::response::{Response, StreamingResponse};
use crate::runtime::Runtime;
use crate::settings::Settings;

/// The client of one dependency: its connection pool, circuit breaker, retry budget and bulkhead. Build it
/// once and share it (`&Client` or `Arc<Client>`) between threads: it is `Send + Sync`.
pub struct Client {
    raw: NonNull<sys::humus_client>,
    runtime: Runtime,
    /// What relative request URLs are joined onto: the settings' base_url up to its path, ending in `/`.
    /// `None` for a registry's client (see [`Request`]).
    prefix: Option<String>,
    /// False for a view of a client an [`Upstreams`](crate::Upstreams) registry owns and frees.
    owned: bool,
}

// SAFETY: the header: "Thread-safe: every function on a client may be called from any thread at once,
// except humus_client_free", which runs only in Drop; blocking calls borrow the client, so none is in flight
// then (asynchronous ones are cancelled and waited for by humus_client_free itself).
unsafe impl Send for Client {}
// SAFETY: as above.
unsafe impl Sync for Client {}

impl Drop for Client {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: ours; freed before the runtime, whose handle we hold until after this.
            unsafe { sys::humus_client_free(self.raw.as_ptr()) }
        }
    }
}

impl Client {
    /// Builds a client from a runtime and settings (copied, callbacks shared). Rules across fields fail
    /// with [`ErrorKind::Program`] naming the fields (docs/settings.md §3.2); an unreadable TLS file with
    /// [`ErrorKind::Config`] naming its key; a virtual clock without a mock transport with
    /// [`ErrorKind::Misuse`].
    pub fn new(runtime: &Runtime, settings: &Settings) -> Result<Client, Error> {
        let mut raw: *mut sys::humus_client = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: runtime and settings are live; settings are only read (copied); any thread.
        let status = unsafe { sys::humus_client_new(runtime.raw(), settings.raw(), &mut raw, &mut err) };
        ffi::check(status, err)?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "humus_client_new: returned no client", Vec::new()))?;
        let prefix = settings.base_url()?.map(|base| base_prefix(&base));
        Ok(Client { raw, runtime: runtime.clone(), prefix, owned: true })
    }

    /// A view of a client the caller keeps alive and frees (an upstreams registry's).
    pub(crate) fn borrowed(raw: NonNull<sys::humus_client>, runtime: Runtime) -> Client {
        Client { raw, runtime, prefix: None, owned: false }
    }

    /// The C request for `request` on this client: a relative URL joined onto its base_url.
    pub(crate) fn request_for(&self, request: &Request) -> Result<Arc<RawRequest>, Error> {
        request.raw_for(self.prefix.as_deref())
    }

    /// Makes one call on this thread: every attempt, wait and redirect (docs/retries.md §6), cancelled through the
    /// request's [`CancelToken`](crate::CancelToken) if it has one.
    ///
    /// A response is returned whatever its status (404, 500, the last 503: the caller decides, docs/retries.md §6.6).
    /// Otherwise the call got no response and the error says why: [`ErrorKind::Rejected`] (breaker open),
    /// [`ErrorKind::BulkheadFull`], [`ErrorKind::Timeout`], [`ErrorKind::Cancelled`], a transport or TLS
    /// kind, [`ErrorKind::CrossOrigin`], [`ErrorKind::InvalidArgument`] (the request failed to build),
    /// [`ErrorKind::Callback`] (a classifier closure panicked), [`ErrorKind::Program`].
    pub fn execute(&self, request: &Request) -> Result<Response, Error> {
        let resp = self.call(request, sys::humus_client_do)?;
        // SAFETY: the response is ours.
        unsafe { Response::from_raw(resp) }
    }

    /// As [`execute`](Client::execute) — every attempt, wait and redirect on this thread — but returns once
    /// the final response's headers are in, its body still on the connection: read it with
    /// [`std::io::Read`] (`std::io::copy(&mut response, &mut file)`), in memory bounded by your buffer
    /// whatever its size, or whole with [`StreamingResponse::bytes`]. The breaker counts the call's result
    /// when the body is read to its end or the response dropped (docs/bodies.md §7); the response borrows
    /// the client, which it must not outlive. The call's `timeout` and the request's
    /// [`CancelToken`](crate::CancelToken) bound the reads too. Errors as [`execute`](Client::execute).
    ///
    /// Blocking; the asynchronous twin is [`submit_stream`](Client::submit_stream), whose body is a
    /// `futures_core::Stream` ([`submit`](Client::submit) buffers the body).
    pub fn stream(&self, request: &Request) -> Result<StreamingResponse<'_>, Error> {
        let resp = self.call(request, sys::humus_client_open)?;
        // SAFETY: the response is ours, of a call on `self`, which the result borrows; it keeps the
        // request's cancel token, which its reads use.
        unsafe { StreamingResponse::from_raw(resp) }
    }

    /// Runs `humus_client_do` or `humus_client_open`: the response, or the error with the message of a
    /// callback that panicked.
    fn call(
        &self,
        request: &Request,
        run: unsafe extern "C" fn(
            *mut sys::humus_client,
            *const sys::humus_request,
            *mut *mut sys::humus_response,
            *mut *mut sys::humus_error,
        ) -> sys::humus_status,
    ) -> Result<*mut sys::humus_response, Error> {
        let raw_request = self.request_for(request)?;
        // A panic left by a callback of an earlier call that did not fail must not be blamed on this one.
        let _ = (panic::take(), panic::take_after());
        let mut resp: *mut sys::humus_response = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: client and request are live; the request is only read, the token it names outlives the
        // call (the request holds it); out-parameters are ours.
        let status = unsafe { run(self.raw(), raw_request.as_ptr(), &mut resp, &mut err) };
        let panicked = panic::take();
        // Every attempt of this call ran on this thread: a panic of an attempt hook's `after` is this call's.
        let after_panicked = panic::take_after();
        if status != sys::HUMUS_OK {
            // SAFETY: the error is ours.
            return Err(unsafe { Error::from_raw(status, err) }.with_panic(panicked.or(after_panicked)));
        }
        if let Some(message) = after_panicked {
            // The C hook cannot fail the call: the response, already counted by the breaker, is dropped here
            // (a streamed one closed) and the call fails as a failing callback would.
            // SAFETY: the response is ours, freed once.
            let attempts = u32::try_from(unsafe { sys::humus_response_attempts(resp) }).unwrap_or(0);
            // SAFETY: as above.
            unsafe { sys::humus_response_free(resp) };
            let mut e = Error::new(ErrorKind::Callback, "an attempt hook failed the call", Vec::new());
            e.set_attempts(attempts);
            return Err(e.with_panic(Some(message)));
        }
        Ok(resp)
    }

    /// `GET url`: [`execute`](Client::execute) of [`Request::get`].
    pub fn get(&self, url: &str) -> Result<Response, Error> {
        self.execute(&Request::get(url))
    }

    /// The breaker's state now, after any due open → half-open advance (docs/breaker.md §9.2).
    pub fn breaker_state(&self) -> Result<CircuitState, Error> {
        let mut state: i32 = -1;
        // SAFETY: the client is live; any thread.
        ffi::check(unsafe { sys::humus_client_breaker_state(self.raw(), &mut state) }, ptr::null_mut())?;
        CircuitState::from_raw(state).ok_or_else(|| {
            Error::new(ErrorKind::Internal, format!("breaker state: unknown state {state}"), vec!["state".into()])
        })
    }

    /// The breaker's counts now (docs/breaker.md §9.3), after any due advance.
    pub fn breaker_counts(&self) -> Result<BreakerCounts, Error> {
        let mut counts = sys::HUMUS_BREAKER_COUNTS_INIT; // written up to the version it names
                                                         // SAFETY: the client is live; `counts` is ours; any thread.
        ffi::check(unsafe { sys::humus_client_breaker_counts(self.raw(), &mut counts) }, ptr::null_mut())?;
        Ok(BreakerCounts::from_raw(&counts))
    }

    /// The retry budget's balance (docs/retries.md §6.4): tokens for the token bucket, retries still allowed in the
    /// window for the ratio policy.
    pub fn budget_tokens(&self) -> Result<f64, Error> {
        let mut tokens = 0.0;
        // SAFETY: the client is live; `tokens` is ours; any thread.
        ffi::check(unsafe { sys::humus_client_budget_tokens(self.raw(), &mut tokens) }, ptr::null_mut())?;
        Ok(tokens)
    }

    /// The bulkhead's limit now (docs/bulkhead.md §11): `bulkhead.max_concurrent` for a fixed bulkhead; for an adaptive
    /// one (`bulkhead.mode` `"adaptive"`, §11.1) where its algorithm has moved it, within `bulkhead.min..=bulkhead.max`.
    pub fn bulkhead_limit(&self) -> Result<u32, Error> {
        let mut limit = 0u32;
        // SAFETY: the client is live; `limit` is ours; any thread.
        ffi::check(unsafe { sys::humus_client_bulkhead_limit(self.raw(), &mut limit) }, ptr::null_mut())?;
        Ok(limit)
    }

    /// The runtime this client was built from.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub(crate) fn raw(&self) -> *mut sys::humus_client {
        self.raw.as_ptr()
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No breaker read here: reading may advance it (docs/breaker.md §9.2), and printing should change nothing.
        f.debug_struct("Client").finish_non_exhaustive()
    }
}
