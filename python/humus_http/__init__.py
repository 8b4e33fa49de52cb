"""humus_http: a resilient outbound HTTP client — deadlines, retries within a budget, a circuit breaker and a
bulkhead per dependency — over a C++ core and libcurl (HTTP/1.1 and HTTP/2 over TLS).

    import humus_http

    with humus_http.Client("https://payments.internal:8443", timeout=2.0) as client:
        response = client.get("/v1/health").raise_for_status()

``Client`` blocks (releasing the GIL while it waits); ``AsyncClient`` is its asyncio twin. Both take the
settings of docs/settings.md §3 as keyword arguments, or their JSON form through ``from_settings``; ``Upstreams`` builds
them by name from one configuration file (docs/upstreams.md §15). A ``Runtime`` with a virtual clock and a mock transport
(``MockReply``, ``humus_http.testing``) tests code that calls a dependency without sockets or real waits
(docs/testing-kit.md §16). A ``Runtime`` also carries the telemetry (docs/telemetry.md §13): a span per attempt (``Span``; bridged into the
OpenTelemetry SDK by ``humus_http.otel``), a log record per breaker state change (``LogRecord``), metrics in
the Prometheus format, readiness, and failure injection (``faults=True``, docs/failure-injection.md §14).
"""
from __future__ import annotations

from . import _native, otel
from ._async import AsyncClient
from ._cancel import CancelToken
from ._client import Client, QueryParams
from ._context import CallContext
from ._errors import (
    BulkheadFullError,
    CancelledCallError,
    CircuitOpenError,
    ConfigError,
    CrossOriginError,
    HTTPStatusError,
    InvalidRequestError,
    ProtocolError,
    ResourceError,
    ResponseTooLargeError,
    UnknownUpstreamError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamTLSError,
    call_error,
)
from ._mock import MockHandler, MockReply, MockRequest
from ._response import Headers, HeaderTypes, Response
from ._settings import (
    TLS,
    Attempt,
    Breaker,
    BreakerCounts,
    BreakerPolicy,
    Bulkhead,
    Classification,
    Classifier,
    Duration,
    Probe,
    ProbeDecision,
    RetryBudget,
    Runtime,
    Trip,
    default_classify,
    preset_classify,
)
from ._telemetry import LogRecord, LogSink, Span, SpanSink
from ._upstreams import Upstreams

__version__ = "0.1.0"
#: The version of the C core linked into the extension.
core_version: str = _native.VERSION

__all__ = [
    "TLS",
    "AsyncClient",
    "Attempt",
    "Breaker",
    "BreakerCounts",
    "BreakerPolicy",
    "Bulkhead",
    "BulkheadFullError",
    "CallContext",
    "CancelToken",
    "CancelledCallError",
    "CircuitOpenError",
    "Classification",
    "Classifier",
    "Client",
    "ConfigError",
    "CrossOriginError",
    "Duration",
    "HTTPStatusError",
    "HeaderTypes",
    "Headers",
    "InvalidRequestError",
    "LogRecord",
    "LogSink",
    "MockHandler",
    "MockReply",
    "MockRequest",
    "Probe",
    "ProbeDecision",
    "ProtocolError",
    "QueryParams",
    "ResourceError",
    "Response",
    "ResponseTooLargeError",
    "RetryBudget",
    "Runtime",
    "Span",
    "SpanSink",
    "Trip",
    "UnknownUpstreamError",
    "UpstreamConnectError",
    "UpstreamError",
    "UpstreamTLSError",
    "UpstreamTimeoutError",
    "Upstreams",
    "call_error",
    "core_version",
    "default_classify",
    "otel",
    "preset_classify",
]
