"""The asyncio client: calls run on the runtime's event loop (no thread per call) and complete on the asyncio
loop that made them."""
from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self

from . import _native
from ._cancel import CancelToken
from ._client import _RETRY_MODES, QueryParams, _BaseClient, _timeout_ms
from ._context import ContextTypes, context_parts
from ._errors import from_native
from ._response import HeaderTypes, Response

__all__ = ["AsyncClient"]

_NativeResponse = _native.Response


class AsyncClient(_BaseClient):
    """The asyncio twin of Client, with the same arguments (and ``AsyncClient.from_settings``).

    Each call is submitted to the runtime's event-loop thread and its outcome handed back to the asyncio loop
    that awaited it (``call_soon_threadsafe``); no thread waits per call. Cancelling the awaiting task cancels
    the native call, which frees its bulkhead slot. One client may serve several asyncio loops and threads at
    once.
    """

    _bridge: tuple[asyncio.AbstractEventLoop, _native.Bridge] | None = None

    def _bridge_for(self, loop: asyncio.AbstractEventLoop) -> _native.Bridge:
        # A bridge per asyncio loop, cached for the last loop used (read and replaced as one tuple, so that
        # loops on other threads never see each other's); calls in flight on an earlier loop keep their own.
        cached = self._bridge
        if cached is None or cached[0] is not loop:
            cached = (loop, _native.Bridge(loop.call_soon_threadsafe))
            self._bridge = cached
        return cached[1]

    async def request(self, method: str, url: str, *, headers: HeaderTypes | None = None,
                      params: QueryParams | None = None, content: bytes | str | None = None, json: Any = None,
                      idempotency_key: str | None = None, retry: bool | None = None,
                      timeout: float | None = None, context: ContextTypes | None = None,
                      cancel: CancelToken | None = None) -> Response:
        """Makes one call, as Client.request() does, without blocking the asyncio loop. ``cancel`` (a
        CancelToken) ends it early from any thread or callback, like cancelling the awaiting task does, except
        that the call's own outcome is raised (CancelledCallError, with its attempts) instead of
        asyncio.CancelledError."""
        return await self._send(method.upper(), url, headers, params, content, json, idempotency_key, retry,
                                timeout, context, cancel)

    async def _send(self, method: str, url: str, headers: HeaderTypes | None, params: QueryParams | None,
                    content: bytes | str | None, json: Any, idempotency_key: str | None, retry: bool | None,
                    timeout: float | None, context: ContextTypes | None, cancel: CancelToken | None) -> Response:
        target, hdrs, body = self._encode(url, headers, params, content, json)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        try:
            call = self._native.submit(method, target, hdrs, body, idempotency_key, _RETRY_MODES[retry],
                                       0 if timeout is None else _timeout_ms(timeout), self._bridge_for(loop),
                                       future, context_parts(context), None if cancel is None else cancel.native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], self.origin) from None
        try:
            raw = await future
        except asyncio.CancelledError:
            call.cancel()
            raise
        if type(raw) is _NativeResponse:
            return Response(raw, self.origin)
        raise from_native(raw, self.origin)

    async def get(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                  idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                  context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A GET (see request())."""
        return await self._send("GET", url, headers, params, None, None, idempotency_key, retry, timeout,
                                context, cancel)

    async def head(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                   idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                   context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A HEAD (see request())."""
        return await self._send("HEAD", url, headers, params, None, None, idempotency_key, retry, timeout,
                                context, cancel)

    async def options(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                      idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                      context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """An OPTIONS (see request())."""
        return await self._send("OPTIONS", url, headers, params, None, None, idempotency_key, retry, timeout,
                                context, cancel)

    async def delete(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                     idempotency_key: str | None = None, retry: bool | None = None, timeout: float | None = None,
                     context: ContextTypes | None = None, cancel: CancelToken | None = None) -> Response:
        """A DELETE (see request())."""
        return await self._send("DELETE", url, headers, params, None, None, idempotency_key, retry, timeout,
                                context, cancel)

    async def post(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                   content: bytes | str | None = None, json: Any = None, idempotency_key: str | None = None,
                   retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
                   cancel: CancelToken | None = None) -> Response:
        """A POST (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return await self._send("POST", url, headers, params, content, json, idempotency_key, retry, timeout,
                                context, cancel)

    async def put(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                  content: bytes | str | None = None, json: Any = None, idempotency_key: str | None = None,
                  retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
                  cancel: CancelToken | None = None) -> Response:
        """A PUT (see request())."""
        return await self._send("PUT", url, headers, params, content, json, idempotency_key, retry, timeout,
                                context, cancel)

    async def patch(self, url: str, *, headers: HeaderTypes | None = None, params: QueryParams | None = None,
                    content: bytes | str | None = None, json: Any = None, idempotency_key: str | None = None,
                    retry: bool | None = None, timeout: float | None = None, context: ContextTypes | None = None,
                    cancel: CancelToken | None = None) -> Response:
        """A PATCH (see request()); made once unless it has an idempotency key or ``retry=True``."""
        return await self._send("PATCH", url, headers, params, content, json, idempotency_key, retry, timeout,
                                context, cancel)

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
