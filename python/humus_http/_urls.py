"""URL: a parsed, immutable URL shaped like httpx.URL, whose str() is the URL as the core gave it; origins."""
from __future__ import annotations

import urllib.parse

__all__ = ["URL", "origin_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """scheme://host:port, the scheme's default port filled in (docs/origin.md §2); the URL itself if unparsable."""
    try:
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS.get(scheme)
        host = parts.hostname or ""
    except ValueError:
        return url
    if not scheme or not host or port is None:
        return url
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


class URL:
    """An absolute URL, parsed once (like httpx.URL): ``scheme``, ``host`` (lower-case, no brackets around an
    IPv6 address), ``port`` (None when it is the scheme's default), ``path`` (percent-decoded), ``raw_path``
    (path and query as sent, bytes), ``query`` (bytes, without the ``?``), ``fragment``; ``str(url)`` is the
    URL exactly as given, and a URL equals its string (``response.url == "https://..."``). ``join(other)``
    resolves a relative reference. Immutable: share it between threads freely.
    """

    __slots__ = ("_parts", "_url")

    def __init__(self, url: str | URL) -> None:
        self._url = str(url)
        self._parts = urllib.parse.urlsplit(self._url)

    @property
    def scheme(self) -> str:
        """``"http"`` or ``"https"`` (lower-case)."""
        return self._parts.scheme.lower()

    @property
    def host(self) -> str:
        """The host name or address, lower-case; ``""`` when there is none."""
        return self._parts.hostname or ""

    @property
    def port(self) -> int | None:
        """The port written in the URL, or None when it is absent or the scheme's default (as httpx)."""
        port = self._parts.port
        return None if port is None or port == _DEFAULT_PORTS.get(self.scheme) else port

    @property
    def netloc(self) -> bytes:
        """``host`` or ``host:port`` (the port only when it is not the default), as bytes (as httpx)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (host if self.port is None else f"{host}:{self.port}").encode("ascii", "replace")

    @property
    def path(self) -> str:
        """The path, percent-decoded; ``"/"`` when the URL has none."""
        return urllib.parse.unquote(self._parts.path) or "/"

    @property
    def raw_path(self) -> bytes:
        """The path and query as they go on the wire (``b"/v1/x?a=1"``)."""
        raw = self._parts.path or "/"
        if self._parts.query:
            raw += "?" + self._parts.query
        return raw.encode("ascii", "replace")

    @property
    def query(self) -> bytes:
        """The query string without its ``?``, as bytes (as httpx); ``b""`` when there is none."""
        return self._parts.query.encode("ascii", "replace")

    @property
    def fragment(self) -> str:
        """The fragment without its ``#``, percent-decoded."""
        return urllib.parse.unquote(self._parts.fragment)

    @property
    def is_absolute_url(self) -> bool:
        """True when the URL has a scheme and a host."""
        return bool(self._parts.scheme and self._parts.netloc)

    def join(self, url: str | URL) -> URL:
        """``url`` resolved against this one (RFC 3986, as a browser resolves a link)."""
        return URL(urllib.parse.urljoin(self._url, str(url)))

    def __str__(self) -> str:
        return self._url

    def __repr__(self) -> str:
        return f"URL({self._url!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (URL, str)):
            return self._url == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._url)
