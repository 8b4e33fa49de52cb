"""humus-http against the system curl on the same requests to the project's server (issue 40): status lines
with the reason phrase as sent, every redirect hop's head, headers left out or sent empty, ranges, bearer tokens, --max-redirs, curl's -w variables, flags before the command,
and the messages that say what to do next. Each comparison is skipped, saying so, when curl is absent."""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from server_harness import TestServer

CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="no curl on PATH to compare with")


@pytest.fixture(autouse=True)
def clean(server: TestServer) -> None:
    server.reset()


def curl(*args: str) -> subprocess.CompletedProcess[bytes]:
    assert CURL is not None
    return subprocess.run([CURL, "-s", *args], capture_output=True, timeout=60, check=False)


def sent(server: TestServer, path: str) -> list[dict[str, Any]]:
    """The headers of each request to `path`, as {name: value}, in arrival order."""
    return [dict(record["headers"]) for record in server.requests(path)]


@needs_curl
def test_empty_and_left_out_headers_as_curl_sends_them(run, server: TestServer) -> None:
    args = ["-H", "X-Empty;", "-d", "a=1", "-H", "Content-Type:", "-u", "al:pw", "-H", "Authorization:"]
    ours = run(server.url("http", "/mine"), *args)
    theirs = curl(server.url("http", "/theirs"), *args)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    (mine,), (their,) = sent(server, "/mine"), sent(server, "/theirs")
    assert mine["x-empty"] == their["x-empty"] == ""
    for name in ("content-type", "authorization"):
        assert name not in mine and name not in their


@needs_curl
@pytest.mark.parametrize("listener", ["http", "https"])
def test_headers_the_client_adds_are_left_out_as_curl_leaves_them_out(run, server: TestServer, listener: str) -> None:
    # curl sends no Accept-Encoding of its own; the client's is left out too, so both send the same set.
    args = ["-H", "Accept:", "-H", "User-Agent:", "-H", "Accept-Encoding:", "-H", "X-Foo:", "-H", "X-Empty;"]
    tls = ["--resolve", server.resolve("https"), "--cacert", str(server.ca_file)] if listener == "https" else []
    base = server.url("http", "") if listener == "http" else f"https://payments:{server.port('https')}"
    ours = run(base + "/mine", *tls, *args)
    theirs = curl(base + "/theirs", *tls, *args)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert "note:" not in ours.stderr
    (mine,), (their,) = sent(server, "/mine"), sent(server, "/theirs")
    assert mine == their, (mine, their)
    assert "accept" not in mine and "user-agent" not in mine and mine["x-empty"] == ""


@needs_curl
def test_a_header_left_out_then_given_is_sent_as_curl_sends_it(run, server: TestServer) -> None:
    args = ["--json", "{}", "-H", "Accept:", "-H", "Accept: text/x-mine", "-H", "User-Agent:", "-H", "Accept-Encoding:"]
    assert run(server.url("http", "/mine"), *args).returncode == 0
    assert curl(server.url("http", "/theirs"), *args).returncode == 0
    (mine,), (their,) = sent(server, "/mine"), sent(server, "/theirs")
    assert mine == their and mine["accept"] == "text/x-mine", (mine, their)


def test_the_host_header_cannot_be_left_out(run, server: TestServer) -> None:
    result = run(server.url("http", "/h"), "-H", "Host:")
    assert result.returncode == 2 and not server.requests("/h")
    assert "-H 'Host:': " in result.stderr and 'header "Host" is the client\'s own' in result.stderr, result.stderr


def heads_of(output: bytes) -> list[bytes]:
    """The status lines of the heads in `output`, in order."""
    return re.findall(rb"^HTTP/[^\r\n]*", output, re.MULTILINE)


@needs_curl
@pytest.mark.parametrize("listener", ["http", "https"])
@pytest.mark.parametrize("flags", [["-i"], ["-I"], ["-D", "-", "-o", "/dev/null"], ["-i", "-D", "{dump}"]])
def test_every_redirect_hops_head_is_printed_as_curl_prints_it(run, server: TestServer, tmp_path: Path,
                                                               listener: str, flags: list[str]) -> None:
    def script() -> None:
        server.reset()
        server.script("/r1", [{"status": 301, "headers": [["Location", "/r2"], ["X-Hop", "one"]]}])
        server.script("/r2", [{"status": 307, "headers": [["Location", "/r3"], ["X-Hop", "two"]]}])
        server.script("/r3", [{"status": 404, "headers": [["X-Hop", "end"]], "body": "gone"}])

    tls = ["--resolve", server.resolve("https"), "--cacert", str(server.ca_file)] if listener == "https" else []
    url = server.url("http", "/r1") if listener == "http" else f"https://payments:{server.port('https')}/r1"
    outputs = []
    for who, tool in (("ours", run), ("theirs", lambda *a: curl("-L", *a))):
        script()
        dump = tmp_path / f"{who}.head"
        result = tool(url, *tls, *[str(dump) if f == "{dump}" else f for f in flags])
        assert result.returncode == 0, result.stderr
        outputs.append((result.stdout, dump.read_bytes() if dump.exists() else b""))
    assert outputs[0] == outputs[1], outputs
    if listener == "http":
        assert heads_of(outputs[0][0] + outputs[0][1])[:3] == [b"HTTP/1.1 301 Moved Permanently",
                                                                 b"HTTP/1.1 307 Temporary Redirect",
                                                                 b"HTTP/1.1 404 Not Found"]
    else:
        assert heads_of(outputs[0][0] + outputs[0][1])[:3] == [b"HTTP/2 301 ", b"HTTP/2 307 ", b"HTTP/2 404 "]


def test_verbose_shows_every_hops_head_in_order(run, server: TestServer) -> None:
    server.script("/v1", [{"status": 302, "headers": [["Location", "/v2"]]}])
    server.script("/v2", [{"status": 200, "body": "ok"}])
    result = run(server.url("http", "/v1"), "-v")
    assert result.returncode == 0 and result.stdout == b"ok"
    heads = re.findall(r"^< (HTTP/.*)$", result.stderr, re.MULTILINE)
    assert heads == ["HTTP/1.1 302 Found", "HTTP/1.1 200 OK"], result.stderr
    assert "< Location: /v2\n< Content-Length: 0\n< \n< HTTP/1.1 200 OK\n" in result.stderr, result.stderr


class RawPeer:
    """A loopback peer answering every request with one fixed response: what the test server never sends."""

    def __init__(self, response: bytes) -> None:
        self.response = response
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(self.response)

    def close(self) -> None:
        self.sock.close()


@needs_curl
@pytest.mark.parametrize("status_line", [b"HTTP/1.1 200 OK", b"HTTP/1.1 299 Fine, Thanks", b"HTTP/1.1 200 ",
                                         b"HTTP/1.1 404 Not Here", b"HTTP/1.1 503 Busy \xe2\x80\x94 later"])
def test_the_status_line_carries_the_reason_phrase_as_sent(run, status_line: bytes) -> None:
    peer = RawPeer(status_line + b"\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
    try:
        url = f"http://127.0.0.1:{peer.port}/s"
        ours = run(url, "-i", "--retry", "0")
        theirs = curl(url, "-i")
    finally:
        peer.close()
    assert ours.stdout == theirs.stdout, (ours.stdout, theirs.stdout)
    assert ours.stdout.startswith(status_line + b"\r\n")


@needs_curl
def test_http2_has_no_reason_phrase_as_curl_prints_it(run, server: TestServer) -> None:
    server.script("/s", [{"status": 418, "headers": [["X-A", "1"]], "body": "tea"}])
    h2 = ["--resolve", server.resolve("https"), "--cacert", str(server.ca_file), "-i"]
    url = f"https://payments:{server.port('https')}/s"
    ours, theirs = run(url, *h2), curl(url, *h2)
    assert ours.stdout == theirs.stdout and ours.stdout.startswith(b"HTTP/2 418 \r\n"), (ours.stdout, theirs.stdout)


@needs_curl
@pytest.mark.parametrize(("given", "header"), [("0-99", "bytes=0-99"), ("500-", "bytes=500-"),
                                               ("-200", "bytes=-200"), ("0-0,-1", "bytes=0-0,-1"),
                                               ("7", "bytes=7-")])
def test_range_sends_curls_range_header(run, server: TestServer, given: str, header: str) -> None:
    assert run(server.url("http", "/mine"), "-r", given).returncode == 0
    assert curl(server.url("http", "/theirs"), "--range", given).returncode == 0
    assert sent(server, "/mine")[0]["range"] == sent(server, "/theirs")[0]["range"] == header


@needs_curl
def test_oauth2_bearer_sends_the_token_and_never_prints_it(run, server: TestServer) -> None:
    result = run(server.url("http", "/mine"), "--oauth2-bearer", "t0k3n", "-v", "--trace")
    assert curl(server.url("http", "/theirs"), "--oauth2-bearer", "t0k3n").returncode == 0
    assert result.returncode == 0
    assert sent(server, "/mine")[0]["authorization"] == sent(server, "/theirs")[0]["authorization"] == "Bearer t0k3n"
    assert "t0k3n" not in result.stderr and "> Authorization: Bearer (hidden)" in result.stderr


def redirect_chain(server: TestServer, hops: int) -> None:
    """/c1 -> /c2 -> ... -> /c{hops+1}, which answers "end"."""
    for n in range(1, hops + 1):
        server.script(f"/c{n}", [{"status": 302, "headers": [["Location", f"/c{n + 1}"]]}])
    server.script(f"/c{hops + 1}", [{"body": "end"}])


def chain_requests(server: TestServer, hops: int) -> int:
    return sum(len(server.requests(f"/c{n}")) for n in range(1, hops + 2))


@needs_curl
@pytest.mark.parametrize("limit", [0, 1, 3, 4, 10])
def test_max_redirs_stops_where_curl_stops(run, server: TestServer, limit: int) -> None:
    redirect_chain(server, 4)
    fmt = "%{num_redirects} %{exitcode}"
    ours = run(server.url("http", "/c1"), "--max-redirs", str(limit), "-w", fmt)
    ours_requests = chain_requests(server, 4)
    server.reset()
    redirect_chain(server, 4)
    theirs = curl("-L", server.url("http", "/c1"), "--max-redirs", str(limit), "-w", fmt)
    assert ours.returncode == theirs.returncode == (47 if limit < 4 else 0), ours.stderr
    assert ours.stdout == theirs.stdout, (ours.stdout, theirs.stdout)
    assert ours_requests == chain_requests(server, 4) == min(limit, 4) + 1  # the hop past the limit is not made
    if limit < 4:
        assert f"humus-http: (47) Maximum ({limit}) redirects followed; the next, to " in ours.stderr


@needs_curl
def test_max_redirs_10_is_the_clients_own_limit(run, server: TestServer) -> None:
    server.script("/loop", [{"status": 307, "headers": [["Location", "/loop"]]}])
    ours = run(server.url("http", "/loop"), "--max-redirs", "10", "-w", "%{num_redirects}")
    ours_requests = len(server.requests("/loop"))
    server.reset()
    server.script("/loop", [{"status": 307, "headers": [["Location", "/loop"]]}])
    theirs = curl("-L", server.url("http", "/loop"), "--max-redirs", "10", "-w", "%{num_redirects}")
    assert ours.returncode == theirs.returncode == 47
    assert ours.stdout == theirs.stdout == b"10"
    assert ours_requests == len(server.requests("/loop")) == 11


@needs_curl
def test_write_out_variables_match_curls(run, server: TestServer) -> None:
    elsewhere = f"https://payments:{server.port('https')}/y"
    server.script("/away", [{"status": 301, "headers": [["Location", elsewhere], ["Content-Type", "text/plain"]],
                             "body": "moved"}])
    fmt = "%{http_code} %{num_redirects} %{redirect_url} %{content_type} %{http_version}"
    ours = run(server.url("http", "/away"), "-o", "/dev/null", "-w", fmt)
    theirs = curl(server.url("http", "/away"), "-o", "/dev/null", "-w", fmt)  # no -L: the client follows no
    assert ours.returncode == theirs.returncode == 0                          # other origin either
    assert ours.stdout == theirs.stdout == f"301 0 {elsewhere} text/plain 1.1".encode()
    h2 = ["--resolve", server.resolve("https"), "--cacert", str(server.ca_file), "-o", "/dev/null", "-w", fmt]
    url = f"https://payments:{server.port('https')}/json"
    ours, theirs = run(url, *h2), curl(url, *h2)
    assert ours.stdout == theirs.stdout == b"200 0  application/json 2"


def test_num_retries_counts_retries_not_redirects(run, server: TestServer) -> None:
    server.script("/from", [{"status": 302, "headers": [["Location", "/to"]]}])
    server.script("/to", [{"status": 503}, {"status": 200, "body": "ok"}])
    result = run(server.url("http", "/from"), "--retry-delay", "10ms",
                 "-w", "\n%{num_retries} %{num_redirects} %{attempts}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"ok\n1 1 3"


def test_without_a_response_http_version_is_0(run) -> None:
    result = run("http://127.0.0.1:1/", "--retry", "0", "-s", "-w", "%{http_version} %{num_retries}")
    assert result.returncode == 7 and result.stdout == b"0 0"


@needs_curl
def test_retry_delay_0_is_accepted_as_curl_does(run, server: TestServer) -> None:
    result = run(server.url("http", "/d"), "--retry-delay", "0", "-v")
    assert result.returncode == curl(server.url("http", "/d"), "--retry-delay", "0").returncode == 0
    assert '"backoff_base":"100ms"' in result.stderr  # the client's default backoff stays


@pytest.mark.parametrize("args", [["-v", "get"], ["--retry", "1", "-s", "head"], ["-H", "X-A: 1", "post", "-d", "a"]])
def test_flags_before_the_command_are_accepted(run, server: TestServer, args: list[str]) -> None:
    result = run(*args, server.url("http", "/first"))
    assert result.returncode == 0, result.stderr
    method = next(a for a in args if a in ("get", "head", "post")).upper()
    assert server.requests("/first")[0]["method"] == method


def test_demo_flags_may_come_before_demo(run) -> None:
    result = run("--duration", "2", "demo")
    assert result.returncode == 2
    assert "--duration: expected a whole number 5..3600, got '2'" in result.stderr


@pytest.mark.parametrize(("flag", "suggestion"), [("--retyr", "--retry"), ("--max-redir", "--max-redirs"),
                                                  ("--out", "--output"), ("--frobnicate", None)])
def test_an_unknown_flag_gets_a_did_you_mean(run, flag: str, suggestion: str | None) -> None:
    result = run("http://x/", flag)
    assert result.returncode == 2
    if suggestion:
        assert f"unknown option '{flag}' (did you mean '{suggestion}'?)" in result.stderr
    else:
        assert f"unknown option '{flag}' (see humus-http --help)" in result.stderr


@pytest.mark.parametrize("args", [["-s"], ["http://a/", "http://b/"], ["--retry", "1"]])
def test_an_error_is_prefixed_once(run, args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith("humus-http: ") and "humus-http: humus-http" not in result.stderr


@pytest.mark.parametrize(("text", "where"), [('{"timeout": "1s",\n  "max_attempts": }', "line 2, column 19"),
                                             ('{"timeout": "1s"', "line 1, column 17"),
                                             ("\n\n  [1, 2", "line 3, column 8")])
def test_a_settings_file_that_is_not_json_says_where(run, server: TestServer, tmp_path: Path, text: str,
                                                     where: str) -> None:
    settings = tmp_path / "s.json"
    settings.write_text(text)
    result = run(server.url("http", "/x"), "--settings", str(settings))
    assert result.returncode == 78
    assert re.search(rf"--settings .*s\.json: not valid JSON at {where}: syntax error", result.stderr), result.stderr


def test_an_untrusted_certificate_hints_at_cacert(run, server: TestServer) -> None:
    url = f"https://payments:{server.port('untrusted')}/x"
    result = run(url, "--resolve", server.resolve("untrusted"), "--retry", "0")
    assert result.returncode == 60
    assert result.stderr.rstrip().endswith("; if you trust its CA, give it with --cacert FILE"), result.stderr


def test_https_to_a_plain_http_port_says_so(run, server: TestServer) -> None:
    result = run(f"https://127.0.0.1:{server.port('http')}/x", "--retry", "0")
    assert result.returncode == 35
    assert "the server answered in plain HTTP, not TLS" in result.stderr
