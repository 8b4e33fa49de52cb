#!/usr/bin/env python3
"""h2_hostile_peer.py — an HTTP/2 peer over TLS that answers a request it has read whole with a fault: a
connection-level violation, a malformed response head, a legal but large header block, or a refusal.

    python3 tests/support/h2_hostile_peer.py --certs DIR --mode MODE [--fault-from N] [--faults K]

Listens as h2_fault_peer.py does (127.0.0.1, ALPN `h2` only, the test server's certificate, `{"port": N}`
when ready, its counters as one JSON line at EOF on stdin). Requests are numbered in the order the peer
reads their HEADERS, across connections: those before the N-th (default 1) are answered 200 "ok" — so with
N=2 and one call made first, the fault meets a request on a pooled connection — and from the N-th on each
one gets the fault once it has been read whole (END_STREAM), until K faults were sent (default 0: no end);
after that every request is answered 200 "ok" again. Frames h2 would refuse to send are written by hand.

Modes. Connection-level violations, after which the peer only reads (the connection is the client's to end):
  continuation    HEADERS without END_HEADERS, then empty CONTINUATION frames without end
  hpack_bomb      one header block: `:status: 200`, a 4,000-byte field inserted into the dynamic table, then
                  32,768 references to it (128 MB decoded from 36 KB)
  settings_window SETTINGS_INITIAL_WINDOW_SIZE = 2^31 (the largest legal value is 2^31-1)
  data_stream0    a DATA frame on stream 0
  oversized_frame a HEADERS frame of 20,000 bytes, over the default SETTINGS_MAX_FRAME_SIZE of 16,384
  http1           "HTTP/1.1 200 OK\\r\\n..." bytes instead of frames
  push_promise    a PUSH_PROMISE, though the client disabled push
Malformed response heads (HEADERS, then DATA "ok"); the connection stays usable:
  head_uppercase, head_connection, head_transfer_encoding, head_no_status, head_status_abc, head_status_2000
A legal 200 whose header block is 48 fields of 1,000 bytes (about 48 KB) in HEADERS + CONTINUATION frames,
then DATA "ok":
  big_head        without content-length
  big_head_length with `content-length: 2`
Refusals:
  refuse          RST_STREAM(REFUSED_STREAM) on the stream; the connection stays usable
  goaway_below    GOAWAY(last_stream_id below the stream, NO_ERROR), then the connection is closed
  goaway_covering GOAWAY(last_stream_id = the stream, NO_ERROR: it was processed), then the connection is
                  closed without an answer

Counters: connections, requests (HEADERS of a request read), posts (of them, method POST), ended (requests
read whole), faults (faults sent), posts_refused (POSTs refused by `refuse` or `goaway_below`: never
processed), continuations, per_connection (requests read on each connection, in the order they were accepted).
"""

from __future__ import annotations

import argparse
import socket
import ssl
import struct
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from h2_fault_peer import Counters, answer, flood, run

VIOLATIONS = ("continuation", "hpack_bomb", "settings_window", "data_stream0", "oversized_frame", "http1",
              "push_promise")
HEADS = ("head_uppercase", "head_connection", "head_transfer_encoding", "head_no_status", "head_status_abc",
         "head_status_2000")
BIG_HEADS = ("big_head", "big_head_length")
REFUSALS = ("refuse", "goaway_below", "goaway_covering")
MODES = VIOLATIONS + HEADS + BIG_HEADS + REFUSALS

# Frame types and flags (RFC 9113 §6).
DATA, HEADERS, SETTINGS, PUSH_PROMISE, GOAWAY, CONTINUATION = 0x0, 0x1, 0x4, 0x5, 0x7, 0x9
END_STREAM, END_HEADERS = 0x1, 0x4
MAX_FRAME = 16384  # the client's SETTINGS_MAX_FRAME_SIZE: libcurl keeps the default
STATUS_200 = b"\x88"  # `:status: 200`, static table index 8
GOAWAY_LINGER_S = 0.3  # how long the peer reads after a GOAWAY before it closes, so the client reads it first


class Faults(Counters):
    """The peer's counters, and which request gets a fault."""

    def __init__(self, mode: str, fault_from: int, limit: int) -> None:
        super().__init__()
        self.mode = mode
        self.fault_from = fault_from
        self.limit = limit
        for name in ("posts", "faults", "posts_refused"):
            self.values[name] = 0
        self.values["per_connection"] = []

    def new_connection(self) -> int:
        with self.lock:
            self.values["connections"] += 1
            self.values["per_connection"].append(0)
            return len(self.values["per_connection"]) - 1

    def request(self, connection: int, method: bytes) -> bool:
        """Counts a request read on `connection`; True when it is to get the fault."""
        with self.lock:
            values = self.values
            values["requests"] += 1
            values["posts"] += method == b"POST"
            values["per_connection"][connection] += 1
            fault = values["requests"] >= self.fault_from and (self.limit == 0 or values["faults"] < self.limit)
            values["faults"] += fault
            return fault

    def snapshot(self) -> dict:
        with self.lock:
            values = dict(self.values)
            values["per_connection"] = list(values["per_connection"])
            return values


# --- Frames and header blocks written by hand --------------------------------------------------------------

def frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream_id) + payload


def hpack_int(value: int, prefix_bits: int, first: int) -> bytes:
    """An HPACK integer (RFC 7541 §5.1) in a first byte whose high bits are `first`."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_string(text: bytes) -> bytes:
    return hpack_int(len(text), 7, 0x00) + text  # not Huffman-coded


def literal(name: bytes, value: bytes, indexed: bool = False) -> bytes:
    """A field with a literal name: without indexing (the dynamic table is left as it was), or with
    incremental indexing (it becomes dynamic index 62)."""
    return (b"\x40" if indexed else b"\x00") + hpack_string(name) + hpack_string(value)


def header_block(stream_id: int, block: bytes, end_stream: bool = False) -> bytes:
    """HEADERS + as many CONTINUATION frames as MAX_FRAME needs; END_HEADERS on the last."""
    chunks = [block[i:i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
    out = b""
    for i, chunk in enumerate(chunks):
        flags = END_HEADERS if i == len(chunks) - 1 else 0
        if i == 0:
            out += frame(HEADERS, flags | (END_STREAM if end_stream else 0), stream_id, chunk)
        else:
            out += frame(CONTINUATION, flags, stream_id, chunk)
    return out


def head_then_ok(stream_id: int, block: bytes) -> bytes:
    return header_block(stream_id, block) + frame(DATA, END_STREAM, stream_id, b"ok")


MALFORMED_HEADS = {
    "head_uppercase": STATUS_200 + literal(b"X-Upper", b"1"),
    "head_connection": STATUS_200 + literal(b"connection", b"keep-alive"),
    "head_transfer_encoding": STATUS_200 + literal(b"transfer-encoding", b"chunked"),
    "head_no_status": literal(b"content-type", b"text/plain"),
    "head_status_abc": literal(b":status", b"abc"),
    "head_status_2000": literal(b":status", b"2000"),
}


def big_block(with_length: bool) -> bytes:
    fields = b"".join(literal(b"x-fill-%02d" % i, b"f" * 1000) for i in range(48))
    return STATUS_200 + fields + (literal(b"content-length", b"2") if with_length else b"")


def hpack_bomb() -> bytes:
    return STATUS_200 + literal(b"x-bomb", b"b" * 4000, indexed=True) + hpack_int(62, 7, 0x80) * 32768


def push_promise(stream_id: int) -> bytes:
    # :method GET, :scheme https, :path / (static 2, 7, 4), :authority (static name 1) payments.
    block = b"\x82\x87\x84" + hpack_int(1, 4, 0x00) + hpack_string(b"payments")
    return frame(PUSH_PROMISE, END_HEADERS, stream_id, struct.pack(">I", 2) + block)


def goaway(last_stream_id: int) -> bytes:
    return frame(GOAWAY, 0, 0, struct.pack(">II", last_stream_id, h2.errors.ErrorCodes.NO_ERROR))


def violation(mode: str, stream_id: int) -> bytes:
    if mode == "hpack_bomb":
        return header_block(stream_id, hpack_bomb(), end_stream=True)
    if mode == "settings_window":
        return frame(SETTINGS, 0, 0, struct.pack(">HI", 0x4, 2**31))
    if mode == "data_stream0":
        return frame(DATA, 0, 0, b"ok")
    if mode == "oversized_frame":
        block = STATUS_200 + literal(b"x-pad", b"p" * 20000)
        return frame(HEADERS, END_HEADERS | END_STREAM, stream_id, block)
    if mode == "http1":
        return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    if mode == "push_promise":
        return push_promise(stream_id)
    raise ValueError(mode)


# --- One connection ------------------------------------------------------------------------------------------

def new_connection() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    conn.initiate_connection()
    return conn


def fault(tls: ssl.SSLSocket, conn: h2.connection.H2Connection, faults: Faults, stream_id: int,
          post: bool) -> str:
    """Sends the mode's fault for `stream_id`; says what the peer does next: "read" on, "stop" (a flood
    ended), or "linger" (after a GOAWAY: read a little longer, then close)."""
    mode = faults.mode
    tls.sendall(conn.data_to_send())  # what h2 owes first (ACKs, WINDOW_UPDATEs)
    if mode == "continuation":
        flood(tls, stream_id, faults)
        return "stop"
    if mode in MALFORMED_HEADS:
        tls.sendall(head_then_ok(stream_id, MALFORMED_HEADS[mode]))
    elif mode in BIG_HEADS:
        tls.sendall(head_then_ok(stream_id, big_block(mode == "big_head_length")))
    elif mode == "refuse":
        conn.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
        faults.add("posts_refused", post)
    elif mode in ("goaway_below", "goaway_covering"):
        below = mode == "goaway_below"
        faults.add("posts_refused", post and below)
        tls.sendall(goaway(max(0, stream_id - 2) if below else stream_id))
        return "linger"
    else:
        tls.sendall(violation(mode, stream_id))
    return "read"


def serve(tls: ssl.SSLSocket, faults: Faults) -> None:
    index = faults.new_connection()
    conn = new_connection()
    faulted: dict[int, bool] = {}  # stream → whether it gets the fault (True) or 200 "ok" (False)
    posts: set[int] = set()
    deadline = None  # after a GOAWAY: when the peer closes
    parsing = True  # False once h2 gave up on what the client sent after a fault: only drain then
    tls.sendall(conn.data_to_send())
    while deadline is None or time.monotonic() < deadline:
        tls.settimeout(None if deadline is None else max(0.01, deadline - time.monotonic()))
        try:
            data = tls.recv(65536)
        except (TimeoutError, socket.timeout):
            break
        if data == b"":
            return
        if not parsing:
            continue
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            parsing = False
            continue
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                method = dict(event.headers).get(b":method", b"")
                if method == b"POST":
                    posts.add(event.stream_id)
                faulted[event.stream_id] = faults.request(index, method)
            elif isinstance(event, h2.events.DataReceived) and event.flow_controlled_length:
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                faults.add("ended")
                if not faulted.pop(event.stream_id, False):
                    answer(conn, event.stream_id)
                    continue
                then = fault(tls, conn, faults, event.stream_id, event.stream_id in posts)
                if then == "stop":
                    return
                if then == "linger":
                    deadline = time.monotonic() + GOAWAY_LINGER_S
        tls.sendall(conn.data_to_send())
    if deadline is not None:
        tls.settimeout(GOAWAY_LINGER_S)
        tls.unwrap()  # close_notify: the connection ends cleanly after the GOAWAY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certs", required=True, type=Path)
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--fault-from", type=int, default=1, help="the first request (in reading order) faulted")
    parser.add_argument("--faults", type=int, default=0, help="how many faults at most (0: no end)")
    args = parser.parse_args()
    faults = Faults(args.mode, args.fault_from, args.faults)
    run(args.certs, lambda tls: serve(tls, faults), faults)


if __name__ == "__main__":
    main()
