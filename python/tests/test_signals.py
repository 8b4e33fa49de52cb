"""Ctrl-C interrupts a blocking call on the main thread within 100 ms (in a child process, so that the signal
reaches nothing else)."""
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
    done = subprocess.run([sys.executable, str(CHILD), server.url("http"), path, mode], capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["interrupted"] is True
    assert 0 <= result["latency_s"] < 0.1, result
    assert result["after"] == 200  # the client is fine after the interruption
    assert len(server.requests(path)) == 1
