#!/usr/bin/env python3
"""The backoff draws a seed produces (docs/retries.md §6.2, src/retry/backoff.h, src/common/random.h), computed
independently of the core, for writing and checking conformance vectors.

    draws.py SEED BASE_MS MAX_MS N      # the first N draws for attempts 1..N of one call
    draws.py SEED --caps 100,200,400    # one draw per cap (ms), in order

Each retry decision that reaches the wait computation consumes exactly one 64-bit value of the runtime's
SplitMix64 sequence (seeded with "seed"), in the order decisions happen on the runtime; the wait in
nanoseconds is floor(next * (cap_ns + 1) / 2^64). A vector with several calls consumes the sequence across
them: pass every cap in order with --caps.
"""
import sys

MASK = (1 << 64) - 1


def splitmix64(seed):
    state = seed & MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def draw_ns(value, cap_ms):
    return (value * (cap_ms * 1_000_000 + 1)) >> 64


def main(argv):
    seed = int(argv[1])
    if argv[2] == "--caps":
        caps = [int(c) for c in argv[3].split(",")]
    else:
        base, top, n = int(argv[2]), int(argv[3]), int(argv[4])
        caps = [min(top, base * 2 ** (i - 1)) for i in range(1, n + 1)]
    rng = splitmix64(seed)
    total = 0
    for i, cap in enumerate(caps, 1):
        ns = draw_ns(next(rng), cap)
        total += ns
        print(f"draw {i}: cap {cap} ms -> {ns} ns = {ns / 1e6:.6f} ms; cumulative {total / 1e6:.6f} ms")


if __name__ == "__main__":
    main(sys.argv)
