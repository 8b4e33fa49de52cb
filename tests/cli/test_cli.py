"""humus-http get|head|post|put|delete against the project's test server: every flag, every exit status
(except 1, which only an internal error produces), and a one-line error naming the flag for bad input."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from server_harness import TestServer


@pytest.fixture(autouse=True)
def clean(server: TestServer) -> None:
    server.reset()


def https_args(server: TestServer, listener: str = "https") -> list[str]:
    return ["--resolve", server.resolve(listener), "--cacert", str(server.ca_file)]


def header(record: dict[str, Any], name: str) -> str | None:
    for key, value in record["headers"]:
        if key == name.lower():
            return str(value)
    return None


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    return lines[0]


# ---- --help, --version and bad command lines ---------------------------------------------------------------

FLAGS = ["-H, --header", "-d, --data", "--data-binary", "-o, --output", "-i, --include", "-f, --fail",
         "-s, --silent", "-v, --verbose", "--cacert", "--cert", "--key", "--retry", "-m, --max-time",
         "--connect-timeout", "--resolve", "--attempt-timeout", "--idempotency-key", "--inject-fault",
         "--settings", "--trace", "--trace-json", "-r, --range", "--oauth2-bearer", "--max-redirs",
         "--metrics",
         "--repeat", "--concurrency", "--duration", "--rate", "--plot", "--slow-call-trip",
         "-X, --request", "-I, --head", "-L, --location", "-w, --write-out", "--json", "-u, --user",
         "-A, --user-agent", "-F, --form", "-G, --get", "--data-urlencode", "-O, --remote-name",
         "-D, --dump-header", "--http1.1", "--http2", "--fail-with-body", "--retry-delay", "--retry-max-time",
         "--retry-all-errors", "-T, --upload-file", "--compressed", "-#, --progress-bar", "--no-progress-meter"]
EXIT_CODES = [0, 1, 2, 3, 6, 7, 8, 16, 22, 23, 26, 28, 35, 47, 56, 58, 60, 77, 78, 120, 121]


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_names_every_command_flag_and_exit_status(run, flag: str) -> None:
    result = run(flag)
    assert result.returncode == 0
    text = result.stdout.decode()
    for command in ("get", "head", "post", "put", "patch", "delete", "options", "demo"):
        assert command in text
    for f in FLAGS:
        assert f in text, f
    for code in EXIT_CODES:
        assert re.search(rf"^\s+{code}  ", text, re.MULTILINE), f"exit status {code} not documented"


def test_the_manual_page_documents_every_flag_and_exit_status_of_help(run) -> None:
    help_text = run("--help").stdout.decode()
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", help_text))
    codes = set(re.findall(r"^\s+(\d+)  ", help_text, re.MULTILINE))
    page = (Path(__file__).resolve().parents[2] / "docs" / "man" / "humus-http.1").read_text()
    roff = page.replace("\\-", "-")
    documented_flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", roff))
    assert flags <= documented_flags, f"flags of --help missing from humus-http.1: {sorted(flags - documented_flags)}"
    exit_section = roff.split(".SH EXIT STATUS", 1)[1].split(".SH ", 1)[0]
    documented_codes = set(re.findall(r"^\.B (\d+)$", exit_section, re.MULTILINE))
    assert codes == documented_codes, f"--help {sorted(codes, key=int)}, humus-http.1 {sorted(documented_codes, key=int)}"


def test_help_anywhere_on_the_line_wins(run) -> None:
    assert run("get", "http://x/", "--help").returncode == 0


def test_version(run) -> None:
    result = run("--version")
    assert result.returncode == 0
    assert re.match(rb"humus-http \d+\.\d+\.\d+ \(libhumus_http \d+\.\d+\.\d+\)", result.stdout)


# S26
def test_version_names_every_linked_library_one_per_line(run) -> None:
    lines = run("--version").stdout.decode().splitlines()
    libraries = dict(line.split(" ", 1) for line in lines[1:-1])
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", libraries["libcurl"]), libraries
    assert "OpenSSL" in libraries["ssl"], libraries
    assert lines[-1].startswith("features: ")
    features = lines[-1].split()[1:]
    assert "ssl" in features and "http2" in features, features
    assert features == sorted(features)
    curl = shutil.which("curl-config")
    if curl:  # the libcurl the build found is the one the program loads
        built = subprocess.run([curl, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]
        assert libraries["libcurl"] == built


@pytest.mark.parametrize(("args", "named"), [
    ([], "no command"),
    (["fetch", "http://x/"], "'fetch'"),
    (["get"], "get: no URL given"),
    (["-s"], "no URL given"),
    (["--retry", "1", "fetch", "http://x/"], "'fetch'"),
    (["get", "http://a/", "http://b/"], "'http://b/'"),
    (["get", "http://x/", "--frobnicate"], "'--frobnicate'"),
    (["get", "http://x/", "-Q"], "'-Q'"),
    (["get", "http://x/", "-H"], "-H: needs a value"),
    (["get", "http://x/", "-H", "no colon"], "-H: expected 'Name: value'"),
    (["get", "http://x/", "-d", "a=1"], "-d: get sends no body"),
    (["head", "http://x/", "--data-binary", "a"], "--data-binary: head sends no body"),
    (["get", "http://x/", "--retry", "10"], "--retry: expected a whole number 0..9, got '10'"),
    (["get", "http://x/", "--retry=x"], "--retry: expected a whole number 0..9, got 'x'"),
    (["get", "http://x/", "--max-time", "-1"], "--max-time: expected seconds"),
    (["get", "http://x/", "-m", "soon"], "-m: expected seconds"),
    (["get", "http://x/", "--connect-timeout", "-1"], "--connect-timeout: expected seconds"),
    (["get", "http://x/", "--attempt-timeout", "5parsecs"], "--attempt-timeout: expected seconds"),
    (["get", "http://x/", "--resolve", "payments:443"], "--resolve: expected HOST:PORT:ADDRESS"),
    (["get", "http://x/", "--resolve", "payments:99999:127.0.0.1"], "--resolve: the port"),
    (["get", "http://x/", "--key", "k.pem"], "--key: needs --cert"),
    (["get", "http://x/", "--repeat", "0"], "--repeat: expected a whole number"),
    (["get", "http://x/", "--concurrency", "2"], "--concurrency: 2 is more than the calls"),
    (["get", "http://x/", "--include=yes"], "--include: takes no value"),
    (["get", "http://x/", "--idempotency-key", ""], "--idempotency-key: needs a key"),
    (["get", "http://x/", "--inject-fault", "status:503, abort"], "--inject-fault: expected ACTION[@P]"),
    (["get", "http://x/", "--plot", "x.svg"], "--plot: only for 'humus-http demo'"),
    (["demo", "-H", "X: y"], "-H: not for 'humus-http demo'"),
    (["demo", "http://x/"], "demo: unexpected argument"),
    (["demo", "--duration", "2"], "--duration: expected a whole number 5..3600, got '2'"),
    (["demo", "--rate", "lots"], "--rate: expected a whole number 1..2000, got 'lots'"),
    (["get", "http://x/", "--metrics=yes"], "--metrics: takes no value"),
    (["get", "http://x/", "--colour", "x"], "unknown option '--colour'"),
    (["http://x/", "-X", "GE T"], "-X: expected a method"),
    (["http://x/", "-w", "%{bogus}"], "-w: unknown variable %{bogus}"),
    (["http://x/", "--write-out", "%{http_code"], "--write-out: unclosed %{"),
    (["http://x/", "-u", "bob"], "-u: expected USER:PASSWORD"),
    (["http://x/", "-F", "novalue"], "-F: expected NAME=VALUE"),
    (["http://x/", "-F", "f=@x;colour=red"], "-F: unknown parameter 'colour=red'"),
    (["http://x/", "-F", "a=1", "-d", "b=2"], "-F: not with -d"),
    (["http://x/", "--json", "{}", "-d", "b=2"], "--json: not with -d"),
    (["http://x/", "-G", "--json", "{}"], "-G: puts -d"),
    (["post", "http://x/", "-I"], "-I: the command post already names the method"),
    (["http://x/", "-X", "GET", "-d", "a"], "-d: a GET sends no body (use -G"),
    (["http://x/", "-f", "--fail-with-body"], "--fail-with-body: choose it or -f"),
    (["http://x/", "-O", "-o", "f"], "-O: choose it or -o"),
    (["http://x/", "-T", "f", "-d", "a"], "-T: not with -d (one body)"),
    (["get", "http://x/", "-T", "f"], "-T: get sends no body"),
    (["http://x/", "-T", ""], "-T: needs a file name"),
    (["http://x/", "--retry-delay", "-1"], "--retry-delay: expected seconds"),
    (["http://x/", "get"], "expected the command 'get' before the URL 'http://x/'"),
    (["http://x/", "--retyr", "1"], "unknown option '--retyr' (did you mean '--retry'?)"),
    (["http://x/", "-r", "bytes=1-2"], "-r: expected byte ranges"),
    (["http://x/", "--max-redirs", "-2"], "--max-redirs: expected a whole number -1.."),
    (["http://x/", "--oauth2-bearer", "t", "-u", "a:b"], "--oauth2-bearer: choose it or -u"),
    (["http://x/", "--retry-max-time", "x"], "--retry-max-time: expected seconds"),
    (["http://x/", "-D", ""], "-D: needs a file name"),
    (["http://a/", "http://b/"], "humus-http: one URL per command, got a second: 'http://b/'"),
])
def test_bad_command_lines_exit_2_with_one_line_naming_the_flag(run, args: list[str], named: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    line = one_line_error(result.stderr)
    assert line.startswith("humus-http: ") and not line.startswith("humus-http: humus-http")
    assert named in line
    assert result.stdout == b""


# ---- Methods, output and the curl flags --------------------------------------------------------------------

def test_get_prints_the_body(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/hello?x=1"))
    assert result.returncode == 0, result.stderr
    echoed = json.loads(result.stdout)
    assert echoed["method"] == "GET" and echoed["path"] == "/hello" and echoed["query"] == "x=1"
    assert result.stderr == ""


def test_head_prints_the_status_line_and_headers(run, server: TestServer) -> None:
    server.script("/h", [{"status": 200, "headers": {"X-Answer": "42"}, "body": "ignored"}])
    result = run("head", server.url("http", "/h"))
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith("HTTP/1.1 200 OK\r\n")
    assert "x-answer: 42\r\n" in text.lower()
    assert text.endswith("\r\n\r\n")
    assert server.requests("/h")[0]["method"] == "HEAD"


@pytest.mark.parametrize("command", ["post", "put", "delete"])
def test_methods_with_a_body(run, server: TestServer, command: str) -> None:
    result = run(command, server.url("http", "/m"), "-d", "a=1")
    assert result.returncode == 0, result.stderr
    record = server.requests("/m")[0]
    assert record["method"] == command.upper()
    assert record["body_sha256"] == hashlib.sha256(b"a=1").hexdigest()
    assert header(record, "content-type") == "application/x-www-form-urlencoded"


def test_data_pieces_are_joined_with_ampersands_and_content_type_can_be_set(run, server: TestServer) -> None:
    result = run("post", server.url("http", "/d"), "-d", "a=1", "--data", "b=2", "-H", "Content-Type: text/plain")
    assert result.returncode == 0, result.stderr
    record = server.requests("/d")[0]
    assert record["body_sha256"] == hashlib.sha256(b"a=1&b=2").hexdigest()
    assert header(record, "content-type") == "text/plain"


def test_data_from_a_file_drops_newlines_but_data_binary_keeps_every_byte(run, server: TestServer,
                                                                          tmp_path: Path) -> None:
    body = tmp_path / "body.txt"
    body.write_bytes(b"line one\r\nline two\n\x00end")
    assert run("post", server.url("http", "/d"), "-d", f"@{body}").returncode == 0
    assert run("post", server.url("http", "/b"), "--data-binary", f"@{body}").returncode == 0
    assert server.requests("/d")[0]["body_sha256"] == hashlib.sha256(b"line oneline two\x00end").hexdigest()
    assert server.requests("/b")[0]["body_sha256"] == hashlib.sha256(body.read_bytes()).hexdigest()


def test_data_binary_from_stdin(run, server: TestServer) -> None:
    assert run("put", server.url("http", "/s"), "--data-binary", "@-", stdin=b"from\nstdin").returncode == 0
    assert server.requests("/s")[0]["body_sha256"] == hashlib.sha256(b"from\nstdin").hexdigest()


def test_header_flag_adds_headers_and_a_bad_value_is_refused_naming_it(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/h"), "-H", "X-One: 1", "--header", "X-Two:  two words")
    assert result.returncode == 0, result.stderr
    record = server.requests("/h")[0]
    assert header(record, "x-one") == "1" and header(record, "x-two") == "two words"
    refused = run("get", server.url("http", "/h"), "-H", "X-Evil: a\rInjected: yes")
    assert refused.returncode == 2
    assert "-H 'X-Evil'" in one_line_error(refused.stderr)
    assert len(server.requests("/h")) == 1  # nothing sent
    # The headers the client owns are refused as in every language (docs/transport.md §10.5): no smuggling.
    for owned in ("Host: evil.example", "Content-Length: 2", "Transfer-Encoding: chunked"):
        refused = run("post", server.url("http", "/h"), "-d", "x=1", "-H", owned)
        assert refused.returncode == 2, owned
        assert owned.split(":")[0] in one_line_error(refused.stderr)
    assert len(server.requests("/h")) == 1


def test_output_writes_the_body_to_a_file(run, server: TestServer, tmp_path: Path) -> None:
    server.script("/o", [{"body": "to a file\n"}])
    out = tmp_path / "out.txt"
    result = run("get", server.url("http", "/o"), "-o", str(out))
    assert result.returncode == 0 and result.stdout == b""
    assert out.read_bytes() == b"to a file\n"


def test_include_prints_status_and_headers_before_the_body(run, server: TestServer) -> None:
    server.script("/i", [{"status": 201, "headers": {"X-Made": "yes"}, "body": "made"}])
    result = run("post", server.url("http", "/i"), "-i", "-d", "x")
    assert result.returncode == 0
    head, _, body = result.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201") and b"x-made: yes" in head.lower()
    assert body == b"made"


def test_without_fail_an_error_status_is_printed_and_exits_0(run, server: TestServer) -> None:
    server.script("/404", [{"status": 404, "body": "not here"}])
    result = run("get", server.url("http", "/404"))
    assert result.returncode == 0 and result.stdout == b"not here"


@pytest.mark.parametrize("flag", ["-f", "--fail"])
def test_fail_exits_22_on_400_or_more_and_writes_no_body(run, server: TestServer, tmp_path: Path,
                                                         flag: str) -> None:
    server.script("/404", [{"status": 404, "body": "not here"}])
    out = tmp_path / "never.txt"
    result = run("get", server.url("http", "/404"), flag, "-o", str(out))
    assert result.returncode == 22
    assert "404" in one_line_error(result.stderr) and "(22)" in result.stderr
    assert not out.exists()
    server.script("/399", [{"status": 302, "body": "moved"}])  # no Location: returned as it came
    assert run("get", server.url("http", "/399"), flag).returncode == 0


@pytest.mark.parametrize("flag", ["-s", "--silent"])
def test_silent_prints_no_error_but_keeps_the_exit_status(run, flag: str) -> None:
    result = run("get", "http://127.0.0.1:1/", flag, "--retry", "0")
    assert result.returncode == 7
    assert result.stderr == ""


def test_short_flags_combine(run, server: TestServer) -> None:
    server.script("/c", [{"status": 500, "body": "boom"}])
    result = run("get", server.url("http", "/c"), "-sfi")
    assert result.returncode == 22 and result.stderr == "" and result.stdout == b""


@pytest.mark.parametrize("flag", ["-v", "--verbose"])
def test_verbose_shows_settings_request_and_response(run, server: TestServer, flag: str) -> None:
    result = run("get", server.url("http", "/v"), flag, "-H", "X-Mine: 1")
    assert result.returncode == 0
    err = result.stderr
    assert "* settings: {" in err and '"max_attempts":3' in err
    assert f"> GET {server.url('http', '/v')}" in err and "> X-Mine: 1" in err
    assert "< HTTP/1.1 200" in err and "* 200 after 1 attempt" in err
    assert json.loads(result.stdout)["path"] == "/v"


def test_metrics_prints_prometheus_text_after_the_body(run, server: TestServer) -> None:
    server.script("/m", [{"status": 503, "headers": {"Retry-After": "0"}}, {"status": 200, "body": "no newline"}])
    result = run("get", server.url("http", "/m"), "--metrics")
    assert result.returncode == 0
    body, _, metrics = result.stdout.decode().partition("\n")
    assert body == "no newline"
    labels = f'server_address="127.0.0.1",server_port="{server.port("http")}"'
    assert "# TYPE humus_retry_decisions_total counter" in metrics
    assert f'humus_retry_decisions_total{{{labels},humus_retry_decision="again"}} 1' in metrics
    assert f'humus_retry_decisions_total{{{labels},humus_retry_decision="done"}} 1' in metrics
    assert f'humus_circuit_calls_total{{{labels},humus_circuit_outcome="failure"}} 1' in metrics
    assert f'humus_circuit_state{{{labels},humus_circuit_state="closed"}} 1' in metrics
    attempt = f'{labels},http_request_method="GET"'
    assert (f'http_client_request_duration_seconds_count{{{attempt},http_response_status_code="503",'
            f'error_type="503",network_protocol_version="1.1"}} 1') in metrics
    assert (f'http_client_request_duration_seconds_count{{{attempt},http_response_status_code="200",'
            f'network_protocol_version="1.1"}} 1') in metrics


def test_metrics_with_output_leave_only_the_metrics_on_stdout(run, server: TestServer, tmp_path: Path) -> None:
    out = tmp_path / "body"
    result = run("get", server.url("http", "/x"), "--metrics", "-o", str(out))
    assert result.returncode == 0
    assert result.stdout.startswith(b"# HELP ")
    assert json.loads(out.read_bytes())["path"] == "/x"


def test_metrics_count_a_rejected_call(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "trip.json"
    settings.write_text('{"trip": {"consecutive_failures": 1}, "max_attempts": 1}')
    server.script("/down", [{"status": 503}])
    result = run("get", server.url("http", "/down"), "--settings", str(settings), "--repeat", "2", "--metrics",
                 "-s")
    assert result.returncode == 120
    text = result.stdout.decode()
    assert re.search(r'humus_circuit_calls_total\{[^}]*humus_circuit_outcome="rejected"\} 1', text)
    assert re.search(r'humus_circuit_transitions_total\{[^}]*humus_circuit_state="open"\} 1', text)


# ---- Retries, timeouts and the client's own flags ---------------------------------------------------------

@pytest.mark.parametrize(("retries", "attempts"), [("0", 1), ("2", 3)])
def test_retry_sets_the_retries_after_the_first_attempt(run, server: TestServer, retries: str,
                                                         attempts: int) -> None:
    server.script("/503", [{"status": 503, "headers": {"Retry-After": "0"}, "body": "busy"}])
    result = run("get", server.url("http", "/503"), "--retry", retries, "-v")
    assert result.returncode == 0 and result.stdout == b"busy"  # the last 503, as it came
    assert len(server.requests("/503")) == attempts
    assert f"after {attempts} attempt" in result.stderr


def test_max_time_bounds_the_whole_call(run, server: TestServer) -> None:
    # The answer comes after 4 s, within the default 5 s attempt and 10 s call: only --max-time ends it first.
    server.script("/slow", [{"delay_ms": 4000}])
    result = run("get", server.url("http", "/slow"), "--max-time", "0.3")
    assert result.returncode == 28
    assert "HUMUS_E_TIMEOUT" in one_line_error(result.stderr)


def test_attempt_timeout_bounds_each_attempt_and_the_next_one_succeeds(run, server: TestServer) -> None:
    server.script("/once-slow", [{"delay_ms": 4000}, {"body": "second"}])  # far past the 200 ms
    result = run("get", server.url("http", "/once-slow"), "--attempt-timeout", "200ms", "--trace")
    assert result.returncode == 0 and result.stdout == b"second"
    assert "trace: attempt 1: HUMUS_E_TIMEOUT" in result.stderr
    assert len(server.requests("/once-slow")) == 2


def test_attempt_timeout_on_every_attempt_exits_28(run, server: TestServer) -> None:
    server.script("/slow", [{"delay_ms": 4000}])  # far past the 150 ms
    result = run("get", server.url("http", "/slow"), "--attempt-timeout", "0.15", "--retry", "1")
    assert result.returncode == 28
    assert "after 2 attempts" in result.stderr


def test_connect_timeout_reaches_the_settings_and_is_checked_against_the_others(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/ct"), "--connect-timeout", "1.5", "-v")
    assert result.returncode == 0
    assert '"connect_timeout":"1500ms"' in result.stderr
    refused = run("get", server.url("http", "/ct"), "--connect-timeout", "8")  # over attempt_timeout (5s)
    assert refused.returncode == 2
    line = one_line_error(refused.stderr)
    assert "--connect-timeout: connect_timeout: must be <= attempt_timeout" in line
    both = run("get", server.url("http", "/ct"), "--connect-timeout", "8", "--attempt-timeout", "9s")
    assert both.returncode == 0


def test_timeouts_over_an_hour_are_refused_naming_the_flag(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/"), "--max-time", "2h")
    assert result.returncode == 2
    assert one_line_error(result.stderr).startswith("humus-http: (2) --max-time: timeout:")


def test_idempotency_key_makes_a_post_retryable(run, server: TestServer) -> None:
    steps = [{"status": 503, "headers": {"Retry-After": "0"}}, {"status": 200, "body": "done"}]
    server.script("/pay", steps)
    plain = run("post", server.url("http", "/pay"), "-d", "x")
    assert plain.returncode == 0 and len(server.requests("/pay")) == 1  # a POST without a key: one attempt
    server.reset()
    server.script("/pay", steps)
    keyed = run("post", server.url("http", "/pay"), "-d", "x", "--idempotency-key", "order-17")
    assert keyed.returncode == 0 and keyed.stdout == b"done"
    records = server.requests("/pay")
    assert len(records) == 2
    assert all(header(r, "idempotency-key") == "order-17" for r in records)


def test_inject_fault_fails_the_attempts_without_reaching_the_server(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/f"), "--inject-fault", "status:503", "--trace", "-f")
    assert result.returncode == 22  # the injected 503, retried to the limit like a real one, then --fail
    assert result.stderr.count("trace: attempt") == 3, result.stderr
    assert server.requests("/f") == []

    aborted = run("get", server.url("http", "/f"), "--inject-fault", "abort", "--retry", "0")
    assert aborted.returncode == 56  # a lost connection
    assert "humus.fault" in one_line_error(aborted.stderr)
    assert server.requests("/f") == []


def test_inject_fault_for_another_point_leaves_the_call_alone_and_is_not_sent(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/f"), "--inject-fault", "http:ledger:8443=abort",
                 "-H", "baggage: tenant=acme")
    assert result.returncode == 0, result.stderr
    [received] = server.requests("/f")
    assert header(received, "baggage") == "tenant=acme"  # the scenario stays with the client


def test_inject_fault_delay_waits_before_sending(run, server: TestServer) -> None:
    start = time.monotonic()
    result = run("get", server.url("http", "/f"), "--inject-fault", "delay:300ms")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start >= 0.3
    assert len(server.requests("/f")) == 1


def test_an_unreadable_fault_exits_2_naming_the_flag(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/f"), "--inject-fault", "explode")
    assert result.returncode == 2
    line = one_line_error(result.stderr)
    assert "--inject-fault" in line and "explode" in line
    assert server.requests("/f") == []


def test_settings_file_configures_the_client_and_flags_win(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "client.json"
    settings.write_text(json.dumps({"max_attempts": 1, "headers": {"X-From-File": "yes"}}))
    server.script("/503", [{"status": 503, "headers": {"Retry-After": "0"}}])
    assert run("get", server.url("http", "/503"), "--settings", str(settings)).returncode == 0
    records = server.requests("/503")
    assert len(records) == 1 and header(records[0], "x-from-file") == "yes"
    server.reset()
    server.script("/503", [{"status": 503, "headers": {"Retry-After": "0"}}])
    assert run("get", server.url("http", "/503"), "--settings", str(settings), "--retry", "1").returncode == 0
    assert len(server.requests("/503")) == 2


def test_settings_base_url_of_another_origin_is_refused(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "other.json"
    settings.write_text('{"base_url": "http://127.0.0.1:1"}')
    result = run("get", server.url("http", "/x"), "--settings", str(settings))
    assert result.returncode == 2
    assert "HUMUS_E_CROSS_ORIGIN" in one_line_error(result.stderr)
    assert server.requests("/x") == []


@pytest.mark.parametrize(("content", "named"), [
    ('{"timeout": "soon", "breaker": {"windw": 3}}', 'unknown key "breaker.windw" (did you mean'),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
])
def test_a_bad_settings_file_exits_78_naming_every_bad_key(run, server: TestServer, tmp_path: Path,
                                                          content: str, named: str) -> None:
    settings = tmp_path / "bad.json"
    settings.write_text(content)
    result = run("get", server.url("http", "/x"), "--settings", str(settings))
    assert result.returncode == 78
    line = one_line_error(result.stderr)
    assert f"--settings {settings}" in line and named in line
    if "soon" in content:
        assert "timeout:" in line  # every bad key at once


def test_an_unreadable_settings_file_exits_78(run, server: TestServer, tmp_path: Path) -> None:
    result = run("get", server.url("http", "/x"), "--settings", str(tmp_path / "missing.json"))
    assert result.returncode == 78
    assert "--settings: cannot read" in one_line_error(result.stderr)


def test_resolve_sends_a_name_to_an_address(run, server: TestServer) -> None:
    port = server.port("http")
    result = run("get", f"http://payments:{port}/r", "--resolve", f"payments:{port}:127.0.0.1")
    assert result.returncode == 0, result.stderr
    assert server.requests("/r")[0]["authority"] == f"payments:{port}"


def test_cacert_and_resolve_reach_https_over_http2(run, server: TestServer) -> None:
    result = run("get", server.url("https", "/tls"), *https_args(server))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["protocol"] == "2"


def test_cert_and_key_authenticate_to_the_mtls_listener(run, server: TestServer, tmp_path: Path) -> None:
    base = [server.url("mtls", "/m"), *https_args(server, "mtls")]
    separate = run("get", *base, "--cert", str(server.client_cert), "--key", str(server.client_key))
    assert separate.returncode == 0, separate.stderr
    # curl's rule: without --key, the key is read from the --cert file.
    both = tmp_path / "client-with-key.pem"
    both.write_bytes(server.client_cert.read_bytes() + server.client_key.read_bytes())
    combined = run("get", *base, "--cert", str(both))
    assert combined.returncode == 0, combined.stderr
    assert [r["client_cert"] for r in server.requests("/m")] == ["humus_http test client"] * 2


def test_repeat_makes_calls_through_one_client_and_writes_bodies_in_order(run, server: TestServer) -> None:
    server.script("/n", [{"body": "1"}, {"body": "2"}, {"body": "3"}])
    result = run("get", server.url("http", "/n"), "--repeat", "3", "--trace")
    assert result.returncode == 0 and result.stdout == b"123"
    assert len(server.requests("/n")) == 3
    assert "trace: call 3 of 3: 200" in result.stderr
    assert len({r["connection"] for r in server.requests("/n")}) == 1  # one client: the connection is reused


def test_concurrency_runs_calls_at_once(run, server: TestServer) -> None:
    # Each answer is held 2 s: four calls that overlap need four HTTP/1.1 connections, where one after another
    # reuse one (as --repeat alone does). Counted on the server, not timed.
    server.script("/wait", [{"delay_ms": 2000, "body": "x"}])
    result = run("get", server.url("http", "/wait"), "--repeat", "4", "--concurrency", "4")
    assert result.returncode == 0 and result.stdout == b"xxxx"
    records = server.requests("/wait")
    assert len(records) == 4 and len({r["connection"] for r in records}) == 4


# ---- Exit statuses -----------------------------------------------------------------------------------------

def test_exit_3_for_a_malformed_url(run) -> None:
    for url in ("ftp://example/", "http://", "not-a-url"):
        result = run("get", url)
        assert result.returncode == 3, url
        assert f"URL '{url}'" in one_line_error(result.stderr)


def test_exit_6_when_the_name_does_not_resolve(run) -> None:
    result = run("get", "http://no-such-host.invalid/", "--retry", "0")
    assert result.returncode == 6
    assert "HUMUS_E_RESOLVE" in one_line_error(result.stderr)


def test_exit_7_when_nothing_listens(run) -> None:
    result = run("get", "http://127.0.0.1:1/", "--retry", "0")
    assert result.returncode == 7
    assert "HUMUS_E_CONNECT" in one_line_error(result.stderr)


# F52
def test_exit_8_when_the_server_breaks_http(run, server: TestServer) -> None:
    server.script("/dup", [{"duplicate_content_length": True, "body": "hello"}])
    result = run("get", server.url("http", "/dup"), "--retry", "0")
    assert result.returncode == 8
    assert "HUMUS_E_PROTOCOL" in one_line_error(result.stderr)


# F91
def test_exit_16_when_http2_streams_are_never_processed(run, server: TestServer) -> None:
    server.script("/ga", [{"goaway_unprocessed": True}])
    result = run("get", server.url("https", "/ga"), *https_args(server), "--retry", "0")
    assert result.returncode == 16
    assert "HUMUS_E_STREAM_REFUSED" in one_line_error(result.stderr)


def test_exit_23_when_the_output_cannot_be_written(run, server: TestServer, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "out"
    result = run("get", server.url("http", "/x"), "-o", str(target))
    assert result.returncode == 23
    assert f"-o {target}: cannot write" in one_line_error(result.stderr)


@pytest.mark.parametrize("flag", ["-d", "--data-binary"])
def test_exit_26_when_the_body_file_cannot_be_read(run, server: TestServer, tmp_path: Path, flag: str) -> None:
    result = run("post", server.url("http", "/x"), flag, f"@{tmp_path / 'missing'}")
    assert result.returncode == 26
    assert f"{flag} @{tmp_path / 'missing'}: cannot read" in one_line_error(result.stderr)
    assert server.requests("/x") == []


# F26
def test_exit_35_when_the_handshake_fails_for_want_of_a_client_certificate(run, server: TestServer) -> None:
    result = run("get", server.url("mtls", "/m"), *https_args(server, "mtls"), "--retry", "0")
    assert result.returncode == 35
    assert "HUMUS_E_TLS_CLIENT_CERT" in one_line_error(result.stderr)


# F24
def test_exit_35_when_the_server_offers_only_old_tls(run, server: TestServer) -> None:
    if not server.port("tls11"):
        pytest.skip("this machine's OpenSSL cannot serve TLS 1.1: " + "; ".join(server.ready.get("notes", [])))
    result = run("get", server.url("tls11", "/old"), *https_args(server, "tls11"), "--retry", "0")
    assert result.returncode == 35
    assert "HUMUS_E_TLS" in one_line_error(result.stderr)


def test_exit_56_when_the_connection_is_reset(run, server: TestServer) -> None:
    server.script("/reset", [{"reset": "before_headers"}])
    result = run("get", server.url("http", "/reset"), "--retry", "0")
    assert result.returncode == 56
    assert "HUMUS_E_CONNECTION_LOST" in one_line_error(result.stderr)


def test_exit_58_when_the_client_certificate_cannot_be_read(run, server: TestServer, tmp_path: Path) -> None:
    result = run("get", server.url("mtls", "/m"), *https_args(server, "mtls"), "--cert", str(tmp_path / "none.pem"))
    assert result.returncode == 58
    assert one_line_error(result.stderr).startswith("humus-http: (58) --cert: ")
    key = run("get", server.url("mtls", "/m"), *https_args(server, "mtls"), "--cert", str(server.client_cert),
              "--key", str(tmp_path / "none.key"))
    assert key.returncode == 58
    assert one_line_error(key.stderr).startswith("humus-http: (58) --key: ")


# No CA given: the system's roots, which SSL_CERT_FILE (OpenSSL's convention) names when set
# (src/transport/system_roots.h); the test CA is trusted through it and not without it.
def test_ssl_cert_file_names_the_system_roots_when_no_ca_is_given(cli: Path, server: TestServer) -> None:
    args = [str(cli), "get", server.url("https", "/roots"), "--resolve", server.resolve("https"), "--retry", "0"]
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    untrusted = subprocess.run(args, capture_output=True, env=env, timeout=60, check=False)
    assert untrusted.returncode == 60, untrusted.stderr
    trusted = subprocess.run(args, capture_output=True, env={**env, "SSL_CERT_FILE": str(server.ca_file)},
                             timeout=60, check=False)
    assert trusted.returncode == 0, trusted.stderr


@pytest.mark.parametrize("listener", ["untrusted", "cn_only"])
def test_exit_60_when_the_server_certificate_is_refused(run, server: TestServer, listener: str) -> None:
    result = run("get", server.url(listener, "/"), *https_args(server, listener), "--retry", "0")
    assert result.returncode == 60
    assert "HUMUS_E_TLS" in one_line_error(result.stderr)


def test_exit_60_for_a_certificate_of_another_name(run, server: TestServer) -> None:
    port = server.port("https")
    result = run("get", f"https://ledger:{port}/", "--resolve", f"ledger:{port}:127.0.0.1", "--cacert",
                 str(server.ca_file), "--retry", "0")
    assert result.returncode == 60


# S4
def test_exit_77_when_the_ca_file_cannot_be_read(run, server: TestServer, tmp_path: Path) -> None:
    result = run("get", server.url("https", "/"), "--resolve", server.resolve("https"), "--cacert",
                 str(tmp_path / "none.pem"))
    assert result.returncode == 77
    assert one_line_error(result.stderr).startswith("humus-http: (77) --cacert: ")


def test_cacert_on_a_plain_http_url_is_refused_naming_it(run, server: TestServer) -> None:
    result = run("get", server.url("http", "/"), "--cacert", str(server.ca_file))
    assert result.returncode == 2
    assert "--cacert" in one_line_error(result.stderr)


def test_exit_120_when_the_breaker_opens_before_a_retry(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "trip.json"
    settings.write_text('{"trip": {"consecutive_failures": 1}, "breaker": {"open_for": "30s"}}')
    server.script("/down", [{"reset": "before_headers"}])
    result = run("get", server.url("http", "/down"), "--settings", str(settings), "--retry", "2")
    assert result.returncode == 120
    line = one_line_error(result.stderr)
    assert "HUMUS_E_REJECTED" in line and "nothing was sent" in line and "after 1 attempt" in line
    assert re.search(r"stays open \d+ ms more", line)
    assert len(server.requests("/down")) == 1


def test_exit_120_for_later_calls_once_the_breaker_is_open(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "trip.json"
    settings.write_text('{"trip": {"consecutive_failures": 2}, "max_attempts": 1}')
    server.script("/down", [{"status": 503}])
    result = run("get", server.url("http", "/down"), "--settings", str(settings), "--repeat", "4", "-s")
    assert result.returncode == 120  # the last call's
    assert len(server.requests("/down")) == 2


def test_exit_121_when_the_bulkhead_is_full(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "bulkhead.json"
    settings.write_text('{"bulkhead": {"max_concurrent": 1, "wait": "0s"}}')
    server.script("/hold", [{"delay_ms": 3000, "body": "held"}])  # held far longer than the 2 calls take to start
    result = run("get", server.url("http", "/hold"), "--settings", str(settings), "--repeat", "2",
                 "--concurrency", "2")
    assert result.returncode == 121
    line = one_line_error(result.stderr)
    assert "HUMUS_E_BULKHEAD_FULL" in line and "after 0 attempts" in line
    assert result.stdout == b"held"  # the other call's body
    assert len(server.requests("/hold")) == 1


# ---- Installed --------------------------------------------------------------------------------------------

def test_the_installed_binary_finds_its_library(cli: Path, tmp_path: Path) -> None:
    build = cli.parent.parent
    if not (build / "CMakeCache.txt").exists():
        pytest.skip(f"{cli} is not in a CMake build tree")
    cmake = shutil.which("cmake")
    assert cmake, "cmake not found"
    subprocess.run([cmake, "--install", str(build), "--prefix", str(tmp_path)], check=True, capture_output=True,
                   timeout=120)
    installed = tmp_path / "bin" / "humus-http"
    assert installed.exists()
    result = subprocess.run([str(installed), "--version"], capture_output=True, timeout=30, check=False,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"humus-http ")


def test_arguments_that_are_not_utf8_end_in_an_exit_status_not_an_abort(cli) -> None:
    # The JSON the CLI builds from its arguments threw on invalid UTF-8 (std::terminate, SIGABRT).
    result = subprocess.run([str(cli), "get", "http://127.0.0.1:1/", "--retry", "0",
                             "--resolve", b"a\xff:80:127.0.0.1:1"], capture_output=True, timeout=60)
    assert result.returncode > 0, result.stderr
    assert b"terminate" not in result.stderr


# ---- curl's shape: no command, and the flags curl users reach for -------------------------------------------

def test_a_url_alone_is_a_get_and_a_body_makes_a_post_as_in_curl(run, server: TestServer) -> None:
    result = run(server.url("http", "/plain?q=1"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["method"] == "GET"
    posted = run("-d", "a=1", server.url("http", "/plain"))
    assert posted.returncode == 0, posted.stderr
    record = server.requests("/plain")[1]
    assert record["method"] == "POST" and record["body_sha256"] == hashlib.sha256(b"a=1").hexdigest()
    assert header(record, "content-type") == "application/x-www-form-urlencoded"


@pytest.mark.parametrize(("args", "method"), [
    (["-X", "PATCH", "-d", "a=1"], "PATCH"), (["--request", "OPTIONS"], "OPTIONS"),
    (["-X", "DELETE"], "DELETE"), (["patch", "-d", "a=1"], "PATCH"), (["options"], "OPTIONS"),
    (["post", "-X", "PUT", "-d", "a=1"], "PUT"), (["-XPATCH", "--json", "{}"], "PATCH"),
])
def test_request_and_the_patch_and_options_commands_name_the_method(run, server: TestServer, args: list[str],
                                                                    method: str) -> None:
    command = args[:1] if args[0] in ("patch", "options", "post") else []
    result = run(*command, server.url("http", "/x"), *args[len(command):])
    assert result.returncode == 0, result.stderr
    record = server.requests("/x")[0]
    assert record["method"] == method
    if "-d" in args:
        assert record["body_sha256"] == hashlib.sha256(b"a=1").hexdigest()


@pytest.mark.parametrize("flag", ["-I", "--head"])
def test_head_flag_makes_a_head_and_prints_the_headers(run, server: TestServer, flag: str) -> None:
    server.script("/h", [{"headers": {"X-Answer": "42"}, "body": "ignored"}])
    result = run(flag, server.url("http", "/h"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"HTTP/1.1 200 OK\r\n") and b"x-answer: 42" in result.stdout.lower()
    assert result.stdout.endswith(b"\r\n\r\n")
    assert server.requests("/h")[0]["method"] == "HEAD"


@pytest.mark.parametrize("location", [[], ["-L"], ["--location"]])
def test_same_origin_redirects_are_followed_with_or_without_location(run, server: TestServer,
                                                                     location: list[str]) -> None:
    server.script("/old", [{"status": 302, "headers": [["Location", "/new"]]}])
    server.script("/new", [{"body": "arrived"}])
    result = run(server.url("http", "/old"), *location, "-w", "\\n%{http_code} %{url_effective}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"arrived\n200 {server.url('http', '/new')}".encode()


def test_location_never_follows_another_origin(run, server: TestServer) -> None:
    elsewhere = f"https://payments:{server.port('https')}/y"
    server.script("/away", [{"status": 301, "headers": [["Location", elsewhere]], "body": "moved"}])
    result = run("-L", "-i", server.url("http", "/away"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"HTTP/1.1 301") and elsewhere.encode() in result.stdout
    assert server.requests("/y") == []


@pytest.mark.parametrize("flag", ["-w", "--write-out"])
def test_write_out_prints_curls_variables_and_the_clients(run, server: TestServer, flag: str) -> None:
    server.script("/w", [{"status": 503, "headers": {"Retry-After": "0"}}, {"status": 201, "body": "hello"}])
    fmt = "\\n%{http_code}|%{response_code}|%{num_retries}|%{attempts}|%{size_download}|%{exitcode}|" \
          "%{breaker_state}|%{url_effective}|%{time_total}|100%%\\t.\\n"
    result = run(server.url("http", "/w"), flag, fmt)
    assert result.returncode == 0, result.stderr
    body, line, end = result.stdout.decode().split("\n")
    assert body == "hello" and end == ""
    fields = line.split("|")
    assert fields[:8] == ["201", "201", "1", "2", "5", "0", "closed", server.url("http", "/w")], fields
    assert re.fullmatch(r"\d+\.\d{6}", fields[8]) and 0 < float(fields[8]) < 10
    assert fields[9] == "100%\t."


def test_write_out_after_a_failure_gives_000_and_the_exit_status(run, server: TestServer) -> None:
    result = run("http://127.0.0.1:1/", "--retry", "0", "-s", "-w", "%{http_code} %{exitcode} %{attempts}")
    assert result.returncode == 7
    assert result.stdout == b"000 7 1"
    server.script("/404", [{"status": 404, "body": "no"}])
    failed = run(server.url("http", "/404"), "-f", "-s", "-w", "%{http_code} %{exitcode}", "--repeat", "2")
    assert failed.returncode == 22 and failed.stdout == b"404 22404 22"


def test_json_posts_with_json_content_type_and_accept(run, server: TestServer, tmp_path: Path) -> None:
    more = tmp_path / "more.json"
    more.write_text(', "b": 2}')
    result = run("--json", '{"a": 1', "--json", f"@{more}", server.url("http", "/j"))
    assert result.returncode == 0, result.stderr
    record = server.requests("/j")[0]
    assert record["method"] == "POST"
    assert record["body_sha256"] == hashlib.sha256(b'{"a": 1, "b": 2}').hexdigest()
    assert header(record, "content-type") == "application/json" and header(record, "accept") == "application/json"
    put = run("put", server.url("http", "/j"), "--json", "[]", "-H", "Accept: text/plain")
    assert put.returncode == 0
    record = server.requests("/j")[1]
    assert record["method"] == "PUT" and header(record, "accept") == "text/plain"


@pytest.mark.parametrize("flag", ["-u", "--user"])
def test_user_sends_basic_auth_and_never_prints_the_password(run, server: TestServer, flag: str) -> None:
    secret_b64 = "YWxpY2U6czNjcmV0LXB3"  # alice:s3cret-pw
    result = run(server.url("http", "/a"), flag, "alice:s3cret-pw", "-v", "--trace")
    assert result.returncode == 0, result.stderr
    assert header(server.requests("/a")[0], "authorization") == f"Basic {secret_b64}"
    assert "> Authorization: Basic (hidden)" in result.stderr
    assert "s3cret" not in result.stderr and secret_b64 not in result.stderr
    failed = run("http://127.0.0.1:1/", flag, "alice:s3cret-pw", "-v", "--trace", "--retry", "0")
    assert failed.returncode == 7
    assert "s3cret" not in failed.stderr and secret_b64 not in failed.stderr


def test_a_credential_in_the_url_is_refused_and_never_echoed(run, server: TestServer, tmp_path: Path) -> None:
    url = server.url("http", "/c").replace("://", "://alice:s3cret-pw@")
    settings = tmp_path / "s.json"  # the base_url is fine: the request's URL is the one refused
    settings.write_text(json.dumps({"base_url": server.url("http", "")}))
    for args in ([url], ["get", url, "-v", "--trace"], [url, "-w", "%{url_effective}"],
                 [url, "--settings", str(settings), "-v"]):
        result = run(*args)
        assert result.returncode == 3, result.stderr
        assert "s3cret" not in result.stderr and "alice" not in result.stderr
        assert "***@127.0.0.1" in one_line_error(result.stderr) and "-u" in result.stderr
    assert server.requests("/c") == []


@pytest.mark.parametrize("flag", ["-A", "--user-agent"])
def test_user_agent_sets_the_header_and_a_header_flag_wins(run, server: TestServer, flag: str) -> None:
    assert run(server.url("http", "/ua"), flag, "tool/1.0").returncode == 0
    assert run(server.url("http", "/ua"), flag, "tool/1.0", "-H", "User-Agent: mine").returncode == 0
    records = server.requests("/ua")
    assert header(records[0], "user-agent") == "tool/1.0" and header(records[1], "user-agent") == "mine"


@pytest.mark.parametrize("flag", ["-F", "--form"])
def test_form_sends_multipart_parts_with_filename_and_content_type(run, server: TestServer, tmp_path: Path,
                                                                   flag: str) -> None:
    upload = tmp_path / "report.json"
    upload.write_bytes(b'{"ok": true}\n')
    text = tmp_path / "note.txt"
    text.write_text("from a file")
    result = run(server.url("http", "/f"), flag, "name=value one", flag, f"doc=@{upload}",
                 flag, f"raw=@{upload};type=text/x-custom;filename=other.bin", flag, f"note=<{text}")
    assert result.returncode == 0, result.stderr
    record = server.requests("/f")[0]
    assert record["method"] == "POST"
    content_type = header(record, "content-type") or ""
    assert content_type.startswith("multipart/form-data; boundary=")
    boundary = content_type.split("boundary=", 1)[1]
    parts = [
        b'Content-Disposition: form-data; name="name"\r\n\r\nvalue one',
        b'Content-Disposition: form-data; name="doc"; filename="report.json"\r\n'
        b'Content-Type: application/json\r\n\r\n{"ok": true}\n',
        b'Content-Disposition: form-data; name="raw"; filename="other.bin"\r\n'
        b'Content-Type: text/x-custom\r\n\r\n{"ok": true}\n',
        b'Content-Disposition: form-data; name="note"\r\n\r\nfrom a file',
    ]
    expected = b"".join(b"--" + boundary.encode() + b"\r\n" + p + b"\r\n" for p in parts)
    expected += b"--" + boundary.encode() + b"--\r\n"
    assert record["body_sha256"] == hashlib.sha256(expected).hexdigest()
    missing = run(server.url("http", "/f"), flag, f"doc=@{tmp_path / 'absent'}")
    assert missing.returncode == 26 and "-F doc=@" in one_line_error(missing.stderr)


@pytest.mark.parametrize("flag", ["-G", "--get"])
def test_get_moves_the_data_into_the_query_string(run, server: TestServer, flag: str) -> None:
    result = run(server.url("http", "/g?x=1"), flag, "-d", "a=1", "--data-urlencode", "q=a b&c")
    assert result.returncode == 0, result.stderr
    record = server.requests("/g")[0]
    assert record["method"] == "GET" and record["query"] == "x=1&a=1&q=a%20b%26c" and record["body_size"] == 0
    head = run(server.url("http", "/g"), flag, "-I", "-d", "only")
    assert head.returncode == 0
    assert server.requests("/g")[1]["method"] == "HEAD" and server.requests("/g")[1]["query"] == "only"


def test_data_urlencode_encodes_as_curl_does(run, server: TestServer, tmp_path: Path) -> None:
    file = tmp_path / "v.txt"
    file.write_text("x/y z")
    result = run(server.url("http", "/u"), "--data-urlencode", "plain é", "--data-urlencode", "=a=b",
                 "--data-urlencode", "k=1+1", "--data-urlencode", f"@{file}", "--data-urlencode", f"f@{file}")
    assert result.returncode == 0, result.stderr
    record = server.requests("/u")[0]
    assert record["method"] == "POST"
    expected = b"plain%20%C3%A9&a%3Db&k=1%2B1&x%2Fy%20z&f=x%2Fy%20z"
    assert record["body_sha256"] == hashlib.sha256(expected).hexdigest()
    assert header(record, "content-type") == "application/x-www-form-urlencoded"


@pytest.mark.parametrize("flag", ["-O", "--remote-name"])
def test_remote_name_writes_to_the_urls_last_segment(cli: Path, server: TestServer, tmp_path: Path,
                                                     flag: str) -> None:
    server.script("/files/report.csv", [{"body": "a,b\n"}])
    done = subprocess.run([str(cli), flag, server.url("http", "/files/report.csv?v=2")], cwd=tmp_path,
                          capture_output=True, check=False)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert (tmp_path / "report.csv").read_bytes() == b"a,b\n"
    nameless = subprocess.run([str(cli), flag, server.url("http", "/files/")], cwd=tmp_path,
                              capture_output=True, text=True, check=False)
    assert nameless.returncode == 23 and "-O: the URL" in nameless.stderr


@pytest.mark.parametrize("flag", ["-D", "--dump-header"])
def test_dump_header_writes_the_headers_to_a_file_or_stdout(run, server: TestServer, tmp_path: Path,
                                                            flag: str) -> None:
    server.script("/d", [{"status": 202, "headers": {"X-Made": "yes"}, "body": "body"}])
    dump = tmp_path / "headers.txt"
    result = run(server.url("http", "/d"), flag, str(dump))
    assert result.returncode == 0 and result.stdout == b"body"
    text = dump.read_bytes()
    assert text.startswith(b"HTTP/1.1 202 Accepted\r\n") and b"x-made: yes\r\n" in text.lower()
    assert text.endswith(b"\r\n\r\n")
    to_stdout = run(server.url("http", "/d"), flag, "-")
    head, _, body = to_stdout.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 202") and body == b"body"
    unwritable = run(server.url("http", "/d"), flag, str(tmp_path / "no" / "dir"))
    assert unwritable.returncode == 23 and "-D " in one_line_error(unwritable.stderr)


@pytest.mark.parametrize(("flag", "protocol"), [("--http1.1", "1.1"), ("--http2", "2")])
def test_http_version_flags_set_the_protocol(run, server: TestServer, flag: str, protocol: str) -> None:
    result = run(f"https://payments:{server.port('https')}/p", *https_args(server), flag, "-v")
    assert result.returncode == 0, result.stderr
    assert server.requests("/p")[0]["protocol"] == protocol
    assert f'"http_version":"{protocol}"' in result.stderr


def test_http2_on_plain_http_is_refused_naming_the_flag(run, server: TestServer) -> None:
    result = run(server.url("http", "/p"), "--http2")
    assert result.returncode == 2
    line = one_line_error(result.stderr)
    assert line.startswith("humus-http: (2) --http2, URL ") and "needs an https" in line


def test_fail_with_body_prints_the_body_and_exits_22(run, server: TestServer) -> None:
    server.script("/404", [{"status": 404, "body": "not here"}])
    result = run(server.url("http", "/404"), "--fail-with-body")
    assert result.returncode == 22 and result.stdout == b"not here"
    assert "404" in one_line_error(result.stderr)
    server.script("/ok", [{"body": "fine"}])
    assert run(server.url("http", "/ok"), "--fail-with-body").returncode == 0


def test_retry_delay_sets_the_backoff(run, server: TestServer) -> None:
    server.script("/rd", [{"status": 503}, {"body": "ok"}])
    result = run(server.url("http", "/rd"), "--retry-delay", "0.05", "-v")
    assert result.returncode == 0 and result.stdout == b"ok"
    assert '"backoff_base":"50ms"' in result.stderr and '"backoff_max":"50ms"' in result.stderr
    assert len(server.requests("/rd")) == 2


def test_retry_max_time_bounds_the_retries(run, server: TestServer) -> None:
    server.script("/slow", [{"delay_ms": 4000}])  # every attempt times out (200 ms)
    result = run(server.url("http", "/slow"), "--retry", "9", "--attempt-timeout", "0.2", "--retry-max-time", "0.5")
    assert result.returncode == 28
    assert len(server.requests("/slow")) < 5  # not the 10 attempts --retry 9 allows: cut by --retry-max-time


def test_retry_all_errors_retries_a_post_without_a_key(run, server: TestServer) -> None:
    steps = [{"status": 503, "headers": {"Retry-After": "0"}}, {"body": "second"}]
    server.script("/p", steps)
    assert run(server.url("http", "/p"), "-d", "x").stdout == b""
    assert len(server.requests("/p")) == 1
    server.reset()
    server.script("/p", steps)
    result = run(server.url("http", "/p"), "-d", "x", "--retry-all-errors")
    assert result.returncode == 0 and result.stdout == b"second"
    assert len(server.requests("/p")) == 2
