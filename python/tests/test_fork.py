"""Fork safety (docs/fork.md §23): a client made and used before ``os.fork()`` — as gunicorn's ``preload_app``
makes it in the master — works in the child, blocking and asynchronous, on connections of the child's own; the
parent's pooled connection is neither reused nor closed by the child. The server's records say which connection
carried each request."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable

import humus_http
from server_harness import TestServer

# Only ends a test whose child would otherwise hang; no assertion is on how long anything took.
HANG_GUARD_S = 60.0


def connections(server: TestServer, path: str) -> list[int]:
    return [r["connection"] for r in server.requests(path)]


def fork() -> int:
    with warnings.catch_warnings():
        # CPython 3.12+ warns when a process with threads forks (the runtime's loop is one): the library
        # handles it (docs/fork.md §23.3).
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def wait_child(pid: int) -> int:
    """The child's exit status; a child still running after the guard is killed (-1)."""
    until = time.monotonic() + HANG_GUARD_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > until:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -1
        time.sleep(0.005)


def in_child(body: Callable[[], None]) -> None:
    """Runs ``body`` in the forked child and leaves with its verdict, never returning into pytest."""
    code = 1
    try:
        body()
        code = 0
    except BaseException:  # noqa: BLE001 - reported on stderr, the parent sees the exit status
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


# F165
def test_os_fork_child_calls_on_its_own_connections(
        server: TestServer, make_client: Callable[..., humus_http.Client],
        make_async_client: Callable[..., humus_http.AsyncClient], listener: str, path: str) -> None:
    client = make_client(listener)
    aclient = make_async_client(listener)
    assert client.get(server.url(listener, path + "/before")).status_code == 200
    assert asyncio.run(aclient.get(server.url(listener, path + "/before-async"))).status_code == 200
    parents = connections(server, path + "/before") + connections(server, path + "/before-async")
    assert len(parents) == 2

    pid = fork()
    if pid == 0:
        def child() -> None:
            for _ in range(2):
                assert client.get(server.url(listener, path + "/child")).status_code == 200
            # A new asyncio loop in the child; the library makes its own event loop anew too.
            assert asyncio.run(aclient.get(server.url(listener, path + "/child-async"))).status_code == 200
            client.close()
            aclient.close()
        in_child(child)
    assert wait_child(pid) == 0

    # The parent's pooled connections still carry its calls: the child did not close them.
    assert client.get(server.url(listener, path + "/after")).status_code == 200
    assert asyncio.run(aclient.get(server.url(listener, path + "/after-async"))).status_code == 200
    assert connections(server, path + "/after") == connections(server, path + "/before")
    assert connections(server, path + "/after-async") == connections(server, path + "/before-async")
    child = connections(server, path + "/child")
    child_async = connections(server, path + "/child-async")
    assert len(child) == 2 and child[0] == child[1]  # the child's own pooled connection, reused
    assert len(child_async) == 1
    assert not set(child + child_async) & set(parents)


# multiprocessing's workers reach the client as gunicorn's do: a module-level object made before the fork.
_PRELOADED: humus_http.Client | None = None


def _worker(url: str) -> None:
    assert _PRELOADED is not None
    for _ in range(2):
        assert _PRELOADED.get(url).status_code == 200


# F168: multiprocessing's "fork" start method, the way gunicorn's preload_app hands a client to its workers.
def test_multiprocessing_fork_workers_share_a_preloaded_client(
        server: TestServer, make_client: Callable[..., humus_http.Client], listener: str, path: str) -> None:
    global _PRELOADED
    _PRELOADED = make_client(listener)
    try:
        assert _PRELOADED.get(server.url(listener, path + "/master")).status_code == 200
        ctx = multiprocessing.get_context("fork")
        workers = [ctx.Process(target=_worker, args=(server.url(listener, path + f"/worker{i}"),))
                   for i in range(3)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            for w in workers:
                w.start()
        for w in workers:
            w.join(HANG_GUARD_S)
            if w.exitcode is None:
                w.kill()
            assert w.exitcode == 0
        assert _PRELOADED.get(server.url(listener, path + "/master-after")).status_code == 200
    finally:
        _PRELOADED = None
    master = connections(server, path + "/master")
    assert connections(server, path + "/master-after") == master
    seen: set[int] = set()
    for i in range(3):
        mine = connections(server, path + f"/worker{i}")
        assert len(mine) == 2 and mine[0] == mine[1]  # each worker's own pooled connection
        assert mine[0] not in master and mine[0] not in seen
        seen.add(mine[0])
