"""Event hooks per attempt (docs/retries.md §6.7), against the real test server: a request hook sees every
attempt and what it sets goes on the wire with that attempt, a response hook sees every attempt's response,
an exception ends the call, and an AsyncClient runs plain hooks per attempt but ``async def`` ones once."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import humus_http
import pytest
from server_harness import TestServer

FLAKY = [{"status": 503}, {"status": 503}, {"status": 200, "body": "ok"}]


def _values(server: TestServer, path: str, header: str) -> list[list[str]]:
    return [[v for k, v in r["headers"] if k == header] for r in server.requests(path)]


def test_request_and_response_hooks_run_per_attempt(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str) -> None:
    server.script(path, FLAKY)
    requests: list[tuple[str, str, int, str | None]] = []
    responses: list[tuple[int, int, int, str | None]] = []
    bodies: list[bytes | str] = []

    def on_request(request: humus_http.Request) -> None:
        requests.append((request.method, str(request.url), request.attempt, request.headers.get("x-call")))

    def on_response(response: humus_http.Response) -> None:
        responses.append((response.status_code, response.attempt, response.request.attempt,
                          response.headers.get("content-length")))
        try:
            bodies.append(response.content)
        except RuntimeError as e:
            bodies.append(str(e))

    client = make_client(event_hooks={"request": [on_request], "response": [on_response]})
    r = client.get(path, params={"q": "1"}, headers={"X-Call": "c"})
    assert (r.status_code, r.attempts, r.attempt, r.request.attempt, r.text) == (200, 3, 3, 3, "ok")
    url = server.url("http", path) + "?q=1"
    assert requests == [("GET", url, 1, "c"), ("GET", url, 2, "c"), ("GET", url, 3, "c")]
    assert [(s, a, ra) for s, a, ra, _ in responses] == [(503, 1, 1), (503, 2, 2), (200, 3, 3)]
    assert all(length is not None for *_, length in responses)  # every attempt's headers
    assert bodies[2] == b"ok"
    assert all(isinstance(b, str) and "attempt" in b and "not kept" in b for b in bodies[:2]), bodies
    assert client.event_hooks == {"request": [on_request], "response": [on_response]}


def test_header_changes_go_on_the_wire_per_attempt(server: TestServer,
                                                   make_client: Callable[..., humus_http.Client],
                                                   path: str) -> None:
    server.script(path, FLAKY)

    def sign(request: humus_http.Request) -> None:
        request.headers["X-Signature"] = f"sig-{request.attempt}"
        request.headers["X-Call"] = request.headers["X-Call"] + "!"  # changed: sent changed

    client = make_client(event_hooks={"request": [sign]})
    assert client.get(path, headers={"X-Call": "c"}).status_code == 200
    assert _values(server, path, "x-signature") == [["sig-1"], ["sig-2"], ["sig-3"]]
    # Each attempt starts again from the call's own headers: the change is not carried over.
    assert _values(server, path, "x-call") == [["c!"], ["c!"], ["c!"]]


def test_a_hook_may_not_set_a_header_the_client_owns_nor_remove_one(
        server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    def framing(request: humus_http.Request) -> None:
        request.headers["Content-Length"] = "5"

    with pytest.raises(ValueError, match="Content-Length"):
        make_client(event_hooks={"request": [framing]}).get(path)

    def remove(request: humus_http.Request) -> None:
        del request.headers["X-Call"]

    with pytest.raises(ValueError, match="removed 'X-Call'"):
        make_client(event_hooks={"request": [remove]}).get(path, headers={"X-Call": "c"})
    assert server.requests(path) == []


def test_an_exception_in_a_hook_ends_the_call(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    server.script(path, FLAKY)

    class Stop(Exception):
        pass

    def second_attempt(request: humus_http.Request) -> None:
        if request.attempt == 2:
            raise Stop("no second attempt")

    with pytest.raises(Stop, match="no second attempt"):
        make_client(event_hooks={"request": [second_attempt]}).get(path)
    assert len(server.requests(path)) == 1  # the second attempt was not sent

    server.script(path, FLAKY)
    seen: list[int] = []

    def first_response(response: humus_http.Response) -> None:
        seen.append(response.status_code)
        raise Stop(f"got {response.status_code}")

    with pytest.raises(Stop, match="got 503"):
        make_client(event_hooks={"response": [first_response]}).get(path)
    assert seen == [503]
    # A retried attempt's response hooks run just before the retry is sent: the exception ended the call first.
    assert len(server.requests(path)) == 2

    server.script(path, [{"status": 200}])
    with pytest.raises(Stop, match="got 200"):
        make_client(event_hooks={"response": [first_response]}).get(path)


def test_redirect_hops_are_attempts_of_their_own(server: TestServer,
                                                 make_client: Callable[..., humus_http.Client], path: str) -> None:
    server.script(path, [{"status": 302, "headers": [["Location", path + "/next"]]}])
    seen: list[tuple[str, int]] = []
    statuses: list[int] = []
    client = make_client(event_hooks={"request": [lambda r: seen.append((r.url.path, r.attempt))],
                                      "response": [lambda r: statuses.append(r.status_code)]})
    r = client.get(path)
    assert (r.status_code, r.url.path, r.request.url.path) == (200, path + "/next", path + "/next")
    assert seen == [(path, 1), (path + "/next", 1)]
    assert statuses == [302, 200]


def test_a_hook_cannot_change_the_url_of_an_attempt(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str) -> None:
    def move(request: humus_http.Request) -> None:
        request.url = humus_http.URL(server.url("http", path + "/elsewhere"))

    with pytest.raises(ValueError, match="changed the url"):
        make_client(event_hooks={"request": [move]}).get(path)
    assert server.requests(path) == [] and server.requests(path + "/elsewhere") == []


def test_async_client_plain_hooks_per_attempt_async_hooks_once(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    server.script(path, FLAKY)
    plain: list[tuple[str, int]] = []
    awaited: list[tuple[str, int]] = []
    threads: set[int] = set()

    def on_request(request: humus_http.Request) -> None:
        threads.add(threading.get_ident())
        request.headers["X-Attempt"] = str(request.attempt)
        plain.append(("request", request.attempt))

    def on_response(response: humus_http.Response) -> None:
        plain.append(("response", response.status_code))

    async def on_request_once(request: humus_http.Request) -> None:
        await asyncio.sleep(0)
        awaited.append(("request", request.attempt))

    async def on_response_once(response: humus_http.Response) -> None:
        await asyncio.sleep(0)
        awaited.append(("response", response.status_code))

    async def main() -> humus_http.Response:
        client = make_async_client(event_hooks={"request": [on_request, on_request_once],
                                                "response": [on_response, on_response_once]})
        return await client.get(path)

    r = asyncio.run(main())
    assert (r.status_code, r.attempts, r.attempt) == (200, 3, 3)
    assert plain == [("request", 1), ("response", 503), ("request", 2), ("response", 503), ("request", 3),
                     ("response", 200)]
    assert awaited == [("request", 1), ("response", 200)]
    assert threading.get_ident() not in threads  # the runtime's loop thread ran them
    assert _values(server, path, "x-attempt") == [["1"], ["2"], ["3"]]


def test_async_client_hook_exception_ends_the_call(server: TestServer,
                                                   make_async_client: Callable[..., humus_http.AsyncClient],
                                                   path: str) -> None:
    server.script(path, FLAKY)

    def refuse(request: humus_http.Request) -> None:
        if request.attempt == 2:
            raise PermissionError("attempt 2 refused")

    def returns_awaitable(request: humus_http.Request) -> Any:
        return asyncio.sleep(0)

    async def main() -> None:
        with pytest.raises(PermissionError, match="attempt 2 refused"):
            await make_async_client(event_hooks={"request": [refuse]}).get(path)
        with pytest.raises(TypeError, match="async def"):
            await make_async_client(event_hooks={"request": [returns_awaitable]}).get(path)

    asyncio.run(main())
    assert len(server.requests(path)) == 1


def test_stream_runs_the_hooks_per_attempt_before_the_body_is_read(
        server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200, "body": "streamed"}])
    seen: list[tuple[int, int]] = []

    def on_response(response: humus_http.Response) -> None:
        seen.append((response.status_code, response.attempt))

    with make_client(event_hooks={"response": [on_response]}).stream("GET", path) as r:
        assert seen == [(503, 1), (200, 2)]  # the last one before its body is read
        assert r.read() == b"streamed"


def test_a_response_the_call_falls_back_on_is_hooked_once(server: TestServer,
                                                         make_client: Callable[..., humus_http.Client],
                                                         path: str) -> None:
    # The second attempt outlives the call's deadline: the call returns the first attempt's 503. The deadline
    # leaves a loaded machine ample time for the first attempt and its backoff; the second answer comes later.
    server.script(path, [{"status": 503}, {"status": 200, "delay_ms": 30_000}])
    requests: list[int] = []
    responses: list[tuple[int, int]] = []
    client = make_client(timeout=3.0, attempt_timeout=3.0,
                         event_hooks={"request": [lambda r: requests.append(r.attempt)],
                                      "response": [lambda r: responses.append((r.status_code, r.attempt))]})
    r = client.get(path)
    assert (r.status_code, r.attempts, r.attempt, r.request.attempt) == (503, 2, 1, 1)
    assert requests == [1, 2]
    assert responses == [(503, 1)]


def test_concurrent_calls_each_see_their_own_attempts(server: TestServer,
                                                      make_client: Callable[..., humus_http.Client],
                                                      path: str) -> None:
    # One 503 each: four calls stay under the breaker's five consecutive failures and within the budget.
    paths = [f"{path}/{i}" for i in range(4)]
    for p in paths:
        server.script(p, [{"status": 503}, {"status": 200}])
    seen: dict[str, list[int]] = {p: [] for p in paths}
    lock = threading.Lock()

    def on_request(request: humus_http.Request) -> None:
        with lock:
            seen[request.url.path].append(request.attempt)
        request.headers["X-Path"] = request.url.path

    client = make_client(event_hooks={"request": [on_request]})
    statuses: list[int] = []
    threads = [threading.Thread(target=lambda p=p: statuses.append(client.get(p).status_code)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 4
    assert seen == {p: [1, 2] for p in paths}
    for p in paths:
        assert _values(server, p, "x-path") == [[p], [p]]
