"""auth=: Basic and Bearer credentials, or a callable that sets headers, applied to a request before it is sent."""
from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

from ._response import Request

__all__ = ["AuthTypes", "BasicAuth", "BearerAuth", "auth_callable"]


@dataclass(frozen=True, slots=True)
class BasicAuth:
    """HTTP Basic authentication (RFC 7617): ``Authorization: Basic base64(username:password)``, as httpx.BasicAuth
    (a ``(username, password)`` tuple given as ``auth=`` means this). str values are encoded UTF-8 (as httpx
    does). The password is left out of repr(). Immutable."""

    username: str | bytes
    password: str | bytes = field(repr=False)

    def __call__(self, request: Request) -> Request:
        user, password = _utf8(self.username), _utf8(self.password)
        request.headers["Authorization"] = "Basic " + base64.b64encode(user + b":" + password).decode("ascii")
        return request


@dataclass(frozen=True, slots=True)
class BearerAuth:
    """A bearer token (RFC 6750): ``Authorization: Bearer <token>``. The token is left out of repr(). Immutable."""

    token: str = field(repr=False)

    def __call__(self, request: Request) -> Request:
        request.headers["Authorization"] = "Bearer " + self.token
        return request


#: What ``auth=`` accepts: a ``(username, password)`` tuple (Basic), BasicAuth, BearerAuth, or a callable that
#: takes the Request, sets its headers and returns it (httpx's function auth). None: no authentication.
AuthTypes = tuple[str | bytes, str | bytes] | Callable[[Request], Request | None]


def _utf8(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def auth_callable(auth: AuthTypes | None) -> Callable[[Request], Request | None] | None:
    """``auth=`` as one callable (None for no authentication); TypeError naming what is accepted otherwise."""
    if auth is None:
        return None
    if isinstance(auth, tuple):
        if len(auth) != 2:
            raise TypeError(f"auth= as a tuple is (username, password), not {len(auth)} items")
        return BasicAuth(*auth)
    if callable(auth):
        return auth
    raise TypeError("auth must be a (username, password) tuple, humus_http.BasicAuth, humus_http.BearerAuth or a "
                    f"callable taking and returning the Request, not {type(auth).__name__}")
