#!/usr/bin/env python3
"""Streaming a large body: peak memory and throughput of command-line clients side by side, in one run,
against one local server (issue "Bodies stream", item 6).

    python3 bench/stream_bench.py [--size-mib 1024] [--rounds 3] [--clients curl,humus-http,...]
                                  [--client NAME='COMMAND {url}' ...] [--humus PATH] [--upload]
                                  [--python PATH] [--go-client PATH] [--rust-client PATH]
                                  [--rust-put-client PATH] [--pin]

Every client downloads the same body (--size-mib MiB, default 1 GiB) to /dev/null from
tests/cli/bulk_server.py on a loopback port: a threaded server that sends one 1 MiB block over and over
with sendall, so each byte costs it one kernel copy and it is not the bottleneck (curl sets the pace it can
reach). For each client, the median of --rounds runs of:

  peak RSS     the process's VmHWM (polled from /proc while it runs)
  RSS growth   that peak minus the peak of the same client reading a 1-byte body that comes 300 ms after
               its head (so the poll sees the client's whole reading state): what the body's size costs
  throughput   body bytes over the wall-clock time of the process (start-up included: about 10 ms for curl,
               80 ms for a Python interpreter and its imports)
  own clock    body bytes over the client's own time from its request to the last byte, for curl
               (time_total) and the Python clients (bench/stream_client.py), the Python rows against curl's
  CPU s        the client's user + system time (wait4), steadier than the wall clock on a shared machine

and each one's ratio to the first client (the anchor, curl by default). --client adds a client: its
command with {url} where the URL goes, the body to /dev/null. Like every benchmark in bench/, it prints
figures and never passes or fails on time (STYLE.md). humus-http is build/release/cli/humus-http when
built, else build/dev/cli/humus-http (a Debug build: said in the output), or --humus / $HUMUS_CLI.

The built-in peers, each skipped with a note when it is missing (only the anchor must be there):
  python-humus  bench/stream_client.py humus: humus_http's Client.stream + iter_bytes (--python: an
                interpreter with humus_http installed; default this one)
  python-httpx  bench/stream_client.py httpx: httpx's Client.stream + iter_raw (the same interpreter)
  go-humus      bench/stream_go humus: humushttp's resp.Body (streams from humus_client_open)
  go-nethttp    bench/stream_go nethttp: net/http's resp.Body (--go-client; default build/bench/stream_go,
                built by `go build` in bench/stream_go against the staged library, see bench/README.md)
  rust-humus    the crate's example stream_get: Client::stream as std::io::Read (--rust-client; default
                build/rust-target/release/examples/stream_get)
--upload adds, for every client above that can, a row sending the same number of bytes the other way: a PUT
of a sparse file that the server reads whole (and hashes: tests/cli/bulk_server.py), each client streaming
it from a reader (curl -T, humus-http -T, Python's open file or httpx's iterator of 64 KiB reads, Go's
*os.File as req.Body, Rust's `Body::from_reader`, the crate's example stream_put: --rust-put-client). The
upload rows are a second table, against curl's upload.
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
import tempfile
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


PEERS = "python-humus,python-httpx,go-humus,go-nethttp,rust-humus"


def known_clients(humus: Path, python: str, go_client: Path, rust_client: Path) -> dict[str, list[str]]:
    """The built-in clients: each a command writing the body at {url} to /dev/null, with no deadline."""
    script = str(ROOT / "bench" / "stream_client.py")
    return {
        # curl's own clock too (time_total: from its start to the last byte), for the comparison by own clocks.
        "curl": ["curl", "-s", "-o", "/dev/null",
                 "-w", "%{stderr}download: %{size_download} bytes in %{time_total} s\n", "{url}"],
        "humus-http": [str(humus), "-s", "-m", "0", "-o", "/dev/null", "{url}"],
        "python-humus": [python, script, "humus", "{url}"],
        "python-httpx": [python, script, "httpx", "{url}"],
        "go-humus": [str(go_client), "humus", "{url}"],
        "go-nethttp": [str(go_client), "nethttp", "{url}"],
        "rust-humus": [str(rust_client), "{url}"],
    }


def known_uploads(humus: Path, python: str, go_client: Path, rust_put: Path) -> dict[str, list[str]]:
    """The built-in clients' uploads: each a command sending the file {file} to {put} as a stream."""
    script = str(ROOT / "bench" / "stream_client.py")
    return {
        # Without "Expect: 100-continue", which none of the other clients sends: the server answers no 100, and
        # curl would wait a second for one before it sends the body.
        "curl": ["curl", "-s", "-H", "Expect:", "-T", "{file}", "-o", "/dev/null",
                 "-w", "%{stderr}upload: %{size_upload} bytes in %{time_total} s\n", "{put}"],
        # The attempt runs until the response headers, which come after the whole body is sent: the attempt
        # gets the call's whole deadline, as curl has no shorter bound.
        "humus-http": [str(humus), "-s", "-m", "0", "--attempt-timeout", "1h", "-T", "{file}", "-o", "/dev/null",
                       "{put}"],
        "python-humus": [python, script, "humus-up", "{file}", "{put}"],
        "python-httpx": [python, script, "httpx-up", "{file}", "{put}"],
        "go-humus": [str(go_client), "humus-up", "{file}", "{put}"],
        "go-nethttp": [str(go_client), "nethttp-up", "{file}", "{put}"],
        "rust-humus": [str(rust_put), "{file}", "{put}"],
    }


UPLOAD = " up"  # the suffix of an upload row's name


def missing(name: str, command: list[str]) -> str | None:
    """Why a client cannot run here, or None."""
    if shutil.which(command[0]) is None and not Path(command[0]).exists():
        return f"{command[0]} not found"
    module = {"python-humus": "humus_http", "python-httpx": "httpx"}.get(name.removesuffix(UPLOAD))
    if module is not None:
        probe = subprocess.run([command[0], "-c", f"import {module}"], capture_output=True, check=False)
        if probe.returncode != 0:
            return f"{command[0]} cannot import {module}"
    return None


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # the client's user + system time
    server_cpu_s: float  # this process's (the server's threads) during the run
    peak_kib: int
    download_s: float | None = None  # the client's own clock from its request to the last byte, if it says


CLIENT_CPU: int | None = None  # --pin: the CPU every client runs on


def run_once(command: list[str], url: str) -> Run:
    argv = [part.replace("{url}", url) for part in command]
    own = os.times()
    start = time.perf_counter()
    pin = None if CLIENT_CPU is None else (lambda: os.sched_setaffinity(0, {CLIENT_CPU}))
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, preexec_fn=pin)
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
        raise RuntimeError(f"{shlex.join(argv)} exited {code}: {error}")
    server_cpu = (now.user - own.user) + (now.system - own.system)
    # A client that times its own download (bench/stream_client.py) says so on stderr.
    reported = re.search(r"^(?:download|upload): \d+ bytes in ([\d.]+) s$",
                         process.stderr.read().decode(errors="replace"), re.MULTILINE)
    return Run(wall, usage.ru_utime + usage.ru_stime, server_cpu, peak,
               float(reported.group(1)) if reported else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="curl,humus-http," + PEERS,
                        help="built-in clients in order; the first is the anchor")
    parser.add_argument("--client", action="append", default=[], metavar="NAME='COMMAND {url}'",
                        help="another client (repeatable), after --clients")
    parser.add_argument("--humus", help="the humus-http binary")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the python-* peers")
    parser.add_argument("--go-client", type=Path, default=ROOT / "build" / "bench" / "stream_go")
    parser.add_argument("--rust-client", type=Path,
                        default=ROOT / "build" / "rust-target" / "release" / "examples" / "stream_get")
    parser.add_argument("--rust-put-client", type=Path,
                        default=ROOT / "build" / "rust-target" / "release" / "examples" / "stream_put")
    parser.add_argument("--upload", action="store_true",
                        help="also PUT the same size with every client that can, from a reader")
    parser.add_argument("--pin", action="store_true",
                        help="the server on the first CPU, every client on the last (taskset), as bench/ pins "
                             "sequential comparisons on a shared machine")
    args = parser.parse_args()
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            sys.exit("stream_bench: --pin needs two CPUs")
        os.sched_setaffinity(0, {cpus[0]})  # this process serves: its threads inherit it
        global CLIENT_CPU
        CLIENT_CPU = cpus[-1]

    humus, note = humus_binary(args.humus)
    known = known_clients(humus, args.python, args.go_client, args.rust_client)
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
    size = args.size_mib << 20
    upload = None
    # An upload row's baseline of memory: the same client's download of the late byte, as for the others.
    baselines: dict[str, list[str]] = {}
    if args.upload:
        # Sparse: its reads cost no disk, so the figures are the clients' and the server's.
        upload = tempfile.NamedTemporaryFile(prefix="stream_bench.", suffix=".bin")  # noqa: SIM115
        upload.truncate(size)
        uploads = known_uploads(humus, args.python, args.go_client, args.rust_put_client)
        for name, _ in list(clients):
            if name in uploads:
                clients.append((name + UPLOAD, [part.replace("{file}", upload.name) for part in uploads[name]]))
                baselines[name + UPLOAD] = known[name]
    skipped = []
    for i, (name, command) in enumerate(list(clients)):
        why = missing(name, command)
        if why is not None and i == 0:
            sys.exit(f"stream_bench: the anchor {name}: {why}")
        if why is not None:
            skipped.append(f"{name} ({why})")
            clients.remove((name, command))

    rows = []
    timed_own: list[tuple[str, float]] = []  # (name, throughput by the client's own clock)
    with BulkServer() as server:
        # The baseline's byte comes late: a process that ends within the 5 ms poll would show a peak from
        # before it got to read at all, and an inflated growth.
        big, tiny = server.url(f"/bytes/{size}"), server.url("/late/1/300")
        shown = humus.relative_to(ROOT) if humus.is_relative_to(ROOT) else humus
        print(f"stream_bench: {args.size_mib} MiB from {big} (tests/cli/bulk_server.py), to /dev/null; "
              f"median of {args.rounds} interleaved rounds{'; pinned' if args.pin else ''}; humus-http {shown}{note}")
        # Each client's baseline first, then the rounds interleaved (every client once per round, the order
        # reversed every other round), so a change of the machine's load falls on every client alike.
        prepared: list[tuple[str, list[str], int]] = []
        for name, command in clients:
            base_command = baselines.get(name, command)
            command = [part.replace("{put}", server.url("/upload")) for part in command]
            try:
                run_once(base_command, tiny)  # warm: the binary and its libraries in the page cache
                base = statistics.median(run_once(base_command, tiny).peak_kib for _ in range(args.rounds))
            except RuntimeError as failed:
                if not prepared:
                    sys.exit(f"stream_bench: the anchor failed: {failed}")
                skipped.append(f"{name} (failed: {failed})")
                continue
            prepared.append((name, command, base))
        runs: dict[str, list[Run]] = {name: [] for name, _, _ in prepared}
        failed_clients: set[str] = set()
        for round_number in range(args.rounds):
            order = prepared if round_number % 2 == 0 else prepared[::-1]
            for name, command, _ in order:
                if name in failed_clients:
                    continue
                try:
                    runs[name].append(run_once(command, big))
                except RuntimeError as failed:
                    if name == prepared[0][0]:
                        sys.exit(f"stream_bench: the anchor failed: {failed}")
                    skipped.append(f"{name} (failed: {failed})")
                    failed_clients.add(name)
        for name, _, base in prepared:
            if name in failed_clients:
                continue
            done = runs[name]
            peak = statistics.median(r.peak_kib for r in done)
            wall = statistics.median(r.wall_s for r in done)
            cpu = statistics.median(r.cpu_s for r in done)
            server_cpu = statistics.median(r.server_cpu_s for r in done)
            rows.append((name, peak, peak - base, size / wall, cpu, server_cpu, wall))
            own = [r.download_s for r in done if r.download_s]
            if own:
                timed_own.append((name, size / statistics.median(own)))

    downloads = [row for row in rows if not row[0].endswith(UPLOAD)]
    uploaded = [row for row in rows if row[0].endswith(UPLOAD)]
    print_table(downloads, timed_own)
    if uploaded:
        print(f"\nupload: a PUT of {args.size_mib} MiB (a sparse file) that the server reads whole and hashes")
        print_table(uploaded, timed_own)
    for why in skipped:
        print(f"skipped: {why}")


def print_table(rows: list[tuple[str, float, float, float, float, float, float]],
                timed_own: list[tuple[str, float]]) -> None:
    """The rows against the first of them (the anchor), and the clients' own clocks against the anchor's."""
    anchor = rows[0]
    vs = "vs " + anchor[0]
    w = max(10, len(vs) + 2)  # the ratio columns
    print(f"{'client':<17}{'peak RSS':>11}{'RSS growth':>12}{vs:>{w}}{'throughput':>14}{vs:>{w}}"
          f"{'CPU s':>8}{vs:>{w}}{'server CPU s / wall s':>24}")
    for name, peak, growth, rate, cpu, server_cpu, wall in rows:
        growth_ratio = f"{growth / anchor[2]:.2f}" if anchor[2] > 0 else "-"
        print(f"{name:<17}{peak / 1024:>7.1f} MiB{growth / 1024:>8.1f} MiB{growth_ratio:>{w}}"
              f"{rate / 1e6:>9.0f} MB/s{rate / anchor[3]:>{w}.2f}{cpu:>8.2f}{cpu / anchor[4]:>{w}.2f}"
              f"{server_cpu:>13.2f} / {wall:.2f}")
    print("RSS growth: the peak minus the same client's peak for a 1-byte body sent late. Throughput and CPU "
          "include start-up; on a loaded machine wall-clock figures vary, CPU seconds less.")
    # By own clocks: each client's time from its request to the last byte, against the anchor's own (curl's
    # time_total), so neither side carries its start-up: an interpreter's start and imports (about 80 ms for
    # Python here, against curl's 10) are a fixed cost, not the transfer's pace.
    names = {row[0] for row in rows}
    own = [(name, rate) for name, rate in timed_own if name in names]
    anchor_own = dict(own).get(anchor[0])
    for name, rate in own:
        if name == anchor[0]:
            print(f"{name}: {rate / 1e6:.0f} MB/s by its own clock (time_total)")
            continue
        against = (f"{rate / anchor_own:.2f}x {anchor[0]}'s own clock" if anchor_own
                   else f"{rate / anchor[3]:.2f}x {anchor[0]}")
        print(f"{name}: {rate / 1e6:.0f} MB/s ({against}) by its own clock, from its request to the last byte, "
              "without the interpreter's start and imports")


if __name__ == "__main__":
    main()
