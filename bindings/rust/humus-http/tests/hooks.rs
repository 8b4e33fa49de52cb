//! Attempt hooks (docs/retries.md §6.7), redirect following and its history, against the project's test
//! server (tests/server/): what the server received is the proof.
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use humus_http::{AttemptHooks, Client, ErrorKind, Request};
use serde_json::{json, Value};
use support::{block_on, runtime, settings, unique_path, TestServer};

fn client(listener: &str) -> Client {
    Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap()
}

/// A request header's value in a server record (names are lower-case there).
fn recorded_header<'a>(record: &'a Value, name: &str) -> Option<&'a str> {
    record["headers"].as_array()?.iter().find(|h| h[0] == name).and_then(|h| h[1].as_str())
}

/// Counts its drops: captured by a hook, it shows when the library released the closures.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn settings_hooks_see_every_attempt_of_a_retried_503_and_are_dropped_once() {
    let server = TestServer::shared();
    let path = unique_path("hooks-retry");
    let step = |status: u16, n: &str| json!({"status": status, "headers": [["X-Step", n]]});
    server.script(&path, json!([step(503, "a"), step(503, "b"), step(200, "c")]));
    let before_seen = Arc::new(Mutex::new(Vec::new()));
    let after_seen = Arc::new(Mutex::new(Vec::new()));
    let drops = Arc::new(AtomicUsize::new(0));
    let (b, a, guard) = (Arc::clone(&before_seen), Arc::clone(&after_seen), DropCounter(Arc::clone(&drops)));
    let hooks = AttemptHooks::new()
        .before(move |attempt| {
            let _ = &guard;
            b.lock().unwrap().push((attempt.method().to_string(), attempt.number()));
            Ok(())
        })
        .after(move |attempt| {
            let step = attempt.headers().into_iter().find(|(n, _)| n.eq_ignore_ascii_case("x-step")).map(|(_, v)| v);
            a.lock().unwrap().push((attempt.number(), attempt.status(), step));
        });
    let mut settings = settings("https").max_attempts(3).build().unwrap();
    settings.set_attempt_hooks(hooks).unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let response = client.get(&server.url("https", &path)).unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 3));
    assert_eq!(server.requests(&path).len(), 3);
    let get = |n| ("GET".to_string(), n);
    assert_eq!(*before_seen.lock().unwrap(), [get(1), get(2), get(3)]);
    let after = after_seen.lock().unwrap().clone();
    let step = |s: &str| Some(s.to_string());
    assert_eq!(after, [(1, Some(503), step("a")), (2, Some(503), step("b")), (3, Some(200), step("c"))]);

    // The settings and the client each hold the table: the closures go once, with the last of them.
    drop(settings);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(client);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "destroy dropped the closures exactly once");
}

#[test]
fn a_redirect_hop_is_an_attempt_and_the_response_lists_it() {
    let server = TestServer::shared();
    let (from, to) = (unique_path("hooks-redirect-from"), unique_path("hooks-redirect-to"));
    let target = server.url("https", &to);
    server.script(&from, json!([{"status": 302, "headers": [["Location", target]]}]));
    server.script(&to, json!([{"status": 200, "body": "moved"}]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let hooks = AttemptHooks::new().before(move |attempt| {
        s.lock().unwrap().push((attempt.url().to_string(), attempt.number()));
        Ok(())
    });
    let request = Request::get(&server.url("https", &from)).attempt_hooks(hooks);
    let response = client("https").execute(&request).unwrap();
    assert_eq!((response.status(), response.text().unwrap(), response.url()), (200, "moved", target.as_str()));
    let hops: Vec<_> = response.redirects().iter().map(|r| (r.status, r.url.clone(), r.header("location"))).collect();
    assert_eq!(hops, [(302, server.url("https", &from), Some(target.as_str()))]);
    // A redirect hop starts again at 1.
    assert_eq!(*seen.lock().unwrap(), [(server.url("https", &from), 1), (target.clone(), 1)]);
    assert_eq!(client("https").get(&target).unwrap().redirects(), [], "no hop, no history");
}

// F148: redirects turned off: the 3xx comes back as it is, its Location not followed (the target gets nothing).
#[test]
fn f148_with_redirects_off_the_3xx_comes_back_and_nothing_follows() {
    let server = TestServer::shared();
    let (from, to) = (unique_path("no-follow-from"), unique_path("no-follow-to"));
    let target = server.url("https", &to);
    server.script(&from, json!([{"status": 307, "headers": [["Location", target]]}]));
    let request = Request::get(&server.url("https", &from)).follow_redirects(false);
    let response = client("https").execute(&request).unwrap();
    assert_eq!((response.status(), response.header("location")), (307, Some(target.as_str())));
    assert_eq!((response.redirects(), response.attempts()), (&[][..], 1));
    assert_eq!(server.requests(&from).len(), 1);
    assert!(server.requests(&to).is_empty(), "the redirect was not followed");
}

#[test]
fn a_header_set_by_a_hook_reaches_the_server_for_that_attempt_only() {
    let server = TestServer::shared();
    let path = unique_path("hooks-header");
    server.script(&path, json!([{"status": 503}, {"status": 200}]));
    let hooks = AttemptHooks::new().before(|attempt| {
        assert_eq!(attempt.header("x-call"), Some("7".to_string()), "the call's own header, not the last attempt's");
        attempt.set_header("X-Call", &format!("7.{}", attempt.number()))?;
        attempt.set_header("X-Signature", &format!("sig-{}", attempt.number()))?;
        Ok(())
    });
    let request = Request::get(&server.url("https", &path)).header("X-Call", "7").attempt_hooks(hooks);
    assert_eq!(client("https").execute(&request).unwrap().status(), 200);
    let records = server.requests(&path);
    let sent: Vec<_> =
        records.iter().map(|r| (recorded_header(r, "x-call"), recorded_header(r, "x-signature"))).collect();
    assert_eq!(sent, [(Some("7.1"), Some("sig-1")), (Some("7.2"), Some("sig-2"))]);
}

// F145: an attempt hook's before fails: the call ends with a callback error carrying the hook's own error,
// nothing is sent, no retry follows and the breaker counts nothing.
#[test]
fn f145_a_hook_error_ends_the_call_with_it_and_sends_nothing() {
    let server = TestServer::shared();
    let path = unique_path("hooks-error");
    server.script(&path, json!([{"status": 200}]));
    let hooks = AttemptHooks::new().before(|_| Err("no signing key loaded".into()));
    let request = Request::get(&server.url("https", &path)).attempt_hooks(hooks);
    let client = client("https");
    let e = client.execute(&request).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Callback);
    assert_eq!(e.panic_message(), Some("the attempt hook before failed: no signing key loaded"));
    assert!(e.to_string().contains("no signing key loaded"), "{e}");
    assert!(server.requests(&path).is_empty(), "nothing was sent");
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.failures, counts.successes), (0, 0), "no verdict for an attempt never sent");

    // Asynchronously the hook runs on the event loop, and the call ends the same way.
    let e = block_on(client.submit(&request).unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Callback);
    assert!(server.requests(&path).is_empty());
}

// F147: a hook sets a header the client owns: refused naming it, and with `?` the call ends, nothing sent.
#[test]
fn f147_a_header_the_client_owns_is_refused_to_a_hook() {
    let server = TestServer::shared();
    let path = unique_path("hooks-owned");
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let r = Arc::clone(&refusals);
    let hooks = AttemptHooks::new().before(move |attempt| {
        for name in ["Host", "Content-Length", "Transfer-Encoding"] {
            let e = attempt.set_header(name, "1").unwrap_err();
            r.lock().unwrap().push((e.kind(), e.fields().to_vec()));
        }
        attempt.set_header("Bad\nName", "v")?;
        Ok(())
    });
    let request = Request::get(&server.url("https", &path)).attempt_hooks(hooks);
    let e = client("https").execute(&request).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Callback);
    assert!(e.panic_message().unwrap().contains("HUMUS_E_INVALID_ARGUMENT"), "{e}");
    let refusals = refusals.lock().unwrap().clone();
    assert_eq!(refusals.len(), 3);
    assert!(refusals.iter().all(|(kind, _)| *kind == ErrorKind::InvalidArgument), "{refusals:?}");
    assert_eq!(refusals[0].1, ["Host"]);
    assert!(server.requests(&path).is_empty());
}

// F146: a hook panics: the panic never unwinds into the library; a panicking before ends the call with a
// callback error carrying the panic's message and sends nothing; a panicking after (which C cannot let fail a
// call) fails the blocking call that ran it, once its attempt was sent and counted.
#[test]
fn f146_a_panicking_hook_fails_the_call_without_unwinding_into_c() {
    let server = TestServer::shared();
    let path = unique_path("hooks-panic");
    server.script(&path, json!([{"status": 200}]));
    let client = client("https");

    let hooks = AttemptHooks::new().before(|attempt| panic!("before of attempt {}", attempt.number()));
    let e = client.execute(&Request::get(&server.url("https", &path)).attempt_hooks(hooks)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Callback);
    assert_eq!(e.panic_message(), Some("the attempt hook before panicked: before of attempt 1"));
    assert!(server.requests(&path).is_empty());

    let hooks = AttemptHooks::new().after(|attempt| panic!("after saw {:?}", attempt.status()));
    let request = Request::get(&server.url("https", &path)).attempt_hooks(hooks);
    let e = client.execute(&request).unwrap_err();
    assert_eq!((e.kind(), e.attempts()), (ErrorKind::Callback, 1));
    assert_eq!(e.panic_message(), Some("the attempt hook after panicked: after saw Some(200)"));
    assert_eq!(server.requests(&path).len(), 1, "the attempt went out before its after ran");
    // The panic was this call's alone: the next call without hooks succeeds.
    assert_eq!(client.get(&server.url("https", &path)).unwrap().status(), 200);
}

#[test]
fn asynchronous_calls_run_the_hooks_on_the_event_loop() {
    let server = TestServer::shared();
    let path = unique_path("hooks-async");
    server.script(&path, json!([{"status": 503}, {"status": 200}]));
    let threads = Arc::new(Mutex::new(Vec::new()));
    let t = Arc::clone(&threads);
    let hooks = AttemptHooks::new().before(move |attempt| {
        t.lock().unwrap().push(std::thread::current().id());
        attempt.set_header("X-Attempt", &attempt.number().to_string())?;
        Ok(())
    });
    let request = Request::get(&server.url("https", &path)).attempt_hooks(hooks);
    let response = client("https").submit(&request).unwrap().wait().unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 2));
    let threads = threads.lock().unwrap().clone();
    assert_eq!(threads.len(), 2);
    assert!(threads.iter().all(|id| *id != std::thread::current().id()), "not the caller's thread");
    let sent: Vec<_> =
        server.requests(&path).iter().map(|r| recorded_header(r, "x-attempt").map(String::from)).collect();
    assert_eq!(sent, [Some("1".to_string()), Some("2".to_string())]);
}
