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
the Prometheus format (and as a prometheus_client collector, ``humus_http.prometheus``), readiness, and failure injection (``faults=True``, docs/failure-injection.md §14).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _native
from ._auth import AuthTypes, BasicAuth, BearerAuth
from ._cancel import CancelToken
from ._client import BodyOptions, CallOptions, Client, EventHooks, QueryParams
from ._context import CallContext, deadline_from_request
from ._errors import (
    BulkheadFullError,
    CancelledCallError,
    CircuitOpenError,
    ConfigError,
    ConnectError,
    CrossOriginError,
    HTTPError,
    HTTPStatusError,
    InvalidRequestError,
    ProtocolError,
    RemoteProtocolError,
    RequestError,
    ResourceError,
    ResponseTooLargeError,
    TimeoutException,
    TransportError,
    UnknownUpstreamError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamTLSError,
    call_error,
)
from ._forms import CookieTypes, DataTypes, FilesTypes, FileTypes
from ._mock import MockHandler, MockReply, MockRequest
from ._response import Headers, HeaderTypes, MutableHeaders, Redirect, Request, Response
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
    Hedge,
    Probe,
    ProbeDecision,
    RetryBudget,
    Runtime,
    Share,
    Trip,
    default_classify,
    preset_classify,
)
from ._telemetry import LogRecord, LogSink, Span, SpanSink
from ._timeout import USE_CLIENT_DEFAULT, Timeout, UseClientDefault
from ._trace import AttemptRecord, BreakerPosition
from ._upstreams import Upstreams
from ._urls import URL

if TYPE_CHECKING:
    from . import httpx, otel, prometheus, requests
    from ._async import AsyncBodyOptions, AsyncClient

#: Names imported on first use (PEP 562): the asyncio twin pulls in asyncio (with ssl, socket, logging and
#: concurrent.futures), about a third of this package's import time, which a blocking program never needs.
_LAZY = {"AsyncClient": "._async", "AsyncBodyOptions": "._async"}
#: Submodules imported on first use the same way: the bridges to OpenTelemetry and prometheus_client, and the
#: httpx transport and requests adapter, which a program without those packages never touches (``import
#: humus_http.otel`` works as for any submodule). The last two stay out of __all__: ``from humus_http import *``
#: would shadow the caller's own ``httpx`` and ``requests``.
_LAZY_MODULES = frozenset(("httpx", "otel", "prometheus", "requests"))


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)


__version__ = "0.1.0"
#: The version of the C core linked into the extension.
core_version: str = _native.VERSION

__all__ = [
    "TLS",
    "URL",
    "USE_CLIENT_DEFAULT",
    "AsyncBodyOptions",
    "AsyncClient",
    "Attempt",
    "AttemptRecord",
    "AuthTypes",
    "BasicAuth",
    "BearerAuth",
    "BodyOptions",
    "Breaker",
    "BreakerCounts",
    "BreakerPolicy",
    "BreakerPosition",
    "Bulkhead",
    "BulkheadFullError",
    "CallContext",
    "CallOptions",
    "CancelToken",
    "CancelledCallError",
    "CircuitOpenError",
    "Classification",
    "Classifier",
    "Client",
    "ConfigError",
    "ConnectError",
    "CookieTypes",
    "CrossOriginError",
    "DataTypes",
    "Duration",
    "EventHooks",
    "FileTypes",
    "FilesTypes",
    "HTTPError",
    "HTTPStatusError",
    "HeaderTypes",
    "Headers",
    "Hedge",
    "InvalidRequestError",
    "LogRecord",
    "LogSink",
    "MockHandler",
    "MockReply",
    "MockRequest",
    "MutableHeaders",
    "Probe",
    "ProbeDecision",
    "ProtocolError",
    "QueryParams",
    "Redirect",
    "RemoteProtocolError",
    "Request",
    "RequestError",
    "ResourceError",
    "Response",
    "ResponseTooLargeError",
    "RetryBudget",
    "Runtime",
    "Share",
    "Span",
    "SpanSink",
    "Timeout",
    "TimeoutException",
    "TransportError",
    "Trip",
    "UnknownUpstreamError",
    "UpstreamConnectError",
    "UpstreamError",
    "UpstreamTLSError",
    "UpstreamTimeoutError",
    "Upstreams",
    "UseClientDefault",
    "call_error",
    "core_version",
    "deadline_from_request",
    "default_classify",
    "otel",
    "preset_classify",
    "prometheus",
]

# httpx's module-level calls (httpx.get(url), ...) build a client per call; humus_http has none on purpose, and
# says what to write instead. Hidden from type checkers, so that a misspelt name stays a type error.
_MODULE_CALLS = frozenset(("request", "stream", "get", "head", "options", "delete", "post", "put", "patch"))

if not TYPE_CHECKING:
    def __getattr__(name: str) -> object:
        where = _LAZY.get(name)
        if where is not None or name in _LAZY_MODULES:
            import importlib

            if where is None:
                return importlib.import_module("." + name, __name__)  # the import binds it in globals()
            value = getattr(importlib.import_module(where, __name__), name)
            globals()[name] = value  # later lookups find it directly
            return value
        if name in _MODULE_CALLS:
            raise AttributeError(
                f"humus_http has no module-level {name}(): a client is made once per dependency, for one origin "
                f"(docs/origin.md §2), and holds its breaker, retry budget and connections — build one and call "
                f"it: with humus_http.Client(\"https://host\", timeout=10.0) as client: client.{name}(\"/path\") "
                f"(or humus_http.Upstreams for several dependencies)", name=name)
        raise AttributeError(f"module 'humus_http' has no attribute {name!r}", name=name)
