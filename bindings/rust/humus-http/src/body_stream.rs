//! Asynchronously streamed calls (docs/bodies.md §7): `humus_client_submit_open` resolves a `StreamCall` at the
//! final response's headers; from the first poll of the `AsyncStreamingResponse` (a `futures_core::Stream` of
//! chunks) the library reads the body ahead on its event loop into a bounded ring of its own
//! (`humus_response_read_ahead`), each poll copies the next chunk out (`humus_response_take`, which never
//! waits), and the ring's `ready` wakes the polling task once a take that found nothing may find something.
use std::ffi::c_void;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::{self, ThreadId};

use futures_core::Stream;
use humus_http_sys as sys;

use crate::call::{CallHandle, Slot};
use crate::client::Client;
use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::request::Request;
use crate::response::{head_accessors, no_response, Head};

/// The most a take copies out of the ring: a chunk is at most this long.
const CHUNK: usize = 64 * 1024;

/// What the ring's `ready` reaches. The library holds a reference (`user_data`) from
/// `humus_response_read_ahead` until `humus_response_close` returned, after which no `ready` runs.
#[derive(Default)]
struct Ready {
    state: Mutex<ReadyState>,
}

#[derive(Default)]
struct ReadyState {
    /// The last poll's, woken by the next `ready`.
    waker: Option<Waker>,
}

impl Ready {
    fn lock(&self) -> MutexGuard<'_, ReadyState> {
        // Nothing panics while holding the lock; recovering a poisoned one is safe all the same.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// # Safety
/// Called by the library (on the event-loop thread, or inside `humus_response_hurry`) with the `user_data`
/// of `read_ahead`: the library's reference to a `Ready`, valid until the response is closed.
unsafe extern "C" fn on_ready(user_data: *mut c_void, _resp: *mut sys::humus_response) {
    // SAFETY: borrowed, not taken: OpenBody's Drop gives the reference back after humus_response_close.
    let ready = unsafe { &*user_data.cast::<Ready>().cast_const() };
    let waker = ready.lock().waker.take();
    // A waker that panics must not unwind into the event loop.
    if let Some(waker) = waker {
        let _ = panic::catch("a body stream's waker", Report::Drop, move || waker.wake());
    }
}

/// An open body of `humus_client_submit_open`, with no tie to the client's lifetime (`AsyncStreamingResponse`
/// adds it): what the completion on the event loop can hold.
pub(crate) struct OpenBody {
    raw: NonNull<sys::humus_response>,
    /// Set once the body is read ahead (at the first poll); the library holds a reference of its own.
    ready: Option<Arc<Ready>>,
    /// The event-loop thread (the headers are taken over there), where a close cannot wait for the loop.
    loop_thread: ThreadId,
    /// Set once the stream returned its end or a failure: it yields nothing more.
    over: bool,
}

// SAFETY: a C response is not bound to a thread; takes run only through `&mut self` and the close only in
// Drop, so the two never overlap ("one take at a time ... not concurrently with its free"); `&self` reads
// only the copied head.
unsafe impl Send for OpenBody {}
// SAFETY: as above: nothing reachable through `&OpenBody` touches the C response.
unsafe impl Sync for OpenBody {}

impl Drop for OpenBody {
    fn drop(&mut self) {
        let Some(ready) = self.ready.take() else {
            // SAFETY: ours, freed once; never read ahead, so no `ready` refers to anything of ours.
            unsafe { sys::humus_response_free(self.raw.as_ptr()) };
            return;
        };
        // SAFETY: ours, closed once. It returns once the body is closed and its result counted (a read in
        // flight cancelled first); no `ready` runs after that, nor is one still running.
        unsafe { sys::humus_response_close(self.raw.as_ptr()) };
        if thread::current().id() == self.loop_thread {
            // Dropped inside a callback, on the loop: the close there is humus_response_free, which closes
            // the body later, so a `ready` may still come. Its reference stays (a few bytes), the waker goes.
            ready.lock().waker = None;
        } else {
            // SAFETY: the library's reference, from read_ahead: no `ready` uses it any more.
            unsafe { Arc::decrement_strong_count(Arc::as_ptr(&ready)) };
        }
    }
}

impl OpenBody {
    /// Takes a response of `humus_client_submit_open`: its head, copied, and its body. On the event loop.
    ///
    /// # Safety
    /// `resp` is NULL or such a response, handed over.
    unsafe fn from_raw(resp: *mut sys::humus_response) -> Result<(Head, OpenBody), Error> {
        let raw = NonNull::new(resp).ok_or_else(no_response)?;
        // SAFETY: live, ours.
        let head = unsafe { Head::copy(raw.as_ptr()) };
        Ok((head, OpenBody { raw, ready: None, loop_thread: thread::current().id(), over: false }))
    }

    /// Starts reading the body ahead into the library's ring (64 KiB; 256 KiB for a Content-Length of 1 MiB or
    /// more; never more than the body), its `ready` holding a reference to `self.ready` until the close. No
    /// body is held whole: a stream hands over its bytes as they come.
    fn read_ahead(&mut self) -> Result<(), Error> {
        let ready = Arc::new(Ready::default());
        let user_data = Arc::into_raw(Arc::clone(&ready));
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the response is live and ours (`&mut self`); `user_data` stays valid until Drop gives it
        // back, after humus_response_close, when no `ready` runs any more.
        let status = unsafe {
            sys::humus_response_read_ahead(
                self.raw.as_ptr(),
                0,
                Some(on_ready),
                user_data.cast_mut().cast(),
                ptr::null_mut(),
                &mut err,
            )
        };
        if status != sys::HUMUS_OK {
            // SAFETY: refused: there is no ring, so no `ready` holds the reference.
            drop(unsafe { Arc::from_raw(user_data) });
            ffi::check(status, err)?;
        }
        self.ready = Some(ready);
        Ok(())
    }

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Vec<u8>, Error>>> {
        if self.over {
            return Poll::Ready(None);
        }
        if self.ready.is_none() {
            if let Err(e) = self.read_ahead() {
                self.over = true;
                return Poll::Ready(Some(Err(e)));
            }
        }
        let ready = self.ready.as_deref().expect("read ahead above");
        // The waker before the take: the one `ready` a HUMUS_TOOK_WAIT promises comes after the take, and
        // finds it; a `ready` that came before found it too, and the task is polled again anyway.
        {
            let mut state = ready.lock();
            if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                state.waker = Some(cx.waker().clone());
            }
        }
        let mut chunk = Vec::<u8>::with_capacity(CHUNK);
        let (mut n, mut took) = (0usize, sys::HUMUS_TOOK_WAIT);
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the response is live, ours and read ahead (`&mut self`: one take at a time, never beside
        // the close); `chunk` has room for CHUNK bytes.
        let status = unsafe {
            sys::humus_response_take(
                self.raw.as_ptr(),
                chunk.as_mut_ptr().cast(),
                CHUNK,
                0,
                &mut n,
                &mut took,
                &mut err,
            )
        };
        if let Err(e) = ffi::check(status, err) {
            // Every later take fails the same way: the stream ends after its failure.
            self.over = true;
            return Poll::Ready(Some(Err(e)));
        }
        match took {
            sys::HUMUS_TOOK_WAIT => {
                // Waiting for a batch (half the ring) would hold back bytes that came before a pause, and a
                // task has no timer to end that wait (Go's Read hurries after 500 µs): wake at the next bytes.
                // Its `ready` may run inside this call.
                // SAFETY: as for the take.
                unsafe { sys::humus_response_hurry(self.raw.as_ptr()) };
                Poll::Pending
            }
            // The end: the library has counted the result.
            sys::HUMUS_TOOK_END => {
                self.over = true;
                Poll::Ready(None)
            }
            _ => {
                // HUMUS_TOOK_LAST: the body ended well with these bytes, counted; the next poll ends the stream.
                self.over = took == sys::HUMUS_TOOK_LAST;
                // SAFETY: the take wrote `n` bytes, at most CHUNK, at the start of `chunk`.
                unsafe { chunk.set_len(n.min(CHUNK)) };
                // A short chunk keeps only its bytes, as a chunk of that length would have been allocated.
                chunk.shrink_to_fit();
                Poll::Ready(Some(Ok(chunk)))
            }
        }
    }
}

/// A response whose body arrives asynchronously ([`Client::submit_stream`]): its head is here, its body is a
/// [`Stream`](futures_core::Stream) of chunks (`Vec<u8>` of at most 64 KiB, never empty). From the first
/// poll the library reads the body ahead on its event loop into a bounded ring (64 KiB; 256 KiB for a
/// Content-Length of 1 MiB or more; the body's size under 256 KiB) that each poll copies the next chunk out
/// of, waking the task when a poll found it empty, so memory stays at the ring whatever the body's size, with
/// no thread per body. Bytes are handed over as they come, a small body's too.
///
/// The stream ends (`None`) at the body's end, when the breaker has counted the call's result. A read
/// failing mid-body is an `Err` item ([`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost),
/// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) when the call's `timeout` passes,
/// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) by the request's
/// [`CancelToken`](crate::CancelToken)), after the bytes read before it, counted as a breaker failure unless
/// cancelled; the stream ends after it. Dropping the response closes the body: its result is counted as it
/// was classified, a read still pending is cancelled first, and the bulkhead slot and the connection are
/// given back; once polled, the drop returns when the event loop has closed it.
///
/// It borrows its [`Client`], which it must not outlive. `Send` and `Sync`: reads take `&mut self`, and
/// `&self` reaches only the copied head.
pub struct AsyncStreamingResponse<'c> {
    head: Head,
    body: OpenBody,
    _client: PhantomData<&'c Client>,
}

impl AsyncStreamingResponse<'_> {
    head_accessors!();

    /// The rest of the body (all of it if nothing was read yet), read to its end; or the first failure.
    pub async fn bytes(mut self) -> Result<Vec<u8>, Error> {
        let mut body = Vec::new();
        while let Some(chunk) = std::future::poll_fn(|cx| Pin::new(&mut self).poll_next(cx)).await {
            body.extend_from_slice(&chunk?);
        }
        Ok(body)
    }
}

impl Stream for AsyncStreamingResponse<'_> {
    type Item = Result<Vec<u8>, Error>;

    /// The next chunk of the body; `Pending` while the ring is empty (the event loop wakes the task when the
    /// next bytes are in); `None` at the end and after a failure.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().body.poll_chunk(cx)
    }
}

impl std::fmt::Debug for AsyncStreamingResponse<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncStreamingResponse")
            .field("status", &self.head.status)
            .field("attempts", &self.head.attempts)
            .field("url", &self.head.url)
            .finish_non_exhaustive()
    }
}

/// An asynchronously streamed call in flight, from [`Client::submit_stream`]: a `Future` that resolves to the
/// [`AsyncStreamingResponse`] once the final response's headers are in (or to why there is none, as
/// [`Client::execute`] reports it), woken by the library's event loop; any executor can poll it.
///
/// Dropping it before the headers arrived cancels the call, as dropping a [`Call`](crate::Call) does: it
/// ends on the event loop soon after, giving back its bulkhead slot and counting nothing for the breaker.
/// [`cancel`](StreamCall::cancel) and [`handle`](StreamCall::handle) cancel it while it is kept; once the
/// headers are in, only the request's [`CancelToken`](crate::CancelToken) cancels the body's reads (or drop
/// the response). It borrows its [`Client`]. `Send` and `Sync`.
pub struct StreamCall<'c> {
    handle: CallHandle,
    slot: Arc<Slot<(Head, OpenBody)>>,
    _client: PhantomData<&'c Client>,
}

impl Drop for StreamCall<'_> {
    fn drop(&mut self) {
        if !self.slot.is_finished() {
            self.handle.cancel();
        }
    }
}

impl StreamCall<'_> {
    /// Cancels the call before its headers arrived (see [`CallHandle::cancel`]); nothing after.
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// A handle that cancels this call from elsewhere.
    pub fn handle(&self) -> CallHandle {
        self.handle.clone()
    }

    /// Whether the outcome (the response at its headers, or the failure) has arrived.
    pub fn is_finished(&self) -> bool {
        self.slot.is_finished()
    }
}

impl<'c> Future for StreamCall<'c> {
    type Output = Result<AsyncStreamingResponse<'c>, Error>;

    /// Ready with the response at its headers, or the call's failure, once it has arrived.
    ///
    /// # Panics
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.slot
            .poll(cx, "humus_http::StreamCall")
            .map(|outcome| outcome.map(|(head, body)| AsyncStreamingResponse { head, body, _client: PhantomData }))
    }
}

impl std::fmt::Debug for StreamCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamCall").field("finished", &self.is_finished()).finish_non_exhaustive()
    }
}

impl Client {
    /// Starts an asynchronous call whose body streams (docs/bodies.md §7) and returns at once: every rule of
    /// [`submit`](Client::submit) applies (bulkhead, breaker, attempts, waits, retries of a small body read
    /// ahead, redirects, the deadline), and the returned [`StreamCall`] resolves once the final response's
    /// headers are in, its body still on the connection: an [`AsyncStreamingResponse`], a
    /// [`Stream`](futures_core::Stream) of chunks. The breaker counts the call's result when the body is read
    /// to its end or the response dropped; until then the call holds its bulkhead slot. The call's
    /// `timeout` and the request's [`CancelToken`](crate::CancelToken) bound the body's reads too.
    ///
    /// A request that failed to build fails here, with nothing sent. Any thread.
    pub fn submit_stream(&self, request: &Request) -> Result<StreamCall<'_>, Error> {
        let slot = Arc::new(Slot::default());
        let delivered = Arc::clone(&slot);
        // SAFETY: OpenBody::from_raw takes over a response of humus_client_submit_open; the StreamCall and
        // the response borrow `self`, so the response is freed before the client (a response delivered after
        // its StreamCall was dropped is freed on the event loop, before humus_client_free returns).
        let call = unsafe {
            self.submit_raw(
                request,
                sys::humus_client_submit_open,
                OpenBody::from_raw,
                Box::new(move |outcome| delivered.fill(outcome)),
            )?
        };
        Ok(StreamCall { handle: CallHandle { call }, slot, _client: PhantomData })
    }
}
