"""Ctrl-C interrupts a blocking call on the main thread (in a child process, so that the signal reaches
nothing else): KeyboardInterrupt ends the call while the server still holds it, long before its deadline."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from server_harness import TestServer

CHILD = Path(__file__).with_name("interrupt_child.py")


@pytest.mark.parametrize("mode", ["watch", "polling"])
def test_ctrl_c_interrupts_a_blocking_call(server: TestServer, path: str, mode: str) -> None:
    server.script(path, [{"hang": True}])
    # The child makes SIGINT's handler Python's default itself: this process may have inherited SIG_IGN.
    done = subprocess.run([sys.executable, str(CHILD), server.url("http"), path, mode], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # The signal was sent once the server held the request, and KeyboardInterrupt ended the call before its
    # deadline could: nothing but the signal ends a call to a server that never answers.
    assert result == {"interrupted": True, "signal_was_sent": True, "before_deadline": True, "after": 200}, result
    assert len(server.requests(path)) == 1
