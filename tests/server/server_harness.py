"""Starts humus_test_server.py for Python tests and talks to its control API (standard library only).

Any pytest suite (the server's own self-test, the Python binding's integration tests) imports this module:

    from server_harness import TestServer
    with TestServer() as server:
        server.script("/pay", [{"status": 503}, {"status": 200}])
        ...  # call server.url("https", "/pay") with the client under test
        assert len(server.requests("/pay")) == 2
"""
from __future__ import annotations

import http.client
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from types import TracebackType
from typing import Any

SCRIPT = Path(__file__).resolve().with_name("humus_test_server.py")
SERVER_NAME = "payments"
PLAIN_LISTENERS = ("http",)
READY_TIMEOUT_S = 10.0


class TestServer:
    """One server process; stopping it (or this process dying) closes its stdin, which stops it."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, certs_dir: Path | None = None, python: str = sys.executable) -> None:
        self._own_certs = certs_dir is None
        self.certs = Path(certs_dir or tempfile.mkdtemp(prefix="humus-certs-"))
        self._python = python
        self._process: subprocess.Popen[bytes] | None = None
        self.ready: dict[str, Any] = {}

    def __enter__(self) -> TestServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Spawns the server and waits for its ready line (at most 10 s)."""
        self._process = subprocess.Popen([self._python, str(SCRIPT), "--certs", str(self.certs)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdout is not None
        line = _read_line(self._process.stdout, READY_TIMEOUT_S)
        if not line:
            self.stop()
            raise RuntimeError("humus_test_server did not become ready (is `pip install -r "
                               "tests/server/requirements.txt` done?)")
        self.ready = json.loads(line)

    def stop(self) -> None:
        """Closes stdin and waits; kills after 2 s."""
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.close()
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
        if self._own_certs:
            shutil.rmtree(self.certs, ignore_errors=True)

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def port(self, listener: str) -> int:
        """The listener's port; 0 when this machine cannot offer it (tls11)."""
        return int(self.ready[listener] or 0)

    @property
    def ca_file(self) -> Path:
        return self.certs / "ca.pem"

    @property
    def client_cert(self) -> Path:
        return self.certs / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.certs / "client.key"

    def resolve(self, listener: str) -> str:
        """A curl --resolve entry: TLS listeners are reached as https://payments:PORT."""
        return f"{SERVER_NAME}:{self.port(listener)}:127.0.0.1"

    def url(self, listener: str, path: str = "/") -> str:
        """The URL a client uses for LISTENER (plain http by IP, TLS by the certificate's name)."""
        if listener in PLAIN_LISTENERS:
            return f"http://127.0.0.1:{self.port(listener)}{path}"
        return f"https://{SERVER_NAME}:{self.port(listener)}{path}"

    def script(self, path: str, steps: list[dict[str, Any]], repeat_last: bool = True) -> None:
        """Each request to PATH consumes the next step (see README.md for the fields)."""
        self.control("POST", "/_control/script", {"path": path, "steps": steps, "repeat_last": repeat_last})

    def requests(self, path: str | None = None) -> list[dict[str, Any]]:
        """The requests recorded for PATH (all paths when None), in arrival order."""
        query = "" if path is None else "?" + urllib.parse.urlencode({"path": path})
        result: list[dict[str, Any]] = self.control("GET", "/_control/requests" + query)
        return result

    def reset(self) -> None:
        """Forgets every script and record."""
        self.control("POST", "/_control/reset")

    def stats(self) -> dict[str, Any]:
        """Open connections and live tasks on the server."""
        result: dict[str, Any] = self.control("GET", "/_control/stats")
        return result

    def control(self, method: str, path: str, body: Any = None) -> Any:
        """One control API call over the plain listener; a refusal raises with the server's reason."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port("http"), timeout=10)
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = json.loads(response.read())
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {payload}")
        return payload


def _read_line(stream: Any, timeout_s: float) -> bytes:
    """Reads one line within the timeout, so a server that never starts fails the suite instead of hanging."""
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([stream], [], [], remaining)[0]:
            return b""
        byte = os.read(stream.fileno(), 1)  # unbuffered: select() must see what is still unread
        if not byte:
            return b""
        line += byte
    return line
