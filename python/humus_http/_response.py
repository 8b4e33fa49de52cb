"""Responses and requests shaped like httpx's, and case-insensitive multi-value headers."""
from __future__ import annotations

import codecs
import http
import io
import json as jsonlib
import os
import stat
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, BinaryIO, cast, overload

from . import _native
from ._closing import Closing
from ._errors import CancelledCallError, HTTPStatusError, ResponseTooLargeError, from_native
from ._trace import AttemptRecord
from ._trace import parse as parse_trace
from ._urls import URL, origin_of

__all__ = ["ContentTypes", "HeaderTypes", "Headers", "MutableHeaders", "Redirect", "Request", "RequestHeaderTypes",
           "RequestParts", "Response", "SentHeaders", "merge_headers"]


class Headers(Mapping[str, str]):
    """Case-insensitive, multi-value HTTP headers in the order received (like httpx.Headers).

    ``headers["set-cookie"]`` joins repeated values with ``", "``; ``get_list(name)`` returns each value;
    ``multi_items()`` every (name, value) pair. Names compare case-insensitively and are kept as sent.
    Immutable once built: share it between threads freely.
    """

    __slots__ = ("_index", "_items")

    def __init__(self, items: HeaderTypes | None = None) -> None:
        if items is None:
            pairs: list[tuple[str, str]] = []
        elif isinstance(items, Headers):
            pairs = list(items._items)
        elif isinstance(items, Mapping):
            pairs = [(str(k), str(v)) for k, v in items.items()]
        else:
            pairs = [(str(k), str(v)) for k, v in items]
        self._items: list[tuple[str, str]] = pairs
        self._index: dict[str, list[str]] | None = None

    def _lookup(self) -> dict[str, list[str]]:
        index = self._index
        if index is None:
            index = {}
            for name, value in self._items:
                index.setdefault(name.lower(), []).append(value)
            self._index = index
        return index

    def __getitem__(self, name: str) -> str:
        values = self._lookup().get(name.lower())
        if values is None:
            raise KeyError(name)
        return values[0] if len(values) == 1 else ", ".join(values)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._lookup()

    def __iter__(self) -> Iterator[str]:
        return iter(self._lookup())

    def __len__(self) -> int:
        return len(self._lookup())

    def get_list(self, name: str) -> list[str]:
        """Every value of ``name``, in order (empty when absent)."""
        return list(self._lookup().get(name.lower(), ()))

    def multi_items(self) -> list[tuple[str, str]]:
        """Every (name, value) pair in the order received, names as sent."""
        return list(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return sorted((k.lower(), v) for k, v in self._items) == sorted((k.lower(), v) for k, v in other._items)
        if isinstance(other, Mapping):
            return self == Headers(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class MutableHeaders(Headers, MutableMapping[str, str]):
    """Headers that can be changed, as a request's are for ``auth=`` callables and request event hooks:
    ``headers[name] = value`` replaces every value of ``name`` (keeping the first one's place), ``del
    headers[name]`` removes them all. Not thread-safe: change it from one thread at a time."""

    __slots__ = ()

    def __setitem__(self, name: str, value: str) -> None:
        lower = name.lower()
        items: list[tuple[str, str]] = []
        placed = False
        for key, old in self._items:
            if key.lower() != lower:
                items.append((key, old))
            elif not placed:
                items.append((key, str(value)))
                placed = True
        if not placed:
            items.append((name, str(value)))
        self._items = items
        self._index = None

    def __delitem__(self, name: str) -> None:
        lower = name.lower()
        if lower not in self._lookup():
            raise KeyError(name)
        self._items = [(k, v) for k, v in self._items if k.lower() != lower]
        self._index = None


#: What ``headers=`` accepts: a mapping, a sequence of (name, value) pairs, or Headers.
HeaderTypes = Headers | Mapping[str, str] | Sequence[tuple[str, str]]
#: What a call's or a client's ``headers=`` accepts: a value None leaves that header out (docs/bindings.md §17.3).
RequestHeaderTypes = HeaderTypes | Mapping[str, str | None] | Sequence[tuple[str, str | None]]
#: The (name, value) pairs the extension takes: a value None sends no header of that name.
SentHeaders = list[tuple[str, str | None]]


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


class Request:
    """A request as the client sends it, shaped like httpx.Request: ``method``, ``url`` (a URL), ``headers``
    (the client's configured headers, then the call's, with what ``json=``, ``data=``, ``files=``, ``cookies=``
    and ``auth=`` add; not the ones the transport adds, such as Host, Content-Length or User-Agent) and
    ``attempt``, the attempt it is sent as (1: the first). ``auth=`` callables and request event hooks get
    it before the call starts and may change its headers (MutableHeaders), method or URL. One thread at a time.
    """

    __slots__ = ("attempt", "headers", "method", "url")

    def __init__(self, method: str, url: URL | str, headers: HeaderTypes | None = None, *,
                 attempt: int = 1) -> None:
        self.method: str = method.upper()
        self.url: URL = url if isinstance(url, URL) else URL(url)
        self.headers: MutableHeaders = MutableHeaders(headers)
        self.attempt: int = attempt

    def __repr__(self) -> str:
        return f"<Request({self.method!r}, {str(self.url)!r})>"


# The statuses of a redirect (httpx.codes.is_redirect).
_REDIRECT_STATUSES = frozenset((301, 302, 303, 307, 308))


class _StatusPredicates:
    """The status predicates a Response and a Redirect share (httpx's names)."""

    __slots__ = ()
    status_code: int

    @property
    def reason_phrase(self) -> str:
        """The standard reason phrase of the status ("Not Found"), empty for an unknown status."""
        return _reason(self.status_code)

    @property
    def is_informational(self) -> bool:
        """True for a 1xx status."""
        return 100 <= self.status_code < 200

    @property
    def is_success(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status_code < 300

    @property
    def is_redirect(self) -> bool:
        """True for a 301, 302, 303, 307 or 308 with a Location header (as httpx)."""
        return self.status_code in _REDIRECT_STATUSES

    @property
    def is_client_error(self) -> bool:
        """True for a 4xx status."""
        return 400 <= self.status_code < 500

    @property
    def is_server_error(self) -> bool:
        """True for a 5xx status."""
        return 500 <= self.status_code < 600

    @property
    def is_error(self) -> bool:
        """True for a 4xx or 5xx status."""
        return 400 <= self.status_code < 600


class Redirect(_StatusPredicates):
    """One redirect a call followed, an entry of ``Response.history``: its 3xx ``status_code``, the ``url`` of
    the request that got it, and its head as a Response gives its own: ``headers`` (a Headers, every field in
    the order received, repeated ones kept), ``http_version`` (``"HTTP/1.1"`` or ``"HTTP/2"``) and
    ``reason_phrase``, with the status predicates of a Response (``is_redirect`` is True). Unlike httpx's
    history, which holds whole Responses, a redirect's body is not kept. Immutable."""

    __slots__ = ("_header_items", "_headers", "_reason", "_version", "status_code", "url")

    def __init__(self, status_code: int, url: URL | str, *, _reason: bytes | None = None, _version: str = "",
                 _headers: list[tuple[str, str]] | None = None) -> None:
        self.status_code: int = status_code
        self.url: URL = url if isinstance(url, URL) else URL(url)
        #: The 3xx's reason phrase as sent; None over HTTP/2 or when not known (the standard one is given).
        self._reason = _reason
        #: The HTTP version as the core gives it ("1.1", "2"; "" when not known).
        self._version = _version
        #: The head's (name, value) pairs, made a Headers when first read.
        self._header_items = _headers
        self._headers: Headers | None = None

    @property
    def headers(self) -> Headers:
        """The redirect's response headers (case-insensitive, every value kept, in the order received)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = Headers(self._header_items or [])
        return headers

    @property
    def http_version(self) -> str:
        """``"HTTP/2"`` or ``"HTTP/1.1"``, as Response.http_version spells them ("" for a Redirect made by hand)."""
        return "HTTP/" + self._version if self._version else ""

    @property
    def reason_phrase(self) -> str:
        """The 3xx's reason phrase as sent over HTTP/1.x, the standard phrase over HTTP/2 (as Response's)."""
        raw = self._reason
        return _reason(self.status_code) if raw is None else raw.decode("ascii", errors="ignore")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Redirect):
            return (self.status_code, self.url) == (other.status_code, other.url)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.status_code, self.url))

    def __repr__(self) -> str:
        return f"<Redirect [{self.status_code} {self.reason_phrase}] {str(self.url)!r}>"


#: What a Response keeps of its request until ``.request`` is read: the Request, or (method, URL, the client's
#: configured headers, the call's headers).
RequestParts = Request | tuple[str, str, list[tuple[str, str]], SentHeaders | None]


def merge_headers(configured: list[tuple[str, str]],
                  own: SentHeaders | None) -> list[tuple[str, str]]:
    """A request's headers: the configured ones, then its own, which replace configured ones of their name (one
    whose value is None leaves the header out)."""
    if not own:
        return list(configured)
    names = {name.lower() for name, _ in own}
    return [(k, v) for k, v in configured if k.lower() not in names] + [(k, v) for k, v in own if v is not None]


def _history(native: _native.Response) -> list[Redirect]:
    """The Redirect entries of a native response (none: an empty list, nothing else made)."""
    return [Redirect(status, url, _reason=reason, _version=version, _headers=headers)
            for status, url, reason, version, headers in native.redirects()]


def _redirected(first: Request, history: list[Redirect], url: URL) -> Request:
    """The last request of a call whose first was ``first``, after the redirects of ``history`` (the rules of
    docs/origin.md §2)."""
    method = first.method
    headers = MutableHeaders(first.headers)
    for redirect in history:
        status = redirect.status_code
        if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
            method = "GET"
            for name in ("Content-Type", "Content-Length"):
                if name in headers:
                    del headers[name]
    return Request(method, url, headers, attempt=first.attempt)


class Response(_StatusPredicates, Closing):
    """One call's response, whole in memory, shaped like httpx.Response.

    ``status_code``, ``headers`` (case-insensitive, multi-value), ``content`` (bytes), ``text``, ``json()``,
    ``raise_for_status()`` (returns the response when 2xx), ``iter_bytes()``, ``http_version`` (``"HTTP/1.1"``
    or ``"HTTP/2"``), ``url`` (a URL, after redirects within the origin), ``request`` (the Request sent),
    ``history`` (the redirects followed, as Redirect entries), ``attempts`` (attempts the call made),
    ``elapsed`` (the call's duration on its runtime's clock), and httpx's status predicates (``is_success``,
    ``is_redirect``, ``is_client_error``, ...). ``close()`` (or leaving a ``with`` block) frees the native
    buffer; what was read stays readable. Read it from one thread at a time.

    A response of ``AsyncClient.stream()`` is read with ``aiter_bytes()``, ``aiter_text()``, ``aiter_lines()``
    and ``aread()`` on its asyncio loop (one read at a time), and closed with ``aclose()``.
    """

    __slots__ = ("_attempt", "_attempts", "_bridge_of", "_content", "_elapsed_us", "_final_request", "_headers",
                 "_history", "_http_version", "_max_body", "_native", "_reason", "_request", "_retried", "_streamed",
                 "_trace", "_trace_text", "_url", "origin", "status_code")

    def __init__(self, native: _native.Response, origin: str, request: RequestParts,
                 stream: bool = False) -> None:
        self._native: _native.Response | None = native
        #: True for Client.stream() and AsyncClient.stream(): the body is still on its connection.
        self._streamed = stream
        #: AsyncClient.stream() only (set by it): the bridge of an asyncio loop, through which a read that found
        #: nothing read ahead is woken.
        self._bridge_of: BridgeOf | None = None
        #: AsyncClient.stream() only (set by it): aread()'s bound, the client's max_response_body.
        self._max_body = 0
        self.status_code: int = native.status
        #: The status line's reason phrase as sent, or None over HTTP/2 (read now: it outlives close()).
        self._reason: bytes | None = native.reason
        self._elapsed_us: int = native.elapsed_us
        self._request: RequestParts = request
        self._final_request: Request | None = None
        #: The origin of the client that made the call.
        self.origin = origin
        self._content: bytes | None = None
        self._headers: Headers | None = None
        self._http_version: str | None = None
        self._url: URL | None = None
        self._history: list[Redirect] | None = None
        self._attempts: int | None = None
        self._trace: list[AttemptRecord] | None = None
        self._trace_text: str | None = None  # the trace's JSON, kept by close() until trace is read
        #: True for the response of an attempt that was retried or redirected, as response hooks see it.
        self._retried = False
        #: The attempt that got it, when event hooks saw the call's attempts (else None: see attempt).
        self._attempt: int | None = None

    @classmethod
    def _of_attempt(cls, status_code: int, headers: list[tuple[str, str]], request: Request,
                    origin: str) -> Response:
        """The response of an attempt the call retried or redirected, as its response hooks see it: status,
        headers, request and attempt; its body was not kept, nor its HTTP version; ``elapsed`` reads 0."""
        response = cls.__new__(cls)
        response._native = None
        response._streamed = False
        response._bridge_of = None
        response._max_body = 0
        response.status_code = status_code
        response._reason = None
        response._elapsed_us = 0
        response._request = request
        response._final_request = request
        response.origin = origin
        response._content = None
        response._headers = Headers(headers)
        response._http_version = None
        response._url = request.url
        response._history = []
        response._attempts = request.attempt
        response._trace = []
        response._trace_text = None
        response._retried = True
        response._attempt = request.attempt
        return response

    def _live(self) -> _native.Response:
        native = self._native
        if native is None:
            if self._retried:
                raise RuntimeError(f"this response of attempt {self.attempt} was not kept: the call "
                                   f"{'followed its redirect' if self.is_redirect else 'retried it'}, so "
                                   "response hooks see only its status and headers")
            raise RuntimeError("the response is closed; read what you need before closing it")
        return native

    @property
    def content(self) -> bytes:
        """The whole body. For a streamed response (Client.stream), only after read()."""
        content = self._content
        if content is None:
            if self._streamed:
                raise RuntimeError("a streamed response's content is there only after read() (aread() for "
                                   "AsyncClient.stream()); iterate with iter_bytes() (aiter_bytes()) instead")
            content = self._content = self._live().body()
        return content

    @property
    def headers(self) -> Headers:
        """The response headers (case-insensitive, every value kept). A body the client decoded (``decompress``,
        on by default, for a call that sets no Accept-Encoding of its own) comes without its Content-Encoding and
        Content-Length, which describe the bytes on the wire and no longer the body: the core removes them for
        every binding (docs/bindings.md §17.3), where httpx keeps them. ``decompress=False``, or an
        Accept-Encoding of the call's own, leaves both, with the body as it came."""
        headers = self._headers
        if headers is None:
            headers = self._headers = Headers(self._live().headers())
        return headers

    @property
    def reason_phrase(self) -> str:
        """The reason phrase of the status line as the server sent it ("OK", "Not Found", a custom one; "" when
        it sent none), its bytes past ASCII dropped, as httpx gives it. HTTP/2 has none: there, as httpx does,
        the standard phrase of the status ("" for an unknown status); so too for a response hook's response of
        an attempt not kept. The core bounds the phrase (docs/transport.md §10.7)."""
        raw = self._reason
        return _reason(self.status_code) if raw is None else raw.decode("ascii", errors="ignore")

    @property
    def http_version(self) -> str:
        """``"HTTP/2"`` or ``"HTTP/1.1"``, as httpx spells them."""
        version = self._http_version
        if version is None:
            version = self._http_version = "HTTP/" + self._live().http_version
        return version

    @property
    def url(self) -> URL:
        """The URL of the last request, after redirects within the origin: a URL (``.path``, ``.query``,
        ``.host``, ...) whose str() is the URL as sent, and which equals that string."""
        url = self._url
        if url is None:
            url = self._url = URL(self._live().url)
        return url

    @property
    def history(self) -> list[Redirect]:
        """The redirects the call followed to get this response, oldest first (empty when none): each a
        Redirect with the 3xx ``status_code``, the ``url`` that got it, its ``headers``, ``http_version`` and
        ``reason_phrase``. Their bodies are not kept (httpx's history holds whole Responses)."""
        history = self._history
        if history is None:
            history = self._history = _history(self._live())
        return list(history)

    @property
    def request(self) -> Request:
        """The Request that got this response, as httpx's: the call's own, or after redirects the last one the
        core sent (to ``url``, its method and headers changed as docs/origin.md §2 says: a 303, or a 301/302
        after a POST, turns it into a GET without Content-Type)."""
        final = self._final_request
        if final is None:
            first = self._request
            if not isinstance(first, Request):
                method, url, configured, own = first
                first = Request(method, url, merge_headers(configured, own))
            history = self.history
            final = self._final_request = _redirected(first, history, self.url) if history else first
        return final

    @property
    def is_redirect(self) -> bool:
        """True for a 301, 302, 303, 307 or 308 with a Location header (as httpx): a redirect that was not
        followed (``follow_redirects=False``, another origin, or the 11th)."""
        return self.status_code in _REDIRECT_STATUSES and "location" in self.headers

    @property
    def attempt(self) -> int:
        """The attempt of its request that got this response (1: the first; a redirect hop starts again at
        1), as ``request.attempt``. Exact when the client has event hooks (which see every attempt); without,
        1 when redirects were followed, else ``attempts``."""
        if self._attempt is not None:
            return self._attempt
        return 1 if self.history else self.attempts

    @property
    def attempts(self) -> int:
        """Attempts the call made, every retry and redirect included (for the response of an attempt the call
        retried, as response hooks see it: that attempt's number)."""
        attempts = self._attempts
        if attempts is None:
            attempts = self._attempts = self._live().attempts
        return attempts

    @property
    def trace(self) -> list[AttemptRecord]:
        """The call's decision trace (docs/trace.md §20): one record per attempt, this response's own last,
        saying what was sent, how it ended, how it was classified, the breaker and budget around it, and what the
        call decided next (``decision``, ``wait``, ``wait_source``). Empty for the response of an attempt the
        call retried (as response hooks see it). Readable after close()."""
        trace = self._trace
        if trace is None:
            text = self._trace_text
            trace = self._trace = parse_trace(text if text is not None else self._live().trace_json())
            self._trace_text = None
        return trace

    @property
    def elapsed(self) -> timedelta:
        """How long the call took, from its start to this response, every attempt, wait and redirect included,
        to the microsecond (on a virtual clock: its virtual time, in whole milliseconds). Readable after
        close()."""
        return timedelta(microseconds=self._elapsed_us)

    @property
    def encoding(self) -> str:
        """The charset Content-Type names, lowercased (``"iso-8859-1"``), when Python knows it, else ``"utf-8"``:
        httpx's value, the name as the response gave it rather than Python's codec name (``iso8859-1``)."""
        content_type = self.headers.get("content-type", "")
        for param in content_type.split(";")[1:]:
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "charset":
                name = value.strip().strip('"').strip("'").lower()
                try:
                    codecs.lookup(name)
                except LookupError:
                    break
                return name
        return "utf-8"

    @property
    def text(self) -> str:
        """The body decoded with ``encoding`` (undecodable bytes replaced)."""
        return self.content.decode(self.encoding, errors="replace")

    def json(self, **kwargs: Any) -> Any:
        """The body parsed as JSON (``json.loads`` keyword arguments pass through)."""
        return jsonlib.loads(self.content, **kwargs)

    def raise_for_status(self) -> Response:
        """Returns the response when it is 2xx; otherwise raises HTTPStatusError naming the status and URL."""
        if self.is_success:
            return self
        status = self.status_code
        kind = {1: "Informational response", 3: "Redirect response", 4: "Client error", 5: "Server error"}.get(
            status // 100, "Invalid status code")
        message = f"{kind} '{status} {self.reason_phrase}' for url '{self.url}'"
        if status // 100 == 3 and "location" in self.headers:
            location = self.headers["location"]
            message += f"\nRedirect location: '{location}'"
            target = origin_of(urllib.parse.urljoin(str(self.url), location))
            if target != self.origin and self.origin:
                message += (f"\nhumus_http follows redirects within the client's origin only (docs/origin.md §2), "
                            f"so this one to {target} was not: to follow it, make a client for {target} (one "
                            f"client per dependency, or humus_http.Upstreams) and call it there")
        raise HTTPStatusError(message, response=self)

    def iter_bytes(self, chunk_size: int | None = None) -> Iterator[bytes]:
        """The body in chunks of ``chunk_size`` bytes (the last may be shorter); nothing for an empty body. When
        None: one chunk, or for a streamed response each piece as it arrives. A streamed response is read from
        its connection as the iteration goes (the GIL released during each read), so memory stays at one chunk
        whatever the body's size; it can be iterated once."""
        if chunk_size is not None and chunk_size <= 0:
            raise ValueError(f"chunk_size must be > 0, not {chunk_size}")
        if self._streamed and self._content is None:
            yield from self._iter_stream(chunk_size)
            return
        content = self.content
        if not content:
            return
        if chunk_size is None or chunk_size >= len(content):
            yield content
            return
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be > 0, not {chunk_size}")
        for start in range(0, len(content), chunk_size):
            yield content[start:start + chunk_size]

    def iter_raw(self, chunk_size: int | None = None) -> Iterator[bytes]:
        """The body as the client handed it over, as iter_bytes() gives it (httpx's ``iter_raw()``): the
        client decodes a body itself (``decompress``) and keeps no encoded copy, so for a decoded body these are
        its decoded bytes; with ``decompress=False`` or the call's own Accept-Encoding, the bytes as they came."""
        return self.iter_bytes(chunk_size)

    def _sync_stream(self) -> _native.Response:
        if self._bridge_of is not None:
            raise RuntimeError("a response of AsyncClient.stream() is read with aiter_bytes(), aiter_text(), "
                               "aiter_lines() or aread()")
        return self._live()

    def _iter_stream(self, chunk_size: int | None) -> Iterator[bytes]:
        native = self._sync_stream()
        chunks = _Chunker(chunk_size)
        while True:
            try:
                data = native.read(chunks.cap())
            except _native.Failure as failure:
                raise from_native(failure.args[0], self.origin) from None
            if not data:
                break
            yield from chunks.feed(data)
        yield from chunks.finish()

    def iter_text(self, chunk_size: int | None = None) -> Iterator[str]:
        """The body decoded with ``encoding`` piece by piece (undecodable bytes replaced)."""
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        for chunk in self.iter_bytes(chunk_size):
            yield from _decoded(decoder, chunk)
        yield from _decoded(decoder, b"", final=True)

    def iter_lines(self) -> Iterator[str]:
        """The body's lines, without their line endings (``\\n``, ``\\r\\n`` or ``\\r``), as they arrive."""
        lines = _LineSplitter()
        for text in self.iter_text():
            yield from lines.feed(text)
        yield from lines.finish()

    def read(self) -> bytes:
        """The whole body (as httpx's ``read()``); for a streamed response, the rest of it read into memory,
        bounded by max_response_body (UpstreamError with status TOO_LARGE past it)."""
        if self._streamed and self._content is None:
            self._sync_stream()
            try:
                self._content = self._live().read_rest()
            except _native.Failure as failure:
                raise from_native(failure.args[0], self.origin) from None
        return self.content

    def close(self) -> None:
        """Frees the native response; content, headers and URL stay readable. Idempotent. A streamed response
        not read to its end is closed: its connection too, and the breaker counts its result then."""
        native = self._native
        if native is None:
            return
        if self._content is None and not self._streamed:
            self._content = native.body()
        if self._headers is None:
            self._headers = Headers(native.headers())
        if self._http_version is None:
            self._http_version = "HTTP/" + native.http_version
        if self._url is None:
            self._url = URL(native.url)
        if self._history is None:
            self._history = _history(native)
        if self._attempts is None:
            self._attempts = native.attempts
        if self._trace is None:
            self._trace_text = native.trace_json()
        self._native = None
        native.close()

    @property
    def is_closed(self) -> bool:
        """True once close() ran."""
        return self._native is None

    # --- AsyncClient.stream() -------------------------------------------------------------------------------

    async def _read_async(self, cap: int) -> bytes:
        """The next bytes of an AsyncClient.stream() body (at most ``cap``, b"" at its end), copied out of what
        the library read ahead since the headers came (humus_response_take): at once when some are in, else
        awaited on this asyncio loop, woken through its bridge by the body's ready. Cancelled while it waits,
        it closes the response (the breaker counts the result as classified)."""
        bridge_of = self._bridge_of
        if bridge_of is None:
            raise RuntimeError("only a response of AsyncClient.stream() is read asynchronously; this one has "
                               "iter_bytes() and read()")
        while True:
            native = self._live()
            try:
                data = native.take(cap)
            except _native.Failure as failure:
                raise from_native(failure.args[0], self.origin) from None
            if data is not None:
                return data
            import asyncio  # here, not at the top: a process that never runs a loop never pays for asyncio's import

            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            if not native.wait(bridge_of(loop), future):
                continue  # its ready came before the wait: something is in
            # A flowing body wakes its reader once half the ring is in; past _BATCH_WAIT whatever came does.
            hurry = loop.call_later(_BATCH_WAIT, native.hurry)
            try:
                await future
            except asyncio.CancelledError:
                self.close()
                raise
            finally:
                hurry.cancel()
            if self._native is None:  # closed by another task while this read waited: ended as cancelled
                raise CancelledCallError("the response was closed while a read of its body waited",
                                         status="HUMUS_E_CANCELLED", origin=self.origin, attempts=self.attempts)

    async def aiter_bytes(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        """As iter_bytes(), awaiting each piece: the body in chunks of ``chunk_size`` bytes (the last may be
        shorter), or each piece as it arrives (at most 64 KiB) when None. A response of AsyncClient.stream() is
        read from its connection as the iteration goes, ahead into the library's bounded ring (64 KiB, 256 KiB
        for a body of 1 MiB or more, the body's size under 256 KiB), so memory stays at the ring and one chunk
        whatever the body's size; it can be iterated once. Another response yields its content. A read failing
        mid-body raises as iter_bytes() does."""
        if chunk_size is not None and chunk_size <= 0:
            raise ValueError(f"chunk_size must be > 0, not {chunk_size}")
        if not (self._streamed and self._content is None):
            for chunk in self.iter_bytes(chunk_size):
                yield chunk
            return
        chunks = _Chunker(chunk_size)
        while True:
            data = await self._read_async(chunks.cap())
            if not data:
                break
            for chunk in chunks.feed(data):
                yield chunk
        for chunk in chunks.finish():
            yield chunk

    def aiter_raw(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        """As iter_raw(), for a response of AsyncClient.stream(): the body as aiter_bytes() gives it."""
        return self.aiter_bytes(chunk_size)

    async def aiter_text(self, chunk_size: int | None = None) -> AsyncIterator[str]:
        """As iter_text(): the body decoded with ``encoding`` piece by piece (undecodable bytes replaced)."""
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        async for chunk in self.aiter_bytes(chunk_size):
            for text in _decoded(decoder, chunk):
                yield text
        for text in _decoded(decoder, b"", final=True):
            yield text

    async def aiter_lines(self) -> AsyncIterator[str]:
        """As iter_lines(): the body's lines, without their line endings, as they arrive."""
        lines = _LineSplitter()
        async for text in self.aiter_text():
            for line in lines.feed(text):
                yield line
        for line in lines.finish():
            yield line

    async def aread(self) -> bytes:
        """The whole body (as httpx's ``aread()``): for a response of AsyncClient.stream(), the rest of it read
        into memory, bounded by the client's max_response_body: past it the response is closed (its result
        counted as classified, as aclose() does) and ResponseTooLargeError (status HUMUS_E_TOO_LARGE) raised.
        Afterwards ``content``, ``text`` and ``json()`` work."""
        if self._streamed and self._content is None:
            self._live()
            body = bytearray()
            while True:
                data = await self._read_async(64 * 1024)
                if not data:
                    break
                body += data
                if len(body) > self._max_body:
                    attempts = self.attempts
                    self.close()
                    raise ResponseTooLargeError(
                        f"the response body passed max_response_body ({self._max_body} bytes)",
                        status="HUMUS_E_TOO_LARGE", origin=self.origin, attempts=attempts)
            self._content = bytes(body)
        return self.content

    async def aclose(self) -> None:
        """The same as close(), for ``async`` code: a body not read to its end is closed with its connection,
        and the breaker counts its result then. Idempotent."""
        self.close()

    def __repr__(self) -> str:
        return f"<Response [{self.status_code} {self.reason_phrase}]>"


if TYPE_CHECKING:
    import asyncio

    #: Gives the native bridge of an asyncio loop (AsyncClient's, one per loop).
    BridgeOf = Callable[[asyncio.AbstractEventLoop], _native.Bridge]

#: How long a read of an AsyncClient.stream() body that found nothing waits for the library to gather a batch
#: of a flowing body before it takes whatever came (humus_response_hurry): a wake-up per batch rather than per
#: receive buffer, at a bounded delay for a trickle (seconds; Go's batchWait).
_BATCH_WAIT = 0.0005


class _Chunker:
    """Regroups the pieces read from a streamed body into chunks of ``chunk_size`` bytes (None: as read)."""

    __slots__ = ("_pending", "_size")

    def __init__(self, chunk_size: int | None) -> None:
        self._size = chunk_size
        self._pending = bytearray()

    def cap(self) -> int:
        """How many bytes the next read may bring."""
        return 64 * 1024 if self._size is None else max(1, self._size - len(self._pending))

    def feed(self, data: bytes) -> list[bytes]:
        if self._size is None:
            return [data]
        self._pending += data
        if len(self._pending) < self._size:
            return []
        chunk = bytes(self._pending)
        self._pending.clear()
        return [chunk]

    def finish(self) -> list[bytes]:
        return [bytes(self._pending)] if self._pending else []


def _decoded(decoder: codecs.IncrementalDecoder, chunk: bytes, final: bool = False) -> list[str]:
    """The text `chunk` completes (none while a character is cut), from an incremental decoder."""
    text = decoder.decode(chunk, final=final)
    return [text] if text else []


class _LineSplitter:
    """Cuts decoded text into lines without their endings (``\\n``, ``\\r\\n`` or ``\\r``) as it arrives."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        lines = (self._pending + text).splitlines(keepends=True)
        self._pending = ""
        if lines and not lines[-1].endswith(("\n", "\r")):
            self._pending = lines.pop()
        elif lines and lines[-1].endswith("\r"):
            self._pending = lines.pop()  # may be the first half of a "\r\n"
        return [line.rstrip("\r\n") for line in lines]

    def finish(self) -> list[str]:
        return self._pending.splitlines()


def request_headers(headers: RequestHeaderTypes | None, extra: Iterable[tuple[str, str]] = ()) -> SentHeaders | None:
    """The (name, value) list the extension takes (a value None: that header left out)."""
    out: SentHeaders
    if headers is None:
        out = []
    elif isinstance(headers, Headers):
        out = [*headers.multi_items()]
    elif isinstance(headers, Mapping):
        out = list(headers.items())
    else:
        out = [(k, v) for k, v in headers]
    out.extend(extra)
    return out or None


#: What ``content=`` accepts: bytes, str (sent UTF-8), an iterator of bytes, or a file opened in binary mode.
ContentTypes = bytes | str | Iterable[bytes | bytearray | memoryview] | BinaryIO

#: A streamed body as the extension takes it: (read(cap) -> bytes, rewind() or None, length or -1).
BodyReader = tuple[Callable[[int], bytes], Callable[[], object] | None, int]


class _ChunksReader:
    """An iterator of bytes as a body reader: hands its chunks out ``cap`` bytes at a time. Not replayable."""

    __slots__ = ("_chunk", "_chunks", "_offset")

    def __init__(self, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
        self._chunks = iter(chunks)
        self._chunk = b""
        self._offset = 0

    def read(self, cap: int) -> bytes:
        while self._offset >= len(self._chunk):
            chunk = next(self._chunks, None)
            if chunk is None:
                return b""
            if not isinstance(chunk, (bytes, bytearray, memoryview)):
                raise TypeError(f"content iterator must yield bytes, not {type(chunk).__name__}")
            self._chunk = bytes(chunk)
            self._offset = 0
        start = self._offset
        self._offset = start + cap
        if start == 0 and cap >= len(self._chunk):
            return self._chunk
        return self._chunk[start:start + cap]


def _file_reader(file: BinaryIO) -> BodyReader:
    """A binary file as a body reader: replayable when seekable (rewind seeks back to where it stood), its
    length known from fstat (a regular file) or by seeking to its end."""
    if isinstance(file, io.TextIOBase):
        raise TypeError("content file must be opened in binary mode")
    read = file.read

    def read_bytes(cap: int) -> bytes:
        data = read(cap)
        if not isinstance(data, bytes):
            raise TypeError(f"content file must be opened in binary mode (read() gave {type(data).__name__})")
        return data

    try:
        seekable = file.seekable()
    except (AttributeError, ValueError):
        seekable = False
    if not seekable:
        return read_bytes, None, -1
    start = file.tell()
    length = -1
    try:
        info = os.fstat(file.fileno())
        if stat.S_ISREG(info.st_mode):
            length = max(0, info.st_size - start)
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass
    if length < 0:
        end = file.seek(0, os.SEEK_END)
        file.seek(start)
        length = max(0, end - start)

    def rewind() -> None:
        file.seek(start)

    return read_bytes, rewind, length


@overload
def encode_body(content: None, json: None) -> tuple[None, None]: ...
@overload
def encode_body(content: ContentTypes | None, json: Any) -> tuple[bytes | BodyReader | None, str | None]: ...


def encode_body(content: ContentTypes | None, json: Any) -> tuple[bytes | BodyReader | None, str | None]:
    """The body (bytes, or a reader for an iterator or a file) and the Content-Type it implies
    (``application/json`` for ``json=``)."""
    if json is not None:
        if content is not None:
            raise TypeError("pass content= or json=, not both")
        return jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(), \
            "application/json"
    if content is None:
        return None, None
    if isinstance(content, str):
        return content.encode(), None
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content), None
    if hasattr(content, "read"):
        return _file_reader(cast(BinaryIO, content)), None
    if isinstance(content, Iterable):
        return (_ChunksReader(content).read, None, -1), None
    raise TypeError(f"content must be bytes, str, an iterator of bytes or a binary file, not {type(content).__name__}")
