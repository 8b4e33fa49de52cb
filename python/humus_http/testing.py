"""The testing kit (docs/testing-kit.md §16): test code that calls a dependency through humus_http without sockets and without
waiting, deterministically.

``MockTransport`` is a scripted dependency on a virtual clock. Script what each route answers, build clients
from it, call your code, then check what the dependency received and how much (virtual) time passed::

    from humus_http import MockReply
    from humus_http.testing import MockTransport

    def test_prices_survive_a_throttled_rates_service(mock_transport: MockTransport) -> None:
        mock_transport.script("GET /rates/EUR", MockReply(status=429, headers={"Retry-After": "2"}),
                              MockReply(body='{"rate": 1.08}'))
        rates = mock_transport.client("https://rates:8443")
        assert euro_rate(rates) == 1.08                  # your code, calling rates.get("/rates/EUR")
        assert len(mock_transport.requests) == 2
        assert mock_transport.elapsed_ms() == 2000       # the Retry-After, waited in no real time

The fixture ``mock_transport`` (a fresh MockTransport per test, its clients closed afterwards) is a pytest
plugin: add ``pytest_plugins = ["humus_http.testing"]`` to your ``conftest.py`` (or import ``mock_transport``
there). Everything else works without pytest.

A route is ``"<METHOD> <path and query>"`` (``"GET /rates?page=2"``) or ``"*"`` for requests no other route
matches. Each route keeps its own position: its n-th request gets its n-th reply, and the last reply repeats.
A reply is a MockReply, an int (a status with an empty body) or a callable ``(MockRequest) -> MockReply``. A
request no route matches fails its call with LookupError naming it.

The virtual clock (``Runtime(clock="virtual")``) moves on its own whenever every call in flight waits only on
timers: backoff, Retry-After, ``delay_ms`` and timeouts cost no real time. ``advance_ms()`` moves it by hand,
e.g. past a breaker's ``open_for``. Lower level: ``humus_http.Runtime(clock="virtual", mock=handler)`` with any
callable ``handler(MockRequest) -> MockReply``.
"""
from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._async import AsyncClient
from ._client import Client
from ._closing import Closing
from ._mock import MockReply, MockRequest
from ._settings import Runtime

__all__ = ["MockTransport", "RecordedRequest", "Reply"]

#: What a route answers: a MockReply, a bare status, or a callable that decides per request.
Reply = MockReply | int | Callable[[MockRequest], MockReply]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the mock received: ``method``, ``url``, ``path`` (path and query), ``body`` (``b""`` for
    none), ``at_ms`` (the runtime's clock when it arrived) and ``headers`` (the values of the header names the
    MockTransport was asked to record, None when absent). A frozen value."""

    method: str
    url: str
    path: str
    body: bytes
    at_ms: int
    headers: Mapping[str, str | None]

    def header(self, name: str) -> str | None:
        """A recorded header's value (case-insensitive), None when the request had none; KeyError for a name
        not given in ``record_headers``."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        raise KeyError(f"RecordedRequest.header({name!r}): not recorded; list it in MockTransport(record_headers=)")


class MockTransport(Closing):
    """A scripted dependency answering the clients built from its runtime (docs/testing-kit.md §16.2), on a virtual clock
    unless ``clock="real"``. ``seed`` fixes the backoff's random draws. ``record_headers`` names the request
    headers kept for each RecordedRequest (``Idempotency-Key``, ``traceparent``, ...).

    Build clients with ``client()`` / ``async_client()`` (``base_url`` and the Client's keyword arguments,
    passed on unchanged); ``close()`` (or leaving a ``with`` block) closes them. A request no route answers
    fails its call with LookupError. Thread-safe: scripts, records and calls may come from any thread."""

    def __init__(self, *, seed: int = 0, clock: Literal["virtual", "real"] = "virtual",
                 record_headers: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, list[Reply]] = {}
        self._served: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._record = tuple(record_headers)
        self._clients: list[Client | AsyncClient] = []
        self.runtime = Runtime(clock=clock, seed=seed if clock == "virtual" else None, mock=self)
        """The runtime the clients are built from (its clock, its mock transport)."""

    # --- the script

    def script(self, route: str, *replies: Reply) -> None:
        """Sets what ``route`` answers, in order, the last reply repeating: ``script("GET /pay", 503,
        MockReply(body="ok"))``. Replaces the route's earlier script and restarts its position."""
        if not isinstance(route, str) or not (route == "*" or (" /" in route and route.split(" ", 1)[0].isupper())):
            raise ValueError(f"MockTransport.script: a route is \"<METHOD> <path>\" (\"GET /pay\") or \"*\", "
                             f"not {route!r}")
        if not replies:
            raise ValueError(f"MockTransport.script({route!r}): give at least one reply")
        for reply in replies:
            if not (isinstance(reply, MockReply) or callable(reply) or
                    (isinstance(reply, int) and not isinstance(reply, bool))):
                raise TypeError(f"MockTransport.script({route!r}): a reply is a MockReply, a status or a callable, "
                                f"not {reply!r}")
        with self._lock:
            self._routes[route] = list(replies)
            self._served[route] = 0

    def __call__(self, request: MockRequest) -> MockReply:
        """The mock transport handler: records the request and answers from the script."""
        headers = {name: request.header(name) for name in self._record}
        recorded = RecordedRequest(request.method, request.url, request.path, request.body,
                                   self.runtime.elapsed_ms(), headers)
        key = f"{request.method} {request.path}"
        with self._lock:
            self._requests.append(recorded)
            if key not in self._routes:
                key = "*"
            replies = self._routes.get(key)
            if replies is None:
                raise LookupError(f"MockTransport: no reply scripted for \"{request.method} {request.path}\" and no "
                                  "\"*\" route")
            served = self._served[key]
            self._served[key] = served + 1
            reply = replies[min(served, len(replies) - 1)]
        if isinstance(reply, MockReply):
            return reply
        if isinstance(reply, int):
            return MockReply(status=reply)
        return reply(request)

    # --- what was received

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order of arrival (a copy)."""
        with self._lock:
            return list(self._requests)

    def received(self, route: str) -> list[RecordedRequest]:
        """The requests received on ``route`` (``"GET /pay"``), in order."""
        return [r for r in self.requests if f"{r.method} {r.path}" == route]

    # --- clock

    def elapsed_ms(self) -> int:
        """Milliseconds the runtime's clock has advanced since the MockTransport was made."""
        return self.runtime.elapsed_ms()

    def advance_ms(self, ms: int) -> None:
        """Moves the virtual clock forward by ``ms`` milliseconds (see Runtime.advance_ms)."""
        self.runtime.advance_ms(ms)

    # --- clients

    def client(self, base_url: str = "http://mock.test", **settings: Any) -> Client:
        """A Client of this dependency (its runtime), closed by close(); ``settings`` as Client takes them."""
        made = Client(base_url, runtime=self.runtime, **settings)
        with self._lock:
            self._clients.append(made)
        return made

    def async_client(self, base_url: str = "http://mock.test", **settings: Any) -> AsyncClient:
        """An AsyncClient of this dependency, closed by close()."""
        made = AsyncClient(base_url, runtime=self.runtime, **settings)
        with self._lock:
            self._clients.append(made)
        return made

    def close(self) -> None:
        """Closes the clients built here. Idempotent."""
        with self._lock:
            clients, self._clients = self._clients, []
        for c in clients:
            c.close()

    def __repr__(self) -> str:
        return f"<humus_http.testing.MockTransport clock={self.runtime.clock} requests={len(self.requests)}>"


if importlib.util.find_spec("pytest") is not None:
    import pytest

    @pytest.fixture
    def mock_transport() -> Iterator[MockTransport]:
        """A fresh MockTransport on a virtual clock (seed 0); the clients it built are closed after the test."""
        with MockTransport() as mock:
            yield mock

    __all__ += ["mock_transport"]
