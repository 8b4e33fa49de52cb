#!/usr/bin/env python3
"""Streaming a large body: peak memory and throughput of command-line clients side by side, in one run,
against one local server (issue "Bodies stream", item 6).

    python3 bench/stream_bench.py [--size-mib 1024] [--rounds 3] [--clients curl,humus-http]
                                  [--client NAME='COMMAND {url}' ...] [--humus PATH]

Every client downloads the same body (--size-mib MiB, default 1 GiB) to /dev/null from
tests/cli/bulk_server.py on a loopback port: a threaded server that sends one 1 MiB block over and over
with sendall, so each byte costs it one kernel copy and it is not the bottleneck (curl sets the pace it can
reach). For each client, the median of --rounds runs of:

  peak RSS     the process's VmHWM (polled from /proc while it runs)
  RSS growth   that peak minus the peak of the same client fetching a 1-byte body: what the body costs
  throughput   body bytes over the wall-clock time of the process (start-up included: < 10 ms here)
  CPU s        the client's user + system time (wait4), steadier than the wall clock on a shared machine

and each one's ratio to the first client (the anchor, curl by default). --client adds a client: its
command with {url} where the URL goes, the body to /dev/null (Go, Python, Rust clients are meant to come
in this way, or as entries of CLIENTS below). Like every benchmark in bench/, it prints figures and never
passes or fails on time (STYLE.md). humus-http is build/release/cli/humus-http when built, else
build/dev/cli/humus-http (a Debug build: said in the output), or --humus / $HUMUS_CLI.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from bulk_server import BulkServer  # noqa: E402


def humus_binary(given: str | None) -> tuple[Path, str]:
    if given or os.environ.get("HUMUS_CLI"):
        return Path(given or os.environ["HUMUS_CLI"]), ""
    for preset in ("release", "dev"):
        path = ROOT / "build" / preset / "cli" / "humus-http"
        if path.exists():
            return path, "" if preset == "release" else " (Debug build: build the release preset for figures)"
    sys.exit("stream_bench: humus-http not built (scripts/build.sh release), or give --humus PATH")


def known_clients(humus: Path) -> dict[str, list[str]]:
    """The built-in clients: each a command writing the body at {url} to /dev/null, with no deadline."""
    return {
        "curl": ["curl", "-s", "-o", "/dev/null", "{url}"],
        "humus-http": [str(humus), "-s", "-m", "0", "-o", "/dev/null", "{url}"],
    }


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # the client's user + system time
    server_cpu_s: float  # this process's (the server's threads) during the run
    peak_kib: int


def run_once(command: list[str], url: str) -> Run:
    argv = [part.replace("{url}", url) for part in command]
    own = os.times()
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    status = Path(f"/proc/{process.pid}/status")
    peak = 0
    while True:
        # VmHWM, not wait4's ru_maxrss: that one counts this Python process's pages from before the exec.
        try:
            match = re.search(r"^VmHWM:\s+(\d+) kB", status.read_text(), re.MULTILINE)
            peak = max(peak, int(match.group(1))) if match else peak
        except OSError:
            pass
        pid, wait_status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid != 0:
            break
        time.sleep(0.005)
    wall = time.perf_counter() - start
    now = os.times()
    code = os.waitstatus_to_exitcode(wait_status)
    process.returncode = code
    assert process.stderr is not None
    if code != 0:
        error = process.stderr.read().decode(errors="replace").strip()
        sys.exit(f"stream_bench: {shlex.join(argv)} exited {code}: {error}")
    server_cpu = (now.user - own.user) + (now.system - own.system)
    return Run(wall, usage.ru_utime + usage.ru_stime, server_cpu, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="curl,humus-http",
                        help="built-in clients in order; the first is the anchor")
    parser.add_argument("--client", action="append", default=[], metavar="NAME='COMMAND {url}'",
                        help="another client (repeatable), after --clients")
    parser.add_argument("--humus", help="the humus-http binary")
    args = parser.parse_args()

    humus, note = humus_binary(args.humus)
    known = known_clients(humus)
    clients: list[tuple[str, list[str]]] = []
    for name in filter(None, args.clients.split(",")):
        if name not in known:
            sys.exit(f"stream_bench: unknown client {name!r} (built in: {', '.join(known)}; "
                     "add others with --client)")
        clients.append((name, known[name]))
    for spec in args.client:
        name, sep, command = spec.partition("=")
        if not sep or "{url}" not in command:
            sys.exit(f"stream_bench: --client expects NAME='COMMAND {{url}}', got {spec!r}")
        clients.append((name, shlex.split(command)))
    for name, command in clients:
        if shutil.which(command[0]) is None and not Path(command[0]).exists():
            sys.exit(f"stream_bench: {name}: {command[0]} not found")

    size = args.size_mib << 20
    rows = []
    with BulkServer() as server:
        big, tiny = server.url(f"/bytes/{size}"), server.url("/bytes/1")
        shown = humus.relative_to(ROOT) if humus.is_relative_to(ROOT) else humus
        print(f"stream_bench: {args.size_mib} MiB from {big} (tests/cli/bulk_server.py), to /dev/null; "
              f"median of {args.rounds} rounds; humus-http {shown}{note}")
        for name, command in clients:
            run_once(command, tiny)  # warm: the binary and its libraries in the page cache
            base = statistics.median(run_once(command, tiny).peak_kib for _ in range(args.rounds))
            runs = [run_once(command, big) for _ in range(args.rounds)]
            peak = statistics.median(r.peak_kib for r in runs)
            wall = statistics.median(r.wall_s for r in runs)
            cpu = statistics.median(r.cpu_s for r in runs)
            server_cpu = statistics.median(r.server_cpu_s for r in runs)
            rows.append((name, peak, peak - base, size / wall, cpu, server_cpu, wall))

    anchor = rows[0]
    vs = "vs " + anchor[0]
    print(f"{'client':<14}{'peak RSS':>11}{'RSS growth':>12}{vs:>10}{'throughput':>14}{vs:>10}"
          f"{'CPU s':>8}{vs:>10}{'server CPU s / wall s':>24}")
    for name, peak, growth, rate, cpu, server_cpu, wall in rows:
        growth_ratio = f"{growth / anchor[2]:.2f}" if anchor[2] > 0 else "-"
        print(f"{name:<14}{peak / 1024:>7.1f} MiB{growth / 1024:>8.1f} MiB{growth_ratio:>10}"
              f"{rate / 1e6:>9.0f} MB/s{rate / anchor[3]:>10.2f}{cpu:>8.2f}{cpu / anchor[4]:>10.2f}"
              f"{server_cpu:>13.2f} / {wall:.2f}")
    print("RSS growth: the peak minus the same client's peak for a 1-byte body. Throughput and CPU include "
          "start-up; on a loaded machine wall-clock figures vary, CPU seconds less.")


if __name__ == "__main__":
    main()
