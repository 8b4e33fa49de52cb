"""The Prometheus bridge (humus_http.prometheus, docs/telemetry.md §13.5): a runtime's metrics as prometheus_client
metric families, read from the structured form at each scrape. Skips when prometheus_client is not installed."""
from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Callable
from typing import Any

import humus_http
import humus_http.prometheus
import pytest
from server_harness import TestServer

MakeRuntime = Callable[..., humus_http.Runtime]


def registry() -> Any:
    return pytest.importorskip("prometheus_client").CollectorRegistry()


def test_a_real_call_is_counted_in_the_request_duration_histogram(server: TestServer, make_runtime: MakeRuntime,
                                                                  make_client: Callable[..., humus_http.Client],
                                                                  path: str) -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    parser = pytest.importorskip("prometheus_client.parser")
    reg = registry()
    runtime = make_runtime()
    humus_http.prometheus.collector(runtime, reg)
    client = make_client(runtime=runtime)
    server.script(path, [{"status": 503}, {"status": 200}])
    assert client.get(path).attempts == 2

    text = prometheus_client.generate_latest(reg).decode()
    assert "# TYPE http_client_request_duration_seconds histogram" in text
    assert "# TYPE humus_retry_decisions_total counter" in text
    assert "# TYPE humus_circuit_state gauge" in text
    # Labels a series has not are empty in the bridge's families (absent, to Prometheus): left out here.
    scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {
        (s.name, tuple(sorted((k, v) for k, v in s.labels.items() if v))): s.value
        for family in parser.text_string_to_metric_families(text) for s in family.samples}
    origin = (("server_address", "127.0.0.1"), ("server_port", str(server.port("http"))))

    def value(name: str, **labels: str) -> float:
        return scraped[(name, tuple(sorted((*origin, *labels.items()))))]

    # One duration series per attempt's attributes (the semantic conventions'): the 503, then the 200.
    attempt = {"http_request_method": "GET", "network_protocol_version": "1.1"}
    failed = {**attempt, "http_response_status_code": "503", "error_type": "503"}
    ok = {**attempt, "http_response_status_code": "200"}
    for series in (failed, ok):
        assert value("http_client_request_duration_seconds_count", **series) == 1
        assert value("http_client_request_duration_seconds_bucket", le="+Inf", **series) == 1
        assert 0 < value("http_client_request_duration_seconds_sum", **series) < 10
    buckets = sorted((float(dict(labels)["le"]), v) for (name, labels), v in scraped.items()
                     if name == "http_client_request_duration_seconds_bucket"
                     and dict(labels)["http_response_status_code"] == "200")
    assert len(buckets) == 15  # the 14 bounds of docs/telemetry.md §13.2 and +Inf, cumulative
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert value("humus_retry_decisions_total", humus_retry_decision="again") == 1
    assert value("humus_retry_decisions_total", humus_retry_decision="done") == 1
    assert value("humus_circuit_calls_total", humus_circuit_outcome="failure") == 1
    assert value("humus_circuit_calls_total", humus_circuit_outcome="success") == 1
    assert value("humus_circuit_state", humus_circuit_state="closed") == 1


def test_the_families_agree_with_the_runtimes_own_text(make_runtime: MakeRuntime,
                                                       make_client: Callable[..., humus_http.Client],
                                                       path: str) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    reg = registry()
    runtime = make_runtime()
    humus_http.prometheus.collector(runtime, reg)
    client = make_client(runtime=runtime)
    client.get(path)
    client.post(path, content=b"x" * 300, retry=False)

    def by_sample(families: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        # An empty label is an absent one to Prometheus: the bridge gives every series of a family every label
        # (the 200 an empty error_type), where the runtime's text leaves out the ones a series has not.
        return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if v))): s.value
                for f in families for s in f.samples}

    # No call in between: the same series, the same values (sums included), bucket for bucket.
    assert by_sample(reg.collect()) == by_sample(parser.text_string_to_metric_families(runtime.metrics_prometheus()))
    bridged = by_sample(reg.collect())
    body = {k: v for k, v in bridged.items() if k[0] == "http_client_request_body_size_bytes_bucket"
            and ("http_request_method", "GET") in k[1]}
    assert [v for k, v in sorted(body.items(), key=lambda kv: float(dict(kv[0][1])["le"]))][:2] == [1.0, 1.0]


def test_the_default_registry_and_its_http_server(make_runtime: MakeRuntime,
                                                  make_client: Callable[..., humus_http.Client], path: str) -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    runtime = make_runtime()
    made = humus_http.prometheus.collector(runtime)
    try:
        make_client(runtime=runtime).get(path)
        http_server, thread = prometheus_client.start_http_server(0, addr="127.0.0.1")
        try:
            port = http_server.server_address[1]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as scraped:
                text = scraped.read().decode()
        finally:
            http_server.shutdown()
            http_server.server_close()
            thread.join(10)
        assert "http_client_request_duration_seconds_count{" in text
        with pytest.raises(ValueError, match="Duplicated"):
            humus_http.prometheus.collector(make_runtime())  # a second runtime would give the same series
    finally:
        prometheus_client.REGISTRY.unregister(made)


def test_a_runtime_without_calls_has_families_and_no_samples() -> None:
    reg = registry()
    humus_http.prometheus.collector(humus_http.Runtime(), reg)
    families = {f.name: f for f in reg.collect()}
    assert families["http_client_request_duration_seconds"].type == "histogram"
    assert families["humus_circuit_calls"].type == "counter"
    assert families["humus_circuit_state"].type == "gauge"
    assert all(not f.samples for f in families.values())


def test_a_runtime_is_needed() -> None:
    with pytest.raises(TypeError, match="Runtime"):
        humus_http.prometheus.collector(object(), registry())  # type: ignore[arg-type]


def test_without_prometheus_client_the_bridge_names_what_to_install() -> None:
    code = ("import sys\n"
            "sys.modules['prometheus_client'] = None\n"  # as if it were not installed
            "import humus_http, humus_http.prometheus\n"
            "try:\n"
            "    humus_http.prometheus.collector(humus_http.Runtime())\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "prometheus_client" in done.stdout
