#!/usr/bin/env python3
"""One command that runs every path of humus_http next to the client a user would pick instead (issue 15).

    python3 bench/compare.py [--long] [--full] [--rounds N] [--seconds S] [--only SUBSTRING,...]
                             [--venv DIR] [--no-build] [--cpu N]

Against one local nginx (Debian's nginx-light, installed with apt-get when missing: HTTP/1.1 in plain text and
HTTP/2 over TLS with a throw-away CA, bodies of 100 B and 64 KiB) it runs, interleaved in the same rounds (every
row once per round, the order reversed every other round):

  C      raw libcurl easy (also asked for the request bytes humus_http sends: easy-wire) and multi
         (bench/compare_curl.c), humus_client_do, the same with span and log sinks,
         threads sharing one client, humus_client_submit, stepped calls driven by one poll loop
         (bench/compare_humus.c)
  Go     net/http and humushttp.NewClient: its streamed Do, Do with BufferBody, and Start + Wait
         (bench/compare_go); --go-before adds another build's rows (e.g. main's binding), --c-before the C
         rows of compare_humus run on another build's libhumus_http.so (a library directory)
  Python pycurl, humus_http.Client, aiohttp on uvloop, humus_http.AsyncClient (bench/compare_client.py)

Each row is its own process: it warms up (connections, TLS), then runs for --seconds and reports its request
count, wall and CPU time (its own process: the server is not counted). The table shows medians over rounds;
the ratios are medians of per-round ratios to the peer measured in the same round. Sequential rows run with
the client and nginx on one CPU (--cpu, default the last), concurrent rows with both free on every CPU.

The default is short (about two minutes on 2 cores): the rows of the issue's table. --long: 9 rounds of 2 s.
--full: every combination of sequential/16/64, h1/h2 and 100 B/64 KiB for every client.

The Python peers come from PyPI into a venv (--venv, default build/bench-venv, made with the system's
site-packages visible so an installed humus_http is found); a peer that cannot be installed or imported is
skipped with a note, as is a row whose client is missing. The humus_http Python package is whichever the
venv imports (its path is printed). Like every benchmark in bench/, it prints figures and never passes or
fails on time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "release"
STAGE = ROOT / "build" / "stage-release"


def log(msg: str) -> None:
    print(f"compare: {msg}", file=sys.stderr, flush=True)


# --- The server --------------------------------------------------------------------------------------------

class Nginx:
    """nginx on two free loopback ports (h1 plain, h2 TLS as "payments"), in a temp prefix removed on stop()."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="humus-compare-"))
        self.proc: subprocess.Popen[bytes] | None = None
        socks = [socket.socket() for _ in range(2)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        self.h1_port, self.h2_port = (s.getsockname()[1] for s in socks)
        for s in socks:
            s.close()
        self.ca = self.tmp / "ca.pem"

    def start(self, cpu: str | None) -> None:
        if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
            sudo = [] if os.geteuid() == 0 else ["sudo"]
            log("installing nginx-light")
            subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True)
            subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "nginx-light"],
                           check=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                           stdout=subprocess.DEVNULL)
        t = self.tmp
        ssl = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
        ssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{t}/ca.key")
        ssl("req", "-x509", "-new", "-key", f"{t}/ca.key", "-sha256", "-days", "2", "-subj", "/CN=humus bench CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-out", f"{t}/ca.pem")
        ssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{t}/server.key")
        ssl("req", "-new", "-key", f"{t}/server.key", "-subj", "/CN=payments", "-out", f"{t}/server.csr")
        (t / "ext.cnf").write_text("subjectAltName=DNS:payments\nbasicConstraints=CA:FALSE\n"
                                   "extendedKeyUsage=serverAuth\n")
        ssl("x509", "-req", "-in", f"{t}/server.csr", "-CA", f"{t}/ca.pem", "-CAkey", f"{t}/ca.key",
            "-CAcreateserial", "-days", "2", "-sha256", "-extfile", f"{t}/ext.cnf", "-out", f"{t}/server.pem")
        (t / "www").mkdir()
        (t / "www" / "64k").write_bytes(b"x" * 65536)
        for path in (t, t / "www", t / "www" / "64k"):  # nginx's worker runs as another user
            path.chmod(0o755)
        small = "x" * 100
        locations = f"""
    location = /100 {{ return 200 "{small}"; }}
    location = /64k {{ root {t}/www; try_files /64k =404; }}"""
        (t / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
pid {t}/nginx.pid;
error_log {t}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  default_type application/octet-stream;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  client_body_temp_path {t}/body;
  proxy_temp_path {t}/proxy;
  fastcgi_temp_path {t}/fastcgi;
  uwsgi_temp_path {t}/uwsgi;
  scgi_temp_path {t}/scgi;
  server {{
    listen 127.0.0.1:{self.h1_port};{locations}
  }}
  server {{
    listen 127.0.0.1:{self.h2_port} ssl http2;
    server_name payments;
    ssl_certificate {t}/server.pem;
    ssl_certificate_key {t}/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    http2_max_concurrent_streams 256;{locations}
  }}
}}
""")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([binary, "-p", str(t), "-c", str(t / "nginx.conf")])
        for _ in range(100):
            probe = subprocess.run(["curl", "-sf", "-o", "/dev/null", "--noproxy", "*",
                                    f"http://127.0.0.1:{self.h1_port}/100"])
            if probe.returncode == 0:
                break
            if self.proc.poll() is not None:
                raise SystemExit(f"compare: nginx exited: {(t / 'error.log').read_text()}")
            time.sleep(0.1)
        self.pin(cpu)

    def pids(self) -> list[int]:
        assert self.proc is not None
        out = [self.proc.pid]
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        if children.exists():
            out += [int(p) for p in children.read_text().split()]
        return out

    def pin(self, cpu: str | None) -> None:
        cpus = cpu if cpu is not None else f"0-{os.cpu_count() - 1}"
        for pid in self.pids():
            subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], check=True, stdout=subprocess.DEVNULL)

    def url(self, proto: str, body: str) -> str:
        return f"http://127.0.0.1:{self.h1_port}/{body}" if proto == "h1" else f"https://payments:{self.h2_port}/{body}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(3)  # SIGQUIT: graceful
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- Clients ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Client:
    name: str          # the row's name
    lang: str          # c, go, py
    argv: tuple[str, ...]  # program and mode
    seq: bool          # runs sequentially (concurrency 1)
    conc: bool         # runs with N in flight
    h2: bool = True    # speaks HTTP/2
    kind: str = "peer"  # "peer" or "humus"


def clients(venv_python: str | None, go_before: str | None, c_before: str | None = None) -> list[Client]:
    c_curl = str(BUILD / "bench" / "compare_curl")
    c_humus = str(BUILD / "bench" / "compare_humus")
    go = str(BUILD / "bench" / "compare_go")
    out = [
        Client("curl-easy", "c", (c_curl, "easy"), True, False),
        Client("curl-easy-wire", "c", (c_curl, "easy-wire"), True, False),
        Client("curl-multi", "c", (c_curl, "multi"), False, True),
        Client("c-do", "c", (c_humus, "do"), True, False, kind="humus"),
        Client("c-do-traced", "c", (c_humus, "do-traced"), True, False, kind="humus"),
        Client("c-do-header", "c", (c_humus, "do-header"), True, False, kind="humus"),
        Client("c-open", "c", (c_humus, "open"), True, False, kind="humus"),
        Client("c-threads", "c", (c_humus, "threads"), False, True, kind="humus"),
        Client("c-submit", "c", (c_humus, "submit"), False, True, kind="humus"),
        Client("c-step", "c", (c_humus, "step"), False, True, kind="humus"),
        Client("go-nethttp", "go", (go, "nethttp"), True, True),
        Client("go-humus", "go", (go, "humus"), True, True, kind="humus"),
        Client("go-humus-buffered", "go", (go, "humus-buffered"), True, True, kind="humus"),
        Client("go-humus-start", "go", (go, "humus-start"), True, True, kind="humus"),
    ]
    if c_before is not None:
        # The same program on the other library: compare_humus links libhumus_http.so dynamically.
        before = ("env", f"LD_LIBRARY_PATH={c_before}", c_humus)
        out += [
            Client("c-do@before", "c", (*before, "do"), True, False, kind="humus"),
            Client("c-threads@before", "c", (*before, "threads"), False, True, kind="humus"),
            Client("c-submit@before", "c", (*before, "submit"), False, True, kind="humus"),
        ]
    if go_before is not None:
        out += [
            Client("go-humus@before", "go", (go_before, "humus"), True, True, kind="humus"),
            Client("go-humus-start@before", "go", (go_before, "humus-start"), True, True, kind="humus"),
        ]
    if venv_python is not None:
        py = (venv_python, str(ROOT / "bench" / "compare_client.py"))
        out += [
            Client("pycurl", "py", (*py, "pycurl"), True, False),
            Client("py-humus", "py", (*py, "humus"), True, False, kind="humus"),
            Client("aiohttp-uvloop", "py", (*py, "aiohttp"), False, True, h2=False),
            Client("py-humus-async", "py", (*py, "humus-async"), False, True, kind="humus"),
        ]
    return out


@dataclass
class Row:
    client: Client
    proto: str
    body: str
    conc: int
    samples: list[dict[str, float]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.proto} {self.body:>4} {'seq' if self.conc == 1 else 'c' + str(self.conc):>4} {self.client.name}"


def default_rows(cs: dict[str, Client]) -> list[Row]:
    """The rows of the issue's table, and what their ratios need."""
    go = ["go-nethttp", "go-humus", "go-humus-buffered", "go-humus-start", "go-humus@before", "go-humus-start@before"]
    c_conc = ["curl-multi", "c-threads", "c-submit", "c-step", "c-threads@before", "c-submit@before"]
    plan = [
        ("h1", "100", 1, ["curl-easy", "curl-easy-wire", "c-do", "c-do-traced", "c-do-header", "c-open", "c-do@before",
                          *go, "pycurl", "py-humus"]),
        ("h1", "64k", 1, ["curl-easy", "c-do", "c-do@before", "go-nethttp", "go-humus", "pycurl", "py-humus"]),
        ("h1", "100", 16, [*c_conc, *go]),
        ("h1", "100", 64, [*c_conc, *go, "aiohttp-uvloop", "py-humus-async"]),
        ("h2", "100", 64, [*c_conc, *go]),
    ]
    return [Row(cs[n], proto, body, conc) for proto, body, conc, names in plan for n in names if n in cs]


def full_rows(cs: dict[str, Client]) -> list[Row]:
    rows = []
    for proto in ("h1", "h2"):
        for body in ("100", "64k"):
            for conc in (1, 16, 64):
                for c in cs.values():
                    if (conc == 1 and c.seq) or (conc > 1 and c.conc):
                        if proto == "h2" and not c.h2:
                            continue
                        rows.append(Row(c, proto, body, conc))
    return rows


def run_row(row: Row, server: Nginx, seconds: float, warmup: float, cpu: str | None,
            env: dict[str, str]) -> dict[str, float] | None:
    c = row.client
    argv = [*c.argv, server.url(row.proto, row.body), str(row.conc), str(seconds), str(warmup)]
    if row.proto == "h2":
        host_port = f"payments:{server.h2_port}"
        addr_port = f"127.0.0.1:{server.h2_port}"
        argv += ["--h2", "--ca", str(server.ca)]
        argv += ["--connect-to", f"{host_port}:{addr_port}"] if c.name.startswith("curl") else \
            ["--resolve", f"{host_port}={addr_port}"]
    if row.conc == 1 and cpu is not None:
        argv = ["taskset", "-c", cpu, *argv]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=seconds + warmup + 60)
    except subprocess.TimeoutExpired:
        log(f"{row.key}: timed out")
        return None
    if p.returncode != 0 or not p.stdout.strip():
        log(f"{row.key}: exited {p.returncode}: {p.stderr.strip()[-400:]}")
        return None
    s = json.loads(p.stdout.strip().splitlines()[-1])
    if s["errors"]:
        log(f"{row.key}: {s['errors']} errors: {p.stderr.strip()[-200:]}")
    return s


def rps(s: dict[str, float]) -> float:
    return s["requests"] / s["wall_s"]


def cpu_us(s: dict[str, float]) -> float:
    return s["cpu_s"] / s["requests"] * 1e6


# --- Setup ----------------------------------------------------------------------------------------------

def build(no_build: bool) -> None:
    if no_build:
        return
    env = {**os.environ}
    if not (BUILD / "build.ninja").exists():
        subprocess.run(["cmake", "--preset", "release", "-DCMAKE_CXX_FLAGS=-g -Wno-error=restrict"], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "-j2", "--target", "humus_http", "humus-http", "compare_curl",
                    "compare_humus"], cwd=ROOT, check=True, env=env)
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(STAGE)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    if shutil.which("go") is None:
        log("go missing: the Go rows are skipped")
        return
    goenv = {**env, "PKG_CONFIG_PATH": f"{STAGE}/lib/pkgconfig", "CGO_ENABLED": "1"}
    subprocess.run(["go", "build", "-o", str(BUILD / "bench" / "compare_go"), "."], cwd=ROOT / "bench" / "compare_go",
                   check=True, env=goenv)


def venv_python(venv: Path, given: bool) -> str | None:
    py = venv / "bin" / "python"
    if not py.exists():
        if given:
            log(f"{venv} has no bin/python: the Python rows are skipped")
            return None
        log(f"making the venv {venv}")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    for pkg, module in (("pycurl", "pycurl"), ("aiohttp", "aiohttp"), ("uvloop", "uvloop")):
        if subprocess.run([str(py), "-c", f"import {module}"], capture_output=True).returncode != 0:
            r = subprocess.run([str(py), "-m", "pip", "install", "-q", pkg], capture_output=True, text=True)
            if r.returncode != 0:
                log(f"pip install {pkg} failed (its rows are skipped): {r.stderr.strip()[-300:]}")
    return str(py)


def python_notes(py: str) -> list[str]:
    notes = []
    for module in ("humus_http", "pycurl", "aiohttp", "uvloop"):
        code = f"import {module} as m; print(getattr(m, '__version__', getattr(m, 'version', '?')), m.__file__)"
        r = subprocess.run([py, "-c", code], capture_output=True, text=True)
        notes.append(f"{module}: {r.stdout.strip() if r.returncode == 0 else 'missing (rows skipped)'}")
    return notes


def importable(py: str, module: str) -> bool:
    return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0


# --- Report ---------------------------------------------------------------------------------------------

def find(rows: list[Row], proto: str, body: str, conc: int, name: str) -> Row | None:
    for r in rows:
        if (r.proto, r.body, r.conc, r.client.name) == (proto, body, conc, name) and any(r.samples):
            return r
    return None


def paired(a: Row, b: Row, f) -> float:  # noqa: ANN001 - f(sample_a, sample_b) -> float
    vals = [f(x, y) for x, y in zip(a.samples, b.samples) if x is not None and y is not None]
    return statistics.median(vals) if vals else float("nan")


def ratio_lines(rows: list[Row]) -> list[str]:
    out = []

    def line(label: str, proto: str, body: str, conc: int, name: str, peer: str, extra: str = "") -> None:
        a, b = find(rows, proto, body, conc, name), find(rows, proto, body, conc, peer)
        if a is None or b is None:
            out.append(f"  {label:<46} (not measured: {name if a is None else peer} missing)")
            return
        x = paired(a, b, lambda s, t: rps(s) / rps(t))
        d = paired(a, b, lambda s, t: cpu_us(s) - cpu_us(t))
        cr = paired(a, b, lambda s, t: cpu_us(s) / cpu_us(t))
        out.append(f"  {label:<46} {x:6.2f}x {peer}'s req/s   CPU/req {cr:5.2f}x ({d:+6.1f} us; "
                   f"{statistics.median(cpu_us(s) for s in a.samples if s):.1f} vs "
                   f"{statistics.median(cpu_us(s) for s in b.samples if s):.1f}){extra}")

    for name, what in (("go-humus", "Do, streamed"), ("go-humus-buffered", "Do + BufferBody"),
                       ("go-humus-start", "Start + Wait"), ("go-humus@before", "Do, before"),
                       ("go-humus-start@before", "Start + Wait, before")):
        if not any(r.client.name == name for r in rows):
            continue
        line(f"Go {what}, 16 goroutines, h1", "h1", "100", 16, name, "go-nethttp")
        line(f"Go {what}, 64 goroutines, h1", "h1", "100", 64, name, "go-nethttp")
        line(f"Go {what}, 64 goroutines, h2", "h2", "100", 64, name, "go-nethttp")
        line(f"Go {what}, sequential, h1", "h1", "100", 1, name, "go-nethttp")
    line("C blocking, 64 KiB body, h1", "h1", "64k", 1, "c-do", "curl-easy")
    line("C, 64 threads on one client, h1", "h1", "100", 64, "c-threads", "curl-multi")
    line("C, 64 threads on one client, h2", "h2", "100", 64, "c-threads", "curl-multi")
    line("C humus_client_submit, 64 in flight, h1", "h1", "100", 64, "c-submit", "curl-multi")
    line("C humus_client_submit, 64 in flight, h2", "h2", "100", 64, "c-submit", "curl-multi")
    line("C stepped, one poll loop, 16 in flight, h1", "h1", "100", 16, "c-step", "curl-multi")
    line("C stepped, one poll loop, 64 in flight, h1", "h1", "100", 64, "c-step", "curl-multi")
    line("Go net/http, 64 goroutines, h2 (for scale)", "h2", "100", 64, "go-nethttp", "curl-multi")
    line("C blocking, 100 B, h1", "h1", "100", 1, "c-do", "curl-easy")
    # The same against libcurl asked for the same request bytes (User-Agent, Accept-Encoding): the share of
    # the line above that is libcurl's own formatting of those two lines.
    line("C blocking, 100 B, h1, vs the same request", "h1", "100", 1, "c-do", "curl-easy-wire")
    # The Go boundary's own cost, sequentially: Go's streamed Do against the C call it makes.
    line("C streamed (humus_client_open), 100 B, h1", "h1", "100", 1, "c-open", "curl-easy")
    line("Go Do, streamed, sequential, vs its C call", "h1", "100", 1, "go-humus", "c-open")
    line("Python Client, sequential, h1", "h1", "100", 1, "py-humus", "pycurl")
    line("Python AsyncClient, 64 tasks, h1", "h1", "100", 64, "py-humus-async", "aiohttp-uvloop")
    line("Python AsyncClient, 64 tasks, h1 (vs multi)", "h1", "100", 64, "py-humus-async", "curl-multi")
    # Telemetry, as the issue measures it: the traced row over c-do, and, since libcurl's formatting of the
    # traceparent header is a floor no span code can lower, the traced row over the row that sends the same
    # header with no sink set (everything telemetry adds beyond that header).
    for label, name, base in (("telemetry (span + log sinks set), C, h1", "c-do-traced", "c-do"),
                              ("the traceparent header alone, no sinks", "c-do-header", "c-do"),
                              ("telemetry beyond that header", "c-do-traced", "c-do-header")):
        a, b = find(rows, "h1", "100", 1, name), find(rows, "h1", "100", 1, base)
        if a is not None and b is not None:
            pct = 100 * (paired(a, b, lambda s, t: cpu_us(s) / cpu_us(t)) - 1)
            out.append(f"  {label:<46} {pct:+6.1f} % CPU per request over {base}")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int)
    p.add_argument("--seconds", type=float, help="measured seconds per row per round (default 0.4; --long 2)")
    p.add_argument("--warmup", type=float, default=0.2)
    p.add_argument("--long", action="store_true", help="9 rounds of 2 s per row")
    p.add_argument("--full", action="store_true", help="every combination of concurrency, protocol and body")
    p.add_argument("--only", default="", help="comma-separated substrings of row names, e.g. 'h1 64k seq,c64 go-'")
    p.add_argument("--venv", type=Path, help="a venv for the Python rows (default build/bench-venv, made if missing)")
    p.add_argument("--no-python", action="store_true", help="skip the Python rows")
    p.add_argument("--no-build", action="store_true", help="use build/release as it is")
    p.add_argument("--go-before", help="another compare_go binary (e.g. built on main's binding): rows go-humus@before")
    p.add_argument("--c-before", help="another build's library directory (with libhumus_http.so): rows c-*@before")
    p.add_argument("--cpu", default=str((os.cpu_count() or 1) - 1), help="CPU for the sequential rows, or 'none'")
    a = p.parse_args()
    rounds = a.rounds or (9 if a.long else 5)
    seconds = a.seconds or (2.0 if a.long else 0.4)
    cpu = None if a.cpu == "none" else a.cpu

    build(a.no_build)
    py = None if a.no_python else venv_python(a.venv or ROOT / "build" / "bench-venv", a.venv is not None)
    cs = {c.name: c for c in clients(py, a.go_before, a.c_before)}
    skipped = []
    if not (BUILD / "bench" / "compare_go").exists():
        for name in [n for n in cs if n.startswith("go-") and "@" not in n]:
            cs.pop(name)
            skipped.append(f"{name} (no compare_go)")
    if py is not None:
        for name, module in (("pycurl", "pycurl"), ("py-humus", "humus_http"), ("aiohttp-uvloop", "aiohttp"),
                             ("py-humus-async", "humus_http")):
            if not importable(py, module):
                cs.pop(name)
                skipped.append(f"{name} (the venv cannot import {module})")
    rows = full_rows(cs) if a.full else default_rows(cs)
    if a.only:
        subs = [s for s in a.only.split(",") if s]
        rows = [r for r in rows if any(s in " ".join(r.key.split()) for s in subs)]

    env = {**os.environ, "LD_LIBRARY_PATH": f"{STAGE}/lib:{os.environ.get('LD_LIBRARY_PATH', '')}",
           "no_proxy": "*", "NO_PROXY": "*"}
    server = Nginx()
    try:
        server.start(cpu)
        nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
        print(f"compare: {nginx_version} on 127.0.0.1:{server.h1_port} (h1) and :{server.h2_port} (h2, TLS); "
              f"{rounds} rounds x {seconds} s per row (warm-up {a.warmup} s); sequential rows with client and nginx "
              f"on CPU {cpu}, concurrent rows unpinned; load before: {os.getloadavg()[0]:.2f}", flush=True)
        pinned = cpu
        for rnd in range(rounds):
            order = rows if rnd % 2 == 0 else list(reversed(rows))
            for r in order:
                want = cpu if r.conc == 1 else None
                if want != pinned:
                    server.pin(want)
                    pinned = want
                s = run_row(r, server, seconds, a.warmup, cpu, env)
                r.samples.append(s)  # None keeps rounds aligned for the paired ratios
            log(f"round {rnd + 1}/{rounds} done (load {os.getloadavg()[0]:.2f})")
    finally:
        server.stop()

    print(f"\nMedians over {rounds} rounds (CPU: the client process's, user + sys)")
    print(f"{'row':<34} {'req/s':>9} {'CPU us/req':>11} {'errors':>7}")
    for r in rows:
        ok = [s for s in r.samples if s is not None]
        if not ok:
            print(f"{r.key:<34} {'-':>9} {'-':>11}   (failed)")
            continue
        print(f"{r.key:<34} {statistics.median(rps(s) for s in ok):9.0f} "
              f"{statistics.median(cpu_us(s) for s in ok):11.2f} {sum(s['errors'] for s in ok):7.0f}")
    print("\nThe issue's rows (medians of per-round ratios, same round, same server)")
    for line in ratio_lines(rows):
        print(line)
    print("\nNotes:")
    print(f"  load average after: {os.getloadavg()[0]:.2f} (2-core machine shared with other work: wall-clock "
          f"figures vary, CPU per request less)")
    if py is not None:
        for n in python_notes(py):
            print(f"  {n}")
    for s in skipped:
        print(f"  skipped: {s}")
    print("  aiohttp has no HTTP/2: its h2 rows do not exist. pycurl's wheel may carry its own libcurl build.")


if __name__ == "__main__":
    main()
