#!/usr/bin/env python3
"""humus_http's Python package against the usual Python clients, in one run, against one local server.

    python3 bench/python_bench.py [--requests N] [--threads 16] [--in-flight 64] [--cpu N|none]
                                  [--only NAME,...] [--groups sync,threads,async]

The server is nginx (Debian's nginx-light; installed with apt-get when missing) on a loopback port, plain
HTTP/1.1 with keep-alive, answering 200 "ok" to everything; every client talks to that same server. Rows:

  sync, 1 thread:      humus_http.Client  vs requests.Session, httpx.Client, pycurl (one easy handle)
  sync, --threads:     humus_http.Client shared by every thread (the GIL is released while a call waits), and
                       pycurl with one easy handle per thread as the reference
  async, --in-flight:  humus_http.AsyncClient vs aiohttp.ClientSession, httpx.AsyncClient

For each: requests per second (wall clock) and CPU microseconds per request of this process (every thread:
humus_http's event-loop thread included; nginx excluded), then each row's ratio to humus_http's row of its
group.

Pinning, as bench/run_engine_bench.sh does: for the sync and async groups this process and nginx share ONE CPU
(--cpu, default the last; "none" leaves them free), since a request hopping between two cores costs tens of
microseconds here and makes results bimodal. The threaded group runs on every CPU (the goal is stated for
2 cores). Like every benchmark in bench/, it prints figures and never passes or fails on time (STYLE.md).
Clients missing from this Python are skipped with a note (pip install requests httpx pycurl aiohttp).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import humus_http


@dataclass
class Row:
    group: str
    name: str
    requests: int
    wall_s: float
    cpu_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / self.requests * 1e6


# --- The server ------------------------------------------------------------------------------------------------

class Nginx:
    """nginx on a free loopback port, in a temporary prefix removed on stop()."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="humus-py-bench-"))
        self.process: subprocess.Popen[bytes] | None = None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]

    def start(self) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            sudo = [] if os.geteuid() == 0 else ["sudo"]
            print("python_bench: installing nginx-light", file=sys.stderr)
            subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True)
            subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "nginx-light"],
                           check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                           stdout=subprocess.DEVNULL)
        (self.tmp / "nginx").mkdir()
        t = self.tmp
        (t / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
pid {t}/nginx.pid;
error_log {t}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  default_type text/plain;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  client_body_temp_path {t}/nginx/body;
  proxy_temp_path {t}/nginx/proxy;
  fastcgi_temp_path {t}/nginx/fastcgi;
  uwsgi_temp_path {t}/nginx/uwsgi;
  scgi_temp_path {t}/nginx/scgi;
  server {{
    listen 127.0.0.1:{self.port};
    location / {{ return 200 "ok"; }}
  }}
}}
""")
        self.process = subprocess.Popen([binary, "-p", str(t), "-c", str(t / "nginx.conf")],
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=1) as r:
                    r.read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (t / "error.log").read_text() if (t / "error.log").exists() else ""
                    raise RuntimeError(f"nginx did not start: {log}") from None
                time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (nginx's master and worker)."""
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pids
    for child in children:
        pids += process_tree(int(child))
    return pids


def pin(cpus: set[int], server: Nginx | None) -> None:
    """Every thread of this process (and threads it starts later) and the server onto `cpus`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            pass  # a thread that just ended
    if server is not None and server.process is not None:
        for pid in process_tree(server.process.pid):
            os.sched_setaffinity(pid, cpus)


# --- Measuring ---------------------------------------------------------------------------------------------------

def measure(group: str, name: str, n: int, run: Callable[[int], None]) -> Row:
    """Warms up with n/10 requests, then times n."""
    run(max(n // 10, 50))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    run(n)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    row = Row(group, name, n, wall, cpu)
    print(f"  {group:<14} {name:<30} {row.rps:>9,.0f} req/s {row.cpu_us:>8.1f} us CPU/req", flush=True)
    return row


def check(status: int) -> None:
    if status != 200:
        raise RuntimeError(f"unexpected status {status}")


def sync_rows(url: str, n: int, only: set[str] | None) -> list[Row]:
    rows: list[Row] = []

    def want(name: str) -> bool:
        return only is None or name in only

    if want("humus_http"):
        with humus_http.Client(url, max_idle_connections=64) as client:
            def humus(k: int) -> None:
                for _ in range(k):
                    check(client.get("/").status_code)
            rows.append(measure("sync", "humus_http.Client", n, humus))
    if want("requests"):
        try:
            import requests
        except ImportError:
            print("  (requests not installed: skipped)")
        else:
            with requests.Session() as session:
                def req(k: int) -> None:
                    for _ in range(k):
                        check(session.get(url).status_code)
                rows.append(measure("sync", "requests.Session", n, req))
    if want("httpx"):
        try:
            import httpx
        except ImportError:
            print("  (httpx not installed: skipped)")
        else:
            with httpx.Client() as hx:
                def hxs(k: int) -> None:
                    for _ in range(k):
                        check(hx.get(url).status_code)
                rows.append(measure("sync", "httpx.Client", n, hxs))
    if want("pycurl"):
        try:
            import pycurl
        except ImportError:
            print("  (pycurl not installed: skipped)")
        else:
            curl = pycurl.Curl()
            curl.setopt(pycurl.URL, url)
            curl.setopt(pycurl.WRITEFUNCTION, lambda data: None)

            def pc(k: int) -> None:
                for _ in range(k):
                    curl.perform()
                    check(curl.getinfo(pycurl.RESPONSE_CODE))
            rows.append(measure("sync", "pycurl (one easy handle)", n, pc))
            curl.close()
    return rows


def run_threads(threads: int, k: int, body: Callable[[int, int], None]) -> None:
    """k requests split over `threads` threads, started together."""
    per = [k // threads + (1 if i < k % threads else 0) for i in range(threads)]
    start = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        start.wait()
        try:
            body(i, per[i])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]


def threaded_rows(url: str, n: int, threads: int, only: set[str] | None) -> list[Row]:
    rows: list[Row] = []
    group = f"sync x{threads}"
    if only is None or "humus_http" in only:
        with humus_http.Client(url, max_idle_connections=64, bulkhead=humus_http.Bulkhead(max_concurrent=256)) as c:
            def humus(_: int, k: int) -> None:
                for _ in range(k):
                    check(c.get("/").status_code)
            rows.append(measure(group, "humus_http.Client (shared)", n, lambda k: run_threads(threads, k, humus)))
    if only is None or "pycurl" in only:
        try:
            import pycurl
        except ImportError:
            print("  (pycurl not installed: skipped)")
        else:
            handles = []
            for _ in range(threads):
                h = pycurl.Curl()
                h.setopt(pycurl.URL, url)
                h.setopt(pycurl.WRITEFUNCTION, lambda data: None)
                handles.append(h)

            def pc(i: int, k: int) -> None:
                h = handles[i]
                for _ in range(k):
                    h.perform()
                    check(h.getinfo(pycurl.RESPONSE_CODE))
            rows.append(measure(group, "pycurl (handle per thread)", n, lambda k: run_threads(threads, k, pc)))
            for h in handles:
                h.close()
    return rows


async def gather_limited(k: int, in_flight: int, one: Callable[[], asyncio.Future[int] | object]) -> None:
    """k requests with `in_flight` workers pulling from a shared count."""
    left = k

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            check(await one())  # type: ignore[misc]

    await asyncio.gather(*(worker() for _ in range(min(in_flight, k))))


def async_rows(url: str, n: int, in_flight: int, only: set[str] | None) -> list[Row]:
    rows: list[Row] = []
    group = f"async x{in_flight}"

    def want(name: str) -> bool:
        return only is None or name in only

    if want("humus_http"):
        async def humus(k: int) -> None:
            async with humus_http.AsyncClient(url, max_idle_connections=in_flight,
                                              bulkhead=humus_http.Bulkhead(max_concurrent=max(in_flight, 50))) as c:
                async def one() -> int:
                    return (await c.get("/")).status_code
                await gather_limited(k, in_flight, one)
        rows.append(measure(group, "humus_http.AsyncClient", n, lambda k: asyncio.run(humus(k))))
    if want("aiohttp"):
        try:
            import aiohttp
        except ImportError:
            print("  (aiohttp not installed: skipped)")
        else:
            async def aio(k: int) -> None:
                async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight)) as s:
                    async def one() -> int:
                        async with s.get(url) as r:
                            await r.read()
                            return r.status
                    await gather_limited(k, in_flight, one)
            rows.append(measure(group, "aiohttp.ClientSession", n, lambda k: asyncio.run(aio(k))))
    if want("httpx"):
        try:
            import httpx
        except ImportError:
            print("  (httpx not installed: skipped)")
        else:
            async def hx(k: int) -> None:
                limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
                async with httpx.AsyncClient(limits=limits) as c:
                    async def one() -> int:
                        return (await c.get(url)).status_code
                    await gather_limited(k, in_flight, one)
            rows.append(measure(group, "httpx.AsyncClient", n, lambda k: asyncio.run(hx(k))))
    return rows


def report(rows: list[Row]) -> None:
    print("\n| group | client | req/s | CPU us/req | req/s vs humus_http | CPU vs humus_http |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    anchors: dict[str, Row] = {}
    for row in rows:
        if row.name.startswith("humus_http"):
            anchors[row.group] = row
    for row in rows:
        a = anchors.get(row.group)
        speed = f"{row.rps / a.rps:.2f}x" if a else "-"
        cpu = f"{row.cpu_us / a.cpu_us:.2f}x" if a else "-"
        print(f"| {row.group} | {row.name} | {row.rps:,.0f} | {row.cpu_us:.1f} | {speed} | {cpu} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000, help="requests per row (default 20000)")
    parser.add_argument("--threads", type=int, default=16, help="threads of the threaded row (default 16)")
    parser.add_argument("--in-flight", type=int, default=64, help="concurrent async requests (default 64)")
    parser.add_argument("--only", default="", help="comma-separated: humus_http,requests,httpx,pycurl,aiohttp")
    parser.add_argument("--groups", default="sync,threads,async", help="comma-separated: sync,threads,async")
    parser.add_argument("--url", default="", help="benchmark this server instead of starting nginx")
    parser.add_argument("--cpu", default=str((os.cpu_count() or 1) - 1),
                        help="the CPU the sync and async groups share with nginx, or 'none' (default: the last)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    groups = set(args.groups.split(","))

    server = None
    url = args.url
    if not url:
        server = Nginx()
        server.start()
        url = server.url
    every_cpu = os.sched_getaffinity(0)
    one_cpu = every_cpu if args.cpu == "none" else {int(args.cpu)}
    print(f"python_bench: {url} (Python {sys.version.split()[0]}, humus_http {humus_http.__version__}, "
          f"core {humus_http.core_version}, {os.cpu_count()} CPUs; sync and async on CPU(s) "
          f"{','.join(map(str, sorted(one_cpu)))} with the server, threads on every CPU)")
    try:
        rows: list[Row] = []
        if "sync" in groups:
            pin(one_cpu, server)
            rows += sync_rows(url, args.requests, only)
        if "threads" in groups:
            pin(every_cpu, server)
            rows += threaded_rows(url, args.requests * 2, args.threads, only)
        if "async" in groups:
            pin(one_cpu, server)
            rows += async_rows(url, args.requests, args.in_flight, only)
        report(rows)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
