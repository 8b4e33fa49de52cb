"""The OpenTelemetry bridge (humus_http.otel, docs/telemetry.md §13.1): attempt spans recorded in the SDK with the ids the
dependency saw. The SDK's tests skip when opentelemetry-sdk is not installed; the package works without it."""
from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import humus_http
import humus_http.otel
import pytest
from server_harness import TestServer

MakeRuntime = Callable[..., humus_http.Runtime]

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


class Exported:
    """A TracerProvider whose spans end in an InMemorySpanExporter through a SimpleSpanProcessor."""

    def __init__(self) -> None:
        sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
        export = pytest.importorskip("opentelemetry.sdk.trace.export")
        in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
        resources = pytest.importorskip("opentelemetry.sdk.resources")
        self.exporter = in_memory.InMemorySpanExporter()
        self.provider = sdk_trace.TracerProvider(resource=resources.Resource.create({"service.name": "checkout"}),
                                                 shutdown_on_exit=False)
        self.provider.add_span_processor(export.SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def exported() -> Iterator[Exported]:
    e = Exported()
    yield e
    e.provider.shutdown()


def traceparent_of(span: Any) -> str:
    c = span.context
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"


def test_spans_reach_the_sdks_exporters_with_the_ids_the_server_saw(server: TestServer,
                                                                   make_runtime: MakeRuntime,
                                                                   make_client: Callable[..., humus_http.Client],
                                                                   listener: str, path: str,
                                                                   exported: Exported) -> None:
    trace_api = pytest.importorskip("opentelemetry.trace")
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_client(listener, runtime=runtime)
    server.script(path, [{"status": 503}, {"status": 200}])
    context = humus_http.CallContext(traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01", tracestate="vendor=1")
    assert client.get(path, context=context).attempts == 2

    first, second = exported.spans()
    seen = [dict(r["headers"])["traceparent"] for r in server.requests(path)]
    assert [traceparent_of(first), traceparent_of(second)] == seen
    for span in (first, second):
        assert span.name == "GET"
        assert span.kind == trace_api.SpanKind.CLIENT
        assert span.context.trace_id == int(CALLER_TRACE, 16)
        assert span.parent is not None and span.parent.is_remote
        assert (span.parent.trace_id, span.parent.span_id) == (int(CALLER_TRACE, 16), int(CALLER_SPAN, 16))
        assert span.context.trace_state.get("vendor") == "1"
        assert 0 < span.start_time <= span.end_time
        assert span.instrumentation_scope.name == "humus_http"
        assert span.resource.attributes["service.name"] == "checkout"
        assert span.attributes["url.full"] == server.url(listener, path)
        assert span.attributes["http.request.method"] == "GET"
    assert first.end_time <= second.start_time
    assert (first.status.status_code, first.status.description) == (trace_api.StatusCode.ERROR, "503")
    assert first.attributes["http.response.status_code"] == 503
    assert "http.request.resend_count" not in first.attributes
    assert second.status.status_code == trace_api.StatusCode.UNSET
    assert second.attributes["http.request.resend_count"] == 1


def test_a_rejected_attempt_and_a_root_span(server: TestServer, make_runtime: MakeRuntime,
                                            make_client: Callable[..., humus_http.Client], path: str,
                                            exported: Exported) -> None:
    trace_api = pytest.importorskip("opentelemetry.trace")
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_client(runtime=runtime, max_attempts=1, trip=humus_http.Trip(consecutive_failures=1))
    server.script(path, [{"status": 503}])
    client.get(path)
    with pytest.raises(humus_http.CircuitOpenError):
        client.get(path)
    sent, rejected = exported.spans()
    assert sent.parent is None and rejected.parent is None  # no call context: root spans
    assert traceparent_of(sent) == dict(server.requests(path)[0]["headers"])["traceparent"]
    assert (rejected.status.status_code, rejected.attributes["error.type"]) == (trace_api.StatusCode.ERROR,
                                                                              "rejected")
    assert rejected.start_time == rejected.end_time


def test_an_unsampled_caller_exports_nothing(make_runtime: MakeRuntime,
                                             make_client: Callable[..., humus_http.Client], path: str,
                                             exported: Exported) -> None:
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    make_client(runtime=runtime).get(path, context={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"})
    assert exported.spans() == []


def test_the_global_provider_is_looked_up_at_each_span(make_runtime: MakeRuntime,
                                                       make_client: Callable[..., humus_http.Client], path: str,
                                                       exported: Exported,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    trace_api = pytest.importorskip("opentelemetry.trace")
    client = make_client(runtime=make_runtime(span_sink=humus_http.otel.span_sink()))
    monkeypatch.setattr(trace_api, "get_tracer_provider", lambda: object())
    client.get(path)  # not an SDK provider: dropped
    monkeypatch.setattr(trace_api, "get_tracer_provider", lambda: exported.provider)
    client.get(path)
    assert len(exported.spans()) == 1


def parent_seen(request: dict[str, Any]) -> tuple[int, int]:
    """The (trace id, parent span id) of the traceparent a request carried."""
    _, trace_id, span_id, _ = dict(request["headers"])["traceparent"].split("-")
    return int(trace_id, 16), int(span_id, 16)


def test_a_call_continues_the_callers_current_span(server: TestServer, make_runtime: MakeRuntime,
                                                   make_client: Callable[..., humus_http.Client], listener: str,
                                                   path: str, exported: Exported) -> None:
    trace_api = pytest.importorskip("opentelemetry.trace")
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_client(listener, runtime=runtime)
    server.script(path, [{"status": 503}, {"status": 200}])
    with exported.provider.get_tracer("checkout").start_as_current_span("handler") as handler:
        assert client.get(path).attempts == 2
    first, second, recorded_handler = exported.spans()
    assert recorded_handler.name == "handler"
    want = handler.get_span_context()
    seen = server.requests(path)
    for attempt, request in zip((first, second), seen, strict=True):
        assert attempt.kind == trace_api.SpanKind.CLIENT
        assert attempt.parent is not None and not attempt.parent.is_remote  # a span of this process
        assert (attempt.parent.trace_id, attempt.parent.span_id) == (want.trace_id, want.span_id)
        assert attempt.context.trace_id == want.trace_id
        # What the server saw is the recorded attempt span, not the handler: honest telemetry.
        assert dict(request["headers"])["traceparent"] == traceparent_of(attempt)
        assert parent_seen(request) == (attempt.context.trace_id, attempt.context.span_id)
    assert first.context.span_id != second.context.span_id


@pytest.mark.asyncio
async def test_an_async_call_continues_the_current_span_of_its_task(server: TestServer, make_runtime: MakeRuntime,
                                                                    make_async_client: Callable[
                                                                        ..., humus_http.AsyncClient],
                                                                    path: str, exported: Exported) -> None:
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_async_client(runtime=runtime)
    tracer = exported.provider.get_tracer("checkout")

    async def handle(name: str) -> tuple[Any, str]:
        with tracer.start_as_current_span(name) as span:
            response = await client.get(path, headers={"X-Handler": name})
            assert response.status_code == 200
            return span.get_span_context(), name

    handled = await asyncio.gather(handle("one"), handle("two"))
    attempts = {s.context.span_id: s for s in exported.spans() if s.name == "GET"}
    assert len(attempts) == 2
    for request in server.requests(path):
        want = next(c for c, name in handled if name == dict(request["headers"])["x-handler"])
        trace_id, span_id = parent_seen(request)
        attempt = attempts[span_id]
        assert trace_id == want.trace_id
        assert attempt.parent is not None and attempt.parent.span_id == want.span_id


def test_an_explicit_context_wins_and_a_call_outside_any_span_is_a_root(server: TestServer,
                                                                        make_runtime: MakeRuntime,
                                                                        make_client: Callable[
                                                                            ..., humus_http.Client],
                                                                        path: str, exported: Exported) -> None:
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_client(runtime=runtime)
    traceparent = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
    with exported.provider.get_tracer("checkout").start_as_current_span("handler"):
        client.get(path, context=humus_http.CallContext(traceparent=traceparent, request_id="r-1"))
        client.get(path, headers={"traceparent": traceparent})
    client.get(path)
    explicit, own_header, _handler, root = exported.spans()
    for span in (explicit, own_header):
        assert span.parent is not None and span.parent.is_remote
        assert (span.parent.trace_id, span.parent.span_id) == (int(CALLER_TRACE, 16), int(CALLER_SPAN, 16))
    assert root.parent is None
    assert dict(server.requests(path)[0]["headers"])["x-request-id"] == "r-1"


def test_a_context_without_a_traceparent_keeps_its_request_id_and_takes_the_current_span(
        server: TestServer, make_runtime: MakeRuntime, make_client: Callable[..., humus_http.Client], path: str,
        exported: Exported) -> None:
    runtime = make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))
    client = make_client(runtime=runtime)
    with exported.provider.get_tracer("checkout").start_as_current_span("handler") as handler:
        client.get(path, context={"X-Request-ID": "r-2"})
    attempt, _ = exported.spans()
    assert attempt.parent is not None and attempt.parent.span_id == handler.get_span_context().span_id
    headers = dict(server.requests(path)[0]["headers"])
    assert headers["x-request-id"] == "r-2"
    assert headers["traceparent"] == traceparent_of(attempt)


def test_the_users_provider_and_its_tracers_are_left_alone(make_runtime: MakeRuntime,
                                                           make_client: Callable[..., humus_http.Client], path: str,
                                                           exported: Exported) -> None:
    generator = exported.provider.id_generator
    shared = exported.provider.get_tracer(humus_http.otel.SCOPE_NAME, humus_http.core_version)
    make_client(runtime=make_runtime(span_sink=humus_http.otel.span_sink(exported.provider))).get(path)
    assert exported.provider.id_generator is generator
    assert shared.id_generator is generator
    assert len(exported.spans()) == 1


def test_without_the_bridge_the_current_span_is_not_read(server: TestServer, make_runtime: MakeRuntime,
                                                         make_client: Callable[..., humus_http.Client], path: str,
                                                         exported: Exported) -> None:
    client = make_client(runtime=make_runtime(span_sink=lambda span: None))
    with exported.provider.get_tracer("checkout").start_as_current_span("handler"):
        client.get(path)
    assert "traceparent" in dict(server.requests(path)[0]["headers"])  # the sink's own root span
    handler_trace = exported.spans()[0].context.trace_id
    assert parent_seen(server.requests(path)[0])[0] != handler_trace


def otel_points(reader: Any, name: str) -> dict[tuple[tuple[str, Any], ...], Any]:
    """The data points of the metric ``name`` the reader collects now, by their sorted attributes."""
    data = reader.get_metrics_data()
    found: dict[tuple[tuple[str, Any], ...], Any] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    assert scope.scope.name == humus_http.otel.SCOPE_NAME
                    found.update({tuple(sorted(p.attributes.items())): (metric, p) for p in metric.data.data_points})
    return found


def test_the_runtimes_counters_and_gauges_as_observable_instruments(server: TestServer, make_runtime: MakeRuntime,
                                                                    make_client: Callable[..., humus_http.Client],
                                                                    path: str) -> None:
    sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")
    export = pytest.importorskip("opentelemetry.sdk.metrics.export")
    reader = export.InMemoryMetricReader()
    provider = sdk_metrics.MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    try:
        runtime = make_runtime()
        made = humus_http.otel.metrics(runtime, provider)
        assert len(made) == 5  # the three counters and the two gauges; no histogram
        server.script(path, [{"status": 503}, {"status": 200}])
        assert make_client(runtime=runtime).get(path).attempts == 2
        origin = (("server.address", "127.0.0.1"), ("server.port", server.port("http")))

        decisions = otel_points(reader, "humus.retry.decisions")
        metric, again = decisions[tuple(sorted((*origin, ("humus.retry.decision", "again"))))]
        assert again.value == 1 and metric.unit == "{decision}" and metric.data.is_monotonic
        assert decisions[tuple(sorted((*origin, ("humus.retry.decision", "done"))))][1].value == 1
        calls = otel_points(reader, "humus.circuit.calls")
        assert calls[tuple(sorted((*origin, ("humus.circuit.outcome", "failure"))))][1].value == 1
        assert calls[tuple(sorted((*origin, ("humus.circuit.outcome", "success"))))][1].value == 1
        metric, closed = otel_points(reader, "humus.circuit.state")[tuple(sorted((*origin,
                                                                                 ("humus.circuit.state", "closed"))))]
        assert closed.value == 1 and type(metric.data).__name__ == "Gauge"
        metric, limit = otel_points(reader, "humus.bulkhead.limit")[tuple(sorted((*origin,
                                                                                  ("humus.bulkhead.mode", "fixed"))))]
        assert limit.value == 50 and metric.unit == "{call}" and type(metric.data).__name__ == "Gauge"
        assert otel_points(reader, "http.client.request.duration") == {}

        make_client(runtime=runtime).get(path)  # read anew at each collection
        decisions = otel_points(reader, "humus.retry.decisions")
        assert decisions[tuple(sorted((*origin, ("humus.retry.decision", "done"))))][1].value == 2
    finally:
        provider.shutdown()


def test_metrics_refuses_what_is_not_a_runtime_or_a_meter_provider() -> None:
    pytest.importorskip("opentelemetry.metrics")
    with pytest.raises(TypeError, match="Runtime"):
        humus_http.otel.metrics(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MeterProvider"):
        humus_http.otel.metrics(humus_http.Runtime(), object())


def test_a_provider_that_is_not_the_sdks_is_refused() -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    with pytest.raises(TypeError, match="TracerProvider"):
        humus_http.otel.span_sink(object())


def test_without_the_sdk_the_package_imports_and_the_bridge_names_what_to_install() -> None:
    code = ("import sys\n"
            "sys.modules['opentelemetry'] = None\n"  # as if it were not installed
            "import humus_http\n"
            "try:\n"
            "    humus_http.otel.span_sink()\n"
            "except ImportError as e:\n"
            "    print(e)\n"
            "try:\n"
            "    humus_http.otel.metrics(humus_http.Runtime())\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert "opentelemetry-sdk" in first and "opentelemetry-api" in second
