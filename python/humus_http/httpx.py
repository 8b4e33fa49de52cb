"""humus_http inside httpx: ``Transport`` (an ``httpx.BaseTransport``) sends an ``httpx.Client``'s requests
through a ``humus_http.Client``, ``AsyncTransport`` (an ``httpx.AsyncBaseTransport``) an ``httpx.AsyncClient``'s
through a ``humus_http.AsyncClient`` — with the humus client's retries, breaker, bulkhead, retry budget, deadlines
and spans (docs/bindings.md §17.3):

    import httpx, humus_http, humus_http.httpx

    payments = humus_http.Client("https://payments.internal", timeout=5.0)
    http = httpx.Client(base_url="https://payments.internal", transport=humus_http.httpx.Transport(payments),
                        follow_redirects=True)

httpx keeps its own work: redirects (``follow_redirects``: each hop is one request through the transport),
auth, cookies, event hooks, and decoding the body it asked to be compressed. Both ways stream: a request body
httpx streams (an iterator, a file) is read as it is sent (``AsyncTransport`` reads it whole first: an
asynchronous humus call buffers its request body), and the response body is read from its connection as httpx
reads it. Failures are httpx's exceptions with the humus error as ``__cause__``; a call the humus client refused
to send is ``RejectedError``. Needs httpx: ``pip install 'humus_http[httpx]'``.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack
from typing import Any

try:
    import httpx
except ImportError as e:
    raise ImportError("humus_http.httpx needs httpx: pip install 'humus_http[httpx]'") from e

from ._async import AsyncClient
from ._client import Client
from ._errors import (
    BulkheadFullError,
    CircuitOpenError,
    ConnectError,
    CrossOriginError,
    InvalidRequestError,
    ProtocolError,
    ResourceError,
    ResponseTooLargeError,
    UpstreamError,
    UpstreamTimeoutError,
)
from ._hosted import forwarded_headers
from ._response import Response

__all__ = ["AsyncTransport", "RejectedError", "Transport"]


class RejectedError(httpx.TransportError):
    """The humus client sent nothing: its circuit breaker is open (``__cause__`` is a CircuitOpenError, whose
    ``retry_after`` says for how long) or its bulkhead had no free slot (a BulkheadFullError). A TransportError,
    so code that handles httpx's failures handles it; catch it first to shed load instead of reporting an
    outage. ``retry_after`` is the breaker's (seconds), None for a full bulkhead."""

    def __init__(self, message: str, *, request: httpx.Request, retry_after: float | None) -> None:
        super().__init__(message, request=request)
        self.retry_after = retry_after


def _mapped(error: UpstreamError, request: httpx.Request) -> httpx.TransportError:
    """httpx's exception for a humus failure, the one httpx's own transport raises for the same event (raised
    ``from error``)."""
    message = str(error)
    if isinstance(error, CircuitOpenError):
        return RejectedError(message, request=request, retry_after=error.retry_after)
    if isinstance(error, BulkheadFullError):
        return RejectedError(message, request=request, retry_after=None)
    kind: type[httpx.TransportError]
    if isinstance(error, UpstreamTimeoutError):
        kind = httpx.ReadTimeout  # the call's deadline, whatever stage it ended in
    elif isinstance(error, (ConnectError, ResourceError)):
        kind = httpx.ConnectError
    elif isinstance(error, (ProtocolError, ResponseTooLargeError)):
        kind = httpx.RemoteProtocolError
    elif isinstance(error, CrossOriginError):
        kind = httpx.UnsupportedProtocol  # as httpx raises for a URL no transport of it serves
    elif isinstance(error, InvalidRequestError):
        kind = httpx.LocalProtocolError
    else:
        kind = httpx.TransportError
    return kind(message, request=request)


def _headers(request: httpx.Request) -> list[tuple[str, str]]:
    return forwarded_headers(request.headers.multi_items())


def _has_body(request: httpx.Request, content: bytes) -> bool:
    # httpx gives every request content, b"" for none; it declares an empty body (Content-Length: 0) only for
    # the methods that carry one, and that is what is sent.
    return bool(content) or "content-length" in request.headers


def _content(request: httpx.Request) -> bytes | Iterator[bytes] | None:
    """The body of an httpx.Client's request: its bytes, or the chunks of a body httpx streams (an iterator, a
    file), read as they are sent."""
    try:
        content = request.content
    except httpx.RequestNotRead:
        stream = request.stream
        if not isinstance(stream, httpx.SyncByteStream):
            raise TypeError("Transport sends the requests of an httpx.Client; an httpx.AsyncClient's go to "
                            "AsyncTransport") from None
        return iter(stream)
    return content if _has_body(request, content) else None


def _response(response: Response, stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> httpx.Response:
    extensions: dict[str, Any] = {"http_version": response.http_version.encode("ascii"),
                                  "humus_http.response": response}
    if response._reason is not None:  # HTTP/1.x: the phrase as sent, as httpcore hands it to httpx
        extensions["reason_phrase"] = response._reason
    return httpx.Response(response.status_code, headers=response.headers.multi_items(), stream=stream,
                          extensions=extensions)


class _Body(httpx.SyncByteStream):
    """A response body read from its connection as httpx iterates it; closing it closes the humus response."""

    def __init__(self, response: Response, stack: ExitStack, request: httpx.Request) -> None:
        self._response = response
        self._stack = stack
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._response.iter_bytes()
        except UpstreamError as error:
            raise _mapped(error, self._request) from error

    def close(self) -> None:
        self._stack.close()


class Transport(httpx.BaseTransport):
    """An ``httpx.BaseTransport`` over a ``humus_http.Client``: ``httpx.Client(transport=Transport(client))``.

    Each request httpx hands over is one humus call (every attempt, wait and retry of it), made with the humus
    client's redirect following off, so that httpx's own ``follow_redirects`` sees each 3xx. The URL must be on
    the humus client's origin (a redirect to another is ``httpx.UnsupportedProtocol``); httpx's Host,
    Connection, Content-Length and Transfer-Encoding headers are the humus client's to set. Deadlines are the
    humus client's (``timeout``, ``attempt_timeout``, ``connect_timeout``): httpx hands every request its own
    timeout (5 s unless told), which a transport cannot tell from one a caller gave, so it is not applied.
    ``response.extensions["humus_http.response"]`` is the humus Response (``attempts``, ``trace``,
    ``elapsed``). Closing the transport (or the httpx.Client) leaves the humus client open: whoever made it
    closes it. Thread-safe, as the humus client is.
    """

    def __init__(self, client: Client) -> None:
        if not isinstance(client, Client):
            raise TypeError(f"Transport takes a humus_http.Client, not {type(client).__name__} (an AsyncClient "
                            f"goes to AsyncTransport)")
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        stack = ExitStack()
        try:
            response = stack.enter_context(self.client.stream(request.method, str(request.url),
                                                              headers=_headers(request), content=_content(request),
                                                              follow_redirects=False))
        except UpstreamError as error:
            raise _mapped(error, request) from error
        return _response(response, _Body(response, stack, request))


class _AsyncBody(httpx.AsyncByteStream):
    """The same for an AsyncClient.stream() response."""

    def __init__(self, response: Response, stack: AsyncExitStack, request: httpx.Request) -> None:
        self._response = response
        self._stack = stack
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except UpstreamError as error:
            raise _mapped(error, self._request) from error

    async def aclose(self) -> None:
        await self._stack.aclose()


class AsyncTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` over a ``humus_http.AsyncClient``:
    ``httpx.AsyncClient(transport=AsyncTransport(client))``. As Transport, except that a request body is read
    whole before the call (an asynchronous humus call buffers its request body, docs/bodies.md §7); the response
    body is read from its connection as httpx iterates it, each read completed on the asyncio loop. Cancelling
    the awaiting task cancels the humus call. The httpx.AsyncClient runs on asyncio, as the humus AsyncClient
    does (not trio)."""

    def __init__(self, client: AsyncClient) -> None:
        if not isinstance(client, AsyncClient):
            raise TypeError(f"AsyncTransport takes a humus_http.AsyncClient, not {type(client).__name__} (a "
                            f"Client goes to Transport)")
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        content = await request.aread()
        stack = AsyncExitStack()
        try:
            response = await stack.enter_async_context(self.client.stream(
                request.method, str(request.url), headers=_headers(request),
                content=content if _has_body(request, content) else None, follow_redirects=False))
        except UpstreamError as error:
            raise _mapped(error, request) from error
        return _response(response, _AsyncBody(response, stack, request))
