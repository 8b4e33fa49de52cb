#!/usr/bin/env python3
"""humus_http's scriptable test server.

Every language's integration tests (GoogleTest, pytest, go test, cargo test) spawn this one process so they
exercise the real client against real loopback sockets, real TLS, HTTP/1.1 and HTTP/2, and the faults of
docs/retries.md §5.3 and docs/libcurl-traps.md §19 — one implementation of the dependency's misbehaviour instead of one per language.

Usage: humus_test_server.py --certs DIR [--ignore-stdin] [--verbose]

Prints one JSON line on stdout when every listener is bound, then nothing more on stdout; stops on stdin EOF
(so it dies with the test process that spawned it), SIGTERM or SIGINT. See tests/server/README.md.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import http
import itertools
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import urllib.parse
import warnings
import zlib
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h11

CHUNK = 16 * 1024
READ_SIZE = 64 * 1024
CONTROL_PREFIX = "/_control/"
# Every TLS listener presents a certificate for this name; clients reach it through a --resolve style map.
SERVER_NAME = "payments"

verbose = False


def log(message: str) -> None:
    """Writes diagnostics to stderr: stdout carries only the ready line, which harnesses parse."""
    if verbose:
        print(f"humus_test_server: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------------
# Certificates
# --------------------------------------------------------------------------------------------------------

CERT_FILES = (
    "ca.pem", "ca.key", "server.pem", "server.key", "client.pem", "client.key",
    "cn_only.pem", "cn_only.key", "untrusted.pem", "untrusted.key",
)
COMPLETE_MARKER = ".complete"
SERVER_SAN = f"DNS:{SERVER_NAME},DNS:localhost,IP:127.0.0.1,IP:::1"


def _openssl(*args: str, cwd: Path) -> None:
    """Runs the openssl CLI quietly; its error text is what a harness author needs when it fails."""
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _new_key(name: str, cwd: Path) -> None:
    """EC P-256 keys: generating them costs milliseconds, unlike RSA."""
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{name}.key", cwd=cwd)


def _sign_by_ca(name: str, subject: str, extensions: str, cwd: Path) -> None:
    """Issues NAME.pem for NAME.key under the test CA with exactly the given extensions (none implicit)."""
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "3650", "-sha256",
             "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=cwd)


def _self_signed(name: str, subject: str, extensions: list[str], cwd: Path) -> None:
    """A self-signed certificate: the CA itself, and the `untrusted` listener's certificate."""
    ext_args = list(itertools.chain.from_iterable(("-addext", e) for e in extensions))
    _openssl("req", "-x509", "-new", "-key", f"{name}.key", "-subj", subject, "-days", "3650", "-sha256",
             "-set_serial", str(int.from_bytes(os.urandom(8), "big")), *ext_args, "-out", f"{name}.pem", cwd=cwd)


def _generate_certs(work: Path) -> None:
    """Creates every certificate the listeners and the clients under test need, into WORK."""
    for name in ("ca", "server", "client", "cn_only", "untrusted"):
        _new_key(name, work)
    _self_signed("ca", "/CN=humus_http test CA", [
        "basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
        "subjectKeyIdentifier=hash"], work)
    _sign_by_ca("server", f"/CN={SERVER_NAME}",
                f"basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
                f"subjectAltName={SERVER_SAN}\n", work)
    _sign_by_ca("client", "/CN=humus_http test client",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n", work)
    # No subjectAltName on purpose: libcurl 7.88 falls back to the CN, the client under test must not (§19).
    _sign_by_ca("cn_only", f"/CN={SERVER_NAME}",
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n", work)
    _self_signed("untrusted", f"/CN={SERVER_NAME}", [
        "basicConstraints=critical,CA:FALSE", f"subjectAltName={SERVER_SAN}"], work)


def ensure_certs(directory: Path) -> None:
    """Creates the certificates once per directory; concurrent servers (ctest -j) share one safely.

    An flock serialises creation, and a marker written last tells a complete set from a half-written one.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / COMPLETE_MARKER).exists():
        return
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / COMPLETE_MARKER).exists():
            return
        with tempfile.TemporaryDirectory(dir=directory, prefix=".gen-") as tmp:
            work = Path(tmp)
            _generate_certs(work)
            for name in CERT_FILES:
                os.replace(work / name, directory / name)
        (directory / COMPLETE_MARKER).write_text("ok\n")


# --------------------------------------------------------------------------------------------------------
# Scripts: what the dependency does, step by step, per path
# --------------------------------------------------------------------------------------------------------

RESETS = ("before_headers", "after_headers", "mid_body")
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name


class StepError(ValueError):
    """A script the control API refuses: a typo in a test must fail loudly, not run the default."""


@dataclasses.dataclass(frozen=True)
class Body:
    """A response body produced on demand, so `body_size` of a gigabyte costs no memory."""

    size: int
    data: bytes | None = None  # None: `size` bytes of b"x"

    def chunk(self, offset: int, length: int) -> bytes:
        """The bytes at [offset, offset+length)."""
        length = max(0, min(length, self.size - offset))
        if self.data is not None:
            return self.data[offset:offset + length]
        return b"x" * length

    def chunks(self, start: int, end: int) -> Iterable[bytes]:
        """The bytes of [start, end) in 16 KiB pieces — the unit chunk_delay_ms paces."""
        for offset in range(start, end, CHUNK):
            yield self.chunk(offset, min(CHUNK, end - offset))


@dataclasses.dataclass(frozen=True)
class Step:
    """One scripted answer. Field meanings are in tests/server/README.md."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: str | None = None
    body_size: int | None = None
    delay_ms: int = 0
    body_delay_ms: int = 0
    chunk_delay_ms: int = 0
    hang: bool = False
    reset: str | None = None
    close: bool = False
    refuse_stream: bool = False
    http1_required: bool = False
    goaway_unprocessed: bool = False
    kill_after_request: bool = False
    duplicate_content_length: bool = False
    gzip_bomb: int | None = None
    load_knee: int = 0
    load_ms_per_call: int = 0

    @staticmethod
    def parse(raw: Any) -> Step:
        """Validates one step of a script; unknown keys and wrong types are refused."""
        if not isinstance(raw, dict):
            raise StepError(f"a step must be an object, got {raw!r}")
        known = {f.name for f in dataclasses.fields(Step)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise StepError(f"unknown step field(s) {unknown}; known: {sorted(known)}")
        values = dict(raw)
        values["headers"] = _parse_headers(raw.get("headers", []))
        step = Step(**values)
        step._check()
        return step

    def _check(self) -> None:
        """Rejects values the protocol writers could not honour."""
        if not isinstance(self.status, int) or isinstance(self.status, bool) or not 200 <= self.status <= 599:
            raise StepError(f"status must be an integer in 200..599, got {self.status!r}")
        for name in ("delay_ms", "body_delay_ms", "chunk_delay_ms", "load_knee", "load_ms_per_call"):
            _check_count(name, getattr(self, name))
        for name in ("body_size", "gzip_bomb"):
            if getattr(self, name) is not None:
                _check_count(name, getattr(self, name))
        for name in ("hang", "close", "refuse_stream", "http1_required", "goaway_unprocessed",
                     "kill_after_request", "duplicate_content_length"):
            if not isinstance(getattr(self, name), bool):
                raise StepError(f"{name} must be a boolean")
        if self.body is not None and not isinstance(self.body, str):
            raise StepError("body must be a string (use body_size for a sized body)")
        if sum(x is not None for x in (self.body, self.body_size, self.gzip_bomb)) > 1:
            raise StepError("body, body_size and gzip_bomb are exclusive")
        if self.reset is not None and self.reset not in RESETS:
            raise StepError(f"reset must be one of {list(RESETS)}, got {self.reset!r}")


def _check_count(name: str, value: Any) -> None:
    """Durations and sizes are non-negative integers."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise StepError(f"{name} must be a non-negative integer, got {value!r}")


def _parse_headers(raw: Any) -> tuple[tuple[str, str], ...]:
    """Headers are [[name, value], ...] (ordered, repeatable) or, for convenience, an object.

    The object form exists because nlohmann::json turns {{"Retry-After", "2"}} into an object.
    """
    if isinstance(raw, dict):
        raw = [[name, value] for name, value in raw.items()]
    if not isinstance(raw, list):
        raise StepError("headers must be a list of [name, value] pairs or an object")
    pairs = []
    for pair in raw:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(x, str) for x in pair)):
            raise StepError(f"a header must be a [name, value] pair of strings, got {pair!r}")
        name, value = pair
        if not TOKEN.fullmatch(name) or any(c in value for c in "\r\n\0"):
            raise StepError(f"header {name!r}: {value!r} cannot be sent (bad name, or CR/LF/NUL in the value)")
        pairs.append((name, value))
    return tuple(pairs)


@dataclasses.dataclass
class Script:
    """The steps for one path and how far requests have consumed them."""

    steps: list[Step]
    repeat_last: bool
    next_index: int = 0

    def take(self) -> tuple[int, Step] | None:
        """The step this request consumes, with its index, or None for the default answer."""
        if self.next_index < len(self.steps):
            index = self.next_index
            self.next_index += 1
            return index, self.steps[index]
        if self.repeat_last and self.steps:
            return len(self.steps) - 1, self.steps[-1]
        return None


@dataclasses.dataclass
class Request:
    """A request as it reached the wire, what the control API records."""

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    authority: str
    body_size: int
    body_sha256: str
    protocol: str  # "1.1" or "2"
    tls: bool
    listener: str
    connection: int
    stream: int  # HTTP/2 stream id; HTTP/1.1: the request's 1-based index on its connection
    client_cert: str | None = None

    def record(self, step: int | None, killed: bool = False) -> dict[str, Any]:
        """The JSON form of GET /_control/requests."""
        return {
            "method": self.method, "path": self.path, "query": self.query,
            "headers": [[n, v] for n, v in self.headers], "authority": self.authority,
            "body_size": self.body_size, "body_sha256": self.body_sha256, "protocol": self.protocol,
            "tls": self.tls, "listener": self.listener, "connection": self.connection,
            "stream": self.stream, "client_cert": self.client_cert, "step": step, "killed": killed,
        }


class State:
    """Scripts and records shared by every listener: a test scripts a path once, whatever it dials."""

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.records: list[tuple[str, dict[str, Any]]] = []
        self._connection_ids = itertools.count(1)
        self.stats: Callable[[], dict[str, Any]] = lambda: {}
        self.in_delay: dict[str, int] = {}  # requests of a path waiting out their delay before the headers

    async def delay_headers(self, path: str, step: Step) -> None:
        """A step's wait before the headers: delay_ms, plus load_ms_per_call for each request of the path (this one
        included) waiting before its headers beyond load_knee — a dependency whose latency rises with its load."""
        waiting = self.in_delay.get(path, 0) + 1
        self.in_delay[path] = waiting
        try:
            await _sleep_ms(step.delay_ms + step.load_ms_per_call * max(0, waiting - step.load_knee))
        finally:
            self.in_delay[path] -= 1

    def new_connection_id(self) -> int:
        """Connection ids let tests see reuse and multiplexing."""
        return next(self._connection_ids)

    def take_step(self, request: Request) -> tuple[Step | None, int | None]:
        """Records the request and returns the step it consumes (None: the default echo)."""
        script = self.scripts.get(request.path)
        taken = script.take() if script else None
        index, step = taken if taken else (None, None)
        self.records.append((request.path, request.record(index)))
        log(f"{request.listener} {request.protocol} {request.method} {request.path} -> step {index}")
        return step, index

    def record_killed(self, request: Request) -> None:
        """A request the kill_after_request trap swallowed: it reached the wire, so it is counted."""
        self.records.append((request.path, request.record(None, killed=True)))

    def control(self, method: str, path: str, query: str, body: bytes) -> tuple[int, Any]:
        """The control API: POST script, GET requests, GET stats, POST reset. Returns (status, JSON)."""
        name = path[len(CONTROL_PREFIX):]
        try:
            if name == "script" and method == "POST":
                return self._control_script(body)
            if name == "requests" and method == "GET":
                wanted = urllib.parse.parse_qs(query).get("path", [None])[0]
                return 200, [r for p, r in self.records if wanted is None or p == wanted]
            if name == "stats" and method == "GET":
                return 200, self.stats()
            if name == "reset" and method == "POST":
                self.scripts.clear()
                self.records.clear()
                return 200, {"ok": True}
        except StepError as error:
            return 400, {"error": str(error)}
        return 404, {"error": f"no control endpoint {method} {path}"}

    def _control_script(self, body: bytes) -> tuple[int, Any]:
        """POST /_control/script {"path", "steps", "repeat_last"}: replaces the path's script."""
        try:
            raw = json.loads(body or b"null")
        except json.JSONDecodeError as error:
            raise StepError(f"script body is not JSON: {error}") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"].startswith("/"):
            raise StepError('a script is {"path": "/x", "steps": [...], "repeat_last": true}')
        unknown = sorted(set(raw) - {"path", "steps", "repeat_last"})
        if unknown:
            raise StepError(f"unknown script field(s) {unknown}")
        steps = raw.get("steps", [])
        repeat_last = raw.get("repeat_last", True)
        if not isinstance(steps, list) or not isinstance(repeat_last, bool):
            raise StepError("steps must be a list and repeat_last a boolean")
        self.scripts[raw["path"]] = Script([Step.parse(s) for s in steps], repeat_last)
        return 200, {"ok": True, "path": raw["path"], "steps": len(steps)}


# --------------------------------------------------------------------------------------------------------
# Responses common to both protocols
# --------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Reply:
    """What to send: status, headers and body, before the protocol writer applies the step's faults."""

    status: int
    headers: list[tuple[str, str]]
    body: Body


def _json_reply(status: int, value: Any) -> Reply:
    data = json.dumps(value).encode()
    return Reply(status, [("content-type", "application/json"), ("content-length", str(len(data)))],
                 Body(len(data), data))


def _echo(request: Request) -> Reply:
    """The default answer: the request as the server saw it, so tests check what the client sent."""
    return _json_reply(200, {
        "method": request.method, "path": request.path, "query": request.query,
        "headers": [[n, v] for n, v in request.headers], "body_size": request.body_size,
        "protocol": request.protocol,
    })


@functools.lru_cache(maxsize=4)
def _gzip_bomb(expanded: int) -> bytes:
    """A gzip stream of `expanded` zero bytes (~1000:1), compressed once per size."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = []
    for offset in range(0, expanded, len(block)):
        parts.append(compressor.compress(block[:min(len(block), expanded - offset)]))
    parts.append(compressor.flush())
    return b"".join(parts)


def body_allowed(method: str, status: int) -> bool:
    """HEAD answers and 204/304 carry no body (RFC 9110 §6.4.1)."""
    return method != "HEAD" and status not in (204, 304)


async def build_reply(step: Step | None, request: Request) -> Reply:
    """The reply a step describes; Content-Length is added unless the step frames the body itself."""
    if step is None:
        reply = _echo(request)
        if request.method == "HEAD":
            reply.body = Body(0, b"")
        return reply
    headers = list(step.headers)
    if step.gzip_bomb is not None:
        data = await asyncio.to_thread(_gzip_bomb, step.gzip_bomb)
        body = Body(len(data), data)
        headers.append(("Content-Encoding", "gzip"))
    elif step.body is not None:
        data = step.body.encode()
        body = Body(len(data), data)
    else:
        body = Body(step.body_size or 0)
    framed = any(n.lower() in ("content-length", "transfer-encoding") for n, _ in headers)
    if step.status not in (204, 304) and not framed and not step.duplicate_content_length:
        headers.append(("Content-Length", str(body.size)))
    if not body_allowed(request.method, step.status):
        body = Body(0, b"")
    return Reply(step.status, headers, body)


def control_reply(state: State, request: Request, body: bytes) -> Reply:
    """Answers a /_control/ request; control traffic is never recorded nor scripted."""
    status, value = state.control(request.method, request.path, request.query, body)
    return _json_reply(status, value)


def split_target(target: str) -> tuple[str, str]:
    """Splits a request target into path and raw query (no percent-decoding: scripts match raw paths)."""
    path, _, query = target.partition("?")
    return path or "/", query


def _header_text(value: bytes) -> str:
    """Latin-1 maps every byte to one character, so odd header bytes survive into the records."""
    return value.decode("latin-1")


def _client_cert_name(writer_or_transport: Any) -> str | None:
    """The CN of a verified client certificate (mTLS listener), for the records."""
    peer = writer_or_transport.get_extra_info("peercert")
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


async def _sleep_ms(ms: int) -> None:
    if ms:
        await asyncio.sleep(ms / 1000)


# --------------------------------------------------------------------------------------------------------
# Connections
# --------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class ConnectionInfo:
    """What every request on one accepted connection shares."""

    listener: str
    tls: bool
    id: int
    client_cert: str | None


def _unsent_bytes(sock: Any) -> int:
    """Bytes the kernel has not had acknowledged yet (Linux SIOCOUTQ)."""
    try:
        buffer = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, struct.pack("i", 0))
        return int(struct.unpack("i", buffer)[0])
    except OSError:
        return 0


def _transport_backlog(transport: asyncio.BaseTransport) -> int:
    """Bytes still queued in asyncio, including under a TLS transport (asyncio keeps that one private)."""
    total = transport.get_write_buffer_size() if isinstance(transport, asyncio.WriteTransport) else 0
    inner = getattr(getattr(transport, "_ssl_protocol", None), "_transport", None)
    if isinstance(inner, asyncio.WriteTransport):
        total += inner.get_write_buffer_size()
    return total


async def abortive_close(writer: asyncio.StreamWriter) -> None:
    """Closes with an RST (SO_LINGER 0) once what was written has reached the peer.

    An RST discards unacknowledged data, so the wait is what makes "after_headers" mean the client really
    got the headers before the reset.
    """
    loop = asyncio.get_running_loop()
    sock = writer.get_extra_info("socket")
    deadline = loop.time() + 1.0
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
    while loop.time() < deadline and (_transport_backlog(writer.transport) or (sock and _unsent_bytes(sock))):
        await asyncio.sleep(0.005)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def graceful_close(writer: asyncio.StreamWriter) -> None:
    """Closes after flushing (TLS close_notify, then FIN); never waits long on a peer that does not care."""
    with contextlib.suppress(ConnectionError, OSError):
        await asyncio.wait_for(writer.drain(), 2)
    writer.close()
    with contextlib.suppress(ConnectionError, OSError, asyncio.TimeoutError, ssl.SSLError):
        await asyncio.wait_for(writer.wait_closed(), 2)


async def wait_for_peer_to_leave(reader: asyncio.StreamReader) -> None:
    """`hang`: holds the connection, discarding input, until the client closes it."""
    with contextlib.suppress(ConnectionError, OSError, ssl.SSLError):
        while await reader.read(READ_SIZE):
            pass


class Http1Connection:
    """Serves HTTP/1.1 on one connection with h11, applying each request's step."""

    def __init__(self, state: State, info: ConnectionInfo, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.state = state
        self.info = info
        self.reader = reader
        self.writer = writer
        self.conn = h11.Connection(h11.SERVER)
        self.requests_seen = 0
        self.kill_next = False

    async def run(self) -> None:
        """Answers requests until either side closes, or a step ends the connection."""
        while True:
            try:
                received = await self._read_request()
            except h11.RemoteProtocolError as error:
                await self._bad_request(str(error))
                return
            if received is None:
                return
            request, body = received
            if not await self._answer(request, body):
                return
            if self.conn.our_state is h11.MUST_CLOSE:
                await graceful_close(self.writer)
                return
            self.conn.start_next_cycle()

    async def _send(self, event: h11.Event) -> None:
        self.writer.write(self.conn.send(event) or b"")
        await self.writer.drain()

    async def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """The next h11 event, reading from the socket as needed."""
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self.conn.they_are_waiting_for_100_continue:
                await self._send(h11.InformationalResponse(status_code=100, headers=[]))
            data = await self.reader.read(READ_SIZE)
            self.conn.receive_data(data)

    async def _read_request(self) -> tuple[Request, bytes] | None:
        """Reads one whole request; returns None when the client closed the connection."""
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
        assert isinstance(event, h11.Request)
        self.requests_seen += 1
        digest = hashlib.sha256()
        size = 0
        keep = event.target.startswith(CONTROL_PREFIX.encode())
        kept = bytearray()
        while True:
            part = await self._next_event()
            if isinstance(part, h11.Data):
                digest.update(part.data)
                size += len(part.data)
                if keep:
                    kept += part.data
            elif isinstance(part, h11.EndOfMessage):
                break
            elif isinstance(part, h11.ConnectionClosed):
                return None
        path, query = split_target(_header_text(event.target))
        headers = [(_header_text(n), _header_text(v)) for n, v in event.headers]
        authority = next((v for n, v in headers if n == "host"), "")
        request = Request(event.method.decode(), path, query, headers, authority, size, digest.hexdigest(),
                          "1.1", self.info.tls, self.info.listener, self.info.id, self.requests_seen,
                          self.info.client_cert)
        return request, bytes(kept)

    async def _bad_request(self, message: str) -> None:
        """A malformed request gets a 400 when h11 can still send one, then the connection closes."""
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            with contextlib.suppress(h11.LocalProtocolError, ConnectionError, OSError):
                data = message.encode()
                await self._send(h11.Response(status_code=400, headers=[
                    ("content-length", str(len(data))), ("connection", "close")]))
                await self._send(h11.Data(data=data))
                await self._send(h11.EndOfMessage())
        await graceful_close(self.writer)

    async def _answer(self, request: Request, body: bytes) -> bool:
        """Answers one request; False when the connection is finished."""
        if request.path.startswith(CONTROL_PREFIX):
            await self._send_reply(control_reply(self.state, request, body), None)
            return True
        if self.kill_next:
            # docs/libcurl-traps.md §19: the keep-alive connection dies after the request was written, never answering.
            self.state.record_killed(request)
            await graceful_close(self.writer)
            return False
        step, _ = self.state.take_step(request)
        reply = await build_reply(step, request)
        if step is None:
            await self._send_reply(reply, None)
            return True
        return await self._perform(step, reply, request.path)

    async def _perform(self, step: Step, reply: Reply, path: str) -> bool:
        """Sends REPLY with the step's timing and faults; False when the connection is finished."""
        if step.hang:
            await wait_for_peer_to_leave(self.reader)
            return False
        await self.state.delay_headers(path, step)
        if step.reset == "before_headers":
            await abortive_close(self.writer)
            return False
        if step.duplicate_content_length:
            await self._send_duplicate_length(reply)
            return False
        if step.close:
            reply.headers.append(("Connection", "close"))
        self.kill_next = step.kill_after_request
        return await self._send_reply(reply, step)

    async def _send_reply(self, reply: Reply, step: Step | None) -> bool:
        """Headers, then the body in 16 KiB chunks, honouring the step's delays and resets."""
        await self._send(h11.Response(status_code=reply.status, headers=reply.headers,
                                      reason=_reason(reply.status).encode()))
        if step and step.reset == "after_headers":
            await abortive_close(self.writer)
            return False
        await _sleep_ms(step.body_delay_ms if step else 0)
        end = reply.body.size // 2 if step and step.reset == "mid_body" else reply.body.size
        for index, chunk in enumerate(reply.body.chunks(0, end)):
            if index and step:
                await _sleep_ms(step.chunk_delay_ms)
            await self._send(h11.Data(data=chunk))
        if step and step.reset == "mid_body":
            await abortive_close(self.writer)
            return False
        await self._send(h11.EndOfMessage())
        return True

    async def _send_duplicate_length(self, reply: Reply) -> None:
        """Two differing Content-Length headers (h11 refuses to, so the bytes are written by hand).

        The true length comes second: a client that keeps the last value reads the body without error,
        which is the silent acceptance docs/libcurl-traps.md §19 wants the client under test to refuse.
        """
        status_line = f"HTTP/1.1 {reply.status} {_reason(reply.status)}\r\n"
        lines = [f"{n}: {v}\r\n" for n, v in reply.headers]
        lines.append(f"Content-Length: {reply.body.size + 7}\r\n")
        lines.append(f"Content-Length: {reply.body.size}\r\n")
        self.writer.write((status_line + "".join(lines) + "\r\n").encode("latin-1"))
        for chunk in reply.body.chunks(0, reply.body.size):
            self.writer.write(chunk)
        await graceful_close(self.writer)


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


@dataclasses.dataclass
class Http2Stream:
    """A request being received on one HTTP/2 stream."""

    headers: list[tuple[str, str]]
    digest: Any = dataclasses.field(default_factory=hashlib.sha256)
    size: int = 0
    kept: bytearray = dataclasses.field(default_factory=bytearray)


class Http2Connection:
    """Serves HTTP/2 on one connection with h2: every stream's step runs in its own task."""

    def __init__(self, state: State, info: ConnectionInfo, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.state = state
        self.info = info
        self.reader = reader
        self.writer = writer
        config = h2.config.H2Configuration(client_side=False, header_encoding=None,
                                           validate_outbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        self.streams: dict[int, Http2Stream] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.window_waiters: list[asyncio.Future[None]] = []
        self.finished = False

    async def run(self) -> None:
        """Reads frames until the peer or a step ends the connection; then ends every stream task."""
        self.conn.initiate_connection()
        self._flush()
        try:
            while not self.finished:
                data = await self.reader.read(READ_SIZE)
                if not data:
                    break
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError as error:
                    log(f"h2 protocol error: {error}")
                    self._flush()
                    break
                for event in events:
                    self._dispatch(event)
                self._flush()
        finally:
            self.finished = True
            self._wake_window_waiters()
            tasks = list(self.tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await graceful_close(self.writer)

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def _dispatch(self, event: h2.events.Event) -> None:
        """Feeds h2 events into per-stream state; a finished request starts its stream task."""
        if isinstance(event, h2.events.RequestReceived):
            headers = [(_header_text(n), _header_text(v)) for n, v in event.headers]
            self.streams[event.stream_id] = Http2Stream(headers)
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream:
                stream.digest.update(event.data)
                stream.size += len(event.data)
                if self._pseudo(stream.headers, ":path").startswith(CONTROL_PREFIX):
                    stream.kept += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            if event.stream_id in self.streams:
                self._start_stream_task(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.streams.pop(event.stream_id, None)
            running = self.tasks.get(event.stream_id)
            if running:
                running.cancel()
            self._wake_window_waiters()
        elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
            self._wake_window_waiters()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.finished = True

    def _start_stream_task(self, stream_id: int) -> None:
        """Serves a complete request in its own task, so a slow stream never holds up the others."""
        task = asyncio.create_task(self._serve_stream(stream_id))
        self.tasks[stream_id] = task

        def forget(_: asyncio.Task[None]) -> None:
            self.tasks.pop(stream_id, None)

        task.add_done_callback(forget)

    @staticmethod
    def _pseudo(headers: list[tuple[str, str]], name: str) -> str:
        return next((v for n, v in headers if n == name), "")

    def _request(self, stream_id: int, stream: Http2Stream) -> Request:
        path, query = split_target(self._pseudo(stream.headers, ":path"))
        regular = [(n, v) for n, v in stream.headers if not n.startswith(":")]
        return Request(self._pseudo(stream.headers, ":method"), path, query, regular,
                       self._pseudo(stream.headers, ":authority"), stream.size, stream.digest.hexdigest(), "2",
                       self.info.tls, self.info.listener, self.info.id, stream_id, self.info.client_cert)

    async def _serve_stream(self, stream_id: int) -> None:
        """Answers one stream; a reset by the peer cancels it, anything h2 refuses ends it quietly."""
        stream = self.streams.pop(stream_id)
        request = self._request(stream_id, stream)
        try:
            if request.path.startswith(CONTROL_PREFIX):
                await self._send_reply(stream_id, control_reply(self.state, request, bytes(stream.kept)), None)
                return
            step, _ = self.state.take_step(request)
            reply = await build_reply(step, request)
            await self._perform(stream_id, step, reply, request.path)
        except (h2.exceptions.ProtocolError, ConnectionError, OSError) as error:
            log(f"stream {stream_id} ended early: {error!r}")
        except Exception as error:  # a server bug: say so, and end only this stream
            print(f"humus_test_server: stream {stream_id} failed: {error!r}", file=sys.stderr, flush=True)
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self._reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)

    async def _perform(self, stream_id: int, step: Step | None, reply: Reply, path: str) -> None:
        """Applies a step's HTTP/2 faults around the reply."""
        if step is None:
            await self._send_reply(stream_id, reply, None)
            return
        if step.refuse_stream:
            self._reset(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        if step.http1_required:
            self._reset(stream_id, h2.errors.ErrorCodes.HTTP_1_1_REQUIRED)
            return
        if step.goaway_unprocessed:
            # The stream is declared unprocessed: the peer may safely resend it, whatever its method.
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR,
                                       last_stream_id=max(0, stream_id - 2))
            await self._finish_connection()
            return
        if step.hang:
            return  # the stream stays open until the client resets it or goes away
        await self.state.delay_headers(path, step)
        if step.reset == "before_headers":
            self._reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return
        if step.duplicate_content_length:
            reply.headers += [("content-length", str(reply.body.size + 7)),
                              ("content-length", str(reply.body.size))]
        completed = await self._send_reply(stream_id, reply, step)
        if completed and step.close:
            self.conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR)
            await self._finish_connection()

    def _reset(self, stream_id: int, code: h2.errors.ErrorCodes) -> None:
        self.conn.reset_stream(stream_id, error_code=code)
        self._flush()

    async def _finish_connection(self) -> None:
        """After our GOAWAY: flush it and close, which ends the read loop and the other streams."""
        self._flush()
        self.finished = True
        await graceful_close(self.writer)

    async def _send_reply(self, stream_id: int, reply: Reply, step: Step | None) -> bool:
        """Headers, then the body in 16 KiB chunks within flow control; False if a reset ended it."""
        headers = [(":status", str(reply.status))] + [(n.lower(), v) for n, v in reply.headers]
        empty = reply.body.size == 0 and not (step and step.reset)
        self.conn.send_headers(stream_id, [(n.encode(), v.encode("latin-1")) for n, v in headers],
                               end_stream=empty)
        self._flush()
        if empty:
            return True
        if step and step.reset == "after_headers":
            self._reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return False
        await _sleep_ms(step.body_delay_ms if step else 0)
        end = reply.body.size // 2 if step and step.reset == "mid_body" else reply.body.size
        for index, chunk in enumerate(reply.body.chunks(0, end)):
            if index and step:
                await _sleep_ms(step.chunk_delay_ms)
            await self._send_data(stream_id, chunk)
        if step and step.reset == "mid_body":
            self._reset(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
            return False
        self.conn.end_stream(stream_id)
        self._flush()
        return True

    async def _send_data(self, stream_id: int, data: bytes) -> None:
        """Sends DATA frames as the peer's flow-control windows allow."""
        sent = 0
        while sent < len(data):
            if self.finished:
                raise ConnectionError("connection finished")
            size = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size,
                       len(data) - sent)
            if size <= 0:
                await self._window_update()
                continue
            self.conn.send_data(stream_id, data[sent:sent + size])
            self._flush()
            sent += size
        await self.writer.drain()

    async def _window_update(self) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.window_waiters.append(future)
        await future

    def _wake_window_waiters(self) -> None:
        waiters, self.window_waiters = self.window_waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)


# --------------------------------------------------------------------------------------------------------
# Listeners
# --------------------------------------------------------------------------------------------------------

ALPN_BOTH = ["h2", "http/1.1"]
ALPN_H1 = ["http/1.1"]


@dataclasses.dataclass(frozen=True)
class ListenerSpec:
    """One listener: its name in the ready line and the TLS context it presents (None: plain text)."""

    name: str
    context: ssl.SSLContext | None


class AlertFlushingSSLObject(ssl.SSLObject):
    """Makes a failed server handshake send its TLS alert before the connection closes.

    asyncio drops the alert OpenSSL queued when a handshake fails (it aborts without flushing), so a client
    refused for lacking a certificate would see a bare EOF instead of the `certificate_required` alert a
    real server sends — the very symptom docs/libcurl-traps.md §19 asks the client to classify. Reporting the failure as
    "want read" makes asyncio flush the alert; the connection then ends when the client closes it or the
    handshake timeout passes.
    """

    _failure: ssl.SSLError | None = None

    def do_handshake(self) -> None:
        if self._failure is not None:
            raise ssl.SSLWantReadError("handshake already failed; waiting for the peer to leave")
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, ssl.SSLSyscallError):
            raise
        except ssl.SSLError as error:
            self._failure = error
            log(f"TLS handshake refused: {error}")
            raise ssl.SSLWantReadError("handshake failed; alert queued") from None


def _server_context(certs: Path, name: str, alpn: list[str], client_ca: bool = False) -> ssl.SSLContext:
    """A TLS server context presenting NAME.pem, optionally requiring a client certificate of the CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.sslobject_class = AlertFlushingSSLObject
    context.load_cert_chain(certs / f"{name}.pem", certs / f"{name}.key")
    context.set_alpn_protocols(alpn)
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(certs / "ca.pem")
    return context


def _legacy_context(context: ssl.SSLContext) -> ssl.SSLContext:
    """Limits CONTEXT to TLS 1.0–1.1, which OpenSSL 3 allows only at security level 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    return context


def _tls11_context(certs: Path) -> tuple[ssl.SSLContext | None, str | None]:
    """The TLS 1.1 listener's context, or a note why this OpenSSL cannot offer TLS 1.1."""
    try:
        server = _legacy_context(_server_context(certs, "server", ALPN_H1))
        client = _legacy_context(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE
        version = _handshake_in_memory(server, client)
    except (ssl.SSLError, ValueError, OSError) as error:
        return None, f"tls11 listener skipped: this OpenSSL refuses TLS 1.1 ({error})"
    if version != "TLSv1.1":
        return None, f"tls11 listener skipped: a TLS 1.1-only handshake negotiated {version}"
    return server, None


def _handshake_in_memory(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> str | None:
    """Runs a handshake over memory BIOs: the only honest test of what the local OpenSSL permits."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_side=False)
    done = {"server": False, "client": False}
    for _ in range(20):
        for name, end in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            return client.version()
    raise ssl.SSLError("in-memory handshake did not finish")


def listener_specs(certs: Path) -> tuple[list[ListenerSpec], list[str]]:
    """Every listener of the ready line, and notes about the ones this machine cannot offer."""
    specs = [
        ListenerSpec("http", None),
        ListenerSpec("https", _server_context(certs, "server", ALPN_BOTH)),
        ListenerSpec("https_h1", _server_context(certs, "server", ALPN_H1)),
        ListenerSpec("mtls", _server_context(certs, "server", ALPN_BOTH, client_ca=True)),
        ListenerSpec("cn_only", _server_context(certs, "cn_only", ALPN_BOTH)),
        ListenerSpec("untrusted", _server_context(certs, "untrusted", ALPN_BOTH)),
    ]
    notes = []
    tls11, note = _tls11_context(certs)
    if tls11 is not None:
        specs.append(ListenerSpec("tls11", tls11))
    if note:
        notes.append(note)
    return specs, notes


class Server:
    """All listeners and their connections; closing it cancels every connection task."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[asyncio.Task[Any]] = set()
        state.stats = self.stats

    def stats(self) -> dict[str, Any]:
        """Open connections and live tasks: lets a test prove that vanished clients leak nothing."""
        return {"connections": len(self.connections), "tasks": len(asyncio.all_tasks())}

    async def start(self, spec: ListenerSpec) -> int:
        """Binds one listener on 127.0.0.1 port 0 and returns the port the kernel chose."""
        handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] = (
            functools.partial(self._serve, spec))
        kwargs: dict[str, Any] = {}
        if spec.context is not None:
            kwargs = {"ssl": spec.context, "ssl_handshake_timeout": 5, "ssl_shutdown_timeout": 2}
        server = await asyncio.start_server(handler, "127.0.0.1", 0, limit=READ_SIZE, **kwargs)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, spec: ListenerSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serves one connection by the protocol ALPN chose; a client vanishing is never an error here."""
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ssl_object = writer.get_extra_info("ssl_object")
        info = ConnectionInfo(spec.name, ssl_object is not None, self.state.new_connection_id(),
                              _client_cert_name(writer))
        h2_chosen = ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2"
        log(f"{spec.name}: connection {info.id} ({'h2' if h2_chosen else 'http/1.1'})")
        connection = (Http2Connection if h2_chosen else Http1Connection)(self.state, info, reader, writer)
        try:
            await connection.run()
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError, h11.ProtocolError) as error:
            log(f"{spec.name}: connection {info.id} ended: {error!r}")
            writer.transport.abort()
        except asyncio.CancelledError:
            writer.transport.abort()
            raise
        except Exception as error:  # a server bug: say so, keep serving the other connections
            print(f"humus_test_server: connection {info.id} failed: {error!r}", file=sys.stderr, flush=True)
            writer.transport.abort()
        finally:
            self.connections.discard(task)

    async def close(self) -> None:
        """Stops accepting and ends every connection."""
        for server in self.servers:
            server.close()
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)


# --------------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------------

def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Stops the server at stdin EOF: the spawning test's pipe closes when it exits, even on a crash."""

    def wait_for_eof() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader aborts interpreter exit.
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        with contextlib.suppress(RuntimeError):  # the loop may already be gone after SIGTERM
            loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=wait_for_eof, name="stdin-eof", daemon=True).start()


def _quiet_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Clients that vanish mid-handshake are the point of these tests, not news worth printing."""
    error = context.get("exception")
    if isinstance(error, (ConnectionError, ssl.SSLError, OSError)) and not verbose:
        return
    loop.default_exception_handler(context)


async def serve(certs: Path, watch_stdin: bool) -> None:
    """Binds every listener, prints the ready line, and serves until told to stop."""
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_quiet_exception_handler)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    state = State()
    server = Server(state)
    specs, notes = listener_specs(certs)
    ready: dict[str, Any] = {"http": None, "https": None, "https_h1": None, "mtls": None, "cn_only": None,
                             "untrusted": None, "tls11": None}
    for spec in specs:
        ready[spec.name] = await server.start(spec)
    ready["certs"] = str(certs)
    ready["notes"] = notes
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    sys.stdout = sys.stderr  # nothing but the ready line may ever reach the harness's pipe
    if watch_stdin:
        _watch_stdin(loop, stop)
    await stop.wait()
    await server.close()


def main() -> None:
    global verbose
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--certs", required=True, type=Path, help="certificate directory (created if absent)")
    parser.add_argument("--ignore-stdin", action="store_true",
                        help="do not stop at stdin EOF (for running by hand with no stdin)")
    parser.add_argument("--verbose", action="store_true", help="log connections and requests to stderr")
    args = parser.parse_args()
    verbose = args.verbose
    certs = args.certs.resolve()
    ensure_certs(certs)
    asyncio.run(serve(certs, watch_stdin=not args.ignore_stdin))


if __name__ == "__main__":
    main()
