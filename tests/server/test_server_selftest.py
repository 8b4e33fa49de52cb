"""Self-test of humus_test_server.py with clients that share none of its code: http.client and ssl for
HTTP/1.1 (plain and TLS), the curl CLI for HTTP/2. If these pass, a failing integration test of the client
points at the client, not at the server.
"""
from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import shutil
import signal
import socket
import ssl
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server_harness import SERVER_NAME, TestServer

CURL = shutil.which("curl")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestServer]:
    with TestServer(tmp_path_factory.mktemp("certs")) as started:
        yield started


@pytest.fixture(autouse=True)
def clean(server: TestServer) -> None:
    server.reset()


def tls_context(server: TestServer, cafile: Path | None = None, client_cert: bool = False) -> ssl.SSLContext:
    """A client context trusting only the test CA (or CAFILE), as the client under test will."""
    context = ssl.create_default_context(cafile=str(cafile or server.ca_file))
    if client_cert:
        context.load_cert_chain(server.client_cert, server.client_key)
    return context


class PaymentsConnection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1 under the name `payments`, like curl --resolve."""

    def connect(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=SERVER_NAME)  # type: ignore[attr-defined]


def connect(server: TestServer, listener: str, **tls: Any) -> http.client.HTTPConnection:
    """An HTTP/1.1 connection to LISTENER: plain for `http`, TLS otherwise."""
    if listener == "http":
        return http.client.HTTPConnection("127.0.0.1", server.port(listener), timeout=5)
    return PaymentsConnection(SERVER_NAME, server.port(listener), timeout=5, context=tls_context(server, **tls))


def fetch(server: TestServer, listener: str, path: str, method: str = "GET", body: bytes | None = None,
          headers: dict[str, str] | None = None, **tls: Any) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request on a fresh connection: status, headers, body."""
    connection = connect(server, listener, **tls)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def curl(server: TestServer, listener: str, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The curl CLI over HTTP/2 (ALPN), trusting the test CA; prints `status version` on stdout."""
    assert CURL is not None
    return subprocess.run(
        [CURL, "-sS", "--http2", "--cacert", str(server.ca_file), "--resolve", server.resolve(listener),
         "-o", "/dev/null", "-w", "%{http_code} %{http_version}", *args, server.url(listener, path)],
        capture_output=True, text=True, timeout=10)


def curl_has_http2() -> bool:
    if CURL is None:
        return False
    return "HTTP2" in subprocess.run([CURL, "--version"], capture_output=True, text=True).stdout


needs_h2_curl = pytest.mark.skipif(not curl_has_http2(), reason="curl with HTTP/2 is not installed")


# --- start-up -------------------------------------------------------------------------------------------

def test_ready_line_names_every_listener_and_the_certificates(server: TestServer) -> None:
    for name in ("http", "https", "https_h1", "mtls", "cn_only", "untrusted"):
        assert isinstance(server.ready[name], int) and server.ready[name] > 0, name
    assert server.ready["tls11"] is None or server.ready["tls11"] > 0
    assert (server.ready["tls11"] is None) == bool(server.ready["notes"])
    assert Path(server.ready["certs"]) == server.certs.resolve()
    for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key", "cn_only.pem", "untrusted.pem"):
        assert (server.certs / name).is_file(), name


def test_stdin_eof_and_sigterm_stop_the_server(server: TestServer) -> None:
    with TestServer(server.certs) as other:
        process = other._process
        assert process is not None and process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=3) == 0
    with TestServer(server.certs) as other:
        process = other._process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=3) == 0


# --- default echo and records ---------------------------------------------------------------------------

@pytest.mark.parametrize("listener", ["http", "https", "https_h1"])
def test_default_answer_echoes_the_request(server: TestServer, listener: str) -> None:
    status, headers, body = fetch(server, listener, "/echo?a=1&b=2", "POST", b"hello",
                                  {"X-Trace": "t-1"})
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    echo = json.loads(body)
    assert echo["method"] == "POST" and echo["path"] == "/echo" and echo["query"] == "a=1&b=2"
    assert ["x-trace", "t-1"] in echo["headers"]
    assert echo["body_size"] == 5 and echo["protocol"] == "1.1"


def test_records_carry_headers_body_digest_and_connection_reuse(server: TestServer) -> None:
    connection = connect(server, "https")
    for body in (b"one", b"second body"):
        connection.request("PUT", "/rec?x=1", body=body, headers={"Idempotency-Key": "k-7"})
        connection.getresponse().read()
    connection.close()
    fetch(server, "http", "/other")
    records = server.requests("/rec")
    assert len(records) == 2
    first, second = records
    assert first["method"] == "PUT" and first["query"] == "x=1"
    assert ["idempotency-key", "k-7"] in first["headers"]
    assert first["body_size"] == 3 and first["body_sha256"] == hashlib.sha256(b"one").hexdigest()
    assert first["protocol"] == "1.1" and first["tls"] is True and first["listener"] == "https"
    assert first["connection"] == second["connection"]  # keep-alive reused the connection
    assert (first["stream"], second["stream"]) == (1, 2)
    assert first["authority"] == f"{SERVER_NAME}:{server.port('https')}"
    assert len(server.requests()) == 3


def test_control_requests_are_not_recorded_and_reset_forgets_everything(server: TestServer) -> None:
    server.script("/r", [{"status": 500}])
    assert fetch(server, "http", "/r")[0] == 500
    assert len(server.requests("/r")) == 1
    server.reset()
    assert server.requests() == []
    assert fetch(server, "http", "/r")[0] == 200  # the script is gone too


def test_a_misspelt_step_is_refused(server: TestServer) -> None:
    with pytest.raises(RuntimeError, match="statuz"):
        server.script("/typo", [{"statuz": 503}])
    with pytest.raises(RuntimeError, match="reset must be one of"):
        server.script("/typo", [{"reset": "sometimes"}])
    with pytest.raises(RuntimeError, match="cannot be sent"):
        server.script("/typo", [{"headers": [["X-A", "1\r\nX-B: 2"]]}])


# --- scripts ----------------------------------------------------------------------------------------------

def test_steps_are_consumed_in_order_and_the_last_repeats(server: TestServer) -> None:
    server.script("/seq", [{"status": 503, "headers": [["Retry-After", "2"]], "body": "busy"}, {"status": 201}])
    status, headers, body = fetch(server, "https_h1", "/seq")
    assert (status, headers["Retry-After"], body) == (503, "2", b"busy")
    assert [fetch(server, "https_h1", "/seq")[0] for _ in range(3)] == [201, 201, 201]
    assert [r["step"] for r in server.requests("/seq")] == [0, 1, 1, 1]


def test_without_repeat_the_default_answer_follows_the_steps(server: TestServer) -> None:
    server.script("/once", [{"status": 429}], repeat_last=False)
    assert fetch(server, "http", "/once")[0] == 429
    status, _, body = fetch(server, "http", "/once")
    assert status == 200 and json.loads(body)["path"] == "/once"


def test_body_size_sends_that_many_bytes(server: TestServer) -> None:
    server.script("/big", [{"body_size": 100_000, "headers": [["Content-Type", "text/plain"]]}])
    status, headers, body = fetch(server, "https", "/big")
    assert status == 200 and body == b"x" * 100_000 and headers["Content-Length"] == "100000"


def test_delays_hold_the_headers_and_the_body(server: TestServer) -> None:
    server.script("/slow", [{"delay_ms": 250, "body_delay_ms": 100, "chunk_delay_ms": 50, "body_size": 40_000}])
    started = time.monotonic()
    status, _, body = fetch(server, "http", "/slow")
    # 250 ms before the headers, 100 ms before the body, 50 ms between each of its three 16 KiB chunks.
    assert status == 200 and len(body) == 40_000
    assert time.monotonic() - started >= 0.25 + 0.1 + 2 * 0.05


# --- HTTP/1.1 faults --------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["before_headers", "after_headers", "mid_body"])
def test_reset_drops_the_connection(server: TestServer, where: str) -> None:
    server.script("/reset", [{"reset": where, "body_size": 50_000}])
    with pytest.raises((ConnectionError, http.client.HTTPException)):
        fetch(server, "http", "/reset")


def test_close_ends_the_connection_after_the_response(server: TestServer) -> None:
    server.script("/close", [{"close": True}])
    connection = connect(server, "http")
    connection.request("GET", "/close")
    response = connection.getresponse()
    assert response.headers["Connection"] == "close"
    response.read()
    assert response.will_close
    assert connection.sock is None or connection.sock.recv(1) == b""


def test_kill_after_request_swallows_the_next_request_on_the_connection(server: TestServer) -> None:
    server.script("/first", [{"kill_after_request": True}])
    connection = connect(server, "http")
    connection.request("GET", "/first")
    connection.getresponse().read()
    connection.request("POST", "/pay", body=b"once")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        connection.getresponse()
    [record] = server.requests("/pay")
    assert record["killed"] is True and record["body_size"] == 4


def test_duplicate_content_length_sends_two_differing_values(server: TestServer) -> None:
    server.script("/dup", [{"duplicate_content_length": True, "body": "hello"}])
    with socket.create_connection(("127.0.0.1", server.port("http")), timeout=5) as sock:
        sock.sendall(b"GET /dup HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = b""
        while chunk := sock.recv(4096):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    assert lengths == [b"Content-Length: 12", b"Content-Length: 5"] and body == b"hello"


def test_gzip_bomb_expands_to_the_requested_size(server: TestServer) -> None:
    server.script("/bomb", [{"gzip_bomb": 10_000_000}])
    status, headers, body = fetch(server, "http", "/bomb")
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert len(body) < 100_000 and len(gzip.decompress(body)) == 10_000_000


def test_clients_that_vanish_leak_no_connections(server: TestServer) -> None:
    server.script("/hang", [{"hang": True}])
    server.script("/drip", [{"body_size": 1_000_000, "chunk_delay_ms": 20}])
    baseline = server.stats()["tasks"]
    for listener in ("http", "https"):
        hanging = connect(server, listener)
        hanging.timeout = 0.3
        with pytest.raises((TimeoutError, socket.timeout)):
            hanging.request("GET", "/hang")
            hanging.getresponse()
        hanging.close()
        dripping = connect(server, listener)
        dripping.request("GET", "/drip")
        assert len(dripping.getresponse().read(20_000)) == 20_000
        dripping.close()  # mid-body
    deadline = time.monotonic() + 3
    while server.stats()["tasks"] > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats() == {"connections": 1, "tasks": baseline}


# --- TLS listeners ----------------------------------------------------------------------------------------

def test_mtls_refuses_a_client_without_a_certificate(server: TestServer) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError)):
        fetch(server, "mtls", "/m")
    status, _, _ = fetch(server, "mtls", "/m", client_cert=True)
    assert status == 200
    [record] = server.requests("/m")
    assert record["client_cert"] == "humus_http test client" and record["listener"] == "mtls"


def peer_certificate(server: TestServer, listener: str, cafile: Path | None = None) -> dict[str, Any]:
    """The certificate LISTENER presents, verified against CAFILE (the test CA by default)."""
    context = tls_context(server, cafile)
    context.check_hostname = False  # the chain is what is checked here; the name is the client's job
    with socket.create_connection(("127.0.0.1", server.port(listener)), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
            cert = tls.getpeercert()
            assert cert is not None
            return dict(cert)


def test_server_certificate_names_payments_localhost_and_loopback(server: TestServer) -> None:
    cert = peer_certificate(server, "https")
    assert set(cert["subjectAltName"]) == {("DNS", "payments"), ("DNS", "localhost"),
                                           ("IP Address", "127.0.0.1"), ("IP Address", "0:0:0:0:0:0:0:1")}


def test_cn_only_listener_presents_a_certificate_without_subject_alt_name(server: TestServer) -> None:
    cert = peer_certificate(server, "cn_only")
    assert ((("commonName", SERVER_NAME),) in cert["subject"]) and "subjectAltName" not in cert


def test_untrusted_listener_presents_a_self_signed_certificate(server: TestServer) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        peer_certificate(server, "untrusted")
    cert = peer_certificate(server, "untrusted", cafile=server.certs / "untrusted.pem")
    assert cert["issuer"] == cert["subject"]


def test_tls11_listener_speaks_only_tls_1_1(server: TestServer) -> None:
    if not server.port("tls11"):
        pytest.skip(f"tls11 listener not offered: {server.ready['notes']}")
    with pytest.raises(ssl.SSLError):
        peer_certificate(server, "tls11")  # a modern client (TLS 1.2+) cannot connect
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(server.ca_file)
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with socket.create_connection(("127.0.0.1", server.port("tls11")), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
            assert tls.version() == "TLSv1.1"


# --- HTTP/2 (curl) ----------------------------------------------------------------------------------------

@needs_h2_curl
def test_https_negotiates_http2_and_https_h1_does_not(server: TestServer) -> None:
    assert curl(server, "https", "/h2").stdout == "200 2"
    assert curl(server, "https_h1", "/h2").stdout == "200 1.1"
    [h2, h1] = server.requests("/h2")
    assert (h2["protocol"], h2["stream"], h1["protocol"]) == ("2", 1, "1.1")
    assert h2["authority"] == f"{SERVER_NAME}:{server.port('https')}"


@needs_h2_curl
def test_http2_scripted_status_and_headers(server: TestServer) -> None:
    server.script("/h2s", [{"status": 503, "headers": [["Retry-After", "3"]]}, {"status": 200}])
    result = curl(server, "https", "/h2s", "-D", "-")
    assert "retry-after: 3" in result.stdout.lower() and result.stdout.endswith("503 2")
    assert curl(server, "https", "/h2s").stdout == "200 2"


@needs_h2_curl
@pytest.mark.parametrize("where", ["before_headers", "after_headers", "mid_body"])
def test_http2_reset_is_rst_stream_internal_error(server: TestServer, where: str) -> None:
    server.script("/h2r", [{"reset": where, "body_size": 50_000}])
    result = curl(server, "https", "/h2r")
    assert result.returncode == 92 and "INTERNAL_ERROR" in result.stderr  # CURLE_HTTP2_STREAM


@needs_h2_curl
def test_http2_refused_stream_is_retried_by_libcurl(server: TestServer) -> None:
    server.script("/refused", [{"refuse_stream": True}, {"status": 201}])
    assert curl(server, "https", "/refused").stdout == "201 2"
    assert len(server.requests("/refused")) == 2  # libcurl's silent retry (docs/libcurl-traps.md §19) reached the server


@needs_h2_curl
def test_http2_goaway_unprocessed_is_a_framing_error(server: TestServer) -> None:
    server.script("/goaway", [{"goaway_unprocessed": True}])
    assert curl(server, "https", "/goaway").returncode == 16  # CURLE_HTTP2, as docs/libcurl-traps.md §19 describes


@needs_h2_curl
def test_http2_hang_holds_the_stream(server: TestServer) -> None:
    server.script("/h2hang", [{"hang": True}])
    server.script("/h2drip", [{"body_size": 1_000_000, "chunk_delay_ms": 20}])
    baseline = server.stats()["tasks"]
    assert curl(server, "https", "/h2hang", "--max-time", "0.5").returncode == 28
    assert curl(server, "https", "/h2drip", "--max-time", "0.3").returncode == 28
    deadline = time.monotonic() + 3
    while server.stats()["tasks"] > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats() == {"connections": 1, "tasks": baseline}  # the vanished client's streams ended
