//! Panics never cross into C: every trampoline runs the user's closure under `catch_unwind` and reports a
//! panic to the library as a failing callback (docs/breaker.md §9.4: the breaker counts it as a failure).
//!
//! The call that then fails with `HUMUS_E_CALLBACK` ends on the thread that ran the callback (the caller's
//! thread for a blocking call, the event-loop thread for an asynchronous one), so the panic's message waits
//! for it in a thread-local slot, as the Python binding keeps a callback's exception.
use std::any::Any;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// The first panic of the call running on this thread, if a callback that fails the call panicked.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The first panic of an attempt hook's `after` on this thread, which cannot fail the call through C:
    /// a blocking call (whose attempts run on its caller's thread) takes it when it returns and fails.
    static AFTER_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether a panic in this callback fails the call it belongs to, so its message should travel to the
/// call's `Error` (classifier, breaker policy, mock transport, metric sink), or has no one to tell (log
/// sink, completion closures, destructors).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Report {
    ToCall,
    /// A callback that cannot fail its call in C (an attempt hook's `after`): kept apart, for the blocking
    /// call on this thread to fail with once it returns ([`take_after`]).
    ToBlockingCall,
    Drop,
}

/// Runs `f`, catching a panic. `what` names the callback in the message ("classifier").
///
/// `AssertUnwindSafe`: after a panic the library only learns that the callback failed; the closure's own
/// state is the user's, as with any panic caught at a thread boundary (a `Mutex` it held is poisoned).
pub(crate) fn catch<R>(what: &str, report: Report, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let message = || format!("{what} panicked: {}", describe(payload.as_ref()));
            match report {
                Report::ToCall => remember(message()),
                Report::ToBlockingCall => {
                    let message = message();
                    AFTER_PANIC.with(|slot| {
                        slot.borrow_mut().get_or_insert(message);
                    });
                }
                Report::Drop => {}
            }
            // Dropping the payload may itself panic (a payload with a panicking Drop): contain that too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            None
        }
    }
}

/// Keeps why a callback failed the call running on this thread, unless an earlier failure of the call is
/// already kept (the first one is what went wrong).
pub(crate) fn remember(message: String) {
    PANIC.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(message);
        }
    });
}

/// Takes this thread's panic message, leaving the slot empty for the next call.
pub(crate) fn take() -> Option<String> {
    PANIC.with(|slot| slot.borrow_mut().take())
}

/// Takes this thread's panic of an attempt hook's `after`, leaving the slot empty for the next call.
pub(crate) fn take_after() -> Option<String> {
    AFTER_PANIC.with(|slot| slot.borrow_mut().take())
}

/// What a panic said: the `&str` or `String` given to `panic!`.
fn describe(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic payload that is not a string".to_string()
    }
}

/// Drops a boxed value handed to C as `user_data`, from its `destroy` callback.
///
/// # Safety
/// `user_data` came from `Box::<T>::into_raw` and the library calls `destroy` exactly once.
pub(crate) unsafe extern "C" fn destroy_box<T>(user_data: *mut std::ffi::c_void) {
    // SAFETY: the caller's contract: a `Box<T>` leaked once, released once.
    let boxed = unsafe { Box::from_raw(user_data.cast::<T>()) };
    // A closure's captured values may panic in Drop; it must not unwind into the library.
    let _ = catch("a callback's destructor", Report::Drop, move || drop(boxed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_caught_and_its_first_message_kept() {
        let _ = take();
        assert_eq!(catch("x", Report::ToCall, || 7), Some(7));
        assert_eq!(catch("classifier", Report::ToCall, || -> i32 { panic!("boom {}", 1) }), None);
        assert_eq!(catch("policy", Report::ToCall, || -> i32 { panic!("second") }), None);
        assert_eq!(take().as_deref(), Some("classifier panicked: boom 1"));
        assert_eq!(take(), None);
    }

    #[test]
    fn a_dropped_report_leaves_no_message() {
        let _ = take();
        assert_eq!(catch("sink", Report::Drop, || -> () { std::panic::panic_any(42_u8) }), None);
        assert_eq!(take(), None);
        assert_eq!(describe(&42_u8), "a panic payload that is not a string");
    }
}
