//! `stream_put FILE URL`: one streamed PUT for bench/stream_bench.py, the body read from FILE through
//! `Body::from_reader` (sent as it is read, with FILE's size as its Content-Length). On failure
//! `HUMUS_E_<KIND>: message` on stderr and exit status 1 (2 for bad usage).
use std::fs::File;
use std::io::Read;
use std::process::ExitCode;

use humus_http::{Body, Client, Error, Request, Runtime, Settings};

/// `scheme://host:port` of an absolute URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find(['/', '?', '#']).map_or(url, |i| &url[..after_scheme + i])
}

fn put(path: &str, url: &str) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let length = file.metadata().map_err(|e| format!("{path}: {e}"))?.len();
    let described = |e: Error| format!("{}: {}", e.kind().name(), e.message());
    let runtime = Runtime::builder().build().map_err(described)?;
    // The server answers once it has read the whole body: the attempt gets the call's whole deadline.
    let settings =
        Settings::from_json(&format!(r#"{{"base_url": "{}", "timeout": "1h", "attempt_timeout": "1h"}}"#, origin(url)))
            .map_err(described)?;
    let client = Client::new(&runtime, &settings).map_err(described)?;
    let request = Request::put(url).body_stream(Body::from_reader(file, Some(length)));
    let mut response = client.stream(&request).map_err(described)?;
    let mut answer = Vec::new(); // a line of JSON: the size and digest the server read
    response.read_to_end(&mut answer).map_err(|e| format!("reading the answer: {e}"))?;
    match response.status() {
        200 => Ok(()),
        status => Err(format!("the server answered {status}")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, url] = args.as_slice() else {
        eprintln!("usage: stream_put FILE URL");
        return ExitCode::from(2);
    };
    match put(path, url) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
    }
}
