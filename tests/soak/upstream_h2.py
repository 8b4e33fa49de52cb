"""The soak upstream's HTTP/2 side (``upstream.py --protocol h2``): TLS with ALPN ``h2`` only, served with the
``h2`` library, with raw frames written by hand where ``h2`` would refuse to send them.

Besides the HTTP-level faults (503, 429, slow, hang, a stall mid-body, RST_STREAM INTERNAL_ERROR), the burst
injects what only HTTP/2 has: connection errors after a request was read (a connection-level protocol violation;
the TCP connection cut with streams open, without GOAWAY or TLS close_notify), GOAWAYs (below some open streams,
and covering them) and refused streams (RST_STREAM REFUSED_STREAM).

The ledger has one entry per stream whose request head the upstream read — the request reached the wire, so
the client counted an attempt for it — made when the HEADERS arrive. A stream the upstream left unprocessed
and said so (RST_STREAM REFUSED_STREAM, or a stream above a GOAWAY's last_stream_id, whether it was open when
the GOAWAY went or came after it) is marked ``refused``: RFC 9113 §8.7 lets any request be sent again then,
an unkeyed POST too, so it counts as an attempt but not as the POST's one processing. The upstream never
answers a refused stream, nor refuses a stream it began to answer.
"""
from __future__ import annotations

import asyncio
import random
import socket
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame

# What a stream gets during the burst, with weights: the HTTP-level faults, then HTTP/2's own.
BURST_H2 = (("ok", 30), ("slow_ok", 10), ("503", 10), ("429", 7), ("hang", 5), ("stall", 5), ("rst_stream", 6),
            ("refused", 8), ("goaway_below", 4), ("goaway_cover", 4), ("conn_error", 4), ("cut", 4))
BURST_H2_NAMES = [name for name, _ in BURST_H2]
BURST_H2_WEIGHTS = [weight for _, weight in BURST_H2]

# Connection-level violations (RFC 9113 §5.4.1), one drawn per conn_error: each makes a correct client end the
# whole connection, its open streams with it, none of them refused.
VIOLATIONS = ("data_on_stream_0", "bad_initial_window", "push_promise", "oversized_frame", "http1_bytes")


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    """One HTTP/2 frame, whatever its content (RFC 9113 §4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream) + payload


def violation(name: str, stream: int) -> bytes:
    if name == "data_on_stream_0":
        return frame(0x0, 0x1, 0, b"x")
    if name == "bad_initial_window":  # SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1: FLOW_CONTROL_ERROR
        return frame(0x4, 0x0, 0, struct.pack(">HI", 0x4, 1 << 31))
    if name == "push_promise":  # the client disabled push (SETTINGS_ENABLE_PUSH 0): PROTOCOL_ERROR
        return frame(0x5, 0x4, stream, struct.pack(">I", 2) + b"\x82\x87\x84")
    if name == "oversized_frame":  # over the client's SETTINGS_MAX_FRAME_SIZE (16,384): FRAME_SIZE_ERROR
        return frame(0x0, 0x0, stream, b"x" * 16_385)
    return b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"  # read as a frame header of 4.7 MB


class Ledger(Protocol):
    """What upstream.Upstream lends this side: the schedule, the ledger and the in-flight accounting."""

    rng: random.Random
    ledger: list[dict[str, object]]
    connections: dict[int, Any]

    def phase(self, now: float) -> str: ...
    def arrive(self, client: str, key: tuple[int, int]) -> int: ...
    def leave(self, client: str, key: tuple[int, int]) -> None: ...
    def new_conn(self) -> int: ...


@dataclass
class Stream:
    sid: int
    entry: dict[str, object]
    client: str
    action: str
    nth: int
    ended: bool = False        # the request's END_STREAM came
    answering: bool = False    # a response frame went out: it can no longer be refused
    done: bool = False         # no more frames from the upstream on it (answered, reset, refused, dead)
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # the client reset it or the connection ended
    task: asyncio.Task[None] | None = None


HANG_MAX_S = 5.0


def server_context(certs: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "server.pem", certs / "server.key")
    context.set_alpn_protocols(["h2"])
    return context


class H2Connection:
    """One client connection: a reader feeding h2, and a task per stream doing its action."""

    def __init__(self, up: Ledger, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.up = up
        self.reader = reader
        self.writer = writer
        self.sock: socket.socket = writer.get_extra_info("socket")
        self.id = up.new_conn()
        config = h2.config.H2Configuration(client_side=False, header_encoding=None, validate_inbound_headers=False)
        self.h2 = h2.connection.H2Connection(config)
        self.streams: dict[int, Stream] = {}
        self.seen = 0                 # streams read on this connection
        self.goaway: int | None = None  # the last_stream_id of the GOAWAY sent, once sent
        self.dead = False             # a violation or a reset went out, or the client left: nothing more is sent

    # --- writing ------------------------------------------------------------------------------------------

    def flush(self) -> None:
        if self.dead:
            return
        data = self.h2.data_to_send()
        if data:
            self.writer.write(data)

    def raw(self, data: bytes) -> None:
        """Frames h2 would not send: after what h2 has queued, so that the order on the wire is kept."""
        self.flush()
        if not self.dead:
            self.writer.write(data)

    def finish(self, s: Stream) -> None:
        """The upstream is done with the stream: it is no longer in flight."""
        if not s.done:
            s.done = True
            s.entry["t_done"] = time.monotonic()
            self.up.leave(s.client, (self.id, s.sid))

    def answer(self, s: Stream, status: int, extra: tuple[tuple[bytes, bytes], ...] = (), body: bytes = b"") -> None:
        """Every answer echoes the call id (x-echo), and a 200's body is that id, as over HTTP/1.1."""
        if s.done or self.dead:
            return
        s.answering = True
        s.entry["status"] = status
        s.entry["t_answer"] = time.monotonic()
        headers = [(b":status", str(status).encode()), (b"content-length", str(len(body)).encode()),
                   (b"x-echo", str(s.entry["rid"]).encode()), *extra]
        try:
            self.h2.send_headers(s.sid, headers, end_stream=not body)
            if body:
                self.h2.send_data(s.sid, body, end_stream=True)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, h2.exceptions.FlowControlError):
            pass  # the client reset it meanwhile
        self.flush()
        self.finish(s)

    def refuse(self, s: Stream, how: str) -> None:
        """Left unprocessed, and said so: RST_STREAM REFUSED_STREAM, or above the GOAWAY's last_stream_id."""
        assert not s.answering
        s.entry["refused"] = True
        s.entry["refused_by"] = how
        if how == "refused":
            try:
                self.h2.reset_stream(s.sid, h2.errors.ErrorCodes.REFUSED_STREAM)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                pass
            self.flush()
        if s.task is not None and s.task is not asyncio.current_task():
            s.task.cancel()
        self.finish(s)

    def send_goaway(self, last: int) -> None:
        """GOAWAY(NO_ERROR, last): open streams above `last` were not processed (none began an answer). The
        streams up to `last` are served; the connection stays open until the client closes it, so that a
        stream it sent before it read the GOAWAY is read (and refused) rather than lost unread."""
        if self.goaway is not None:
            last = min(last, self.goaway)  # a second GOAWAY may not raise the first one's last_stream_id
        self.goaway = last
        self.raw(GoAwayFrame(0, last_stream_id=last, error_code=0).serialize())
        for other in list(self.streams.values()):
            if other.sid > last and not other.done:
                self.refuse(other, "goaway")

    def kill(self, how: str, stream: int) -> None:
        """A connection error after a request was read: a protocol violation, or the TCP connection cut (a FIN
        with streams open, no GOAWAY, no TLS close_notify). Every open stream ends with the connection, none
        refused (the peer never said they were unprocessed). The upstream goes on reading until the client
        leaves: a stream the client sent before it saw the end is on the wire, so it is in the ledger. (Not a
        TCP reset: it would throw away what the client wrote and the upstream had not read yet, requests that
        reached the wire and that no ledger could then count.)"""
        if self.dead:
            return
        if how == "cut":
            self.flush()
            self.dead = True
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        else:
            self.raw(violation(how, stream))
            self.dead = True  # the client ends the connection; the reader reads until it does
        for other in list(self.streams.values()):
            if other.task is not None and other.task is not asyncio.current_task():
                other.task.cancel()
            self.finish(other)

    # --- reading ------------------------------------------------------------------------------------------

    async def serve(self) -> None:
        self.up.connections[self.id] = self.writer
        try:
            self.h2.initiate_connection()
            self.flush()
            while True:
                try:
                    # Once it ended the connection (a violation, a cut, a GOAWAY), until the client leaves.
                    ending = self.dead or self.goaway is not None
                    data = await (asyncio.wait_for(self.reader.read(65536), HANG_MAX_S * 2) if ending
                                  else self.reader.read(65536))
                except (ConnectionError, ssl.SSLError, asyncio.TimeoutError, OSError):
                    return
                if not data:
                    return
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError:
                    self.flush()
                    return
                for event in events:
                    self.on_event(event)
                self.flush()
        finally:
            self.dead = True
            for s in list(self.streams.values()):
                s.gone.set()
                if s.task is not None:
                    s.task.cancel()
                self.finish(s)
            self.up.connections.pop(self.id, None)
            if not self.writer.is_closing():
                if self.dead:
                    self.writer.transport.abort()  # nothing more to say: no close_notify to a cut connection
                else:
                    self.writer.close()

    def on_event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.on_request(event.stream_id, event.headers or [])
            if event.stream_ended is not None:
                self.on_end(event.stream_id)
        elif isinstance(event, h2.events.DataReceived):
            if event.flow_controlled_length:
                try:
                    self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    pass
            if event.stream_ended is not None:
                self.on_end(event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.on_end(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            s = self.streams.get(event.stream_id)
            if s is not None:
                s.gone.set()
                if s.task is not None:
                    s.task.cancel()
                self.finish(s)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.dead = True

    def on_request(self, sid: int, raw: list[tuple[bytes, bytes]]) -> None:
        headers = {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in raw}
        now = time.monotonic()
        client = headers.get("x-soak-client", "")
        self.seen += 1
        after_goaway = self.goaway is not None and sid > self.goaway
        phase = self.up.phase(now)
        action = "after_goaway" if after_goaway else self.action(phase)
        entry: dict[str, object] = {
            "rid": headers.get("x-request-id", ""), "client": client, "method": headers.get(":method", ""),
            "idem": bool(headers.get("idempotency-key")), "t": now, "phase": phase, "action": action,
            "status": None, "t_answer": None, "conn": self.id, "stream": sid, "nth": self.seen, "refused": False,
        }
        s = Stream(sid, entry, client, action, self.seen)
        self.streams[sid] = s
        entry["inflight"] = self.up.arrive(client, (self.id, sid))
        self.up.ledger.append(entry)
        if self.dead and not after_goaway:
            # Sent before the client saw the violation or the cut: on the wire, never answered.
            entry["action"] = s.action = "after_error"
            self.finish(s)
        elif after_goaway:  # sent before the client read the GOAWAY: unprocessed, as the GOAWAY said
            self.refuse(s, "goaway")
        elif action == "refused":
            self.refuse(s, "refused")
        elif action == "goaway_below":
            # Below this stream and every stream not yet answered: they were not processed.
            began = [o.sid for o in self.streams.values() if o.answering and o.sid < sid]
            self.send_goaway(max(began, default=0))

    def on_end(self, sid: int) -> None:
        s = self.streams.get(sid)
        if s is None or s.ended or s.done or self.dead:
            return
        s.ended = True
        s.task = asyncio.get_running_loop().create_task(self.act(s))

    def action(self, phase: str) -> str:
        if phase == "slow":
            return "slow_ok"
        if phase == "burst":
            return self.up.rng.choices(BURST_H2_NAMES, BURST_H2_WEIGHTS)[0]
        if phase.startswith("outage"):
            return "503"
        return "ok"

    async def act(self, s: Stream) -> None:
        body = str(s.entry["rid"]).encode()
        try:
            if s.action in ("ok", "goaway_below", "after_goaway"):
                self.answer(s, 200, body=body)
            elif s.action == "slow_ok":
                await asyncio.sleep(self.up.rng.uniform(0.02, 0.4))
                self.answer(s, 200, body=body)
            elif s.action == "503":
                self.answer(s, 503)
            elif s.action == "429":
                self.answer(s, 429, extra=((b"retry-after", self.up.rng.choice((b"0", b"1"))),))
            elif s.action == "rst_stream":  # read and dropped: maybe processed, not refused
                s.answering = True
                try:
                    self.h2.reset_stream(s.sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    pass
                self.flush()
                self.finish(s)
            elif s.action == "goaway_cover":  # every stream read so far is covered, this one answered
                self.send_goaway(max(self.streams))
                self.answer(s, 200, body=body)
            elif s.action == "conn_error":
                s.entry["violation"] = how = self.up.rng.choice(VIOLATIONS)
                self.kill(how, s.sid)
            elif s.action == "cut":
                self.kill("cut", s.sid)
            elif s.action == "hang":
                await _wait(s.gone, HANG_MAX_S)
                self.finish(s)
            elif s.action == "stall":
                s.answering = True
                s.entry["status"] = 200
                s.entry["t_answer"] = time.monotonic()
                try:
                    self.h2.send_headers(s.sid, [(b":status", b"200"), (b"content-length", b"4096"),
                                                 (b"x-echo", body)])
                    self.h2.send_data(s.sid, body)
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    pass
                self.flush()
                await _wait(s.gone, HANG_MAX_S)
                self.finish(s)
        except asyncio.CancelledError:
            self.finish(s)


async def _wait(event: asyncio.Event, timeout: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except asyncio.TimeoutError:
        pass


def handler(up: Ledger) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await H2Connection(up, reader, writer).serve()
    return handle
