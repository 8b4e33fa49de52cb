//! Asynchronous calls (docs/bindings.md §17.1) on the mock transport: `Call` as a Future any executor can poll,
//! completion closures on the event loop, and what they may not do.
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use humus_http::{Client, ErrorKind, MockReply, Request, Runtime, Settings};
use support::block_on_counting as block_on;

const BASE: &str = "http://payments:8080";

fn mock_client(respond: impl Fn(&humus_http::MockRequest<'_>) -> MockReply + Send + Sync + 'static) -> Client {
    client_on(Runtime::builder().virtual_clock().seed(1).build().unwrap(), respond)
}

fn client_on(
    runtime: Runtime,
    respond: impl Fn(&humus_http::MockRequest<'_>) -> MockReply + Send + Sync + 'static,
) -> Client {
    runtime.set_mock_transport(respond).unwrap();
    Client::new(&runtime, &Settings::builder(BASE).build().unwrap()).unwrap()
}

#[test]
fn a_call_is_a_future_the_event_loop_wakes() {
    // The mock answers only once released, so the first poll finds nothing and the loop must wake us.
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let client = mock_client(move |_| {
        let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(5));
        MockReply::new().body("awaited")
    });
    let call = client.submit(&Request::get(&format!("{BASE}/f"))).unwrap();
    assert!(format!("{call:?}").contains("finished"));
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        release.send(()).unwrap();
    });
    let (outcome, polls) = block_on(call);
    releaser.join().unwrap();
    assert_eq!(outcome.unwrap().text().unwrap(), "awaited");
    assert!(polls >= 2, "woken by the completion, polled {polls} times");
}

#[test]
fn many_calls_in_flight_complete_once_each() {
    // The virtual clock moves as soon as every call in flight waits on a timer: a gate in the mock holds the
    // first attempt (its thread busy, the clock still) until all twenty calls have been handed over.
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let held = Arc::clone(&gate);
    let client = mock_client(move |r| {
        let (open, opened) = &*held;
        drop(opened.wait_while(open.lock().unwrap(), |open| !*open).unwrap());
        MockReply::new().delay(Duration::from_millis(100)).body(r.url().to_string())
    });
    let calls: Vec<_> = (0..20).map(|i| client.submit(&Request::get(&format!("{BASE}/{i}"))).unwrap()).collect();
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    for (i, call) in calls.into_iter().enumerate() {
        let response = call.wait().unwrap();
        assert_eq!(response.text().unwrap(), format!("{BASE}/{i}"));
    }
    assert_eq!(client.runtime().elapsed_ms(), 100, "twenty concurrent calls waited together");
}

#[test]
fn a_refused_request_fails_at_submit() {
    let client = mock_client(|_| panic!("nothing may be sent"));
    let error = client.submit(&Request::get(&format!("{BASE}/x")).header("Bad Name", "v")).unwrap_err();
    assert_eq!((error.kind(), error.fields()), (ErrorKind::InvalidArgument, &["Bad Name".to_string()][..]));
    let error = client.submit_with(&Request::get(&format!("{BASE}/x")).timeout_ms(0), |_| {}).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_blocking_call_from_a_completion_is_refused_not_deadlocked() {
    let client = Arc::new(mock_client(|_| MockReply::new()));
    let (tx, rx) = mpsc::channel();
    let inner = Arc::clone(&client);
    client
        .submit_with(&Request::get(&format!("{BASE}/outer")), move |outcome| {
            assert!(outcome.is_ok());
            let nested = inner.get(&format!("{BASE}/inner")).map(|r| r.status());
            // The last handle to the client must not go on the event loop (see Client::submit_with).
            drop(inner);
            tx.send(nested).unwrap();
        })
        .unwrap();
    let nested = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(nested.unwrap_err().kind(), ErrorKind::Misuse);
}

/// The message of the one panic these tests cause on the event-loop thread, where the test harness does
/// not capture output: kept off stderr, every other panic still reported.
const SCRIPTED_PANIC: &str = "completion broke (scripted)";

fn quiet_scripted_panic() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&SCRIPTED_PANIC) {
                default_hook(info);
            }
        }));
    });
}

#[test]
fn a_panicking_completion_is_contained() {
    quiet_scripted_panic();
    let client = mock_client(|_| MockReply::new());
    let handle =
        client.submit_with(&Request::get(&format!("{BASE}/a")), |_| std::panic::panic_any(SCRIPTED_PANIC)).unwrap();
    assert!(format!("{handle:?}").contains("CallHandle"));
    assert_eq!(client.submit(&Request::get(&format!("{BASE}/b"))).unwrap().wait().unwrap().status(), 200);
}

#[test]
fn dropping_the_client_cancels_what_is_in_flight() {
    let delivered = Arc::new(AtomicUsize::new(0));
    // A real clock: on a virtual one the hanging attempts would time out at once.
    let client = client_on(Runtime::new().unwrap(), |_| MockReply::new().hang());
    let mut calls = Vec::new();
    for _ in 0..3 {
        let count = Arc::clone(&delivered);
        calls.push(
            client
                .submit_with(&Request::get(&format!("{BASE}/h")), move |outcome| {
                    assert_eq!(outcome.unwrap_err().kind(), ErrorKind::Cancelled);
                    count.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap(),
        );
    }
    drop(client);
    assert_eq!(delivered.load(Ordering::SeqCst), 3, "every outcome was delivered before the client was freed");
    calls[0].cancel(); // a handle outlives its call harmlessly
}
