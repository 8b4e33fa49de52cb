"""What the httpx transport (humus_http.httpx) and the requests adapter (humus_http.requests) share: the
headers a host library hands over that the humus client sets itself."""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["forwarded_headers"]

#: Headers of framing, origin and connection management: httpx and requests put some of them on every request
#: (Host, Connection, Content-Length, Transfer-Encoding), and the core refuses them from a caller: the URL names
#: the host, the body given to the call its framing, and the connections are the client's.
_CLIENT_OWNED = frozenset(("host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                           "te", "trailer", "proxy-connection"))


def forwarded_headers(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (name, value) pairs of a host library's request, without those the humus client sets itself."""
    return [(name, value) for name, value in pairs if name.lower() not in _CLIENT_OWNED]
