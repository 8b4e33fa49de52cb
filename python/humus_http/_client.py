"""The blocking client, and what it shares with the asynchronous one: settings, URLs, request encoding."""
from __future__ import annotations

import functools
import json as jsonlib
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Self, TypedDict, Unpack, cast

from . import _native
from ._at_exit import CloseAtExit
from ._auth import AuthTypes, auth_callable
from ._cancel import CancelToken, native_cancel
from ._closing import Closing
from ._context import ContextTypes, context_parts, within_deadline_ms
from ._errors import ConfigError, from_native
from ._forms import CookieTypes, DataTypes, FilesTypes, cookie_header, encode_form
from ._client_gen import ClientArguments
from ._hooks import AttemptHooks, EventHooks
from ._response import (
    BodyReader,
    ContentTypes,
    RequestHeaderTypes,
    SentHeaders,
    Request,
    RequestParts,
    Response,
    encode_body,
    merge_headers,
    request_headers,
)
from ._settings import (
    _STATES,
    BreakerCounts,
    BreakerPolicy,
    Classifier,
    Duration,
    Runtime,
    check_settings_mapping,
    classifier_adapter,
    default_runtime,
    settings_json,
    settings_schema,
)
from ._timeout import USE_CLIENT_DEFAULT, Timeout, UseClientDefault, call_timeout_ms, refuse_no_timeout
from ._urls import origin_of

__all__ = ["BodyOptions", "CallOptions", "Client", "EventHooks", "QueryParams"]

#: What ``params=`` accepts: a mapping (a value may be a sequence for repeated keys), (key, value) pairs, or an
#: already encoded query string.
QueryParams = Mapping[str, Any] | Sequence[tuple[str, Any]] | str

_RETRY_MODES = {None: 0, False: 1, True: 2}  # HUMUS_RETRY_MODE_DEFAULT, _FORBID, _FORCE
_ABSOLUTE = ("http://", "https://", "HTTP://", "HTTPS://")
_HOOK_KINDS = ("request", "response")
_NativeResponse = _native.Response

# Closed at exit before Python finalizes (see _at_exit.py).
_open_clients: CloseAtExit[_BaseClient] = CloseAtExit(lambda client: client._close_native())


class CallOptions(TypedDict, total=False):
    """The keyword arguments of a call without a body (``get``, ``head``, ``options``, ``delete``); see
    ``Client.request``."""

    headers: RequestHeaderTypes | None
    params: QueryParams | None
    cookies: CookieTypes | None
    auth: AuthTypes | UseClientDefault | None
    follow_redirects: bool | UseClientDefault
    timeout: float | Timeout | UseClientDefault
    idempotency_key: str | None
    retry: bool | None
    context: ContextTypes | None
    cancel: CancelToken | None


class BodyOptions(CallOptions, total=False):
    """The keyword arguments of a call with a body (``post``, ``put``, ``patch``); see ``Client.request``."""

    content: ContentTypes | None
    data: DataTypes | None
    files: FilesTypes | None
    json: Any


_CALL_KEYS = frozenset(BodyOptions.__annotations__) | frozenset(CallOptions.__annotations__)


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


def _hooks(event_hooks: EventHooks | None) -> tuple[tuple[Callable[..., Any], ...], tuple[Callable[..., Any], ...]]:
    """(request hooks, response hooks) of ``event_hooks=``; a ConfigError naming an unknown kind or a hook that
    is not callable."""
    if event_hooks is None:
        return (), ()
    unknown = sorted(set(event_hooks) - set(_HOOK_KINDS))
    if unknown:
        raise ConfigError(f"event_hooks takes the kinds 'request' and 'response', not "
                          f"{', '.join(map(repr, unknown))}", status="HUMUS_E_CONFIG",
                          fields=tuple(f"event_hooks.{k}" for k in unknown))
    out = []
    for kind in _HOOK_KINDS:
        hooks = tuple(event_hooks.get(kind, ()))
        for hook in hooks:
            if not callable(hook):
                raise ConfigError(f"event_hooks[{kind!r}] holds {type(hook).__name__}, not a callable",
                                  status="HUMUS_E_CONFIG", fields=(f"event_hooks.{kind}",))
        out.append(hooks)
    return out[0], out[1]


def _with_cookies(hdrs: SentHeaders | None, cookies: str) -> SentHeaders:
    """The headers with ``cookies`` added to the call's own Cookie header, or as one."""
    out = list(hdrs or ())
    for i, (name, value) in enumerate(out):
        if name.lower() == "cookie":
            out[i] = (name, f"{value}; {cookies}")
            return out
    return out + [("Cookie", cookies)]


def _timeout_settings(timeout: Duration | Timeout | UseClientDefault | None, attempt_timeout: Duration | None,
                      connect_timeout: Duration | None) -> tuple[Duration | None, Duration | None, Duration | None]:
    """The settings ``timeout``, ``attempt_timeout``, ``connect_timeout`` of a client's arguments (None: not
    given); ConfigError for ``timeout=None`` and for a Timeout part given twice."""
    if timeout is None:
        raise refuse_no_timeout("Client(timeout=None)")
    if isinstance(timeout, UseClientDefault):
        return None, attempt_timeout, connect_timeout
    if not isinstance(timeout, Timeout):
        return timeout, attempt_timeout, connect_timeout
    twice = [key for key, given, part in (("attempt_timeout", attempt_timeout, timeout.attempt),
                                          ("connect_timeout", connect_timeout, timeout.connect))
             if given is not None and part is not None]
    if twice:
        raise ConfigError(f"{' and '.join(twice)} given twice: in Timeout(...) and as an argument; give one",
                          status="HUMUS_E_CONFIG", fields=tuple(twice))
    return (timeout.total, attempt_timeout if timeout.attempt is None else timeout.attempt,
            connect_timeout if timeout.connect is None else timeout.connect)


@functools.cache
def _default_max_response_body() -> int:
    (key,) = (k for k in settings_schema() if k["key"] == "max_response_body")
    return int(key["default"])


def _max_response_body(document: Mapping[str, object]) -> int:
    """The client's max_response_body: the document's, else the core's default (a built client checked it)."""
    given = document.get("max_response_body")
    return given if isinstance(given, int) else _default_max_response_body()


def _configured(headers: Mapping[str, str | None]) -> dict[str, str]:
    """The configured headers the core sends: those of a value None are left out by each call instead."""
    return {k: v for k, v in headers.items() if v is not None}


class _Call:
    """One call as the extension takes it, once its request hooks ran."""

    __slots__ = ("body", "follow", "headers", "method", "omitted", "request", "target", "timeout_ms")

    def __init__(self, method: str, target: str, headers: SentHeaders | None,
                 body: bytes | BodyReader | None, request: RequestParts, follow: int, timeout_ms: int,
                 omitted: SentHeaders | None = None) -> None:
        self.method = method
        self.target = target
        #: (name, value) pairs; a value None sends no header of that name (humus_request_remove_header).
        self.headers = headers
        #: The (name, None) pairs of headers left out, which a Request (whose headers hold str values) leaves out.
        self.omitted = omitted
        self.body = body
        self.request = request
        self.follow = follow
        self.timeout_ms = timeout_ms


class _BaseClient(ClientArguments):
    """What Client and AsyncClient share: building the native client and encoding requests. Their keyword
    arguments, one per settings key, are generated from the core's schema (_client_gen.py)."""

    #: Whether calls follow redirects within the origin (docs/origin.md §2) unless a call says otherwise.
    follow_redirects: bool

    def _configure(self, base_url: str, settings: dict[str, object], *, runtime: Runtime | None,
                   auth: AuthTypes | None, follow_redirects: bool, event_hooks: EventHooks | None) -> None:
        """Builds the client from its keyword arguments (``settings``: every settings key, None where not
        given)."""
        total, attempt_timeout, connect_timeout = _timeout_settings(
            cast("Duration | Timeout | UseClientDefault | None", settings["timeout"]),
            cast("Duration | None", settings["attempt_timeout"]), cast("Duration | None", settings["connect_timeout"]))
        # None is "not given": the core applies its defaults (docs/settings.md §3) and checks exactly what was given.
        values = {**settings, "timeout": total, "attempt_timeout": attempt_timeout, "connect_timeout": connect_timeout}
        # What JSON cannot carry is handed to the core beside the document: a Python classifier, a breaker policy.
        classify = values.pop("classify")
        breaker_policy = cast("BreakerPolicy | None", values.pop("breaker_policy"))
        if isinstance(classify, str):
            values["classify"] = classify
            classify = None
        headers = values["headers"]
        self._options(auth, follow_redirects, event_hooks, headers if isinstance(headers, Mapping) else None)
        if isinstance(headers, Mapping):
            values["headers"] = _configured(headers)
        self._build(base_url, settings_json(base_url, values), cast("Classifier | None", classify), breaker_policy,
                    runtime)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, classify: Classifier | None = None,
                      breaker_policy: BreakerPolicy | None = None, runtime: Runtime | None = None,
                      auth: AuthTypes | None = None, follow_redirects: bool = True,
                      event_hooks: EventHooks | None = None) -> Self:
        """A client from the settings' JSON form (docs/settings.md) of settings (``{"base_url": ..., "timeout": "5s", "breaker":
        {...}}``, as in an upstreams file); ``classify``, ``breaker_policy``, ``auth``, ``follow_redirects`` and
        ``event_hooks`` add what JSON cannot carry. Every bad key is reported at once (ConfigError.fields)."""
        document = check_settings_mapping(settings)
        if "timeout" in document and document["timeout"] is None:
            raise refuse_no_timeout('from_settings({"timeout": None})')
        client = cls.__new__(cls)
        base_url = document.get("base_url")
        configured = document.get("headers")
        client._options(auth, follow_redirects, event_hooks,
                        configured if isinstance(configured, Mapping) else None)
        if isinstance(configured, Mapping):
            document = {**document, "headers": _configured(configured)}
        client._build(base_url if isinstance(base_url, str) else "", document, classify, breaker_policy, runtime)
        return client

    def _options(self, auth: AuthTypes | None, follow_redirects: bool, event_hooks: EventHooks | None,
                 headers: Mapping[str, str | None] | None) -> None:
        """The options kept in Python: checked before the native client is built."""
        self._auth = auth_callable(auth)
        self.follow_redirects = bool(follow_redirects)
        self._request_hooks, self._response_hooks = _hooks(event_hooks)
        self._default_headers: list[tuple[str, str]] = [(str(k), str(v)) for k, v in (headers or {}).items()
                                                         if v is not None]
        # A default header whose value is None is sent by no call (as requests' session.headers): the client's own
        # headers too (User-Agent, Accept, Accept-Encoding). Each call removes it before its own are set, so a
        # call's headers= may still send one.
        self._omitted: SentHeaders | None = [(str(k), None) for k, v in (headers or {}).items()
                                                        if v is None] or None

    def _build(self, base_url: str, document: Mapping[str, object], classify: Classifier | None,
               breaker_policy: BreakerPolicy | None, runtime: Runtime | None) -> None:
        self.base_url = base_url
        self.origin = origin_of(base_url)
        self._prefix = _prefix_of(base_url)
        self._runtime = runtime if runtime is not None else default_runtime()
        trip_fn, probe_fn = breaker_policy.adapters() if breaker_policy is not None else (None, None)
        try:
            self._native = _native.Client(self._runtime.native, jsonlib.dumps(document),
                                          None if classify is None else classifier_adapter(classify),
                                          trip_fn, probe_fn)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        self._max_response_body = _max_response_body(document)
        _open_clients.add(self)

    # --- httpx-shaped options -------------------------------------------------------------------------------

    @property
    def event_hooks(self) -> dict[str, list[Callable[..., Any]]]:
        """The event hooks, ``{"request": [...], "response": [...]}`` (a copy); assign a mapping to replace them.
        Request hooks run before every attempt is sent, response hooks once each attempt's response is in (see
        request())."""
        return {"request": list(self._request_hooks), "response": list(self._response_hooks)}

    @event_hooks.setter
    def event_hooks(self, event_hooks: EventHooks) -> None:
        self._request_hooks, self._response_hooks = _hooks(event_hooks)

    @property
    def auth(self) -> Callable[[Request], Request | None] | None:
        """The client's ``auth=`` as a callable (a tuple reads as BasicAuth), or None; assignable."""
        return self._auth

    @auth.setter
    def auth(self, auth: AuthTypes | None) -> None:
        self._auth = auth_callable(auth)

    # --- requests -------------------------------------------------------------------------------------------

    def _target(self, url: str, params: QueryParams | None) -> str:
        if not url.startswith(_ABSOLUTE):
            url = self._prefix + url.lstrip("/")
        if params is not None:
            query = _encode_query(params)
            if query:
                url += ("&" if "?" in url else "?") + query
        return url

    def _prepare(self, method: str, url: str, options: Mapping[str, Any]) -> tuple[_Call, Request | None]:
        """The call of ``options`` (a call's keyword arguments), and its Request (None when there are neither
        ``auth=`` nor event hooks): ``auth=`` has been applied to it."""
        if not options and self._auth is None and not self._request_hooks and not self._response_hooks:
            # The bare call, client.get(url), which every option leaves to the client: nothing to look up.
            target = url if url.startswith(_ABSOLUTE) else self._prefix + url.lstrip("/")
            return _Call(method, target, self._omitted, None, (method, target, self._default_headers, None),
                         -1 if self.follow_redirects else 0, 0, self._omitted), None
        if len(options) > len(_CALL_KEYS) or not _CALL_KEYS.issuperset(options):
            unknown = sorted(set(options) - _CALL_KEYS)
            raise TypeError(f"{method.lower()}() got an unexpected keyword argument {unknown[0]!r}")
        get = options.get
        follow = get("follow_redirects", USE_CLIENT_DEFAULT)
        follow_mode = -1 if (self.follow_redirects if follow is USE_CLIENT_DEFAULT else follow) else 0
        timeout_ms = within_deadline_ms(call_timeout_ms(get("timeout", USE_CLIENT_DEFAULT)), get("context"))
        auth = get("auth", USE_CLIENT_DEFAULT)
        auth_fn = self._auth if auth is USE_CLIENT_DEFAULT else auth_callable(auth)
        headers, params, cookies = get("headers"), get("params"), get("cookies")
        content, data, files, json = get("content"), get("data"), get("files"), get("json")
        if (headers is None and params is None and cookies is None and content is None and data is None
                and files is None and json is None):
            # The common call, a bare URL: kept short, since it runs holding the GIL.
            target = url if url.startswith(_ABSOLUTE) else self._prefix + url.lstrip("/")
            hdrs: SentHeaders | None = None
            body: bytes | BodyReader | None = None
        else:
            target = self._target(url, params)
            hdrs = request_headers(headers)
            body, content_type = self._body(content, data, files, json, hdrs)
            if content_type is not None and not any(k.lower() == "content-type" for k, _ in hdrs or ()):
                hdrs = (hdrs or []) + [("Content-Type", content_type)]
            if cookies:
                hdrs = _with_cookies(hdrs, cookie_header(cookies))
        omitted = self._omitted
        if hdrs is not None and any(v is None for _, v in hdrs):
            omitted = [*(omitted or ()), *((k, None) for k, v in hdrs if v is None)]
        sent = [*omitted, *hdrs] if omitted and hdrs else hdrs or omitted
        if auth_fn is None and not self._request_hooks and not self._response_hooks:
            return _Call(method, target, sent, body, (method, target, self._default_headers, hdrs), follow_mode,
                         timeout_ms, omitted), None
        request = Request(method, target, merge_headers(self._default_headers, hdrs))
        if auth_fn is not None:
            returned = auth_fn(request)
            if returned is not None:
                if not isinstance(returned, Request):
                    raise TypeError(f"an auth= callable returns the Request (or None), not {type(returned).__name__}")
                request = returned
        return _Call(method, target, omitted, body, request, follow_mode, timeout_ms, omitted), request

    def _context_parts(self, options: Mapping[str, Any],
                       headers: Sequence[tuple[str, str | None]] | None) -> tuple[str | None, ...] | None:
        """The call context's parts as the extension takes them. When the runtime's span sink follows the caller's
        trace (humus_http.otel's does), a call with no ``traceparent`` of its own (in ``context=`` or among its
        headers) carries the caller's current one (docs/telemetry.md §13.4)."""
        current = self._runtime._trace_context
        if not options and current is None:
            return None  # the bare call: no context of its own, none of the caller's to follow
        parts = context_parts(options.get("context"))
        if current is None or (parts is not None and parts[0]):
            return parts
        for name, _ in (*(headers or ()), *self._default_headers):
            if name.lower() == "traceparent":
                return parts
        found = current()
        if found is None:
            return parts
        return (found[0], found[1], *(parts[2:] if parts is not None else (None, None, None)))

    @staticmethod
    def _body(content: ContentTypes | None, data: DataTypes | None, files: FilesTypes | None, json: Any,
              hdrs: SentHeaders | None) -> tuple[bytes | BodyReader | None, str | None]:
        if data is None and not files:
            return encode_body(content, json)
        if content is not None or json is not None:
            raise TypeError("pass one of content=, json= or data=/files=")
        given = next((v for k, v in hdrs or () if k.lower() == "content-type"), None)
        return encode_form(data, files, given)

    @staticmethod
    def _sent(call: _Call, request: Request) -> None:
        """What ``auth=`` (and an AsyncClient's ``async def`` request hooks) left of the Request becomes the
        call."""
        call.method = request.method
        call.target = str(request.url)
        items: SentHeaders = [*request.headers.multi_items()]
        call.headers = [*call.omitted, *items] if call.omitted else items or None
        call.request = request

    def _response(self, raw: _native.Response | _native.ErrorInfo, call: _Call, stream: bool = False) -> Response:
        if type(raw) is _NativeResponse:
            return Response(raw, self.origin, call.request, stream)  # positional: no keyword dict to build
        raise from_native(raw, self.origin)  # type: ignore[arg-type]

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

    @property
    def bulkhead_limit(self) -> int:
        """The bulkhead's limit now (docs/bulkhead.md §11): ``bulkhead.max_concurrent`` for a fixed bulkhead; for an
        adaptive one (``bulkhead.mode`` ``"adaptive"``, §11.1) where its algorithm has moved it, within
        ``bulkhead.min``..``bulkhead.max``. Thread-safe."""
        return self._native.bulkhead_limit()

    @classmethod
    def from_client(cls, other: _BaseClient) -> Self:
        """A client of this class over the same dependency client as ``other`` (a Client or an AsyncClient):
        the same connections, circuit breaker, retry budget and bulkhead, so blocking and asyncio code calling
        one dependency count against one breaker; ``other``'s auth, follow_redirects, event hooks and configured
        headers carry over. Each closes independently; the connections close with the last. RuntimeError when
        ``other`` is closed."""
        if not isinstance(other, _BaseClient):
            raise TypeError(f"from_client takes a humus_http Client or AsyncClient, not {type(other).__name__}")
        client = cls._adopt(other._native.share(), other.base_url, other.origin, other._runtime,
                            other._max_response_body)
        client._auth, client.follow_redirects = other._auth, other.follow_redirects
        client._request_hooks, client._response_hooks = other._request_hooks, other._response_hooks
        client._default_headers = other._default_headers
        client._omitted = other._omitted
        return client

    @classmethod
    def _adopt(cls, native: _native.Client, base_url: str, origin: str, runtime: Runtime,
               max_response_body: int | None = None) -> Self:
        """A client of this class over a native client made elsewhere (another client's share, a registry's);
        ``max_response_body`` as it was built with (None: the default)."""
        client = cls.__new__(cls)
        client._max_response_body = _max_response_body({"max_response_body": max_response_body})
        client._options(None, True, None, None)
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
    field. ``timeout`` is seconds or a ``Timeout(total, attempt=, connect=)``; ``timeout=None`` is a ConfigError
    (deadlines are mandatory, docs/timeouts.md §8).

    As httpx.Client: ``auth`` (a ``(user, password)`` tuple, BasicAuth, BearerAuth, or a callable that sets the
    Request's headers) authenticates every call, ``follow_redirects`` (default True: redirects within the
    origin are followed, docs/origin.md §2) and ``event_hooks`` (``{"request": [...], "response": [...]}``, run
    per attempt: see request()) apply to every call unless the call says otherwise. The settings are fixed once built; ``auth``,
    ``follow_redirects`` and ``event_hooks`` may be reassigned from any thread (a call reads them as it starts).
    """

    def request(self, method: str, url: str, *, headers: RequestHeaderTypes | None = None,
                params: QueryParams | None = None, cookies: CookieTypes | None = None,
                content: ContentTypes | None = None, data: DataTypes | None = None, files: FilesTypes | None = None,
                json: Any = None, auth: AuthTypes | UseClientDefault | None = USE_CLIENT_DEFAULT,
                follow_redirects: bool | UseClientDefault = USE_CLIENT_DEFAULT,
                timeout: float | Timeout | UseClientDefault = USE_CLIENT_DEFAULT, idempotency_key: str | None = None,
                retry: bool | None = None, context: ContextTypes | None = None,
                cancel: CancelToken | None = None) -> Response:
        """Makes one call: every attempt, wait and redirect, and returns the response whatever its status (the
        last 503 included). ``url`` is joined onto ``base_url`` unless absolute (then it must be on the
        client's origin). ``idempotency_key`` sets the Idempotency-Key header, making the request safe to send
        twice; ``retry=False`` makes one attempt, ``retry=True`` vouches for a request the rules would not
        retry; ``timeout`` (seconds, or a Timeout with only ``total``) bounds this call below the client's
        (None is a ConfigError: deadlines are mandatory); ``context`` (a CallContext, or the incoming request's
        headers) carries the request being served on to the dependency (docs/telemetry.md §12); ``cancel`` (a
        CancelToken) lets another thread or a callback end the call early. ``content`` is bytes, str (UTF-8),
        an iterator of bytes (sent chunked on HTTP/1.1; one attempt, since it cannot be replayed) or a file
        opened in binary mode (read as it is sent, the GIL released between reads; a seekable one has its
        length sent and is replayed from where it stood for a retry, a pipe makes one attempt).

        As httpx: ``json=`` sends JSON; ``data=`` form fields (``application/x-www-form-urlencoded``) and with
        ``files=`` (``{"field": (filename, content, content_type)}``) ``multipart/form-data``, files read into
        memory, the boundary taken from a multipart Content-Type of ``headers`` when it names one;
        ``cookies=`` a Cookie header, as given (there is no cookie jar); ``auth=`` this call's authentication
        (None: none; the client's otherwise). The Authorization it sets goes to the client's origin only: a
        request to another origin is refused, a redirect to one is not followed. ``follow_redirects=False``
        returns a 3xx as the response; ``Response.history`` lists the redirects followed.

        Event hooks run per attempt (docs/retries.md §6.7): each request hook is called with the Request of
        every attempt, retries and redirect hops included (``method``, ``url``, ``headers`` and ``attempt``,
        1 for a request's first), just before it is sent and after ``auth=``; what it changes of ``headers``
        is sent with that attempt only (it may add and change headers, not remove them, nor change the method
        or URL). Each response hook is called with the Response of every attempt that got one (``status_code``,
        ``headers``, ``request``, ``attempt``): for an attempt the call retried or redirected, once that was
        decided, before the next attempt, and without its body (not kept: reading it raises RuntimeError); for
        the response the call returns, whole, before it is returned. They run holding the GIL on the thread
        that drives the attempt: the calling thread, or the runtime's event-loop thread for a call on the main
        thread made there to stay interruptible (with ``cancel=``, or while an asyncio loop runs, say). An
        exception a hook raises ends the call (nothing more is sent) and is raised here.
        Raises an UpstreamError subclass when no response came, or the exception a callback raised."""
        return self._send(method.upper(), url, {
            "headers": headers, "params": params, "cookies": cookies, "content": content, "data": data,
            "files": files, "json": json, "auth": auth, "follow_redirects": follow_redirects, "timeout": timeout,
            "idempotency_key": idempotency_key, "retry": retry, "context": context, "cancel": cancel})

    def _start(self, method: str, url: str, options: Mapping[str, Any]) -> tuple[_Call, AttemptHooks | None]:
        """The call, and the adapter that runs its event hooks per attempt (None without hooks)."""
        call, request = self._prepare(method, url, options)
        if request is None:
            return call, None
        self._sent(call, request)
        request_hooks, response_hooks = self._request_hooks, self._response_hooks
        if not request_hooks and not response_hooks:
            return call, None
        return call, AttemptHooks(request_hooks, response_hooks, request, self.origin)

    @staticmethod
    def _hooked(response: Response, hooks: AttemptHooks | None) -> Response:
        """The response the call returned, once the response hooks of its last attempt saw it."""
        if hooks is not None:
            try:
                hooks.final(response)
            except BaseException:
                response.close()
                raise
        return response

    @contextmanager
    def stream(self, method: str, url: str, **options: Unpack[BodyOptions]) -> Iterator[Response]:
        """As request() (the same keyword arguments), but the response comes once its headers are in, its body
        still on its connection: ``with client.stream("GET", "/export") as resp: for chunk in
        resp.iter_bytes(): ...`` (also ``iter_text()``, ``iter_lines()``, ``read()``). Reads release the GIL
        and hold one chunk at a time; ``timeout`` and ``cancel`` bound them too. Response hooks see the response
        before its body is read. Leaving the block closes the response: a body not read to its end is closed
        with its connection, and the breaker counts the call's result when the body ends or closes. Raises as
        request() does; a read failing mid-body raises ProtocolError for a lost connection,
        UpstreamTimeoutError once ``timeout`` passed, or the cancellation's error."""
        call, hooks = self._start(method.upper(), url, options)
        cancel = options.get("cancel")
        try:
            raw = self._native.open(call.method, call.target, call.headers, call.body, options.get("idempotency_key"),
                                    _RETRY_MODES[options.get("retry")], call.follow, call.timeout_ms,
                                    self._context_parts(options, call.headers),
                                    native_cancel(cancel), None if hooks is None else hooks.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        response = self._hooked(self._response(raw, call, stream=True), hooks)
        try:
            yield response
        finally:
            response.close()

    def _send(self, method: str, url: str, options: Mapping[str, Any]) -> Response:
        # Everything here runs holding the GIL, which every other calling thread waits for: kept short.
        call, hooks = self._start(method, url, options)
        cancel = options.get("cancel")
        try:
            raw = self._native.request(call.method, call.target, call.headers, call.body,
                                       options.get("idempotency_key"), _RETRY_MODES[options.get("retry")],
                                       call.follow, call.timeout_ms, self._context_parts(options, call.headers),
                                       native_cancel(cancel),
                                       None if hooks is None else hooks.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        response = self._response(raw, call)
        return response if hooks is None else self._hooked(response, hooks)

    def get(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A GET (see request() for the keyword arguments)."""
        return self._send("GET", url, options)

    def head(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A HEAD (see request())."""
        return self._send("HEAD", url, options)

    def options(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """An OPTIONS (see request())."""
        return self._send("OPTIONS", url, options)

    def delete(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A DELETE (see request())."""
        return self._send("DELETE", url, options)

    def post(self, url: str, **options: Unpack[BodyOptions]) -> Response:
        """A POST (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return self._send("POST", url, options)

    def put(self, url: str, **options: Unpack[BodyOptions]) -> Response:
        """A PUT (see request())."""
        return self._send("PUT", url, options)

    def patch(self, url: str, **options: Unpack[BodyOptions]) -> Response:
        """A PATCH (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return self._send("PATCH", url, options)

    def close(self) -> None:
        """Closes the client: later calls raise RuntimeError; a call in flight on another thread finishes
        first, then the connections are closed. Idempotent, thread-safe."""
        self._close_native()

    def __repr__(self) -> str:
        return f"<humus_http.Client {self.origin}{' closed' if self.is_closed else ''}>"
