//! The client as a `tower::Service<http::Request<B>>` (cargo feature `tower`), against the project's test
//! server (tests/server/), driven by tower's own `ServiceExt`.
#![cfg(feature = "tower")]
mod support;

use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use humus_http::http;
use humus_http::tower::{Service, ServiceExt};
use humus_http::{Client, ClientService, ErrorKind, FollowRedirects, Redirect};
use serde_json::json;
use support::{block_on, runtime, settings, unique_path, TestServer};

#[test]
fn a_oneshot_call_through_tower_gets_the_response() {
    let server = TestServer::shared();
    let path = unique_path("tower");
    server.script(&path, json!([{"status": 200, "body": "served", "headers": [["X-T", "1"]]}]));
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    // Origin-form: joined onto the client's base_url, as any relative URL.
    let request = http::Request::post(path.as_str()).header("x-from", "tower").body("payload").unwrap();
    let future = (&client).oneshot(request);
    let response = block_on(future).unwrap();
    assert_eq!((response.status(), response.body().as_slice()), (http::StatusCode::OK, &b"served"[..]));
    assert_eq!(response.headers()["x-t"], "1");
    let records = server.requests(&path);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["method"], "POST");
    assert!(records[0]["headers"].as_array().unwrap().iter().any(|h| h[0] == "x-from" && h[1] == "tower"));
}

#[test]
fn the_shared_service_clones_and_carries_redirects_both_ways() {
    let server = TestServer::shared();
    let (from, to) = (unique_path("tower-from"), unique_path("tower-to"));
    let target = server.url("https", &to);
    server.script(&from, json!([{"status": 302, "headers": [["Location", target]]}]));
    server.script(&to, json!([{"status": 200, "body": "there"}]));
    let service = ClientService::from(Client::new(&runtime(), &settings("https").build().unwrap()).unwrap());
    let response = block_on(service.clone().oneshot(http::Request::get(from.as_str()).body(Vec::new()).unwrap()));
    let response = response.unwrap();
    assert_eq!(response.body(), b"there");
    let redirects = response.extensions().get::<Vec<Redirect>>().unwrap();
    let hops: Vec<_> = redirects.iter().map(|r| (r.status, r.url.clone(), r.header("location"))).collect();
    assert_eq!(hops, [(302, server.url("https", &from), Some(target.as_str()))]);

    let mut no_follow = http::Request::get(from.as_str()).body(Vec::new()).unwrap();
    no_follow.extensions_mut().insert(FollowRedirects(false));
    // The last service goes into oneshot, which drops it once the call is made: the future keeps the client
    // (freeing it would cancel the call).
    let response = block_on(service.oneshot(no_follow)).unwrap();
    assert_eq!(response.status(), http::StatusCode::FOUND);
    assert_eq!(response.headers()["location"], target.as_str());
}

// F149: the breaker is open: a call through tower fails with Rejected, sending nothing, while poll_ready stays
// Ready (an overload is a call's outcome, not a broken service).
#[test]
fn f149_an_open_breaker_rejects_each_tower_call_and_the_service_stays_ready() {
    let server = TestServer::shared();
    let path = unique_path("tower-breaker");
    server.script(&path, json!([{"status": 503}]));
    let settings = settings("https").max_attempts(1).trip_consecutive_failures(1).build().unwrap();
    let client = Arc::new(Client::new(&runtime(), &settings).unwrap());
    let mut service = ClientService::new(Arc::clone(&client));
    let get = || http::Request::get(path.as_str()).body(Vec::new()).unwrap();
    let first = block_on(service.clone().oneshot(get())).unwrap();
    assert_eq!(first.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(Service::<http::Request<Vec<u8>>>::poll_ready(&mut service, &mut cx), Poll::Ready(Ok(()))));
    let e = block_on(service.call(get())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Rejected);
    assert!(e.retry_after() > std::time::Duration::ZERO);
    assert_eq!(server.requests(&path).len(), 1, "the rejected call sent nothing");
    assert!(
        matches!(Service::<http::Request<Vec<u8>>>::poll_ready(&mut service, &mut cx), Poll::Ready(Ok(()))),
        "still usable"
    );
}

#[test]
fn a_request_that_does_not_convert_fails_through_the_future() {
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let request = http::Request::get("/x").header("host", "elsewhere").body("").unwrap();
    let e = block_on((&client).oneshot(request)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}
