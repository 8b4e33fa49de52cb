#!/usr/bin/env python3
"""Writes outage.jsonl, the example traffic of docs/replay.md (§21.6): two minutes of a dependency called about
five times a second that is healthy, fails (503 with Retry-After, then no answer at all), and recovers slowly.
The same file every run: the draws come from a fixed seed. Run from anywhere: python3 docs/replay/make_outage.py"""
from __future__ import annotations

import json
import random
from pathlib import Path

RATE = 5.0  # calls a second, on average (Poisson arrivals)
END = 120.0


def outcome(t: float, rng: random.Random) -> dict:
    """What the dependency answered at t seconds."""
    if t < 40:  # healthy
        return {"status": 200, "latency": round(rng.uniform(0.03, 0.08), 3)}
    if t < 60:  # overloaded: turns most requests away at once, asking for 2 s
        if rng.random() < 0.85:
            return {"status": 503, "latency": round(rng.uniform(0.005, 0.02), 3), "retry_after": 2}
        return {"status": 200, "latency": round(rng.uniform(0.2, 0.6), 3)}
    if t < 75:  # down: connections hang, a few are refused
        if rng.random() < 0.8:
            return {"error": "timeout", "latency": 5.0}
        return {"error": "connect", "latency": 0.001}
    if t < 90:  # recovering: answers, slowly, with some errors left
        if rng.random() < 0.2:
            return {"status": 503, "latency": round(rng.uniform(0.01, 0.05), 3)}
        return {"status": 200, "latency": round(rng.uniform(0.15, 0.4), 3)}
    return {"status": 200, "latency": round(rng.uniform(0.03, 0.08), 3)}  # healthy again


def main() -> None:
    rng = random.Random(41)
    lines = []
    t = 0.0
    while True:
        t += rng.expovariate(RATE)
        if t >= END:
            break
        line = {"time": round(t, 3), "method": "POST" if rng.random() < 0.1 else "GET"}
        line.update(outcome(t, rng))
        lines.append(json.dumps(line))
    Path(__file__).with_name("outage.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
