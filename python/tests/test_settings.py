"""Settings: keyword arguments, the settings' JSON form (docs/settings.md) (from_settings), durations, presets, the runtime."""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
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
    server.script(path, [{"delay_ms": 5000}])  # far past the 0.25 s
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


# ---- One schema: the binding passes exactly what was given, and covers every key of the core -------------

def test_values_given_are_checked_against_each_other_even_when_equal_to_a_default() -> None:
    # attempt_timeout=5.0 is the documented default, yet given: it must not become a silent 1 s cap.
    for cls in (humus_http.Client, humus_http.AsyncClient):
        with pytest.raises(humus_http.ConfigError) as caught:
            cls("http://payments", timeout=1.0, attempt_timeout=5.0)
        assert {"attempt_timeout", "timeout"} <= set(caught.value.fields)
        assert "attempt_timeout: must be <= timeout (1s), got 5s" in caught.value.message


def test_defaults_left_out_are_capped_by_the_values_given(runtime: humus_http.Runtime) -> None:
    humus_http.Client("http://payments", timeout=1.0, runtime=runtime).close()
    humus_http.Client("http://payments", timeout=1.0, connect_timeout=0.5, runtime=runtime).close()
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client("http://payments", backoff_max=0.05, backoff_base=0.1, runtime=runtime)
    assert {"backoff_max", "backoff_base"} <= set(caught.value.fields)


def test_connection_and_response_limits_reach_the_core(runtime: humus_http.Runtime) -> None:
    humus_http.Client("http://payments", max_connection_lifetime=timedelta(minutes=30), max_response_headers=8192,
                      max_response_body=1 << 30, decompress=False, runtime=runtime).close()
    humus_http.Client("http://payments", max_connection_lifetime="24h", runtime=runtime).close()
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client("http://payments", max_connection_lifetime=0.5, max_response_headers=1024,
                          max_response_body=(1 << 40) + 1, decompress="yes",  # type: ignore[arg-type]
                          runtime=runtime)
    assert set(caught.value.fields) == {"max_connection_lifetime", "max_response_headers", "max_response_body",
                                        "decompress"}
    assert "max_connection_lifetime: must be between 1s and 24h, got 500ms" in caught.value.message
    assert "max_response_headers: must be between 4096 and 1048576, got 1024" in caught.value.message


def _alternatives(hint: object) -> tuple[object, ...]:
    """The members of a union annotation, or the annotation itself."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _kind_of(hint: object) -> set[str]:
    """The schema kinds a Python annotation can carry."""
    kinds: set[str] = set()
    args = _alternatives(hint)
    for arg in args:
        origin = typing.get_origin(arg)
        if origin is typing.Literal:
            kinds.add("enum")
        elif origin is Mapping or arg is Mapping:
            kinds.add("map")
        elif arg is timedelta:
            kinds.add("duration")
        elif arg is bool:
            kinds.add("bool")
        elif arg is int:
            kinds.update({"count", "bytes"})
        elif arg is float:
            kinds.update({"number", "share"})
        elif arg is str:
            kinds.add("string")
        elif isinstance(arg, type) and dataclasses.is_dataclass(arg):
            kinds.add("object")
    if "duration" in kinds:  # a Duration is also given as seconds or a string
        kinds -= {"count", "bytes", "number", "share", "string"}
    return kinds


def test_the_binding_covers_every_key_of_the_core_schema() -> None:
    from humus_http import _client, _settings

    schema = _settings.settings_schema()
    assert len(schema) > 40
    client_hints = typing.get_type_hints(_client._BaseClient.__init__)  # in the generated module's names
    problems: list[str] = []
    for entry in schema:
        key, kind = entry["key"], entry["kind"]
        if kind == "plugin":  # named in from_settings' document (breaker_policy=, a keyword, takes code)
            continue
        head, _, rest = key.partition(".")
        hint = client_hints.get(head)
        if hint is None:
            problems.append(f"{head}: no keyword argument")
            continue
        if rest:
            holder = next((a for a in typing.get_args(hint) if isinstance(a, type) and a is not type(None)), None)
            fields = typing.get_type_hints(holder) if holder is not None else {}
            hint = fields.get(rest)
            if hint is None:
                problems.append(f"{key}: no field {rest!r} in {holder}")
                continue
        kinds = _kind_of(hint)
        if kind not in kinds:
            problems.append(f"{key}: the schema says {kind}, Python's annotation {hint} carries {sorted(kinds)}")
        if kind == "enum":
            literal = next(a for a in _alternatives(hint) if typing.get_origin(a) is typing.Literal)
            if set(typing.get_args(literal)) != set(entry["choices"]):
                problems.append(f"{key}: choices {typing.get_args(literal)} != {entry['choices']}")
    assert not problems, "\n".join(problems)
    # And nothing the schema does not know: every keyword argument that is a setting is a schema key.
    top = {entry["key"] for entry in schema if "." not in entry["key"] and entry["kind"] != "plugin"}
    # (and httpx's auth, follow_redirects and event_hooks, which the Python client applies itself)
    not_settings = {"breaker_policy", "runtime", "return", "auth", "follow_redirects", "event_hooks"}
    assert set(client_hints) - not_settings == top
