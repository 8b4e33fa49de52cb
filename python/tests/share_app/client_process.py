"""One process of test_share.py: a humus_http.Client of the dependency's origin sharing the segment named on the
command line (docs/shared.md §22), driven line by line on stdin so the test orders the processes' calls:

- ``call``: one GET of /dep; prints ``status <code>``, ``rejected`` (CircuitOpenError) or ``error <class>``;
- ``readiness``: prints the runtime's readiness report (one JSON line);
- ``quit``: closes the client and leaves.

Prints ``ready`` once the client is made (or ``failed <message>`` and leaves)."""
from __future__ import annotations

import json
import sys

import humus_http

# What every process of the segment must agree on (docs/shared.md §22.1), and an open breaker that stays open
# for the whole test: no probe reaches the dependency while the test counts.
OPEN_FOR = "10m"


def main() -> int:
    origin, name = sys.argv[1], sys.argv[2]
    runtime = humus_http.Runtime()
    try:
        client = humus_http.Client(origin, runtime=runtime, max_attempts=1,
                                   breaker=humus_http.Breaker(open_for=OPEN_FOR),
                                   share=humus_http.Share(name=name))
    except humus_http.UpstreamError as error:  # reported to the test, which fails on it
        print(f"failed {error}", flush=True)
        return 1
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "call":
            try:
                print(f"status {client.get('/dep').status_code}", flush=True)
            except humus_http.CircuitOpenError:
                print("rejected", flush=True)
            except humus_http.UpstreamError as error:
                print(f"error {type(error).__name__}: {error}", flush=True)
        elif command == "readiness":
            print(json.dumps(runtime.readiness()), flush=True)
        elif command == "quit":
            break
        else:
            print(f"unknown {command}", flush=True)
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
