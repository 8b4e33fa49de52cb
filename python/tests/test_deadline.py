"""Deadline propagation (docs/timeouts.md §8.4): deadline_header sends each attempt's time left, and
deadline_from_request reads it back from an incoming request (Starlette/FastAPI Request or WSGI environ) into a
CallContext whose deadline bounds the calls made with it."""
from __future__ import annotations

import time

import pytest

import humus_http
from humus_http import CallContext, MockReply, MockRequest, Runtime, deadline_from_request
from humus_http._context import parse_deadline, within_deadline_ms


class StarletteLikeRequest:
    """What the helper reads of a Starlette/FastAPI Request: its case-insensitive ``headers`` mapping."""

    def __init__(self, headers: dict[str, str]) -> None:
        from collections.abc import Mapping

        class Headers(Mapping[str, str]):
            def __init__(self, items: dict[str, str]) -> None:
                self._items = {k.lower(): v for k, v in items.items()}

            def __getitem__(self, key: str) -> str:
                return self._items[key.lower()]

            def __iter__(self):  # type: ignore[no-untyped-def]
                return iter(self._items)

            def __len__(self) -> int:
                return len(self._items)

        self.headers = Headers(headers)


@pytest.mark.parametrize(("value", "seconds"), [("1500", 1.5), ("1500m", 1.5), ("2S", 2.0), ("1M", 60.0),
                                                ("250000u", 0.25), ("7n", 7e-9), (" 40 ", 0.04)])
def test_both_formats_parse(value: str, seconds: float) -> None:
    assert parse_deadline(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "-5", "1.5", "12x", "123456789", "m"])
def test_malformed_values_are_ignored(value: str) -> None:
    assert parse_deadline(value) is None


def test_a_starlette_request_gives_the_deadline_and_the_trace_context() -> None:
    before = time.monotonic()
    request = StarletteLikeRequest({"x-request-timeout": "800", "traceparent": "00-" + "a" * 32 + "-" + "b" * 16
                                    + "-01", "X-Request-ID": "r-1"})
    context = deadline_from_request(request)
    assert context.deadline is not None
    assert before + 0.8 <= context.deadline <= time.monotonic() + 0.8
    assert context.request_id == "r-1"
    assert context.traceparent is not None and context.traceparent.startswith("00-")


def test_a_wsgi_environ_and_a_named_header() -> None:
    environ = {"REQUEST_METHOD": "GET", "HTTP_GRPC_TIMEOUT": "3S", "HTTP_X_REQUEST_ID": "w-2", "wsgi.input": None}
    context = deadline_from_request(environ, header="grpc-timeout")
    assert context.deadline is not None and context.deadline > time.monotonic() + 2.5
    assert context.request_id == "w-2"
    assert deadline_from_request(environ).deadline is None  # X-Request-Timeout absent


def test_a_malformed_header_leaves_no_deadline() -> None:
    assert deadline_from_request({"HTTP_X_REQUEST_TIMEOUT": "soon"}).deadline is None


def test_the_deadline_bounds_the_call_timeout() -> None:
    far = CallContext(deadline=time.monotonic() + 100)
    assert within_deadline_ms(0, CallContext()) == 0
    assert 99_000 < within_deadline_ms(0, far) <= 100_000
    assert within_deadline_ms(250, far) == 250
    assert within_deadline_ms(250, CallContext(deadline=time.monotonic() - 1)) == 1  # passed: at once
    assert within_deadline_ms(0, CallContext(deadline=time.monotonic() + 7200)) == 3_600_000  # a timeout's bound


def test_a_chain_shares_one_budget_through_the_header() -> None:
    """Service A got 'X-Request-Timeout: 300' and calls B with that context: B's request carries at most 300 ms,
    not the client's 10 s, sent as the header again."""
    seen: list[str | None] = []

    def handler(request: MockRequest) -> MockReply:
        seen.append(request.header("X-Request-Timeout"))
        return MockReply(status=200)

    incoming = {"HTTP_X_REQUEST_TIMEOUT": "300"}
    runtime = Runtime(clock="virtual", seed=1, mock=handler)
    with humus_http.Client("http://b:8080", runtime=runtime, deadline_header="X-Request-Timeout") as client:
        assert client.get("/b", context=deadline_from_request(incoming)).status_code == 200
        assert client.get("/b").status_code == 200  # no context: the client's own 10 s
    assert seen[0] is not None and 0 < int(seen[0]) <= 300
    assert seen[1] == "5000"  # attempt_timeout's default bounds an attempt


def test_a_real_starlette_request() -> None:
    requests = pytest.importorskip("starlette.requests")
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"x-request-timeout", b"1200m")]}
    context = deadline_from_request(requests.Request(scope))
    assert context.deadline is not None and context.deadline > time.monotonic() + 1.0
