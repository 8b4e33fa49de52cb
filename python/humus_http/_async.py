"""The asyncio client: calls run on the runtime's event loop (no thread per call) and complete on the asyncio
loop that made them."""
from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self, Unpack

from . import _native
from ._auth import AuthTypes
from ._cancel import CancelToken, native_cancel
from ._client import _RETRY_MODES, CallOptions, QueryParams, _BaseClient
from ._context import ContextTypes
from ._errors import from_native
from ._forms import CookieTypes, DataTypes, FilesTypes
from ._hooks import AttemptHooks
from ._response import RequestHeaderTypes, Response
from ._timeout import USE_CLIENT_DEFAULT, Timeout, UseClientDefault

__all__ = ["AsyncBodyOptions", "AsyncClient"]

# One bridge per asyncio loop, shared by every client on it: the loop watches its eventfd for as long as the
# loop lives (its reader holds the bridge), and the entry goes with the loop.
_loop_bridges: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _native.Bridge] = weakref.WeakKeyDictionary()
_loop_bridges_lock = threading.Lock()


def _loop_bridge(loop: asyncio.AbstractEventLoop) -> _native.Bridge:
    """The bridge of ``loop``, the running loop of this thread: made, and its eventfd watched, on first use."""
    with _loop_bridges_lock:
        bridge = _loop_bridges.get(loop)
        if bridge is None:
            bridge = _native.Bridge()
            loop.add_reader(bridge.fileno(), bridge.drain)
            _loop_bridges[loop] = bridge
        return bridge


class AsyncBodyOptions(CallOptions, total=False):
    """The keyword arguments of an asynchronous call with a body (``post``, ``put``, ``patch``): a body is
    bytes or str, since an asynchronous call buffers it; see ``AsyncClient.request``."""

    content: bytes | str | None
    data: DataTypes | None
    files: FilesTypes | None
    json: Any


def _once_per_call(hook: Callable[..., Any]) -> bool:
    """An ``async def`` hook (or a partial of one): awaited once per call on the asyncio loop, since the
    runtime's event-loop thread, where attempts are made, cannot await it."""
    return inspect.iscoroutinefunction(hook) or inspect.iscoroutinefunction(getattr(hook, "__call__", None))


class AsyncClient(_BaseClient):
    """The asyncio twin of Client, with the same arguments (and ``AsyncClient.from_settings``).

    Each call is submitted to the runtime's event-loop thread and its outcome handed back to the asyncio loop
    that awaited it, which watches an eventfd the runtime writes (``loop.add_reader``: one per asyncio loop,
    without the GIL on the runtime's side); no thread waits per call. Cancelling the awaiting task cancels
    the native call, which frees its bulkhead slot. One client may serve several asyncio loops and threads at
    once.
    """

    _bridge: tuple[asyncio.AbstractEventLoop, _native.Bridge] | None = None

    def _bridge_for(self, loop: asyncio.AbstractEventLoop) -> _native.Bridge:
        # The loop's bridge, cached for the last loop used (read and replaced as one tuple, so that loops on
        # other threads never see each other's); calls in flight on an earlier loop keep its bridge.
        cached = self._bridge
        if cached is None or cached[0] is not loop:
            cached = (loop, _loop_bridge(loop))
            self._bridge = cached
        return cached[1]

    async def request(self, method: str, url: str, *, headers: RequestHeaderTypes | None = None,
                      params: QueryParams | None = None, cookies: CookieTypes | None = None,
                      content: bytes | str | None = None, data: DataTypes | None = None,
                      files: FilesTypes | None = None, json: Any = None,
                      auth: AuthTypes | UseClientDefault | None = USE_CLIENT_DEFAULT,
                      follow_redirects: bool | UseClientDefault = USE_CLIENT_DEFAULT,
                      timeout: float | Timeout | UseClientDefault = USE_CLIENT_DEFAULT,
                      idempotency_key: str | None = None, retry: bool | None = None,
                      context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """Makes one call, as Client.request() does (the same arguments and event hooks), without blocking the
        asyncio loop. A plain event hook runs per attempt as with Client, on the runtime's event-loop thread
        holding the GIL (keep it short: it holds up every call of the runtime), except for the response the
        call returns, which its response hooks see on the asyncio loop. An ``async def`` hook cannot
        run there, so it keeps httpx.AsyncClient's once-per-call behaviour: a request hook is awaited once before
        the call starts (with ``attempt`` 1, and may change the Request's method, URL and headers for every
        attempt), a response hook once with the response the call returns, after the plain ones. ``cancel`` (a CancelToken) ends it early from any thread or callback, like cancelling the
        awaiting task does, except that the call's own outcome is raised (CancelledCallError, with its
        attempts) instead of asyncio.CancelledError."""
        return await self._send(method.upper(), url, {
            "headers": headers, "params": params, "cookies": cookies, "content": content, "data": data,
            "files": files, "json": json, "auth": auth, "follow_redirects": follow_redirects, "timeout": timeout,
            "idempotency_key": idempotency_key, "retry": retry, "context": context, "cancel": cancel})

    @asynccontextmanager
    async def stream(self, method: str, url: str, **options: Unpack[AsyncBodyOptions]) -> AsyncIterator[Response]:
        """As request() (the same keyword arguments), but the response comes once its headers are in, its body
        still on its connection, as httpx.AsyncClient.stream: ``async with client.stream("GET", "/export") as
        resp: async for chunk in resp.aiter_bytes(): ...`` (also ``aiter_text()``, ``aiter_lines()``,
        ``aread()``, ``aclose()``). From its headers on the library reads the body ahead into a bounded ring
        (humus_response_read_ahead): a read copies what is in without leaving the task, and only one that
        finds nothing awaits this asyncio loop: no thread per call, one read at a time. ``timeout`` and ``cancel``
        bound the reads too; cancelling the task awaiting a read closes the body. Response hooks see the
        response before its body is read. Leaving the block closes the response: a body not read to its end
        is closed with its connection, and the breaker counts the call's result when the body ends or closes.
        Raises as request() does; a read failing mid-body raises ProtocolError for a lost connection,
        UpstreamTimeoutError once ``timeout`` passed, or the cancellation's error. While its headers are
        awaited or its response is open, the stream keeps the native client alive: aclose() of the client
        takes effect for it once the response is closed."""
        response = await self._send(method.upper(), url, options, stream=True)
        try:
            yield response
        finally:
            response.close()

    async def _send(self, method: str, url: str, options: Mapping[str, Any], stream: bool = False) -> Response:
        call, request = self._prepare(method, url, options)
        hooks: AttemptHooks | None = None
        awaited: tuple[Callable[..., Any], ...] = ()
        if request is not None:
            request_hooks, response_hooks = self._request_hooks, self._response_hooks
            for hook in request_hooks:
                if _once_per_call(hook):
                    await hook(request)
            self._sent(call, request)
            awaited = tuple(hook for hook in response_hooks if _once_per_call(hook))
            per_attempt = ([h for h in request_hooks if not _once_per_call(h)],
                           [h for h in response_hooks if not _once_per_call(h)])
            if per_attempt[0] or per_attempt[1]:
                hooks = AttemptHooks(*per_attempt, request, self.origin)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        cancel = options.get("cancel")
        submit = self._native.submit_open if stream else self._native.submit
        try:
            native_call = submit(call.method, call.target, call.headers, call.body, options.get("idempotency_key"),
                                 _RETRY_MODES[options.get("retry")], call.follow, call.timeout_ms,
                                 self._bridge_for(loop), future, self._context_parts(options, call.headers),
                                 native_cancel(cancel), None if hooks is None else hooks.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        try:
            raw = await future
        except asyncio.CancelledError:
            native_call.cancel()
            raise
        response = self._response(raw, call, stream=stream)
        if stream:
            response._bridge_of = self._bridge_for
            response._max_body = self._max_response_body
        try:
            if hooks is not None:
                hooks.final(response)
            for hook in awaited:
                await hook(response)
        except BaseException:
            response.close()
            raise
        return response

    async def get(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A GET (see request())."""
        return await self._send("GET", url, options)

    async def head(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A HEAD (see request())."""
        return await self._send("HEAD", url, options)

    async def options(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """An OPTIONS (see request())."""
        return await self._send("OPTIONS", url, options)

    async def delete(self, url: str, **options: Unpack[CallOptions]) -> Response:
        """A DELETE (see request())."""
        return await self._send("DELETE", url, options)

    async def post(self, url: str, **options: Unpack[AsyncBodyOptions]) -> Response:
        """A POST (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return await self._send("POST", url, options)

    async def put(self, url: str, **options: Unpack[AsyncBodyOptions]) -> Response:
        """A PUT (see request())."""
        return await self._send("PUT", url, options)

    async def patch(self, url: str, **options: Unpack[AsyncBodyOptions]) -> Response:
        """A PATCH (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return await self._send("PATCH", url, options)

    async def aclose(self) -> None:
        """Closes the client: calls still in flight are cancelled (they raise CancelledCallError) and later
        calls raise RuntimeError. Idempotent."""
        self._close_native()

    def close(self) -> None:
        """The same as aclose(), for code that is not in a coroutine."""
        self._close_native()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<humus_http.AsyncClient {self.origin}{' closed' if self.is_closed else ''}>"
