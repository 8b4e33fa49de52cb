"""The mock transport's Python face (docs/testing-kit.md §16.2): the request a handler receives, the reply it returns, and the
adapter the extension calls. ``humus_http.testing`` builds a scripted dependency and a pytest fixture on top."""
from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _native
from ._errors import (
    ProtocolError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamTLSError,
)

__all__ = ["MockHandler", "MockReply", "MockRequest"]

# The transport errors a reply may fail an attempt with: what a dependency that gave no response can cause.
_TRANSPORT_ERRORS = ("HUMUS_E_TIMEOUT", "HUMUS_E_CONNECT", "HUMUS_E_RESOLVE", "HUMUS_E_CONNECTION_LOST",
                     "HUMUS_E_PROTOCOL", "HUMUS_E_STREAM_REFUSED", "HUMUS_E_TLS", "HUMUS_E_TLS_CLIENT_CERT")
# An exception class given as MockReply.error: the transport error a call of a real client raises it for.
_ERROR_CLASSES: dict[type[UpstreamError], str] = {
    UpstreamTimeoutError: "HUMUS_E_TIMEOUT",
    UpstreamConnectError: "HUMUS_E_CONNECT",
    ProtocolError: "HUMUS_E_CONNECTION_LOST",
    UpstreamTLSError: "HUMUS_E_TLS",
}


def _path_of(url: str) -> str:
    """The path and query of an absolute URL: ``http://payments:8080/a?b=1`` → ``/a?b=1``."""
    scheme = url.find("://")
    start = 0 if scheme < 0 else scheme + 3
    cut = min((i for i in (url.find(c, start) for c in "/?#") if i >= 0), default=-1)
    if cut < 0:
        return "/"
    rest = url[cut:]
    return rest if rest.startswith("/") else "/" + rest


class MockRequest:
    """A request as the mock transport received it: ``method``, ``url``, ``path`` (path and query, as
    ``"/pay?x=1"``) and ``body`` (bytes, ``b""`` for none) are plain values; ``header(name)`` reads a request
    header (case-insensitive). Headers can be read while the handler runs; afterwards only the names read then
    are still answered (the C ABI lends the request for the callback's duration and offers no list of headers).
    Read it from one thread at a time."""

    __slots__ = ("_seen", "_view", "body", "method", "url")

    def __init__(self, view: _native.MockRequestView) -> None:
        self._view: _native.MockRequestView | None = view
        self._seen: dict[str, str | None] = {}
        #: The request's method, e.g. ``"GET"``.
        self.method: str = view.method
        #: The absolute URL the attempt was sent to (a redirect's own URL for a redirect's request).
        self.url: str = view.url
        #: The body the attempt carried, ``b""`` when it had none.
        self.body: bytes = view.body()

    @property
    def path(self) -> str:
        """The URL's path and query, e.g. ``"/pay?x=1"`` (``"/"`` for none)."""
        return _path_of(self.url)

    def header(self, name: str) -> str | None:
        """The first value of a request header (case-insensitive), or None when the request has none. After the
        handler returned, only the names read during it are answered (RuntimeError for another)."""
        key = name.lower()
        if key in self._seen:
            return self._seen[key]
        view = self._view
        if view is None:
            raise RuntimeError(f"MockRequest.header({name!r}): a request's headers are readable only while the mock "
                               "handler runs; read the headers you need during the handler")
        value = view.header(name)
        self._seen[key] = value
        return value

    def _release(self) -> None:
        self._view = None

    def __repr__(self) -> str:
        return f"<MockRequest {self.method} {self.url}>"


def _headers(value: object) -> tuple[tuple[str, str], ...]:
    items: Any = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, (str, bytes)):
        raise TypeError("MockReply.headers must be a mapping or (name, value) pairs, not a string")
    out: list[tuple[str, str]] = []
    for pair in items:
        try:
            name, val = pair
        except (TypeError, ValueError):
            raise TypeError(f"MockReply.headers must be (name, value) pairs, got {pair!r}") from None
        if not isinstance(name, str) or not isinstance(val, str):
            raise TypeError(f"MockReply.headers: name and value must be str, got {pair!r}")
        for part, what in ((name, "name"), (val, "value")):
            if "\0" in part or "\r" in part or "\n" in part:
                raise ValueError(f"MockReply.headers: header {name!r}: the {what} contains NUL, CR or LF")
        out.append((name, val))
    return tuple(out)


def _error_name(error: object) -> str | None:
    if error is None:
        return None
    if isinstance(error, type) and issubclass(error, UpstreamError):
        for kind, name in _ERROR_CLASSES.items():
            if issubclass(error, kind):
                return name
        raise ValueError(f"MockReply.error: {error.__name__} is no transport error; give UpstreamConnectError, "
                         "UpstreamTimeoutError, ProtocolError, UpstreamTLSError or a status name such as "
                         "'HUMUS_E_CONNECTION_LOST'")
    if isinstance(error, str):
        if error not in _TRANSPORT_ERRORS:
            raise ValueError(f"MockReply.error: {error!r} is no transport error; one of {', '.join(_TRANSPORT_ERRORS)}")
        return error
    raise TypeError(f"MockReply.error must be a status name or an UpstreamError subclass, not {error!r}")


@dataclass(frozen=True)
class MockReply:
    """What the mock transport answers one attempt (docs/testing-kit.md §16.2).

    ``status``, ``headers`` (a mapping or ``(name, value)`` pairs, in order) and ``body`` (bytes, or str sent as
    UTF-8) make a response. ``error`` fails the attempt with a transport error instead: a status name
    (``"HUMUS_E_CONNECT"``, ``"HUMUS_E_CONNECTION_LOST"``, ``"HUMUS_E_TIMEOUT"``, ``"HUMUS_E_TLS"``, ...) or the
    exception class a real failure of that kind raises (``UpstreamConnectError`` → ``HUMUS_E_CONNECT``,
    ``ProtocolError`` → ``HUMUS_E_CONNECTION_LOST``, ``UpstreamTimeoutError`` → ``HUMUS_E_TIMEOUT``,
    ``UpstreamTLSError`` → ``HUMUS_E_TLS``), with ``message``. ``delay_ms`` answers that much later on the
    runtime's clock; ``hang`` never answers, so the attempt times out. Delays and hangs are bounded by the
    attempt's timeout as a real dependency's would be. ``body_error`` (named as ``error`` is) breaks the body off
    after ``body_error_after`` bytes, as a reset mid-body would: a streamed read (``Client.stream``) gets those
    bytes and then raises, a buffered call fails with it. A frozen value: share it between threads freely."""

    status: int = 200
    headers: Mapping[str, str] | Sequence[tuple[str, str]] = ()
    body: bytes | str = b""
    error: str | type[UpstreamError] | None = None
    message: str = ""
    delay_ms: int = 0
    hang: bool = False
    body_error: str | type[UpstreamError] | None = None
    body_error_after: int = 0
    _native: tuple[int, list[tuple[str, str]], bytes, int, str, int, bool, int, int] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.status, bool) or not isinstance(self.status, int) or not 100 <= self.status <= 999:
            raise ValueError(f"MockReply.status must be an HTTP status (100-999), not {self.status!r}")
        headers = _headers(self.headers)
        if isinstance(self.body, str):
            body = self.body.encode()
        elif isinstance(self.body, (bytes, bytearray, memoryview)):
            body = bytes(self.body)
        else:
            raise TypeError(f"MockReply.body must be bytes or str, not {type(self.body).__name__}")
        name = _error_name(self.error)
        if not isinstance(self.message, str) or "\0" in self.message:
            raise ValueError(f"MockReply.message must be a str without NUL, not {self.message!r}")
        delay = self.delay_ms
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not math.isfinite(delay) or delay < 0:
            raise ValueError(f"MockReply.delay_ms must be a number of milliseconds >= 0, not {delay!r}")
        if not isinstance(self.hang, bool):
            raise TypeError(f"MockReply.hang must be a bool, not {self.hang!r}")
        code = 0 if name is None else _native.status_number(name)
        if code is None:  # a name this core does not know: refused above, kept as a guard
            raise ValueError(f"MockReply.error: the core knows no status {name!r}")
        body_name = _error_name(self.body_error)
        body_code = 0 if body_name is None else _native.status_number(body_name)
        if body_code is None:
            raise ValueError(f"MockReply.body_error: the core knows no status {body_name!r}")
        after = self.body_error_after
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError(f"MockReply.body_error_after must be a number of bytes >= 0, not {after!r}")
        object.__setattr__(self, "headers", headers)
        object.__setattr__(self, "_native", (self.status, list(headers), body, code,
                                             self.message or "mock transport error", math.ceil(delay), self.hang,
                                             body_code, after))


#: A mock transport handler: called with each attempt's request on the thread that drives the attempt (the
#: caller's for a blocking call, the runtime's event-loop thread for an asynchronous one; several at once when
#: calls run concurrently, so it must be thread-safe), holding the GIL. It returns the MockReply; one that
#: raises fails the attempt, and the call it ends raises that exception.
MockHandler = Callable[[MockRequest], MockReply]


class _HandlerBox:
    """Holds an installed handler for its runtime; the extension reaches it only through a weak reference, so
    a handler that refers back to its runtime makes a cycle the garbage collector can see and free."""

    __slots__ = ("__weakref__", "handler")

    def __init__(self, handler: MockHandler) -> None:
        self.handler = handler


def adapter(handler: MockHandler) -> tuple[_HandlerBox, Callable[[_native.MockRequestView], tuple[Any, ...]]]:
    """The box the runtime keeps and the callable the extension calls: the handler, its reply checked."""
    box = _HandlerBox(handler)
    ref = weakref.ref(box)

    def respond(view: _native.MockRequestView) -> tuple[Any, ...]:
        held = ref()
        if held is None:
            raise RuntimeError("the humus_http.Runtime that installed this mock transport handler is gone")
        request = MockRequest(view)
        try:
            reply = held.handler(request)
        finally:
            request._release()
        if not isinstance(reply, MockReply):
            raise TypeError(f"mock transport handler {held.handler!r} returned {type(reply).__name__}, "
                            "not humus_http.MockReply")
        return reply._native

    return box, respond
