"""The Prometheus bridge (docs/telemetry.md §13.5): a runtime's metrics as a collector of prometheus_client.

    import prometheus_client
    import humus_http, humus_http.prometheus

    runtime = humus_http.Runtime()
    humus_http.prometheus.collector(runtime)       # into prometheus_client.REGISTRY
    prometheus_client.start_http_server(9100)      # or generate_latest()

At each scrape the collector reads the runtime's metrics in their structured form (``Runtime.metrics_json()``,
docs/telemetry.md §13.2) and builds prometheus_client metric families from it: histograms with cumulative
buckets, ``_sum`` and ``_count``, counters (``_total``) and gauges, under the names and labels of the
runtime's own Prometheus text (``http_client_request_duration_seconds``, ``humus_circuit_calls_total``, label
``server_address``, ...). Nothing is kept between scrapes and no thread is started.

This module imports without prometheus_client; ``collector()`` then raises ImportError naming the package to
install, ``prometheus_client``.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from ._settings import Runtime
from ._telemetry import METRIC_DESCRIPTIONS

__all__ = ["RuntimeCollector", "collector"]

# OpenTelemetry units as Prometheus name suffixes; an annotation such as "{call}" has none.
_UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": "ratio"}
_NOT_IN_A_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _import() -> ModuleType:
    try:
        return importlib.import_module("prometheus_client.core")
    except ImportError as e:
        raise ImportError("humus_http.prometheus needs prometheus_client: install the package prometheus_client "
                          "(python3 -m pip install prometheus_client)", name="prometheus_client") from e


def _prometheus_name(name: str) -> str:
    return _NOT_IN_A_NAME.sub("_", name)


def _le(bound: float) -> str:
    """A bucket's ``le`` as the Prometheus text writes it (``0.005``, ``10``)."""
    return repr(bound) if bound != int(bound) else str(int(bound))


class RuntimeCollector:
    """A prometheus_client collector of one runtime's metrics (see the module's notes): ``collect()`` reads them
    anew at each call. Register it in at most one registry that holds no other runtime's collector: two would
    give the same series. Thread-safe."""

    def __init__(self, runtime: Runtime) -> None:
        if not isinstance(runtime, Runtime):
            raise TypeError("humus_http.prometheus: runtime must be a humus_http.Runtime, "
                            f"not {type(runtime).__name__}")
        self._core = _import()
        self.runtime = runtime

    def describe(self) -> Iterator[Any]:
        """The metric families (what the registry checks for duplicate names when registering): as collect()."""
        return self.collect()

    def collect(self) -> Iterator[Any]:
        """The runtime's metrics now, one prometheus_client metric family per instrument: ``HistogramMetricFamily``,
        ``CounterMetricFamily`` or ``GaugeMetricFamily``."""
        for metric in self.runtime.metrics_json()["metrics"]:
            family = self._family(metric)
            if family is not None:
                yield family

    def _family(self, metric: Mapping[str, Any]) -> Any:
        core = self._core
        name = _prometheus_name(str(metric["name"]))
        documentation = METRIC_DESCRIPTIONS.get(str(metric["name"]), str(metric["name"]))
        unit = _UNITS.get(str(metric.get("unit", "")), "")
        points: list[Mapping[str, Any]] = list(metric.get("points", ()))
        # Every label any point has; a point without one has it empty (absent, to Prometheus).
        keys: dict[str, str] = {}
        for point in points:
            for key in point.get("attributes", {}):
                keys.setdefault(key, _prometheus_name(key))
        labels = list(keys.values())

        def values(point: Mapping[str, Any]) -> list[str]:
            attributes = point.get("attributes", {})
            return [str(attributes.get(key, "")) for key in keys]

        kind = metric.get("type")
        if kind == "histogram":
            family = core.HistogramMetricFamily(name, documentation, labels=labels, unit=unit)
            bounds = [float(b) for b in metric.get("bounds", ())]
            for point in points:
                cumulative, buckets = 0, []
                counts = list(point.get("bucket_counts", ()))
                for bound, count in zip([*map(_le, bounds), "+Inf"], counts, strict=False):
                    cumulative += int(count)
                    buckets.append((bound, cumulative))
                if len(buckets) != len(bounds) + 1:
                    continue  # a point the collector cannot read is left out rather than shown wrong
                family.add_metric(values(point), buckets, float(point.get("sum", 0.0)))
            return family
        if kind == "counter":
            family = core.CounterMetricFamily(name, documentation, labels=labels, unit=unit)
        elif kind == "gauge":
            family = core.GaugeMetricFamily(name, documentation, labels=labels, unit=unit)
        else:
            return None  # a kind this version does not know
        for point in points:
            family.add_metric(values(point), float(point.get("value", 0)))
        return family


def collector(runtime: Runtime, registry: Any = None) -> RuntimeCollector:
    """Registers ``runtime``'s metrics (docs/telemetry.md §13.2) with prometheus_client and returns the collector:
    ``registry`` is a ``prometheus_client.CollectorRegistry``, None for the default ``prometheus_client.REGISTRY``
    (what ``generate_latest()`` and ``start_http_server()`` read by default). ``registry.unregister(c)`` removes
    it again.

    Raises ImportError naming ``prometheus_client`` when it is not installed, TypeError when ``runtime`` is not a
    Runtime, and prometheus_client's ValueError (duplicated timeseries) when the registry already has these
    names, such as from another runtime's collector. Thread-safe."""
    made = RuntimeCollector(runtime)
    if registry is None:
        registry = importlib.import_module("prometheus_client").REGISTRY
    registry.register(made)
    return made
