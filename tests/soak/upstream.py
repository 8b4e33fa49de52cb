"""A fault-scheduled loopback upstream for the soak, on raw sockets so that it can misbehave.

Run as a child process of soak.py: it listens on 127.0.0.1 (port 0) — HTTP/1.1 in the clear, or with
``--protocol h2`` HTTP/2 over TLS (upstream_h2.py, the certificates made in ``--certs`` as the test server makes
them) — prints ``port <n>`` on stdout, then
serves phases on a schedule measured from that moment — healthy, slow, a burst of faults, an outage, recovery
— until its stdin closes. It then writes its ledger (one JSON object per line) to ``--ledger`` and exits.

The ledger has one entry per request that reached the wire: the call id (``X-Request-ID``), the client
(``X-Soak-Client``), the method, whether it carried an Idempotency-Key, when it came, what was done with it,
when the status line went out, and how many requests of that client were in flight at the upstream when it
came. Times are ``time.monotonic()``, the system-wide CLOCK_MONOTONIC, so they compare with the soak's.

A request counts as in flight from its arrival until its answer was written, or its connection ended. A
connection the client closed while the upstream was not reading it (a hang, a stall) is noticed by peeking
every in-flight socket of that client before counting a new arrival: on loopback the FIN is queued before
close() returns, so a call that ended before the next one began is never counted twice.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Phases as shares of the soak's duration, in order; the outage's second half refuses connections.
PHASES = (("healthy", 0.15), ("slow", 0.15), ("burst", 0.30), ("outage", 0.15), ("recovery", 0.25))

# What a request gets during the burst, with weights.
BURST = (("ok", 26), ("reset", 8), ("close", 8), ("503", 14), ("429", 10), ("hang", 8), ("stall", 8),
         ("slow_ok", 12), ("late_bytes", 6))

HANG_MAX_S = 5.0  # a hang or a stall ends by itself after this, should the client never give up
BURST_NAMES = [name for name, _ in BURST]
BURST_WEIGHTS = [weight for _, weight in BURST]

# What a peer sends after a complete response (late_bytes): a whole second response that belongs to no
# request, so a client that reused the connection would take it for the next call's answer.
STALE = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Echo: stale\r\n\r\nstale"


@dataclass
class Phase:
    name: str
    start: float
    end: float


def schedule(t0: float, duration: float) -> list[Phase]:
    phases: list[Phase] = []
    t = t0
    for name, share in PHASES:
        length = duration * share
        if name == "outage":
            phases.append(Phase("outage_503", t, t + length / 2))
            phases.append(Phase("outage_refused", t + length / 2, t + length))
        else:
            phases.append(Phase(name, t, t + length))
        t += length
    return phases


class Upstream:
    def __init__(self, duration: float, seed: int, protocol: str = "http1", certs: Path | None = None) -> None:
        self.duration = duration
        self.protocol = protocol
        self.certs = certs
        self.rng = random.Random(seed)
        self.ledger: list[dict[str, object]] = []
        self.inflight: dict[str, dict[int, socket.socket]] = {}
        self.streams_inflight: dict[str, set[tuple[int, int]]] = {}
        self.max_inflight: dict[str, int] = {}
        self.connections: dict[int, asyncio.StreamWriter] = {}
        self.next_conn = 0
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self.phases: list[Phase] = []
        self.refused: list[float] = []  # when the listener really closed and listened again

    def phase(self, now: float) -> str:
        for p in self.phases:
            if p.start <= now < p.end:
                return p.name
        return "recovery"  # after the schedule: healthy until told to stop

    # --- in-flight accounting -------------------------------------------------------------------------------

    def _arrive(self, client: str, conn: int, sock: socket.socket) -> int:
        flights = self.inflight.setdefault(client, {})
        for other, s in list(flights.items()):
            if other != conn and _peer_gone(s):
                del flights[other]
        flights[conn] = sock
        count = len(flights)
        if count > self.max_inflight.get(client, 0):
            self.max_inflight[client] = count
        return count

    def _leave(self, client: str, conn: int) -> None:
        self.inflight.get(client, {}).pop(conn, None)

    # HTTP/2: a stream is in flight from its HEADERS until the upstream is done with it (answered, reset,
    # refused, its connection ended) or the client reset it. Streams of one client share connections.
    def new_conn(self) -> int:
        self.next_conn += 1
        return self.next_conn - 1

    def arrive(self, client: str, key: tuple[int, int]) -> int:
        flights = self.streams_inflight.setdefault(client, set())
        flights.add(key)
        count = len(flights)
        if count > self.max_inflight.get(client, 0):
            self.max_inflight[client] = count
        return count

    def leave(self, client: str, key: tuple[int, int]) -> None:
        self.streams_inflight.get(client, set()).discard(key)

    # --- serving --------------------------------------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.next_conn
        self.next_conn += 1
        self.connections[conn] = writer
        sock = writer.get_extra_info("socket")
        client = ""
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                now = time.monotonic()
                method, headers = _parse(head)
                length = int(headers.get("content-length", "0") or "0")
                if length:
                    try:
                        await reader.readexactly(length)
                    except (asyncio.IncompleteReadError, ConnectionError):
                        return
                client = headers.get("x-soak-client", "")
                phase = self.phase(now)
                action = self._action(phase)
                entry: dict[str, object] = {
                    "rid": headers.get("x-request-id", ""), "client": client, "method": method,
                    "idem": bool(headers.get("idempotency-key")), "t": now, "phase": phase, "action": action,
                    "status": None, "t_answer": None, "conn": conn,
                }
                entry["inflight"] = self._arrive(client, conn, sock)
                self.ledger.append(entry)
                keep = await self._act(action, entry, reader, writer, sock)
                self._leave(client, conn)
                if not keep:
                    return
        finally:
            self._leave(client, conn)
            self.connections.pop(conn, None)
            if not writer.is_closing():
                writer.close()

    def _action(self, phase: str) -> str:
        if phase == "slow":
            return "slow_ok"
        if phase == "burst":
            return self.rng.choices(BURST_NAMES, BURST_WEIGHTS)[0]
        if phase.startswith("outage"):
            return "503_close" if phase == "outage_refused" else "503"
        return "ok"

    async def _answer(self, entry: dict[str, object], writer: asyncio.StreamWriter, status: int, reason: str,
                      extra: str = "", body: bytes = b"", close: bool = False, late: bytes = b"") -> None:
        """Every answer echoes the call id (X-Echo), and a 200's body is that id: a response the client hands
        to another call is seen."""
        entry["status"] = status
        entry["t_answer"] = time.monotonic()
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nX-Echo: {entry['rid']}\r\n{extra}"
                f"{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n").encode()
        writer.write(head + body + late)
        await writer.drain()

    async def _act(self, action: str, entry: dict[str, object], reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter, sock: socket.socket) -> bool:
        """Does `action`; answers whether the connection stays open for the next request."""
        try:
            body = str(entry["rid"]).encode()
            if action == "ok":
                await self._answer(entry, writer, 200, "OK", body=body)
            elif action == "slow_ok":
                await asyncio.sleep(self.rng.uniform(0.02, 0.4))
                await self._answer(entry, writer, 200, "OK", body=body)
            elif action == "late_bytes":
                await self._answer(entry, writer, 200, "OK", body=body, late=STALE)
            elif action == "503":
                await self._answer(entry, writer, 503, "Service Unavailable")
            elif action == "503_close":  # a request on a connection opened before the listener closed
                await self._answer(entry, writer, 503, "Service Unavailable", close=True)
                return False
            elif action == "429":
                wait = self.rng.choice(("0", "1"))
                await self._answer(entry, writer, 429, "Too Many Requests", extra=f"Retry-After: {wait}\r\n")
            elif action == "reset":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return False
            elif action == "close":
                return False
            elif action == "hang":
                await _until_gone(reader)
                return False
            elif action == "stall":
                entry["status"] = 200
                entry["t_answer"] = time.monotonic()
                writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nX-Echo: {entry['rid']}\r\n\r\n".encode()
                             + body)
                await writer.drain()
                await _until_gone(reader)
                return False
        except ConnectionError:
            return False
        return True

    # --- the schedule ---------------------------------------------------------------------------------------

    async def listen(self) -> None:
        if self.protocol == "h2":
            import upstream_h2
            assert self.certs is not None
            self.server = await asyncio.start_server(upstream_h2.handler(self), "127.0.0.1", self.port,
                                                     reuse_address=True, ssl=upstream_h2.server_context(self.certs))
        else:
            self.server = await asyncio.start_server(self.handle, "127.0.0.1", self.port, reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]

    async def run(self, stop: asyncio.Event) -> None:
        await self.listen()
        t0 = time.monotonic()
        self.phases = schedule(t0, self.duration)
        print(f"port {self.port}", flush=True)
        refused = next(p for p in self.phases if p.name == "outage_refused")
        await _sleep_until(refused.start, stop)
        if not stop.is_set():
            # Refuse: no listener, and the idle keep-alive connections closed so that the next call dials.
            assert self.server is not None
            self.refused.append(time.monotonic())
            self.server.close()
            for w in list(self.connections.values()):
                w.close()
            await _sleep_until(refused.end, stop)
            await self.listen()  # the same port, SO_REUSEADDR
            # Some milliseconds after the scheduled end (more on a loaded machine): dials in between were refused.
            self.refused.append(time.monotonic())
        await stop.wait()
        assert self.server is not None
        self.server.close()
        for w in list(self.connections.values()):
            w.close()
        await asyncio.sleep(0.05)

    def header(self) -> dict[str, object]:
        return {"phases": [[p.name, p.start, p.end] for p in self.phases], "refused": self.refused,
                "max_inflight": self.max_inflight, "requests": len(self.ledger), "protocol": self.protocol}


def _peer_gone(sock: socket.socket) -> bool:
    """Whether the peer closed or reset the connection, without reading from it."""
    fd = sock.fileno()
    if fd < 0:
        return True
    # asyncio's TransportSocket has no recv(): borrow the fd, and give it back without closing it.
    borrowed = socket.socket(fileno=fd)
    try:
        return borrowed.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        borrowed.detach()


async def _until_gone(reader: asyncio.StreamReader) -> None:
    try:
        await asyncio.wait_for(reader.read(), HANG_MAX_S)
    except (asyncio.TimeoutError, ConnectionError):
        pass


async def _sleep_until(when: float, stop: asyncio.Event) -> None:
    try:
        await asyncio.wait_for(stop.wait(), max(0.0, when - time.monotonic()))
    except asyncio.TimeoutError:
        pass


def _parse(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method = lines[0].split(" ", 1)[0]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return method, headers


async def main_async(args: argparse.Namespace) -> Upstream:
    upstream = Upstream(args.duration, args.seed, args.protocol, args.certs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # stdin closing (the soak done, or gone) stops the upstream.
    stdin = sys.stdin.fileno()
    loop.add_reader(stdin, lambda: stop.set() if not os.read(stdin, 4096) else None)
    await upstream.run(stop)
    return upstream


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, required=True, help="seconds of the whole schedule")
    parser.add_argument("--ledger", required=True, help="where to write the ledger (JSON lines)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--protocol", choices=("http1", "h2"), default="http1",
                        help="h2: HTTP/2 over TLS (ALPN h2), with HTTP/2's own faults (upstream_h2.py)")
    parser.add_argument("--certs", type=Path, help="h2: where the test certificates are (made if missing)")
    args = parser.parse_args()
    if args.protocol == "h2":
        if args.certs is None:
            parser.error("--protocol h2 needs --certs")
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
        from humus_test_server import ensure_certs  # type: ignore[import-not-found]  # the test server's (IP:127.0.0.1)
        ensure_certs(args.certs)
    upstream = asyncio.run(main_async(args))
    with open(args.ledger, "w", encoding="utf-8") as out:
        out.write(json.dumps(upstream.header()) + "\n")
        for entry in upstream.ledger:
            out.write(json.dumps(entry) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
