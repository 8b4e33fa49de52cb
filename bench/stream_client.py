#!/usr/bin/env python3
"""One streamed download or upload for bench/stream_bench.py.

    stream_client.py humus|httpx URL             reads the body at URL in 64 KiB pieces and drops them (as
                                                 `-o /dev/null` would): humus_http's Client.stream +
                                                 iter_bytes, httpx's Client.stream + iter_raw
    stream_client.py humus-up|httpx-up FILE URL  PUTs FILE to URL as a stream: humus_http from the open file
                                                 (a reader it can rewind), httpx from an iterator of its
                                                 64 KiB reads (httpx reads a file object by lines)

Exits 1 with the error on stderr when the call fails. On success it prints `download: BYTES bytes in SECONDS
s` (or `upload: ...`) on stderr: the time from the request to the last byte, without the interpreter's start
and imports, which stream_bench.py prints beside the process's own figures."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
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


def upload_with_humus(path: str, url: str) -> int:
    import humus_http

    global started
    started = time.perf_counter()
    parts = urlsplit(url)
    # The server answers once it has read the whole body: the attempt gets the call's whole deadline.
    client = humus_http.Client(f"{parts.scheme}://{parts.netloc}", timeout=3600, attempt_timeout=3600)
    with client, open(path, "rb") as body:
        response = client.put(url, content=body)
        response.raise_for_status()
        return int(response.json()["size"])


def upload_with_httpx(path: str, url: str) -> int:
    import httpx

    global started
    started = time.perf_counter()

    def pieces() -> Iterator[bytes]:
        with open(path, "rb") as body:
            while piece := body.read(PIECE):
                yield piece

    size = os.path.getsize(path)
    with httpx.Client(timeout=None) as client:
        response = client.put(url, content=pieces(), headers={"Content-Length": str(size)})
        response.raise_for_status()
        return int(response.json()["size"])


def main() -> int:
    mode, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    calls: dict[str, Callable[..., int]] = {"humus": with_humus, "httpx": with_httpx,
                                            "humus-up": upload_with_humus, "httpx-up": upload_with_httpx}
    if mode not in calls or len(args) != (2 if mode.endswith("-up") else 1):
        print("usage: stream_client.py humus|httpx URL | stream_client.py humus-up|httpx-up FILE URL",
              file=sys.stderr)
        return 2
    try:
        total = calls[mode](*args)
    except Exception as e:  # noqa: BLE001 (any failure ends the run with its message)
        print(f"stream_client: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    what = "upload" if mode.endswith("-up") else "download"
    print(f"{what}: {total} bytes in {time.perf_counter() - started:.6f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
