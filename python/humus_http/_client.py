"""The blocking client, and what it shares with the asynchronous one: settings, URLs, request encoding."""
from __future__ import annotations

import json as jsonlib
import math
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Self

from . import _native
from ._at_exit import CloseAtExit
from ._cancel import CancelToken
from ._closing import Closing
from ._context import ContextTypes, context_parts
from ._errors import from_native
from ._response import BodyReader, ContentTypes, HeaderTypes, Response, encode_body, request_headers
from ._settings import (
    _STATES,
    TLS,
    Breaker,
    BreakerCounts,
    BreakerPolicy,
    Bulkhead,
    Classifier,
    Duration,
    Probe,
    RetryBudget,
    Runtime,
    Trip,
    check_settings_mapping,
    classifier_adapter,
    default_runtime,
    settings_json,
)

__all__ = ["Client", "QueryParams"]

#: What ``params=`` accepts: a mapping (a value may be a sequence for repeated keys), (key, value) pairs, or an
#: already encoded query string.
QueryParams = Mapping[str, Any] | Sequence[tuple[str, Any]] | str

_RETRY_MODES = {None: 0, False: 1, True: 2}  # HUMUS_RETRY_MODE_DEFAULT, _FORBID, _FORCE
_ABSOLUTE = ("http://", "https://", "HTTP://", "HTTPS://")
_NativeResponse = _native.Response

# Closed at exit before Python finalizes (see _at_exit.py).
_open_clients: CloseAtExit[_BaseClient] = CloseAtExit(lambda client: client._close_native())


def _origin_of(base_url: str) -> str:
    """scheme://host:port with the scheme's default port filled in (docs/origin.md §2); the URL itself if unparsable."""
    try:
        parts = urllib.parse.urlsplit(base_url)
        scheme = parts.scheme.lower()
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
        host = parts.hostname or ""
    except ValueError:
        return base_url
    if not scheme or not host or port is None:
        return base_url
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _prefix_of(base_url: str) -> str:
    """What relative URLs are joined onto: scheme://authority/path/ of base_url (query and fragment dropped)."""
    try:
        parts = urllib.parse.urlsplit(base_url)
    except ValueError:  # the core refuses such a base_url with a ConfigError naming it
        return base_url.rstrip("/") + "/"
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


def _encode_query(params: QueryParams) -> str:
    if isinstance(params, str):
        return params.lstrip("?")
    items = params.items() if isinstance(params, Mapping) else params
    pairs: list[tuple[str, str]] = []
    for key, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is None:
                v = ""
            elif v is True or v is False:
                v = "true" if v else "false"
            pairs.append((str(key), str(v)))
    return urllib.parse.urlencode(pairs)


def _timeout_ms(timeout: float | None) -> int:
    """0 for none; a value the core refuses (-1) for one <= 0 so that its message names the field."""
    if timeout is None:
        return 0
    if not timeout > 0:
        return -1
    # Rounded to the microsecond first: 2.007 s * 1000 is 2007.0000000000002 in binary floating point.
    return max(1, math.ceil(round(timeout * 1000, 3)))


class _BaseClient:
    """What Client and AsyncClient share: building the native client and encoding requests."""

    def __init__(self, base_url: str, *, timeout: Duration | None = None, attempt_timeout: Duration | None = None,
                 connect_timeout: Duration | None = None, max_attempts: int | None = None,
                 backoff_base: Duration | None = None, backoff_max: Duration | None = None,
                 max_retry_after: Duration | None = None, retry_budget: RetryBudget | None = None,
                 breaker: Breaker | None = None, trip: Trip | None = None, probe: Probe | None = None,
                 bulkhead: Bulkhead | None = None, max_idle_connections: int | None = None,
                 idle_timeout: Duration | None = None, max_connection_lifetime: Duration | None = None,
                 max_response_headers: int | None = None, max_response_body: int | None = None,
                 decompress: bool | None = None, tls: TLS | None = None,
                 http_version: Literal["auto", "1.1", "2"] | None = None, headers: Mapping[str, str] | None = None,
                 classify: Literal["humus", "jfast", "strict"] | Classifier | None = None,
                 breaker_policy: BreakerPolicy | None = None, runtime: Runtime | None = None,
                 forward_authorization: bool | None = None, forward_scenario: bool | None = None) -> None:
        # None is "not given": the core applies its defaults (docs/settings.md §3) and checks exactly what was given.
        values: dict[str, object] = {
            "timeout": timeout, "attempt_timeout": attempt_timeout, "connect_timeout": connect_timeout,
            "max_attempts": max_attempts, "backoff_base": backoff_base, "backoff_max": backoff_max,
            "max_retry_after": max_retry_after, "retry_budget": retry_budget, "breaker": breaker, "trip": trip,
            "probe": probe, "bulkhead": bulkhead, "max_idle_connections": max_idle_connections,
            "idle_timeout": idle_timeout, "max_connection_lifetime": max_connection_lifetime,
            "max_response_headers": max_response_headers, "max_response_body": max_response_body,
            "decompress": decompress, "tls": tls, "http_version": http_version, "headers": headers,
            "forward_authorization": forward_authorization, "forward_scenario": forward_scenario,
        }
        if isinstance(classify, str):
            values["classify"] = classify
            classify = None
        self._build(base_url, settings_json(base_url, values), classify, breaker_policy, runtime)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, classify: Classifier | None = None,
                      breaker_policy: BreakerPolicy | None = None, runtime: Runtime | None = None) -> Self:
        """A client from the settings' JSON form (docs/settings.md) of settings (``{"base_url": ..., "timeout": "5s", "breaker":
        {...}}``, as in an upstreams file); ``classify`` and ``breaker_policy`` add what JSON cannot carry.
        Every bad key is reported at once (ConfigError.fields)."""
        document = check_settings_mapping(settings)
        client = cls.__new__(cls)
        base_url = document.get("base_url")
        client._build(base_url if isinstance(base_url, str) else "", document, classify, breaker_policy, runtime)
        return client

    def _build(self, base_url: str, document: Mapping[str, object], classify: Classifier | None,
               breaker_policy: BreakerPolicy | None, runtime: Runtime | None) -> None:
        self.base_url = base_url
        self.origin = _origin_of(base_url)
        self._prefix = _prefix_of(base_url)
        self._runtime = runtime if runtime is not None else default_runtime()
        trip_fn, probe_fn = breaker_policy.adapters() if breaker_policy is not None else (None, None)
        try:
            self._native = _native.Client(self._runtime.native, jsonlib.dumps(document),
                                          None if classify is None else classifier_adapter(classify),
                                          trip_fn, probe_fn)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        _open_clients.add(self)

    # --- requests -------------------------------------------------------------------------------------------

    def _target(self, url: str, params: QueryParams | None) -> str:
        if not url.startswith(_ABSOLUTE):
            url = self._prefix + url.lstrip("/")
        if params is not None:
            query = _encode_query(params)
            if query:
                url += ("&" if "?" in url else "?") + query
        return url

    def _encode(self, url: str, headers: HeaderTypes | None, params: QueryParams | None,
                content: ContentTypes | None, json: Any) -> tuple[str, list[tuple[str, str]] | None,
                                                               bytes | BodyReader | None]:
        """The target URL, the header list and the body bytes the extension takes."""
        if headers is None and params is None and content is None and json is None:
            # The common call, a bare URL: kept short, since it runs holding the GIL.
            return (url if url.startswith(_ABSOLUTE) else self._prefix + url.lstrip("/")), None, None
        target = self._target(url, params)
        if content is None and json is None:
            return target, (None if headers is None else request_headers(headers)), None
        body, content_type = encode_body(content, json)
        hdrs = request_headers(headers)
        if content_type is not None and not any(k.lower() == "content-type" for k, _ in hdrs or ()):
            hdrs = (hdrs or []) + [("Content-Type", content_type)]
        return target, hdrs, body

    # --- state ----------------------------------------------------------------------------------------------

    @property
    def breaker_state(self) -> str:
        """The circuit breaker's state now: ``"closed"``, ``"open"`` or ``"half_open"`` (read lazily: an open
        breaker whose ``open_for`` has passed reads ``"half_open"``). Thread-safe."""
        return self._native.breaker_state

    @property
    def breaker_counts(self) -> BreakerCounts:
        """The circuit breaker's counts now (docs/breaker.md §9.3): its state, the counts since that state began and the last
        ``window`` results, as a breaker policy sees them (read lazily, as breaker_state). Thread-safe."""
        state, *counts = self._native.breaker_counts()
        return BreakerCounts(_STATES.get(state, "unknown"), *counts)

    @property
    def budget_tokens(self) -> float:
        """The retry budget's balance now (docs/retries.md §6.4): the tokens of a ``"token_bucket"`` budget, or the retries a
        ``"ratio"`` budget still allows in its window. A retry needs more than half a token. Thread-safe."""
        return self._native.budget_tokens()

    @classmethod
    def from_client(cls, other: _BaseClient) -> Self:
        """A client of this class over the same dependency client as ``other`` (a Client or an AsyncClient):
        the same connections, circuit breaker, retry budget and bulkhead, so blocking and asyncio code calling
        one dependency count against one breaker. Each closes independently; the connections close with the
        last. RuntimeError when ``other`` is closed."""
        if not isinstance(other, _BaseClient):
            raise TypeError(f"from_client takes a humus_http Client or AsyncClient, not {type(other).__name__}")
        return cls._adopt(other._native.share(), other.base_url, other.origin, other._runtime)

    @classmethod
    def _adopt(cls, native: _native.Client, base_url: str, origin: str, runtime: Runtime) -> Self:
        """A client of this class over a native client made elsewhere (another client's share, a registry's)."""
        client = cls.__new__(cls)
        client.base_url = base_url
        client.origin = origin
        client._prefix = _prefix_of(base_url)
        client._runtime = runtime
        client._native = native
        _open_clients.add(client)
        return client

    @property
    def is_closed(self) -> bool:
        """True once close() (or aclose()) ran."""
        return self._native.closed

    def _close_native(self) -> None:
        self._native.close()
        _open_clients.discard(self)


class Client(_BaseClient, Closing):
    """A blocking client for one dependency (docs/README.md §1): its connections, circuit breaker, retry budget and
    bulkhead. Build it once and share it: every method is thread-safe, and the GIL is released while a call
    waits. On the main thread a call can be interrupted by Ctrl-C (KeyboardInterrupt within ~50 ms).

    Arguments are the settings of docs/settings.md §3 (durations in seconds, or strings such as ``"250ms"``); ``classify``
    is a preset name or a callable ``(Attempt) -> Classification``; ``breaker_policy`` replaces the trip/probe
    policy with Python callables; ``runtime`` (default: a shared one) carries name overrides. An argument left
    None is not given: the core's default applies (docs/settings.md §3), and only the values given are checked against
    each other (``timeout=1.0`` alone caps the default ``attempt_timeout``; ``timeout=1.0,
    attempt_timeout=5.0`` is a ConfigError naming both). Invalid settings raise ConfigError listing every bad
    field.
    """

    def request(self, method: str, url: str, *, headers: HeaderTypes | None = None,
                params: QueryParams | None = None, content: ContentTypes | None = None, json: Any = None,
                idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """Makes one call: every attempt, wait and redirect, and returns the response whatever its status (the
        last 503 included). ``url`` is joined onto ``base_url`` unless absolute (then it must be on the
        client's origin). ``idempotency_key`` sets the Idempotency-Key header, making the request safe to send
        twice; ``retry=False`` makes one attempt, ``retry=True`` vouches for a request the rules would not
        retry; ``timeout`` (seconds) bounds this call below the client's; ``context`` (a CallContext, or the
        incoming request's headers) carries the request being served on to the dependency (docs/telemetry.md §12);
        ``cancel`` (a CancelToken) lets another thread or a callback end the call early. ``content`` is bytes,
        str (UTF-8), an iterator of bytes (sent chunked on HTTP/1.1; one attempt, since it cannot be replayed)
        or a file opened in binary mode (read as it is sent, the GIL released between reads; a seekable one has
        its length sent and is replayed from where it stood for a retry, a pipe makes one attempt). Raises an
        UpstreamError subclass when no response came, or the exception a callback raised."""
        return self._send(method.upper(), url, headers, params, content, json, idempotency_key, retry, timeout,
                          context, cancel)

    @contextmanager
    def stream(self, method: str, url: str, *, headers: HeaderTypes | None = None,
               params: QueryParams | None = None, content: ContentTypes | None = None, json: Any = None,
               idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
               context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Iterator[Response]:
        """As request(), but the response comes once its headers are in, its body still on its connection:
        ``with client.stream("GET", "/export") as resp: for chunk in resp.iter_bytes(): ...`` (also
        ``iter_text()``, ``iter_lines()``, ``read()``). Reads release the GIL and hold one chunk at a time;
        ``timeout`` and ``cancel`` bound them too. Leaving the block closes the response: a body not read to
        its end is closed with its connection, and the breaker counts the call's result when the body ends or
        closes. Raises as request() does; a read failing mid-body raises ProtocolError for a lost connection,
        UpstreamTimeoutError once ``timeout`` passed, or the cancellation's error."""
        target, hdrs, body = self._encode(url, headers, params, content, json)
        try:
            raw = self._native.open(method.upper(), target, hdrs, body, idempotency_key, _RETRY_MODES[retry],
                                    0 if timeout is None else _timeout_ms(timeout), context_parts(context),
                                    None if cancel is None else cancel.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        if type(raw) is not _NativeResponse:
            raise from_native(raw, self.origin)  # type: ignore[arg-type]
        response = Response(raw, self.origin, stream=True)
        try:
            yield response
        finally:
            response.close()

    def _send(self, method: str, url: str, headers: HeaderTypes | None, params: QueryParams | None,
              content: ContentTypes | None, json: Any, idempotency_key: str | None, retry: bool | None,
              timeout: float | None, context: ContextTypes | None, cancel: CancelToken | None) -> Response:
        # Everything here runs holding the GIL, which every other calling thread waits for: kept short.
        target, hdrs, body = self._encode(url, headers, params, content, json)
        try:
            raw = self._native.request(method, target, hdrs, body, idempotency_key, _RETRY_MODES[retry],
                                       0 if timeout is None else _timeout_ms(timeout), context_parts(context),
                                       None if cancel is None else cancel.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        if type(raw) is _NativeResponse:
            return Response(raw, self.origin)
        raise from_native(raw, self.origin)  # type: ignore[arg-type]

    def get(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
            idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
            context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A GET (see request())."""
        return self._send("GET", url, headers, params, None, None, idempotency_key, retry, timeout, context, cancel)

    def head(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
             idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
             context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A HEAD (see request())."""
        return self._send("HEAD", url, headers, params, None, None, idempotency_key, retry, timeout, context, cancel)

    def options(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """An OPTIONS (see request())."""
        return self._send("OPTIONS", url, headers, params, None, None, idempotency_key, retry, timeout, context, cancel)

    def delete(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
               idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
               context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A DELETE (see request())."""
        return self._send("DELETE", url, headers, params, None, None, idempotency_key, retry, timeout, context, cancel)

    def post(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
             content: ContentTypes | None = None, json: Any = None, idempotency_key: str | None = None,
             retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
             cancel: CancelToken | None = None) -> Response:
        """A POST (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return self._send("POST", url, headers, params, content, json, idempotency_key, retry, timeout, context,
                          cancel)

    def put(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
            content: ContentTypes | None = None, json: Any = None, idempotency_key: str | None = None,
            retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
            cancel: CancelToken | None = None) -> Response:
        """A PUT (see request())."""
        return self._send("PUT", url, headers, params, content, json, idempotency_key, retry, timeout, context,
                          cancel)

    def patch(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
              content: ContentTypes | None = None, json: Any = None, idempotency_key: str | None = None,
              retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
              cancel: CancelToken | None = None) -> Response:
        """A PATCH (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return self._send("PATCH", url, headers, params, content, json, idempotency_key, retry, timeout, context,
                          cancel)

    def close(self) -> None:
        """Closes the client: later calls raise RuntimeError; a call in flight on another thread finishes
        first, then the connections are closed. Idempotent, thread-safe."""
        self._close_native()

    def __repr__(self) -> str:
        return f"<humus_http.Client {self.origin}{' closed' if self.is_closed else ''}>"
