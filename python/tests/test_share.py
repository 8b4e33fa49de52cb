"""Shared state per host (docs/shared.md §22, issue 36): clients of the same origin and ``share`` name in separate
processes see one breaker. Real processes (subprocesses: nothing is inherited by fork) and a real loopback
dependency in this process that always answers 500 and counts the requests that reach it; one of the tests runs a
real gunicorn with 4 sync workers. Each test has a segment name of its own, removed before and after."""
from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

APP_DIR = Path(__file__).resolve().parent / "share_app"
# Only ends a test whose process would otherwise hang; no assertion is on how long anything took.
HANG_GUARD_S = 60.0
# trip.consecutive_failures' default: the failures in total, across the host, that open the breaker.
THRESHOLD = 5


class Dependency:
    """A threaded HTTP/1.1 server on 127.0.0.1 answering every request 500, counting them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        dependency = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                with dependency._lock:
                    dependency._requests += 1
                self.send_response(500)
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"down")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def dependency() -> Iterator[Dependency]:
    dep = Dependency()
    yield dep
    dep.close()


@pytest.fixture
def share_name() -> Iterator[str]:
    """A segment name of this test's own; /dev/shm/humus_http.<name> is removed before and after."""
    name = f"pytest_{os.getpid()}_{uuid.uuid4().hex[:12]}"
    segment = Path(f"/dev/shm/humus_http.{name}")
    segment.unlink(missing_ok=True)
    yield name
    segment.unlink(missing_ok=True)


def child_env() -> dict[str, str]:
    """The environment of a process of the test: humus_http importable as it is here."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


class ClientProcess:
    """share_app/client_process.py in a process of its own, one command and one answer line at a time."""

    def __init__(self, origin: str, name: str) -> None:
        self._proc = subprocess.Popen([sys.executable, str(APP_DIR / "client_process.py"), origin, name],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
        line = self._read()
        assert line == "ready", line

    def _read(self) -> str:
        stdout = self._proc.stdout
        assert stdout is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(HANG_GUARD_S)
        assert result, "the client process answered nothing"
        return result[0].strip()

    def ask(self, command: str) -> str:
        assert self._proc.stdin is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._read()

    def call(self) -> str:
        return self.ask("call")

    def readiness(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(self.ask("readiness"))
        return report

    def quit(self) -> int:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.write("quit\n")
            self._proc.stdin.close()
        try:
            return self._proc.wait(HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            return -1

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def only_client(report: dict[str, Any]) -> dict[str, Any]:
    assert len(report["clients"]) == 1, report
    client: dict[str, Any] = report["clients"][0]
    return client


def test_two_processes_of_one_share_name_see_one_breaker(dependency: Dependency, share_name: str) -> None:
    a = ClientProcess(dependency.origin, share_name)
    try:
        b = ClientProcess(dependency.origin, share_name)
        try:
            # Both attached to the segment: readiness in either counts two live processes.
            for process in (a, b):
                entry = only_client(process.readiness())
                assert entry["processes"] == 2, entry
                assert entry["state"] == "closed", entry
            # Five failures in total, 3 in a and 2 in b (retries off): neither process alone saw five.
            for i in range(THRESHOLD):
                assert (a if i % 2 == 0 else b).call() == "status 500"
            assert dependency.requests == THRESHOLD
            # b, whose own calls failed twice, sees it open: its calls are rejected and reach nothing.
            assert b.call() == "rejected"
            assert a.call() == "rejected"
            assert b.call() == "rejected"
            assert dependency.requests == THRESHOLD
            for process in (a, b):
                report = process.readiness()
                entry = only_client(report)
                assert entry["state"] == "open", entry
                assert entry["processes"] == 2, entry
                assert report["status"] == "degraded", report
            print(f"\n[ info ] 2 processes, share {share_name}: the dependency saw {dependency.requests} calls, "
                  "then 3 rejected, both processes see the breaker open")
            # a leaves (its client closed): b is the one process attached, and the breaker still open.
            assert a.quit() == 0
            entry = only_client(b.readiness())
            assert entry["processes"] == 1, entry
            assert entry["state"] == "open", entry
            assert b.call() == "rejected"
            assert dependency.requests == THRESHOLD
            assert b.quit() == 0
        finally:
            b.kill()
    finally:
        a.kill()


# --- The test: a real gunicorn ------------------------------------------------------------------------

WORKERS = 4
REQUESTS = 40


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=HANG_GUARD_S) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


# F163: gunicorn, 4 sync workers, each with its own module-level client sharing one segment, calling a failing
# dependency: the breaker opens after 5 failures on the host (5 to 8 reach it, not ~20), every later call rejected.
def test_gunicorn_workers_open_one_breaker_for_the_host(dependency: Dependency, share_name: str) -> None:
    pytest.importorskip("gunicorn", reason="needs gunicorn (python/requirements-test.txt): pip install gunicorn")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    env = child_env()
    env.update(HUMUS_DEP_ORIGIN=dependency.origin, HUMUS_SHARE_NAME=share_name)
    # The listening socket is the test's (no free-port race), handed to gunicorn as fd://N; no --preload: each
    # worker imports the app, so each makes its own client after the fork.
    gunicorn = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-w", str(WORKERS), "-k", "sync", "-b", f"fd://{listener.fileno()}",
         "--chdir", str(APP_DIR), "--log-level", "warning", "wsgi_app:app"],
        env=env, pass_fds=(listener.fileno(),))
    listener.close()
    try:
        # Every worker has booted once readiness counts 4 processes attached to the segment.
        until = time.monotonic() + HANG_GUARD_S
        processes = 0
        while processes != WORKERS:
            assert gunicorn.poll() is None, "gunicorn exited"
            assert time.monotonic() < until, f"only {processes} gunicorn workers attached to the segment"
            try:
                _, text = http_get(base + "/readiness")
                processes = only_client(json.loads(text))["processes"]
            except OSError:
                pass
            if processes != WORKERS:
                time.sleep(0.05)
        assert dependency.requests == 0
        # 40 requests, 4 at a time, so that every sync worker is busy with one.
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            answers = list(pool.map(lambda _: http_get(base + "/call"), range(REQUESTS)))
        failed = [body for code, body in answers if code == 200]
        rejected = [body for code, body in answers if code == 503]
        other = [(code, body) for code, body in answers if code not in (200, 503)]
        workers = {body.split()[0] for _, body in answers}
        reached = dependency.requests
        print(f"\n[ info ] gunicorn, {WORKERS} sync workers, {REQUESTS} requests, share {share_name}: the dependency "
              f"saw {reached} calls ({len(failed)} answered 500), {len(rejected)} rejected by the host's open "
              f"breaker, {len(workers)} workers answered")
        assert not other, other
        assert all(body.endswith(" status 500") for body in failed), failed
        assert all(body.endswith(" rejected") for body in rejected), rejected
        # Not 5 per worker (~20): the fifth failure on the host opened it. Each sync worker has at most one call
        # in flight, so the other 3 may each have had one admitted when it opened.
        assert THRESHOLD <= reached <= THRESHOLD + WORKERS - 1
        assert len(failed) == reached
        assert len(rejected) == REQUESTS - reached
        # Every worker sees it open, and still 4 processes attached.
        for _ in range(WORKERS):
            _, text = http_get(base + "/readiness")
            entry = only_client(json.loads(text))
            assert entry["state"] == "open", entry
            assert entry["processes"] == WORKERS, entry
        assert dependency.requests == reached
    finally:
        gunicorn.terminate()
        try:
            gunicorn.wait(HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            gunicorn.kill()
            gunicorn.wait()
