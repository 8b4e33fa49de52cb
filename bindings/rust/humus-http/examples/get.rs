//! `get URL [--ca FILE] [--resolve host:port:addr:port]...`: one GET through a client whose base_url is the
//! URL's origin, like bindings/c/examples/get.c. Prints the status, the attempts and the body; on failure
//! `HUMUS_E_<KIND>: message` on stderr and exit status 1 (2 for bad usage).
use std::process::ExitCode;

use humus_http::{Client, Error, Request, Runtime, Settings, Tls};

fn usage() -> ExitCode {
    eprintln!("usage: get URL [--ca FILE] [--resolve host:port:addr:port]...");
    ExitCode::from(2)
}

/// `scheme://host:port` of an absolute URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..].find(['/', '?', '#']).map_or(url, |i| &url[..after_scheme + i])
}

fn get(url: &str, ca: Option<&str>, resolve: &[(String, String)]) -> Result<(), Error> {
    let runtime = resolve.iter().fold(Runtime::builder(), |b, (from, to)| b.resolve(from, to)).build()?;
    let mut settings = Settings::builder(origin(url));
    if let Some(ca) = ca {
        settings = settings.tls(&Tls::new().ca_file(ca));
    }
    let client = Client::new(&runtime, &settings.build()?)?;
    let response = client.execute(&Request::get(url))?;
    println!("status {} after {} attempt(s), HTTP/{}", response.status(), response.attempts(), response.http_version());
    println!("{}", String::from_utf8_lossy(response.body()));
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut url, mut ca, mut resolve) = (None, None, Vec::new());
    let mut i = 0;
    while i < args.len() {
        match (args[i].as_str(), args.get(i + 1)) {
            ("--ca", Some(file)) => ca = Some(file.clone()),
            ("--resolve", Some(entry)) => {
                // host:port:addr:port → "host:port" goes to "addr:port".
                let parts: Vec<&str> = entry.splitn(3, ':').collect();
                let [host, port, address] = parts[..] else { return usage() };
                resolve.push((format!("{host}:{port}"), address.to_string()));
            }
            (arg, _) if url.is_none() && !arg.starts_with("--") => {
                url = Some(arg.to_string());
                i += 1;
                continue;
            }
            _ => return usage(),
        }
        i += 2;
    }
    let Some(url) = url else { return usage() };
    match get(&url, ca.as_deref(), &resolve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
