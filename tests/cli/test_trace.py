"""humus-http --trace and --trace-json: each call's decision trace as the library records it (docs/trace.md),
a line per attempt for a pipe, a table on a terminal, and the JSON as the C ABI gives it."""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from server_harness import TestServer


@pytest.fixture(autouse=True)
def clean(server: TestServer) -> None:
    server.reset()


def attempt_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("trace: attempt ")]


def json_traces(stderr: str) -> list[list[dict[str, Any]]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("[")]


def test_a_503_503_200_call_is_traced_attempt_by_attempt(run, server: TestServer) -> None:
    server.script("/t", [{"status": 503}, {"status": 503}, {"status": 200, "body": "ok"}])
    result = run("get", server.url("http", "/t"), "--trace", "--retry-delay", "10ms")
    assert result.returncode == 0 and result.stdout == b"ok", result.stderr
    err = result.stderr
    assert "trace: client for http://127.0.0.1:" in err
    lines = attempt_lines(err)
    assert len(lines) == 3, err
    for n, line in enumerate(lines[:2], start=1):
        assert re.match(rf"trace: attempt {n}: 503 in \d+\.\d{{3}}s \(sent 1\) \| classified: again, failure \| "
                        r"breaker closed -> closed, budget \d+\.\d -> \d+\.\d \| decision: again, "
                        r"wait \d+\.\d{3}s \((backoff|capped)\), \d+\.\d{3}s left$", line), line
    assert re.match(r"trace: attempt 3: 200 in .* \| classified: done, success \| .* \| decision: done, "
                    r"\d+\.\d{3}s left$", lines[2]), lines[2]
    assert re.search(r"trace: call 1 of 1: 200 after 3 attempts in \d+ ms \| after it: breaker closed "
                     r"\(1 success, 2 failures.*budget \d+\.\d of 10 tokens", err)
    assert err.index("trace: attempt 3") < err.index("trace: call 1 of 1")


def test_trace_json_is_the_librarys_trace_one_array_per_call(run, server: TestServer) -> None:
    server.script("/t", [{"status": 503, "headers": {"Retry-After": "1"}}, {"status": 503},
                         {"status": 200, "body": "ok"}])
    result = run("get", server.url("http", "/t"), "--trace-json", "--repeat", "2")
    assert result.returncode == 0, result.stderr
    first, second = json_traces(result.stderr)
    assert [r["status"] for r in first] == [503, 503, 200]
    assert [r["decision"] for r in first] == ["again", "again", "done"]
    assert [r["attempt"] for r in first] == [1, 2, 3]
    assert [r["resend"] for r in first] == [False, True, True]
    assert sum(r["wire_sends"] for r in first) == 3 == len(server.requests("/t")) - 1
    # The server's Retry-After (1s) outlasts the backoff's draw (under 10ms): it sets the wait.
    assert first[0]["retry_after"] == 1.0 and first[0]["retry_after_source"] == "header"
    assert first[0]["wait_source"] == "retry_after" and first[0]["wait"] == 1.0
    assert first[2]["wait_source"] == "none" and first[2]["wait"] == 0
    assert first[0]["budget_before"] > first[0]["budget_after"]
    assert [r["status"] for r in second] == [200]  # the script's last step repeats
    assert "trace: attempt" not in result.stderr  # --trace-json alone prints only the JSON


def test_a_rejected_call_shows_the_breaker_turning_it_away(run, server: TestServer, tmp_path: Path) -> None:
    settings = tmp_path / "trip.json"
    settings.write_text('{"trip": {"consecutive_failures": 1}, "breaker": {"open_for": "30s"}}')
    server.script("/down", [{"reset": "before_headers"}])
    result = run("get", server.url("http", "/down"), "--settings", str(settings), "--trace", "--trace-json")
    assert result.returncode == 120
    err = result.stderr
    lines = attempt_lines(err)
    assert len(lines) == 2, err
    assert lines[0].startswith("trace: attempt 1: HUMUS_E_CONNECTION_LOST in ")
    assert "breaker closed -> open" in lines[0] and "decision: again, wait" in lines[0]
    assert re.match(r"trace: attempt 2: HUMUS_E_REJECTED in .*\(sent 0\) \| classified: - \| breaker open -> -, "
                    r".* \| decision: rejected, ", lines[1]), lines[1]
    assert re.search(r"trace: breaker closed -> open: circuit for http://127\.0\.0\.1:\d+: closed -> open", err)
    assert re.search(r"trace: call 1 of 1: HUMUS_E_REJECTED after 1 attempt in \d+ ms \| after it: breaker open",
                     err)
    (records,) = json_traces(err)
    assert [r["decision"] for r in records] == ["again", "rejected"]
    assert records[1]["wire_sends"] == 0 and records[1]["status"] is None
    assert records[1]["breaker"]["state"] == "open"
    assert len(server.requests("/down")) == 1


def test_the_last_attempt_of_an_exhausted_call_says_exhausted(run, server: TestServer) -> None:
    server.script("/busy", [{"status": 503}])
    result = run("get", server.url("http", "/busy"), "--trace", "--retry", "1", "--retry-delay", "10ms")
    assert result.returncode == 0
    lines = attempt_lines(result.stderr)
    assert len(lines) == 2
    assert "decision: again" in lines[0]
    assert "decision: exhausted" in lines[1] and "wait" not in lines[1].split("decision:")[1]


def test_a_redirect_hop_is_named_in_the_trace(run, server: TestServer) -> None:
    server.script("/old", [{"status": 302, "headers": [["Location", "/new"]]}])
    server.script("/new", [{"body": "arrived"}])
    result = run(server.url("http", "/old"), "--trace")
    assert result.returncode == 0
    lines = attempt_lines(result.stderr)
    assert lines[0].startswith("trace: attempt 1: 302 ")
    assert lines[1].startswith(f"trace: attempt 2 (redirect 1, GET {server.url('http', '/new')}): 200 ")


def test_each_call_of_concurrent_calls_gets_its_own_trace(run, server: TestServer) -> None:
    server.script("/c", [{"body": "x"}])
    result = run("get", server.url("http", "/c"), "--trace", "--repeat", "3", "--concurrency", "3")
    assert result.returncode == 0
    assert len(attempt_lines(result.stderr)) == 3
    for n in (1, 2, 3):
        assert f"trace: call {n} of 3: 200 after 1 attempt" in result.stderr


def test_on_a_terminal_the_trace_is_a_table(cli: Path, server: TestServer) -> None:
    server.script("/t", [{"status": 503}, {"status": 200, "body": "ok"}])
    main, child = pty.openpty()
    try:
        result = subprocess.run([str(cli), server.url("http", "/t"), "--trace", "--retry-delay", "10ms"],
                                stdout=subprocess.PIPE, stderr=child, timeout=60, check=False)
        os.close(child)
        child = -1
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other end is closed and everything has been read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if child >= 0:
            os.close(child)
        os.close(main)
    assert result.returncode == 0 and result.stdout == b"ok"
    err = b"".join(chunks).decode().replace("\r\n", "\n")
    rows = [line for line in err.splitlines() if line.startswith("  ")]
    assert len(rows) == 3, err
    header = rows[0].split()
    assert header[:4] == ["#", "request", "result", "sent"] and "decision" in header and "wait" in header
    assert re.match(rf"  1 +GET {re.escape(server.url('http', '/t'))} +503 +1 ", rows[1]), rows[1]
    assert " again " in rows[1] and " done " in rows[2]
    # Aligned: every row's "decision" column starts where the header's does.
    column = rows[0].index("decision")
    assert rows[1][column:].startswith("again") and rows[2][column:].startswith("done")
    assert "trace: attempt" not in err
