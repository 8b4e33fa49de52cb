//! `CancelToken`: ends calls early when the caller gives up. Blocking calls watch the C token; the C ABI
//! lets asynchronous calls be cancelled only through their handle, so the token also remembers the
//! asynchronous calls submitted with it and cancels them itself.
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use humus_http_sys as sys;

use crate::call::RawCall;

/// Cancels every call made with it, now and later, from any thread: blocking calls
/// ([`Client::execute`](crate::Client::execute)) and asynchronous ones ([`Client::submit`](crate::Client::submit)).
/// A cancelled call fails with [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled), or returns the
/// response it had buffered before a retry.
///
/// Clones share one token; a [`Request`](crate::Request) holding a token keeps it alive for its calls.
#[derive(Clone)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<sys::humus_cancel>,
    cancelled: AtomicBool,
    /// Asynchronous calls submitted with this token that may still be running.
    calls: Mutex<Vec<Weak<RawCall>>>,
}

// SAFETY: the header: "Thread-safe: trigger from any thread, at any time"; humus_cancel_free runs only in
// Drop, when no request (hence no call) holds the token any more.
unsafe impl Send for Inner {}
// SAFETY: as above; `calls` is behind a Mutex.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: the last handle is gone; requests hold one, and a blocking call borrows its request, so
        // no call is using the token.
        unsafe { sys::humus_cancel_free(self.raw.as_ptr()) }
    }
}

impl CancelToken {
    /// A token not yet cancelled.
    ///
    /// # Panics
    /// If the library cannot allocate the token (it reports only running out of memory), as Rust does on
    /// a failed allocation.
    pub fn new() -> CancelToken {
        let mut raw: *mut sys::humus_cancel = ptr::null_mut();
        // SAFETY: `raw` is our out-parameter.
        let status = unsafe { sys::humus_cancel_new(&mut raw) };
        let raw = match NonNull::new(raw) {
            Some(raw) if status == sys::HUMUS_OK => raw,
            // SAFETY: no error object was handed over; the thread's last error is read if it matches.
            _ => panic!("humus_cancel_new failed: {}", unsafe { crate::Error::from_raw(status, ptr::null_mut()) }),
        };
        CancelToken { inner: Arc::new(Inner { raw, cancelled: AtomicBool::new(false), calls: Mutex::new(Vec::new()) }) }
    }

    /// Cancels every call made with this token, now and later. Idempotent.
    pub fn cancel(&self) {
        // Release: a thread that sees `cancelled` also sees the C token triggered before it.
        // SAFETY: the token is live; triggering is thread-safe.
        unsafe { sys::humus_cancel_trigger(self.inner.raw.as_ptr()) };
        self.inner.cancelled.store(true, Ordering::Release);
        let calls = std::mem::take(&mut *self.inner.calls.lock().unwrap_or_else(|e| e.into_inner()));
        for call in calls.iter().filter_map(Weak::upgrade) {
            call.cancel();
        }
    }

    /// Whether [`cancel`](CancelToken::cancel) has been called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Ties an asynchronous call to this token: cancelled now if the token already is, else when it is.
    pub(crate) fn watch(&self, call: &Arc<RawCall>) {
        let mut calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
        // Checked under the lock: cancel() takes the list under it after setting the flag, so a call added
        // here is either cancelled below or found by cancel().
        if self.is_cancelled() {
            drop(calls);
            call.cancel();
            return;
        }
        calls.retain(|c| c.strong_count() > 0);
        calls.push(Arc::downgrade(call));
    }

    pub(crate) fn raw(&self) -> *mut sys::humus_cancel {
        self.inner.raw.as_ptr()
    }
}

impl Default for CancelToken {
    fn default() -> CancelToken {
        CancelToken::new()
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}
