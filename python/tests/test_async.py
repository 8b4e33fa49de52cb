"""AsyncClient: calls on the runtime's event loop, completed on the asyncio loop that made them; cancellation."""
from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from collections.abc import Callable

import humus_http
import pytest
from humus_http import Attempt, Classification
from server_harness import TestServer


# Bounds that only end a test that would otherwise hang; no loaded machine comes near them, and no assertion
# is on how long anything took.
HANG_GUARD_S = 30.0


async def wait_for_requests(server: TestServer, path: str, count: int = 1) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while len(server.requests(path)) < count:
        assert time.monotonic() < deadline, f"the server never saw {count} request(s) to {path}"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_async_calls(server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient],
                           listener: str, path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200, "body": '{"ok": 1}'}])
    async with make_async_client(listener) as client:
        r = await client.get(path)
        assert (r.status_code, r.attempts, r.json()) == (200, 2, {"ok": 1})
        assert r.http_version == ("HTTP/2" if listener == "https" else "HTTP/1.1")
        r = await client.post(path + "/p", json={"a": 1}, idempotency_key="k")
        assert r.json()["method"] == "POST"
        for method in ("head", "options", "delete", "put", "patch"):
            assert (await getattr(client, method)(path + "/m")).status_code == 200
    assert client.is_closed


@pytest.mark.asyncio
async def test_many_calls_in_flight_share_one_h2_connection(server: TestServer,
                                                            make_async_client: Callable[..., humus_http.AsyncClient],
                                                            path: str) -> None:
    client = make_async_client("https", timeout=HANG_GUARD_S, attempt_timeout=HANG_GUARD_S, max_attempts=1,
                               bulkhead=humus_http.Bulkhead(max_concurrent=64))
    assert (await client.get(path + "/warm")).status_code == 200  # the runtime's event-loop thread exists now
    threads_before = len(os.listdir("/proc/self/task"))
    # Concurrent, not one after another: the server holds all 64 unanswered at once (it never answers them).
    server.script(path, [{"hang": True}])
    held = [asyncio.ensure_future(client.get(path, params={"i": i})) for i in range(64)]
    await wait_for_requests(server, path, 64)
    threads_during = len(os.listdir("/proc/self/task"))
    assert not any(call.done() for call in held)
    assert threads_during <= threads_before  # no thread per call
    records = server.requests(path)
    assert len(records) == 64
    assert len({rec["connection"] for rec in records}) <= 2  # multiplexed
    for call in held:
        call.cancel()
    assert all(isinstance(outcome, asyncio.CancelledError)
               for outcome in await asyncio.gather(*held, return_exceptions=True))
    # And 64 calls in flight together are each answered.
    responses = await asyncio.gather(*(client.get(path + "/answered", params={"i": i}) for i in range(64)))
    assert [r.status_code for r in responses] == [200] * 64
    assert len({r.json()["query"] for r in responses}) == 64


@pytest.mark.asyncio
async def test_async_errors(server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient],
                            path: str) -> None:
    server.script(path, [{"hang": True}])
    client = make_async_client("https", timeout=0.3, attempt_timeout=0.3)
    with pytest.raises(humus_http.UpstreamTimeoutError):
        await client.get(path)
    with pytest.raises(humus_http.CrossOriginError):
        await client.get(server.url("http", path))
    with pytest.raises(humus_http.InvalidRequestError):
        await client.get(path, headers={"X": "a\nb"})


@pytest.mark.asyncio
async def test_async_classifier_exception(server: TestServer,
                                          make_async_client: Callable[..., humus_http.AsyncClient],
                                          path: str) -> None:
    class Nope(Exception):
        pass

    threads: set[int] = set()

    def classify(attempt: Attempt) -> Classification:
        threads.add(threading.get_ident())
        if attempt.status == 418:
            raise Nope("teapot")
        return humus_http.default_classify(attempt)

    client = make_async_client(classify=classify)
    assert (await client.get(path)).status_code == 200
    server.script(path + "/t", [{"status": 418}])
    with pytest.raises(Nope, match="teapot"):
        await client.get(path + "/t")
    assert threading.get_ident() not in threads  # classified on the runtime's event-loop thread


@pytest.mark.asyncio
async def test_a_bad_cancel_or_a_nul_in_the_url_is_refused_before_sending(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    client = make_async_client("http")
    with pytest.raises(TypeError, match="cancel= takes a humus_http.CancelToken"):
        await client.get(path, cancel=object())  # type: ignore[arg-type]
    with pytest.raises(humus_http.InvalidRequestError, match="url contains a NUL"):  # not sent as what precedes it
        await client.get(path + "\x00evil")
    assert server.requests(path) == []


@pytest.mark.asyncio
async def test_cancelling_the_task_cancels_the_call_and_frees_its_slot(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], listener: str,
        path: str) -> None:
    client = make_async_client(listener, bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0.0))
    server.script(path, [{"hang": True}])
    task = asyncio.ensure_future(client.get(path))
    await wait_for_requests(server, path)
    with pytest.raises(humus_http.BulkheadFullError):  # the hanging call holds the only slot
        await client.get(path + "/next")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The native call ends as soon as the event loop gets to it; then its slot is free (the hanging call would
    # never free it otherwise).
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        try:
            r = await client.get(path + "/next")
            break
        except humus_http.BulkheadFullError:
            assert time.monotonic() < deadline, "the cancelled call kept its bulkhead slot"
            await asyncio.sleep(0.005)
    assert r.status_code == 200


@pytest.mark.asyncio
async def test_cancel_by_timeout(server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient],
                                 path: str) -> None:
    # The next call may wait for the slot as long as it takes the cancelled call to let it go: only a slot
    # kept by the hanging call for good fails it.
    client = make_async_client(bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=HANG_GUARD_S))
    server.script(path, [{"hang": True}])
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(client.get(path), 0.2)
    assert (await client.get(path + "/after")).status_code == 200


@pytest.mark.asyncio
async def test_aclose_cancels_calls_in_flight(server: TestServer,
                                              make_async_client: Callable[..., humus_http.AsyncClient],
                                              path: str) -> None:
    client = make_async_client()
    server.script(path, [{"hang": True}])
    task = asyncio.ensure_future(client.get(path))
    await wait_for_requests(server, path)
    await client.aclose()
    with pytest.raises(humus_http.CancelledCallError):
        await task
    with pytest.raises(RuntimeError, match="closed"):
        await client.get(path)


def test_one_client_serves_loops_on_several_threads(server: TestServer,
                                                    make_async_client: Callable[..., humus_http.AsyncClient],
                                                    path: str) -> None:
    client = make_async_client("https")
    results: dict[int, list[int]] = {}
    # Every loop is running before any calls: without this a thread could finish before the next starts (and a
    # finished thread's ident may be reused, so results are keyed by index).
    all_running = threading.Barrier(4)

    def run(index: int) -> None:
        async def main() -> None:
            loop_thread = threading.get_ident()
            all_running.wait(timeout=10)
            statuses = []
            for r in await asyncio.gather(*(client.get(path) for _ in range(10))):
                assert threading.get_ident() == loop_thread
                statuses.append(r.status_code)
            results[index] = statuses
        asyncio.run(main())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(s == [200] * 10 for s in results.values())


def eventfds() -> int:
    """How many eventfds this process holds (a bridge is one)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[eventfd]"
        except OSError:  # the directory's own fd, closed by now
            pass
    return count


def test_clients_on_one_loop_share_its_bridge_which_goes_with_the_loop(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    first, second = make_async_client("http"), make_async_client("http")

    async def warm_up() -> None:  # the runtime's own event loop (and its eventfd) starts with a first call
        await first.get(path)

    asyncio.run(warm_up())
    first._bridge = None  # the warm-up loop's bridge goes with that loop
    gc.collect()
    before = eventfds()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert first._bridge_for(loop) is second._bridge_for(loop)  # one eventfd per loop, not per client
        gc.collect()  # the loops that ran before, closed, and their bridges with them
        assert eventfds() == before + 1, "a closed loop's bridge outlived it"
        statuses = [r.status_code for r in await asyncio.gather(*(c.get(path) for c in (first, second) * 8))]
        assert statuses == [200] * 16

    for _ in range(3):
        asyncio.run(main())
    first._bridge = second._bridge = None  # the clients' cache held the last loop
    gc.collect()
    assert eventfds() == before
