//! Rust closures behind the C callbacks: classifiers (docs/retries.md §5.4), breaker policies (docs/breaker.md §9.3), the log sink
//! and the metric sink (docs/telemetry.md §13) — what they see, what they decide, panics, and that the library drops them.
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use humus_http::{
    BreakerOutcome, CircuitState, Classification, ClassifierPreset, Client, ErrorKind, LogRecord, MetricKind,
    MockReply, ProbeDecision, RetryDecision, Runtime, Settings,
};
use serde_json::Value;

const BASE: &str = "http://payments:8080";

fn virtual_runtime(respond: impl Fn(&humus_http::MockRequest<'_>) -> MockReply + Send + Sync + 'static) -> Runtime {
    let runtime = Runtime::builder().virtual_clock().seed(1).build().unwrap();
    runtime.set_mock_transport(respond).unwrap();
    runtime
}

/// Answers 503 while `failing` is set, else 200.
fn switchable(failing: &Arc<Mutex<bool>>) -> impl Fn(&humus_http::MockRequest<'_>) -> MockReply + Send + Sync {
    let failing = Arc::clone(failing);
    move |_| MockReply::new().status(if *failing.lock().unwrap() { 503 } else { 200 })
}

#[test]
fn a_classifiers_retry_after_is_waited_exactly() {
    let runtime = virtual_runtime(|r| MockReply::new().status(if r.url().ends_with("/1") { 200 } else { 418 }));
    let mut settings = Settings::builder(BASE).max_retry_after(Duration::from_secs(5)).build().unwrap();
    settings
        .set_classifier(|attempt| match attempt.status() {
            Some(418) => Classification {
                retry: RetryDecision::Again,
                breaker: BreakerOutcome::Ignored,
                retry_after: Some(Duration::from_millis(1500)),
            },
            _ => attempt.classify_default().unwrap(),
        })
        .unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    let response = client.get(&format!("{BASE}/0")).unwrap();
    assert_eq!((response.status(), response.attempts()), (418, 3));
    assert!(runtime.elapsed_ms() >= 3000, "two waits of at least 1.5 s, got {}", runtime.elapsed_ms());
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.successes, counts.failures), (0, 0), "ignored results are not counted");
}

#[test]
fn a_classifier_may_delegate_to_a_preset_and_sees_transport_errors() {
    let runtime = virtual_runtime(|r| {
        if r.url().ends_with("/down") {
            MockReply::new().error(ErrorKind::Connect, "refused here")
        } else {
            MockReply::new().status(404)
        }
    });
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let mut settings = Settings::builder(BASE).max_attempts(1).build().unwrap();
    settings
        .set_classifier(move |attempt| {
            log.lock().unwrap().push(format!(
                "{:?} {:?} {}",
                attempt.status(),
                attempt.error(),
                attempt.error_message()
            ));
            assert!(format!("{attempt:?}").contains("Attempt"));
            let strict = attempt.classify_preset(ClassifierPreset::Strict).unwrap();
            let default = attempt.classify_default().unwrap();
            if attempt.status() == Some(404) {
                assert_eq!(default.breaker, BreakerOutcome::Success, "a 404 is the dependency working");
                assert_eq!(strict.breaker, BreakerOutcome::Failure, "only 2xx is a success for strict");
            }
            strict
        })
        .unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    assert_eq!(client.get(&format!("{BASE}/missing")).unwrap().status(), 404);
    assert_eq!(client.get(&format!("{BASE}/down")).unwrap_err().kind(), ErrorKind::Connect);
    assert_eq!(*seen.lock().unwrap(), ["Some(404) None ", "None Some(Connect) refused here"]);
    assert_eq!(client.breaker_counts().unwrap().failures, 2);
}

#[test]
fn a_custom_breaker_policy_opens_and_closes() {
    let failing = Arc::new(Mutex::new(true));
    let runtime = virtual_runtime(switchable(&failing));
    let mut settings =
        Settings::builder(BASE).max_attempts(1).breaker_open_for(Duration::from_secs(10)).build().unwrap();
    settings
        .set_breaker_policy(
            |counts| counts.consecutive_failures >= 2,
            |counts| if counts.failures > 0 { ProbeDecision::Reopen } else { ProbeDecision::Close },
        )
        .unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    let url = format!("{BASE}/p");
    client.get(&url).unwrap();
    assert_eq!(client.breaker_state().unwrap(), CircuitState::Closed);
    client.get(&url).unwrap();
    assert_eq!(client.breaker_state().unwrap(), CircuitState::Open, "two failures in a row open it");
    let rejected = client.get(&url).unwrap_err();
    assert_eq!(rejected.kind(), ErrorKind::Rejected);
    assert_eq!(rejected.retry_after(), Duration::from_secs(10));

    runtime.advance_ms(10_000).unwrap();
    assert_eq!(client.breaker_state().unwrap(), CircuitState::HalfOpen);
    *failing.lock().unwrap() = false;
    assert_eq!(client.get(&url).unwrap().status(), 200);
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.state, counts.successes), (CircuitState::Closed, 0), "one good probe closes it");
    assert_eq!(CircuitState::HalfOpen.as_str(), "half_open");
}

#[test]
fn a_panicking_policy_counts_a_failure_and_fails_the_call() {
    let runtime = virtual_runtime(|_| MockReply::new().status(200));
    let mut settings = Settings::builder(BASE).max_attempts(1).build().unwrap();
    settings.set_breaker_policy(|_| panic!("trip broke"), |_| ProbeDecision::Continue).unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    let error = client.get(&format!("{BASE}/x")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Callback, "{error}");
    assert_eq!(error.panic_message(), Some("breaker policy (trip) panicked: trip broke"));
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.state, counts.successes, counts.failures), (CircuitState::Closed, 0, 1));
}

#[test]
fn the_library_drops_every_closure_it_was_given() {
    let witness = Arc::new(());
    {
        let runtime = {
            let w = Arc::clone(&witness);
            virtual_runtime(move |_| {
                let _ = &w;
                MockReply::new()
            })
        };
        let w = Arc::clone(&witness);
        runtime.set_log_sink(move |_| drop(Arc::clone(&w))).unwrap();
        let mut settings = Settings::builder(BASE).build().unwrap();
        let (c1, c2, p1, p2) = (Arc::clone(&witness), Arc::clone(&witness), Arc::clone(&witness), Arc::clone(&witness));
        settings
            .set_classifier(move |a| {
                let _ = &c1;
                a.classify_default().unwrap()
            })
            .unwrap();
        // Replacing the classifier releases the first one at once.
        settings
            .set_classifier(move |a| {
                let _ = &c2;
                a.classify_default().unwrap()
            })
            .unwrap();
        settings
            .set_breaker_policy(
                move |_| {
                    let _ = &p1;
                    false
                },
                move |_| {
                    let _ = &p2;
                    ProbeDecision::Continue
                },
            )
            .unwrap();
        assert_eq!(Arc::strong_count(&witness), 6);
        let client = Client::new(&runtime, &settings).unwrap();
        drop(settings);
        client.get(&format!("{BASE}/x")).unwrap();
        assert_eq!(Arc::strong_count(&witness), 6, "the client still holds the classifier and policy");
    }
    assert_eq!(Arc::strong_count(&witness), 1, "mock, sink, classifier and policy were all dropped");
}

#[test]
fn the_log_sink_receives_state_changes_and_survives_a_panic() {
    let failing = Arc::new(Mutex::new(true));
    let runtime = virtual_runtime(switchable(&failing));
    let records: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    runtime
        .set_log_sink(move |record| {
            sink.lock().unwrap().push(record);
            panic!("a sink that panics must not take the client down");
        })
        .unwrap();
    let settings = Settings::builder(BASE).max_attempts(1).trip_consecutive_failures(1).build().unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    client.get(&format!("{BASE}/x")).unwrap();
    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!((record.previous_state, record.new_state), (Some(CircuitState::Closed), Some(CircuitState::Open)));
    assert_eq!((record.server_address.as_str(), record.server_port), ("payments", 8080));
    assert_eq!((record.counts.failures, record.upstream.as_str()), (1, ""));
    assert!(record.time_unix_ms > 1_600_000_000_000, "calendar time: {}", record.time_unix_ms);
    runtime.clear_log_sink().unwrap();
    runtime.advance_ms(10_000).unwrap();
    *failing.lock().unwrap() = false;
    client.get(&format!("{BASE}/x")).unwrap();
    assert_eq!(client.breaker_state().unwrap(), CircuitState::HalfOpen);
}

#[test]
fn metrics_come_as_prometheus_text_json_and_points() {
    let runtime = virtual_runtime(|r| MockReply::new().status(if r.url().ends_with("/bad") { 503 } else { 200 }));
    let settings = Settings::builder(BASE).max_attempts(1).trip_consecutive_failures(1).build().unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    client.get(&format!("{BASE}/ok")).unwrap();
    client.get(&format!("{BASE}/bad")).unwrap();

    let text = runtime.metrics_prometheus().unwrap();
    assert!(text
        .contains(r#"humus_circuit_state{server_address="payments",server_port="8080",humus_circuit_state="open"} 1"#));
    let json: Value = serde_json::from_str(&runtime.metrics_json().unwrap()).unwrap();
    let names: Vec<&str> = json["metrics"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"humus.circuit.calls") && names.contains(&"http.client.request.duration"), "{names:?}");

    let calls = AtomicU64::new(0);
    let mut histograms = 0;
    runtime
        .collect_metrics(|point| {
            match point.kind {
                MetricKind::Histogram => {
                    histograms += 1;
                    // Durations have OpenTelemetry's advised bounds (no 0), body sizes the SDK's default ones.
                    let bounds = if point.unit == "s" { 14 } else { 15 };
                    assert_eq!((point.bounds.len(), point.bucket_counts.len()), (bounds, bounds + 1));
                    assert_eq!(point.count, 1, "one point per attribute set: the 200 and the 503");
                    assert_eq!(point.attribute, None);
                    let attributes: Vec<(&str, &str)> = point.attributes().collect();
                    let status = attributes.iter().find(|(k, _)| *k == "http.response.status_code").unwrap().1;
                    assert!(status == "200" || status == "503", "{attributes:?}");
                    assert_eq!(attributes[0], ("http.request.method", "GET"));
                    assert_eq!(attributes.contains(&("error.type", "503")), status == "503", "{attributes:?}");
                }
                MetricKind::Counter if point.name == "humus.circuit.calls" => {
                    calls.fetch_add(point.value, Ordering::Relaxed);
                    assert_eq!(point.attribute.unwrap().0, "humus.circuit.outcome");
                    assert_eq!(point.attributes().collect::<Vec<_>>(), vec![point.attribute.unwrap()]);
                    assert_eq!(point.unit, "{call}");
                }
                MetricKind::Gauge | MetricKind::Counter => assert!(point.bounds.is_empty()),
            }
            assert_eq!((point.server_address, point.server_port), ("payments", 8080));
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((calls.load(Ordering::Relaxed), histograms), (2, 4));

    let mut seen = 0;
    runtime
        .collect_metrics(|_| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!(seen, 1, "Break stops the collection, and is not an error");

    let error = runtime.collect_metrics(|_| -> ControlFlow<()> { panic!("sink broke") }).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Callback);
    assert_eq!(error.panic_message(), Some("metric sink panicked: sink broke"));

    let readiness: Value = serde_json::from_str(&runtime.readiness_json().unwrap()).unwrap();
    assert_eq!(readiness["status"], "degraded");
    assert_eq!(readiness["clients"][0]["state"], "open");
    assert_eq!(readiness["clients"][0]["origin"], BASE);
}
