//! `stream_get URL`: one streamed GET for bench/stream_bench.py, through `Client::stream` and its
//! `std::io::Read`, the body read in 64 KiB pieces and dropped (as `-o /dev/null` would). On failure
//! `HUMUS_E_<KIND>: message` on stderr and exit status 1 (2 for bad usage).
use std::io::Read;
use std::process::ExitCode;

use humus_http::{Client, Error, Request, Runtime, Settings};

/// `scheme://host:port` of an absolute URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find(['/', '?', '#']).map_or(url, |i| &url[..after_scheme + i])
}

fn get(url: &str) -> Result<u64, Error> {
    let runtime = Runtime::builder().build()?;
    // The call's timeout bounds the body's reads too: the longest allowed (1 h), as curl has none.
    let settings = Settings::from_json(&format!(r#"{{"base_url": "{}", "timeout": "1h"}}"#, origin(url)))?;
    let client = Client::new(&runtime, &settings)?;
    let mut response = client.stream(&Request::get(url))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        match response.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) => match e.into_inner().map(|inner| inner.downcast::<Error>()) {
                Some(Ok(error)) => return Err(*error),
                other => panic!("a read failed without a humus_http::Error: {other:?}"),
            },
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url] = args.as_slice() else {
        eprintln!("usage: stream_get URL");
        return ExitCode::from(2);
    };
    match get(url) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {}", e.kind().name(), e.message());
            ExitCode::from(1)
        }
    }
}
