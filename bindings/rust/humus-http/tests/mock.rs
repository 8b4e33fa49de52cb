//! The runtime, the mock transport (docs/testing-kit.md §16.2) and the virtual clock (docs/testing-kit.md §16.1), and through them
//! requests, responses and errors: fast, deterministic, no sockets.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use humus_http::{
    CallContext, CancelToken, Client, Error, ErrorKind, MockReply, MockRequest, Request, RetryMode, Runtime, Settings,
    SettingsBuilder,
};

const BASE: &str = "http://payments:8080";

fn virtual_runtime() -> Runtime {
    Runtime::builder().virtual_clock().seed(7).build().unwrap()
}

/// A client on a virtual clock whose dependency is `respond`.
fn mock_client(
    settings: SettingsBuilder,
    respond: impl Fn(&MockRequest<'_>) -> MockReply + Send + Sync + 'static,
) -> (Runtime, Client) {
    let runtime = virtual_runtime();
    runtime.set_mock_transport(respond).unwrap();
    let client = Client::new(&runtime, &settings.build().unwrap()).unwrap();
    (runtime, client)
}

#[test]
fn the_library_version_is_this_bindings_abi() {
    assert_eq!(humus_http::version_number() / 10000, 0);
    assert_eq!(humus_http::version().split('.').count(), 3);
    assert!(humus_http::version_number() >= 100);
}

#[test]
fn runtime_options_are_checked_by_key() {
    let builder = Runtime::builder().resolve("payments:443", "127.0.0.1:8443").faults(true).virtual_clock().seed(3);
    assert_eq!(
        builder.to_json(),
        r#"{"resolve":{"payments:443":"127.0.0.1:8443"},"faults":true,"clock":"virtual","seed":3}"#
    );
    builder.build().unwrap();
    let error = Runtime::builder().resolve("no-port", "127.0.0.1").build().unwrap_err();
    assert_eq!((error.kind(), error.fields()), (ErrorKind::Config, &["resolve.no-port".to_string()][..]));
}

#[test]
fn a_real_clock_cannot_be_advanced_and_a_virtual_one_moves_exactly() {
    let real = Runtime::new().unwrap();
    assert_eq!(real.advance_ms(5).unwrap_err().kind(), ErrorKind::Misuse);
    assert!(real.elapsed_ms() >= 0);

    let runtime = virtual_runtime();
    assert_eq!(runtime.elapsed_ms(), 0);
    runtime.advance_ms(1500).unwrap();
    assert_eq!(runtime.elapsed_ms(), 1500);
    assert!(format!("{runtime:?}").contains("1500"));
}

#[test]
fn a_virtual_clock_needs_the_mock_transport() {
    let runtime = virtual_runtime();
    let settings = Settings::builder(BASE).build().unwrap();
    assert_eq!(Client::new(&runtime, &settings).unwrap_err().kind(), ErrorKind::Misuse);
    runtime.set_mock_transport(|_| MockReply::new()).unwrap();
    Client::new(&runtime, &settings).unwrap();
    runtime.clear_mock_transport().unwrap();
    assert_eq!(Client::new(&runtime, &settings).unwrap_err().kind(), ErrorKind::Misuse, "the mock is gone");
}

#[test]
fn the_mock_sees_the_request_and_its_reply_is_the_response() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let (_runtime, client) = mock_client(Settings::builder(BASE).header("X-Service", "checkout"), move |r| {
        log.lock().unwrap().push(format!(
            "{} {} {:?} {:?} {:?} {}",
            r.method(),
            r.url(),
            r.header("x-service"),
            r.header("x-absent"),
            String::from_utf8_lossy(r.body()),
            r.elapsed_ms()
        ));
        assert!(format!("{r:?}").contains("PUT"));
        MockReply::new()
            .status(201)
            .header("Set-Cookie", "a=1")
            .header("Set-Cookie", "b=2")
            .header("Content-Type", "text/plain")
            .body("made")
    });
    let response = client.execute(&Request::put(&format!("{BASE}/items/1?x=y")).body("payload")).unwrap();
    assert_eq!(*seen.lock().unwrap(), [r#"PUT http://payments:8080/items/1?x=y Some("checkout") None "payload" 0"#]);
    assert_eq!((response.status(), response.attempts(), response.is_success()), (201, 1, true));
    assert_eq!(response.header("set-cookie"), Some("a=1"), "the first value");
    let cookies: Vec<_> = response.headers().iter().filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie")).collect();
    assert_eq!(cookies.len(), 2, "repeated headers are kept in order");
    assert_eq!(response.header("content-type"), Some("text/plain"));
    assert_eq!(response.url(), format!("{BASE}/items/1?x=y"));
    assert_eq!(response.text().unwrap(), "made");
    assert_eq!(response.clone().into_body(), b"made");
}

#[test]
fn each_method_helper_sends_its_method() {
    let (_runtime, client) = mock_client(Settings::builder(BASE), |r| MockReply::new().body(r.method()));
    let url = format!("{BASE}/m");
    for (request, method) in [
        (Request::get(&url), "GET"),
        (Request::head(&url), "HEAD"),
        (Request::post(&url), "POST"),
        (Request::put(&url), "PUT"),
        (Request::patch(&url), "PATCH"),
        (Request::delete(&url), "DELETE"),
        (Request::new("OPTIONS", &url), "OPTIONS"),
    ] {
        assert_eq!(request.method(), method);
        assert_eq!(request.url(), url);
        let response = client.execute(&request).unwrap();
        if method != "HEAD" {
            assert_eq!(response.text().unwrap(), method);
        }
    }
    assert_eq!(client.get(&url).unwrap().text().unwrap(), "GET");
}

#[test]
fn a_delay_costs_virtual_time_not_real_time() {
    // A two-minute delay: less than half of it in real time says none was really waited, on any machine.
    let settings = Settings::builder(BASE).timeout(Duration::from_secs(240)).attempt_timeout(Duration::from_secs(121));
    let (runtime, client) = mock_client(settings, |_| MockReply::new().delay(Duration::from_secs(120)).body("late"));
    let started = Instant::now();
    let response = client.get(&format!("{BASE}/slow")).unwrap();
    assert_eq!(response.text().unwrap(), "late");
    assert_eq!(runtime.elapsed_ms(), 120_000);
    assert!(started.elapsed() < Duration::from_secs(60), "virtual time is free");
}

#[test]
fn a_hanging_dependency_meets_the_callers_timeout() {
    let (runtime, client) = mock_client(Settings::builder(BASE), |_| MockReply::new().hang());
    let error = client.execute(&Request::get(&format!("{BASE}/hang")).timeout(Duration::from_secs(2))).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert_eq!(runtime.elapsed_ms(), 2000);
}

#[test]
fn transport_errors_are_retried_for_a_get_and_not_for_a_post() {
    let (_runtime, client) = mock_client(Settings::builder(BASE).max_attempts(2), |_| {
        MockReply::new().error(ErrorKind::ConnectionLost, "reset by peer")
    });
    let error = client.get(&format!("{BASE}/x")).unwrap_err();
    assert_eq!((error.kind(), error.attempts()), (ErrorKind::ConnectionLost, 2));
    assert!(error.message().contains("reset by peer"), "{error}");
    let error = client.execute(&Request::post(&format!("{BASE}/x"))).unwrap_err();
    assert_eq!((error.kind(), error.attempts()), (ErrorKind::ConnectionLost, 1));
}

#[test]
fn the_caller_forbids_or_forces_a_retry() {
    let (_runtime, client) = mock_client(Settings::builder(BASE), |_| MockReply::new().status(503));
    let url = format!("{BASE}/r");
    let forbid = client.execute(&Request::get(&url).retry(RetryMode::Forbid)).unwrap();
    assert_eq!(forbid.attempts(), 1);
    let force = client.execute(&Request::post(&url).retry(RetryMode::Force)).unwrap();
    assert_eq!(force.attempts(), 3);
    let default = client.execute(&Request::post(&url).retry(RetryMode::Default)).unwrap();
    assert_eq!(default.attempts(), 1);
}

#[test]
fn a_panicking_mock_fails_the_attempt_with_its_message() {
    let (_runtime, client) =
        mock_client(Settings::builder(BASE).max_attempts(1), |_| -> MockReply { panic!("the mock broke") });
    let error = client.get(&format!("{BASE}/p")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Callback, "{error}");
    assert_eq!(error.panic_message(), Some("mock transport panicked: the mock broke"));

    let (_runtime, client) =
        mock_client(Settings::builder(BASE).max_attempts(1), |_| MockReply::new().header("X-Nul", "a\0b"));
    let error = client.get(&format!("{BASE}/p")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Callback, "{error}");
    assert!(error.panic_message().unwrap().contains("X-Nul: contains a NUL byte"), "{error}");
}

#[test]
fn a_request_refused_while_building_fails_every_call_with_nothing_sent() {
    let sent = Arc::new(Mutex::new(0));
    let count = Arc::clone(&sent);
    let (_runtime, client) = mock_client(Settings::builder(BASE), move |_| {
        *count.lock().unwrap() += 1;
        MockReply::new()
    });
    let url = format!("{BASE}/b");
    let refused = |request: Request, field: &str| {
        let error = client.execute(&request).unwrap_err();
        assert_eq!((error.kind(), error.attempts()), (ErrorKind::InvalidArgument, 0), "{error}");
        assert_eq!(error.fields(), [field], "{error}");
        assert_eq!(request.error(), Some(&error));
        assert!(format!("{request:?}").contains(field));
    };
    refused(Request::new("G ET", &url), "method");
    refused(Request::new("GET", "ftp://payments/"), "url");
    refused(Request::new("GET", "http://pay\0ments/"), "url");
    refused(Request::get(&url).timeout(Duration::ZERO), "timeout");
    refused(Request::get(&url).timeout_ms(-5), "timeout");
    refused(Request::get(&url).timeout(Duration::from_secs(7200)), "timeout");
    refused(Request::post(&url).idempotency_key(""), "Idempotency-Key");
    refused(Request::get(&url).header("X-Bad", "a\nb"), "X-Bad");
    let context = CallContext { baggage: Some("a\r\nb".into()), ..CallContext::default() };
    refused(Request::get(&url).context(&context), "baggage");
    // The first refusal stays: later steps do not run.
    refused(Request::get(&url).header("X-Bad", "a\nb").timeout(Duration::ZERO), "X-Bad");
    assert_eq!(*sent.lock().unwrap(), 0);
    assert!(Request::get(&url).timeout(Duration::from_micros(1)).error().is_none(), "rounded up to 1 ms");
}

#[test]
fn another_origin_is_refused_before_sending() {
    let (_runtime, client) = mock_client(Settings::builder(BASE), |_| panic!("nothing may be sent"));
    let error = client.get("http://ledger:8080/x").unwrap_err();
    assert_eq!((error.kind(), error.attempts()), (ErrorKind::CrossOrigin, 0));
    assert!(error.message().contains("ledger"), "{error}");
}

#[test]
fn a_token_cancelled_before_the_call_ends_it_at_once() {
    let (_runtime, client) = mock_client(Settings::builder(BASE), |_| MockReply::new().hang());
    let token = CancelToken::default();
    assert!(!token.is_cancelled());
    token.cancel();
    token.cancel(); // idempotent
    assert!(token.clone().is_cancelled());
    assert!(format!("{token:?}").contains("true"));
    let error = client.execute(&Request::get(&format!("{BASE}/c")).cancel_token(&token)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Cancelled);
}

#[test]
fn a_client_keeps_its_runtime_alive() {
    let (runtime, client) = mock_client(Settings::builder(BASE), |_| MockReply::new().status(204));
    drop(runtime);
    assert_eq!(client.get(&format!("{BASE}/alive")).unwrap().status(), 204);
    assert_eq!(client.runtime().elapsed_ms(), 0);
    assert_eq!(format!("{client:?}"), "Client { .. }");
}

#[test]
fn error_kinds_are_the_headers_statuses() {
    let kinds = [
        (ErrorKind::InvalidArgument, 1),
        (ErrorKind::Misuse, 2),
        (ErrorKind::Program, 3),
        (ErrorKind::CrossOrigin, 4),
        (ErrorKind::NoMemory, 5),
        (ErrorKind::Internal, 6),
        (ErrorKind::Callback, 7),
        (ErrorKind::Config, 100),
        (ErrorKind::Rejected, 200),
        (ErrorKind::BulkheadFull, 201),
        (ErrorKind::Timeout, 202),
        (ErrorKind::Cancelled, 203),
        (ErrorKind::Connect, 300),
        (ErrorKind::Resolve, 301),
        (ErrorKind::ConnectionLost, 302),
        (ErrorKind::Protocol, 303),
        (ErrorKind::StreamRefused, 304),
        (ErrorKind::TooLarge, 305),
        (ErrorKind::Resource, 306),
        (ErrorKind::Tls, 400),
        (ErrorKind::TlsClientCert, 401),
    ];
    for (kind, status) in kinds {
        assert_eq!(kind.status(), status);
        assert_eq!(ErrorKind::from_status(status), Some(kind));
        assert!(kind.name().starts_with("HUMUS_E_"), "{}", kind.name());
        assert_eq!(ErrorKind::from_name(kind.name()), Some(kind));
        assert_eq!(kind.to_string(), kind.name());
    }
    assert_eq!(ErrorKind::Timeout.name(), "HUMUS_E_TIMEOUT");
    assert_eq!(ErrorKind::from_status(0), None);
    assert_eq!(ErrorKind::from_status(999), Some(ErrorKind::Unknown(999)));
    assert_eq!(ErrorKind::Unknown(999).name(), "HUMUS_E_UNKNOWN");
    assert_eq!(ErrorKind::from_name("HUMUS_OK"), None);
    assert_eq!(ErrorKind::from_name("HUMUS_E_UNKNOWN"), None);
    assert_eq!(ErrorKind::from_name("nonsense"), None);
}

#[test]
fn an_error_is_a_std_error_that_says_what_was_wrong() {
    let error = Settings::from_json("{").unwrap_err();
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error.clone());
    assert_eq!(boxed.to_string(), error.to_string());
    assert_eq!(error.status(), 100);
    assert!(error.to_string().starts_with("HUMUS_E_CONFIG: "), "{error}");
    assert_eq!(error.retry_after(), Duration::ZERO);
    assert_eq!(error.panic_message(), None);
    let _: &Error = &error;
}

#[test]
fn the_fault_switch_turns_baggage_scenarios_on() {
    // docs/failure-injection.md §14: with faults enabled, the call context's baggage member humus.fault makes this client's
    // attempts answer synthetically; with them disabled nothing is evaluated.
    let scenario =
        CallContext { baggage: Some("humus.fault=http:payments:8080=status:503".into()), ..CallContext::default() };
    let url = format!("{BASE}/f");
    for (faults, status) in [(true, 503), (false, 200)] {
        let runtime = Runtime::builder().virtual_clock().faults(faults).build().unwrap();
        runtime.set_mock_transport(|_| MockReply::new()).unwrap();
        let client = Client::new(&runtime, &Settings::builder(BASE).max_attempts(1).build().unwrap()).unwrap();
        let response = client.execute(&Request::get(&url).context(&scenario)).unwrap();
        assert_eq!(response.status(), status, "faults {faults}");
    }
}
