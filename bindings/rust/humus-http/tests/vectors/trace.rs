//! The vectors' "trace" expectation (tests/vectors/README.md): a call's decision trace, read through
//! `Response::trace`, `StreamingResponse::trace` and `Error::trace`, in the vectors' terms, checked record
//! by record.
use std::time::Duration;

use humus_http::{AttemptRecord, BreakerPosition};
use serde_json::{json, Value};

use crate::problems::Problems;

/// The members of a record a vector may check; "_ms" ones are durations in milliseconds.
const KEYS: &[&str] = &[
    "decision",
    "wait_ms",
    "wait_source",
    "status",
    "error",
    "wire_sends",
    "retry_verdict",
    "breaker_verdict",
    "retry_after_ms",
    "retry_after_source",
    "breaker",
    "breaker_after",
    "budget_before",
    "budget_after",
    "redirect",
    "resend",
];

/// The records as the vectors write them: JSON values, null where a record has none.
pub fn for_vector(records: &[AttemptRecord]) -> Vec<Value> {
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    let position = |p: &Option<BreakerPosition>| {
        p.map_or(Value::Null, |p| json!({"state": p.state.as_str(), "generation": p.generation}))
    };
    records
        .iter()
        .map(|r| {
            json!({
                "decision": r.decision, "wait_ms": ms(r.wait), "wait_source": r.wait_source, "status": r.status,
                "error": r.error, "wire_sends": r.wire_sends, "retry_verdict": r.retry_verdict,
                "breaker_verdict": r.breaker_verdict, "retry_after_ms": r.retry_after.map(ms),
                "retry_after_source": r.retry_after_source, "breaker": position(&r.breaker),
                "breaker_after": position(&r.breaker_after), "budget_before": r.budget_before,
                "budget_after": r.budget_after, "redirect": r.redirect, "resend": r.resend,
            })
        })
        .collect()
}

/// Every record, in order; each expected record names only the members it checks, and numbers compare
/// within 1e-6 (the C ABI carries seconds as doubles).
pub fn check(p: &Problems, want: &Value, got: &[Value], path: &str) {
    let Some(want) = want.as_array() else {
        p.add(path, "must be an array");
        return;
    };
    if want.len() != got.len() {
        p.add(path, format!("expected {} records, the trace has {}: {}", want.len(), got.len(), json!(got)));
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        let at = format!("{path}[{i}]");
        if !p.keys(w, &at, KEYS) {
            continue;
        }
        for (key, value) in w.as_object().into_iter().flatten() {
            match (value.as_f64(), g[key].as_f64()) {
                (Some(x), Some(y)) if (x - y).abs() <= 1e-6 => {}
                (Some(_), Some(_)) => p.add(&format!("{at}.{key}"), format!("expected {value}, got {}", g[key])),
                _ => p.equal(&format!("{at}.{key}"), value, g[key].clone()),
            }
        }
    }
}
