//! Bodies streamed asynchronously (docs/bodies.md §7): `Client::submit_stream` resolves at the headers and the
//! response is a `futures_core::Stream` of chunks read on the event loop, against the project's test server:
//! a multi-MiB body intact, a reset mid-body as an `Err` item, early drops that give the bulkhead slot back,
//! and many bodies at once on one thread over HTTP/1.1 and HTTP/2.
mod support;

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures_core::Stream;
use humus_http::{AsyncStreamingResponse, Client, Error, ErrorKind, Request};
use serde_json::json;
use support::{block_on, runtime, settings, unique_path, TestServer};

const MIB: usize = 1 << 20;
const CHUNK: usize = 64 * 1024;

/// Polls once with a waker that does nothing: whether the future is ready at once.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    struct Nothing;
    impl Wake for Nothing {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Nothing));
    Pin::new(future).poll(&mut Context::from_waker(&waker))
}

/// The next item of a stream, as futures' `StreamExt::next`.
async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

/// `n` bytes of printable text whose byte i depends on i and `seed` (period 89, a prime: a chunk lost,
/// doubled or misplaced changes the checksum).
fn pattern(n: usize, seed: usize) -> String {
    (0..n).map(|i| char::from(b'!' + ((i + seed) % 89) as u8)).collect()
}

/// FNV-1a, 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checksum(u64, usize);

impl Checksum {
    fn new() -> Checksum {
        Checksum(0xcbf2_9ce4_8422_2325, 0)
    }

    fn add(&mut self, data: &[u8]) {
        for &b in data {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.1 += data.len();
    }

    fn of(data: &[u8]) -> Checksum {
        let mut sum = Checksum::new();
        sum.add(data);
        sum
    }
}

/// Reads a body to its end through the Stream: its checksum and how many chunks carried it, or the failure.
async fn drain(mut response: AsyncStreamingResponse<'_>) -> Result<(Checksum, usize), Error> {
    let mut sum = Checksum::new();
    let mut chunks = 0;
    while let Some(chunk) = next(&mut response).await {
        let chunk = chunk?;
        assert!(!chunk.is_empty() && chunk.len() <= CHUNK, "a chunk of {} bytes", chunk.len());
        sum.add(&chunk);
        chunks += 1;
    }
    assert!(next(&mut response).await.is_none(), "the stream stays ended");
    Ok((sum, chunks))
}

#[test]
fn the_call_and_the_response_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<humus_http::StreamCall<'static>>();
    send_sync::<AsyncStreamingResponse<'static>>();
}

#[test]
fn a_multi_mib_body_arrives_intact_and_counts_at_its_end() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let path = unique_path("big");
        let body = pattern(3 * MIB + 12_345, 0);
        server.script(&path, json!([{"status": 200, "body": body}]));
        let client = Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap();
        let call = client.submit_stream(&Request::get(&server.url(listener, &path))).unwrap();
        let response = block_on(call).unwrap();
        assert_eq!((response.status(), response.http_version()), (200, if listener == "http" { "1.1" } else { "2" }));
        assert_eq!(response.header("content-length"), Some(body.len().to_string().as_str()));
        assert!(format!("{response:?}").contains("AsyncStreamingResponse"));
        assert_eq!(client.breaker_counts().unwrap().successes, 0, "{listener}: counted before the body's end");
        let (sum, chunks) = block_on(drain(response)).unwrap();
        assert_eq!(sum, Checksum::of(body.as_bytes()), "{listener}");
        assert!(chunks >= body.len() / CHUNK, "{listener}: {chunks} chunks");
        let counts = client.breaker_counts().unwrap();
        assert_eq!((counts.successes, counts.failures), (1, 0), "{listener}");
    }
}

#[test]
fn bytes_reads_the_rest() {
    let server = TestServer::shared();
    let path = unique_path("bytes");
    server.script(&path, json!([{"status": 503, "body": "busy"}]));
    let client = Client::new(&runtime(), &settings("http").max_attempts(1).build().unwrap()).unwrap();
    let response = block_on(client.submit_stream(&Request::get(&server.url("http", &path))).unwrap()).unwrap();
    assert_eq!(response.error_for_status_ref().unwrap_err().kind(), ErrorKind::HttpStatus(503));
    assert_eq!(block_on(response.bytes()).unwrap(), b"busy");
}

#[test]
fn a_reset_mid_body_is_an_err_item_and_a_breaker_failure() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let path = unique_path("reset");
        server.script(&path, json!([{"status": 200, "body_size": 4 * MIB, "reset": "mid_body"}]));
        let client = Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap();
        let mut response =
            block_on(client.submit_stream(&Request::get(&server.url(listener, &path))).unwrap()).unwrap();
        let mut received = 0;
        let failure = loop {
            match block_on(next(&mut response)) {
                Some(Ok(chunk)) => received += chunk.len(),
                Some(Err(e)) => break e,
                None => panic!("{listener}: the body ended after {received} bytes, with no failure"),
            }
        };
        assert_eq!(failure.kind(), ErrorKind::ConnectionLost, "{listener}: {failure}");
        assert!(received < 4 * MIB, "{listener}: {received} bytes");
        assert!(block_on(next(&mut response)).is_none(), "{listener}: the stream ends after its failure");
        assert_eq!(client.breaker_counts().unwrap().failures, 1, "{listener}");
    }
}

/// A client of one bulkhead slot, for which a call waits 1 s at most: a slot given back on the event loop
/// (a dropped body closes there, a cancel ends the call there) is taken within that wait.
fn one_slot_client() -> Client {
    let settings = settings("http").bulkhead_max_concurrent(1).bulkhead_wait(Duration::from_secs(1)).max_attempts(1);
    Client::new(&runtime(), &settings.build().unwrap()).unwrap()
}

/// Whether a call on `client` gets the bulkhead slot within its wait: it is answered, or refused as full.
fn slot_is_free(client: &Client, url: &str) -> bool {
    match block_on(client.submit_stream(&Request::get(url)).unwrap()) {
        Ok(response) => block_on(drain(response)).is_ok(),
        Err(e) if e.kind() == ErrorKind::BulkheadFull => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn dropping_the_body_early_closes_it_and_frees_the_slot() {
    let server = TestServer::shared();
    let (big, slow, small) = (unique_path("big"), unique_path("slow"), unique_path("small"));
    server.script(&big, json!([{"status": 200, "body_size": 8 * MIB}]));
    // The headers at once, the body 5 s later: a read is pending when the response is dropped.
    server.script(&slow, json!([{"status": 200, "body_size": MIB, "body_delay_ms": 5000}]));
    server.script(&small, json!([{"status": 200, "body": "ok"}]));
    let client = one_slot_client();
    let small_url = server.url("http", &small);

    // Dropped after one chunk, no read pending.
    let mut response = block_on(client.submit_stream(&Request::get(&server.url("http", &big))).unwrap()).unwrap();
    assert!(block_on(next(&mut response)).unwrap().unwrap().iter().all(|&b| b == b'x'));
    assert!(!slot_is_free(&client, &small_url), "the open body holds the slot");
    drop(response);
    assert!(slot_is_free(&client, &small_url), "the dropped body gave its slot back");
    let counts = client.breaker_counts().unwrap();
    assert_eq!(
        (counts.successes, counts.failures),
        (2, 0),
        "the dropped body counted as classified (a 200), then the small call"
    );

    // Dropped with a read pending: the library still writes into the buffer until that read is cancelled.
    let mut response = block_on(client.submit_stream(&Request::get(&server.url("http", &slow))).unwrap()).unwrap();
    assert!(poll_once(&mut Box::pin(next(&mut response))).is_pending(), "the body is 5 s away");
    assert!(!slot_is_free(&client, &small_url));
    drop(response);
    assert!(slot_is_free(&client, &small_url), "the body with a read pending gave its slot back");
    assert_eq!(client.breaker_counts().unwrap().failures, 0, "closing with a read pending is no failure");
}

#[test]
fn dropping_the_call_before_its_headers_cancels_it() {
    let server = TestServer::shared();
    let (late, small) = (unique_path("late"), unique_path("small"));
    server.script(&late, json!([{"status": 200, "delay_ms": 30_000, "body": "late"}]));
    server.script(&small, json!([{"status": 200, "body": "ok"}]));
    let client = one_slot_client();
    let small_url = server.url("http", &small);
    let mut call = client.submit_stream(&Request::get(&server.url("http", &late))).unwrap();
    assert!(poll_once(&mut call).is_pending() && !call.is_finished());
    assert!(format!("{call:?}").contains("StreamCall"));
    assert!(!slot_is_free(&client, &small_url), "the call in flight holds the slot");
    let started = std::time::Instant::now();
    drop(call);
    assert!(slot_is_free(&client, &small_url), "the dropped call gave its slot back");
    assert!(started.elapsed() < Duration::from_secs(20), "not after the headers came"); // they come at 30 s
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.successes, counts.failures), (1, 0), "a cancelled call counts nothing");
}

/// Polls every future on one thread until all are done, as futures' `join_all`.
async fn join_all<F: Future + Unpin>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Option<F>> = futures.into_iter().map(Some).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if let Some(f) = future {
                if let Poll::Ready(out) = Pin::new(f).poll(cx) {
                    *output = Some(out);
                    *future = None;
                }
            }
        }
        if futures.iter().all(Option::is_none) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future ended")).collect()
}

#[test]
fn many_bodies_stream_at_once_on_one_thread() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let client = Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap();
        let bodies: Vec<String> = (0..8).map(|i| pattern(MIB + i * 1000, i)).collect();
        let calls: Vec<_> = bodies
            .iter()
            .map(|body| {
                let path = unique_path("many");
                // Chunks paced so that the bodies interleave rather than arrive one after the other.
                server.script(&path, json!([{"status": 200, "body": body, "chunk_delay_ms": 2}]));
                let call = client.submit_stream(&Request::get(&server.url(listener, &path))).unwrap();
                Box::pin(async move { drain(call.await?).await })
            })
            .collect();
        let outcomes = block_on(join_all(calls));
        for (i, (outcome, body)) in outcomes.into_iter().zip(&bodies).enumerate() {
            let (sum, _) = outcome.unwrap_or_else(|e| panic!("{listener} body {i}: {e}"));
            assert_eq!(sum, Checksum::of(body.as_bytes()), "{listener} body {i}");
        }
        assert_eq!(client.breaker_counts().unwrap().successes, 8, "{listener}");
    }
}

#[test]
fn bodies_dropped_early_leave_nothing_for_the_next_calls() {
    // Many streams on one HTTP/2 connection, each dropped after its first chunk while libcurl holds more of
    // it, then new calls on the handles they leave: each new body is exactly its own (a reused handle once
    // handed the next request the old stream's bytes).
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let cut = unique_path("cut");
    server.script(&cut, json!([{"status": 200, "body_size": 4 * MIB}]));
    let body = pattern(100_003, 7);
    let exact = unique_path("exact");
    server.script(&exact, json!([{"status": 200, "body": body}]));
    for round in 0..2 {
        let opened: Vec<_> = (0..12)
            .map(|_| {
                let call = client.submit_stream(&Request::get(&server.url("https", &cut))).unwrap();
                Box::pin(async move {
                    let mut response = call.await?;
                    next(&mut response).await.expect("a first chunk")?;
                    Ok::<_, Error>(response)
                })
            })
            .collect();
        let held: Vec<_> = block_on(join_all(opened)).into_iter().map(|r| r.unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100)); // libcurl takes in more of each paused stream
        drop(held);
        let calls: Vec<_> = (0..12)
            .map(|_| {
                let call = client.submit_stream(&Request::get(&server.url("https", &exact))).unwrap();
                Box::pin(async move { drain(call.await?).await })
            })
            .collect();
        for (i, outcome) in block_on(join_all(calls)).into_iter().enumerate() {
            let (sum, _) = outcome.unwrap_or_else(|e| panic!("round {round} body {i}: {e}"));
            assert_eq!(sum, Checksum::of(body.as_bytes()), "round {round} body {i}");
        }
    }
}

/// Returns `Pending` once, waking its task at once: the consumer awaits something else between chunks, as a
/// task writing each chunk somewhere would.
async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

#[test]
fn a_multi_mib_body_is_read_exactly_through_the_ring_while_the_task_awaits_between_chunks() {
    // The library reads ahead into its ring (256 KiB for a body of 1 MiB or more) while the task is elsewhere:
    // takes find it partly or wholly full, wrap around its end, and none may lose, double or reorder a byte.
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let path = unique_path("ring");
        let body = pattern(5 * MIB + 4_321, 3);
        server.script(&path, json!([{"status": 200, "body": body}]));
        let client = Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap();
        let mut response =
            block_on(client.submit_stream(&Request::get(&server.url(listener, &path))).unwrap()).unwrap();
        let (mut sum, mut chunks) = (Checksum::new(), 0);
        block_on(async {
            while let Some(chunk) = next(&mut response).await {
                let chunk = chunk.unwrap_or_else(|e| panic!("{listener}: {e}"));
                assert!(!chunk.is_empty() && chunk.len() <= CHUNK, "{listener}: a chunk of {} bytes", chunk.len());
                sum.add(&chunk);
                chunks += 1;
                yield_now().await;
                if chunks % 8 == 0 {
                    std::thread::sleep(Duration::from_millis(2)); // the loop fills the ring meanwhile
                }
            }
        });
        assert_eq!(sum, Checksum::of(body.as_bytes()), "{listener}");
        assert!(chunks >= body.len().div_ceil(CHUNK), "{listener}: {chunks} chunks");
        assert!(block_on(next(&mut response)).is_none(), "{listener}: the stream stays ended");
        let counts = client.breaker_counts().unwrap();
        assert_eq!((counts.successes, counts.failures), (1, 0), "{listener}");
    }
}

#[test]
fn a_small_body_arrives_intact_its_first_bytes_as_they_come() {
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    for size in [1_000, 200_000] {
        let path = unique_path("small");
        let body = pattern(size, 5);
        server.script(&path, json!([{"status": 200, "body": body}]));
        let mut response = block_on(client.submit_stream(&Request::get(&server.url("http", &path))).unwrap()).unwrap();
        let chunks = block_on(async {
            let mut chunks = Vec::new();
            while let Some(chunk) = next(&mut response).await {
                chunks.push(chunk.unwrap());
            }
            chunks
        });
        assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= CHUNK), "{size} bytes");
        assert_eq!(chunks.concat(), body.as_bytes(), "{size} bytes");
    }
    // A Content-Length of 20000, 16 KiB of it at once and the rest 30 s later: the first piece is handed over
    // as it comes, not held until the body is whole.
    let path = unique_path("paced");
    server.script(&path, json!([{"status": 200, "body_size": 20_000, "chunk_delay_ms": 30_000}]));
    let mut response = block_on(client.submit_stream(&Request::get(&server.url("http", &path))).unwrap()).unwrap();
    let mut got = 0;
    while got < 16 * 1024 {
        got += block_on(next(&mut response)).expect("the first piece").unwrap().len();
    }
    assert_eq!(got, 16 * 1024);
    drop(response); // closed before its end: counted as its 200 was classified
    assert_eq!(client.breaker_counts().unwrap().successes, 3);
}

/// A waker that counts its wake-ups; its `Arc`'s count tells how many clones are still held.
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn dropping_a_body_being_read_ahead_lets_go_of_everything() {
    // Dropped while the loop fills the ring, with a wake-up promised or in flight: the drop closes the body
    // (no `ready` runs after it), and the ring's hold on the task's waker goes with it.
    let server = TestServer::shared();
    let path = unique_path("racing");
    server.script(&path, json!([{"status": 200, "body_size": 8 * MIB}]));
    let client = Client::new(&runtime(), &settings("https").build().unwrap()).unwrap();
    let counting = Arc::new(Counting::default());
    let waker = Waker::from(Arc::clone(&counting));
    let mut cx = Context::from_waker(&waker);
    for round in 0..40 {
        let mut response = block_on(client.submit_stream(&Request::get(&server.url("https", &path))).unwrap()).unwrap();
        // Poll until a chunk came (spinning: every poll takes again), then a few more, so the drop meets the
        // ring at different fills.
        let mut taken = 0;
        while taken < 1 + round % 4 {
            match Pin::new(&mut response).poll_next(&mut cx) {
                Poll::Ready(Some(chunk)) => {
                    assert!(chunk.unwrap().iter().all(|&b| b == b'x'));
                    taken += 1;
                }
                Poll::Ready(None) => panic!("round {round}: the body ended early"),
                Poll::Pending => std::thread::yield_now(),
            }
        }
        if round % 2 == 0 {
            let _ = Pin::new(&mut response).poll_next(&mut cx); // a chunk, or a wake-up promised
        }
        drop(response);
        assert_eq!(Arc::strong_count(&counting), 2, "round {round}: a clone of the waker is still held");
    }
    assert_eq!(client.breaker_counts().unwrap().failures, 0, "closing a body early is no failure");
}

#[test]
fn a_cancelled_body_ends_with_cancelled_and_no_breaker_failure() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let path = unique_path("cancel");
        server.script(&path, json!([{"status": 200, "body_size": 8 * MIB}]));
        let client = Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap();
        let token = humus_http::CancelToken::new();
        let request = Request::get(&server.url(listener, &path)).cancel_token(&token);
        let mut response = block_on(client.submit_stream(&request).unwrap()).unwrap();
        let mut received = block_on(next(&mut response)).unwrap().unwrap().len();
        token.cancel();
        // What the ring holds already may come first; then the failure, and the end.
        let failure = loop {
            match block_on(next(&mut response)) {
                Some(Ok(chunk)) => received += chunk.len(),
                Some(Err(e)) => break e,
                None => panic!("{listener}: the body ended after {received} bytes, uncancelled"),
            }
        };
        assert_eq!(failure.kind(), ErrorKind::Cancelled, "{listener}: {failure}");
        assert!(received < 8 * MIB, "{listener}: {received} bytes");
        assert!(block_on(next(&mut response)).is_none(), "{listener}: the stream ends after its failure");
        drop(response);
        assert_eq!(client.breaker_counts().unwrap().failures, 0, "{listener}: a cancel is no breaker failure");
    }
}

#[test]
fn a_body_past_the_calls_timeout_ends_with_a_timeout() {
    let server = TestServer::shared();
    let path = unique_path("late-body");
    // The headers at once, the body 5 s later: the call's 300 ms run out while the task waits on the ring.
    server.script(&path, json!([{"status": 200, "body_size": MIB, "body_delay_ms": 5000}]));
    let client = Client::new(&runtime(), &settings("http").max_attempts(1).build().unwrap()).unwrap();
    let request = Request::get(&server.url("http", &path)).timeout(Duration::from_millis(300));
    let mut response = block_on(client.submit_stream(&request).unwrap()).unwrap();
    let failure = block_on(next(&mut response)).unwrap().unwrap_err();
    assert_eq!(failure.kind(), ErrorKind::Timeout, "{failure}");
    assert!(block_on(next(&mut response)).is_none(), "the stream ends after its failure");
    assert_eq!(client.breaker_counts().unwrap().failures, 1, "a timeout mid-body is a breaker failure");
}
