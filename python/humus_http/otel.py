"""The OpenTelemetry bridge (docs/telemetry.md §13.1): humus_http's attempt spans as spans of the OpenTelemetry SDK.

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    import humus_http, humus_http.otel

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    runtime = humus_http.Runtime(span_sink=humus_http.otel.span_sink(provider))
    client = humus_http.Client("https://payments:8443", runtime=runtime)

    with provider.get_tracer("checkout").start_as_current_span("handler"):
        client.get("/v1/charges")   # its attempt spans are children of "handler"

Setting the sink is what turns the bridge on, for every client of that runtime:

- **Parenting.** A call that has no trace context of its own (no ``context=`` with a ``traceparent``, no
  ``traceparent`` header among its headers) continues the span current in the caller's OpenTelemetry context
  (``opentelemetry.trace.get_current_span()``, read when the call starts, in the caller's thread or task), as
  opentelemetry-instrumentation-httpx does: its attempt spans are children of that span, and each attempt
  sends its own ``traceparent`` carrying that trace. Without a current span the attempts are root spans of one
  new trace. A ``context=`` with a ``traceparent`` (the request being served, typically) wins.
- **Recording.** Each attempt span is started and ended through a Tracer of the SDK's public API
  (``Tracer.start_span(name, context=parent, kind=CLIENT, attributes=..., start_time=...)`` and
  ``Span.end(end_time=...)``), so it passes through the provider's sampler and every span processor
  (``on_start`` and ``on_end``) like any other span. Its ids are the ones the dependency saw: the bridge's own
  ``Tracer``, built from the provider's public parts (its ``sampler`` and ``resource``, and the span processor
  of the provider's Tracer for the ``humus_http`` scope), draws them from an id generator that yields the ids
  the core chose for the attempt. Neither the provider nor any Tracer it hands out is changed.

``metrics(runtime)`` exports the runtime's counters and gauges (docs/telemetry.md §13.2) as observable instruments
of an OpenTelemetry MeterProvider (docs/telemetry.md §13.4).

This module imports without the SDK; ``span_sink()`` then raises ImportError naming the package to install,
``opentelemetry-sdk`` (``metrics()`` needs only ``opentelemetry-api``).
"""
from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from . import _native
from ._settings import Runtime
from ._telemetry import METRIC_DESCRIPTIONS, Span

__all__ = ["SpanBridge", "metrics", "span_sink"]

#: The instrumentation scope of the bridged spans.
SCOPE_NAME = "humus_http"

# How many span ids of the callers' current spans are remembered, to tell a local parent from a remote one.
_LOCAL_PARENTS = 4096


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError("humus_http.otel needs the OpenTelemetry SDK: install the package opentelemetry-sdk "
                          "(python3 -m pip install opentelemetry-sdk)", name=name) from e


class SpanBridge:
    """The span sink ``span_sink()`` returns: call it with a ``Span``; a runtime it is set on also asks it, at the
    start of each call without a trace context of its own, for the caller's current trace context
    (``current_trace_context()``). Thread-safe."""

    def __init__(self, tracer_provider: object | None) -> None:
        self._trace = _import("opentelemetry.trace")
        self._sdk = _import("opentelemetry.sdk.trace")
        self._context = _import("opentelemetry.context")
        id_generator = _import("opentelemetry.sdk.trace.id_generator")
        self._scope = _import("opentelemetry.sdk.util.instrumentation").InstrumentationScope(SCOPE_NAME,
                                                                                             _native.VERSION)
        if tracer_provider is not None and not isinstance(tracer_provider, self._sdk.TracerProvider):
            raise TypeError("humus_http.otel.span_sink: tracer_provider must be an opentelemetry.sdk.trace."
                            f"TracerProvider, not {type(tracer_provider).__name__}")
        self._provider = tracer_provider
        self._ids = threading.local()
        ids = self._ids

        class CoreIds(id_generator.IdGenerator):  # type: ignore[misc, name-defined]
            """Yields the ids the core chose for the attempt being recorded on this thread."""

            def generate_span_id(self) -> int:
                return int(ids.span_id)

            def generate_trace_id(self) -> int:
                return int(ids.trace_id)

            def is_trace_id_random(self) -> bool:
                return False  # what the attempt sent carries no W3C "random" flag: the recorded span neither

        self._id_generator = CoreIds()
        # (provider, resource, tracer): the bridge's Tracer for the provider last seen; replaced as a whole.
        self._tracer: tuple[Any, Any, Any] | None = None
        self._lock = threading.Lock()
        self._local_parents: OrderedDict[tuple[int, int], None] = OrderedDict()

    def current_trace_context(self) -> tuple[str, str | None] | None:
        """The ``traceparent`` and ``tracestate`` (None when empty) of the span current in the caller's
        OpenTelemetry context, or None when there is no valid one. What a call without a trace context of its
        own continues when this sink is its runtime's."""
        span_context = self._trace.get_current_span().get_span_context()
        if not span_context.is_valid:
            return None
        with self._lock:
            key = (span_context.trace_id, span_context.span_id)
            self._local_parents[key] = None
            self._local_parents.move_to_end(key)
            if len(self._local_parents) > _LOCAL_PARENTS:
                self._local_parents.popitem(last=False)
        traceparent = (f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
                       f"{int(span_context.trace_flags):02x}")
        return traceparent, span_context.trace_state.to_header() or None

    def _tracer_for(self, provider: Any) -> Any:
        resource = provider.resource
        cached = self._tracer
        if cached is not None and cached[0] is provider and cached[1] is resource:
            return cached[2]
        shared = provider.get_tracer(SCOPE_NAME, _native.VERSION)
        if not isinstance(shared, self._sdk.Tracer):
            tracer = None  # a disabled provider (OTEL_SDK_DISABLED) hands out a no-op tracer: record nothing
        else:
            tracer = self._sdk.Tracer(provider.sampler, resource, shared.span_processor, self._id_generator,
                                      shared.instrumentation_info, self._sdk.SpanLimits(), self._scope)
        self._tracer = (provider, resource, tracer)
        return tracer

    def __call__(self, span: Span) -> None:
        """Records ``span`` in the provider (see ``span_sink()``)."""
        trace = self._trace
        provider = self._provider if self._provider is not None else trace.get_tracer_provider()
        if not isinstance(provider, self._sdk.TracerProvider):
            return
        tracer = self._tracer_for(provider)
        if tracer is None:
            return
        trace_id = int(span.trace_id, 16)
        if span.parent_span_id:
            parent_id = int(span.parent_span_id, 16)
            with self._lock:
                local = (trace_id, parent_id) in self._local_parents
            state = trace.TraceState.from_header([span.tracestate]) if span.tracestate else trace.TraceState()
            parent = trace.SpanContext(trace_id, parent_id, is_remote=not local,
                                       trace_flags=trace.TraceFlags(span.trace_flags), trace_state=state)
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent), self._context.Context())
        else:
            context = self._context.Context()  # a root span, whatever is current on this thread
        self._ids.trace_id, self._ids.span_id = trace_id, int(span.span_id, 16)
        recorded = tracer.start_span(span.name, context=context, kind=trace.SpanKind.CLIENT,
                                     attributes=dict(span.attributes), start_time=span.start_time_unix_nano)
        if span.status == "error":
            error_type = span.attributes.get("error.type")
            recorded.set_status(trace.Status(trace.StatusCode.ERROR,
                                             None if error_type is None else str(error_type)))
        recorded.end(end_time=span.end_time_unix_nano)


def span_sink(tracer_provider: object | None = None) -> SpanBridge:
    """A span sink for ``Runtime(span_sink=...)`` that records each attempt's span in the OpenTelemetry SDK and makes
    the runtime's calls continue the caller's current span (see the module's notes).

    ``tracer_provider`` is an ``opentelemetry.sdk.trace.TracerProvider``; None uses the global one
    (``opentelemetry.trace.get_tracer_provider()``), looked up at each span, so that one set later is used — and
    spans are dropped while the global provider is not an SDK one. Each span is started and ended through the
    SDK's public Tracer API with the attempt's trace id and span id, the call context's span as its parent
    (local when it was the caller's current span, remote when it came in ``context=``; none for a root span),
    name (the method), kind CLIENT, start and end times, the attributes as the C core gives them, and status
    ERROR (described by ``error.type``) or UNSET, under the instrumentation scope ``humus_http``, with the
    provider's resource. The provider's sampler decides whether it is recorded, as for any span: with the
    default ``ParentBased`` sampler a parent whose trace flags are not sampled drops it. The provider's span
    processors receive it (``on_start``, ``on_end``) and export it. A disabled provider (``OTEL_SDK_DISABLED``)
    records nothing. Span limits are the SDK's defaults (``OTEL_SPAN_*`` environment variables).

    Raises ImportError naming ``opentelemetry-sdk`` when the SDK is not installed, TypeError when
    ``tracer_provider`` is not an SDK TracerProvider. The sink is thread-safe (the SDK's processors are)."""
    return SpanBridge(tracer_provider)


def _observe(runtime: Runtime, name: str, observation: Any) -> Callable[[Any], Iterable[Any]]:
    """The callback of the instrument ``name``: the runtime's data points of it, read now."""
    def callback(options: Any) -> Iterable[Any]:
        for metric in runtime.metrics_json()["metrics"]:
            if metric.get("name") == name:
                points: list[Mapping[str, Any]] = metric.get("points", [])
                return [observation(point["value"], dict(point.get("attributes", {}))) for point in points]
        return []
    return callback


def metrics(runtime: Runtime, meter_provider: object | None = None) -> list[Any]:
    """Exports ``runtime``'s counters and gauges (docs/telemetry.md §13.2) as OpenTelemetry observable instruments, read
    at each collection of the provider's readers, and returns the instruments made.

    ``meter_provider`` is an ``opentelemetry.metrics.MeterProvider`` (the SDK's, typically); None uses the global
    one (``opentelemetry.metrics.get_meter_provider()``). The meter is ``humus_http`` at the core's version. Each
    counter (``humus.circuit.transitions``, ``humus.circuit.calls``, ``humus.retry.decisions``) becomes an
    ObservableCounter of its cumulative totals and each gauge (``humus.circuit.state``, ``humus.bulkhead.limit``) an ObservableGauge, with
    the runtime's names, units, descriptions and attributes (``server.address``, ``server.port`` as an int, and
    the instrument's own). The histograms (``http.client.request.duration``, ``http.client.request.body.size``)
    are not exported: OpenTelemetry's API has no asynchronous histogram, and the runtime keeps bucket counts, not
    the samples a synchronous one would need; read them through ``humus_http.prometheus`` or
    ``Runtime.metrics_json()``. Call it once per provider: for the same names and scope the SDK hands a second
    call the instruments already made, which keep observing the first runtime.

    Raises ImportError naming ``opentelemetry-api`` when OpenTelemetry is not installed, TypeError when
    ``runtime`` is not a Runtime. Thread-safe; the callbacks run on the reader's thread."""
    if not isinstance(runtime, Runtime):
        raise TypeError(f"humus_http.otel.metrics: runtime must be a humus_http.Runtime, not {type(runtime).__name__}")
    try:
        metrics_api = importlib.import_module("opentelemetry.metrics")
    except ImportError as e:
        raise ImportError("humus_http.otel.metrics needs OpenTelemetry: install the package opentelemetry-api "
                          "(or opentelemetry-sdk, which brings it)", name="opentelemetry.metrics") from e
    provider = meter_provider if meter_provider is not None else metrics_api.get_meter_provider()
    if not isinstance(provider, metrics_api.MeterProvider):
        raise TypeError("humus_http.otel.metrics: meter_provider must be an opentelemetry.metrics.MeterProvider, "
                        f"not {type(provider).__name__}")
    meter = provider.get_meter(SCOPE_NAME, _native.VERSION)
    made: list[Any] = []
    for metric in runtime.metrics_json()["metrics"]:
        name, kind = str(metric["name"]), metric.get("type")
        create = {"counter": meter.create_observable_counter, "gauge": meter.create_observable_gauge}.get(kind)
        if create is None:
            continue  # a histogram (see above), or a kind this version does not know
        made.append(create(name, callbacks=[_observe(runtime, name, metrics_api.Observation)],
                           unit=str(metric.get("unit", "")), description=METRIC_DESCRIPTIONS.get(name, "")))
    return made

