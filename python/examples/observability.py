"""Telemetry, failure injection and the upstreams registry with types spelled out; test_package.py runs
mypy --strict on it."""
from __future__ import annotations

import logging
import sys
from typing import Any

import humus_http
import humus_http.otel
import humus_http.prometheus

log = logging.getLogger("checkout")


def on_span(span: humus_http.Span) -> None:
    status: int | str | None = span.attributes.get("http.response.status_code")
    log.debug("%s %s %s parent=%s status=%s took %d ns", span.name, span.traceparent, span.status,
              span.parent_span_id, status, span.end_time_unix_nano - span.start_time_unix_nano)


def on_log(record: humus_http.LogRecord) -> None:
    failures = record.counts.failures if record.counts is not None else 0
    log.warning("%s (%s: %s -> %s, %d failures)", record.message, record.event, record.previous_state,
                record.new_state, failures)


def build_runtime(use_otel: bool) -> humus_http.Runtime:
    sink: humus_http.SpanSink = humus_http.otel.span_sink() if use_otel else on_span
    return humus_http.Runtime(span_sink=sink, log_sink=on_log, faults=True)


def export_metrics(runtime: humus_http.Runtime) -> humus_http.prometheus.RuntimeCollector:
    # OpenTelemetry's global MeterProvider observes the counters and gauges; prometheus_client's REGISTRY all.
    instruments: list[Any] = humus_http.otel.metrics(runtime)
    log.debug("%d observable instruments", len(instruments))
    return humus_http.prometheus.collector(runtime)


def serve(runtime: humus_http.Runtime, incoming_headers: dict[str, str]) -> int:
    try:
        upstreams = humus_http.Upstreams.from_file("/etc/checkout/upstreams.json", runtime=runtime)
    except humus_http.ConfigError as error:
        print("bad upstreams:", ", ".join(error.fields), file=sys.stderr)
        return 78
    with upstreams:
        names: tuple[str, ...] = upstreams.names
        try:
            billing: humus_http.Client = upstreams.client("billing")
        except humus_http.UnknownUpstreamError as error:
            print(error.name, "is not among", ", ".join(error.configured), "of", len(names))
            return 1
        # A test passes "baggage: humus.fault=http:billing:8443=status:503" to see this service degrade.
        response = billing.get("/v1/invoices", context=incoming_headers)
        ready: dict[str, Any] = upstreams.readiness()
        print(response.status_code, ready["status"])
    prometheus: str = runtime.metrics_prometheus()
    metrics: dict[str, Any] = runtime.metrics_json()
    overall: dict[str, Any] = runtime.readiness()
    print(len(prometheus), len(metrics["metrics"]), overall["status"])
    runtime.set_span_sink(None)
    runtime.set_log_sink(on_log)
    return 0


if __name__ == "__main__":
    sys.exit(serve(build_runtime(use_otel=False), {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}))
