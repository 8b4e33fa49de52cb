//! The circuit breaker's state and counts (docs/breaker.md §9), and a breaker policy made of two closures behind
//! `extern "C"` trampolines that catch panics.
use std::ffi::c_void;
use std::ptr;

use humus_http_sys as sys;

use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::settings::Settings;

/// A circuit breaker's state (docs/breaker.md §9.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitState {
    /// Calls go through; results are counted.
    Closed,
    /// Calls are rejected without being sent, until `breaker.open_for` has passed.
    Open,
    /// A few probes go through; their results decide between closed and open.
    HalfOpen,
}

impl CircuitState {
    /// The state of a `HUMUS_CIRCUIT_*` number; `None` for another.
    pub(crate) fn from_raw(raw: i32) -> Option<CircuitState> {
        match raw {
            sys::HUMUS_CIRCUIT_CLOSED => Some(CircuitState::Closed),
            sys::HUMUS_CIRCUIT_OPEN => Some(CircuitState::Open),
            sys::HUMUS_CIRCUIT_HALF_OPEN => Some(CircuitState::HalfOpen),
            _ => None,
        }
    }

    /// The name readiness reports and log messages use: `"closed"`, `"open"`, `"half_open"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }
}

/// What a breaker policy sees (docs/breaker.md §9.3): counts since the current state began, plus the last
/// `breaker.window` results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerCounts {
    /// The state these counts belong to.
    pub state: CircuitState,
    /// Successes since the state began.
    pub successes: u64,
    /// Failures since the state began.
    pub failures: u64,
    /// Successes in a row, up to now.
    pub consecutive_successes: u64,
    /// Failures in a row, up to now.
    pub consecutive_failures: u64,
    /// Probes whose result never came within `breaker.probe_timeout`.
    pub timed_out_probes: u64,
    /// Results in the window (at most `breaker.window`).
    pub window_results: u32,
    /// Failures among them.
    pub window_failures: u32,
    /// Results whose attempt took longer than `breaker.slow_call_duration` (docs/breaker.md §9.3a), successes
    /// or failures, since the state began; 0 while that setting is unset.
    pub slow_results: u64,
    /// Slow results among the window's.
    pub window_slow: u32,
}

impl BreakerCounts {
    /// The counts of the C struct; a state this binding does not know reads as closed.
    pub(crate) fn from_raw(raw: &sys::humus_breaker_counts) -> BreakerCounts {
        BreakerCounts {
            state: CircuitState::from_raw(raw.state).unwrap_or(CircuitState::Closed),
            successes: raw.successes,
            failures: raw.failures,
            consecutive_successes: raw.consecutive_successes,
            consecutive_failures: raw.consecutive_failures,
            timed_out_probes: raw.timed_out_probes,
            window_results: raw.window_results,
            window_failures: raw.window_failures,
            slow_results: raw.slow_results,
            window_slow: raw.window_slow,
        }
    }
}

/// What a probe policy decides in half-open after each probe's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeDecision {
    /// Keep probing (`HUMUS_PROBE_CONTINUE`).
    Continue,
    /// Close the breaker (`HUMUS_PROBE_CLOSE`).
    Close,
    /// Open it again for a full `open_for` (`HUMUS_PROBE_REOPEN`).
    Reopen,
}

impl ProbeDecision {
    fn to_raw(self) -> i32 {
        match self {
            ProbeDecision::Continue => sys::HUMUS_PROBE_CONTINUE,
            ProbeDecision::Close => sys::HUMUS_PROBE_CLOSE,
            ProbeDecision::Reopen => sys::HUMUS_PROBE_REOPEN,
        }
    }
}

/// The two closures of a breaker policy, owned by the library as one `user_data`.
struct Policy<T, P> {
    trip: T,
    probe: P,
}

impl Settings {
    /// Replaces the breaker's trip and probe policy (docs/breaker.md §9.3). `trip` decides, in closed, whether to open
    /// (`true`); `probe` decides, in half-open after each probe's result, whether to close, reopen or go on.
    ///
    /// Both run under the breaker's lock on the thread that delivers a result: they must be fast, must not
    /// call the client, and should not capture it. A closure that panics counts the result as a failure,
    /// leaves the breaker consistent (docs/breaker.md §9.4), and ends the call with
    /// [`ErrorKind::Callback`](crate::ErrorKind::Callback), the panic's message in [`Error::panic_message`].
    pub fn set_breaker_policy<T, P>(&mut self, trip: T, probe: P) -> Result<(), Error>
    where
        T: Fn(&BreakerCounts) -> bool + Send + Sync + 'static,
        P: Fn(&BreakerCounts) -> ProbeDecision + Send + Sync + 'static,
    {
        let user_data = Box::into_raw(Box::new(Policy { trip, probe }));
        let table = sys::humus_breaker_policy {
            trip: Some(trip_trampoline::<T, P>),
            probe: Some(probe_trampoline::<T, P>),
            user_data: user_data.cast(),
            destroy: Some(panic::destroy_box::<Policy<T, P>>),
            ..sys::HUMUS_BREAKER_POLICY_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: we own the settings exclusively (&mut self); the table is copied by the call.
        let status = unsafe { sys::humus_settings_set_breaker_policy(self.raw_mut(), &table, &mut err) };
        if status != sys::HUMUS_OK {
            // SAFETY: on failure destroy is not called and the closures are still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
        }
        ffi::check(status, err)
    }
}

/// # Safety
/// Called by the library with the `user_data` of `set_breaker_policy`, live counts and a writable `open`.
unsafe extern "C" fn trip_trampoline<T, P>(
    user_data: *mut c_void,
    counts: *const sys::humus_breaker_counts,
    open: *mut i32,
) -> sys::humus_status
where
    T: Fn(&BreakerCounts) -> bool,
{
    // SAFETY: user_data is the boxed policy, alive until destroy; `counts` is live for this call.
    let (policy, counts) = unsafe { (&*user_data.cast::<Policy<T, P>>(), BreakerCounts::from_raw(&*counts)) };
    match panic::catch("breaker policy (trip)", Report::ToCall, || (policy.trip)(&counts)) {
        Some(decision) => {
            // SAFETY: `open` is the library's, writable for this call.
            unsafe { open.write(i32::from(decision)) };
            sys::HUMUS_OK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}

/// # Safety
/// Called by the library with the `user_data` of `set_breaker_policy`, live counts and a writable
/// `decision`.
unsafe extern "C" fn probe_trampoline<T, P>(
    user_data: *mut c_void,
    counts: *const sys::humus_breaker_counts,
    decision: *mut i32,
) -> sys::humus_status
where
    P: Fn(&BreakerCounts) -> ProbeDecision,
{
    // SAFETY: user_data is the boxed policy, alive until destroy; `counts` is live for this call.
    let (policy, counts) = unsafe { (&*user_data.cast::<Policy<T, P>>(), BreakerCounts::from_raw(&*counts)) };
    match panic::catch("breaker policy (probe)", Report::ToCall, || (policy.probe)(&counts)) {
        Some(d) => {
            // SAFETY: `decision` is the library's, writable for this call.
            unsafe { decision.write(d.to_raw()) };
            sys::HUMUS_OK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}
