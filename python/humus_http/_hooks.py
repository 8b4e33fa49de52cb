"""Event hooks per attempt: one call's adapter between the core's attempt hooks (docs/retries.md §6.7) and the
client's ``event_hooks``.

The core calls ``before`` just before each attempt is sent (every retry and every redirect hop) and ``after``
once it is back, on the thread that drives the attempt, holding the GIL only for the call into Python. Request
hooks run in ``before``; what they change of ``Request.headers`` is sent with that attempt. ``after`` only
records the attempt's response: its response hooks run from the next ``before`` when the attempt was retried
or redirected (its body is not kept), or, for the attempt whose response the call returns, by the client once
the call is over, with the whole Response. So an exception any hook raises ends the call at once and reaches
the caller: from ``before`` the core ends the call with HUMUS_E_CALLBACK and the extension re-raises it.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._response import Request, Response

__all__ = ["AttemptHooks", "EventHooks"]

Hook = Callable[..., Any]

#: What ``event_hooks=`` accepts: ``{"request": [hook, ...], "response": [hook, ...]}``; a request hook is called
#: with the Request of every attempt, a response hook with the Response of every attempt (an AsyncClient awaits
#: an ``async def`` hook, once per call).
EventHooks = Mapping[str, Sequence[Callable[..., Any]]]


def _not_awaitable(result: object, hook: Hook) -> None:
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if close is not None:
            close()  # a coroutine never awaited would warn at collection
        raise TypeError(f"the event hook {getattr(hook, '__qualname__', hook)!r} returned an awaitable: a hook "
                        "run per attempt cannot be awaited; make it an async def function (an AsyncClient "
                        "awaits those once per call)")


def _joined(items: Sequence[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """name (lower case) -> (name as first spelt, every value joined with ", ", as RFC 9110 §5.3 allows)."""
    out: dict[str, tuple[str, str]] = {}
    for name, value in items:
        key = name.lower()
        seen = out.get(key)
        out[key] = (name, value) if seen is None else (seen[0], seen[1] + ", " + value)
    return out


class AttemptHooks:
    """One call's event hooks, run per attempt. ``native`` is what the extension hands the core."""

    __slots__ = ("_answered", "_flushed", "_origin", "_pending", "_request_hooks", "_response_hooks", "request")

    def __init__(self, request_hooks: Sequence[Hook], response_hooks: Sequence[Hook], first: Request,
                 origin: str) -> None:
        self._request_hooks = tuple(request_hooks)
        self._response_hooks = tuple(response_hooks)
        self._origin = origin
        #: The Request of the latest attempt, as its request hooks left it (the call's own before the first).
        self.request = first
        #: (status, headers, request) of the latest attempt's response, until its response hooks ran.
        self._pending: tuple[int, list[tuple[str, str]], Request] | None = None
        #: The Request of the latest attempt that got a response: the one a returned Response answers (an
        #: attempt cut short by a cancel or the deadline leaves the call the response before it).
        self._answered: Request | None = None
        #: The Request whose response hooks ran last, from _flush.
        self._flushed: Request | None = None

    @property
    def native(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        return (self._before, self._after)

    def _before(self, method: str, url: str, attempt: int,
                headers: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
        self._flush()
        request = Request(method, url, headers, attempt=attempt)
        self.request = request
        if not self._request_hooks:
            return None
        for hook in self._request_hooks:
            _not_awaitable(hook(request), hook)
        if request.method != method or str(request.url) != url:
            raise ValueError(f"a request hook changed the {'method' if request.method != method else 'url'} of "
                             "an attempt: hooks run per attempt and may change its headers only")
        before, after = _joined(headers), _joined(request.headers.multi_items())
        removed = [before[key][0] for key in before if key not in after]
        if removed:
            raise ValueError(f"a request hook removed {removed[0]!r}: hooks run per attempt and may add or "
                             "change headers, not remove the call's own")
        return [pair for key, pair in after.items() if before.get(key, (None, None))[1] != pair[1]] or None

    def _after(self, attempt: int, status: int, headers: list[tuple[str, str]]) -> None:
        # No response (a transport error): nothing for response hooks, as in httpx.
        if status:
            self._answered = self.request
        self._pending = (status, headers, self.request) if status and self._response_hooks else None

    def _flush(self) -> None:
        """The response hooks of the attempt before this one, which was retried or redirected."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        status, headers, request = pending
        self._flushed = request
        response = Response._of_attempt(status, headers, request, self._origin)
        for hook in self._response_hooks:
            _not_awaitable(hook(response), hook)

    def final(self, response: Response) -> None:
        """The call returned ``response``: it stands for the last attempt that got one (whose record is
        dropped), and its response hooks run with it whole — unless they ran already, when the attempt after
        it was cut short (a cancel, the deadline) and the call fell back on it."""
        self._pending = None
        answered = self._answered if self._answered is not None else self.request
        response._final_request = answered
        response._attempt = answered.attempt
        if answered is self._flushed:
            return
        for hook in self._response_hooks:
            _not_awaitable(hook(response), hook)
