//! `CancelToken`: ends calls early when the caller gives up. It is the C token on the requests it is given
//! to, which the library honours for blocking and asynchronous calls alike.
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use humus_http_sys as sys;

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
}

// SAFETY: the header: "Thread-safe: trigger from any thread, at any time"; humus_cancel_free runs only in
// Drop, when no request (hence no call) holds the token any more.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: the last handle is gone; requests and calls hold the library's token themselves.
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
            // SAFETY: humus_cancel_new has no err (its status says everything): nothing to free.
            _ => panic!("humus_cancel_new failed: {}", unsafe { crate::Error::from_raw(status, ptr::null_mut()) }),
        };
        CancelToken { inner: Arc::new(Inner { raw, cancelled: AtomicBool::new(false) }) }
    }

    /// Cancels every call made with this token, now and later. Idempotent.
    pub fn cancel(&self) {
        // Release: a thread that sees `cancelled` also sees the C token triggered before it.
        // SAFETY: the token is live; triggering is thread-safe.
        unsafe { sys::humus_cancel_trigger(self.inner.raw.as_ptr()) };
        self.inner.cancelled.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](CancelToken::cancel) has been called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
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
