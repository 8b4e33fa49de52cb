"""Threads: the GIL is released for every network wait, and one client serves many threads at once."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import humus_http
from server_harness import TestServer

DELAY_S = 0.4


def count_for(seconds: float, stop: threading.Event | None = None) -> int:
    """A pure-Python loop: how far it gets is how much of the GIL it had."""
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n += 1
    return n


def test_a_python_thread_keeps_running_while_8_threads_block_in_calls(
        server: TestServer, make_client: Callable[..., humus_http.Client], listener: str, path: str) -> None:
    server.script(path, [{"delay_ms": int(DELAY_S * 1000)}])
    client = make_client(listener)
    baseline = count_for(DELAY_S)  # alone

    durations: list[float] = []

    def call() -> None:
        started = time.monotonic()
        assert client.get(path).status_code == 200
        durations.append(time.monotonic() - started)

    callers = [threading.Thread(target=call) for _ in range(8)]
    started = time.monotonic()
    for t in callers:
        t.start()
    while len(server.requests(path)) < 8 and time.monotonic() - started < 5:
        time.sleep(0.005)
    counted = count_for(DELAY_S * 0.5)  # while all 8 calls wait on the server
    for t in callers:
        t.join()
    wall = time.monotonic() - started

    assert len(durations) == 8 and min(durations) >= DELAY_S * 0.9
    assert wall < DELAY_S * 3  # the 8 waits overlapped
    # Half the time alone would count baseline/2: holding the GIL in the calls would have stopped the loop.
    assert counted > baseline * 0.5 * 0.4, (counted, baseline)


def test_sixteen_threads_share_one_client(server: TestServer, make_client: Callable[..., humus_http.Client],
                                          listener: str, path: str) -> None:
    client = make_client(listener, bulkhead=humus_http.Bulkhead(max_concurrent=16))
    errors: list[BaseException] = []
    statuses: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        try:
            for j in range(25):
                r = client.get(path, params={"t": i, "j": j})
                with lock:
                    statuses.append(r.status_code)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert statuses == [200] * 400
    records = server.requests(path)
    assert len(records) == 400
    assert len({r["query"] for r in records}) == 400


def test_close_while_another_thread_calls(server: TestServer, make_client: Callable[..., humus_http.Client],
                                          path: str) -> None:
    server.script(path, [{"delay_ms": 300}])
    client = make_client()
    result: list[int] = []
    caller = threading.Thread(target=lambda: result.append(client.get(path).status_code))
    caller.start()
    while not server.requests(path):
        time.sleep(0.005)
    client.close()  # the call in flight finishes first; the client is freed after it
    caller.join()
    assert result == [200]
