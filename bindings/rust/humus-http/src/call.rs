//! Asynchronous calls (docs/bindings.md §17.1): `humus_client_submit` with a completion trampoline. The outcome is
//! delivered once on the runtime's event-loop thread, either to a closure (`Client::submit_with`) or to a
//! `Call` that a thread can wait on or an executor can poll (`Future`).
use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use humus_http_sys as sys;

use crate::client::Client;
use crate::error::Error;
use crate::panic::{self, Report};
use crate::request::Request;
use crate::response::Response;
use crate::runtime::Runtime;

/// The C handle of a call in flight. Made before the call is submitted, so a cancel can arrive before the
/// library has returned the handle; the completion holds it until the call ends.
///
/// It keeps the runtime alive: humus_call_cancel posts to the runtime's event loop even after the call has
/// ended, so a handle outliving its runtime would touch freed memory. The last runtime handle is never
/// dropped here on the event loop: the completion's reference goes before humus_client_free returns, and the
/// client holds a runtime handle until then.
pub(crate) struct RawCall {
    raw: AtomicPtr<sys::humus_call>,
    cancel_requested: AtomicBool,
    _runtime: Runtime,
}

// SAFETY: humus_call_cancel is documented "Any thread, including inside callbacks"; humus_call_free runs
// only in Drop, when no reference is left.
unsafe impl Send for RawCall {}
// SAFETY: as above: `&RawCall` reaches only humus_call_cancel.
unsafe impl Sync for RawCall {}

impl RawCall {
    fn new(runtime: Runtime) -> Arc<RawCall> {
        Arc::new(RawCall {
            raw: AtomicPtr::new(ptr::null_mut()),
            cancel_requested: AtomicBool::new(false),
            _runtime: runtime,
        })
    }

    /// Stores the handle the library returned; honours a cancel that came first.
    fn attach(&self, raw: *mut sys::humus_call) {
        // SeqCst here and in cancel(): of "store handle, read flag" and "store flag, read handle", at least
        // one side sees the other's store, so a cancel is never lost.
        self.raw.store(raw, Ordering::SeqCst);
        if self.cancel_requested.load(Ordering::SeqCst) {
            // SAFETY: `raw` is the live handle we own; cancelling twice or after the end does nothing.
            unsafe { sys::humus_call_cancel(raw) };
        }
    }

    pub(crate) fn cancel(&self) {
        self.cancel_requested.store(true, Ordering::SeqCst);
        let raw = self.raw.load(Ordering::SeqCst);
        if !raw.is_null() {
            // SAFETY: the handle lives until Drop, which cannot run while `&self` exists.
            unsafe { sys::humus_call_cancel(raw) };
        }
    }
}

impl Drop for RawCall {
    fn drop(&mut self) {
        // SAFETY: ours (NULL is accepted); releasing the handle does not stop the call. The runtime is
        // still alive: its handle is a field, dropped after this.
        unsafe { sys::humus_call_free(*self.raw.get_mut()) }
    }
}

/// A handle that cancels an asynchronous call from any thread, including from inside callbacks. Clones
/// cancel the same call; dropping one does not cancel it.
#[derive(Clone)]
pub struct CallHandle {
    pub(crate) call: Arc<RawCall>,
}

impl CallHandle {
    /// Cancels the call: it ends as soon as the event loop gets to it, with
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) or the response it had buffered before a
    /// retry. Nothing once it has ended.
    pub fn cancel(&self) {
        self.call.cancel();
    }
}

impl std::fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHandle").finish_non_exhaustive()
    }
}

/// What the completion trampoline owns: the handle (kept alive until the end), how a response is taken over
/// (`T`: a buffered [`Response`] or an open body), and where the outcome goes.
struct Completion<T> {
    call: Arc<RawCall>,
    take: unsafe fn(*mut sys::humus_response) -> Result<T, Error>,
    deliver: Box<dyn FnOnce(Result<T, Error>) + Send>,
}

/// The C function that starts a call: `humus_client_submit` or `humus_client_submit_open`.
pub(crate) type SubmitFn = unsafe extern "C" fn(
    *mut sys::humus_client,
    *const sys::humus_request,
    sys::humus_call_done,
    *mut c_void,
    *mut *mut sys::humus_call,
    *mut *mut sys::humus_error,
) -> sys::humus_status;

/// # Safety
/// Called once by the library with the `user_data` of `submit_raw` (a boxed `Completion<T>`), and a response
/// (on HUMUS_OK) or an error that are ours to free.
unsafe extern "C" fn on_done<T>(
    user_data: *mut c_void,
    status: sys::humus_status,
    resp: *mut sys::humus_response,
    err: *mut sys::humus_error,
) {
    // SAFETY: the box leaked by submit_raw, handed back exactly once.
    let completion = unsafe { Box::from_raw(user_data.cast::<Completion<T>>()) };
    // A callback that failed this call panicked on this thread (the loop's): its message is waiting here.
    let panicked = panic::take();
    // An attempt hook's `after` that panicked on the loop cannot be tied to its call here (other calls'
    // attempts run in between): dropped, as documented on AttemptHooks.
    let _ = panic::take_after();
    let outcome = if status == sys::HUMUS_OK {
        // SAFETY: on HUMUS_OK the response is ours (an error, if any, too).
        unsafe {
            sys::humus_error_free(err);
            (completion.take)(resp)
        }
    } else {
        // SAFETY: otherwise the error is ours (and a response, if any, too).
        unsafe {
            sys::humus_response_free(resp);
            Err(Error::from_raw(status, err).with_panic(panicked))
        }
    };
    let Completion { call, deliver, .. } = *completion;
    // A panicking completion closure must not unwind into the event loop; it has no one to report to.
    let _ = panic::catch("completion callback", Report::Drop, move || deliver(outcome));
    drop(call);
}

impl Client {
    /// Starts the call with `submit` and returns at once; `take` turns the response over (on the event-loop
    /// thread) and `deliver` receives the outcome once, there too.
    ///
    /// # Safety
    /// `take` accepts a response of `submit` that is handed over to it.
    pub(crate) unsafe fn submit_raw<T: 'static>(
        &self,
        request: &Request,
        submit: SubmitFn,
        take: unsafe fn(*mut sys::humus_response) -> Result<T, Error>,
        deliver: Box<dyn FnOnce(Result<T, Error>) + Send>,
    ) -> Result<Arc<RawCall>, Error> {
        let raw_request = self.request_for(request)?;
        let call = RawCall::new(self.runtime().clone());
        let user_data = Box::into_raw(Box::new(Completion { call: Arc::clone(&call), take, deliver }));
        let mut handle: *mut sys::humus_call = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: client and request are live; the library copies the request; `user_data` is handed over
        // for exactly one completion, which on_done::<T> reads as the Completion<T> it is.
        let status = unsafe {
            submit(self.raw(), raw_request.as_ptr(), Some(on_done::<T>), user_data.cast(), &mut handle, &mut err)
        };
        if status != sys::HUMUS_OK {
            // SAFETY: a refused submit never completes: the completion is still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
            crate::ffi::check(status, err)?;
        }
        // The request's CancelToken, if any, is on the C request: the library cancels the call through it.
        call.attach(handle);
        Ok(call)
    }

    /// A buffered call: `humus_client_submit`, its response copied and freed.
    fn submit_buffered(
        &self,
        request: &Request,
        deliver: Box<dyn FnOnce(Result<Response, Error>) + Send>,
    ) -> Result<Arc<RawCall>, Error> {
        // SAFETY: Response::from_raw takes over any response the library hands over.
        unsafe { self.submit_raw(request, sys::humus_client_submit, Response::from_raw, deliver) }
    }

    /// Starts an asynchronous call and returns at once (docs/bindings.md §17.1): every rule of a blocking call applies
    /// (bulkhead, breaker, retries, waits, deadline) without a thread waiting, and concurrent calls share
    /// the client's connections (HTTP/2 multiplexes them).
    ///
    /// `on_done` receives the outcome once, on the runtime's event-loop thread. It must not block: a
    /// blocking call made from it fails with [`ErrorKind::Misuse`](crate::ErrorKind::Misuse). A panic in it
    /// is caught and dropped. It should not hold the last handle to the client or the runtime: freeing the
    /// runtime from its own event loop cannot work.
    ///
    /// A request that failed to build fails here, with nothing sent.
    pub fn submit_with<F>(&self, request: &Request, on_done: F) -> Result<CallHandle, Error>
    where
        F: FnOnce(Result<Response, Error>) + Send + 'static,
    {
        self.submit_buffered(request, Box::new(on_done)).map(|call| CallHandle { call })
    }

    /// Starts an asynchronous call and returns a [`Call`] to wait on ([`Call::wait`]), poll (it is a
    /// `Future`) or cancel. See [`submit_with`](Client::submit_with) for the rules.
    pub fn submit(&self, request: &Request) -> Result<Call, Error> {
        let slot = Arc::new(Slot::default());
        let delivered = Arc::clone(&slot);
        let call = self.submit_buffered(request, Box::new(move |outcome| delivered.fill(outcome)))?;
        Ok(Call { handle: CallHandle { call }, slot, cancel_on_drop: true })
    }
}

/// Where a call's outcome waits for its owner (a `Call`'s, or a `StreamCall`'s).
pub(crate) struct Slot<T> {
    state: Mutex<SlotState<T>>,
    filled: Condvar,
}

struct SlotState<T> {
    outcome: Option<Result<T, Error>>,
    finished: bool,
    waker: Option<Waker>,
}

impl<T> Default for Slot<T> {
    fn default() -> Slot<T> {
        Slot { state: Mutex::new(SlotState { outcome: None, finished: false, waker: None }), filled: Condvar::new() }
    }
}

impl<T> Slot<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState<T>> {
        // Nothing panics while holding the lock; recovering a poisoned one is safe all the same.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn fill(&self, outcome: Result<T, Error>) {
        let waker = {
            let mut state = self.lock();
            state.outcome = Some(outcome);
            state.finished = true;
            self.filled.notify_all();
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether the outcome has arrived.
    pub(crate) fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// A future's poll: ready with the outcome once it has arrived, else the waker kept for `fill`.
    ///
    /// # Panics
    /// If polled again after it returned the outcome (`what` names the future in the message).
    pub(crate) fn poll(&self, cx: &mut Context<'_>, what: &str) -> Poll<Result<T, Error>> {
        let mut state = self.lock();
        match state.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            None if state.finished => panic!("{what} polled after it completed"),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// An asynchronous call in flight, from [`Client::submit`]. Wait for its outcome with [`Call::wait`], or
/// `.await` it: `Call` is a `Future` that any executor can poll (the library's event loop wakes it).
///
/// Dropping a `Call` before its outcome arrived cancels it, as dropping a future does under tokio (a
/// `select!` that lost, a `timeout` that fired, an aborted task): the native call is cancelled
/// (`humus_call_cancel`) and ends on the event loop soon after, giving back its bulkhead slot and, as for
/// any cancelled call, counting nothing for the breaker. [`Call::detach`] lets it run to its end instead;
/// [`Call::cancel`], a [`CallHandle`] and the request's [`CancelToken`](crate::CancelToken) cancel it
/// while it is kept.
pub struct Call {
    handle: CallHandle,
    slot: Arc<Slot<Response>>,
    /// False once detached: dropping then leaves the call running.
    cancel_on_drop: bool,
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.cancel_on_drop && !self.slot.is_finished() {
            self.handle.cancel();
        }
    }
}

impl Call {
    /// Cancels the call (see [`CallHandle::cancel`]).
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// A handle that cancels this call from elsewhere.
    pub fn handle(&self) -> CallHandle {
        self.handle.clone()
    }

    /// Lets the call run to its end without anyone waiting for it, as dropping a `Call` did before it
    /// cancelled (the outcome is dropped when it arrives). Returns a handle to cancel it still.
    pub fn detach(mut self) -> CallHandle {
        self.cancel_on_drop = false;
        self.handle.clone()
    }

    /// Whether the outcome has arrived.
    pub fn is_finished(&self) -> bool {
        self.slot.is_finished()
    }

    /// Blocks the thread until the outcome arrives: the response, or why there is none (as
    /// [`Client::execute`] returns them). Must not be called on the event-loop thread (from a callback).
    pub fn wait(self) -> Result<Response, Error> {
        // `self` drops after the outcome arrived: nothing is cancelled.
        let mut state = self.slot.lock();
        while state.outcome.is_none() {
            state = self.slot.filled.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.outcome.take().expect("checked above")
    }
}

impl Future for Call {
    type Output = Result<Response, Error>;

    /// Ready with the outcome once it has arrived.
    ///
    /// # Panics
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.slot.poll(cx, "humus_http::Call")
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call").field("finished", &self.is_finished()).finish_non_exhaustive()
    }
}
