"""A classifier and a breaker policy compiled in C as a plugin (docs/retries.md §5.4a), named in the settings:
bindings/c/examples/retry_409_plugin.c, from HUMUS_TEST_PLUGIN when set, else built here with the C compiler.
The rule runs in C inside the core: no Python callable is called per attempt."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import humus_http
from server_harness import TestServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("HUMUS_TEST_PLUGIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("plugin") / "libretry_409_plugin.so"
    subprocess.run([os.environ.get("CC", "cc"), "-std=c99", "-shared", "-fPIC", "-Wall", "-Werror",
                    f"-I{ROOT / 'include'}", "-o", str(out), str(ROOT / "bindings/c/examples/retry_409_plugin.c")],
                   check=True)
    return str(out)


def test_a_classifier_plugin_retries_a_409_and_counts_it_a_success(server: TestServer, runtime: humus_http.Runtime,
                                                                   plugin: str, path: str) -> None:
    server.script(path, [{"status": 409}, {"status": 200, "body": "paid"}])
    with humus_http.Client.from_settings(
            {"base_url": server.url("http", ""), "backoff_base": "1ms", "backoff_max": "5ms",
             "classify": {"plugin": plugin, "symbol": "retry_409_classifier", "config": {"status": 409}}},
            runtime=runtime) as client:
        response = client.get(path)
        assert (response.status_code, response.text, response.attempts) == (200, "paid", 2)
        counts = client.breaker_counts
        assert (counts.successes, counts.failures) == (2, 0)


def test_a_policy_plugin_opens_the_breaker_after_two_failures(server: TestServer, runtime: humus_http.Runtime,
                                                              plugin: str, path: str) -> None:
    server.script(path, [{"status": 503}])
    with humus_http.Client.from_settings(
            {"base_url": server.url("http", ""), "max_attempts": 1,
             "breaker_policy": {"plugin": plugin, "symbol": "consecutive_failures_policy",
                                "config": {"consecutive_failures": 2}}},
            runtime=runtime) as client:
        assert [client.get(path).status_code for _ in range(2)] == [503, 503]
        assert client.breaker_state == "open"
        with pytest.raises(humus_http.CircuitOpenError):
            client.get(path)


def test_a_missing_symbol_is_a_config_error_naming_the_key(server: TestServer, plugin: str) -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client.from_settings({"base_url": server.url("http", ""),
                                         "classify": {"plugin": plugin, "symbol": "no_such_entry"}})
    assert "classify.symbol" in caught.value.fields
    assert "no_such_entry" in str(caught.value)
