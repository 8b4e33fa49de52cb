"""Fixtures: the project's test server (tests/server/, real sockets: plain HTTP/1.1 and HTTP/2 over TLS) for
the whole session, a runtime that resolves its TLS name, and client factories that close what they made; the
conformance vectors' report lines, repeated in the session's summary."""
from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "server"))

import humus_http
from server_harness import TestServer

TLS_LISTENERS = ("https", "https_h1", "mtls", "cn_only", "untrusted")
C = TypeVar("C", humus_http.Client, humus_http.AsyncClient)

# Fast retries everywhere unless a test says otherwise.
FAST = {"backoff_base": 0.005, "backoff_max": 0.01}


@pytest.fixture(scope="session")
def server() -> Iterator[TestServer]:
    with TestServer() as s:
        yield s


@pytest.fixture(scope="session")
def runtime(server: TestServer) -> humus_http.Runtime:
    """Resolves payments:PORT of every TLS listener to 127.0.0.1 (the certificates name "payments")."""
    return humus_http.Runtime(resolve={f"payments:{server.port(name)}": f"127.0.0.1:{server.port(name)}"
                                       for name in TLS_LISTENERS if server.port(name)})


@pytest.fixture
def make_runtime(server: TestServer) -> Callable[..., humus_http.Runtime]:
    """make_runtime(**options): a runtime of the test's own (its metrics, readiness and sinks see only the test's
    clients), resolving the TLS listeners as ``runtime`` does."""
    def make(**options: Any) -> humus_http.Runtime:
        options.setdefault("resolve", {f"payments:{server.port(name)}": f"127.0.0.1:{server.port(name)}"
                                       for name in TLS_LISTENERS if server.port(name)})
        return humus_http.Runtime(**options)
    return make


@pytest.fixture
def path() -> str:
    """A path of this test's own (scripts are per path on the shared server)."""
    return f"/t/{uuid.uuid4().hex}"


Factory = Callable[..., Any]


def _factory(server: TestServer, runtime: humus_http.Runtime, kind: type[C], made: list[C]) -> Callable[..., C]:
    def make(listener: str = "http", **settings: Any) -> C:
        for key, value in FAST.items():
            settings.setdefault(key, value)
        if listener != "http":
            settings.setdefault("tls", humus_http.TLS(ca_file=str(server.ca_file)))
        settings.setdefault("runtime", runtime)
        client = kind(server.url(listener), **settings)
        made.append(client)
        return client
    return make


@pytest.fixture
def make_client(server: TestServer, runtime: humus_http.Runtime) -> Iterator[Callable[..., humus_http.Client]]:
    """make_client(listener="http"|"https"|..., **settings): a Client for that listener, closed after the test."""
    made: list[humus_http.Client] = []
    yield _factory(server, runtime, humus_http.Client, made)
    for client in made:
        client.close()


@pytest.fixture
def make_async_client(server: TestServer,
                      runtime: humus_http.Runtime) -> Iterator[Callable[..., humus_http.AsyncClient]]:
    """The same for AsyncClient."""
    made: list[humus_http.AsyncClient] = []
    yield _factory(server, runtime, humus_http.AsyncClient, made)
    for client in made:
        client.close()


@pytest.fixture(params=["http", "https"], ids=["h1", "h2"])
def listener(request: pytest.FixtureRequest) -> str:
    """Plain HTTP/1.1, then HTTP/2 over TLS."""
    return str(request.param)


# --- The conformance vectors' report (test_vectors.py) ---------------------------------------------------------

_VECTOR_LINES = pytest.StashKey[list[str]]()


@pytest.fixture
def report_vector(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """report_vector(line): prints a vector's "vector <name>: ok|FAIL ..." line and keeps it for the summary."""
    lines = request.config.stash.setdefault(_VECTOR_LINES, [])

    def report(line: str) -> None:
        print(line)
        lines.append(line)
    return report


_PROBE_LINES = pytest.StashKey[list[str]]()


@pytest.fixture
def report_probe(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """report_probe(line): prints the httpx probe's count line (test_httpx_probe.py) and keeps it for the
    summary."""
    lines = request.config.stash.setdefault(_PROBE_LINES, [])

    def report(line: str) -> None:
        print(line)
        lines.append(line)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    for key, title in ((_VECTOR_LINES, "conformance vectors"), (_PROBE_LINES, "httpx probe")):
        lines = config.stash.get(key, [])
        if lines:
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.write_line(line)
