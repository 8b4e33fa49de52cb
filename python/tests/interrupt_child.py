"""Run by test_signals.py in a child process: a blocking call on the main thread, interrupted by SIGINT.

    python3 interrupt_child.py BASE_URL PATH MODE     MODE: "watch" (the default path) or "polling"
                                                      (another wakeup fd is installed, as when an asyncio
                                                      loop runs)

BASE_URL/PATH must hang (the test server's {"hang": true}). SIGINT is sent once the server has received the
request, so the signal lands while the call blocks. Prints one JSON line: {"interrupted": bool,
"before_deadline": whether KeyboardInterrupt came before the call's own deadline could have ended it,
"after": status of a call made afterwards}.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import threading
import time
import urllib.parse

import humus_http

# The call's deadline: only SIGINT can end the call before it. Generous, so that no loaded machine takes that
# long to deliver the signal; the test asserts the order of events, not a latency.
DEADLINE_S = 30.0


def received(base_url: str, path: str) -> int:
    """How many requests to PATH the test server has recorded (its control API)."""
    url = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    try:
        connection.request("GET", "/_control/requests?" + urllib.parse.urlencode({"path": path}))
        return len(json.loads(connection.getresponse().read()))
    finally:
        connection.close()


def main() -> None:
    # A child inherits an ignored SIGINT (SIG_IGN) from a parent started by nohup or a CI runner, and Python
    # then installs no handler of its own: Ctrl-C must raise KeyboardInterrupt here whatever the parent did.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    base_url, path, mode = sys.argv[1:4]
    if mode == "polling":
        _read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end)
    sent = threading.Event()

    def interrupt() -> None:
        end = time.monotonic() + DEADLINE_S
        while received(base_url, path) < 1 and time.monotonic() < end:  # the call is blocked on the server
            time.sleep(0.01)
        sent.set()
        os.kill(os.getpid(), signal.SIGINT)

    with humus_http.Client(base_url, timeout=DEADLINE_S, attempt_timeout=DEADLINE_S, max_attempts=1) as client:
        threading.Thread(target=interrupt, daemon=True).start()
        interrupted = False
        started = time.monotonic()
        try:
            client.get(path)
        except KeyboardInterrupt:
            interrupted = True
        before_deadline = time.monotonic() - started < DEADLINE_S
        signal_was_sent = sent.is_set()
        after = client.get(path + "/after").status_code
    print(json.dumps({"interrupted": interrupted, "signal_was_sent": signal_was_sent,
                      "before_deadline": before_deadline, "after": after}), flush=True)


if __name__ == "__main__":
    main()
