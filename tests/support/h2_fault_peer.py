#!/usr/bin/env python3
"""h2_fault_peer.py — an HTTP/2 peer over TLS that breaks the connection-level rules the scriptable test
server (tests/server/) keeps: a zero flow-control window, one concurrent stream, silence, a CONTINUATION flood.

    python3 tests/support/h2_fault_peer.py --certs DIR --mode MODE

Listens on 127.0.0.1 (an ephemeral port), ALPN `h2` only, presenting the test server's `server.pem`
(CN=payments, SAN IP:127.0.0.1; made in DIR as tests/server/humus_test_server.py makes them). It prints one
JSON line `{"port": N}` when ready; at EOF on stdin it prints one more, its counters, and exits.

Modes (every connection behaves the same way):
  window0     SETTINGS_INITIAL_WINDOW_SIZE=0 and never a WINDOW_UPDATE: a request body cannot be sent past
              what the client wrote before it read the SETTINGS; requests are recorded, never answered.
  streams1    SETTINGS_MAX_CONCURRENT_STREAMS=1; each request is answered 200 "ok" after 100 ms. A stream
              opened while another is open is refused (RST_STREAM REFUSED_STREAM), as a correct peer does,
              and counted in `excess`, and in `excess_after_ack` once the client had acknowledged the limit.
  silent      the first request of a connection is answered 200 "ok"; then the peer reads nothing more on it
              and answers nothing, PING included, leaving the connection open: a peer that stopped responding.
  continuation  a request is answered with HEADERS without END_HEADERS and then empty CONTINUATION frames
              without end (up to 1,000,000, counted in `continuations`) until the client goes away.
  abandon     by path: /hang is never answered; /stall is answered with its head and 2 bytes of its body,
              never more; /hold is answered 200 "ok" once the client resets another
              stream of its connection (RST_STREAM), or after HOLD_MAX_S; any other path at once. A reset
              is counted in `resets`, and in `resets_shared` when another stream of its connection was
              still open; a connection that ends with streams open counts them in `dropped_open`; a /hold
              answered for a reset counts in `holds_released`.

Counters: connections, requests, ended (requests whose last byte came), body_bytes, body_bytes_after_ack,
pings, excess, excess_after_ack, continuations, max_open, resets, resets_shared, dropped_open,
holds_released. At EOF on stdin the abandon mode first waits (at most QUIET_MAX_S) for no stream to be
open, so that the counters include what the client's last frames said.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from h2.settings import SettingCodes
from hyperframe.frame import ContinuationFrame, HeadersFrame

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
from humus_test_server import ensure_certs  # noqa: E402  (the same certificates as the test server)

MODES = ("window0", "streams1", "silent", "continuation", "abandon")
ANSWER_DELAY_S = 0.1
HOLD_MAX_S = 3.0
QUIET_MAX_S = 2.0
MAX_CONTINUATIONS = 1_000_000


class Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values = {name: 0 for name in ("connections", "requests", "ended", "body_bytes",
                                            "body_bytes_after_ack", "pings", "excess", "excess_after_ack",
                                            "continuations", "max_open", "resets", "resets_shared",
                                            "dropped_open", "holds_released", "open_now")}

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.values[name] += n

    def at_least(self, name: str, n: int) -> None:
        with self.lock:
            self.values[name] = max(self.values[name], n)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.values)


def new_connection(mode: str) -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    enforced = {SettingCodes.MAX_CONCURRENT_STREAMS: 100, SettingCodes.MAX_HEADER_LIST_SIZE: 65536}
    advertised = dict(enforced)
    if mode == "window0":
        advertised[SettingCodes.INITIAL_WINDOW_SIZE] = 0
    if mode == "streams1":
        advertised[SettingCodes.MAX_CONCURRENT_STREAMS] = 1
    conn.local_settings = h2.settings.Settings(client=False, initial_values=advertised)
    conn.initiate_connection()
    # The limits are advertised, but h2 must not enforce them itself from the start: a client may rightly
    # exceed them until it has read the SETTINGS (RFC 9113 §6.5.3), and h2 would end the whole connection.
    # The peer counts what comes after the client's ACK, and refuses an excess stream on its own (§5.1.2).
    conn.local_settings = h2.settings.Settings(client=False, initial_values=enforced)
    return conn


def answer(conn: h2.connection.H2Connection, stream_id: int) -> None:
    conn.send_headers(stream_id, [(b":status", b"200"), (b"content-length", b"2")])
    conn.send_data(stream_id, b"ok", end_stream=True)


def flood(tls: ssl.SSLSocket, stream_id: int, counters: Counters) -> None:
    """HEADERS (`:status: 200`, static index 8) without END_HEADERS, then empty CONTINUATION frames."""
    tls.sendall(HeadersFrame(stream_id, data=b"\x88").serialize())
    batch = ContinuationFrame(stream_id, data=b"").serialize() * 1000
    sent = 0
    while sent < MAX_CONTINUATIONS:
        tls.sendall(batch)
        sent += 1000
        counters.add("continuations", 1000)


def serve(tls: ssl.SSLSocket, mode: str, counters: Counters) -> None:
    counters.add("connections")
    conn = new_connection(mode)
    tls.sendall(conn.data_to_send())
    open_streams: set[int] = set()
    due: list[tuple[float, int]] = []  # streams1, abandon: (when, stream) answers waiting for their delay
    paths: dict[int, bytes] = {}       # abandon: each open stream's :path
    acked = False
    answered = 0
    try:
        serve_streams(tls, mode, counters, conn, open_streams, due, paths, acked, answered)
    finally:
        if mode == "abandon" and open_streams:
            counters.add("dropped_open", len(open_streams))
            counters.add("open_now", -len(open_streams))


def serve_streams(tls: ssl.SSLSocket, mode: str, counters: Counters, conn: h2.connection.H2Connection,
                  open_streams: set[int], due: list[tuple[float, int]], paths: dict[int, bytes], acked: bool,
                  answered: int) -> None:
    def close(stream_id: int) -> None:
        if stream_id in open_streams:
            open_streams.discard(stream_id)
            if mode == "abandon":
                counters.add("open_now", -1)

    while True:
        if due:
            tls.settimeout(max(0.0, due[0][0] - time.monotonic()))
        else:
            tls.settimeout(None)
        try:
            data = tls.recv(65536)
        except (TimeoutError, socket.timeout):
            data = None
        if data == b"":
            return
        events = conn.receive_data(data) if data else []
        for event in events:
            if isinstance(event, h2.events.RemoteSettingsChanged):
                pass
            elif isinstance(event, h2.events.SettingsAcknowledged):
                acked = True
            elif isinstance(event, h2.events.PingReceived):
                counters.add("pings")
            elif isinstance(event, h2.events.RequestReceived):
                counters.add("requests")
                if mode == "streams1" and open_streams:
                    counters.add("excess")
                    if acked:
                        counters.add("excess_after_ack")
                    conn.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                    continue
                open_streams.add(event.stream_id)
                counters.at_least("max_open", len(open_streams))
                if mode == "abandon":
                    counters.add("open_now")
                    paths[event.stream_id] = dict(event.headers).get(b":path", b"")
                    if paths[event.stream_id] == b"/hold":
                        due.append((time.monotonic() + HOLD_MAX_S, event.stream_id))
                if mode == "continuation":
                    tls.sendall(conn.data_to_send())
                    flood(tls, event.stream_id, counters)
                    return
            elif isinstance(event, h2.events.DataReceived):
                counters.add("body_bytes", len(event.data))
                if acked:
                    counters.add("body_bytes_after_ack", len(event.data))
                if event.flow_controlled_length and mode != "window0":
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                counters.add("ended")
                if event.stream_id not in open_streams:
                    continue
                if mode == "streams1":
                    due.append((time.monotonic() + ANSWER_DELAY_S, event.stream_id))
                elif mode == "silent":
                    answer(conn, event.stream_id)
                    answered += 1
                elif mode == "abandon" and paths.get(event.stream_id) == b"/stall":
                    conn.send_headers(event.stream_id, [(b":status", b"200"), (b"content-length", b"100")])
                    conn.send_data(event.stream_id, b"ok")
                elif mode == "abandon" and paths.get(event.stream_id) not in (b"/hang", b"/hold"):
                    answer(conn, event.stream_id)
                    close(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                if mode == "abandon" and event.stream_id in open_streams:
                    counters.add("resets")
                    if len(open_streams) > 1:
                        counters.add("resets_shared")
                    for _, held in due:  # the reset is what a /hold waits for
                        counters.add("holds_released")
                        answer(conn, held)
                        close(held)
                    due.clear()
                close(event.stream_id)
                due[:] = [d for d in due if d[1] != event.stream_id]
        while due and due[0][0] <= time.monotonic():
            _, stream_id = due.pop(0)
            answer(conn, stream_id)
            close(stream_id)
        tls.sendall(conn.data_to_send())
        if mode == "silent" and answered:
            threading.Event().wait()  # never reads, never answers again; the process exit ends it


def handshake_and_serve(raw: socket.socket, context: ssl.SSLContext, serve_one) -> None:
    """The TLS handshake, then `serve_one(tls)` until it returns or the connection fails; then the close."""
    raw.settimeout(10)
    try:
        tls = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        raw.close()
        return
    try:
        serve_one(tls)
    except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
        pass
    finally:
        try:
            tls.close()
        except OSError:
            pass


def run(certs: Path, serve_one, counters: Counters) -> None:
    """Listens, serves each connection on its own thread with `serve_one(tls)` after the TLS handshake,
    prints the port, and at EOF on stdin prints the counters and exits. Shared with h2_hostile_peer.py."""
    ensure_certs(certs)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "server.pem", certs / "server.key")
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", 0))

    def accept_loop() -> None:
        while True:
            raw, _ = listener.accept()
            threading.Thread(target=handshake_and_serve, args=(raw, context, serve_one), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    print(json.dumps({"port": listener.getsockname()[1]}), flush=True)
    sys.stdin.read()  # until EOF: the test that started the peer is done with it
    quiet_by = time.monotonic() + QUIET_MAX_S
    while counters.snapshot().get("open_now", 0) > 0 and time.monotonic() < quiet_by:
        time.sleep(0.01)  # frames the client sent before the test ended, still being read
    print(json.dumps(counters.snapshot()), flush=True)
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certs", required=True, type=Path)
    parser.add_argument("--mode", required=True, choices=MODES)
    args = parser.parse_args()
    counters = Counters()
    run(args.certs, lambda tls: serve(tls, args.mode, counters), counters)


if __name__ == "__main__":
    main()
