//! The decision trace through Rust (docs/trace.md §20): `Response::trace`, `StreamingResponse::trace` and
//! `Error::trace`, on the virtual clock and the mock transport.
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use humus_http::{BreakerPosition, CircuitState, Client, ErrorKind, MockReply, Request, Runtime, Settings};

const BASE: &str = "http://payments:8080";
const CLOSED: BreakerPosition = BreakerPosition { state: CircuitState::Closed, generation: 1 };

fn runtime() -> Runtime {
    Runtime::builder().virtual_clock().seed(7).build().unwrap()
}

#[test]
fn a_503_503_200_call_tells_each_decision() {
    let rt = runtime();
    let n = AtomicU32::new(0);
    rt.set_mock_transport(move |_| match n.fetch_add(1, Ordering::SeqCst) {
        0 => MockReply::new().status(503).header("Retry-After", "1"),
        1 => MockReply::new().status(503),
        _ => MockReply::new().body("paid"),
    })
    .unwrap();
    let client = Client::new(&rt, &Settings::builder(BASE).build().unwrap()).unwrap();
    let response = client.execute(&Request::get(&format!("{BASE}/pay"))).unwrap();
    let trace = response.trace();
    assert_eq!(trace.len(), 3, "{trace:#?}");
    for (i, (status, decision)) in [(503, "again"), (503, "again"), (200, "done")].into_iter().enumerate() {
        let r = &trace[i];
        assert_eq!((r.attempt, r.status, r.decision.as_str()), (i as u32 + 1, Some(status), decision), "{r:#?}");
        assert_eq!((r.wire_sends, r.error.as_deref()), (1, None));
        assert_eq!((r.method.as_deref(), r.url.as_deref()), (Some("GET"), Some("http://payments:8080/pay")));
        // A buffered call: every result was counted before the response came back.
        assert_eq!((r.breaker, r.breaker_after), (Some(CLOSED), Some(CLOSED)));
    }
    let first = &trace[0];
    assert_eq!((first.wait, first.wait_source.as_str()), (Duration::from_secs(1), "retry_after"));
    assert_eq!(
        (first.retry_after, first.retry_after_source.as_deref()),
        (Some(Duration::from_secs(1)), Some("header"))
    );
    assert_eq!((first.retry_verdict.as_deref(), first.breaker_verdict.as_deref()), (Some("again"), Some("failure")));
    let second = &trace[1];
    assert_eq!((second.start, second.resend, second.retry_after), (Duration::from_secs(1), true, None));
    assert!(matches!(second.wait_source.as_str(), "backoff" | "capped") && second.wait > Duration::ZERO);
    let last = &trace[2];
    assert_eq!(
        (last.wait, last.wait_source.as_str(), last.breaker_verdict.as_deref()),
        (Duration::ZERO, "none", Some("success"))
    );
    assert!(last.budget_after < first.budget_before, "two retries were charged");
}

#[test]
fn a_rejected_call_tells_the_open_breaker_it_met() {
    let rt = runtime();
    rt.set_mock_transport(|_| MockReply::new().status(503)).unwrap();
    let settings = Settings::builder(BASE).max_attempts(1).trip_consecutive_failures(2).build().unwrap();
    let client = Client::new(&rt, &settings).unwrap();
    for after in [CircuitState::Closed, CircuitState::Open] {
        let trace = client.get(&format!("{BASE}/")).unwrap().trace();
        assert_eq!(trace.len(), 1);
        assert_eq!((trace[0].decision.as_str(), trace[0].breaker_after.map(|b| b.state)), ("exhausted", Some(after)));
    }
    let error = client.get(&format!("{BASE}/")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rejected);
    let trace = error.trace();
    assert_eq!(trace.len(), 1, "{trace:#?}");
    let r = &trace[0];
    assert_eq!(
        (r.decision.as_str(), r.error.as_deref(), r.wire_sends, r.status),
        ("rejected", Some("HUMUS_E_REJECTED"), 0, None)
    );
    assert_eq!(
        (r.retry_verdict.as_deref(), r.breaker),
        (None, Some(BreakerPosition { state: CircuitState::Open, generation: 2 }))
    );

    // An error no call made has none.
    let refused =
        Settings::builder("ftp://payments").build().and_then(|s| Client::new(&rt, &s).map(|_| ())).unwrap_err();
    assert!(refused.trace().is_empty());
}

#[test]
fn a_streamed_response_reads_its_trace_from_the_live_response() {
    let rt = runtime();
    rt.set_mock_transport(|_| MockReply::new().body("paid")).unwrap();
    let client = Client::new(&rt, &Settings::builder(BASE).build().unwrap()).unwrap();
    let stream = client.stream(&Request::get(&format!("{BASE}/pay"))).unwrap();
    let trace = stream.trace();
    assert_eq!((trace.len(), trace[0].status, trace[0].decision.as_str()), (1, Some(200), "done"));
    let response = stream.into_response().unwrap();
    assert_eq!(response.body(), b"paid");
    assert_eq!(response.trace().len(), 1);
}
