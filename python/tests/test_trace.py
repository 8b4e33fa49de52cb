"""The decision trace (docs/trace.md §20) through the Python API: ``Response.trace`` and ``UpstreamError.trace``,
on the virtual clock with the mock transport (where a seed pins every decision) and against the real test server
(where the trace says what reached the wire)."""
from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import humus_http
import pytest
from humus_http import AttemptRecord, BreakerPosition, MockReply, Runtime

BASE = "http://payments:8080"


def flaky(failures: int) -> Callable[[humus_http.MockRequest], MockReply]:
    """503 with Retry-After: 1 `failures` times, then 200."""
    seen = [0]

    def handler(request: humus_http.MockRequest) -> MockReply:
        seen[0] += 1
        if seen[0] <= failures:
            return MockReply(status=503, headers={"Retry-After": "1"})
        return MockReply(status=200, body="ok")
    return handler


def test_a_503_503_200_call_tells_each_decision_and_its_wait() -> None:
    runtime = Runtime(clock="virtual", seed=3, mock=flaky(2))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=3, max_retry_after=5, timeout=30) as client:
        response = client.get("/charges")
    assert response.status_code == 200
    trace = response.trace
    assert [type(r) for r in trace] == [AttemptRecord] * 3
    assert [r.status for r in trace] == [503, 503, 200]
    assert [r.decision for r in trace] == ["again", "again", "done"]
    assert [r.wait for r in trace] == [1.0, 1.0, 0.0]
    assert [r.wait_source for r in trace] == ["retry_after", "retry_after", "none"]
    assert [r.retry_after_source for r in trace] == ["header", "header", None]
    assert [r.start for r in trace] == [0.0, 1.0, 2.0]  # the virtual clock moved by each wait
    assert [r.resend for r in trace] == [False, True, True]
    assert all(r.error is None and r.wire_sends == 1 and r.url == f"{BASE}/charges" for r in trace)
    assert trace[0].breaker == BreakerPosition("closed", 1)
    assert trace[-1].deadline_left == 28.0
    assert response.trace is trace  # parsed once
    response.close()
    assert response.trace is trace  # and readable after close


def test_the_trace_survives_close_unread() -> None:
    runtime = Runtime(clock="virtual", seed=3, mock=flaky(1))
    with humus_http.Client(BASE, runtime=runtime, max_retry_after=5) as client:
        response = client.get("/charges")
    response.close()
    assert [r.decision for r in response.trace] == ["again", "done"]


def test_a_rejected_call_tells_the_open_breaker_it_met() -> None:
    runtime = Runtime(clock="virtual", seed=3, mock=flaky(1000))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=1, breaker=humus_http.Breaker(open_for=10),
                           trip=humus_http.Trip(consecutive_failures=2)) as client:
        for _ in range(2):
            assert client.get("/charges").status_code == 503
        with pytest.raises(humus_http.CircuitOpenError) as caught:
            client.get("/charges")
    (record,) = caught.value.trace
    assert record.decision == "rejected"
    assert record.error == "HUMUS_E_REJECTED"
    assert record.status is None and record.wire_sends == 0
    assert record.breaker == BreakerPosition("open", 2)
    assert caught.value.attempts == 0


def test_an_error_of_no_call_has_an_empty_trace() -> None:
    assert humus_http.UpstreamError("made by hand").trace == []
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client(BASE, max_attempts=0)
    assert caught.value.trace == []


def test_raise_for_status_carries_the_responses_trace() -> None:
    runtime = Runtime(clock="virtual", seed=3, mock=flaky(1000))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=2, max_retry_after=5) as client:
        response = client.get("/charges")
    with pytest.raises(humus_http.HTTPStatusError) as caught:
        response.raise_for_status()
    assert [r.decision for r in caught.value.trace] == ["again", "exhausted"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_trace_says_which_attempts_reached_the_wire(server: Any, path: str, listener: str,
                                                        make_client: Callable[..., humus_http.Client]) -> None:
    server.script(path, [{"status": 503}, {"status": 200}])
    response = make_client(listener).get(path)
    assert [(r.status, r.wire_sends) for r in response.trace] == [(503, 1), (200, 1)]
    assert len(server.requests(path)) == sum(r.wire_sends for r in response.trace)

    port = closed_port()
    with humus_http.Client(f"http://127.0.0.1:{port}", max_attempts=2, backoff_base=0.001,
                           backoff_max=0.005) as client:
        with pytest.raises(humus_http.UpstreamConnectError) as caught:
            client.get("/")
    assert caught.value.attempts == 2
    assert [(r.error, r.wire_sends, r.decision) for r in caught.value.trace] == [
        ("HUMUS_E_CONNECT", 0, "again"), ("HUMUS_E_CONNECT", 0, "exhausted")]


@pytest.mark.asyncio
async def test_an_async_call_carries_its_trace(make_async_client: Callable[..., humus_http.AsyncClient],
                                               server: Any, path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200}])
    response = await make_async_client("http").get(path)
    assert [r.decision for r in response.trace] == ["again", "done"]
