"""A bounded soak of the Python package against a fault-scheduled loopback upstream (README.md).

    python tests/soak/soak.py [--duration 90] [--seed 1] [--protocol http1|h2]

``--protocol h2`` (or ``--http2``): the upstream speaks HTTP/2 over TLS (ALPN h2) and injects HTTP/2's own
faults — connection errors, GOAWAYs, refused streams — besides the HTTP-level ones (upstream_h2.py).

Threads call two blocking ``Client``s and an asyncio task group calls an ``AsyncClient``, as fast as they can,
while the upstream (upstream.py, a child process) goes healthy -> slow -> burst of faults -> outage ->
recovery. Every call carries its own ``X-Request-ID`` (through the call context) and its client's
``X-Soak-Client``; the upstream's ledger, keyed by them, is then checked against what the calls reported
(invariants.py). Prints one line per invariant and ``N passed, M failed``; exits 1 on any failure.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import humus_http

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import invariants  # noqa: E402

# What each client is, and how it is driven. Short timeouts so that a 90 s run sees many of each fault.
COMMON: dict[str, Any] = dict(
    timeout=1.0, attempt_timeout=0.3, connect_timeout=0.2, max_attempts=3, backoff_base=0.02, backoff_max=0.2,
    breaker=humus_http.Breaker(open_for=1.0, probe_timeout=1.0),
    trip=humus_http.Trip(consecutive_failures=20, failure_rate=0.8, min_results=50),
)
CLIENTS = {
    # name: (kind, workers, bulkhead.max_concurrent, retry budget). sync-b's generous budget lets retries
    # through the faults, so that calls reach max_attempts; the others drain theirs as designed.
    "sync-a": ("sync", 5, 3, humus_http.RetryBudget(tokens=10, ratio=0.1)),
    "sync-b": ("sync", 2, 8, humus_http.RetryBudget(tokens=400, ratio=1.0)),
    "async": ("async", 12, 8, humus_http.RetryBudget(tokens=20, ratio=0.2)),
}
# The longest a retry's charge can precede its arrival on the wire (the longest wait, backoff_max, which is
# also max_retry_after, then connecting), and a success's answer its count at the client (the deadline), with
# the soak's 250 ms slack on each.
CHARGE_LAG_S = 0.2 + 0.2 + 0.25
COUNT_LAG_S = 1.0 + 0.25
BULKHEAD_WAIT = 0.05
SHORT_TIMEOUT = 0.5  # a quarter of the calls set their own, shorter deadline
CANCEL_SHARE = 0.2  # of the asynchronous calls, cancelled by asyncio.wait_for after 10-400 ms
TOKEN_SHARE = 0.1  # of the blocking calls, given a CancelToken that another thread triggers after 10-400 ms
RSS_EVERY_S = 0.25


def resource_counts() -> dict[str, int]:
    fds = os.listdir("/proc/self/fd")
    sockets = 0
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                sockets += 1
        except OSError:
            pass  # the listing's own fd, closed by now
    return {"fds": len(fds), "sockets": sockets, "threads": threading.active_count(),
            "tasks": len(os.listdir("/proc/self/task"))}


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Recorder:
    """Calls' outcomes, written to a file as they come so that the soak's own memory stays flat."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.lock = threading.Lock()
        self.started: dict[str, int] = {name: 0 for name in CLIENTS}
        self.current: dict[str, str] = {}  # worker -> the id of its call in flight

    def begin(self, worker: str, client: str) -> str:
        with self.lock:
            n = self.started[client]
            self.started[client] = n + 1
        rid = f"{client}-{n}"
        self.current[worker] = rid
        return rid

    def end(self, worker: str, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with self.lock:
            self.out.write(line + "\n")
        self.current.pop(worker, None)


class Canceller:
    """One thread that triggers the CancelTokens of blocking calls when they come due."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.due: list[tuple[float, int, humus_http.CancelToken]] = []
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="soak-canceller")

    def token(self, after: float) -> humus_http.CancelToken:
        token = humus_http.CancelToken()
        with self.lock:
            self.count += 1
            heapq.heappush(self.due, (time.monotonic() + after, self.count, token))
        return token

    def run(self) -> None:
        while not self.stop.wait(0.005):
            now = time.monotonic()
            with self.lock:
                while self.due and self.due[0][0] <= now:
                    heapq.heappop(self.due)[2].cancel()


def plan(rng: random.Random) -> tuple[str, bool, float | None]:
    """A call's method, whether it carries an Idempotency-Key, and its own timeout (None: the client's)."""
    r = rng.random()
    method, idem = ("GET", False) if r < 0.5 else ("POST", False) if r < 0.7 else ("POST", True) \
        if r < 0.85 else ("PUT", False)
    return method, idem, (SHORT_TIMEOUT if rng.random() < 0.25 else None)


class Cancelled:
    """A call the soak cancelled (asyncio.wait_for ran out): it ends without a count of its own."""


class ClientClosed:
    """A blocking call made just after the soak closed its client: RuntimeError, nothing sent."""


def call_timeout(timeout: float | None) -> float | humus_http.UseClientDefault:
    """A call's timeout argument: its own, or the client's (None would be refused: deadlines are mandatory)."""
    return humus_http.USE_CLIENT_DEFAULT if timeout is None else timeout


def sent_of(result: humus_http.Response | humus_http.UpstreamError) -> dict[str, int]:
    """What the call's decision trace says (docs/trace.md): ``traced``, its attempts (admitted by the breaker:
    a rejection or a call stopped before asking it is no attempt); ``sent``, the requests that reached the wire,
    summed over them; ``answered_unsent``, attempts with an HTTP status that say they sent nothing."""
    trace = result.trace
    return {"traced": sum(1 for a in trace if a.breaker is not None and a.decision != "rejected"),
            "sent": sum(a.wire_sends for a in trace),
            "answered_unsent": sum(1 for a in trace if a.wire_sends == 0 and a.status is not None)}


def outcome(rid: str, client: str, method: str, idem: bool, t0: float, t1: float, timeout: float | None,
            result: Any, cut: bool = False) -> dict[str, Any]:
    """`cut`: the soak's own cancel (a CancelToken, the AsyncClient's aclose()) fired before the call returned."""
    record = {"rid": rid, "client": client, "method": method, "idem": idem, "t0": t0, "t1": t1,
              "deadline": timeout if timeout is not None else COMMON["timeout"], "cut": cut}
    if isinstance(result, humus_http.ConfigError):
        # Every call the soak makes is valid: a refused one means the driver or the package broke.
        record.update(outcome="unexpected", kind=f"{type(result).__name__}: {result}", attempts=0)
    elif isinstance(result, humus_http.Response):
        # The upstream echoes the call id in X-Echo and in a 200's body: is this answer this call's own?
        own = result.headers.get("x-echo") == rid and (result.status_code != 200 or result.content == rid.encode())
        record.update(outcome="response", kind=result.status_code, attempts=result.attempts, own=own,
                      version=result.http_version, **sent_of(result))
    elif isinstance(result, humus_http.UpstreamError):
        record.update(outcome="error", kind=type(result).__name__, status=result.status, attempts=result.attempts,
                      **sent_of(result), message=str(result)[:200])  # to tell, with --keep, a dial that timed out from a wait
    elif isinstance(result, Cancelled):
        record.update(outcome="cancelled", kind="cancelled", attempts=None)
    elif isinstance(result, ClientClosed):
        record.update(outcome="error", kind="RuntimeError: closed", attempts=0)
    else:
        record.update(outcome="unexpected", kind=f"{type(result).__name__}: {result}", attempts=0)
    return record


def sync_worker(client: humus_http.Client, name: str, worker: str, rec: Recorder, stop_at: float,
                seed: int, canceller: Canceller) -> None:
    rng = random.Random(seed)
    while time.monotonic() < stop_at and not client.is_closed:
        rid = rec.begin(worker, name)
        method, idem, timeout = plan(rng)
        cancel = canceller.token(rng.uniform(0.01, 0.4)) if rng.random() < TOKEN_SHARE else None
        t0 = time.monotonic()
        try:
            result: Any = client.request(method, f"/soak/{rid}", content=b"payload" if method != "GET" else None,
                                         idempotency_key=f"key-{rid}" if idem else None, timeout=call_timeout(timeout),
                                         context=humus_http.CallContext(request_id=rid), cancel=cancel)
        except RuntimeError as error:
            # The soak closed the client between this worker's check and its call: refused before sending.
            result = ClientClosed() if client.is_closed else error
        except Exception as error:  # noqa: BLE001 - every outcome is recorded, the unexpected ones too
            result = error
        t1 = time.monotonic()
        cut = cancel is not None and cancel.cancelled
        rec.end(worker, outcome(rid, name, method, idem, t0, t1, timeout, result, cut))


async def async_driver(client: humus_http.AsyncClient, name: str, workers: int, rec: Recorder, stop_at: float,
                       seed: int) -> None:
    async def one(worker: str, rng: random.Random) -> None:
        while time.monotonic() < stop_at and not client.is_closed:
            rid = rec.begin(worker, name)
            method, idem, timeout = plan(rng)
            cancel_after = rng.uniform(0.01, 0.4) if rng.random() < CANCEL_SHARE else None
            t0 = time.monotonic()
            try:
                call = client.request(method, f"/soak/{rid}", content=b"payload" if method != "GET" else None,
                                      idempotency_key=f"key-{rid}" if idem else None, timeout=call_timeout(timeout),
                                      context=humus_http.CallContext(request_id=rid))
                result: Any = await (call if cancel_after is None else asyncio.wait_for(call, cancel_after))
            except TimeoutError as error:
                # wait_for cancelled the task: the call ended with no outcome of its own. An
                # UpstreamTimeoutError is a TimeoutError too, but it is the call's own.
                result = error if isinstance(error, humus_http.UpstreamError) else Cancelled()
            except Exception as error:  # noqa: BLE001
                result = error
            # aclose() at the end cancels the calls in flight.
            rec.end(worker, outcome(rid, name, method, idem, t0, time.monotonic(), timeout, result,
                                    client.is_closed))

    async def close_at_the_end() -> None:
        # Closing with calls in flight cancels them (CancelledCallError, with their attempts): each still
        # has exactly one outcome, and what they held is released with the client.
        await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
        await client.aclose()

    async with asyncio.TaskGroup() as group:
        for i in range(workers):
            group.create_task(one(f"{name}/{i}", random.Random(seed + i)))
        group.create_task(close_at_the_end())


def sample_rss(samples: list[tuple[float, int]], stop: threading.Event) -> None:
    while not stop.wait(RSS_EVERY_S):
        samples.append((time.monotonic(), rss_bytes()))


def run(duration: float, seed: int, workdir: Path, protocol: str = "http1") -> tuple[list[str], int]:
    ledger_path = workdir / "ledger.jsonl"
    calls_path = workdir / "calls.jsonl"
    certs = workdir / "certs"  # h2: made by the upstream (the test server's, tests/server/)
    tls: dict[str, Any] = {}
    if protocol == "h2":
        tls = {"tls": humus_http.TLS(ca_file=certs / "ca.pem")}
    upstream = subprocess.Popen([sys.executable, str(HERE / "upstream.py"), "--duration", str(duration),
                                 "--ledger", str(ledger_path), "--seed", str(seed), "--protocol", protocol,
                                 "--certs", str(certs)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    calls_file = open(calls_path, "w", encoding="utf-8")  # noqa: SIM115 - closed below, before the counts
    try:
        assert upstream.stdout is not None
        line = upstream.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"the upstream did not start: {line!r}")
        port = int(line.split()[1])
        gc.collect()
        baseline = resource_counts()
        rss: list[tuple[float, int]] = [(time.monotonic(), rss_bytes())]
        stop_rss = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(rss, stop_rss), name="soak-rss")
        sampler.start()

        rec = Recorder(calls_file)
        runtime = humus_http.Runtime()
        clients: dict[str, Any] = {}
        for name, (kind, _, cap, budget) in CLIENTS.items():
            cls = humus_http.Client if kind == "sync" else humus_http.AsyncClient
            scheme = "https" if protocol == "h2" else "http"
            clients[name] = cls(f"{scheme}://127.0.0.1:{port}", **COMMON, **tls, runtime=runtime, retry_budget=budget,
                                bulkhead=humus_http.Bulkhead(max_concurrent=cap, wait=BULKHEAD_WAIT),
                                headers={"X-Soak-Client": name})
        stop_at = time.monotonic() + duration
        canceller = Canceller()
        canceller.thread.start()
        threads: list[threading.Thread] = []
        for name, (kind, workers, _, _) in CLIENTS.items():
            if kind == "sync":
                for i in range(workers):
                    threads.append(threading.Thread(target=sync_worker, name=f"soak-{name}-{i}",
                                                    args=(clients[name], name, f"{name}/{i}", rec, stop_at,
                                                          seed * 1000 + len(threads), canceller)))
            else:
                threads.append(threading.Thread(target=asyncio.run, name=f"soak-{name}", args=(
                    async_driver(clients[name], name, workers, rec, stop_at, seed * 1000 + 500),)))
        peak = resource_counts()
        for t in threads:
            t.start()
        time.sleep(min(1.0, duration / 4))
        peak = {k: max(v, peak[k]) for k, v in resource_counts().items()}
        # A call cannot outlast its deadline by much; give stragglers the longest one and some more.
        # Close the blocking clients at the end with calls in flight on their threads, as the AsyncClient
        # closes itself: a call in flight finishes first, later ones raise RuntimeError.
        time.sleep(max(0.0, stop_at - time.monotonic()))
        for name, (kind, *_) in CLIENTS.items():
            if kind == "sync":
                clients[name].close()
        join_by = stop_at + COMMON["timeout"] + 5.0
        for t in threads:
            t.join(max(0.0, join_by - time.monotonic()))
        unfinished = sorted(rec.current.values())
        alive = [t for t in threads if t.is_alive()]
        for c in clients.values():
            c.close()
        for t in alive:
            t.join(5.0)
        canceller.stop.set()
        canceller.thread.join()
        del canceller
        stop_rss.set()
        sampler.join()
        del clients, runtime, c
        calls_file.close()
        gc.collect()
        after = resource_counts()
        for _ in range(20):  # native threads and sockets may take a moment to wind down
            if all(after[k] <= baseline[k] for k in baseline):
                break
            time.sleep(0.1)
            gc.collect()
            after = resource_counts()
    finally:
        if not calls_file.closed:
            calls_file.close()
        assert upstream.stdin is not None
        upstream.stdin.close()
        upstream.wait(30)
        assert upstream.stdout is not None
        upstream.stdout.close()

    with open(ledger_path, encoding="utf-8") as f:
        header = json.loads(f.readline())
        ledger = [json.loads(line) for line in f]
    with open(calls_path, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f]
    meta = {
        "clients": {name: {"max_attempts": COMMON["max_attempts"], "bulkhead": cap, "tokens": budget.tokens,
                           "ratio": budget.ratio, "charge_lag": CHARGE_LAG_S, "count_lag": COUNT_LAG_S}
                    for name, (_, _, cap, budget) in CLIENTS.items()},
        "started": dict(rec.started),
        "unfinished": unfinished,
        "version": "HTTP/2" if protocol == "h2" else "HTTP/1.1",
    }
    resources = {"baseline": baseline, "after": after, "peak": peak}
    results = invariants.check_all(calls, ledger, header, meta, resources, rss)
    summary = summarize(calls, ledger, duration, protocol)
    lines, failed = invariants.report(results)
    return [summary, *lines], failed


def summarize(calls: list[dict[str, Any]], ledger: list[dict[str, Any]], duration: float, protocol: str) -> str:
    from collections import Counter
    kinds = Counter(str(c["kind"]) for c in calls)
    actions = Counter(e["action"] for e in ledger)
    refused = sum(1 for e in ledger if e.get("refused"))
    return (f"soak ({protocol}): {duration:g}s, {len(calls)} calls ({len(calls) / duration:.0f}/s), {len(ledger)} "
            f"wire requests ({refused} refused unprocessed); outcomes {dict(kinds.most_common())}; "
            f"upstream actions {dict(actions.most_common())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=90.0, help="seconds of load (default 90)")
    parser.add_argument("--seed", type=int, default=1, help="the upstream's and the callers' random seed")
    parser.add_argument("--keep", metavar="DIR", help="keep the ledger and the calls in DIR")
    parser.add_argument("--protocol", choices=("http1", "h2"), default="http1",
                        help="h2: HTTP/2 over TLS with HTTP/2's faults (default http1)")
    parser.add_argument("--http2", dest="protocol", action="store_const", const="h2", help="--protocol h2")
    args = parser.parse_args()
    if not 2.0 <= args.duration <= 3600.0:
        parser.error("--duration: between 2 and 3600 seconds")
    if args.keep:
        workdir = Path(args.keep)
        workdir.mkdir(parents=True, exist_ok=True)
        lines, failed = run(args.duration, args.seed, workdir, args.protocol)
    else:
        with tempfile.TemporaryDirectory(prefix="humus-soak-") as tmp:
            lines, failed = run(args.duration, args.seed, Path(tmp), args.protocol)
    for line in lines:
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
