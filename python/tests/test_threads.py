"""Threads: the GIL is released for every network wait, and one client serves many threads at once."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import humus_http
from server_harness import TestServer

# Bounds that only end a test that would otherwise hang (the calls hold the GIL, a call is never sent); no
# loaded machine comes near them, and no assertion is on how long anything took.
HANG_GUARD_S = 30.0
COUNT_TO = 1_000_000  # a pure-Python loop: it reaches its end only with the GIL, however slowly


def test_a_python_thread_keeps_running_while_8_threads_block_in_calls(
        server: TestServer, make_client: Callable[..., humus_http.Client], listener: str, path: str) -> None:
    # The server never answers: the 8 calls block until they are cancelled (or, should the GIL be held while
    # they wait, until their deadline ends them, which the assertions below tell apart).
    server.script(path, [{"hang": True}])
    client = make_client(listener, timeout=HANG_GUARD_S, attempt_timeout=HANG_GUARD_S, max_attempts=1)
    token = humus_http.CancelToken()
    ended: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            client.get(path, cancel=token)
            outcome = "returned"
        except humus_http.CancelledCallError:
            outcome = "cancelled"
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            outcome = repr(e)
        with lock:
            ended.append(outcome)

    callers = [threading.Thread(target=call, daemon=True) for _ in range(8)]
    for t in callers:
        t.start()
    # The 8 waits overlap: the server holds all 8 requests unanswered at once.
    deadline = time.monotonic() + HANG_GUARD_S
    while len(server.requests(path)) < 8:
        assert time.monotonic() < deadline, f"the server saw {len(server.requests(path))} of 8 calls"
        time.sleep(0.005)
    assert ended == []

    # Another Python thread runs to the end of a pure-Python loop while all 8 calls still block.
    seen_when_counted: list[list[str]] = []

    def count() -> None:
        n = 0
        while n < COUNT_TO:
            n += 1
        with lock:
            seen_when_counted.append(list(ended))

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    counter.join(HANG_GUARD_S * 2)
    assert seen_when_counted == [[]], "the loop did not finish before the blocked calls ended"

    token.cancel()
    for t in callers:
        t.join(HANG_GUARD_S)
    assert ended == ["cancelled"] * 8
    assert len(server.requests(path)) == 8
    assert client.get(path + "/after").status_code == 200  # the client is fine after the cancellations


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
