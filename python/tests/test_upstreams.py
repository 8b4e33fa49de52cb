"""The upstreams registry (docs/upstreams.md §15): clients by name from one JSON document, the environment's base_url
override, every bad key reported by its path, an unknown name, readiness, and who owns the clients."""
from __future__ import annotations

import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import humus_http
import pytest
from humus_http._settings import default_runtime
from server_harness import TestServer

MakeRuntime = Callable[..., humus_http.Runtime]


def document(server: TestServer, **extra: Any) -> dict[str, Any]:
    """billing on the plain listener (with a path to join onto), payments over TLS."""
    return {"upstreams": {
        "billing": {"base_url": server.url("http", "/api/"), "timeout": "5s", "backoff_base": "5ms",
                    "backoff_max": "10ms", **extra},
        "payments": {"base_url": server.url("https"), "tls": {"ca_file": str(server.ca_file)},
                     "backoff_base": "5ms", "backoff_max": "10ms"},
    }}


@pytest.fixture
def upstreams_file(server: TestServer, tmp_path: Path) -> Path:
    file = tmp_path / "upstreams.json"
    file.write_text(json.dumps(document(server)))
    return file


def test_clients_by_name_from_a_file(server: TestServer, upstreams_file: Path, make_runtime: MakeRuntime,
                                     path: str) -> None:
    with humus_http.Upstreams.from_file(upstreams_file, runtime=make_runtime()) as upstreams:
        assert upstreams.names == ("billing", "payments")
        assert "billing" in upstreams and "ledger" not in upstreams
        assert (list(upstreams), len(upstreams)) == (["billing", "payments"], 2)
        billing = upstreams.client("billing")
        assert isinstance(billing, humus_http.Client)
        assert billing.origin == f"http://127.0.0.1:{server.port('http')}"
        server.script("/api" + path, [{"status": 503}, {"status": 200, "body": "paid"}])
        r = billing.get(path.lstrip("/"))  # joined onto the base_url's path
        assert (r.status_code, r.text, r.attempts) == (200, "paid", 2)
        r = upstreams.client("payments").get(path)
        assert (r.status_code, r.http_version) == (200, "HTTP/2")
        assert upstreams.base_url("billing") == server.url("http", "/api/")
        assert upstreams.origin("payments") == f"https://payments:{server.port('https')}"
    assert billing.is_closed  # closing the registry closes the clients it handed out
    assert upstreams.closed
    with pytest.raises(RuntimeError, match="closed"):
        upstreams.client("billing")


def test_clients_of_one_name_share_one_breaker(server: TestServer, make_runtime: MakeRuntime,
                                               path: str) -> None:
    doc = document(server, max_attempts=1, trip={"consecutive_failures": 1})
    with humus_http.Upstreams.from_json(doc, runtime=make_runtime()) as upstreams:
        server.script("/api" + path, [{"status": 503}])
        assert upstreams.client("billing").get(path.lstrip("/")).status_code == 503
        with pytest.raises(humus_http.CircuitOpenError):
            upstreams.client("billing").get(path.lstrip("/"))
        assert upstreams.client("payments").breaker_state == "closed"


def test_the_environment_overrides_base_url(server: TestServer, tmp_path: Path, make_runtime: MakeRuntime,
                                            monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    doc = document(server)
    doc["upstreams"]["billing"]["base_url"] = "http://127.0.0.1:9/nowhere/"  # the discard port: nothing there
    doc["upstreams"]["billing-eu"] = {"base_url": "http://127.0.0.1:9"}
    file = tmp_path / "upstreams.json"
    file.write_text(json.dumps(doc))
    monkeypatch.setenv("HUMUS_HTTP_UPSTREAMS__BILLING__BASE_URL", server.url("http", "/v2/"))
    monkeypatch.setenv("HUMUS_HTTP_UPSTREAMS__BILLING_EU__BASE_URL", server.url("http"))
    records: list[humus_http.LogRecord] = []
    runtime = make_runtime(log_sink=records.append)
    with humus_http.Upstreams.from_file(file, runtime=runtime) as upstreams:
        assert upstreams.names == ("billing", "billing-eu", "payments")
        assert upstreams.client("billing").get(path.lstrip("/")).status_code == 200
        assert upstreams.client("billing-eu").get(path).status_code == 200
    assert [r["path"] for r in server.requests()[-2:]] == ["/v2" + path, path]
    assert len(records) == 2
    assert all(r.event == "humus.upstreams.base_url_override" for r in records)
    assert sorted(r.upstream or "" for r in records) == ["billing", "billing-eu"]
    billing = next(r for r in records if r.upstream == "billing")
    assert (billing.previous_state, billing.new_state, billing.counts) == (None, None, None)
    assert "HUMUS_HTTP_UPSTREAMS__BILLING__BASE_URL" in billing.message
    # Read when the registry is built: a later change does not move it.
    monkeypatch.setenv("HUMUS_HTTP_UPSTREAMS__BILLING__BASE_URL", "http://127.0.0.1:9")


def test_an_environment_value_equal_to_the_files_is_not_logged(server: TestServer, upstreams_file: Path,
                                                               make_runtime: MakeRuntime,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUMUS_HTTP_UPSTREAMS__BILLING__BASE_URL", server.url("http", "/api/"))
    records: list[humus_http.LogRecord] = []
    with humus_http.Upstreams.from_file(upstreams_file, runtime=make_runtime(log_sink=records.append)):
        pass
    assert records == []


def test_misspelt_keys_are_refused_by_their_paths(server: TestServer, make_runtime: MakeRuntime) -> None:
    doc = document(server)
    doc["upstreams"]["billing"]["timout"] = "5s"
    doc["upstreams"]["payments"]["breaker"] = {"windw": 10}
    doc["upstreams"]["ledger"] = {"base_url": "http://ledger", "max_attempts": 99}
    doc["upstream"] = {}
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Upstreams.from_json(json.dumps(doc), runtime=make_runtime())
    error = caught.value
    assert error.status == "HUMUS_E_CONFIG"
    assert set(error.fields) >= {"upstreams.billing.timout", "upstreams.payments.breaker.windw",
                                 "upstreams.ledger.max_attempts", "upstream"}
    assert "timeout" in error.message  # the nearest valid key


def test_a_rule_across_fields_and_bad_documents_are_config_errors(server: TestServer, tmp_path: Path,
                                                                  make_runtime: MakeRuntime) -> None:
    runtime = make_runtime()
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Upstreams.from_json(document(server, backoff_base="2s", backoff_max="1s"), runtime=runtime)
    assert any(f.startswith("upstreams.billing.") for f in caught.value.fields)
    with pytest.raises(humus_http.ConfigError, match="not valid JSON"):
        humus_http.Upstreams.from_json("{", runtime=runtime)
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Upstreams.from_json({"upstreams": {"bad name": {"base_url": "http://x"}}}, runtime=runtime)
    assert caught.value.fields == ("upstreams.bad name",)
    missing = tmp_path / "missing.json"
    with pytest.raises(humus_http.ConfigError, match="cannot read") as caught:
        humus_http.Upstreams.from_file(missing, runtime=runtime)
    assert caught.value.fields == (str(missing),)
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    with pytest.raises(TypeError):
        humus_http.Upstreams.from_json(42, runtime=runtime)  # type: ignore[arg-type]


def test_an_unknown_name_lists_the_configured_ones(upstreams_file: Path, make_runtime: MakeRuntime) -> None:
    with humus_http.Upstreams.from_file(upstreams_file, runtime=make_runtime()) as upstreams:
        with pytest.raises(humus_http.UnknownUpstreamError) as caught:
            upstreams.client("ledger")
        error = caught.value
        assert isinstance(error, KeyError) and isinstance(error, humus_http.UpstreamError)
        assert (error.name, error.configured) == ("ledger", ("billing", "payments"))
        assert "ledger" in str(error) and "billing, payments" in str(error)
        with pytest.raises(KeyError):
            upstreams.async_client("ledger")
        with pytest.raises(KeyError):
            upstreams.base_url("ledger")
        with pytest.raises(humus_http.UnknownUpstreamError, match="configured: billing, payments"):
            upstreams.client("billing\x00payments")


def test_readiness_ok_then_degraded(server: TestServer, make_runtime: MakeRuntime, path: str) -> None:
    doc = document(server, max_attempts=1, trip={"consecutive_failures": 1}, breaker={"open_for": "30s"})
    runtime = make_runtime()
    with humus_http.Upstreams.from_json(doc, runtime=runtime) as upstreams:
        report = upstreams.readiness()
        assert report["status"] == "ok"
        assert [(c["name"], c["state"]) for c in report["clients"]] == [("billing", "closed"), ("payments", "closed")]
        server.script("/api" + path, [{"status": 503}])
        upstreams.client("billing").get(path.lstrip("/"))
        report = upstreams.readiness()
        assert report["status"] == "degraded"
        billing = report["clients"][0]
        assert (billing["name"], billing["state"], billing["origin"]) == (
            "billing", "open", f"http://127.0.0.1:{server.port('http')}")
        assert billing["retry_after_ms"] > 0
        assert report["clients"][1]["state"] == "closed"
        # The runtime's own report covers the registry's clients too (without names).
        assert runtime.readiness()["status"] == "degraded"
        assert len(runtime.readiness()["clients"]) == 2


@pytest.mark.asyncio
async def test_async_clients_by_name(server: TestServer, upstreams_file: Path, make_runtime: MakeRuntime,
                                     path: str) -> None:
    with humus_http.Upstreams.from_file(upstreams_file, runtime=make_runtime()) as upstreams:
        async with upstreams.async_client("payments") as payments:
            server.script(path, [{"status": 503}, {"status": 200}])
            r = await payments.get(path)
            assert (r.status_code, r.attempts) == (200, 2)


def test_a_client_keeps_the_registry_alive(server: TestServer, upstreams_file: Path,
                                           make_runtime: MakeRuntime, path: str) -> None:
    upstreams = humus_http.Upstreams.from_file(upstreams_file, runtime=make_runtime())
    billing = upstreams.client("billing")
    del upstreams
    gc.collect()
    assert billing.get(path.lstrip("/")).status_code == 200
    billing.close()
    with pytest.raises(RuntimeError, match="closed"):
        billing.get(path)


def test_the_default_runtime_is_used_without_one(server: TestServer, path: str) -> None:
    with humus_http.Upstreams.from_json({"upstreams": {"billing": {"base_url": server.url("http")}}}) as upstreams:
        assert upstreams.runtime is default_runtime()
        assert upstreams.client("billing").get(path).status_code == 200
