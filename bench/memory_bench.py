#!/usr/bin/env python3
"""What humus_http costs in memory (issue 15, item 6), through the Python package:

    python3 bench/memory_bench.py [--clients 1000] [--in-flight 1000] [--calls 100000] [--python PATH]

  idle clients    the resident memory (VmRSS) N Clients add once made, none of them used, per client;
  calls in flight N AsyncClient calls hanging on a local server that accepts and never answers, per call
                  (its connection, libcurl's handle, the core's call and the asyncio task included; the
                  kernel's socket buffers are not in VmRSS);
  many calls      VmRSS along M sequential calls on one Client to a local nginx (tests/cli/bulk_server.py
                  when nginx is missing), sampled every tenth: a process whose memory grows with its calls
                  would show it here, per 100,000 calls after the first tenth.

Each figure comes from a process of its own (the interpreter given by --python, default this one), so one
does not carry what another allocated. It prints the figures next to the issue's bounds (8 KiB per idle
client, 24 KiB per call in flight, flat) and, like every benchmark in bench/, never passes or fails.
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_kib() -> int:
    return int(re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE).group(1))


# --- the measurements, each run as `memory_bench.py --child MODE N [URL]` -----------------------------------

def idle_clients(n: int) -> dict[str, float]:
    import gc

    import humus_http

    warm = humus_http.Client("http://warm.example")  # the runtime and libcurl's global state, made once
    gc.collect()
    before = rss_kib()
    clients = [humus_http.Client(f"http://h{i}.example:8080") for i in range(n)]
    gc.collect()
    after = rss_kib()
    for c in clients:
        c.close()
    warm.close()
    return {"per_client_kib": (after - before) / n}


class SilentServer:
    """Accepts every connection and never answers: calls hang on it until their deadline."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4096)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            self.held.append(conn)


def calls_in_flight(n: int) -> dict[str, float]:
    import asyncio
    import resource

    import humus_http

    # Two descriptors per call (the client's socket and the server's): past the default soft limit of 1024.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = SilentServer()

    async def main() -> float:
        client = humus_http.AsyncClient(f"http://127.0.0.1:{server.port}", timeout=120, max_attempts=1,
                                        bulkhead=humus_http.Bulkhead(max_concurrent=n + 1))
        first = asyncio.ensure_future(client.get("/hang"))  # the loop, the bridge and one call's state, made
        await wait_for(lambda: len(server.held) >= 1)
        before = rss_kib()
        rest = [asyncio.ensure_future(client.get("/hang")) for _ in range(n)]
        await wait_for(lambda: len(server.held) >= n + 1)
        await asyncio.sleep(0.3)  # every request written, every call waiting for its answer
        after = rss_kib()
        for task in [first, *rest]:
            task.cancel()
        await asyncio.gather(first, *rest, return_exceptions=True)
        await client.aclose()
        return (after - before) / n

    async def wait_for(done) -> None:  # noqa: ANN001 - a predicate
        deadline = time.monotonic() + 60
        while not done():
            if time.monotonic() > deadline:
                raise SystemExit(f"memory_bench: only {len(server.held)} connections came")
            await asyncio.sleep(0.01)

    return {"per_call_kib": asyncio.run(main())}


def many_calls(n: int, url: str) -> dict[str, object]:
    import humus_http

    client = humus_http.Client(url.rsplit("/", 1)[0])
    for _ in range(1000):  # warm: connections, the allocator's arenas
        client.get(url).content
    samples = []
    step = max(1, n // 10)
    for i in range(n):
        if i % step == 0:
            samples.append((i, rss_kib()))
        client.get(url).content
    samples.append((n, rss_kib()))
    client.close()
    first_i, first_rss = samples[1] if len(samples) > 2 else samples[0]
    slope = (samples[-1][1] - first_rss) / max(1, n - first_i) * 100_000
    return {"samples": samples, "kib_per_100k_calls": slope}


# --- the driver ----------------------------------------------------------------------------------------------

def child(python: str, *args: str) -> dict[str, object]:
    done = subprocess.run([python, __file__, "--child", *args], capture_output=True, text=True, timeout=3600,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"memory_bench: {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        mode, n = sys.argv[2], int(sys.argv[3])
        out = {"idle": lambda: idle_clients(n), "inflight": lambda: calls_in_flight(n),
               "calls": lambda: many_calls(n, sys.argv[4])}[mode]()
        print(json.dumps(out))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()

    idle = child(args.python, "idle", str(args.clients))["per_client_kib"]
    print(f"idle clients     {idle:7.1f} KiB per client ({args.clients} clients; issue bound 8)")
    inflight = child(args.python, "inflight", str(args.in_flight))["per_call_kib"]
    print(f"calls in flight  {inflight:7.1f} KiB per call ({args.in_flight} calls on a server that never answers; "
          f"issue bound 24)")

    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT / "tests" / "cli"))
    server = None
    try:
        from compare import Nginx  # noqa: PLC0415 - only the driver needs it

        server = Nginx()
        server.start(None)
        url, what = f"http://127.0.0.1:{server.h1_port}/100", "nginx, 100 B"
    except (Exception, SystemExit) as why:  # noqa: BLE001 - any failure falls back to the Python server
        if server is not None:
            server.stop()
        server = None
        from bulk_server import BulkServer  # noqa: PLC0415

        fallback = BulkServer()
        fallback.__enter__()
        url, what = fallback.url("/bytes/100"), f"bulk_server.py, 100 B (nginx: {why})"
    try:
        calls = child(args.python, "calls", str(args.calls), url)
    finally:
        if server is not None:
            server.stop()
        else:
            fallback.__exit__(None, None, None)
    samples = " ".join(f"{rss / 1024:.1f}" for _, rss in calls["samples"])
    print(f"many calls       {calls['kib_per_100k_calls']:+7.1f} KiB per 100,000 calls after the first tenth "
          f"({args.calls} calls, {what}; VmRSS MiB at each tenth: {samples}; issue bound: flat)")


if __name__ == "__main__":
    main()
