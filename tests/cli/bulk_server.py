#!/usr/bin/env python3
"""A small, fast HTTP/1.1 server for large bodies on loopback: the CLI's streaming tests and
bench/stream_bench.py. Bodies are made on the fly from one 1 MiB block, so a gigabyte costs no memory.

    GET  /bytes/N        N bytes (the block repeated), with Content-Length
    GET  /late/N/MS      the same, the body sent MS milliseconds after the head: a client holds its reading
                         state meanwhile (a baseline of memory while reading)
    GET  /cut/N/M        Content-Length N, then M bytes and a clean close: a body cut short
    GET  /gzip           a gzip-encoded text, Content-Encoding: gzip (GZIP_TEXT decoded)
    PUT|POST any path    reads the body (Content-Length or chunked); answers {"size": n, "sha256": hex}

As a program: `bulk_server.py [--port P]` prints "port N" once listening and serves until stdin closes.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import random
import socket
import sys
import threading
import time
from typing import Any

BLOCK = random.Random(20261201).randbytes(1 << 20)
GZIP_TEXT = b"streamed, decoded, and the same as sent\n" * 64


@functools.lru_cache(maxsize=8)
def sha256_of(size: int) -> str:
    """The sha256 of /bytes/SIZE's body (and of a file of the block repeated to SIZE bytes)."""
    digest = hashlib.sha256()
    for offset in range(0, size, len(BLOCK)):
        digest.update(BLOCK[:min(len(BLOCK), size - offset)])
    return digest.hexdigest()


def write_file(path: Any, size: int) -> None:
    """A file of the block repeated to SIZE bytes: what /bytes/SIZE sends."""
    with open(path, "wb") as f:
        for offset in range(0, size, len(BLOCK)):
            f.write(BLOCK[:min(len(BLOCK), size - offset)])


class _Connection:
    def __init__(self, sock: socket.socket, server: BulkServer) -> None:
        self.sock = sock
        self.server = server
        self.buf = b""

    def _fill(self) -> bool:
        data = self.sock.recv(1 << 20)
        self.buf += data
        return bool(data)

    def _line(self) -> bytes | None:
        while b"\r\n" not in self.buf:
            if not self._fill():
                return None
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read_exactly(self, n: int, digest: Any) -> None:
        while n > 0:
            if not self.buf and not self._fill():
                raise ConnectionError("the body ended early")
            piece = self.buf[:n]
            self.buf = self.buf[len(piece):]
            digest.update(piece)
            n -= len(piece)

    def serve(self) -> None:
        with self.sock:
            while True:
                request = self._line()
                if not request:
                    return
                headers: dict[str, str] = {}
                while (line := self._line()):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                if line is None:
                    return
                method, target, _ = request.decode("latin-1").split(" ", 2)
                if not self._answer(method, target, headers):
                    return

    def _send_head(self, status: int, headers: list[tuple[str, str]]) -> None:
        lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}"]
        lines += [f"{name}: {value}" for name, value in headers]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _answer(self, method: str, target: str, headers: dict[str, str]) -> bool:
        parts = target.split("?", 1)[0].strip("/").split("/")
        if method in ("PUT", "POST"):
            digest = hashlib.sha256()
            size = 0
            if headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    chunk = int((self._line() or b"0").split(b";")[0], 16)
                    if chunk == 0:
                        while self._line():  # trailers, then the empty line
                            pass
                        break
                    self._read_exactly(chunk, digest)
                    size += chunk
                    self._line()
            else:
                size = int(headers.get("content-length", "0"))
                self._read_exactly(size, digest)
            record = {"method": method, "path": target, "size": size, "sha256": digest.hexdigest(),
                      "chunked": "content-length" not in headers}
            self.server.uploads.append(record)
            body = json.dumps(record).encode()
            self._send_head(200, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            self.sock.sendall(body)
            return True
        if parts[0] == "bytes" and len(parts) == 2:
            size = int(parts[1])
            self._send_head(200, [("Content-Type", "application/octet-stream"), ("Content-Length", str(size))])
            self._send_bytes(size)
            return True
        if parts[0] == "late" and len(parts) == 3:
            size = int(parts[1])
            self._send_head(200, [("Content-Type", "application/octet-stream"), ("Content-Length", str(size))])
            time.sleep(int(parts[2]) / 1000)
            self._send_bytes(size)
            return True
        if parts[0] == "cut" and len(parts) == 3:
            self._send_head(200, [("Content-Length", parts[1])])
            self._send_bytes(int(parts[2]))
            self.sock.shutdown(socket.SHUT_WR)
            return False
        if parts[0] == "gzip":
            body = gzip.compress(GZIP_TEXT)
            self._send_head(200, [("Content-Encoding", "gzip"), ("Content-Length", str(len(body)))])
            self.sock.sendall(body)
            return True
        self._send_head(404, [("Content-Length", "0")])
        return True

    def _send_bytes(self, size: int) -> None:
        view = memoryview(BLOCK)
        while size > 0:
            n = min(len(view), size)
            self.sock.sendall(view[:n])
            size -= n


class BulkServer:
    """Serves on 127.0.0.1 (port 0: any free one) from a thread; `uploads` records every PUT and POST."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.uploads: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            _Connection(sock, self).serve()
        except (ConnectionError, OSError, ValueError):
            pass

    def __enter__(self) -> BulkServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with BulkServer(args.port) as server:
        print(f"port {server.port}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
