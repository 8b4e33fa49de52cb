"""Settings: keyword arguments, the SPEC's JSON form (from_settings), durations, presets, the runtime."""
from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import humus_http
import pytest
from server_harness import TestServer


def test_from_settings_takes_the_json_form(server: TestServer, runtime: humus_http.Runtime, path: str) -> None:
    settings = {"base_url": server.url("https"), "timeout": "2s", "max_attempts": 1,
                "backoff_base": "5ms", "backoff_max": "10ms", "tls": {"ca_file": str(server.ca_file)},
                "breaker": {"window": 10, "open_for": "1s"}, "trip": {"consecutive_failures": 1},
                "bulkhead": {"max_concurrent": 4, "wait": "10ms"}, "classify": "humus"}
    server.script(path, [{"status": 503}])
    with humus_http.Client.from_settings(settings, runtime=runtime) as client:
        r = client.get(path)
        assert (r.status_code, r.attempts, r.http_version) == (503, 1, "HTTP/2")  # the breaker opened at once
        assert client.breaker_state == "open"
        assert client.base_url == server.url("https")
        assert client.origin == f"https://payments:{server.port('https')}"


def test_from_settings_reports_every_bad_key() -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client.from_settings({"base_url": "https://payments", "timout": "5s", "max_attempts": 99,
                                         "breaker": {"window": "many"}, "retries": 3})
    assert {"timout", "max_attempts", "breaker.window", "retries"} <= set(caught.value.fields)
    assert "timeout" in caught.value.message  # the nearest valid key is named
    with pytest.raises(humus_http.ConfigError, match="base_url"):
        humus_http.AsyncClient.from_settings({})
    with pytest.raises(humus_http.ConfigError, match="mapping"):
        humus_http.Client.from_settings("https://payments")  # type: ignore[arg-type]


def test_from_settings_with_a_callable_classifier(server: TestServer, runtime: humus_http.Runtime,
                                                  path: str) -> None:
    seen: list[int] = []

    def classify(attempt: humus_http.Attempt) -> humus_http.Classification:
        seen.append(attempt.status)
        return humus_http.default_classify(attempt)

    with humus_http.Client.from_settings({"base_url": server.url("http")}, classify=classify,
                                         runtime=runtime) as client:
        client.get(path)
    assert seen == [200]


@pytest.mark.parametrize("value", [0.25, 1 / 4, timedelta(milliseconds=250), "250ms", "0.25s"])
def test_durations_in_every_form(server: TestServer, make_client: Callable[..., humus_http.Client], path: str,
                                 value: object) -> None:
    server.script(path, [{"delay_ms": 1000}])
    client = make_client(timeout=value, attempt_timeout=value)
    with pytest.raises(humus_http.UpstreamTimeoutError):
        client.get(path)


def test_bad_values_are_named_not_crashed(runtime: humus_http.Runtime) -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client("http://payments", timeout=float("nan"), attempt_timeout=object(),  # type: ignore[arg-type]
                          max_attempts=True, idle_timeout=-5, http_version="3",  # type: ignore[arg-type]
                          runtime=runtime)
    assert {"timeout", "attempt_timeout", "max_attempts", "idle_timeout", "http_version"} <= set(caught.value.fields)


def test_the_default_runtime_is_shared(server: TestServer, path: str) -> None:
    with humus_http.Client(server.url("http")) as a, humus_http.Client(server.url("http")) as b:
        assert a.get(path).status_code == b.get(path).status_code == 200


def test_runtime_resolve_reaches_a_tls_listener_by_its_certificate_name(server: TestServer, path: str) -> None:
    port = server.port("https")
    tls = humus_http.TLS(ca_file=server.ca_file)
    with humus_http.Client(f"https://payments:{port}", tls=tls, max_attempts=1) as unresolved:
        with pytest.raises(humus_http.UpstreamConnectError):  # "payments" is not a real name here
            unresolved.get(path)
    runtime = humus_http.Runtime(resolve={f"payments:{port}": f"127.0.0.1:{port}"})
    with humus_http.Client(f"https://payments:{port}", tls=tls, runtime=runtime) as client:
        assert client.get(path).status_code == 200
    assert server.requests(path)[0]["authority"] == f"payments:{port}"
