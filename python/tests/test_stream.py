"""Client.stream(): bodies read from their connection as the caller iterates (docs/bodies.md §7), against the local
test server over HTTP/1.1 and HTTP/2: bounded memory for a large body, the breaker counting the result at the
end or the close, a body breaking off, decoding."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import humus_http
from server_harness import TestServer


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def test_large_body_streams_in_bounded_memory(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              listener: str, path: str) -> None:
    size = 64 * 1024 * 1024
    server.script(path, [{"body_size": size}])
    client = make_client(listener, timeout=60, attempt_timeout=30)
    before = _rss()
    peak = before
    total = 0
    with client.stream("GET", path) as resp:
        assert resp.status_code == 200
        assert client.breaker_counts.successes == 0  # counted when the body ends
        for i, chunk in enumerate(resp.iter_bytes(chunk_size=32 * 1024)):
            total += len(chunk)
            assert chunk.count(b"x") == len(chunk)
            if i % 64 == 0:
                peak = max(peak, _rss())
        assert client.breaker_counts.successes == 1
    assert total == size
    assert peak - before < 16 * 1024 * 1024, f"RSS grew {(peak - before) / 2**20:.1f} MiB"


def test_gil_is_released_during_reads(server: TestServer, make_client: Callable[..., humus_http.Client],
                                      path: str) -> None:
    server.script(path, [{"body_size": 64 * 1024, "chunk_delay_ms": 50}])
    client = make_client()
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    try:
        with client.stream("GET", path) as resp:
            assert len(resp.read()) == 64 * 1024
    finally:
        stop.set()
        t.join()
    assert ticks > 20  # the other thread ran while the body trickled in


def test_early_close_counts_the_classified_result(server: TestServer,
                                                  make_client: Callable[..., humus_http.Client], path: str) -> None:
    server.script(path, [{"status": 500, "body_size": 4 * 1024 * 1024}])
    client = make_client(max_attempts=1)
    with client.stream("GET", path) as resp:
        assert resp.status_code == 500
        next(resp.iter_bytes())
        assert client.breaker_counts.failures == 0
    assert client.breaker_counts.failures == 1  # closed before its end: counted as classified
    assert resp.is_closed


def test_mid_body_reset_raises_and_counts_a_failure(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str) -> None:
    server.script(path, [{"body_size": 1024 * 1024, "reset": "mid_body"}])
    client = make_client(max_attempts=1)
    with pytest.raises(humus_http.ProtocolError, match="CONNECTION_LOST"):
        with client.stream("GET", path) as resp:
            for _ in resp.iter_bytes():
                pass
    counts = client.breaker_counts
    assert (counts.successes, counts.failures) == (0, 1)


def test_text_and_lines(server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    body = "".join(f"line {i} é\n" for i in range(5000)) + "last"
    server.script(path, [{"body": body, "headers": {"Content-Type": "text/plain; charset=utf-8"}}])
    client = make_client()
    with client.stream("GET", path) as resp:
        assert list(resp.iter_lines()) == body.split("\n")
    with client.stream("GET", path) as resp:
        assert "".join(resp.iter_text()) == body
    with client.stream("GET", path) as resp:
        with pytest.raises(RuntimeError):
            _ = resp.content
        assert resp.read() == body.encode()
        assert resp.text == body


def test_bodies_are_decoded(server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    server.script(path, [{"gzip_bomb": 1_000_000}])
    client = make_client()
    with client.stream("GET", path) as resp:
        assert "content-encoding" not in resp.headers
        assert sum(len(c) for c in resp.iter_bytes()) == 1_000_000
    resp2 = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert resp2.headers["content-encoding"] == "gzip"
    assert len(resp2.content) < 100_000
