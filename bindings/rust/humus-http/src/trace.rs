//! The decision trace (docs/trace.md §20): one record per attempt of a call, as [`Response::trace`],
//! [`StreamingResponse::trace`] and [`Error::trace`] give it. The core records it and the C ABI renders it
//! as JSON, parsed here (`json.rs`) into plain values with the fields every language reads.
//!
//! [`Response::trace`]: crate::Response::trace
//! [`StreamingResponse::trace`]: crate::StreamingResponse::trace
//! [`Error::trace`]: crate::Error::trace
use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use humus_http_sys as sys;

use crate::breaker::CircuitState;
use crate::json::{self, Value};

/// One attempt of a call and what the call decided after it. Times are [`Duration`]s: `start` from the
/// call's start, the others lengths. `None` where the record has no value. Plain data.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRecord {
    /// 1-based position in the trace.
    pub attempt: u32,
    /// When the attempt started, from the call's start.
    pub start: Duration,
    /// The method sent.
    pub method: Option<String>,
    /// The URL sent, without user-info.
    pub url: Option<String>,
    /// The redirect hop: 0 the request itself, n the n-th redirect followed.
    pub redirect: u32,
    /// A retry of the same hop.
    pub resend: bool,
    /// A hedged copy of another attempt (always `false` today).
    pub hedge: bool,
    /// Times the request reached the wire: 0 when no connection carried it (a failed dial or TLS
    /// handshake, a breaker rejection).
    pub wire_sends: u32,
    /// The HTTP status the attempt got.
    pub status: Option<u16>,
    /// The error in its place, by its status name (`"HUMUS_E_TIMEOUT"`).
    pub error: Option<String>,
    /// From sending to the answer's head (or the failure).
    pub duration: Duration,
    /// The classifier's retry verdict, `"again"` or `"done"`; `None` when no classifier judged.
    pub retry_verdict: Option<String>,
    /// The classifier's breaker verdict: `"success"`, `"failure"` or `"ignored"`.
    pub breaker_verdict: Option<String>,
    /// The wait the dependency asked for.
    pub retry_after: Option<Duration>,
    /// Where it came from: `"header"` (`Retry-After`) or `"classifier"`.
    pub retry_after_source: Option<String>,
    /// The breaker when the attempt was admitted or rejected; `None` when the call stopped before asking.
    pub breaker: Option<BreakerPosition>,
    /// The breaker once this attempt's result was counted; `None` when none was, or while a streamed body
    /// still holds the verdict (docs/bodies.md §7).
    pub breaker_after: Option<BreakerPosition>,
    /// The retry budget's balance before the attempt.
    pub budget_before: f64,
    /// And after its decision.
    pub budget_after: f64,
    /// One of `"done"`, `"again"`, `"throttled"`, `"exhausted"`, `"expired"`, `"stopped"`, `"rejected"`
    /// (docs/trace.md §20.2).
    pub decision: String,
    /// Before the next attempt (`"again"`); zero otherwise.
    pub wait: Duration,
    /// What set `wait`: `"backoff"`, `"capped"`, `"retry_after"` or `"none"`.
    pub wait_source: String,
    /// The call's time left when the decision was taken.
    pub deadline_left: Duration,
}

/// Where a circuit breaker stood: its state and that state's generation (1 at creation, one more per
/// transition).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerPosition {
    /// The state.
    pub state: CircuitState,
    /// That state's generation.
    pub generation: u64,
}

/// The records of the C ABI's JSON trace, in order; empty for text that is not a trace.
pub(crate) fn parse(text: &str) -> Vec<AttemptRecord> {
    match json::parse(text) {
        Some(Value::Arr(items)) => items.iter().map(record).collect(),
        _ => Vec::new(),
    }
}

fn record(r: &Value) -> AttemptRecord {
    let string = |key: &str| r.get(key).as_str().map(str::to_string);
    let count = |key: &str| r.get(key).as_f64().map_or(0, |x| x as u32);
    let seconds = |key: &str| r.get(key).as_f64().map(duration);
    AttemptRecord {
        attempt: count("attempt"),
        start: seconds("start").unwrap_or_default(),
        method: string("method"),
        url: string("url"),
        redirect: count("redirect"),
        resend: r.get("resend").as_bool().unwrap_or(false),
        hedge: r.get("hedge").as_bool().unwrap_or(false),
        wire_sends: count("wire_sends"),
        status: r.get("status").as_f64().map(|x| x as u16),
        error: string("error"),
        duration: seconds("duration").unwrap_or_default(),
        retry_verdict: string("retry_verdict"),
        breaker_verdict: string("breaker_verdict"),
        retry_after: seconds("retry_after"),
        retry_after_source: string("retry_after_source"),
        breaker: position(r.get("breaker")),
        breaker_after: position(r.get("breaker_after")),
        budget_before: r.get("budget_before").as_f64().unwrap_or(0.0),
        budget_after: r.get("budget_after").as_f64().unwrap_or(0.0),
        decision: string("decision").unwrap_or_default(),
        wait: seconds("wait").unwrap_or_default(),
        wait_source: string("wait_source").unwrap_or_default(),
        deadline_left: seconds("deadline_left").unwrap_or_default(),
    }
}

fn position(p: &Value) -> Option<BreakerPosition> {
    let state = match p.get("state").as_str()? {
        "closed" => CircuitState::Closed,
        "open" => CircuitState::Open,
        "half_open" => CircuitState::HalfOpen,
        _ => return None,
    };
    Some(BreakerPosition { state, generation: p.get("generation").as_f64().map_or(0, |g| g as u64) })
}

/// Seconds as the JSON carries them, to the nanosecond.
fn duration(seconds: f64) -> Duration {
    Duration::from_nanos((seconds.max(0.0) * 1e9).round() as u64)
}

/// The JSON text of a live response's trace; `None` when the library could not render it (out of memory).
///
/// # Safety
/// `resp` is a live response no other thread frees.
pub(crate) unsafe fn response_text(resp: *const sys::humus_response) -> Option<String> {
    let mut text: *mut c_char = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: the caller's contract; the string is ours to free.
    unsafe { owned(sys::humus_response_trace(resp, &mut text, &mut len, ptr::null_mut()), text, len) }
}

/// The JSON text of a live error's trace, as [`response_text`].
///
/// # Safety
/// `err` is a live error no other thread frees.
pub(crate) unsafe fn error_text(err: *const sys::humus_error) -> Option<String> {
    let mut text: *mut c_char = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: the caller's contract; the string is ours to free.
    unsafe { owned(sys::humus_error_trace(err, &mut text, &mut len), text, len) }
}

/// # Safety
/// On success `text` is a library string of `len` bytes, freed here.
unsafe fn owned(status: sys::humus_status, text: *mut c_char, len: usize) -> Option<String> {
    if status != sys::HUMUS_OK || text.is_null() {
        return None;
    }
    // SAFETY: `text` holds `len` bytes; it is copied, then freed once.
    unsafe {
        let out = String::from_utf8_lossy(std::slice::from_raw_parts(text.cast::<u8>(), len)).into_owned();
        sys::humus_string_free(text);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_with_its_nulls() {
        let text = r#"[{"attempt": 1, "start": 0.0, "method": "GET", "url": "http://a/", "redirect": 0,
          "resend": false, "hedge": false, "wire_sends": 1, "status": 503, "error": null, "duration": 0.25,
          "retry_verdict": "again", "breaker_verdict": "failure", "retry_after": 1.0,
          "retry_after_source": "header", "breaker": {"state": "closed", "generation": 1},
          "breaker_after": null, "budget_before": 10.0, "budget_after": 9.0, "decision": "again",
          "wait": 1.0566, "wait_source": "retry_after", "deadline_left": 30.0}]"#;
        let records = parse(text);
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!((r.attempt, r.status, r.error.as_deref(), r.wire_sends), (1, Some(503), None, 1));
        assert_eq!(r.retry_after, Some(Duration::from_secs(1)));
        assert_eq!(r.wait, Duration::from_micros(1_056_600));
        assert_eq!(r.breaker, Some(BreakerPosition { state: CircuitState::Closed, generation: 1 }));
        assert_eq!(r.breaker_after, None);
        assert_eq!((r.decision.as_str(), r.wait_source.as_str()), ("again", "retry_after"));
        assert!(parse("not json").is_empty());
    }
}
