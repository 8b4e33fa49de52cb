//! Bodies that stream (docs/bodies.md §7): a GiB each way in bounded memory through `Client::stream` and
//! `Body`, against a small loopback peer (the Python test server moves a GiB at ~20 MiB/s); unreplayable
//! bodies sent once, conveniences, resets and the breaker counting a streamed result when it ends or is
//! dropped, against the project's test server.
mod support;

use std::io::{self, BufRead, BufReader, Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use humus_http::{Body, Client, Error, ErrorKind, Request, Runtime, Settings};
use serde_json::json;
use support::{runtime, settings, unique_path, TestServer};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// The pattern's period: a prime, so a piece lost, doubled or misplaced changes the digest.
const PERIOD: u64 = 251;
/// sha256 of the first GiB of the pattern (byte i is i % 251).
const GIB_SHA256: &str = "9cc5601236c455c6af19a76e64d2d95953a93b10eeb8b8b756a57090e1499b3e";

/// The GiB tests measure the process's peak memory: every test of this file runs alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A whole number of periods of the pattern, so that blocks join up.
fn pattern_block() -> &'static [u8] {
    static BLOCK: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BLOCK.get_or_init(|| (0..PERIOD * 261).map(|i| (i % PERIOD) as u8).collect())
}

/// `n` bytes of the pattern, generated on the fly.
struct Pattern {
    at: u64,
    n: u64,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let block = pattern_block();
        let off = (self.at % block.len() as u64) as usize;
        let k = buf.len().min(block.len() - off).min(usize::try_from(self.n - self.at).unwrap_or(usize::MAX));
        buf[..k].copy_from_slice(&block[off..off + k]);
        self.at += k as u64;
        Ok(k)
    }
}

/// A sha256 computed by the system's `sha256sum` (an unoptimised test build would hash a GiB slowly, and
/// the crate has no dependency for it).
struct Sha256(Child);

impl Sha256 {
    fn new() -> Sha256 {
        let child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
        Sha256(child.expect("sha256sum (coreutils)"))
    }

    fn write(&mut self, data: &[u8]) {
        self.0.stdin.as_mut().unwrap().write_all(data).unwrap();
    }

    fn hex(mut self) -> String {
        drop(self.0.stdin.take());
        let out = self.0.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap_or_default().to_string()
    }
}

/// A loopback HTTP/1.1 peer, one request per connection: `GET /bytes/N` answers N pattern bytes,
/// `PUT /upload` with a Content-Length answers "BYTES SHA256" of the body it read.
fn peer() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    url
}

fn serve(stream: TcpStream) {
    let mut reader = BufReader::with_capacity(64 * 1024, stream.try_clone().unwrap());
    let mut request_line = String::new();
    let _ = reader.read_line(&mut request_line);
    let mut length = 0u64;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let target = request_line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut out = stream;
    if target == "/upload" {
        let mut sha = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut left = length;
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            let n = reader.read(&mut buf[..want]).unwrap_or(0);
            if n == 0 {
                return;
            }
            sha.write(&buf[..n]);
            left -= n as u64;
        }
        let answer = format!("{length} {}", sha.hex());
        let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}", answer.len());
        return;
    }
    let n: u64 = target.strip_prefix("/bytes/").and_then(|n| n.parse().ok()).unwrap_or(0);
    if write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n").is_err() {
        return;
    }
    let block = pattern_block();
    let mut left = n;
    while left > 0 {
        let k = left.min(block.len() as u64) as usize;
        if out.write_all(&block[..k]).is_err() {
            return;
        }
        left -= k as u64;
    }
}

/// A field of /proc/self/status, in bytes.
fn proc_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The growth of the process's peak resident memory over its size now (the kernel's VmHWM, reset here);
/// `None` when the peak cannot be reset.
struct MemoryWatch {
    start: u64,
    reset: bool,
}

impl MemoryWatch {
    fn start() -> MemoryWatch {
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        MemoryWatch { start: proc_status("VmRSS"), reset }
    }

    fn growth(&self) -> Option<u64> {
        self.reset.then(|| proc_status("VmHWM").saturating_sub(self.start))
    }
}

fn check_growth(what: &str, memory: &MemoryWatch) {
    let growth = memory.growth();
    println!("[stream] {what}: RSS peak growth {:.2} MiB", growth.unwrap_or(0) as f64 / MIB as f64);
    assert!(growth.unwrap_or(0) < 16 * MIB, "{what}: resident memory grew by {growth:?} bytes");
}

fn big_settings(base_url: &str) -> Settings {
    Settings::builder(base_url)
        .timeout(Duration::from_secs(600))
        .attempt_timeout(Duration::from_secs(300))
        .build()
        .unwrap()
}

#[test]
fn a_gib_download_streams_in_bounded_memory_and_counts_at_its_end() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let base = peer();
    let client = Client::new(&Runtime::new().unwrap(), &big_settings(&base)).unwrap();
    let memory = MemoryWatch::start();
    let started = Instant::now();
    let mut response = client.stream(&Request::get(&format!("{base}/bytes/{GIB}"))).unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.header("content-length"), Some(GIB.to_string().as_str()));
    assert_eq!(client.breaker_counts().unwrap().successes, 0, "not counted before the body ends");
    let mut sha = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = response.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        sha.write(&buf[..n]);
        total += n as u64;
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(total, GIB);
    assert_eq!(sha.hex(), GIB_SHA256);
    assert_eq!(client.breaker_counts().unwrap().successes, 1, "read to the end: counted once");
    drop(response);
    assert_eq!(client.breaker_counts().unwrap().successes, 1, "dropping an ended body counts nothing more");
    println!("[stream] 1 GiB download in {seconds:.2} s ({:.0} MiB/s), sha256 by a pipe included", 1024.0 / seconds);
    check_growth("1 GiB download", &memory);
}

#[test]
fn a_gib_upload_from_a_reader() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let base = peer();
    let client = Client::new(&Runtime::new().unwrap(), &big_settings(&base)).unwrap();
    let memory = MemoryWatch::start();
    let started = Instant::now();
    let body = Body::from_reader(Pattern { at: 0, n: GIB }, Some(GIB));
    let response = client.execute(&Request::put(&format!("{base}/upload")).body_stream(body)).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().unwrap(), format!("{GIB} {GIB_SHA256}"));
    println!("[stream] 1 GiB upload in {seconds:.2} s ({:.0} MiB/s), sha256 by a pipe included", 1024.0 / seconds);
    check_growth("1 GiB upload", &memory);
}

/// A reader that counts its drops.
struct Counted<R> {
    inner: R,
    drops: Arc<AtomicUsize>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: io::Seek> io::Seek for Counted<R> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

impl<R> Drop for Counted<R> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn an_unreplayable_upload_is_sent_once_even_for_put_and_a_seekable_one_is_replayed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("http").max_attempts(3).build().unwrap()).unwrap();
    for (name, replayable, attempts) in [("once", false, 1), ("seekable", true, 3)] {
        let path = unique_path(name);
        server.script(&path, json!([{"status": 503}]));
        let drops = Arc::new(AtomicUsize::new(0));
        let reader = Counted { inner: Cursor::new(vec![b'z'; 100_000]), drops: drops.clone() };
        let body = if replayable { Body::from_seekable(reader) } else { Body::from_reader(reader, Some(100_000)) };
        let request = Request::put(&server.url("http", &path)).body_stream(body);
        let response = client.execute(&request).unwrap();
        assert_eq!((response.status(), response.attempts()), (503, attempts), "{name}");
        let records = server.requests(&path);
        assert_eq!(records.len(), attempts as usize, "{name}");
        assert!(records.iter().all(|r| r["body_size"] == 100_000), "{name}: {records:?}");
        drop(request);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: the reader is dropped once");
    }
}

#[test]
fn a_body_dropped_early_counts_its_result_as_classified() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::shared();
    let path = unique_path("early-drop");
    server.script(&path, json!([{"status": 200, "body_size": 8 * MIB}]));
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    let mut response = client.stream(&Request::get(&server.url("http", &path))).unwrap();
    let mut first = vec![0u8; 16 * 1024];
    response.read_exact(&mut first).unwrap();
    assert!(first.iter().all(|&b| b == b'x'));
    assert_eq!(client.breaker_counts().unwrap().successes, 0);
    drop(response);
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.successes, counts.failures), (1, 0));
}

#[test]
fn buffered_conveniences_read_a_stream_to_its_end() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::shared();
    let path = unique_path("text");
    server.script(&path, json!([{"status": 200, "body": "streamed text"}]));
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    let request = Request::get(&server.url("http", &path));
    assert_eq!(client.stream(&request).unwrap().text().unwrap(), "streamed text");
    let response = client.stream(&request).unwrap().into_response().unwrap();
    assert_eq!((response.status(), response.body()), (200, &b"streamed text"[..]));
    assert_eq!(client.breaker_counts().unwrap().successes, 2);
}

#[test]
fn a_reset_mid_body_is_an_io_error_carrying_the_error() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::shared();
    let path = unique_path("reset");
    server.script(&path, json!([{"status": 200, "body_size": 4 * MIB, "reset": "mid_body"}]));
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    let mut response = client.stream(&Request::get(&server.url("http", &path))).unwrap();
    let failure = io::copy(&mut response, &mut io::sink()).unwrap_err();
    assert_eq!(failure.kind(), io::ErrorKind::ConnectionReset, "{failure}");
    let inner = failure.get_ref().and_then(|e| e.downcast_ref::<Error>()).expect("the binding's error");
    assert_eq!(inner.kind(), ErrorKind::ConnectionLost);
    assert_eq!(response.read(&mut [0u8; 10]).unwrap_err().kind(), io::ErrorKind::ConnectionReset);
    assert_eq!(client.breaker_counts().unwrap().failures, 1);
}

struct Panicking;

impl Read for Panicking {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        panic!("the disk is on fire")
    }
}

#[test]
fn a_panicking_or_failing_reader_fails_the_call_as_a_callback() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::shared();
    let client = Client::new(&runtime(), &settings("http").build().unwrap()).unwrap();
    let url = server.url("http", &unique_path("panic"));
    let failed = client.execute(&Request::post(&url).body_stream(Body::from_reader(Panicking, None))).unwrap_err();
    assert_eq!(failed.kind(), ErrorKind::Callback);
    assert!(failed.panic_message().unwrap_or_default().contains("the disk is on fire"), "{failed}");

    let broken = io::Cursor::new(b"abc".to_vec()).chain(FailingRead);
    let failed = client.execute(&Request::post(&url).body_stream(Body::from_reader(broken, None))).unwrap_err();
    assert_eq!(failed.kind(), ErrorKind::Callback);
    assert!(failed.panic_message().unwrap_or_default().contains("no more data"), "{failed}");
}

struct FailingRead;

impl Read for FailingRead {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::other("no more data"))
    }
}
