"""Telemetry's Python face (docs/telemetry.md §13): the span of each attempt and the log records of breaker state changes,
as frozen values handed to the sinks of a ``Runtime``, and the adapters the extension calls.

Sinks run on whichever thread ends an attempt or changes a breaker (a caller's thread, or the runtime's
event-loop thread for asynchronous calls), possibly several at once, holding the GIL: they must be thread-safe
and fast. A sink cannot fail a call: an exception it raises is reported through ``sys.unraisablehook`` (the
``object`` of the report is the sink) and the call goes on. A KeyboardInterrupt (Ctrl-C arriving while a sink
runs on the main thread) is handed back to Python's signal handling: the blocking call is cancelled and raises
it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._settings import _STATES, BreakerCounts

__all__ = ["LogRecord", "LogSink", "Span", "SpanSink"]


@dataclass(frozen=True)
class Span:
    """One attempt's span (docs/telemetry.md §13.1), of kind CLIENT: one per attempt sent (each retry and each redirect has
    its own), and one for an attempt the circuit breaker rejected, which ends as it starts with ``error.type``
    ``"rejected"``.

    ``trace_id`` (32 lowercase hex digits) and ``span_id`` (16) are what the attempt's ``traceparent`` carried to
    the dependency (``traceparent`` rebuilds that header). ``parent_span_id`` is the span of the call context's
    ``traceparent`` (``context=``, or a ``traceparent`` header of the call), None for a root span: without a
    context, every attempt of a call is a root span of one new trace. ``tracestate`` is the caller's, passed on
    (``""`` for none); ``trace_flags`` the caller's, or 1 (sampled) for a new trace. Times are nanoseconds since
    the Unix epoch on the runtime's clock's calendar. ``status`` is ``"error"`` for a 4xx/5xx answer or none,
    else ``"unset"``. ``attributes`` carries the OpenTelemetry HTTP attributes as the C ABI gives them, in this
    order: ``url.full``, ``server.address``, ``server.port``, ``http.request.method``,
    ``http.response.status_code`` and ``network.protocol.version`` (when an answer came),
    ``http.request.resend_count`` (the attempts of the call before this one, when > 0), ``error.type`` (the
    status code as text for 4xx/5xx, else the lowercase failure: ``"timeout"``, ``"rejected"``, …).
    A frozen value: share it between threads freely.
    """

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    tracestate: str
    trace_flags: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    status: Literal["unset", "error"]
    attributes: dict[str, str | int]
    kind: Literal["client"] = "client"

    @property
    def traceparent(self) -> str:
        """The W3C ``traceparent`` the attempt sent: ``00-<trace_id>-<span_id>-<trace_flags>``."""
        return f"00-{self.trace_id}-{self.span_id}-{self.trace_flags:02x}"


@dataclass(frozen=True)
class LogRecord:
    """One log record (docs/telemetry.md §13.3). Two events exist: ``"humus.circuit.state_change"`` (one per change of a
    breaker's state, docs/breaker.md §9.5) and ``"humus.upstreams.base_url_override"`` (an environment variable overrode
    an upstream's ``base_url`` with another value, docs/upstreams.md §15.1). Errors are returned, never logged.

    ``message`` is one line for people; ``server_address`` and ``server_port`` name the origin (``""`` and 0 for
    an upstreams record).
    ``previous_state`` and ``new_state`` are ``"closed"``, ``"open"`` or ``"half_open"`` for a state change,
    None otherwise; ``counts`` the breaker's counts at the change (those of the state left, including the result
    that caused it), None when the record is no state change. ``time_unix_ms`` is when the change took effect
    (milliseconds since the Unix epoch, on the runtime's clock's calendar); ``upstream`` the upstream's name for
    upstreams records, else None. A frozen value: share it between threads freely.
    """

    event: str
    message: str
    server_address: str
    server_port: int
    previous_state: Literal["closed", "open", "half_open"] | None
    new_state: Literal["closed", "open", "half_open"] | None
    counts: BreakerCounts | None
    time_unix_ms: int
    upstream: str | None


#: A span sink: called with each attempt's Span when the attempt ends (see the module's notes on threads).
SpanSink = Callable[[Span], object]
#: A log sink: called with each LogRecord.
LogSink = Callable[[LogRecord], object]

_SPAN_STATUS = {0: "unset", 2: "error"}

#: What each instrument of docs/telemetry.md §13.2 measures, as the runtime's Prometheus text says it (HELP): the
#: description the bridges (humus_http.prometheus, humus_http.otel.metrics) give it.
METRIC_DESCRIPTIONS = {
    "http.client.request.duration": "Duration of HTTP client requests (one per attempt).",
    "http.client.request.body.size": "Size of HTTP client request bodies (one per attempt).",
    "humus.circuit.state": "Circuit breakers in each state, read at collection.",
    "humus.circuit.transitions": "Circuit breaker state changes, by the state entered.",
    "humus.circuit.calls": "Attempts as the circuit breaker counted them, and attempts it rejected.",
    "humus.retry.decisions": "Retry decisions after attempts, by decision.",
    "humus.bulkhead.limit": "Bulkhead limits of the live clients, summed by mode, read at collection.",
}


def span_adapter(sink: SpanSink) -> Callable[[tuple[Any, ...]], None]:
    """The callable the extension calls with a span's fields: builds the Span and hands it to ``sink``."""
    def adapter(fields: tuple[Any, ...]) -> None:
        (name, trace_id, span_id, parent, tracestate, flags, start, end, status, attributes) = fields
        sink(Span(name=name, trace_id=trace_id, span_id=span_id, parent_span_id=parent or None,
                  tracestate=tracestate, trace_flags=flags, start_time_unix_nano=start, end_time_unix_nano=end,
                  status=_SPAN_STATUS.get(status, "error"),  # type: ignore[arg-type]
                  attributes=attributes))
    return adapter


def _state(value: int) -> Literal["closed", "open", "half_open"] | None:
    return _STATES.get(value)  # type: ignore[return-value]


def log_adapter(sink: LogSink) -> Callable[[tuple[Any, ...]], None]:
    """The callable the extension calls with a record's fields: builds the LogRecord and hands it to ``sink``."""
    def adapter(fields: tuple[Any, ...]) -> None:
        (event, message, address, port, previous, new, counts, time_ms, upstream) = fields
        state_change = previous >= 0 and new >= 0
        sink(LogRecord(event=event, message=message, server_address=address, server_port=port,
                       previous_state=_state(previous), new_state=_state(new),
                       counts=BreakerCounts(_STATES.get(counts[0], "unknown"), *counts[1:]) if state_change else None,
                       time_unix_ms=time_ms, upstream=upstream or None))
    return adapter
