"""The exceptions of humus_http: every one is an UpstreamError carrying the C status name, the message, the
client's origin and the attempts the call made. httpx's family names are bases or aliases of this tree:

    HTTPError = UpstreamError
    ├── RequestError                 no response came (httpx's RequestError, and the client's own verdicts)
    │   ├── TransportError
    │   │   ├── TimeoutException     UpstreamTimeoutError
    │   │   ├── ConnectError         UpstreamConnectError, UpstreamTLSError
    │   │   ├── ProtocolError = RemoteProtocolError
    │   │   └── ResourceError
    │   ├── ResponseTooLargeError, CircuitOpenError, BulkheadFullError, CancelledCallError
    ├── HTTPStatusError, ConfigError, CrossOriginError, InvalidRequestError, UnknownUpstreamError

Exceptions are plain values: create, raise and read them from any thread.
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from . import _native
from ._trace import AttemptRecord
from ._trace import parse as parse_trace

if TYPE_CHECKING:
    from ._response import Response

__all__ = [
    "BulkheadFullError",
    "CancelledCallError",
    "CircuitOpenError",
    "ConfigError",
    "ConnectError",
    "CrossOriginError",
    "HTTPError",
    "HTTPStatusError",
    "InvalidRequestError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "ResourceError",
    "ResponseTooLargeError",
    "TimeoutException",
    "TransportError",
    "UnknownUpstreamError",
    "UpstreamConnectError",
    "UpstreamError",
    "UpstreamTLSError",
    "UpstreamTimeoutError",
    "call_error",
]


class UpstreamError(Exception):
    """A call to a dependency failed, or a client could not be built.

    ``status`` is the C status name (``"HUMUS_E_TIMEOUT"``), ``message`` what went wrong, ``origin`` the
    client's origin (``"https://payments:8443"``, empty when none is known yet), ``attempts`` the attempts the
    call made (0 when it failed before sending anything), ``fields`` the settings keys or header names the
    error is about, and ``elapsed`` how long the call took on its runtime's clock (to the microsecond;
    virtual time on a virtual clock), None when the error did not come from a call (settings, a request refused before
    it was sent). ``trace`` is the failed call's decision trace (docs/trace.md §20): one AttemptRecord per
    attempt, empty for an error no call made. Exceptions are plain values, safe to read from any thread.
    """

    def __init__(self, message: str, *, status: str = "HUMUS_E_UNKNOWN", origin: str = "", attempts: int = 0,
                 fields: tuple[str, ...] = (), elapsed: timedelta | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.origin = origin
        self.attempts = attempts
        self.fields = fields
        self.elapsed = elapsed
        #: Where the trace comes from until it is read: the native error's record, or None (no call made it).
        self._trace_of: _native.ErrorInfo | None = None
        self._trace: list[AttemptRecord] | None = None

    @property
    def trace(self) -> list[AttemptRecord]:
        """The decision trace of the call that failed: one record per attempt, in order (docs/trace.md §20)."""
        trace = self._trace
        if trace is None:
            source = self._trace_of
            trace = self._trace = [] if source is None else parse_trace(source.trace_json())
            self._trace_of = None
        return trace

    def __str__(self) -> str:
        where = f" on {self.origin}" if self.origin else ""
        tries = f", {self.attempts} attempt{'s' if self.attempts != 1 else ''}" if self.attempts else ""
        return f"{self.message} [{self.status}{where}{tries}]"


#: httpx's name of the base of its exceptions; here every exception of humus_http.
HTTPError = UpstreamError


class RequestError(UpstreamError):
    """No response came (httpx's RequestError): a transport failure, or a verdict of the client's own — breaker
    open, bulkhead full, the response past its size limit, the call cancelled."""


class TransportError(RequestError):
    """The network exchange failed: a timeout, no connection, a broken exchange, a local shortage (httpx's
    TransportError)."""


class TimeoutException(TransportError):
    """httpx's name of a timeout's base; here UpstreamTimeoutError is the one raised."""


class ConnectError(TransportError):
    """httpx's name of a failure to connect, TLS handshake included; here UpstreamConnectError or
    UpstreamTLSError is the one raised."""


class UpstreamTimeoutError(TimeoutException, TimeoutError):
    """The call's deadline (``timeout``, or the per-call ``timeout=``) passed before a response came; an attempt
    that ran past ``attempt_timeout`` and could not be retried ends this way too."""


class UpstreamConnectError(ConnectError):
    """No connection could be made: refused, unreachable, or the host name did not resolve."""


class UpstreamTLSError(ConnectError):
    """The TLS handshake failed: an untrusted certificate, a hostname mismatch, a refused TLS version, or a
    client certificate the server refused or required."""


class ProtocolError(TransportError):
    """The exchange broke after the connection was made: the peer broke HTTP, reset or closed the connection
    before a whole response, or refused the HTTP/2 stream. Also reachable as RemoteProtocolError (httpx's
    name; httpx would raise ReadError for a reset connection)."""


#: httpx's name of the peer breaking the protocol.
RemoteProtocolError = ProtocolError


class ResponseTooLargeError(RequestError):
    """The response's header block passed ``max_response_headers`` (or a buffered body ``max_response_body``):
    the client's own limit, so the call was not retried and the breaker was not told."""


class ResourceError(TransportError):
    """A local shortage — out of file descriptors, local ports or socket buffers — stopped the call. Not the
    dependency's fault: not retried, no breaker verdict, no budget charge."""


class CircuitOpenError(RequestError):
    """The client's circuit breaker is open: nothing was sent. ``retry_after`` is how long (seconds) it stays
    open."""

    def __init__(self, message: str, *, retry_after: float, status: str = "HUMUS_E_REJECTED", origin: str = "",
                 attempts: int = 0, fields: tuple[str, ...] = (), elapsed: timedelta | None = None) -> None:
        super().__init__(message, status=status, origin=origin, attempts=attempts, fields=fields, elapsed=elapsed)
        self.retry_after = retry_after


class BulkheadFullError(RequestError):
    """No bulkhead slot came free within ``bulkhead.wait``: nothing was sent."""


class CrossOriginError(UpstreamError):
    """The request's URL is on another origin than the client's ``base_url``: nothing was sent. ``message`` is
    the core's (naming both origins); str() adds what to do instead."""

    def __str__(self) -> str:
        return (super().__str__() + " — a client serves one origin (docs/origin.md §2): make a client for the "
                "other origin, e.g. humus_http.Client(\"scheme://host:port\", timeout=...), or name both in "
                "humus_http.Upstreams")


class ConfigError(UpstreamError, ValueError):
    """Settings (or runtime options) are invalid; ``fields`` lists every bad key, the message says why."""


class UnknownUpstreamError(UpstreamError, KeyError):
    """``Upstreams.client(name)`` (or ``async_client``) for a name the configuration does not have. The message
    lists the configured names; ``name`` is the one asked for and ``configured`` the names there are. A
    KeyError too, as a lookup in a mapping raises."""

    def __init__(self, message: str, *, name: str, configured: tuple[str, ...],
                 status: str = "HUMUS_E_INVALID_ARGUMENT", origin: str = "", attempts: int = 0,
                 fields: tuple[str, ...] = ("name",), elapsed: timedelta | None = None) -> None:
        super().__init__(message, status=status, origin=origin, attempts=attempts, fields=fields, elapsed=elapsed)
        self.name = name
        self.configured = configured


class InvalidRequestError(UpstreamError, ValueError):
    """The request itself is invalid (a bad method, URL or header, e.g. a CR or LF in a header value)."""


class CancelledCallError(RequestError):
    """The native call was cancelled: its CancelToken was cancelled, or its client was closed while it was in
    flight."""


class HTTPStatusError(UpstreamError):
    """Raised by ``Response.raise_for_status()`` for a response that is not 2xx; ``response`` is that response
    and ``status_code`` its status."""

    def __init__(self, message: str, *, response: Response) -> None:
        super().__init__(message, status="HTTP_STATUS", origin=response.origin, attempts=response.attempts,
                         elapsed=response.elapsed)
        self.response = response
        self.status_code = response.status_code

    @property
    def trace(self) -> list[AttemptRecord]:
        """The decision trace of the call that got the response."""
        return self.response.trace

    def __str__(self) -> str:
        return self.message


_KINDS: dict[str, type[UpstreamError]] = {
    "HUMUS_E_TIMEOUT": UpstreamTimeoutError,
    "HUMUS_E_CONNECT": UpstreamConnectError,
    "HUMUS_E_RESOLVE": UpstreamConnectError,
    "HUMUS_E_CONNECTION_LOST": ProtocolError,
    "HUMUS_E_PROTOCOL": ProtocolError,
    "HUMUS_E_STREAM_REFUSED": ProtocolError,
    "HUMUS_E_TOO_LARGE": ResponseTooLargeError,
    "HUMUS_E_RESOURCE": ResourceError,
    "HUMUS_E_TLS": UpstreamTLSError,
    "HUMUS_E_TLS_CLIENT_CERT": UpstreamTLSError,
    "HUMUS_E_BULKHEAD_FULL": BulkheadFullError,
    "HUMUS_E_CROSS_ORIGIN": CrossOriginError,
    "HUMUS_E_CONFIG": ConfigError,
    "HUMUS_E_PROGRAM": ConfigError,  # rules across settings fields; every binding builds from the JSON form
    "HUMUS_E_INVALID_ARGUMENT": InvalidRequestError,
    "HUMUS_E_CANCELLED": CancelledCallError,
}


# Where from_native leaves, on a callback's exception, the UpstreamError of the call it ended (call_error()).
_CALL_ERROR = "_humus_http_call_error"


def call_error(exc: BaseException) -> UpstreamError | None:
    """How the call ended that ``exc`` ended, for an exception a callback raised (a classifier, a breaker policy,
    a mock transport handler): the call raises the callback's own exception, and this returns an UpstreamError
    with status ``"HUMUS_E_CALLBACK"``, the call's ``attempts``, ``origin``, ``elapsed`` and the core's message.
    None for an exception no callback of a call raised (an UpstreamError is its own record)."""
    found = getattr(exc, _CALL_ERROR, None)
    return found if isinstance(found, UpstreamError) else None


def _elapsed(info: _native.ErrorInfo) -> timedelta | None:
    return None if info.elapsed_us < 0 else timedelta(microseconds=info.elapsed_us)



def from_native(info: _native.ErrorInfo, origin: str) -> BaseException:
    """The exception for what a C call reported: the one a Python callback raised (for HUMUS_E_CALLBACK), else
    the UpstreamError subclass of the status."""
    if info.exception is not None:
        exc: BaseException = info.exception
        exc.add_note(f"humus_http: raised by a callback of the client for {origin}; the call ended "
                     f"after {info.attempts} attempt(s)")
        record = UpstreamError(info.message, status=info.status_name, origin=origin, attempts=info.attempts,
                               fields=info.fields, elapsed=_elapsed(info))
        record._trace_of = info
        try:
            setattr(exc, _CALL_ERROR, record)
        except (AttributeError, TypeError):  # an exception type that takes no attributes: the note remains
            pass
        return exc
    error: UpstreamError
    if info.status_name == "HUMUS_E_REJECTED":
        error = CircuitOpenError(info.message, retry_after=info.retry_after_ms / 1000.0, status=info.status_name,
                                 origin=origin, attempts=info.attempts, fields=info.fields, elapsed=_elapsed(info))
    else:
        kind = _KINDS.get(info.status_name, UpstreamError)
        error = kind(info.message, status=info.status_name, origin=origin, attempts=info.attempts,
                     fields=info.fields, elapsed=_elapsed(info))
    error._trace_of = info
    return error
