//! The upstreams registry (docs/upstreams.md §15) against the project's test server: clients by name from one JSON
//! document, the environment's base_url override (logged once), readiness with names, and every bad key at
//! once. One test, because it sets an environment variable, which must not race another test's reads.
mod support;

use std::sync::{Arc, Mutex};

use humus_http::{ErrorKind, LogRecord, Upstreams};
use serde_json::{json, Value};
use support::{runtime, unique_path, TestServer};

#[test]
fn upstreams_build_clients_by_name_with_environment_overrides() {
    let server = TestServer::shared();
    // The file says one address, the environment another: the environment wins (an address depends on where
    // the service runs), and the disagreement is logged once.
    std::env::set_var("HUMUS_HTTP_UPSTREAMS__RUST_LEDGER__BASE_URL", server.url("http", ""));
    let runtime = runtime();
    let records: Arc<Mutex<Vec<LogRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    runtime.set_log_sink(move |r| sink.lock().unwrap().push(r)).unwrap();
    let config = json!({"upstreams": {
        "rust-ledger": {"base_url": "http://ledger.invalid:9", "max_attempts": 2},
        "billing": {"base_url": server.url("https", ""), "tls": {"ca_file": server.ca_file()}, "timeout": "5s"},
    }});
    let upstreams = Upstreams::from_json(&runtime, &config.to_string()).unwrap();
    assert_eq!((upstreams.len(), upstreams.is_empty()), (2, false));
    assert_eq!(upstreams.names().collect::<Vec<_>>(), ["billing", "rust-ledger"], "sorted");
    assert!(format!("{upstreams:?}").contains("billing"));

    let records = records.lock().unwrap().clone();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].event.as_str(), records[0].upstream.as_str()),
        ("humus.upstreams.base_url_override", "rust-ledger")
    );
    assert_eq!((records[0].previous_state, records[0].new_state), (None, None));

    let path = unique_path("upstreams");
    let billing = upstreams.client("billing").unwrap();
    let response = billing.get(&server.url("https", &path)).unwrap();
    assert_eq!((response.status(), response.http_version()), (200, "2"));
    let ledger = upstreams.client("rust-ledger").unwrap();
    assert_eq!(ledger.get(&server.url("http", &path)).unwrap().status(), 200, "sent to the environment's address");
    assert_eq!(server.requests(&path).len(), 2);

    let error = upstreams.client("nope").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert!(error.message().contains("billing") && error.message().contains("rust-ledger"), "{error}");

    let readiness: Value = serde_json::from_str(&upstreams.readiness_json().unwrap()).unwrap();
    assert_eq!(readiness["status"], "ok");
    let names: Vec<&str> =
        readiness["clients"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["billing", "rust-ledger"]);

    let bad = json!({"upstreams": {"billing": {"base_url": "http://billing:8080", "timout": "1s", "max_attempts": 0}}});
    let error = Upstreams::from_json(&runtime, &bad.to_string()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    let mut fields = error.fields().to_vec();
    fields.sort();
    assert_eq!(fields, ["upstreams.billing.max_attempts", "upstreams.billing.timout"], "{error}");
    let error = Upstreams::from_json(&runtime, r#"{"upstream": {}}"#).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");

    // The registry frees its clients; the runtime outlives it.
    drop(upstreams);
    runtime.clear_log_sink().unwrap();
    std::env::remove_var("HUMUS_HTTP_UPSTREAMS__RUST_LEDGER__BASE_URL");
}
