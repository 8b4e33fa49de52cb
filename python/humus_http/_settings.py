"""Settings values (docs/settings.md §3), the runtime, and the Python forms of the callbacks: classifiers (docs/retries.md §5) and
breaker policies (docs/breaker.md §9.3).

The dataclasses are frozen values: build them anywhere, share them between threads. A client turns them into
the settings' JSON form (docs/settings.md) and hands that to the C core, which checks every field at once (``ConfigError`` lists
every bad key).
"""
from __future__ import annotations

import enum
import json
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from . import _native
from ._errors import ConfigError, from_native
from ._mock import MockHandler, adapter
from ._settings_gen import DURATION_KEYS, TLS, Breaker, Bulkhead, Hedge, Probe, RetryBudget, Share, Trip
from ._settings_values import Duration as Duration  # the name callers import from here
from ._settings_values import Group
from ._settings_values import duration_json as _duration
from ._settings_values import json_value as _json_value

if TYPE_CHECKING:
    from ._telemetry import LogSink, SpanSink

__all__ = [
    "TLS",
    "Attempt",
    "Breaker",
    "BreakerCounts",
    "BreakerPolicy",
    "Bulkhead",
    "Classification",
    "Classifier",
    "Hedge",
    "Probe",
    "ProbeDecision",
    "RetryBudget",
    "Runtime",
    "Share",
    "Trip",
    "default_classify",
    "preset_classify",
]

Attempt = _native.Attempt
"""One attempt as a classifier sees it (``method``, ``status`` — 0 when no response came —, ``header(name)``,
``error`` — the C status name when no response came, else None —, ``error_message``, ``number`` — 1 for the
first attempt). Valid only during the classifier call that received it; read it on that thread."""


class ProbeDecision(enum.IntEnum):
    """What a probe policy decides in half-open after each probe's result."""

    CONTINUE = 0
    CLOSE = 1
    REOPEN = 2


_STATES = {0: "closed", 1: "open", 2: "half_open"}


@dataclass(frozen=True)
class BreakerCounts:
    """What a breaker policy sees (docs/breaker.md §9.3): the state these counts belong to (``"closed"``, ``"open"``,
    ``"half_open"``), counts since that state began, and the last ``window`` results.
    A frozen value: share it between threads freely."""

    state: str
    successes: int
    failures: int
    consecutive_successes: int
    consecutive_failures: int
    timed_out_probes: int
    window_results: int
    window_failures: int
    # Results whose attempt took longer than breaker.slow_call_duration (docs/breaker.md §9.3a), successes or
    # failures: since the state began, and among the window's. 0 while that setting is unset.
    slow_results: int = 0
    window_slow: int = 0


@dataclass(frozen=True)
class BreakerPolicy:
    """A custom breaker policy in Python (docs/breaker.md §9.3): ``trip(counts)`` returns True to open a closed breaker;
    ``probe(counts)`` returns a ProbeDecision after each probe in half-open. Both run under the breaker's lock
    on whichever thread delivers a result, holding the GIL: they must be fast, thread-safe and must not call the
    client. One that raises ends the call with that exception; the result counts as a failure and the breaker
    stays consistent."""

    trip: Callable[[BreakerCounts], bool]
    probe: Callable[[BreakerCounts], ProbeDecision]

    def adapters(self) -> tuple[Callable[..., int], Callable[..., int]]:
        """The callables the extension calls, taking the counts as eight integers."""
        trip, probe = self.trip, self.probe

        def counts(args: tuple[int, ...]) -> BreakerCounts:
            return BreakerCounts(_STATES.get(args[0], "unknown"), *args[1:])

        def trip_adapter(args: tuple[int, ...]) -> int:
            return 1 if trip(counts(args)) else 0

        def probe_adapter(args: tuple[int, ...]) -> int:
            decision = probe(counts(args))
            if not isinstance(decision, ProbeDecision):
                raise TypeError(f"breaker probe policy {probe!r} returned {decision!r}, not a ProbeDecision")
            return int(decision)

        return trip_adapter, probe_adapter


_BREAKER_VERDICTS = {"success": 1, "failure": 2, "ignored": 3}
_BREAKER_NAMES = {v: k for k, v in _BREAKER_VERDICTS.items()}


@dataclass(frozen=True)
class Classification:
    """What an attempt's result means (docs/retries.md §5): ``retry`` True to try again (when the request may be sent
    twice and the budget and deadline allow), ``breaker`` how the breaker counts it (``"success"``,
    ``"failure"``, ``"ignored"``), ``retry_after`` the dependency's Retry-After in seconds (None for none).
    A frozen value: share it between threads freely."""

    retry: bool
    breaker: Literal["success", "failure", "ignored"]
    retry_after: float | None = None

    def __post_init__(self) -> None:
        if self.breaker not in _BREAKER_VERDICTS:
            raise ValueError(f"Classification.breaker must be 'success', 'failure' or 'ignored', not {self.breaker!r}")
        if self.retry_after is not None and not (self.retry_after >= 0):
            raise ValueError(f"Classification.retry_after must be >= 0 seconds or None, not {self.retry_after!r}")

    def to_native(self) -> tuple[int, int, int]:
        """(retry, breaker, retry_after_ms) as the C ABI spells them."""
        # Rounded to the microsecond first: 2.007 s * 1000 is 2007.0000000000002 in binary floating point.
        ms = 0 if self.retry_after is None else math.ceil(round(self.retry_after * 1000, 3))
        return (2 if self.retry else 1), _BREAKER_VERDICTS[self.breaker], ms

    @classmethod
    def from_native(cls, value: tuple[int, int, int]) -> Classification:
        """The Classification the C ABI returned."""
        retry, breaker, ms = value
        return cls(retry == 2, _BREAKER_NAMES[breaker], None if ms == 0 else ms / 1000.0)  # type: ignore[arg-type]


#: A classifier: called with each attempt on the thread that drives it (several at once: it must be
#: thread-safe), holding the GIL. It may delegate to default_classify. One that raises ends the call with that
#: exception, counted as a failure by the breaker.
Classifier = Callable[[_native.Attempt], Classification]


def default_classify(attempt: _native.Attempt) -> Classification:
    """The default classifier (docs/retries.md §5.3), for a custom classifier to delegate to. Call it only inside a
    classifier, with the attempt it received."""
    return Classification.from_native(_native.classify_default(attempt))


def preset_classify(preset: Literal["humus", "jfast", "strict"], attempt: _native.Attempt) -> Classification:
    """A named preset classifier (docs/retries.md §5.5): ``"humus"`` (the default), ``"jfast"`` or ``"strict"``. Call it only
    inside a classifier, with the attempt it received."""
    try:
        return Classification.from_native(_native.classify_preset(preset, attempt))
    except _native.Failure as failure:
        raise from_native(failure.args[0], "") from None


def classifier_adapter(classify: Classifier) -> Callable[[_native.Attempt], tuple[int, int, int]]:
    """The callable the extension calls: the user's classifier, its result checked and converted."""
    def adapter(attempt: _native.Attempt) -> tuple[int, int, int]:
        result = classify(attempt)
        if not isinstance(result, Classification):
            raise TypeError(f"classifier {classify!r} returned {type(result).__name__}, not humus_http.Classification")
        return result.to_native()
    return adapter


class Runtime:
    """Process-wide machinery shared by clients (docs/README.md §1): the event-loop thread of asynchronous calls, the clock,
    the name overrides, the telemetry sinks and the failure-injection switch. Clients built without ``runtime=``
    share one default runtime (a real clock, no overrides, no sinks, faults off). Thread-safe; it lives as long
    as a client built from it.

    ``resolve`` maps ``"host:port"`` to ``"address:port"`` (like curl ``--resolve``): the connection goes to the
    address while TLS still verifies the name.

    ``clock="virtual"`` gives the runtime a virtual clock (docs/testing-kit.md §16.1): every wait of its clients (backoff,
    Retry-After, ``open_for``, ``probe_timeout``, budget windows, mock delays and attempt timeouts) runs on it,
    and it moves on its own whenever every call in flight waits only on timers, so a 2 s Retry-After costs no
    real time. ``advance_ms()`` moves it by hand (between calls, e.g. past a breaker's ``open_for``). A virtual
    clock needs the mock transport: ``mock=`` (or ``set_mock_transport()`` before building a client) answers
    every attempt with a Python handler instead of a socket. ``seed`` fixes the random draws of the backoff (the
    same seed, the same waits). See ``humus_http.testing`` for a scripted mock and a pytest fixture.

    ``span_sink`` receives one ``Span`` per attempt (docs/telemetry.md §13.1; ``humus_http.otel.span_sink()`` bridges them
    into the OpenTelemetry SDK) and ``log_sink`` one ``LogRecord`` per breaker state change (docs/telemetry.md §13.3); see
    ``set_span_sink()`` and ``set_log_sink()``. With a span sink, each attempt sends its own ``traceparent``
    (child of the call context's); without one, the caller's ``traceparent`` and ``tracestate`` pass through.
    ``metrics_prometheus()``, ``metrics_json()`` and ``readiness()`` report on every client of the runtime.

    ``faults=True`` turns failure injection on (docs/failure-injection.md §14): a call whose baggage — ``context=`` (a CallContext's
    ``baggage``, or the incoming request's ``baggage`` header) or the call's own ``baggage`` header — carries the
    member ``humus.fault`` has its attempts to the named points fail. The member's value is ``|``-separated
    ``point=action[@probability]`` items (percent-encoding honoured): the point of a client is
    ``http:<host>:<port>`` of its origin, the action ``abort`` (a lost connection), ``delay:<duration>`` (a wait
    before sending, within ``attempt_timeout``) or ``status:<code>`` (an empty synthetic answer), the probability
    1 unless given. For example ``baggage: humus.fault=http:payments:8443=status:503@0.5|http:ledger:8443=abort``.
    These are real outcomes to the client: classified, retried, counted by the breaker and the metrics. The
    member is removed from the baggage sent unless the client has ``forward_scenario=True``; a member that
    cannot be read fails the call with InvalidRequestError naming ``baggage``. With faults off (the default),
    baggage is neither read nor changed.
    """

    def __init__(self, *, resolve: Mapping[str, str] | None = None, clock: Literal["real", "virtual"] = "real",
                 seed: int | None = None, mock: MockHandler | None = None, span_sink: SpanSink | None = None,
                 log_sink: LogSink | None = None, faults: bool = False) -> None:
        options: dict[str, Any] = {}
        if resolve is not None:
            options["resolve"] = {str(k): _json_value(v) for k, v in resolve.items()}
        if clock != "real":
            options["clock"] = _json_value(clock)
        if seed is not None:
            options["seed"] = _json_value(seed)
        if faults is not False:
            options["faults"] = _json_value(faults)
        try:
            self._native = _native.Runtime(json.dumps(options))
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None
        self._clock = clock
        self._seed = seed
        self._faults = bool(faults)
        # Every handler installed, kept for the clients built with it (the extension holds them weakly).
        self._mock_boxes: list[object] = []
        # The span sink's current_trace_context, when it has one: what a call without a trace context continues.
        self._trace_context: Callable[[], tuple[str, str | None] | None] | None = None
        if mock is not None:
            self.set_mock_transport(mock)
        if span_sink is not None:
            self.set_span_sink(span_sink)
        if log_sink is not None:
            self.set_log_sink(log_sink)

    @property
    def native(self) -> _native.Runtime:
        """The extension's handle (for humus_http's clients)."""
        return self._native

    @property
    def clock(self) -> str:
        """``"real"`` or ``"virtual"``."""
        return self._clock

    @property
    def seed(self) -> int | None:
        """The seed of the virtual clock's random draws, None when none was given."""
        return self._seed

    @property
    def faults(self) -> bool:
        """True when failure injection (docs/failure-injection.md §14, the ``humus.fault`` baggage member) is on."""
        return self._faults

    def elapsed_ms(self) -> int:
        """Whole milliseconds the runtime's clock has advanced since the runtime was made: virtual time on a
        virtual clock, real time on a real one. Thread-safe, also inside callbacks."""
        return self._native.elapsed_ms()

    def advance_ms(self, ms: int) -> None:
        """Moves the virtual clock forward by ``ms`` milliseconds (an int >= 0), waking the waits that come due
        (an open breaker's ``open_for``, a budget window). Raises RuntimeError on a real clock, ValueError for a
        negative ``ms``. Thread-safe."""
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise TypeError(f"Runtime.advance_ms: ms must be an int of milliseconds, not {type(ms).__name__}")
        if ms < 0:
            raise ValueError(f"Runtime.advance_ms: ms must be >= 0, not {ms}")
        if self._clock != "virtual":
            raise RuntimeError("Runtime.advance_ms: this runtime's clock is real; only a virtual clock "
                               "(Runtime(clock='virtual')) can be advanced")
        try:
            self._native.advance_ms(ms)
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None

    def set_mock_transport(self, handler: MockHandler | None) -> None:
        """Installs ``handler`` as the mock transport (docs/testing-kit.md §16.2) of the clients built afterwards from this
        runtime (clients built before keep what they had); None removes it. ``handler(request)`` receives a
        MockRequest for each attempt and returns a MockReply; it runs on the thread that drives the attempt,
        holding the GIL, possibly on several threads at once. An exception it raises fails that attempt and the
        call raises it. The runtime keeps the handler as long as the runtime lives. Thread-safe."""
        if handler is None:
            _native.set_mock_transport(self._native, None)
            return
        if not callable(handler):
            raise TypeError(f"Runtime.set_mock_transport: the handler must be callable, not {handler!r}")
        box, respond = adapter(handler)
        self._mock_boxes.append(box)
        try:
            _native.set_mock_transport(self._native, respond)
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None

    def set_span_sink(self, sink: SpanSink | None) -> None:
        """Installs ``sink`` as the span sink (docs/telemetry.md §13.1) for the calls that start afterwards, on every client of
        the runtime; None removes it (calls then send the caller's ``traceparent`` unchanged and make no spans).

        ``sink(span)`` receives each attempt's ``Span`` when the attempt ends, on the thread that ended it (the
        caller's for a blocking call, the runtime's event-loop thread for an asynchronous one), possibly on
        several threads at once, holding the GIL: it must be thread-safe and fast, and must not close a client.
        A call's spans arrive in the order of its attempts. An exception the sink raises does not reach the
        call: it is reported through ``sys.unraisablehook`` (with the sink as the report's ``object``); a
        KeyboardInterrupt (Ctrl-C arriving while the sink runs on the main thread) cancels the blocking call,
        which raises it. The runtime holds the sink until it is replaced or the runtime is freed (a sink that
        refers to its runtime keeps both alive). Thread-safe.

        A sink with a ``current_trace_context()`` method (``humus_http.otel.span_sink()``'s) is asked, at the start
        of each call with no ``traceparent`` of its own (neither in ``context=`` nor among its headers), in the
        caller's thread or task, for the ``(traceparent, tracestate)`` to continue, or None: the call then carries
        it as its context's trace part (docs/telemetry.md §13.4)."""
        from ._telemetry import span_adapter
        self._set_sink("set_span_sink", _native.set_span_sink, sink, span_adapter)
        trace_context = getattr(sink, "current_trace_context", None)
        self._trace_context = trace_context if callable(trace_context) else None

    def set_log_sink(self, sink: LogSink | None) -> None:
        """Installs ``sink`` as the log sink (docs/telemetry.md §13.3) of every client of the runtime at once; None removes
        it. ``sink(record)`` receives a ``LogRecord`` for each circuit breaker state change (and for an upstream
        whose ``base_url`` an environment variable overrode), on the thread whose call caused it, holding the GIL,
        with the same rules as a span sink (thread-safe, fast, exceptions to ``sys.unraisablehook``). The records
        of one breaker arrive in order. Thread-safe."""
        from ._telemetry import log_adapter
        self._set_sink("set_log_sink", _native.set_log_sink, sink, log_adapter)

    def _set_sink(self, method: str, install: Callable[[_native.Runtime, Any, Any], None], sink: Any,
                  make_adapter: Callable[[Any], Callable[[tuple[Any, ...]], None]]) -> None:
        if sink is not None and not callable(sink):
            raise TypeError(f"Runtime.{method}: the sink must be callable or None, not {sink!r}")
        try:
            install(self._native, None if sink is None else make_adapter(sink), sink)
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None

    def metrics_prometheus(self) -> str:
        """The metrics of docs/telemetry.md §13.2, summed over the runtime's clients by origin (freed clients' counts stay),
        in the Prometheus text exposition format 0.0.4: ``http_client_request_duration_seconds`` and
        ``http_client_request_body_size_bytes`` (histograms), ``humus_circuit_state{humus_circuit_state=...}``
        (breakers per state, read now), ``humus_circuit_transitions_total``,
        ``humus_circuit_calls_total{humus_circuit_outcome=...}`` and
        ``humus_retry_decisions_total{humus_retry_decision=...}``, each labelled ``server_address`` and
        ``server_port``. Serve it as ``text/plain; version=0.0.4``. Thread-safe."""
        try:
            return _native.metrics_prometheus(self._native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None

    def metrics_json(self) -> dict[str, Any]:
        """The same metrics as a dict: ``{"metrics": [{"name", "unit", "type"`` (``"histogram"``, ``"gauge"`` or
        ``"counter"``), ``"bounds"`` (histograms), ``"points": [{"attributes": {"server.address",
        "server.port"`` and the instrument's own attribute``}, "value"`` or ``"count", "sum", "bucket_counts"``
        (per bucket, not cumulative)``}]}]}``, with the OpenTelemetry names (``"humus.circuit.calls"``).
        Thread-safe."""
        return self._json_report(_native.metrics_json)

    def readiness(self) -> dict[str, Any]:
        """A readiness report (docs/upstreams.md §15.2) of every live client of the runtime, in the order they were made:
        ``{"status": "ok" | "degraded", "clients": [{"origin", "state": "closed" | "open" | "half_open",
        "retry_after_ms", "counts": {...}}]}``. ``"degraded"`` when any breaker is not closed; never
        ``"unavailable"``: a dependency being down does not make this service unready. Reading advances a due
        open breaker to half-open. Thread-safe."""
        return self._json_report(_native.readiness_json)

    def _json_report(self, report: Callable[[_native.Runtime], str]) -> dict[str, Any]:
        try:
            text = report(self._native)
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None
        result: dict[str, Any] = json.loads(text)
        return result

    def __repr__(self) -> str:
        return f"<humus_http.Runtime clock={self._clock}{' faults' if self._faults else ''}>"


_default_lock = threading.Lock()
_default: Runtime | None = None


def default_runtime() -> Runtime:
    """The runtime of clients built without ``runtime=``, made on first use. Thread-safe."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runtime()
        return _default


def settings_json(base_url: str, values: Mapping[str, object]) -> dict[str, object]:
    """The the docs' JSON form of a client's keyword arguments: exactly the keys the caller gave (None means "not
    given"), so the core alone applies its defaults and checks what was given, as every binding does
    (``timeout=1.0`` alone caps the default attempt_timeout at 1 s; ``timeout=1.0, attempt_timeout=5.0`` is a
    ConfigError naming both)."""
    out: dict[str, object] = {"base_url": _json_value(base_url)}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, Group):
            out[key] = value.to_json()
        elif key in DURATION_KEYS:
            out[key] = _duration(value)
        elif isinstance(value, Mapping):
            out[key] = {str(k): _json_value(v) for k, v in value.items()}
        else:
            out[key] = _json_value(value)
    return out


def settings_schema() -> list[dict[str, Any]]:
    """Every settings key of the core (humus_settings_schema_json): ``{"key", "kind", "default", "doc", ...}``
    in the documented order."""
    keys: list[dict[str, Any]] = json.loads(_native.settings_schema_json())["keys"]
    return keys


def check_settings_mapping(settings: Mapping[str, object]) -> dict[str, object]:
    """A copy of a settings JSON-form mapping with every value JSON can carry; a ConfigError when it is no mapping."""
    if not isinstance(settings, Mapping):
        raise ConfigError(f"settings must be a mapping (the settings' JSON form (docs/settings.md)), not {type(settings).__name__}",
                          status="HUMUS_E_CONFIG", fields=("settings",))
    return {str(k): _json_value(v) for k, v in settings.items()}
