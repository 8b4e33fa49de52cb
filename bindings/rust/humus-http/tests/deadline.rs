//! Deadline propagation (docs/timeouts.md §8.4) through the Rust API: the header an incoming request carries bounds
//! the calls made for it, which send what is left in the same header (a chain shares one budget).
#![cfg(feature = "http")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use humus_http::{deadline_from_headers, Client, MockReply, Request, Runtime, Settings};

#[test]
fn an_incoming_deadline_bounds_the_call_and_travels_on() {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let runtime = Runtime::builder().virtual_clock().seed(1).build().unwrap();
    let record = Arc::clone(&seen);
    runtime
        .set_mock_transport(move |r| {
            record.lock().unwrap().push(r.header("X-Request-Timeout").map(str::to_string));
            MockReply::new()
        })
        .unwrap();
    let settings = Settings::builder("http://b:8080").deadline_header("X-Request-Timeout").build().unwrap();
    let client = Client::new(&runtime, &settings).unwrap();

    let mut incoming = humus_http::http::HeaderMap::new();
    incoming.insert("x-request-timeout", "300".parse().unwrap());
    let deadline = deadline_from_headers(&incoming, "X-Request-Timeout").expect("a deadline");
    client.execute(&Request::get("/b").deadline(deadline)).unwrap();
    client.execute(&Request::get("/b")).unwrap(); // no deadline of its own: the client's

    let seen = seen.lock().unwrap();
    let first: u64 = seen[0].as_deref().expect("sent").parse().unwrap();
    assert!(first > 0 && first <= 300, "{first}");
    assert_eq!(seen[1].as_deref(), Some("5000")); // attempt_timeout's default bounds an attempt
    assert!(humus_http::parse_deadline("1500m") == Some(Duration::from_millis(1500)));
}
