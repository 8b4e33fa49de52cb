"""humus-http --settings naming a classifier plugin (docs/retries.md §5.4a): the example plugin of
bindings/c/examples/retry_409_plugin.c, found through HUMUS_TEST_PLUGIN (ctest sets it to the build's)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from server_harness import TestServer


@pytest.fixture(scope="module")
def plugin() -> str:
    path = os.environ.get("HUMUS_TEST_PLUGIN")
    if not path or not Path(path).is_file():
        pytest.fail(f"HUMUS_TEST_PLUGIN must name the built example plugin (got {path!r}): run through ctest")
    return path


def test_a_classifier_plugin_in_the_settings_retries_a_409(run, server: TestServer, tmp_path: Path,
                                                          plugin: str) -> None:
    settings = tmp_path / "ledger.json"
    settings.write_text(json.dumps({
        "backoff_base": "1ms", "backoff_max": "5ms",
        "classify": {"plugin": plugin, "symbol": "retry_409_classifier", "config": {"status": 409}}}))
    server.script("/cli-ledger", [{"status": 409}, {"status": 200, "body": "paid"}])
    result = run("get", server.url("http", "/cli-ledger"), "--settings", str(settings),
                 "-w", "\n%{http_code} %{attempts}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines()[-2:] == ["paid", "200 2"]
    assert len(server.requests("/cli-ledger")) == 2


def test_a_missing_plugin_symbol_exits_78_naming_the_key(run, server: TestServer, tmp_path: Path,
                                                        plugin: str) -> None:
    settings = tmp_path / "bad.json"
    settings.write_text(json.dumps({"classify": {"plugin": plugin, "symbol": "no_such_entry"}}))
    result = run("get", server.url("http", "/x"), "--settings", str(settings))
    assert result.returncode == 78
    assert "classify.symbol" in result.stderr and "no_such_entry" in result.stderr
    assert server.requests("/x") == []


def test_trace_follows_a_call_judged_by_a_plugin_classifier(run, server: TestServer, tmp_path: Path,
                                                            plugin: str) -> None:
    settings = tmp_path / "ledger.json"
    settings.write_text(json.dumps({
        "backoff_base": "1ms", "backoff_max": "5ms",
        "classify": {"plugin": plugin, "symbol": "retry_409_classifier", "config": {"status": 409}}}))
    server.script("/cli-traced", [{"status": 409}, {"status": 200, "body": "paid"}])
    result = run("get", server.url("http", "/cli-traced"), "--settings", str(settings), "--trace")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("trace: attempt ")]
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("trace: attempt 1: 409 ") and "classified: again" in lines[0]
    assert "decision: again" in lines[0] and "decision: done" in lines[1]
