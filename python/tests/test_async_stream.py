"""AsyncClient.stream(): bodies read ahead by the library (humus_response_read_ahead, humus_response_take) and
awaited on the asyncio loop only when nothing is in (docs/bodies.md §7), against the local test server over
HTTP/1.1 and HTTP/2: bytes and checksum, chunks, takes without a wait, a small body's pieces as they come, a
piece before a pause, text and lines, aread() and its bound, the breaker counting at the end or the close, a body breaking
off, timeouts, cancellation, and a GiB in bounded memory."""
from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable

import pytest

import humus_http
from server_harness import TestServer
from test_stream import _hwm, reset_hwm, x_digest

MiB = 1024 * 1024


async def eventually(check: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    """Waits for `check` (a freed body is closed on the event-loop thread, a moment later); `seconds` only ends
    a test that would otherwise hang, no loaded machine comes near it."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.asyncio
async def test_bytes_and_checksum_of_a_multi_mib_body(server: TestServer,
                                                      make_async_client: Callable[..., humus_http.AsyncClient],
                                                      listener: str, path: str) -> None:
    body = os.urandom(3 * MiB).hex()  # 6 MiB of varied bytes
    server.script(path, [{"body": body}] * 2)
    client = make_async_client(listener, timeout=60, attempt_timeout=30)
    assert (await client.get(path + "/warm")).status_code == 200  # the event-loop thread exists now
    threads = _threads()
    digest = hashlib.sha256()
    pieces = 0
    async with client.stream("GET", path) as resp:
        assert resp.status_code == 200
        assert resp.http_version == ("HTTP/2" if listener == "https" else "HTTP/1.1")
        assert client.breaker_counts.successes == 1  # the warm-up only: counted when the body ends
        async for chunk in resp.aiter_bytes():
            assert 0 < len(chunk) <= 64 * 1024
            digest.update(chunk)
            pieces += 1
        assert client.breaker_counts.successes == 2
        assert _threads() <= threads  # no thread per call
    assert resp.is_closed
    assert pieces > 1
    assert digest.hexdigest() == hashlib.sha256(body.encode()).hexdigest()

    async with client.stream("GET", path) as resp:
        sizes = [len(chunk) async for chunk in resp.aiter_bytes(chunk_size=100_000)]
    assert sum(sizes) == len(body)
    assert set(sizes[:-1]) == {100_000} and 0 < sizes[-1] <= 100_000


class _CountedBody:
    """Stands in for a streamed response's native handle and counts its reads: takes that found bytes at once
    (no wait before them) and their bytes, and waits (a take that found nothing, then a future the body's ready
    resolves)."""

    def __init__(self, native: object) -> None:
        self._native = native
        self.at_once = 0
        self.bytes_at_once = 0
        self.waits = 0
        self._waited = False

    def take(self, cap: int) -> bytes | None:
        data: bytes | None = self._native.take(cap)  # type: ignore[attr-defined]
        if data and not self._waited:
            self.at_once += 1
            self.bytes_at_once += len(data)
        self._waited = False
        return data

    def wait(self, bridge: object, future: object) -> bool:
        waiting: bool = self._native.wait(bridge, future)  # type: ignore[attr-defined]
        self.waits += waiting
        self._waited = waiting
        return waiting

    def __getattr__(self, name: str) -> object:
        return getattr(self._native, name)


def _counted(resp: humus_http.Response) -> _CountedBody:
    counted = _CountedBody(resp._native)
    resp._native = counted  # type: ignore[assignment]
    return counted


@pytest.mark.asyncio
async def test_a_multi_mib_body_is_taken_from_the_ring_while_the_reader_awaits(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], listener: str,
        path: str) -> None:
    body = os.urandom(4 * MiB).hex()  # 8 MiB: a ring of 256 KiB (a Content-Length of 1 MiB or more)
    server.script(path, [{"body": body}])
    client = make_async_client(listener, timeout=60, attempt_timeout=30)
    received = bytearray()
    async with client.stream("GET", path) as resp:
        counted = _counted(resp)
        async for chunk in resp.aiter_bytes():
            assert 0 < len(chunk) <= 64 * 1024
            received += chunk
            await asyncio.sleep(0.001)  # the loop thread reads ahead meanwhile
        assert client.breaker_counts.successes == 1
    assert bytes(received) == body.encode()
    # A reader that lets the library get ahead finds bytes in the ring rather than awaiting the loop for them.
    assert counted.at_once > 0, (counted.at_once, counted.waits)


@pytest.mark.asyncio
async def test_a_small_body_comes_intact_and_once_in_without_a_wait(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], listener: str,
        path: str) -> None:
    body = os.urandom(50 * 1024).hex()  # 100 KiB: a ring of its length and one byte holds all of it
    server.script(path, [{"body": body}] * 3 + [{"body": ""}])
    client = make_async_client(listener)
    async with client.stream("GET", path) as resp:
        assert await resp.aread() == body.encode()
    async with client.stream("GET", path) as resp:
        # The ring read it to its end (which counts the result) meanwhile: all of it is taken without a wait.
        await eventually(lambda: client.breaker_counts.successes == 2, "the body was not read ahead")
        counted = _counted(resp)
        assert await resp.aread() == body.encode()
        assert counted.bytes_at_once == len(body)
    async with client.stream("GET", path) as resp:
        sizes = [len(chunk) async for chunk in resp.aiter_bytes(chunk_size=30 * 1024)]
        assert sizes == [30 * 1024] * 3 + [10 * 1024]
    async with client.stream("GET", path) as resp:
        counted = _counted(resp)
        assert await resp.aread() == b""
        assert counted.waits <= 1 and counted.at_once == 0
    assert client.breaker_counts.successes == 4


@pytest.mark.asyncio
async def test_a_small_bodys_first_piece_comes_before_the_rest(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], listener: str,
        path: str) -> None:
    # A Content-Length of 20000, 16 KiB of it at once and the rest 30 s later: the stream hands the first
    # piece over as it comes, not once the body is whole.
    server.script(path, [{"body_size": 20_000, "chunk_delay_ms": 30_000}])
    client = make_async_client(listener, max_attempts=1, timeout=120, attempt_timeout=120)
    async with client.stream("GET", path) as resp:
        got = 0
        chunks = aiter(resp.aiter_bytes())
        while got < 16 * 1024:
            got += len(await anext(chunks))
        assert got == 16 * 1024
    # Closed before its end (on the loop thread, after the close): counted as its 200 was classified.
    await eventually(lambda: client.breaker_counts.successes == 1, "the closed body was not counted")


@pytest.mark.asyncio
async def test_a_piece_before_a_pause_reaches_the_reader(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], listener: str,
        path: str) -> None:
    # The first 16 KiB, then nothing for 20 s: a full read, which alone wakes no reader while a body flows,
    # reaches it once the reader is done waiting for a batch (humus_response_hurry), not with the next piece.
    server.script(path, [{"body_size": MiB, "chunk_delay_ms": 20_000}])
    client = make_async_client(listener, max_attempts=1, timeout=120, attempt_timeout=120)
    async with client.stream("GET", path) as resp:
        first = await anext(aiter(resp.aiter_bytes()))
        assert 0 < len(first) <= 16 * 1024
    assert resp.is_closed


@pytest.mark.asyncio
async def test_closing_the_response_ends_a_read_waiting_in_another_task(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    server.script(path, [{"body_size": MiB, "chunk_delay_ms": 20_000}])
    client = make_async_client(max_attempts=1, timeout=120, attempt_timeout=120)
    async with client.stream("GET", path) as resp:
        chunks = aiter(resp.aiter_bytes())
        await anext(chunks)  # the next piece is 20 s away
        reader = asyncio.create_task(anext(chunks))
        await asyncio.sleep(0)  # the reader's first step: a take that finds nothing, then its wait
        await resp.aclose()
        with pytest.raises(humus_http.CancelledCallError) as caught:
            await asyncio.wait_for(reader, 10)  # the bound only ends a test that would otherwise hang
    assert caught.value.status == "HUMUS_E_CANCELLED" and caught.value.attempts == 1


@pytest.mark.asyncio
async def test_text_lines_and_aread(server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient],
                                    listener: str, path: str) -> None:
    body = "".join(f"line {i} é\r\n" for i in range(5000)) + "last €"
    server.script(path, [{"body": body, "chunk_delay_ms": 1,
                          "headers": {"Content-Type": "text/plain; charset=utf-8"}}] * 4)
    client = make_async_client(listener)
    async with client.stream("GET", path) as resp:
        assert [line async for line in resp.aiter_lines()] == body.split("\r\n")
    async with client.stream("GET", path) as resp:
        pieces = [text async for text in resp.aiter_text(chunk_size=3)]  # characters cut by the 3-byte pieces
        assert len(pieces) > 1 and "".join(pieces) == body
    async with client.stream("GET", path) as resp:
        with pytest.raises(RuntimeError, match="aread"):
            _ = resp.content
        with pytest.raises(RuntimeError, match="aiter_bytes"):
            next(resp.iter_bytes())  # the blocking reads are refused on an asynchronous stream
        assert await resp.aread() == body.encode()
        assert resp.text == body
        assert [chunk async for chunk in resp.aiter_bytes()] == [body.encode()]  # read: its content
    assert client.breaker_counts.successes == 3

    sync = humus_http.Client.from_client(client)
    try:
        with sync.stream("GET", path) as sync_resp:
            with pytest.raises(RuntimeError, match="AsyncClient.stream"):
                await anext(aiter(sync_resp.aiter_bytes()))
    finally:
        sync.close()


@pytest.mark.asyncio
async def test_aread_is_bounded_by_max_response_body(server: TestServer,
                                                     make_async_client: Callable[..., humus_http.AsyncClient],
                                                     path: str) -> None:
    server.script(path, [{"body_size": 2 * MiB}, {"body_size": 64 * 1024}])
    client = make_async_client(max_response_body=128 * 1024, max_attempts=1)
    async with client.stream("GET", path) as resp:
        with pytest.raises(humus_http.ResponseTooLargeError) as caught:
            await resp.aread()
        assert resp.is_closed
    assert caught.value.status == "HUMUS_E_TOO_LARGE" and caught.value.attempts == 1
    assert "max_response_body" in str(caught.value)
    async with client.stream("GET", path) as resp:
        assert len(await resp.aread()) == 64 * 1024  # within the bound

    shared = humus_http.AsyncClient.from_client(client)  # the bound carries over to a share
    try:
        server.script(path, [{"body_size": 2 * MiB}])
        async with shared.stream("GET", path) as resp:
            with pytest.raises(humus_http.ResponseTooLargeError):
                await resp.aread()
    finally:
        await shared.aclose()


@pytest.mark.asyncio
async def test_early_close_counts_the_classified_result(server: TestServer,
                                                        make_async_client: Callable[..., humus_http.AsyncClient],
                                                        listener: str, path: str) -> None:
    server.script(path, [{"status": 500, "body_size": 4 * MiB}] * 2)
    client = make_async_client(listener, max_attempts=1)
    async with client.stream("GET", path) as resp:
        assert resp.status_code == 500
        await anext(aiter(resp.aiter_bytes()))
        assert client.breaker_counts.failures == 0
        await resp.aclose()
        assert resp.is_closed
        await resp.aclose()  # idempotent
    await eventually(lambda: client.breaker_counts.failures == 1, "the closed body was never counted")

    async with client.stream("GET", path) as resp:  # leaving the block unread closes it too
        assert resp.status_code == 500
    assert resp.is_closed
    await eventually(lambda: client.breaker_counts.failures == 2, "the body left unread was never counted")
    assert client.breaker_counts.successes == 0


@pytest.mark.asyncio
async def test_mid_body_reset_raises_and_counts_a_failure(server: TestServer,
                                                          make_async_client: Callable[..., humus_http.AsyncClient],
                                                          listener: str, path: str) -> None:
    server.script(path, [{"body_size": MiB, "reset": "mid_body"}])
    client = make_async_client(listener, max_attempts=1)
    received = 0
    with pytest.raises(humus_http.ProtocolError) as caught:
        async with client.stream("GET", path) as resp:
            async for chunk in resp.aiter_bytes():
                received += len(chunk)
    assert caught.value.status == "HUMUS_E_CONNECTION_LOST"
    assert received < MiB
    assert resp.is_closed
    await eventually(lambda: client.breaker_counts.failures == 1, "the broken body was not counted a failure")
    assert client.breaker_counts.successes == 0


@pytest.mark.asyncio
async def test_the_timeout_bounds_the_reads(server: TestServer,
                                            make_async_client: Callable[..., humus_http.AsyncClient],
                                            path: str) -> None:
    server.script(path, [{"body_size": MiB, "chunk_delay_ms": 200}])
    client = make_async_client(timeout=0.6, attempt_timeout=0.6, max_attempts=1)
    received = 0
    with pytest.raises(humus_http.UpstreamTimeoutError) as caught:
        async with client.stream("GET", path) as resp:
            async for chunk in resp.aiter_bytes():
                received += len(chunk)
    # Cut by the deadline, not read to its end (64 chunks, 200 ms apart): most of the body never came.
    assert caught.value.status == "HUMUS_E_TIMEOUT" and caught.value.attempts == 1
    assert received < MiB // 2


@pytest.mark.asyncio
async def test_the_cancel_token_ends_a_pending_read(server: TestServer,
                                                    make_async_client: Callable[..., humus_http.AsyncClient],
                                                    path: str) -> None:
    server.script(path, [{"body_size": MiB, "chunk_delay_ms": 300}])
    client = make_async_client(max_attempts=1)
    token = humus_http.CancelToken()
    async with client.stream("GET", path, cancel=token) as resp:
        chunks = aiter(resp.aiter_bytes())
        await anext(chunks)
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        with pytest.raises(humus_http.CancelledCallError):
            async for _ in chunks:
                pass
    await asyncio.sleep(0.1)
    counts = client.breaker_counts
    assert (counts.successes, counts.failures) == (0, 0)  # a cancelled body is ignored by the breaker


@pytest.mark.asyncio
async def test_cancelling_the_awaiting_task_closes_the_body(server: TestServer,
                                                            make_async_client: Callable[..., humus_http.AsyncClient],
                                                            listener: str, path: str) -> None:
    server.script(path, [{"body_size": 4 * MiB, "chunk_delay_ms": 200}])
    client = make_async_client(listener, max_attempts=1, timeout=30, attempt_timeout=30)
    first = asyncio.Event()
    opened: list[humus_http.Response] = []

    async def download() -> int:
        total = 0
        async with client.stream("GET", path) as resp:
            opened.append(resp)
            async for chunk in resp.aiter_bytes():
                total += len(chunk)
                first.set()
        return total

    task = asyncio.create_task(download())
    await asyncio.wait_for(first.wait(), 10)
    await asyncio.sleep(0.05)  # the task now awaits its next read
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (resp,) = opened
    assert resp.is_closed
    # Closed, not read to its end: counted as classified (a 200), long before the body could have ended.
    await eventually(lambda: client.breaker_counts.successes == 1, "the cancelled body was never closed")
    assert client.breaker_counts.failures == 0
    # The client goes on: the next call is answered.
    server.script(path + "/next", [{"body": "ok"}])
    async with client.stream("GET", path + "/next") as resp:
        assert await resp.aread() == b"ok"


@pytest.mark.asyncio
async def test_cancelling_while_the_headers_are_awaited(server: TestServer,
                                                        make_async_client: Callable[..., humus_http.AsyncClient],
                                                        path: str) -> None:
    server.script(path, [{"hang": True}])  # only the cancellation frees the call's bulkhead slot
    client = make_async_client(max_attempts=1, bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0),
                               timeout=60, attempt_timeout=60)

    async def open_it() -> None:
        async with client.stream("GET", path):
            raise AssertionError("the headers came despite the cancellation")

    task = asyncio.create_task(open_it())
    deadline = time.monotonic() + 30
    while not server.requests(path):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    server.script(path + "/next", [{"body": "ok"}])

    async def next_call() -> bytes:
        async with client.stream("GET", path + "/next") as resp:
            return await resp.aread()
    deadline = time.monotonic() + 30  # only ends a test that would otherwise hang: the first call never ends
    while True:
        try:
            assert await next_call() == b"ok"
            break
        except humus_http.BulkheadFullError:
            assert time.monotonic() < deadline, "the cancelled call kept its bulkhead slot"
            await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_failures_before_the_headers_raise_as_request_does(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    server.script(path, [{"hang": True}])
    client = make_async_client("https", timeout=0.3, attempt_timeout=0.3)
    with pytest.raises(humus_http.UpstreamTimeoutError):
        async with client.stream("GET", path):
            pass
    with pytest.raises(humus_http.CrossOriginError):
        async with client.stream("GET", server.url("http", path)):
            pass


@pytest.mark.asyncio
async def test_one_gib_download_streams_with_bounded_peak_memory(
        server: TestServer, make_async_client: Callable[..., humus_http.AsyncClient], path: str) -> None:
    size = 1024 * MiB
    server.script(path, [{"body_size": size}])
    expected = x_digest(size)
    client = make_async_client(timeout=300, attempt_timeout=300)
    before = reset_hwm()
    digest = hashlib.sha256()
    total = 0
    async with client.stream("GET", path) as resp:
        async for chunk in resp.aiter_bytes():
            digest.update(chunk)
            total += len(chunk)
    grown = _hwm() - before
    assert total == size
    assert digest.hexdigest() == expected
    assert grown < 32 * MiB, f"VmHWM grew {grown / MiB:.1f} MiB"
    print(f"1 GiB streamed asynchronously, VmHWM +{grown / MiB:.1f} MiB")


@pytest.mark.asyncio
async def test_an_upstreams_client_keeps_its_max_response_body(
        server: TestServer, make_runtime: Callable[..., humus_http.Runtime], path: str) -> None:
    document = {"upstreams": {"small": {"base_url": server.url("http"), "timeout": "5s", "max_attempts": 1,
                                        "max_response_body": 64 * 1024},
                              "default": {"base_url": server.url("http"), "timeout": "5s"}}}
    server.script(path, [{"body_size": 256 * 1024}] * 2)
    with humus_http.Upstreams.from_json(document, runtime=make_runtime()) as upstreams:
        small = upstreams.async_client("small")
        async with small.stream("GET", path) as resp:
            with pytest.raises(humus_http.ResponseTooLargeError):
                await resp.aread()
        async with upstreams.async_client("default").stream("GET", path) as resp:
            assert len(await resp.aread()) == 256 * 1024  # the default bound, 64 MiB


@pytest.mark.asyncio
async def test_bodies_closed_early_leave_nothing_for_the_next_ones(server: TestServer,
                                                                   make_async_client: Callable[..., humus_http.AsyncClient],
                                                                   listener: str, path: str) -> None:
    # Many streams on one HTTP/2 connection, each closed after its first chunk while libcurl holds more of it;
    # then new calls on the handles they leave: every new body is exactly its own (a reused handle once
    # handed the next request the old stream's bytes).
    server.script(path + "/cut", [{"body_size": 4 * MiB}])
    exact = 100_003
    server.script(path + "/exact", [{"body_size": exact}])
    client = make_async_client(listener, timeout=60, attempt_timeout=30)

    async def cut() -> None:
        async with client.stream("GET", path + "/cut") as resp:
            async for _ in resp.aiter_bytes():
                await asyncio.sleep(0.1)  # libcurl takes in more of the paused stream meanwhile
                break

    async def whole() -> int:
        async with client.stream("GET", path + "/exact") as resp:
            return sum([len(chunk) async for chunk in resp.aiter_bytes()])

    for _ in range(2):
        await asyncio.gather(*(cut() for _ in range(12)))
        assert await asyncio.gather(*(whole() for _ in range(12))) == [exact] * 12


@pytest.mark.asyncio
async def test_aiter_raw_gives_the_body_as_handed_over(server: TestServer,
                                                       make_async_client: Callable[..., humus_http.AsyncClient],
                                                       path: str) -> None:
    server.script(path, [{"body": "abcdefghij"}])
    client = make_async_client()
    async with client.stream("GET", path) as resp:
        chunks = [chunk async for chunk in resp.aiter_raw(chunk_size=4)]
    assert chunks == [b"abcd", b"efgh", b"ij"]
