"""Run by test_signals.py in a child process: a blocking call on the main thread, interrupted by SIGINT.

    python3 interrupt_child.py BASE_URL PATH MODE     MODE: "watch" (the default path) or "polling" (another
                                                      wakeup fd is installed, as when an asyncio loop runs)

Prints one JSON line: {"interrupted": bool, "latency_s": seconds from the signal to KeyboardInterrupt,
"after": status of a call made afterwards}.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import humus_http


def main() -> None:
    base_url, path, mode = sys.argv[1:4]
    if mode == "polling":
        _read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end)
    sent_at: list[float] = []

    def interrupt() -> None:
        sent_at.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    with humus_http.Client(base_url, timeout=10.0, attempt_timeout=10.0) as client:
        threading.Timer(0.3, interrupt).start()
        interrupted = False
        try:
            client.get(path)
        except KeyboardInterrupt:
            interrupted = True
        latency = time.monotonic() - sent_at[0] if sent_at else -1.0
        after = client.get(path + "/after").status_code
    print(json.dumps({"interrupted": interrupted, "latency_s": latency, "after": after}), flush=True)


if __name__ == "__main__":
    main()
