//! What a reqwest or tokio user reaches for first, against the project's test server (tests/server/) over
//! real sockets: a dropped future cancels its call and frees its bulkhead slot, relative URLs join onto
//! base_url, `query`, `form`, `json` (cargo feature `json`) and `error_for_status`.
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use humus_http::{Client, ErrorKind, Request, Settings, Tls};
use serde_json::{json, Value};
use support::{runtime, settings, unique_path, TestServer};

struct NoWake;
impl Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

/// Waits until the server has recorded a request to `path` (a hanging one is recorded before it hangs).
fn wait_for_request(server: &TestServer, path: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    while server.requests(path).is_empty() {
        assert!(Instant::now() < until, "the server never received {path}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A hanging call on a client with one bulkhead slot, which it would hold for 20 s: the client (whose calls
/// wait `wait` for the slot) and the call, once the server has its request.
fn hanging_call_on_one_slot(name: &str, wait: Duration, poll_once: bool) -> (Client, humus_http::Call) {
    let server = TestServer::shared();
    let hang = unique_path(name);
    server.script(&hang, json!([{"hang": true}]));
    let client = one_slot_client(wait);
    let mut call = client.submit(&Request::get(&server.url("https", &hang))).unwrap();
    if poll_once {
        // As an executor does before a select! or a timeout moves on.
        let waker = Waker::from(Arc::new(NoWake));
        assert!(Pin::new(&mut call).poll(&mut Context::from_waker(&waker)).is_pending());
    }
    wait_for_request(server, &hang);
    (client, call)
}

fn one_slot_client(wait: Duration) -> Client {
    let settings = settings("https")
        .bulkhead_max_concurrent(1)
        .bulkhead_wait(wait)
        .timeout(Duration::from_secs(20))
        .attempt_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    Client::new(&runtime(), &settings).unwrap()
}

#[test]
fn dropping_a_call_cancels_it_and_frees_its_bulkhead_slot() {
    let server = TestServer::shared();
    let (client, call) = hanging_call_on_one_slot("drop-hang", Duration::from_secs(10), true);
    drop(call);

    // The next call needs the one slot: answered, it got it within its 10 s wait, not after the 20 s hang
    // (a slot still held would have turned it away as BulkheadFull).
    let response = client.execute(&Request::get(&server.url("https", &unique_path("drop-next")))).unwrap();
    assert_eq!(response.status(), 200);
}

#[test]
fn a_detached_call_keeps_its_slot() {
    let server = TestServer::shared();
    let (client, call) = hanging_call_on_one_slot("detach-hang", Duration::from_millis(300), false);
    let handle = call.detach();
    let error = client.execute(&Request::get(&server.url("https", &unique_path("detach-next")))).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BulkheadFull, "{error}");
    handle.cancel();
}

/// The default answer of the test server: what it received, as JSON.
fn echo(client: &Client, request: &Request) -> Value {
    let response = client.execute(request).unwrap();
    assert_eq!(response.status(), 200);
    serde_json::from_slice(response.body()).unwrap()
}

#[test]
fn a_relative_url_joins_onto_base_url_and_query_appends() {
    let server = TestServer::shared();
    let base = unique_path("base");
    let settings = Settings::builder(&server.url("https", &base)).tls(&Tls::new().ca_file(server.ca_file())).build();
    let client = Client::new(&runtime(), &settings.unwrap()).unwrap();

    let got = echo(&client, &Request::get("/items").header("X-Tag", "a").query(&[("q", "a b&c"), ("n", "1")]));
    assert_eq!(got["path"], format!("{base}/items"));
    assert_eq!(got["query"], "q=a+b%26c&n=1");
    assert!(got["headers"].as_array().unwrap().iter().any(|h| h[0] == "x-tag" && h[1] == "a"), "{got}");

    // Without a leading slash, and with a query already there; an absolute URL is sent as it is.
    let got = echo(&client, &Request::get("items/7?x=1").query(&[("y", "2")]));
    assert_eq!((got["path"].as_str(), got["query"].as_str()), (Some(&*format!("{base}/items/7")), Some("x=1&y=2")));
    let got = echo(&client, &Request::get(&server.url("https", "/elsewhere")));
    assert_eq!(got["path"], "/elsewhere");
}

#[test]
fn form_sets_the_body_and_its_content_type() {
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let path = unique_path("form");
    let got = echo(&client, &Request::post(&server.url("https", &path)).form(&[("name", "Zoë K"), ("n", "1")]));
    let records = server.requests(&path);
    let content_type = records[0]["headers"].as_array().unwrap().iter().find(|h| h[0] == "content-type").cloned();
    assert_eq!(content_type, Some(json!(["content-type", "application/x-www-form-urlencoded"])));
    assert_eq!(got["body_size"], "name=Zo%C3%AB+K&n=1".len());
}

#[test]
fn error_for_status_turns_4xx_and_5xx_into_errors() {
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("https").max_attempts(1).build().unwrap()).unwrap();
    for (status, is_error) in [(200, false), (302, false), (404, true), (503, true)] {
        let path = unique_path("status");
        server.script(&path, json!([{"status": status}]));
        let response = client.execute(&Request::get(&server.url("https", &path)).retry(humus_http::RetryMode::Forbid));
        let outcome = response.unwrap().error_for_status();
        assert_eq!(outcome.is_err(), is_error, "{status}");
        if let Err(e) = outcome {
            assert_eq!((e.kind(), e.http_status(), e.attempts()), (ErrorKind::HttpStatus(status), Some(status), 1));
            assert!(e.to_string().starts_with(&format!("HTTP_STATUS: the response's status is {status}")), "{e}");
        }
    }
}

#[cfg(feature = "json")]
#[test]
fn json_serialises_the_request_and_deserialises_the_response() {
    #[derive(Debug, serde::Deserialize)]
    struct Echo {
        method: String,
        path: String,
        body_size: usize,
    }
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let path = unique_path("json");
    let body = json!({"amount": 100, "currency": "EUR"});
    let echo: Echo = client.execute(&Request::post(&server.url("https", &path)).json(&body)).unwrap().json().unwrap();
    assert_eq!((echo.method.as_str(), echo.path.as_str()), ("POST", path.as_str()));
    assert_eq!(echo.body_size, serde_json::to_vec(&body).unwrap().len());
    let records = server.requests(&path);
    assert!(records[0]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h == &json!(["content-type", "application/json"])));

    // A body that is not the JSON asked for names it.
    let text = unique_path("not-json");
    server.script(&text, json!([{"body": "plain text"}]));
    let error = client.get(&server.url("https", &text)).unwrap().json::<Echo>().unwrap_err();
    assert_eq!((error.kind(), error.fields()), (ErrorKind::Protocol, &["body".to_string()][..]), "{error}");
}

/// A built binary finds libhumus_http through the rpath the build scripts add (build.rs: pkg-config's
/// libdir), with no LD_LIBRARY_PATH: examples/get makes a real call with it removed. `cargo test` builds
/// the examples before it runs the tests.
#[test]
fn a_built_example_starts_without_ld_library_path() {
    let server = TestServer::shared();
    let exe = std::env::current_exe().unwrap();
    let get = exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join("get");
    assert!(get.exists(), "{} is not built: run the whole `cargo test`, which builds the examples", get.display());
    let port = server.port("https");
    let output = std::process::Command::new(&get)
        .arg(server.url("https", &unique_path("rpath")))
        .arg("--ca")
        .arg(server.ca_file())
        .arg("--resolve")
        .arg(format!("payments:{port}:127.0.0.1:{port}"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.starts_with("status 200"),
        "{} exited {:?}: {stdout}{}",
        get.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
