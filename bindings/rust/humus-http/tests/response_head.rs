//! What curl's output needs, through the safe crate: the status line's reason phrase as the wire had it
//! ([`Response::reason`]), every redirect hop's head ([`Response::redirects`]), and headers left out of a
//! request ([`Request::remove_header`]). Against the project's test server (tests/server/) on HTTP/1.1 and
//! HTTP/2, and a raw loopback peer for a phrase the test server never sends (it sends the standard one).
mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread;

use humus_http::{Client, ErrorKind, Redirect, Request, Settings};
use serde_json::{json, Value};
use support::{runtime, settings, unique_path, TestServer};

fn client(listener: &str) -> Client {
    Client::new(&runtime(), &settings(listener).build().unwrap()).unwrap()
}

/// Answers one request on a loopback port with `status_line` (its bytes as given) and an empty body, then
/// closes. Returns the base URL and the thread, which ends with the connection.
fn raw_peer(status_line: &'static [u8]) -> (String, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let peer = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
            line.clear();
        }
        let mut stream = reader.into_inner();
        stream.write_all(status_line).unwrap();
        stream.write_all(b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    });
    (url, peer)
}

#[test]
fn the_reason_is_the_phrase_the_server_sent() {
    let server = TestServer::shared();
    let path = unique_path("reason");
    // 299 has no standard phrase: the test server sends "Unknown", which the client cannot have made up.
    server.script(&path, json!([{"status": 404}, {"status": 299}, {"status": 200}]));
    let client = client("http");
    let url = server.url("http", &path);
    let got: Vec<_> = (0..3)
        .map(|_| client.get(&url).map(|r| (r.status(), r.reason().to_string(), r.http_version().to_string())))
        .collect::<Result<_, _>>()
        .unwrap();
    let http1 = |status, reason: &str| (status, reason.to_string(), "1.1".to_string());
    assert_eq!(got, [http1(404, "Not Found"), http1(299, "Unknown"), http1(200, "OK")]);
    // The streamed response has the same head.
    server.script(&path, json!([{"status": 404, "body": "gone"}]));
    let streaming = client.stream(&Request::get(&url)).unwrap();
    assert_eq!((streaming.status(), streaming.reason()), (404, "Not Found"));
    assert_eq!(streaming.into_response().unwrap().reason(), "Not Found");
}

#[test]
fn http2_has_no_reason_phrase() {
    let server = TestServer::shared();
    let path = unique_path("reason-h2");
    server.script(&path, json!([{"status": 404}]));
    let response = client("https").get(&server.url("https", &path)).unwrap();
    assert_eq!((response.status(), response.http_version(), response.reason()), (404, "2", ""));
}

#[test]
fn a_custom_phrase_comes_as_sent_its_control_bytes_spaces_and_non_utf8_replaced() {
    for (line, want) in [
        (&b"HTTP/1.1 299 Fine, Thanks"[..], "Fine, Thanks"),
        (&b"HTTP/1.1 200 Not\tQuite  OK"[..], "Not Quite  OK"),
        (&b"HTTP/1.1 200 Caf\xe9"[..], "Caf\u{fffd}"),
        (&b"HTTP/1.1 204"[..], ""),
    ] {
        let (url, peer) = raw_peer(line);
        let settings = Settings::builder(&url).max_attempts(1).build().unwrap();
        let client = Client::new(&runtime(), &settings).unwrap();
        let response = client.get(&format!("{url}/r")).unwrap();
        assert_eq!(response.reason(), want, "{}", String::from_utf8_lossy(line));
        peer.join().unwrap();
    }
}

/// A hop's headers, names lower-cased, without the Content-Length the server adds to every reply.
fn hop_headers(hop: &Redirect) -> Vec<(String, String)> {
    hop.headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .filter(|(n, _)| n != "content-length")
        .collect()
}

// F137 through the safe crate: every hop of a redirect chain keeps its head, on HTTP/1.1 and HTTP/2.
#[test]
fn every_redirect_hop_keeps_its_head() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let (first, second, last) = (unique_path("hop-1"), unique_path("hop-2"), unique_path("hop-3"));
        server.script(&first, json!([{"status": 301, "headers": [["Location", second], ["X-Hop", "one"]]}]));
        let hop2 = json!([{"status": 307, "headers": [["Location", last], ["X-Hop", "two"], ["X-Hop", "2b"]]}]);
        server.script(&second, hop2);
        server.script(&last, json!([{"status": 404, "body": "gone"}]));
        let response = client(listener).get(&server.url(listener, &first)).unwrap();
        let (h2, version) = if listener == "https" { (true, "2") } else { (false, "1.1") };
        let phrase = |p: &str| if h2 { String::new() } else { p.to_string() };
        assert_eq!(
            (response.status(), response.reason(), response.text().unwrap()),
            (404, &*phrase("Not Found"), "gone")
        );
        let hops = response.redirects();
        let heads: Vec<_> =
            hops.iter().map(|h| (h.status, h.url.clone(), h.reason.clone(), h.http_version.clone())).collect();
        assert_eq!(
            heads,
            [
                (301, server.url(listener, &first), phrase("Moved Permanently"), version.to_string()),
                (307, server.url(listener, &second), phrase("Temporary Redirect"), version.to_string()),
            ],
            "{listener}"
        );
        let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(hop_headers(&hops[0]), [pair("location", &second), pair("x-hop", "one")], "{listener}");
        assert_eq!(
            hop_headers(&hops[1]),
            [pair("location", &last), pair("x-hop", "two"), pair("x-hop", "2b")],
            "{listener}"
        );
        assert_eq!((hops[1].header("X-HOP"), hops[1].header("x-absent")), (Some("two"), None));

        // The http crate's response keeps the hops' heads and the phrase in its extensions.
        #[cfg(feature = "http")]
        {
            use humus_http::ReasonPhrase;
            let converted = response.clone().into_http().unwrap();
            assert_eq!(converted.extensions().get::<Vec<Redirect>>(), Some(&hops.to_vec()));
            let reason = converted.extensions().get::<ReasonPhrase>().cloned();
            assert_eq!(reason, (!h2).then(|| ReasonPhrase("Not Found".to_string())), "{listener}");
        }
    }
}

/// The headers of the one request recorded for `path`, by lower-case name.
fn sent_headers(server: &TestServer, path: &str) -> Vec<(String, String)> {
    let records = server.requests(path);
    assert_eq!(records.len(), 1, "{path}: {records:?}");
    let headers = records[0]["headers"].as_array().cloned().unwrap_or_default();
    headers.iter().map(|h: &Value| (h[0].as_str().unwrap().to_string(), h[1].as_str().unwrap().to_string())).collect()
}

fn value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

// F138 through the safe crate: a header left out is sent by no one — the caller, the settings, libcurl — on
// HTTP/1.1 and HTTP/2; one set after the removal is sent, an empty one is sent empty.
#[test]
fn removed_headers_reach_the_server_as_absent() {
    let server = TestServer::shared();
    for listener in ["http", "https"] {
        let settings = settings(listener).header("X-Team", "pay").header("X-Keep", "k").build().unwrap();
        let client = Client::new(&runtime(), &settings).unwrap();
        let path = unique_path("remove-header");
        // A relative URL: the request is built again on the client's base_url, its removals with it.
        let mut request = Request::get(&path).header("X-Mine", "gone");
        for name in ["accept", "User-Agent", "Accept-Encoding", "x-team", "X-Mine", "X-Never-Set"] {
            request = request.remove_header(name);
        }
        let request = request.header("X-Empty", "").remove_header("X-Back").header("X-Back", "again");
        assert!(request.error().is_none(), "{:?}", request.error());
        assert_eq!(client.execute(&request).unwrap().status(), 200, "{listener}");
        let sent = sent_headers(server, &path);
        for name in ["accept", "user-agent", "accept-encoding", "x-team", "x-mine", "x-never-set"] {
            assert_eq!(value(&sent, name), None, "{listener}: {name} was sent: {sent:?}");
        }
        assert_eq!(
            (value(&sent, "x-empty"), value(&sent, "x-back"), value(&sent, "x-keep")),
            (Some(""), Some("again"), Some("k")),
            "{listener}"
        );

        // Without the removals the same client sends libcurl's Accept and its own User-Agent and Accept-Encoding.
        let plain = unique_path("remove-header-plain");
        assert_eq!(client.get(&server.url(listener, &plain)).unwrap().status(), 200);
        let usual = sent_headers(server, &plain);
        for name in ["accept", "user-agent", "accept-encoding", "x-team"] {
            assert!(value(&usual, name).is_some(), "{listener}: {name} missing: {usual:?}");
        }
    }
}

#[test]
fn a_header_the_client_owns_cannot_be_removed_and_the_call_sends_nothing() {
    let server = TestServer::shared();
    let client = client("http");
    for name in ["Host", "Content-Length", "Transfer-Encoding", "bad name", "X-Nul\0"] {
        let path = unique_path("remove-refused");
        let request = Request::get(&server.url("http", &path)).remove_header(name);
        let e = request.error().expect("the removal is refused").clone();
        assert_eq!((e.kind(), e.fields()), (ErrorKind::InvalidArgument, &[name.to_string()][..]), "{name}");
        assert_eq!(client.execute(&request).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert!(server.requests(&path).is_empty(), "{name}: nothing was sent");
    }
}
