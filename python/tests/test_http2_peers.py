"""HTTP/2 failures through the package as it ships (docs/transport.md §10.9): a connection-level violation
after a POST was read is one protocol error, never a resend; a refused stream is sent again, a POST too. The
wheel carries its own libcurl and nghttp2, so these also show the transport sees nghttp2's report there.

The peer is tests/support/h2_hostile_peer.py: it counts the requests it read."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import humus_http

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "support" / "h2_hostile_peer.py"


@contextmanager
def hostile_peer(tmp_path: Path, mode: str, *extra: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yields the peer's port and a dict that holds its counters once the block ends."""
    proc = subprocess.Popen([sys.executable, str(PEER), "--certs", str(tmp_path), "--mode", mode, *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    counters: dict[str, Any] = {}
    try:
        port = json.loads(proc.stdout.readline())["port"]
        yield port, counters
    finally:
        proc.stdin.close()
        line = proc.stdout.readline()
        proc.wait(timeout=30)
        if line:
            counters.update(json.loads(line))


def client(tmp_path: Path, port: int) -> humus_http.Client:
    return humus_http.Client(f"https://127.0.0.1:{port}", tls=humus_http.TLS(ca_file=tmp_path / "ca.pem"),
                             backoff_base=0.005, backoff_max=0.01, timeout=10.0)


@pytest.mark.parametrize("mode", ["data_stream0", "oversized_frame", "http1", "head_uppercase"])
def test_an_unkeyed_post_on_a_pooled_connection_the_server_breaks_is_one_protocol_error(
        tmp_path: Path, mode: str) -> None:
    with hostile_peer(tmp_path, mode, "--fault-from", "2") as (port, seen):
        with client(tmp_path, port) as c:
            assert c.get("/warm").status_code == 200  # the connection the POST reuses
            with pytest.raises(humus_http.ProtocolError) as caught:
                c.post("/pay", content=b"charge")
            assert caught.value.attempts == 1, caught.value
    assert seen["posts"] == 1, seen
    assert seen["requests"] == 2, seen


def test_a_refused_stream_is_sent_again_for_an_unkeyed_post(tmp_path: Path) -> None:
    with hostile_peer(tmp_path, "refuse", "--fault-from", "2", "--faults", "1") as (port, seen):
        with client(tmp_path, port) as c:
            assert c.get("/warm").status_code == 200
            response = c.post("/pay", content=b"charge")
            assert response.status_code == 200
            assert response.attempts == 2
    assert seen["posts"] == 2 and seen["posts_refused"] == 1, seen


@pytest.mark.asyncio
async def test_an_async_post_the_server_breaks_is_one_protocol_error(tmp_path: Path) -> None:
    with hostile_peer(tmp_path, "data_stream0", "--fault-from", "2") as (port, seen):
        async with humus_http.AsyncClient(f"https://127.0.0.1:{port}",
                                          tls=humus_http.TLS(ca_file=tmp_path / "ca.pem"), timeout=10.0) as c:
            assert (await c.get("/warm")).status_code == 200
            with pytest.raises(humus_http.ProtocolError) as caught:
                await c.post("/pay", content=b"charge")
            assert caught.value.attempts == 1, caught.value
    assert seen["posts"] == 1, seen


@pytest.mark.asyncio
async def test_a_busy_connection_past_its_lifetime_takes_no_new_stream(server: Any, path: str,
                                                                        make_async_client: Any) -> None:
    """docs/transport.md §10.1: a long call keeps the one HTTP/2 connection busy past max_connection_lifetime;
    calls after the lifetime go to a new connection, and the long call still ends on the old one."""
    import asyncio

    server.script(path + "/long", [{"status": 200, "body": "long", "delay_ms": 10000}])
    c = make_async_client("https", max_connection_lifetime=1.0, timeout=30.0, attempt_timeout=30.0)
    long_call = asyncio.ensure_future(c.get(path + "/long"))
    for _ in range(1000):  # the long call's request reached the server
        if server.requests(path + "/long"):
            break
        await asyncio.sleep(0.01)
    old = server.requests(path + "/long")[0]["connection"]
    await asyncio.sleep(1.2)
    assert not long_call.done(), "the long call ended before the calls after the lifetime"
    for _ in range(3):
        assert (await c.get(path + "/late")).status_code == 200
    late = {r["connection"] for r in server.requests(path + "/late")}
    assert old not in late, "a stream was opened on the connection past its lifetime"
    assert len(late) == 1, late
    assert (await long_call).text == "long"
