"""Telemetry through the Python package (docs/telemetry.md §13): a span per attempt and the traceparent the dependency saw,
log records of breaker state changes, metrics in the Prometheus and JSON forms, readiness (docs/upstreams.md §15.2), and
failure injection through baggage (docs/failure-injection.md §14) — against the real local test server."""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import humus_http
import pytest
from server_harness import TestServer

MakeRuntime = Callable[..., humus_http.Runtime]

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")


def sent(server: TestServer, path: str, header: str) -> list[str | None]:
    """The value of `header` in each request the server received on `path`, in arrival order."""
    return [dict(record["headers"]).get(header) for record in server.requests(path)]


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of a Prometheus text exposition; KeyError when there is none."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line[len(name):line.index("}") + 1]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(f"{name}{labels} not in the exposition")


class Sinks:
    """Collects what a runtime's sinks receive, and on which threads."""

    def __init__(self) -> None:
        self.spans: list[humus_http.Span] = []
        self.logs: list[humus_http.LogRecord] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def span(self, span: humus_http.Span) -> None:
        with self._lock:
            self.spans.append(span)
            self.threads.add(threading.get_ident())

    def log(self, record: humus_http.LogRecord) -> None:
        with self._lock:
            self.logs.append(record)


@pytest.fixture
def sinks() -> Sinks:
    return Sinks()


# --- spans ---------------------------------------------------------------------------------------------------


def test_a_call_retried_through_a_503_has_a_span_per_attempt(server: TestServer, make_runtime: MakeRuntime,
                                                            make_client: Callable[..., humus_http.Client],
                                                            listener: str, path: str, sinks: Sinks) -> None:
    runtime = make_runtime(span_sink=sinks.span)
    client = make_client(listener, runtime=runtime)
    server.script(path, [{"status": 503}, {"status": 200, "body": "ok"}])
    r = client.get(path, context=humus_http.CallContext(traceparent=CALLER, tracestate="vendor=1"))
    assert (r.status_code, r.attempts) == (200, 2)

    first, second = sinks.spans
    host, port = ("127.0.0.1", server.port("http")) if listener == "http" else ("payments", server.port(listener))
    version = "1.1" if listener == "http" else "2"
    for span in sinks.spans:
        assert (span.name, span.kind, span.trace_id, span.parent_span_id) == ("GET", "client", CALLER_TRACE,
                                                                              CALLER_SPAN)
        assert HEX16.match(span.span_id)
        assert (span.tracestate, span.trace_flags) == ("vendor=1", 1)
        assert span.start_time_unix_nano <= span.end_time_unix_nano
    assert first.span_id != second.span_id
    assert first.end_time_unix_nano <= second.start_time_unix_nano
    assert first.status == "error" and second.status == "unset"
    assert first.attributes == {"url.full": server.url(listener, path), "server.address": host, "server.port": port,
                                "http.request.method": "GET", "http.response.status_code": 503,
                                "network.protocol.version": version, "error.type": "503"}
    assert list(first.attributes)[:4] == ["url.full", "server.address", "server.port", "http.request.method"]
    assert second.attributes == {"url.full": server.url(listener, path), "server.address": host,
                                 "server.port": port, "http.request.method": "GET",
                                 "http.response.status_code": 200, "network.protocol.version": version,
                                 "http.request.resend_count": 1}
    # What the dependency saw is each attempt's own span, child of the caller's.
    assert sent(server, path, "traceparent") == [first.traceparent, second.traceparent]
    assert first.traceparent == f"00-{CALLER_TRACE}-{first.span_id}-01"
    assert sent(server, path, "tracestate") == ["vendor=1", "vendor=1"]


def test_without_a_context_the_attempts_are_root_spans_of_one_trace(server: TestServer,
                                                                    make_runtime: MakeRuntime,
                                                                    make_client: Callable[..., humus_http.Client],
                                                                    path: str, sinks: Sinks) -> None:
    client = make_client(runtime=make_runtime(span_sink=sinks.span))
    server.script(path, [{"status": 503}, {"status": 503}, {"status": 200}])
    assert client.get(path).attempts == 3
    assert len(sinks.spans) == 3
    assert len({s.trace_id for s in sinks.spans}) == 1
    assert all(HEX32.match(s.trace_id) and s.parent_span_id is None and s.trace_flags == 1 for s in sinks.spans)
    assert [s.attributes.get("http.request.resend_count") for s in sinks.spans] == [None, 1, 2]
    assert sent(server, path, "traceparent") == [s.traceparent for s in sinks.spans]


def test_a_traceparent_header_of_the_call_is_the_parent(server: TestServer, make_runtime: MakeRuntime,
                                                        make_client: Callable[..., humus_http.Client], path: str,
                                                        sinks: Sinks) -> None:
    client = make_client(runtime=make_runtime(span_sink=sinks.span))
    client.get(path, headers={"traceparent": CALLER})
    (span,) = sinks.spans
    assert (span.trace_id, span.parent_span_id) == (CALLER_TRACE, CALLER_SPAN)
    assert sent(server, path, "traceparent") == [span.traceparent]


def test_without_a_span_sink_the_callers_traceparent_passes_through(server: TestServer,
                                                                    make_runtime: MakeRuntime,
                                                                    make_client: Callable[..., humus_http.Client],
                                                                    path: str) -> None:
    client = make_client(runtime=make_runtime())
    client.get(path, context={"traceparent": CALLER, "tracestate": "vendor=1"})
    assert sent(server, path, "traceparent") == [CALLER]
    assert sent(server, path, "tracestate") == ["vendor=1"]


def test_a_sink_can_be_set_and_removed_later(server: TestServer, make_runtime: MakeRuntime,
                                             make_client: Callable[..., humus_http.Client], path: str,
                                             sinks: Sinks) -> None:
    runtime = make_runtime()
    client = make_client(runtime=runtime)
    client.get(path)
    assert sinks.spans == []
    runtime.set_span_sink(sinks.span)
    client.get(path)
    assert len(sinks.spans) == 1
    runtime.set_span_sink(None)
    client.get(path, context=humus_http.CallContext(traceparent=CALLER))
    assert len(sinks.spans) == 1
    assert sent(server, path, "traceparent")[-1] == CALLER
    with pytest.raises(TypeError, match="callable"):
        runtime.set_span_sink(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        make_runtime(log_sink="not a function")


def test_an_exception_in_a_sink_goes_to_unraisablehook_not_to_the_call(server: TestServer,
                                                                       make_runtime: MakeRuntime,
                                                                       make_client: Callable[..., humus_http.Client],
                                                                       path: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def broken(span: humus_http.Span) -> None:
        raise ValueError(f"sink broke on {span.name}")

    client = make_client(runtime=make_runtime(span_sink=broken))
    server.script(path, [{"status": 503}, {"status": 200}])
    r = client.get(path)
    assert (r.status_code, r.attempts) == (200, 2)
    assert len(reported) == 2
    assert all(isinstance(u.exc_value, ValueError) and u.object is broken for u in reported)
    assert str(reported[0].exc_value) == "sink broke on GET"


KEYBOARD_INTERRUPT_CHILD = """
import signal
import sys
import humus_http

# A child inherits an ignored SIGINT from a parent started by nohup or a CI runner; the sink's
# KeyboardInterrupt is handed back as a SIGINT (PyErr_SetInterrupt), which Python drops while SIGINT is
# ignored: the handler is Python's default here, as in an interactive program.
signal.signal(signal.SIGINT, signal.default_int_handler)

def sink(span):
    raise KeyboardInterrupt  # as when Ctrl-C arrives while the sink runs on the main thread

runtime = humus_http.Runtime(span_sink=sink)
with humus_http.Client(sys.argv[1], runtime=runtime, timeout=120, max_retry_after=60) as client:
    try:
        outcome = "returned %d" % client.get(sys.argv[2]).status_code
    except KeyboardInterrupt:
        outcome = "interrupted"
print(outcome)
"""


def test_a_keyboard_interrupt_in_a_sink_cancels_the_blocking_call(server: TestServer, path: str) -> None:
    # The 503 asks for a 30 s wait before the retry: only the interruption ends the call before the second
    # attempt (no race with a backoff draw that may be short).
    server.script(path, [{"status": 503, "headers": [["Retry-After", "30"]]}, {"status": 200}])
    done = subprocess.run([sys.executable, "-c", KEYBOARD_INTERRUPT_CHILD, server.url("http"), path],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted"
    assert len(server.requests(path)) == 1  # the retry's wait was cut short


@pytest.mark.asyncio
async def test_async_calls_deliver_spans_from_the_event_loop_thread(server: TestServer,
                                                                    make_runtime: MakeRuntime,
                                                                    make_async_client: Callable[
                                                                        ..., humus_http.AsyncClient],
                                                                    path: str, sinks: Sinks) -> None:
    client = make_async_client(runtime=make_runtime(span_sink=sinks.span))
    server.script(path, [{"status": 503}, {"status": 200}])
    responses = await asyncio.gather(*(client.get(path, context=humus_http.CallContext(traceparent=CALLER))
                                       for _ in range(3)))
    attempts = sum(r.attempts for r in responses)
    assert len(sinks.spans) == attempts >= 4
    assert threading.get_ident() not in sinks.threads
    assert sorted(t for t in sent(server, path, "traceparent") if t) == sorted(s.traceparent for s in sinks.spans)


# --- an open breaker: spans, log records, metrics, readiness -------------------------------------------------------


def test_a_call_rejected_by_an_open_breaker(server: TestServer, make_runtime: MakeRuntime,
                                            make_client: Callable[..., humus_http.Client], path: str,
                                            sinks: Sinks) -> None:
    runtime = make_runtime(span_sink=sinks.span, log_sink=sinks.log)
    client = make_client(runtime=runtime, max_attempts=2, trip=humus_http.Trip(consecutive_failures=2),
                         breaker=humus_http.Breaker(open_for=30))
    assert runtime.readiness()["status"] == "ok"
    server.script(path, [{"status": 503}])
    context = humus_http.CallContext(traceparent=CALLER)
    assert client.get(path, context=context).attempts == 2
    with pytest.raises(humus_http.CircuitOpenError):
        client.get(path, context=context)
    assert len(server.requests(path)) == 2  # the rejected call sent nothing

    # Spans: two attempts sent, one rejected that ends as it starts.
    assert len(sinks.spans) == 3
    rejected = sinks.spans[2]
    assert (rejected.name, rejected.status, rejected.trace_id, rejected.parent_span_id) == (
        "GET", "error", CALLER_TRACE, CALLER_SPAN)
    assert rejected.start_time_unix_nano == rejected.end_time_unix_nano
    assert rejected.attributes == {"url.full": server.url("http", path), "server.address": "127.0.0.1",
                                   "server.port": server.port("http"), "http.request.method": "GET",
                                   "error.type": "rejected"}
    assert sent(server, path, "traceparent") == [s.traceparent for s in sinks.spans[:2]]

    # One log record: closed -> open, with the counts at the change.
    (record,) = sinks.logs
    assert (record.event, record.previous_state, record.new_state) == ("humus.circuit.state_change", "closed",
                                                                      "open")
    assert (record.server_address, record.server_port, record.upstream) == ("127.0.0.1", server.port("http"), None)
    assert record.counts is not None
    assert (record.counts.state, record.counts.failures, record.counts.consecutive_failures) == ("closed", 2, 2)
    assert "closed -> open" in record.message
    assert record.time_unix_ms > 0

    # Metrics.
    text = runtime.metrics_prometheus()
    labels = {"server_address": "127.0.0.1", "server_port": str(server.port("http"))}
    assert metric(text, "humus_circuit_calls_total", humus_circuit_outcome="failure", **labels) == 2
    assert metric(text, "humus_circuit_calls_total", humus_circuit_outcome="rejected", **labels) == 1
    assert metric(text, "humus_circuit_calls_total", humus_circuit_outcome="success", **labels) == 0
    assert metric(text, "humus_circuit_transitions_total", humus_circuit_state="open", **labels) == 1
    assert metric(text, "humus_circuit_state", humus_circuit_state="open", **labels) == 1
    assert metric(text, "humus_circuit_state", humus_circuit_state="closed", **labels) == 0
    assert metric(text, "humus_retry_decisions_total", humus_retry_decision="again", **labels) == 1
    assert metric(text, "humus_retry_decisions_total", humus_retry_decision="exhausted", **labels) == 1
    assert metric(text, "http_client_request_duration_seconds_count", **labels) == 2
    assert metric(text, "http_client_request_duration_seconds_bucket", le="+Inf", **labels) == 2

    as_json = {m["name"]: m for m in runtime.metrics_json()["metrics"]}
    calls = {p["attributes"]["humus.circuit.outcome"]: p["value"] for p in as_json["humus.circuit.calls"]["points"]}
    assert calls == {"success": 0, "failure": 2, "ignored": 0, "rejected": 1}
    (duration,) = as_json["http.client.request.duration"]["points"]
    assert (duration["count"], sum(duration["bucket_counts"])) == (2, 2)
    # The semantic conventions' attributes of both attempts; the rejected one sent nothing and has no sample.
    assert duration["attributes"] == {"server.address": "127.0.0.1", "server.port": server.port("http"),
                                      "http.request.method": "GET", "http.response.status_code": 503,
                                      "error.type": "503", "network.protocol.version": "1.1"}

    # Readiness: degraded, never unavailable.
    report = runtime.readiness()
    assert report["status"] == "degraded"
    (entry,) = report["clients"]
    assert (entry["origin"], entry["state"]) == (f"http://127.0.0.1:{server.port('http')}", "open")
    assert 0 < entry["retry_after_ms"] <= 30_000


def test_readiness_lists_every_client_of_the_runtime(make_runtime: MakeRuntime,
                                                     make_client: Callable[..., humus_http.Client],
                                                     server: TestServer) -> None:
    runtime = make_runtime()
    assert runtime.readiness() == {"status": "ok", "clients": []}
    make_client(runtime=runtime)
    make_client("https", runtime=runtime)
    report = runtime.readiness()
    assert report["status"] == "ok"
    assert [c["origin"] for c in report["clients"]] == [f"http://127.0.0.1:{server.port('http')}",
                                                        f"https://payments:{server.port('https')}"]
    assert all(c["state"] == "closed" and c["counts"]["failures"] == 0 for c in report["clients"])


# --- failure injection (docs/failure-injection.md §14) ----------------------------------------------------------------------------


def test_a_fault_for_the_clients_point_fails_its_attempts_and_sends_nothing(
        server: TestServer, make_runtime: MakeRuntime, make_client: Callable[..., humus_http.Client],
        path: str, sinks: Sinks) -> None:
    runtime = make_runtime(faults=True, span_sink=sinks.span)
    assert runtime.faults
    client = make_client(runtime=runtime)
    point = f"http:127.0.0.1:{server.port('http')}"
    r = client.get(path, context=humus_http.CallContext(baggage=f"user=alice,humus.fault={point}=status:503"))
    assert (r.status_code, r.attempts) == (503, 3)  # a real 503 to the client: classified and retried
    assert server.requests(path) == []
    assert [s.attributes.get("http.response.status_code") for s in sinks.spans] == [503, 503, 503]

    # A client of its own: the first one's retry budget is spent (three retries classified, docs/retries.md §6.4).
    with pytest.raises(humus_http.ProtocolError) as caught:
        make_client(runtime=runtime).get(path, headers={"baggage": f"humus.fault={point}=abort"})
    assert caught.value.attempts == 3
    assert server.requests(path) == []
    assert [s.attributes.get("error.type") for s in sinks.spans[3:]] == ["connection_lost"] * 3


def test_a_fault_for_another_point_is_stripped_from_the_baggage_sent(server: TestServer,
                                                                     make_runtime: MakeRuntime,
                                                                     make_client: Callable[..., humus_http.Client],
                                                                     path: str) -> None:
    client = make_client(runtime=make_runtime(faults=True))
    r = client.get(path, context={"baggage": "user=alice,humus.fault=http:ledger:8443=abort"})
    assert (r.status_code, r.attempts) == (200, 1)
    assert sent(server, path, "baggage") == ["user=alice"]


def test_forward_scenario_keeps_the_member(server: TestServer, make_runtime: MakeRuntime,
                                           make_client: Callable[..., humus_http.Client], path: str) -> None:
    baggage = "user=alice,humus.fault=http:ledger:8443=abort"
    client = make_client(runtime=make_runtime(faults=True), forward_scenario=True)
    client.get(path, context={"baggage": baggage})
    assert sent(server, path, "baggage") == [baggage]


def test_with_faults_off_baggage_is_neither_read_nor_changed(server: TestServer, make_runtime: MakeRuntime,
                                                             make_client: Callable[..., humus_http.Client],
                                                             path: str) -> None:
    runtime = make_runtime()
    assert not runtime.faults
    client = make_client(runtime=runtime)
    baggage = f"humus.fault=http:127.0.0.1:{server.port('http')}=status:503"
    r = client.get(path, context={"baggage": baggage})
    assert r.status_code == 200
    assert sent(server, path, "baggage") == [baggage]


def test_an_unreadable_fault_member_fails_the_call(make_runtime: MakeRuntime,
                                                   make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client(runtime=make_runtime(faults=True))
    with pytest.raises(humus_http.InvalidRequestError) as caught:
        client.get(path, context={"baggage": "humus.fault=nonsense"})
    assert "baggage" in str(caught.value)
