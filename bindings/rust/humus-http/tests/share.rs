//! Host-wide sharing (docs/shared.md §22) through the Rust API: two clients whose settings name one share segment
//! see one breaker; a client without it keeps its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use humus_http::{CircuitState, Client, MockReply, Request, Runtime, Settings};

#[test]
fn two_clients_of_one_share_name_see_one_breaker() {
    let name = format!("rust_test_{}", std::process::id());
    let _ = std::fs::remove_file(format!("/dev/shm/humus_http.{name}"));
    // The mock transport on the real clock may share (a virtual clock may not).
    let runtime = Runtime::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    runtime
        .set_mock_transport(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            MockReply::new().status(500)
        })
        .unwrap();
    let shared = Settings::builder("http://dep:8080").max_attempts(1).share_name(&name).build().unwrap();
    let own = Settings::builder("http://dep:8080").max_attempts(1).build().unwrap();
    let a = Client::new(&runtime, &shared).unwrap();
    let b = Client::new(&runtime, &shared).unwrap();
    let alone = Client::new(&runtime, &own).unwrap();
    for i in 0..5 {
        let _ = if i % 2 == 0 { &a } else { &b }.execute(&Request::get("/dep"));
    }
    assert_eq!(a.breaker_state().unwrap(), CircuitState::Open);
    assert_eq!(b.breaker_state().unwrap(), CircuitState::Open);
    assert_eq!(alone.breaker_state().unwrap(), CircuitState::Closed);
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let _ = std::fs::remove_file(format!("/dev/shm/humus_http.{name}"));
}
