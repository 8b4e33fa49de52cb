"""humus_http inside requests: ``Adapter`` (a ``requests.adapters.HTTPAdapter``) sends a requests Session's calls
to one origin through a ``humus_http.Client`` — with its retries, breaker, bulkhead, retry budget, deadlines and
spans (docs/bindings.md §17.3):

    import requests, humus_http, humus_http.requests

    payments = humus_http.Client("https://payments.internal", timeout=5.0)
    session = requests.Session()
    session.mount("https://payments.internal/", humus_http.requests.Adapter(payments))

requests keeps its own work: redirects (each hop is one request through the adapter its URL is mounted on),
auth, the cookie jar, and decoding the body it asked to be compressed (urllib3 does, as for its own
connections). Both ways stream: a request body given as a generator or a file is read as it is sent, and the
response body is read from its connection as requests reads it (``stream=True``: as ``iter_content()`` goes).
Failures are requests' exceptions with the humus error as ``__cause__``; a call the humus client refused to
send is ``RejectedError``. Needs requests: ``pip install 'humus_http[requests]'``.
"""
from __future__ import annotations

import http.client
import io
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from typing import Any

try:
    import requests
    import requests.adapters
    import urllib3
except ImportError as e:
    raise ImportError("humus_http.requests needs requests: pip install 'humus_http[requests]'") from e

from ._client import Client
from ._errors import (
    BulkheadFullError,
    CircuitOpenError,
    CrossOriginError,
    InvalidRequestError,
    RequestError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamTLSError,
)
from ._hosted import forwarded_headers
from ._response import Response, SentHeaders
from ._timeout import USE_CLIENT_DEFAULT, UseClientDefault

__all__ = ["Adapter", "RejectedError"]


class RejectedError(requests.ConnectionError):
    """The humus client sent nothing: its circuit breaker is open (``__cause__`` is a CircuitOpenError, whose
    ``retry_after`` says for how long) or its bulkhead had no free slot (a BulkheadFullError). A
    ``requests.ConnectionError``, so code that handles requests' failures handles it; catch it first to shed load
    instead of reporting an outage. ``retry_after`` is the breaker's (seconds), None for a full bulkhead."""

    def __init__(self, message: str, *, request: requests.PreparedRequest, retry_after: float | None) -> None:
        super().__init__(message, request=request)
        self.retry_after = retry_after


def _mapped(error: UpstreamError, request: requests.PreparedRequest) -> requests.RequestException:
    """requests' exception for a humus failure, the one its own adapter raises for the same event (raised
    ``from error``)."""
    message = str(error)
    if isinstance(error, CircuitOpenError):
        return RejectedError(message, request=request, retry_after=error.retry_after)
    if isinstance(error, BulkheadFullError):
        return RejectedError(message, request=request, retry_after=None)
    kind: type[requests.RequestException]
    if isinstance(error, UpstreamTimeoutError):
        kind = requests.exceptions.ReadTimeout  # the call's deadline, whatever stage it ended in
    elif isinstance(error, UpstreamTLSError):
        kind = requests.exceptions.SSLError
    elif isinstance(error, CrossOriginError):
        kind = requests.exceptions.InvalidSchema  # as requests raises for a URL no adapter of it serves
    elif isinstance(error, InvalidRequestError):
        kind = requests.exceptions.InvalidHeader if error.fields else requests.RequestException
    elif isinstance(error, RequestError):
        kind = requests.ConnectionError  # no connection, a broken exchange, a local shortage, the client closed
    else:
        kind = requests.RequestException
    return kind(message, request=request)


def _content(request: requests.PreparedRequest) -> bytes | Iterator[bytes] | io.IOBase | None:
    """The body as the humus client takes it: bytes, a file (read as it is sent, rewound for a retry), or the
    chunks of a generator (read as they are sent; one attempt)."""
    body: Any = request.body
    if body is None:
        # requests declares an empty body (Content-Length: 0) for the methods that carry one: that is sent.
        return b"" if "Content-Length" in request.headers else None
    if isinstance(body, str):
        return body.encode("iso-8859-1")  # as http.client encodes a str body under requests' own adapter
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        return body  # type: ignore[no-any-return]
    return (chunk.encode() if isinstance(chunk, str) else chunk for chunk in body)


def _request_headers(request: requests.PreparedRequest) -> SentHeaders:
    # A value given as bytes goes out as its bytes, as http.client sends it.
    out: SentHeaders = [*forwarded_headers((name, value.decode("iso-8859-1") if isinstance(value, bytes) else value)
                                           for name, value in request.headers.items())]
    # requests sends no Accept of its own once a None dropped it (session.headers["Accept"] = None), nor does
    # urllib3: the humus client leaves out the one it would add (docs/bindings.md §17.3).
    if "Accept" not in request.headers:
        out.append(("Accept", None))
    return out


def _timeout(timeout: float | tuple[float | None, float | None] | None) -> float | UseClientDefault:
    """requests' ``timeout=`` as the call's bound: a number as it is, a (connect, read) pair their sum, since a
    humus call's bound covers it whole (every attempt and wait); None the humus client's own."""
    if timeout is None:
        return USE_CLIENT_DEFAULT
    if isinstance(timeout, tuple):
        parts = [part for part in timeout if part is not None]
        return sum(parts) if parts else USE_CLIENT_DEFAULT
    return timeout


class _Body(io.RawIOBase):
    """A response body as urllib3 reads it from its file object, read from its connection as it goes. It stands
    for the http.client response too (``msg``, ``isclosed()``): requests reads the cookies a response sets
    there. Closing it closes the humus response."""

    def __init__(self, response: Response, stack: ExitStack) -> None:
        super().__init__()
        self._chunks = response.iter_bytes()
        self._chunk = memoryview(b"")
        self._stack = stack
        self.msg = http.client.HTTPMessage()
        for name, value in response.headers.multi_items():
            self.msg[name] = value

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._chunk:
            try:
                self._chunk = memoryview(next(self._chunks, b""))
            except UpstreamTimeoutError:
                raise  # a TimeoutError: urllib3 reports it as its read timeout
            except UpstreamError as error:
                # An OSError is what urllib3 reports as the connection broken mid-body, and requests as
                # ChunkedEncodingError; the humus error stays its cause.
                raise OSError(f"the response body broke off: {error}") from error
            if not self._chunk:
                return 0
        n = min(len(buffer), len(self._chunk))
        buffer[:n] = self._chunk[:n]
        self._chunk = self._chunk[n:]
        return n

    def isclosed(self) -> bool:
        return self.closed

    def close(self) -> None:
        if not self.closed:
            self._stack.close()
        super().close()


def _headers(response: Response) -> urllib3.HTTPHeaderDict:
    headers = urllib3.HTTPHeaderDict()
    for name, value in response.headers.multi_items():
        headers.add(name, value)
    return headers


class Adapter(requests.adapters.HTTPAdapter):
    """A ``requests.adapters.HTTPAdapter`` over a ``humus_http.Client``: ``session.mount(origin + "/",
    Adapter(client))``.

    Each request requests hands over is one humus call (every attempt, wait and retry of it), made with the humus
    client's redirect following off, so that requests' own redirects see each 3xx. The URL must be on the humus
    client's origin (``requests.exceptions.InvalidSchema`` otherwise: mount the adapter on that origin only);
    requests' Host, Connection, Content-Length and Transfer-Encoding headers are the humus client's to set.
    ``timeout=`` bounds the call (a ``(connect, read)`` pair by its sum) below the humus client's own deadline;
    TLS is the humus client's, so ``verify=False`` and ``cert=`` are a ValueError rather than ignored, and no
    proxy is used (docs/transport.md §10.4). ``max_retries`` stays 0: the humus client retries. Closing the
    adapter (or the Session) leaves the humus client open: whoever made it closes it.
    """

    def __init__(self, client: Client) -> None:
        if not isinstance(client, Client):
            raise TypeError(f"Adapter takes a humus_http.Client, not {type(client).__name__}")
        super().__init__(max_retries=0)
        self.client = client

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: float | tuple[float | None, float | None] | None = None, verify: bool | str = True,
             cert: str | tuple[str, str] | None = None,
             proxies: Mapping[str, str] | None = None) -> requests.Response:
        """Sends ``request`` through the humus client. The body is read from its connection as requests reads
        it, whether or not ``stream`` is set (requests reads it whole at once without)."""
        if verify is False or cert is not None:
            raise ValueError("TLS is the humus client's: give it tls=humus_http.TLS(ca_file=..., cert_file=..., "
                             "key_file=...) rather than verify=False or cert= to requests")
        if request.url is None or request.method is None:
            raise ValueError("a PreparedRequest without a method or URL")
        stack = ExitStack()
        try:
            response = stack.enter_context(self.client.stream(
                request.method, request.url, headers=_request_headers(request),
                content=_content(request), timeout=_timeout(timeout), follow_redirects=False))
        except UpstreamError as error:
            raise _mapped(error, request) from error
        body = _Body(response, stack)
        raw = urllib3.HTTPResponse(body=body, headers=_headers(response), status=response.status_code,
                                   version=20 if response.http_version == "HTTP/2" else 11,
                                   reason=response.reason_phrase, preload_content=False, decode_content=True,
                                   original_response=body,  # type: ignore[arg-type]
                                   request_method=request.method, request_url=request.url)
        return self.build_response(request, raw)

    def close(self) -> None:
        """Closes what the HTTPAdapter base holds (nothing it ever used); the humus client stays open."""
        super().close()
