"""The OpenTelemetry bridge (docs/telemetry.md §13.1): humus_http's attempt spans as spans of the OpenTelemetry SDK.

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    import humus_http, humus_http.otel

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    runtime = humus_http.Runtime(span_sink=humus_http.otel.span_sink(provider))

Each attempt's span reaches the provider's span processors (and so its exporters) with the very trace id and
span id the dependency saw in its ``traceparent``, the call context's span as its (remote) parent, kind CLIENT,
the attempt's start and end times, the OpenTelemetry HTTP attributes and status.

This module imports without the SDK; ``span_sink()`` then raises ImportError naming the package to install,
``opentelemetry-sdk``.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import _native
from ._telemetry import Span

__all__ = ["span_sink"]

#: The instrumentation scope of the bridged spans.
SCOPE_NAME = "humus_http"


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError("humus_http.otel needs the OpenTelemetry SDK: install the package opentelemetry-sdk "
                          "(python3 -m pip install opentelemetry-sdk)", name=name) from e


def _processor_of(provider: Any) -> Any:
    """The provider's span processor: what an SDK tracer hands its ended spans to.

    The SDK has no public way to record a span whose ids were chosen elsewhere: a Tracer draws span ids from
    the provider's id generator. So the bridge builds the public ``ReadableSpan`` (what processors and
    exporters receive) and hands it to the provider's private ``_active_span_processor`` — the multi-span
    processor that ``TracerProvider.add_span_processor`` adds to and that every SDK Tracer calls ``on_end`` on,
    present in every SDK release. ``on_start`` is not called: there is no live span to pass it."""
    return getattr(provider, "_active_span_processor", None)


def span_sink(tracer_provider: object | None = None) -> Callable[[Span], None]:
    """A span sink for ``Runtime(span_sink=...)`` that records each attempt's span in the OpenTelemetry SDK.

    ``tracer_provider`` is an ``opentelemetry.sdk.trace.TracerProvider``; None uses the global one
    (``opentelemetry.trace.get_tracer_provider()``), looked up at each span, so that one set later is used — and
    spans are dropped while the global provider is not an SDK one. Each span becomes a ``ReadableSpan`` with the
    attempt's trace id, span id and trace flags (its own tracestate is the caller's), the call context's span
    as a remote parent (none for a root span), name (the method), kind CLIENT, start and end times, the
    attributes as the C core gives them, and status ERROR (described by ``error.type``) or UNSET, under the
    instrumentation scope ``humus_http``, with the provider's resource. It goes to the provider's span
    processors' ``on_end``, which export it as any span of the provider: a span whose trace flags are not
    sampled is dropped there, as the SDK's processors do; the provider's sampler is not asked (the sampling
    decision is the caller's, carried by its trace flags). A disabled provider (``OTEL_SDK_DISABLED``) records
    nothing.

    Raises ImportError naming ``opentelemetry-sdk`` when the SDK is not installed, TypeError when
    ``tracer_provider`` is not an SDK TracerProvider. The sink is thread-safe (the SDK's processors are)."""
    trace_api = _import("opentelemetry.trace")
    sdk_trace = _import("opentelemetry.sdk.trace")
    instrumentation = _import("opentelemetry.sdk.util.instrumentation")
    if tracer_provider is not None and not isinstance(tracer_provider, sdk_trace.TracerProvider):
        raise TypeError("humus_http.otel.span_sink: tracer_provider must be an opentelemetry.sdk.trace."
                        f"TracerProvider, not {type(tracer_provider).__name__}")
    scope = instrumentation.InstrumentationScope(SCOPE_NAME, _native.VERSION)
    SpanContext, TraceFlags, TraceState = trace_api.SpanContext, trace_api.TraceFlags, trace_api.TraceState
    Status, StatusCode, SpanKind = trace_api.Status, trace_api.StatusCode, trace_api.SpanKind
    ReadableSpan, TracerProvider = sdk_trace.ReadableSpan, sdk_trace.TracerProvider

    def sink(span: Span) -> None:
        provider = tracer_provider if tracer_provider is not None else trace_api.get_tracer_provider()
        if not isinstance(provider, TracerProvider) or getattr(provider, "_disabled", False):
            return
        processor = _processor_of(provider)
        if processor is None:
            return
        trace_id = int(span.trace_id, 16)
        flags = TraceFlags(span.trace_flags)
        state = TraceState.from_header([span.tracestate]) if span.tracestate else TraceState()
        context = SpanContext(trace_id, int(span.span_id, 16), is_remote=False, trace_flags=flags,
                              trace_state=state)
        parent = None
        if span.parent_span_id:
            parent = SpanContext(trace_id, int(span.parent_span_id, 16), is_remote=True, trace_flags=flags,
                                 trace_state=state)
        if span.status == "error":
            error_type = span.attributes.get("error.type")
            status = Status(StatusCode.ERROR, None if error_type is None else str(error_type))
        else:
            status = Status(StatusCode.UNSET)
        processor.on_end(ReadableSpan(
            name=span.name, context=context, parent=parent, resource=provider.resource,
            attributes=dict(span.attributes), kind=SpanKind.CLIENT, status=status,
            start_time=span.start_time_unix_nano, end_time=span.end_time_unix_nano,
            instrumentation_scope=scope))

    return sink
