//! The runtime's log sink (docs/telemetry.md §13.3): one record per circuit breaker state change (and upstreams
//! notices), delivered to a closure. Errors are returned, never logged.
use std::ffi::c_void;
use std::ptr;

use humus_http_sys as sys;

use crate::breaker::{BreakerCounts, CircuitState};
use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::runtime::Runtime;

/// One log record, copied out of the library's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// `"humus.circuit.state_change"` or `"humus.upstreams.base_url_override"`.
    pub event: String,
    /// One line for people, e.g. `circuit for https://payments:8443: closed -> open (...)`.
    pub message: String,
    /// The origin's host.
    pub server_address: String,
    /// The origin's port, the scheme's default filled in.
    pub server_port: u16,
    /// The state the breaker left; `None` when the record is no state change.
    pub previous_state: Option<CircuitState>,
    /// The state it entered; `None` when the record is no state change.
    pub new_state: Option<CircuitState>,
    /// At a change: the counts of the state left, including the result that caused it.
    pub counts: BreakerCounts,
    /// When the change took effect, in milliseconds since the Unix epoch on the runtime's clock.
    pub time_unix_ms: i64,
    /// The upstream's name for upstreams records, else `""`.
    pub upstream: String,
}

impl LogRecord {
    /// # Safety
    /// `r` points to a live record whose strings live for this call.
    unsafe fn copy(r: *const sys::humus_log_record) -> LogRecord {
        // SAFETY: the caller's contract; every string is copied.
        unsafe {
            let r = &*r;
            LogRecord {
                event: ffi::copy_str(r.event).unwrap_or_default(),
                message: ffi::copy_str(r.message).unwrap_or_default(),
                server_address: ffi::copy_str(r.server_address).unwrap_or_default(),
                server_port: u16::try_from(r.server_port).unwrap_or(0),
                previous_state: CircuitState::from_raw(r.previous_state),
                new_state: CircuitState::from_raw(r.new_state),
                counts: BreakerCounts::from_raw(&*r.counts),
                time_unix_ms: r.time_unix_ms,
                upstream: ffi::copy_str(r.upstream).unwrap_or_default(),
            }
        }
    }
}

impl Runtime {
    /// Sends the runtime's log records to `record`, for every client of the runtime at once (replacing an
    /// earlier sink). It runs on the thread whose call caused the change (a caller's or the event loop's),
    /// possibly several at once for different clients: it must be fast, and must not drop a client or the
    /// runtime. Records of one breaker never overlap and arrive in order. A panic in it is caught and dropped.
    pub fn set_log_sink<F>(&self, record: F) -> Result<(), Error>
    where
        F: Fn(LogRecord) + Send + Sync + 'static,
    {
        let user_data = Box::into_raw(Box::new(record));
        let table = sys::humus_log_sink {
            record: Some(record_trampoline::<F>),
            user_data: user_data.cast(),
            destroy: Some(panic::destroy_box::<F>),
            ..sys::HUMUS_LOG_SINK_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; the table is copied; any thread.
        let status = unsafe { sys::humus_runtime_set_log_sink(self.raw(), &table, &mut err) };
        if status != sys::HUMUS_OK {
            // SAFETY: on failure destroy is not called: the closure is still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
        }
        ffi::check(status, err)
    }

    /// Removes the log sink; records are dropped again.
    pub fn clear_log_sink(&self) -> Result<(), Error> {
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; NULL removes the sink; any thread.
        ffi::check(unsafe { sys::humus_runtime_set_log_sink(self.raw(), ptr::null(), &mut err) }, err)
    }
}

/// # Safety
/// Called by the library with the `user_data` of `set_log_sink` and a live record.
unsafe extern "C" fn record_trampoline<F>(user_data: *mut c_void, record: *const sys::humus_log_record)
where
    F: Fn(LogRecord) + Send + Sync + 'static,
{
    // SAFETY: user_data is the boxed `F`, alive until destroy; the record is live for this call.
    let (sink, record) = unsafe { (&*user_data.cast::<F>(), LogRecord::copy(record)) };
    let _ = panic::catch("log sink", Report::Drop, || sink(record));
}
