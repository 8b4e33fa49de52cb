#!/usr/bin/env python3
"""The per-attempt cost of a classifier plugin against the same rule as a Python callable (docs/retries.md §5.4a).

    python3 bench/plugin_bench.py [--plugin PATH] [--calls N] [--rounds R]

Both clients run on a virtual clock with the mock transport, which answers every attempt 409: each call makes
max_attempts (10) attempts, every one classified "retry" by the rule — once in C by
bindings/c/examples/retry_409_plugin.c (built here with cc unless --plugin or HUMUS_TEST_PLUGIN names it),
once by a Python callable holding the GIL. The mock's handler is the same Python function for both, so the
difference per attempt is the classifier's. Rounds alternate the two; the median per-attempt time of each is
printed with the ratio measured in this run. Prints figures, never passes or fails on time (STYLE.md).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import humus_http
from humus_http import Classification, MockReply, Runtime

ROOT = Path(__file__).resolve().parents[1]
BASE = "http://ledger:8080"
MAX_ATTEMPTS = 10
# Retries are never throttled, and waits are virtual: only the attempts cost.
SETTINGS = {"base_url": BASE, "max_attempts": MAX_ATTEMPTS, "backoff_base": "1ms", "backoff_max": "1ms",
            "retry_budget": {"policy": "ratio", "ratio": 1, "min_per_second": 4000000000}}


def build_plugin(out_dir: str) -> str:
    out = Path(out_dir) / "libretry_409_plugin.so"
    subprocess.run([os.environ.get("CC", "cc"), "-std=c99", "-O2", "-shared", "-fPIC", f"-I{ROOT / 'include'}",
                    "-o", str(out), str(ROOT / "bindings/c/examples/retry_409_plugin.c")], check=True)
    return str(out)


def python_rule(attempt: humus_http.Attempt) -> Classification:
    if attempt.status == 409:
        return Classification(retry=True, breaker="success")
    return humus_http.default_classify(attempt)


def conflict(request: humus_http.MockRequest) -> MockReply:
    return MockReply(status=409)


def per_attempt_us(client: humus_http.Client, calls: int) -> float:
    attempts = 0
    start = time.perf_counter()
    for _ in range(calls):
        attempts += client.get("/charges/7").attempts
    elapsed = time.perf_counter() - start
    assert attempts == calls * MAX_ATTEMPTS, f"{attempts} attempts for {calls} calls: the rule did not retry"
    return elapsed / attempts * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plugin", default=os.environ.get("HUMUS_TEST_PLUGIN"))
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        plugin = args.plugin or build_plugin(scratch)
        runtime = Runtime(clock="virtual", seed=1, mock=conflict)
        in_c = humus_http.Client.from_settings(
            {**SETTINGS, "classify": {"plugin": plugin, "symbol": "retry_409_classifier"}}, runtime=runtime)
        in_python = humus_http.Client.from_settings(SETTINGS, classify=python_rule, runtime=runtime)
        with in_c, in_python:
            per_attempt_us(in_c, 20)  # warm both
            per_attempt_us(in_python, 20)
            plugin_us: list[float] = []
            callable_us: list[float] = []
            for _ in range(args.rounds):
                plugin_us.append(per_attempt_us(in_c, args.calls))
                callable_us.append(per_attempt_us(in_python, args.calls))
    p, c = statistics.median(plugin_us), statistics.median(callable_us)
    print(f"{args.rounds} rounds of {args.calls} calls x {MAX_ATTEMPTS} attempts (each a 409, classified retry), "
          "mock transport, virtual clock")
    print(f"{'classifier':<22}{'us per attempt':>16}{'vs plugin':>12}")
    print(f"{'plugin (C)':<22}{p:>16.2f}{1.0:>12.2f}")
    print(f"{'Python callable':<22}{c:>16.2f}{c / p:>12.2f}")
    print(f"the Python callable costs {c - p:.2f} us more per attempt (the mock's Python handler is in both)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
