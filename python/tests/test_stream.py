"""Client.stream(): bodies read from their connection as the caller iterates (docs/bodies.md §7), against the local
test server over HTTP/1.1 and HTTP/2: bounded memory for a large body, the breaker counting the result at the
end or the close, a body breaking off, decoding."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import threading
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
    # The first 16 KiB chunk comes at once, the second only after 30 s: the read of the rest blocks. Another
    # Python thread, started once the first chunk is in, runs a pure-Python loop to its end and then cancels
    # the call. Had the read kept the GIL, that thread could do neither until the body had come whole.
    server.script(path, [{"body_size": 32 * 1024, "chunk_delay_ms": 30_000}])
    client = make_client(timeout=60, attempt_timeout=60, max_attempts=1)
    token = humus_http.CancelToken()
    first_chunk_in = threading.Event()
    counted: list[int] = []

    def spin() -> None:
        first_chunk_in.wait(60)
        n = 0
        while n < 1_000_000:
            n += 1
        counted.append(n)
        token.cancel()

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    received = 0
    with pytest.raises(humus_http.CancelledCallError):
        with client.stream("GET", path, cancel=token) as resp:
            for chunk in resp.iter_bytes():
                received += len(chunk)
                first_chunk_in.set()
    t.join(60)
    assert counted == [1_000_000]  # the other thread ran while the read blocked
    assert 0 < received < 32 * 1024  # and the read ended by its cancellation, not by the body's end


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


def test_without_decompress_a_body_keeps_its_encoding_and_length(server: TestServer,
                                                                 make_client: Callable[..., humus_http.Client],
                                                                 path: str) -> None:
    # What httpx users read in the headers of a compressed body: with decompress=False the client asks for
    # nothing and decodes nothing, so Content-Encoding and Content-Length describe the body iter_raw() gives.
    server.script(path, [{"gzip_bomb": 100_000}])
    client = make_client(decompress=False)
    with client.stream("GET", path) as resp:
        raw = b"".join(resp.iter_raw())
    assert resp.headers["content-encoding"] == "gzip"
    assert int(resp.headers["content-length"]) == len(raw)
    assert gzip.decompress(raw) == bytes(100_000)


def test_text_and_lines_decode_characters_split_across_chunks(server: TestServer,
                                                              make_client: Callable[..., humus_http.Client],
                                                              path: str) -> None:
    # Against the server's 16 KiB chunks, delivered apart: a "\r\n" cut between its two bytes, then "é" (2
    # bytes) and "€" (3 bytes) cut across the next boundaries.
    k = 16 * 1024
    part1 = "a" * (k - 1) + "\r\n"
    part2 = "b" * (2 * k - 1 - (k + 1)) + "é\r"
    part3 = "c" * (3 * k - 1 - (2 * k + 2)) + "€\rline\nlast é"
    body = part1 + part2 + part3
    assert body.encode()[2 * k - 1:2 * k + 1] == "é".encode() and body.encode()[3 * k - 1:3 * k + 2] == "€".encode()
    server.script(path, [{"body": body, "chunk_delay_ms": 20,
                          "headers": {"Content-Type": "text/plain; charset=utf-8"}}])
    client = make_client()
    expected_lines = ["a" * (k - 1), "b" * (k - 2) + "é", "c" * (k - 3) + "€", "line", "last é"]
    with client.stream("GET", path) as resp:
        assert list(resp.iter_lines()) == expected_lines
    with client.stream("GET", path) as resp:
        assert "".join(resp.iter_text()) == body  # pieces as they arrive: how many depends on the machine's load
    with client.stream("GET", path) as resp:
        pieces = list(resp.iter_text(chunk_size=k))  # cut where the server's chunks are: "é" across the second cut
        assert len(pieces) > 1 and "".join(pieces) == body
    with client.stream("GET", path) as resp:
        assert "".join(resp.iter_text(chunk_size=3)) == body  # every multi-byte character cut by the 3-byte pieces
    server.script(path, [{"body": "café\r\nnaïve", "headers": {"Content-Type": "text/plain; charset=utf-8"}}])
    with client.stream("GET", path) as resp:
        assert list(resp.iter_lines()) == ["café", "naïve"]
        assert resp.is_closed is False
    assert resp.is_closed


def test_generator_upload_makes_one_chunked_attempt(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str) -> None:
    server.script(path, [{"status": 503}])
    client = make_client(max_attempts=3)
    pieces: list[bytes | bytearray | memoryview] = [b"a" * 100_000, b"", bytearray(b"b" * 7),
                                                    memoryview(b"c" * 200_000)]
    sent = hashlib.sha256(b"".join(bytes(p) for p in pieces)).hexdigest()
    resp = client.put(path, content=iter(pieces), retry=True)
    assert resp.status_code == 503 and resp.attempts == 1  # not replayable: one attempt even with retry=True
    (record,) = server.requests(path)
    assert record["body_size"] == 300_007 and record["body_sha256"] == sent
    assert ("transfer-encoding", "chunked") in [tuple(h) for h in record["headers"]]

    with pytest.raises(TypeError, match="must yield bytes"):
        client.post(path, content=iter(["text"]))  # type: ignore[arg-type]


def test_seekable_file_upload_is_resent_after_a_503(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str, tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    file = tmp_path / "upload.bin"
    file.write_bytes(b"skipped" + data)
    server.script(path, [{"status": 503}, {"status": 200}])
    client = make_client(max_attempts=3)
    with file.open("rb") as f:
        f.seek(len(b"skipped"))  # replayed from where it stood, not from 0
        resp = client.put(path, content=f)
    assert resp.status_code == 200 and resp.attempts == 2
    records = server.requests(path)
    assert len(records) == 2
    for record in records:
        assert record["body_size"] == len(data)
        assert record["body_sha256"] == hashlib.sha256(data).hexdigest()
        assert ("content-length", str(len(data))) in [tuple(h) for h in record["headers"]]

    server.script(path, [{"status": 503}, {"status": 201}])
    resp = client.put(path, content=io.BytesIO(data))  # seekable without a file descriptor
    assert (resp.status_code, resp.attempts) == (201, 2)
    assert [r["body_size"] for r in server.requests(path)][-2:] == [len(data), len(data)]

    with file.open("r") as text, pytest.raises(TypeError, match="binary mode"):
        client.put(path, content=text)  # type: ignore[arg-type]


def _hwm() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def x_digest(size: int) -> str:
    """The SHA-256 of the test server's body of `size` bytes of b"x" (a multiple of 1 MiB)."""
    expected = hashlib.sha256()
    block = b"x" * (1024 * 1024)
    for _ in range(size // len(block)):
        expected.update(block)
    return expected.hexdigest()


def reset_hwm() -> int:
    """VmHWM reset to the RSS now where Linux allows it (4.0+), else the earlier peak: the base of a delta."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _hwm()


def test_one_gib_download_streams_with_bounded_peak_memory(server: TestServer,
                                                           make_client: Callable[..., humus_http.Client],
                                                           path: str) -> None:
    size = 1024 * 1024 * 1024
    server.script(path, [{"body_size": size}])
    expected = x_digest(size)
    client = make_client(timeout=300, attempt_timeout=300)
    before = reset_hwm()
    digest = hashlib.sha256()
    total = 0
    with client.stream("GET", path) as resp:
        for chunk in resp.iter_bytes():
            digest.update(chunk)
            total += len(chunk)
    grown = _hwm() - before
    assert total == size
    assert digest.hexdigest() == expected
    assert grown < 32 * 1024 * 1024, f"VmHWM grew {grown / 2**20:.1f} MiB"
    print(f"1 GiB streamed, VmHWM +{grown / 2**20:.1f} MiB")
