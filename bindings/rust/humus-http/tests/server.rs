//! The client against the project's real local test server (tests/server/): real loopback sockets, TLS
//! with the test CA, HTTP/2 and HTTP/1.1, scripted answers, and what the server received as the proof.
mod support;

use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use humus_http::{
    AttributeValue, BreakerOutcome, CallContext, CancelToken, CircuitState, Classification, Client, ErrorKind,
    LogRecord, Request, RetryDecision, Span, Tls,
};
use serde_json::{json, Value};
use support::{runtime, settings, unique_path, TestServer};

/// A bound on "cut within a bounded time": far above the timeouts set and anything a loaded machine adds to
/// them, far below the server's hang and the minute a `hanging_client` call may last.
const CUT_WITHIN: Duration = Duration::from_secs(30);

fn client(listener: &str) -> Client {
    Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap()
}

/// A client whose calls may last a minute: against a server that never answers, only the request's own
/// timeout or a cancel can end one within `CUT_WITHIN`.
fn hanging_client(listener: &str) -> Client {
    let settings =
        settings(listener).timeout(Duration::from_secs(60)).attempt_timeout(Duration::from_secs(60)).build().unwrap();
    Client::new(&runtime(), &settings).unwrap()
}

/// A request header's value in a server record (names are lower-case there).
fn recorded_header<'a>(record: &'a Value, name: &str) -> Option<&'a str> {
    record["headers"].as_array()?.iter().find(|h| h[0] == name).and_then(|h| h[1].as_str())
}

#[test]
fn get_over_https_h2_with_the_test_ca() {
    let server = TestServer::shared();
    let path = unique_path("h2");
    server.script(&path, json!([{"status": 200, "body": "hello", "headers": [["X-Test", "one"]]}]));
    let response = client("https").get(&server.url("https", &path)).unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().unwrap(), "hello");
    assert_eq!(response.header("x-test"), Some("one"));
    assert_eq!(response.http_version(), "2");
    assert_eq!(response.attempts(), 1);
    assert_eq!(response.url(), server.url("https", &path));
    let records = server.requests(&path);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["protocol"], "2");
    assert_eq!(records[0]["tls"], true);
}

#[test]
fn get_over_https_h1_when_the_server_offers_only_http11() {
    let server = TestServer::shared();
    let path = unique_path("h1");
    server.script(&path, json!([{"status": 201, "body": "made"}]));
    let response = client("https_h1").get(&server.url("https_h1", &path)).unwrap();
    assert_eq!((response.status(), response.http_version()), (201, "1.1"));
    assert_eq!(response.body(), b"made");
    assert_eq!(server.requests(&path)[0]["protocol"], "1.1");
}

#[test]
fn get_over_plain_http() {
    let server = TestServer::shared();
    let path = unique_path("plain");
    server.script(&path, json!([{"status": 404}]));
    let response = client("http").get(&server.url("http", &path)).unwrap();
    // A response is returned whatever its status (docs/retries.md §6.6): 404 is not an error.
    assert_eq!((response.status(), response.http_version(), response.is_success()), (404, "1.1", false));
}

#[test]
fn a_get_is_retried_through_a_scripted_503() {
    let server = TestServer::shared();
    let path = unique_path("retry");
    server.script(&path, json!([{"status": 503}, {"status": 200, "body": "ok"}]));
    let client = client("https");
    let response = client.get(&server.url("https", &path)).unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 2));
    let records = server.requests(&path);
    assert_eq!(records.len(), 2, "the server received both attempts");
    assert_eq!((records[0]["step"].as_u64(), records[1]["step"].as_u64()), (Some(0), Some(1)));
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.failures, counts.successes), (1, 1));
    assert!((client.budget_tokens().unwrap() - 9.1).abs() < 1e-9, "one retry taken, one success added back");
}

#[test]
fn a_post_is_not_retried_and_its_body_is_sent() {
    let server = TestServer::shared();
    let path = unique_path("post");
    server.script(&path, json!([{"status": 503}, {"status": 200}]));
    let request = Request::post(&server.url("https", &path)).header("Content-Type", "text/plain").body("payload");
    let response = client("https").execute(&request).unwrap();
    assert_eq!((response.status(), response.attempts()), (503, 1), "the 503 comes back as it is");
    let records = server.requests(&path);
    assert_eq!(records.len(), 1, "a POST without a key is never sent twice");
    assert_eq!(records[0]["method"], "POST");
    assert_eq!(records[0]["body_size"], 7);
    assert_eq!(recorded_header(&records[0], "content-type"), Some("text/plain"));
}

#[test]
fn an_idempotency_key_makes_a_post_retryable_and_is_sent() {
    let server = TestServer::shared();
    let path = unique_path("post-key");
    server.script(&path, json!([{"status": 503}, {"status": 200}]));
    let request = Request::post(&server.url("http", &path)).body("x").idempotency_key("pay-42");
    let response = client("http").execute(&request).unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 2));
    for record in server.requests(&path) {
        assert_eq!(recorded_header(&record, "idempotency-key"), Some("pay-42"));
    }
}

#[test]
fn a_timeout_cuts_a_hanging_call() {
    let server = TestServer::shared();
    let path = unique_path("hang-timeout");
    server.script(&path, json!([{"hang": true}]));
    let started = Instant::now();
    let request = Request::get(&server.url("https", &path)).timeout(Duration::from_millis(300));
    let error = hanging_client("https").execute(&request).unwrap_err();
    let took = started.elapsed();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(took >= Duration::from_millis(250) && took < CUT_WITHIN, "cut after {took:?}");
    assert!(error.attempts() >= 1);
}

#[test]
fn a_cancel_cuts_a_hanging_call() {
    let server = TestServer::shared();
    let path = unique_path("hang-cancel");
    server.script(&path, json!([{"hang": true}]));
    let token = CancelToken::new();
    let canceller = token.clone();
    let cancelling = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        canceller.cancel();
    });
    let started = Instant::now();
    let error =
        hanging_client("https").execute(&Request::get(&server.url("https", &path)).cancel_token(&token)).unwrap_err();
    let took = started.elapsed();
    cancelling.join().unwrap();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(took >= Duration::from_millis(150) && took < CUT_WITHIN, "cut after {took:?}");
    assert!(token.is_cancelled());
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_and_not_retried() {
    let server = TestServer::shared();
    let path = unique_path("untrusted");
    let error = client("untrusted").get(&server.url("untrusted", &path)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Tls, "{error}");
    assert_eq!(error.attempts(), 1, "a certificate not trusted is done, not retried (docs/retries.md §5.3)");
    assert!(server.requests(&path).is_empty());
}

#[test]
fn a_certificate_without_subject_alt_name_is_refused() {
    let server = TestServer::shared();
    let path = unique_path("cn-only");
    let error = client("cn_only").get(&server.url("cn_only", &path)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Tls, "{error}");
    assert!(server.requests(&path).is_empty());
}

#[test]
fn mtls_needs_the_client_certificate() {
    let server = TestServer::shared();
    let path = unique_path("mtls");
    let url = server.url("mtls", &path);
    let error = client("mtls").get(&url).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TlsClientCert, "{error}");

    let tls = Tls::new().ca_file(server.ca_file()).cert_file(server.client_cert()).key_file(server.client_key());
    let with_cert = settings("mtls").tls(&tls).build().unwrap();
    let response = Client::new(&runtime(), &with_cert).unwrap().get(&url).unwrap();
    assert_eq!(response.status(), 200);
    let records = server.requests(&path);
    assert!(records.last().unwrap()["client_cert"].is_string(), "{records:?}");
}

#[test]
fn a_refused_connection_is_a_connect_error_after_the_retries() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = humus_http::Settings::builder(&format!("http://127.0.0.1:{port}"))
        .backoff_base(Duration::from_millis(1))
        .backoff_max(Duration::from_millis(2))
        .build()
        .unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let error = client.get(&format!("http://127.0.0.1:{port}/x")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    assert_eq!(error.attempts(), 3, "connection refused is retried (docs/retries.md §5.3)");
    assert!(!error.message().is_empty());
}

#[test]
fn the_breaker_opens_and_then_rejects_without_reaching_the_server() {
    let server = TestServer::shared();
    let path = unique_path("breaker");
    server.script(&path, json!([{"status": 503}]));
    let runtime = runtime();
    let records: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    runtime.set_log_sink(move |record| sink.lock().unwrap().push(record)).unwrap();
    let settings = settings("https")
        .max_attempts(1)
        .trip_consecutive_failures(3)
        .breaker_open_for(Duration::from_secs(60))
        .build()
        .unwrap();
    let client = Client::new(&runtime, &settings).unwrap();
    let url = server.url("https", &path);
    for _ in 0..3 {
        assert_eq!(client.get(&url).unwrap().status(), 503);
    }
    assert_eq!(client.breaker_state().unwrap(), CircuitState::Open);
    let error = client.get(&url).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rejected, "{error}");
    assert_eq!(error.attempts(), 0);
    assert!(error.retry_after() > Duration::from_secs(50) && error.retry_after() <= Duration::from_secs(60));
    assert_eq!(server.requests(&path).len(), 3, "the rejected call sent nothing");

    let records = records.lock().unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    let change = &records[0];
    assert_eq!(change.event, "humus.circuit.state_change");
    assert_eq!((change.previous_state, change.new_state), (Some(CircuitState::Closed), Some(CircuitState::Open)));
    assert_eq!((change.server_address.as_str(), change.server_port), ("payments", server.port("https")));
    assert_eq!(change.counts.consecutive_failures, 3);
    assert!(change.message.contains("closed -> open"), "{}", change.message);
    drop(records);
    runtime.clear_log_sink().unwrap();
}

#[test]
fn a_classifier_closure_decides_what_an_answer_means() {
    let server = TestServer::shared();
    let path = unique_path("classifier");
    server.script(&path, json!([{"status": 418, "headers": [["X-Why", "teapot"]]}, {"status": 200}]));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let mut settings = settings("https").build().unwrap();
    settings
        .set_classifier(move |attempt| {
            log.lock().unwrap().push(format!(
                "{} #{} {:?} {:?} {:?}",
                attempt.method(),
                attempt.number(),
                attempt.status(),
                attempt.header("x-why"),
                attempt.error()
            ));
            if attempt.status() == Some(418) {
                // A teapot is a passing fault for this dependency: retry, and count it against the breaker.
                return Classification {
                    retry: RetryDecision::Again,
                    breaker: BreakerOutcome::Failure,
                    retry_after: None,
                };
            }
            attempt.classify_default().unwrap()
        })
        .unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let response = client.get(&server.url("https", &path)).unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 2));
    assert_eq!(
        *seen.lock().unwrap(),
        ["GET #1 Some(418) Some(\"teapot\") None", "GET #2 Some(200) None None"],
        "the classifier saw each attempt"
    );
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.failures, counts.successes), (1, 1));
    assert_eq!(server.requests(&path).len(), 2);
}

#[test]
fn a_panicking_classifier_fails_the_call_and_counts_a_failure() {
    let server = TestServer::shared();
    let path = unique_path("classifier-panic");
    server.script(&path, json!([{"status": 500}]));
    let mut settings = settings("https").build().unwrap();
    settings
        .set_classifier(|attempt| match attempt.status() {
            Some(500) => panic!("cannot classify a 500"),
            _ => attempt.classify_default().unwrap(),
        })
        .unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let error = client.get(&server.url("https", &path)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Callback, "{error}");
    assert_eq!(error.panic_message(), Some("classifier panicked: cannot classify a 500"));
    assert!(error.to_string().contains("cannot classify a 500"), "{error}");
    assert_eq!(error.attempts(), 1);
    let counts = client.breaker_counts().unwrap();
    assert_eq!(
        (counts.failures, counts.consecutive_failures),
        (1, 1),
        "docs/breaker.md §9.4: a panic counts as a failure"
    );
    assert_eq!(server.requests(&path).len(), 1);

    // The next call of the thread carries no stale panic.
    server.script(&path, json!([{"status": 200}]));
    assert_eq!(client.get(&server.url("https", &path)).unwrap().status(), 200);
}

#[test]
fn several_threads_share_one_client() {
    let server = TestServer::shared();
    let path = unique_path("threads");
    server.script(&path, json!([{"status": 200, "body": "shared"}]));
    let client = client("https");
    let url = server.url("https", &path);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for _ in 0..10 {
                    let response = client.get(&url).unwrap();
                    assert_eq!((response.status(), response.body()), (200, &b"shared"[..]));
                }
            });
        }
    });
    let records = server.requests(&path);
    assert_eq!(records.len(), 80);
    assert!(records.iter().all(|r| r["protocol"] == "2"));
    assert_eq!(client.breaker_counts().unwrap().successes, 80);
}

#[test]
fn one_request_is_sent_from_several_threads() {
    let server = TestServer::shared();
    let path = unique_path("shared-request");
    let client = Arc::new(client("http"));
    let request = Arc::new(Request::get(&server.url("http", &path)).header("X-Shared", "yes"));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (client, request) = (Arc::clone(&client), Arc::clone(&request));
            std::thread::spawn(move || client.execute(&request).unwrap().status())
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), 200);
    }
    let records = server.requests(&path);
    assert_eq!(records.len(), 4);
    assert!(records.iter().all(|r| recorded_header(r, "x-shared") == Some("yes")));
}

#[test]
fn asynchronous_calls_complete_on_the_event_loop() {
    let server = TestServer::shared();
    let path = unique_path("async");
    server.script(&path, json!([{"status": 200, "body": "async", "delay_ms": 50}]));
    let client = client("https");
    let request = Request::get(&server.url("https", &path));
    let calls: Vec<_> = (0..5).map(|_| client.submit(&request).unwrap()).collect();
    for call in calls {
        let response = call.wait().unwrap();
        assert_eq!((response.status(), response.body()), (200, &b"async"[..]));
    }

    let (tx, rx) = mpsc::channel();
    client.submit_with(&request, move |outcome| tx.send(outcome.map(|r| r.status())).unwrap()).unwrap();
    assert_eq!(rx.recv_timeout(CUT_WITHIN).unwrap(), Ok(200));
    let records = server.requests(&path);
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r["protocol"] == "2"));
}

#[test]
fn asynchronous_calls_are_cancelled_by_handle_and_by_token() {
    let server = TestServer::shared();
    let path = unique_path("async-cancel");
    server.script(&path, json!([{"hang": true}]));
    let client = hanging_client("https");
    let url = server.url("https", &path);

    let started = Instant::now();
    let call = client.submit(&Request::get(&url)).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!call.is_finished());
    call.cancel();
    assert_eq!(call.wait().unwrap_err().kind(), ErrorKind::Cancelled);

    let token = CancelToken::new();
    let request = Request::get(&url).cancel_token(&token);
    let call = client.submit(&request).unwrap();
    let handle = call.handle();
    drop(handle); // a dropped handle cancels nothing
    std::thread::sleep(Duration::from_millis(100));
    token.cancel();
    assert_eq!(call.wait().unwrap_err().kind(), ErrorKind::Cancelled);

    // A call submitted with a token already cancelled ends at once.
    let call = client.submit(&request).unwrap();
    assert_eq!(call.wait().unwrap_err().kind(), ErrorKind::Cancelled);
    assert!(started.elapsed() < CUT_WITHIN, "took {:?}", started.elapsed());
}

#[test]
fn the_call_context_travels_with_the_configured_headers() {
    let server = TestServer::shared();
    let path = unique_path("context");
    let settings = settings("https").header("X-Service", "checkout").forward_authorization(true).build().unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let context = CallContext {
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
        request_id: Some("req-7".into()),
        authorization: Some("Bearer t0ken".into()),
        ..CallContext::default()
    };
    let request = Request::get(&server.url("https", &path)).context(&context).header("X-Call", "1");
    assert_eq!(client.execute(&request).unwrap().status(), 200);
    let record = &server.requests(&path)[0];
    assert_eq!(recorded_header(record, "x-service"), Some("checkout"));
    assert_eq!(recorded_header(record, "x-request-id"), Some("req-7"));
    assert_eq!(recorded_header(record, "authorization"), Some("Bearer t0ken"));
    assert_eq!(recorded_header(record, "x-call"), Some("1"));
    let traceparent = recorded_header(record, "traceparent").expect("a traceparent");
    assert!(traceparent.contains("0af7651916cd43dd8448eb211c80319c"), "{traceparent}");
}

#[test]
fn headers_the_client_owns_are_refused_as_in_every_language() {
    // docs/transport.md §10.5: one check in the core for C, Python, Go, Rust and the CLI.
    for (name, value) in [
        ("Host", "evil.example"),
        ("Content-Length", "2"),
        ("Transfer-Encoding", "chunked"),
        ("Upgrade", "h2c"),
        ("X-Ctl", "a\u{1}b"),
    ] {
        let request = Request::post(&format!("http://127.0.0.1:1/{name}")).header(name, value);
        let refused = request.error().cloned().expect("refused while building");
        assert_eq!((refused.kind(), refused.fields()), (ErrorKind::InvalidArgument, &[name.to_string()][..]));
    }
}

#[test]
fn a_header_injection_is_refused_before_sending() {
    let server = TestServer::shared();
    let path = unique_path("injection");
    let request = Request::get(&server.url("https", &path)).header("X-Bad", "a\r\nX-Evil: 1");
    let refused = request.error().cloned().expect("refused while building");
    assert_eq!((refused.kind(), refused.fields()), (ErrorKind::InvalidArgument, &["X-Bad".to_string()][..]));
    let error = client("https").execute(&request).unwrap_err();
    assert_eq!(error, refused, "the refusal is every call's outcome");
    assert_eq!(error.attempts(), 0);
    assert!(server.requests(&path).is_empty());
}

#[test]
fn each_attempt_has_a_span_whose_ids_the_server_saw() {
    let server = TestServer::shared();
    let path = unique_path("spans");
    server.script(&path, json!([{"status": 503}, {"status": 200}]));
    let runtime = runtime();
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let sink = Arc::clone(&spans);
    runtime.set_span_sink(move |span| sink.lock().unwrap().push(span)).unwrap();
    let client = Client::new(&runtime, &settings("https").build().unwrap()).unwrap();
    let context = CallContext {
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        tracestate: Some("vendor=1".into()),
        ..CallContext::default()
    };
    let url = server.url("https", &path);
    assert_eq!(client.execute(&Request::get(&url).context(&context)).unwrap().status(), 200);

    let spans = spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 2, "one span per attempt");
    let records = server.requests(&path);
    for (i, (span, record)) in spans.iter().zip(&records).enumerate() {
        assert_eq!(span.name, "GET");
        assert_eq!(span.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736", "the caller's trace");
        assert_eq!(span.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
        assert_eq!((span.tracestate.as_str(), span.trace_flags), ("vendor=1", 1));
        assert!(span.end_unix_ns >= span.start_unix_ns);
        let sent = recorded_header(record, "traceparent").unwrap();
        assert_eq!(sent, format!("00-{}-{}-01", span.trace_id, span.span_id), "the server saw this span's ids");
        assert_eq!(span.attribute("url.full"), Some(&AttributeValue::String(url.clone())));
        assert_eq!(span.attribute("network.protocol.version"), Some(&AttributeValue::String("2".into())));
        let resends = span.attribute("http.request.resend_count");
        assert_eq!(resends, if i == 0 { None } else { Some(&AttributeValue::Int(1)) });
    }
    assert_eq!(spans[0].attribute("http.response.status_code"), Some(&AttributeValue::Int(503)));
    assert_eq!(spans[0].attribute("error.type"), Some(&AttributeValue::String("503".into())));
    assert!(spans[0].is_error && !spans[1].is_error);
    runtime.clear_span_sink().unwrap();
}
