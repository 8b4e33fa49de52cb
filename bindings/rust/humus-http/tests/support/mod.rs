//! The Rust side of `tests/server/humus_test_server.py` (tests/server/README.md): spawns the project's
//! scriptable HTTP/1.1 + HTTP/2 + TLS server with stdin and stdout pipes, reads its ready line, and drives
//! its control API over plain HTTP/1.1 with std's TcpStream (not with the client under test).
//!
//! Starting it costs ~0.4 s of Python start-up, so a test binary shares one ([`TestServer::shared`]); tests
//! keep apart by scripting paths of their own ([`unique_path`]). It stops at EOF on its stdin, which the OS
//! delivers when this process exits, even if it crashes.
#![allow(dead_code)] // each test binary uses its own part of the harness

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::pin::pin;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use humus_http::{Runtime, Settings, SettingsBuilder, Tls};
use serde_json::{json, Value};

/// The TLS listeners, reached as https://payments:PORT through the runtime's resolve option.
pub const TLS_LISTENERS: [&str; 5] = ["https", "https_h1", "mtls", "cn_only", "untrusted"];
const SERVER_NAME: &str = "payments";
const READY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TestServer {
    ready: Value,
    certs: PathBuf,
    // Held open for the process's life: the server stops at EOF on its stdin.
    _stdin: Mutex<ChildStdin>,
    _child: Mutex<Child>,
}

impl TestServer {
    /// The process-wide server, started on first use.
    pub fn shared() -> &'static TestServer {
        static SERVER: OnceLock<TestServer> = OnceLock::new();
        SERVER.get_or_init(TestServer::start)
    }

    fn start() -> TestServer {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
        let script = root.join("tests/server/humus_test_server.py");
        // Certificates are made once (under a lock) and shared by every run of the tests.
        let certs = std::env::var_os("HUMUS_TEST_CERTS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("humus-certs"));
        let python = std::env::var("HUMUS_TEST_PYTHON").unwrap_or_else(|_| "python3".to_string());
        let mut child = Command::new(&python)
            .arg(&script)
            .arg("--certs")
            .arg(&certs)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(READY_TIMEOUT) {
            Ok(line) if !line.trim().is_empty() => line,
            _ => {
                let _ = child.kill();
                panic!(
                    "humus_test_server did not become ready within {READY_TIMEOUT:?} \
                     (is `python3 -m pip install -r tests/server/requirements.txt` done?)"
                );
            }
        };
        let ready: Value = serde_json::from_str(&line).expect("the ready line is JSON");
        TestServer { ready, certs, _stdin: Mutex::new(stdin), _child: Mutex::new(child) }
    }

    /// A listener's port; 0 when this machine cannot offer it (tls11).
    pub fn port(&self, listener: &str) -> u16 {
        self.ready.get(listener).and_then(Value::as_u64).unwrap_or(0) as u16
    }

    /// The URL a client uses: plain http by IP, TLS listeners by the certificate's name.
    pub fn url(&self, listener: &str, path: &str) -> String {
        if listener == "http" {
            format!("http://127.0.0.1:{}{path}", self.port(listener))
        } else {
            format!("https://{SERVER_NAME}:{}{path}", self.port(listener))
        }
    }

    pub fn ca_file(&self) -> PathBuf {
        self.certs.join("ca.pem")
    }

    pub fn client_cert(&self) -> PathBuf {
        self.certs.join("client.pem")
    }

    pub fn client_key(&self) -> PathBuf {
        self.certs.join("client.key")
    }

    /// Each request to `path` consumes the next step; the last repeats.
    pub fn script(&self, path: &str, steps: Value) {
        self.control("POST", "/_control/script", Some(json!({"path": path, "steps": steps})));
    }

    /// The requests recorded for `path`, in arrival order.
    pub fn requests(&self, path: &str) -> Vec<Value> {
        let target = format!("/_control/requests?path={}", percent_encode(path));
        self.control("GET", &target, None).as_array().cloned().unwrap_or_default()
    }

    /// One control API call over the plain listener; a refusal panics with the server's reason.
    pub fn control(&self, method: &str, target: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port("http"))).expect("the control listener");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            stream,
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).unwrap();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut payload = vec![0; length];
        reader.read_exact(&mut payload).unwrap();
        let payload: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
        assert!(status_line.contains(" 200 "), "{method} {target}: {} {payload}", status_line.trim());
        payload
    }
}

/// A path no other test uses: scripts and records are per path on the shared server.
pub fn unique_path(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("/rust/{}/{name}/{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A runtime that sends payments:PORT of every TLS listener to 127.0.0.1 (the certificates name
/// "payments"). One per test, so each test also frees what it made.
pub fn runtime() -> Runtime {
    let server = TestServer::shared();
    let mut builder = Runtime::builder();
    for listener in TLS_LISTENERS {
        let port = server.port(listener);
        builder = builder.resolve(&format!("{SERVER_NAME}:{port}"), &format!("127.0.0.1:{port}"));
    }
    builder.build().expect("the runtime")
}

/// Settings for a listener: fast retries, and the test CA for TLS listeners.
pub fn settings(listener: &str) -> SettingsBuilder {
    let server = TestServer::shared();
    let builder = Settings::builder(&server.url(listener, ""))
        .backoff_base(Duration::from_millis(5))
        .backoff_max(Duration::from_millis(10));
    if listener == "http" {
        builder
    } else {
        builder.tls(&Tls::new().ca_file(server.ca_file()))
    }
}

/// The smallest executor: polls on this thread, parks until woken. Counts the polls.
pub fn block_on_counting<F: Future>(future: F) -> (F::Output, usize) {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return (output, polls);
        }
        std::thread::park();
    }
}

/// [`block_on_counting`]'s output alone.
pub fn block_on<F: Future>(future: F) -> F::Output {
    block_on_counting(future).0
}
