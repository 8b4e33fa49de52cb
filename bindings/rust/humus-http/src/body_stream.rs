//! Asynchronously streamed calls (docs/bodies.md §7): `humus_client_submit_open` resolves a `StreamCall` at the
//! final response's headers, and `humus_response_read_async` fills the body's one buffer on the event-loop
//! thread, waking the task that polls the `AsyncStreamingResponse` (a `futures_core::Stream` of chunks).
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures_core::Stream;
use humus_http_sys as sys;

use crate::call::{CallHandle, Slot};
use crate::client::Client;
use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::request::Request;
use crate::response::{head_accessors, no_response, Head};

/// The size of the buffer a body lends for each read: a chunk is at most this long.
const CHUNK: usize = 64 * 1024;

/// The one buffer of a body and what its read in flight left. Shared between the response and the read in
/// flight, which holds a reference until its `on_read` ran: the C side may write into the buffer until then,
/// also after the response was dropped (a pending read completes with HUMUS_E_CANCELLED first).
struct Reader {
    /// Written by the library only while a read is pending, read by the response only when none is.
    buf: UnsafeCell<Box<[u8]>>,
    state: Mutex<ReadState>,
}

#[derive(Default)]
struct ReadState {
    pending: bool,
    /// The outcome of the read that completed, not yet handed out: the byte count, or why it failed.
    done: Option<Result<usize, Error>>,
    waker: Option<Waker>,
}

// SAFETY: `buf` is touched by one side at a time: the library writes it between a read's start and its
// on_read (`pending`, under the mutex, says which), the response reads it only when no read is pending.
unsafe impl Send for Reader {}
// SAFETY: as above.
unsafe impl Sync for Reader {}

impl Reader {
    fn lock(&self) -> MutexGuard<'_, ReadState> {
        // Nothing panics while holding the lock; recovering a poisoned one is safe all the same.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// # Safety
/// Called once by the library for a read that `start_read` began, with its `user_data` (a reference to the
/// `Reader`, from `Arc::into_raw`) and an error that is ours to free.
unsafe extern "C" fn on_read(user_data: *mut c_void, status: sys::humus_status, n: usize, err: *mut sys::humus_error) {
    // SAFETY: the reference start_read handed over, given back exactly once.
    let reader = unsafe { Arc::from_raw(user_data.cast::<Reader>().cast_const()) };
    let outcome = if status == sys::HUMUS_OK {
        // SAFETY: ours (NULL on success, freed all the same).
        unsafe { sys::humus_error_free(err) };
        Ok(n)
    } else {
        // SAFETY: the error is ours.
        Err(unsafe { Error::from_raw(status, err) })
    };
    let waker = {
        let mut state = reader.lock();
        state.pending = false;
        state.done = Some(outcome);
        state.waker.take()
    };
    // A waker that panics must not unwind into the event loop.
    if let Some(waker) = waker {
        let _ = panic::catch("a body stream's waker", Report::Drop, move || waker.wake());
    }
    // Maybe the last reference (the response was dropped while this read was pending): the buffer goes now.
    drop(reader);
}

/// An open body of `humus_client_submit_open`, with no tie to the client's lifetime (`AsyncStreamingResponse`
/// adds it): what the completion on the event loop can hold.
pub(crate) struct OpenBody {
    raw: NonNull<sys::humus_response>,
    reader: Arc<Reader>,
    /// Set once the stream returned its end or a failure: it yields nothing more.
    over: bool,
}

// SAFETY: a C response is not bound to a thread; reads start only through `&mut self` and the free only in
// Drop, so the two never overlap ("not concurrently with humus_response_free"); `&self` reads only the copied
// head.
unsafe impl Send for OpenBody {}
// SAFETY: as above: nothing reachable through `&OpenBody` touches the C response.
unsafe impl Sync for OpenBody {}

impl Drop for OpenBody {
    fn drop(&mut self) {
        // SAFETY: ours, freed once. A read still pending completes with HUMUS_E_CANCELLED before the body
        // closes; it holds its own reference to the buffer until then.
        unsafe { sys::humus_response_free(self.raw.as_ptr()) }
    }
}

impl OpenBody {
    /// Takes a response of `humus_client_submit_open`: its head, copied, and its body.
    ///
    /// # Safety
    /// `resp` is NULL or such a response, handed over.
    unsafe fn from_raw(resp: *mut sys::humus_response) -> Result<(Head, OpenBody), Error> {
        let raw = NonNull::new(resp).ok_or_else(no_response)?;
        // SAFETY: live, ours.
        let head = unsafe { Head::copy(raw.as_ptr()) };
        let reader = Arc::new(Reader {
            buf: UnsafeCell::new(vec![0u8; CHUNK].into_boxed_slice()),
            state: Mutex::new(ReadState::default()),
        });
        Ok((head, OpenBody { raw, reader, over: false }))
    }

    /// Lends the buffer to the library for the next read; `Err` when it refused to start one.
    fn start_read(&mut self, waker: &Waker) -> Result<(), Error> {
        {
            let mut state = self.reader.lock();
            state.pending = true;
            state.waker = Some(waker.clone());
        }
        // SAFETY: no read is pending (the caller checked), so the library is the buffer's only user until
        // on_read; the pointer stays valid as long as the reference handed over below.
        let buf = unsafe { (*self.reader.buf.get()).as_mut_ptr() };
        let user_data = Arc::into_raw(Arc::clone(&self.reader));
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the response is live and ours (`&mut self`); `buf` is valid for CHUNK bytes while
        // `user_data` holds the reader, which on_read takes back exactly once.
        let status = unsafe {
            sys::humus_response_read_async(
                self.raw.as_ptr(),
                buf.cast(),
                CHUNK,
                Some(on_read),
                user_data.cast_mut().cast(),
                &mut err,
            )
        };
        if status != sys::HUMUS_OK {
            // SAFETY: a refused read never calls on_read: the reference is still ours.
            drop(unsafe { Arc::from_raw(user_data) });
            let mut state = self.reader.lock();
            state.pending = false;
            state.waker = None;
            drop(state);
            ffi::check(status, err)?;
        }
        Ok(())
    }

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Vec<u8>, Error>>> {
        if self.over {
            return Poll::Ready(None);
        }
        let done = {
            let mut state = self.reader.lock();
            if state.pending {
                state.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            state.done.take()
        };
        let item = match done {
            None => match self.start_read(cx.waker()) {
                Ok(()) => return Poll::Pending,
                Err(e) => Err(e),
            },
            // The end: the library has counted the result.
            Some(Ok(0)) => {
                self.over = true;
                return Poll::Ready(None);
            }
            Some(Ok(n)) => {
                // SAFETY: no read is pending, so the library does not touch the buffer; it holds `n` bytes.
                let buf = unsafe { &*self.reader.buf.get() };
                return Poll::Ready(Some(Ok(buf[..n.min(CHUNK)].to_vec())));
            }
            Some(Err(e)) => Err(e),
        };
        // Every later read would fail the same way: the stream ends after its failure.
        self.over = true;
        Poll::Ready(Some(item))
    }
}

/// A response whose body arrives asynchronously ([`Client::submit_stream`]): its head is here, its body is a
/// [`Stream`](futures_core::Stream) of chunks (`Vec<u8>` of at most 64 KiB, never empty), each read on the
/// event-loop thread into the response's one 64 KiB buffer (`humus_response_read_async`) while the task
/// waits, so memory stays at that buffer whatever the body's size, with no thread per body.
///
/// The stream ends (`None`) at the body's end, when the breaker has counted the call's result. A read
/// failing mid-body is an `Err` item ([`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost),
/// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) when the call's `timeout` passes,
/// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) by the request's
/// [`CancelToken`](crate::CancelToken)), counted as a breaker failure unless cancelled; the stream ends after
/// it. Dropping the response closes the body: its result is counted as it was classified, a read still
/// pending is cancelled first, and the bulkhead slot and the connection are given back.
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

    /// The next chunk of the body; `Pending` while a read is in flight (the event loop wakes the task when it
    /// completes); `None` at the end and after a failure.
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
