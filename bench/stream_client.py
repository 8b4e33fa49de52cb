#!/usr/bin/env python3
"""One streamed download for bench/stream_bench.py: `stream_client.py humus|httpx URL` reads the body at URL
in 64 KiB pieces and drops them (as `-o /dev/null` would), through humus_http's Client.stream + iter_bytes or
httpx's Client.stream + iter_raw. Exits 1 with the error on stderr when the download fails. On success it
prints `download: BYTES bytes in SECONDS s` on stderr: the time from the request to the last byte, without the
interpreter's start and imports, which stream_bench.py prints beside the process's own figures."""
from __future__ import annotations

import sys
import time
from urllib.parse import urlsplit

PIECE = 64 * 1024
started = 0.0  # perf_counter() once the client's module is imported


def with_humus(url: str) -> int:
    import humus_http

    global started
    started = time.perf_counter()
    parts = urlsplit(url)
    # The call's timeout bounds the body's reads too: the longest allowed (1 h), as curl has none.
    client = humus_http.Client(f"{parts.scheme}://{parts.netloc}", timeout=3600)
    total = 0
    with client, client.stream("GET", url) as response:
        for piece in response.iter_bytes():
            total += len(piece)
    return total


def with_httpx(url: str) -> int:
    import httpx

    global started
    started = time.perf_counter()
    total = 0
    with httpx.Client(timeout=None) as client, client.stream("GET", url) as response:
        for piece in response.iter_raw(PIECE):
            total += len(piece)
    return total


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("humus", "httpx"):
        print("usage: stream_client.py humus|httpx URL", file=sys.stderr)
        return 2
    try:
        total = (with_humus if sys.argv[1] == "humus" else with_httpx)(sys.argv[2])
    except Exception as e:  # noqa: BLE001 (any failure ends the run with its message)
        print(f"stream_client: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"download: {total} bytes in {time.perf_counter() - started:.6f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
