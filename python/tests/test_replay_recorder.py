"""humus_http.replay.TrafficRecorder (docs/replay.md §21.6): live calls to the test server become traffic lines
in the format humus-http replay reads (§21.1), one per attempt, retries marked as resends."""
from __future__ import annotations

import io
import json
import socket
from collections.abc import Callable
from pathlib import Path

import humus_http
from humus_http.replay import TrafficRecorder
from server_harness import TestServer

KEYS = {"time", "method", "status", "error", "latency", "retry_after", "resend"}


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_retried_call_writes_one_line_per_attempt(server: TestServer, make_runtime: Callable[..., humus_http.Runtime],
                                                    make_client: Callable[..., humus_http.Client], path: str,
                                                    tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.jsonl"
    with TrafficRecorder(traffic) as recorder:
        client = make_client(runtime=make_runtime(span_sink=recorder))
        server.script(path, [{"status": 503}, {"status": 503}, {"status": 200, "body": "ok"}])
        assert client.get(path).status_code == 200
        server.script(path + "/post", [{"status": 201}])
        assert client.post(path + "/post", content=b"x").status_code == 201
        client.close()
    lines = read(traffic)
    assert recorder.lines == 4
    assert [(line["method"], line["status"], line.get("resend", 0)) for line in lines] == [
        ("GET", 503, 0), ("GET", 503, 1), ("GET", 200, 2), ("POST", 201, 0)]
    assert all(set(line) <= KEYS and "error" not in line for line in lines)
    times = [line["time"] for line in lines]
    assert times == sorted(times) and times[0] >= 0
    assert all(isinstance(line["latency"], float | int) and line["latency"] >= 0 for line in lines)


def test_a_refused_connection_is_an_error_line(make_runtime: Callable[..., humus_http.Runtime]) -> None:
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = io.StringIO()
    recorder = TrafficRecorder(out, origin_unix_ns=0)
    runtime = make_runtime(span_sink=recorder)
    with humus_http.Client(f"http://127.0.0.1:{port}", runtime=runtime, max_attempts=1) as client:
        try:
            client.get("/")
        except humus_http.UpstreamError:
            pass
    recorder.close()
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert line["error"] == "connect" and line["method"] == "GET" and "status" not in line
    assert line["time"] > 1e9  # the origin was the epoch: the span's own calendar time
    assert not out.closed  # a file object given is the caller's to close


def test_a_rejected_attempt_is_recorded_and_a_closed_recorder_writes_nothing(
        server: TestServer, make_runtime: Callable[..., humus_http.Runtime],
        make_client: Callable[..., humus_http.Client], path: str) -> None:
    out = io.StringIO()
    recorder = TrafficRecorder(out)
    client = make_client(runtime=make_runtime(span_sink=recorder), max_attempts=1,
                         trip=humus_http.Trip(consecutive_failures=1))
    server.script(path, [{"status": 503}])
    assert client.get(path).status_code == 503
    try:
        client.get(path)
    except humus_http.CircuitOpenError:
        pass
    lines = [json.loads(text) for text in out.getvalue().splitlines()]
    assert [(line.get("status"), line.get("error")) for line in lines] == [(503, None), (None, "rejected")]
    recorder.close()
    try:
        client.get(path)
    except humus_http.CircuitOpenError:
        pass
    assert recorder.lines == 2 and len(out.getvalue().splitlines()) == 2
