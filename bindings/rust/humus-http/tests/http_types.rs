//! The `http` crate's types (cargo feature `http`) against the project's test server (tests/server/): an
//! `http::Request` sent as it was built, what the server answered back as an `http::Response`.
#![cfg(feature = "http")]
mod support;

use humus_http::{http, CallContext, Client, Request, RetryMode};
use serde_json::{json, Value};
use support::{runtime, settings, unique_path, TestServer};

/// Every value of a request header in a server record (names are lower-case there).
fn recorded<'a>(record: &'a Value, name: &str) -> Vec<&'a str> {
    record["headers"].as_array().unwrap().iter().filter(|h| h[0] == name).filter_map(|h| h[1].as_str()).collect()
}

#[test]
fn an_http_request_is_sent_and_its_response_comes_back_as_http() {
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let path = unique_path("http-types");
    server.script(
        &path,
        json!([{"status": 503}, {"status": 201, "body": "made", "headers": [["X-Multi", "a"], ["X-Multi", "b"]]}]),
    );
    let mut request = http::Request::builder()
        .method(http::Method::PUT)
        .uri(format!("{path}?n=1")) // origin-form: joined onto the client's base_url
        .header("x-tag", "one")
        .header("x-tag", "two")
        .body(br#"{"n":1}"#.to_vec())
        .unwrap();
    request.extensions_mut().insert(CallContext {
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        baggage: Some("tenant=7".into()),
        ..Default::default()
    });
    request.extensions_mut().insert(RetryMode::Default);

    let response = client.execute(&Request::try_from(request).unwrap()).unwrap();
    assert_eq!(response.attempts(), 2, "the PUT's body replays for the retry");
    let response = response.into_http().unwrap();
    assert_eq!(response.status(), http::StatusCode::CREATED);
    assert_eq!(response.version(), http::Version::HTTP_2);
    assert_eq!(response.headers().get_all("x-multi").iter().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(response.body(), b"made");

    let records = server.requests(&path);
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record["method"], "PUT");
        assert_eq!(record["body_size"], 7);
        assert_eq!(recorded(record, "x-tag"), ["one", "two"]);
        assert_eq!(recorded(record, "baggage"), ["tenant=7"]);
        let traceparent = recorded(record, "traceparent");
        assert!(
            traceparent.len() == 1 && traceparent[0].contains("4bf92f3577b34da6a3ce929d0e0e4736"),
            "{traceparent:?}"
        );
    }
}

#[test]
fn an_absolute_uri_on_another_origin_is_refused_when_sent() {
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    let path = unique_path("http-types-cross");
    let request = http::Request::get(format!("{}{path}", server.url("https", ""))).body(Vec::new()).unwrap();
    let request = Request::try_from(request).expect("an absolute URI converts");
    let e = client.execute(&request).unwrap_err();
    assert_eq!(e.kind(), humus_http::ErrorKind::CrossOrigin);
    assert!(server.requests(&path).is_empty());
}
