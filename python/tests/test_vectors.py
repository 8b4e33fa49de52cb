"""The conformance vectors (docs/vectors.md §18) through the public Python API: every tests/vectors/*.json scenario runs on
a virtual-clock Runtime with a mock transport, as tests/vectors/README.md specifies a runner and
tests/vectors/vectors_test.cc (the reference runner) does through the C ABI.

Blocking calls go through ``Client``, concurrent groups through an ``AsyncClient`` sharing that client
(``AsyncClient.from_client``: one breaker, budget and bulkhead), ``cancel_at_attempt`` through ``CancelToken``,
the code-supplied callbacks are Python callables, and expected errors are read from the exceptions' ``status``
(``call_error()`` for a callback's own exception). Each vector prints one line, ``vector <name>: ok`` or
``vector <name>: FAIL <field path>: <what>``, also listed in the session's summary. ``HUMUS_VECTORS_DIR`` runs the
files of another folder; ``HUMUS_VECTOR_DUMP=1`` prints what each call and checked step observed.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import humus_http
import pytest
from humus_http import (
    AsyncClient,
    BreakerCounts,
    BreakerPolicy,
    CancelToken,
    CircuitOpenError,
    Classification,
    Client,
    MockReply,
    MockRequest,
    ProbeDecision,
    Response,
    Runtime,
    UpstreamError,
)

ROOT = Path(__file__).resolve().parents[2]
VECTORS = Path(os.environ.get("HUMUS_VECTORS_DIR") or ROOT / "tests" / "vectors")
FILES = sorted(p for p in VECTORS.glob("*.json") if p.is_file())
DUMP = os.environ.get("HUMUS_VECTOR_DUMP", "") not in ("", "0")

CALL_HEADER = "Vector-Call"  # added to every call, so the mock knows which call a request belongs to
GROUP_TIMEOUT_S = 20.0  # real time a concurrent group may take before the runner gives up
MS = timedelta(milliseconds=1)  # an elapsed timedelta // MS: its whole milliseconds, exactly


class RunnerStopped(Exception):
    """The runner cannot go on with this vector (the problem is already recorded)."""


class VectorCallbackFailure(Exception):
    """Raised by the vectors' classifier and breaker policy callbacks when a vector asks them to fail."""


def origin_of(url: str) -> str:
    """The origin of an absolute URL: ``http://payments:8080/a`` → ``http://payments:8080``."""
    scheme = url.find("://")
    start = 0 if scheme < 0 else scheme + 3
    cuts = [i for i in (url.find(c, start) for c in "/?#") if i >= 0]
    return url[:min(cuts)] if cuts else url


class Problems:
    """Mismatches, in the order found; thread-safe (the mock records from the event-loop thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._list: list[str] = []

    def add(self, path: str, what: str) -> None:
        with self._lock:
            self._list.append(f"{path}: {what}")

    def list(self) -> list[str]:
        with self._lock:
            return list(self._list)

    def keys(self, obj: object, path: str, allowed: Iterable[str]) -> bool:
        """Refuses keys the format does not know: a misspelt expectation must not pass by checking nothing."""
        if not isinstance(obj, dict):
            self.add(path, "must be an object")
            return False
        ok = True
        allowed = set(allowed)
        for key in obj:
            if key not in allowed:
                self.add(f"{path}.{key}", "unknown key")
                ok = False
        return ok

    def equal(self, path: str, expected: object, actual: object) -> None:
        if not _json_equal(expected, actual):
            self.add(path, f"expected {json.dumps(expected)}, got {json.dumps(actual)}")


def _json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: numbers by value, but a bool is no number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


# --- The scripted dependency ---------------------------------------------------------------------------------


@dataclass
class Received:
    call: int  # the Vector-Call header; -1 when absent
    method: str
    url: str
    path: str
    at_ms: int  # the runtime's clock when the request reached the mock
    headers: dict[str, str | None]  # the names some "sent" expectation asks about
    body: str | None  # None: no body


@dataclass
class Control:
    cancel_at_attempt: int = 0  # 0: never
    seen: int = 0
    token: CancelToken | None = None


class ScriptedDependency:
    """The mock transport handler: answers from the vector's script and records what it received."""

    def __init__(self, script: dict[str, Any], header_names: set[str], problems: Problems,
                 runtime: Runtime) -> None:
        self._script = script
        self._header_names = sorted(header_names)
        self._problems = problems
        self._runtime = weakref.ref(runtime)  # the runtime keeps this handler: no strong reference back
        self._lock = threading.Lock()
        self._gate = threading.Event()
        self._gate.set()
        self._served: dict[str, int] = {}
        self._received: list[Received] = []
        self._controls: dict[int, Control] = {}

    # While the gate is shut, attempts wait here: the thread driving them stays busy, so the virtual clock
    # cannot move until every call of a concurrent group has been handed to the library.
    def shut_gate(self) -> None:
        self._gate.clear()

    def open_gate(self) -> None:
        self._gate.set()

    def control(self, call: int, control: Control | None) -> None:
        with self._lock:
            if control is None:
                self._controls.pop(call, None)
            else:
                self._controls[call] = control

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def received_by(self, call: int) -> list[Received]:
        with self._lock:
            return [r for r in self._received if r.call == call]

    def __call__(self, request: MockRequest) -> MockReply:
        if not self._gate.wait(GROUP_TIMEOUT_S + 5):
            self._problems.add("script", "the gate of a concurrent group never opened")
        runtime = self._runtime()
        call_id = request.header(CALL_HEADER)
        rec = Received(call=int(call_id) if call_id is not None and call_id.isdigit() else -1,
                       method=request.method, url=request.url, path=request.path,
                       at_ms=runtime.elapsed_ms() if runtime is not None else -1,
                       headers={name: request.header(name) for name in self._header_names},
                       body=request.body.decode("utf-8", errors="surrogateescape") if request.body else None)
        cancel: CancelToken | None = None
        with self._lock:
            self._received.append(rec)
            control = self._controls.get(rec.call)
            if control is not None:
                control.seen += 1
                if control.seen == control.cancel_at_attempt:
                    cancel = control.token
            key = f"{rec.method} {rec.path}"
            if key not in self._script:
                key = "*"
            if key not in self._script:
                self._problems.add("script", f'no reply for "{rec.method} {rec.path}" and no "*"')
                return MockReply(error="HUMUS_E_CONNECT", message="unscripted request")
            replies = self._script[key]
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            one = replies[min(served, len(replies) - 1)]
        if cancel is not None:  # the caller gives up as this request arrives, before it is answered
            cancel.cancel()
        return self._reply(one, f"script.{key}")

    def _reply(self, one: dict[str, Any], path: str) -> MockReply:
        body: str = one.get("body", "")
        if "body" not in one and "body_size" in one:
            body = "x" * int(one["body_size"])
        try:  # MockReply refuses what it cannot send, naming the field (an unknown error name among them)
            return MockReply(status=one.get("status", 200), headers=[(h[0], h[1]) for h in one.get("headers", [])],
                             body=body, error=one.get("error"), message=one.get("message", "scripted"),
                             delay_ms=one.get("delay_ms", 0), hang=bool(one.get("hang", False)),
                             body_error=one.get("body_error"), body_error_after=one.get("body_error_after", 0))
        except (TypeError, ValueError) as refused:
            self._problems.add(path, f"the reply cannot be made: {refused}")
            return MockReply(error="HUMUS_E_CONNECT", message="unusable scripted reply")


# --- Code-supplied callbacks (docs/retries.md §5.4, docs/breaker.md §9.3): Python callables -----------------------------------------------


def make_classifier(fail_on_status: set[int]) -> Callable[[humus_http.Attempt], Classification]:
    def classify(attempt: humus_http.Attempt) -> Classification:
        if attempt.status in fail_on_status:
            raise VectorCallbackFailure(f"the vector's classifier fails on status {attempt.status}")
        return humus_http.default_classify(attempt)
    return classify


def make_policy(consecutive_failures: int, successes_to_close: int, fail: str) -> BreakerPolicy:
    def trip(counts: BreakerCounts) -> bool:
        if fail == "trip":
            raise VectorCallbackFailure("the vector's trip policy fails")
        return counts.consecutive_failures >= consecutive_failures

    def probe(counts: BreakerCounts) -> ProbeDecision:
        if fail == "probe":
            raise VectorCallbackFailure("the vector's probe policy fails")
        if counts.failures > 0:
            return ProbeDecision.REOPEN
        if counts.successes >= successes_to_close:
            return ProbeDecision.CLOSE
        return ProbeDecision.CONTINUE

    return BreakerPolicy(trip=trip, probe=probe)


# --- One call's outcome ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    error: str | None = None  # the status name; None: the call returned a response
    status: int = 0
    attempts: int = 0
    retry_after_ms: int = 0
    message: str = ""
    fields: list[str] = field(default_factory=list)
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""
    start_ms: int = 0
    end_ms: int = 0
    read_error: str | None = None  # an opened call's: the status name of the read that failed
    trace: list[dict[str, Any]] = field(default_factory=list)  # the decision trace, in the vectors' terms


# The members of a trace record a vector's `trace` may check (tests/vectors/README.md); `_ms` ones are the
# record's seconds in milliseconds.
TRACE_KEYS = ("decision", "wait_ms", "wait_source", "status", "error", "wire_sends", "retry_verdict",
              "breaker_verdict", "retry_after_ms", "retry_after_source", "breaker", "breaker_after",
              "budget_before", "budget_after", "redirect", "resend")


def trace_for_vector(records: list[humus_http.AttemptRecord]) -> list[dict[str, Any]]:
    """The records of Response.trace / UpstreamError.trace as the vectors write them."""
    def position(p: humus_http.BreakerPosition | None) -> dict[str, Any] | None:
        return None if p is None else {"state": p.state, "generation": p.generation}

    def ms(seconds: float | None) -> float | None:
        return None if seconds is None else seconds * 1000

    return [{"decision": r.decision, "wait_ms": ms(r.wait), "wait_source": r.wait_source, "status": r.status,
             "error": r.error, "wire_sends": r.wire_sends, "retry_verdict": r.retry_verdict,
             "breaker_verdict": r.breaker_verdict, "retry_after_ms": ms(r.retry_after),
             "retry_after_source": r.retry_after_source, "breaker": position(r.breaker),
             "breaker_after": position(r.breaker_after), "budget_before": r.budget_before,
             "budget_after": r.budget_after, "redirect": r.redirect, "resend": r.resend} for r in records]


def outcome_of(result: Response | BaseException, start_ms: int, problems: Problems, path: str) -> Outcome:
    """What a call came to, read through the public API only."""
    o = Outcome(start_ms=start_ms, end_ms=start_ms)
    if isinstance(result, Response):
        o.status = result.status_code
        o.attempts = result.attempts
        o.body = result.content
        o.headers = result.headers.multi_items()
        o.url = result.url
        o.end_ms = start_ms + result.elapsed // MS
        result.close()
        o.trace = trace_for_vector(result.trace)
        return o
    error: UpstreamError | None
    if isinstance(result, UpstreamError):
        error = result
    else:
        error = humus_http.call_error(result)
        if error is None:
            problems.add(path, f"the call raised {type(result).__name__}: {result}")
            o.error = type(result).__name__
            return o
    o.error = error.status
    o.attempts = error.attempts
    o.message = error.message
    o.fields = list(error.fields)
    o.trace = trace_for_vector(error.trace)
    if isinstance(error, CircuitOpenError):
        o.retry_after_ms = round(error.retry_after * 1000)
    if error.elapsed is not None:  # None: refused before it was sent, at once
        o.end_ms = start_ms + error.elapsed // MS
    return o


def describe(o: Outcome, sent: list[Received]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if o.error is None:
        d["status"] = o.status
    else:
        d.update(error=o.error, message=o.message, retry_after_ms=o.retry_after_ms)
    d["attempts"] = o.attempts
    d["trace"] = o.trace
    d["attempt_times_ms"] = [r.at_ms - o.start_ms for r in sent]
    d["sent"] = [f"{r.method} {r.path}" for r in sent]
    d["elapsed_ms"] = o.end_ms - o.start_ms
    if len(o.body) <= 64:
        d["body"] = o.body.decode("utf-8", errors="replace")
    else:
        d["body_size"] = len(o.body)
    return d


# --- The runner ----------------------------------------------------------------------------------------------------


@dataclass
class PreparedCall:
    id: int
    path: str
    expect: dict[str, Any]
    method: str
    url: str
    kwargs: dict[str, Any]
    control: Control


class Runner:
    def __init__(self, vector: dict[str, Any], problems: Problems) -> None:
        self.v = vector
        self.p = problems
        self.runtime: Runtime | None = None
        self.mock: ScriptedDependency | None = None
        self.client: Client | None = None
        self.aclient: AsyncClient | None = None
        self.next_id = 1
        self.held: list[Any] = []  # Client.stream blocks of "open" steps not left yet

    def close(self) -> None:
        self.close_held()
        for c in (self.aclient, self.client):
            if c is not None:
                c.close()
        self.aclient = self.client = None

    def run(self) -> None:
        p = self.p
        p.keys(self.v, "", ["name", "spec", "description", "runtime", "settings", "callbacks", "script", "steps",
                            "settings_error"])
        runtime = self.v.get("runtime", {})
        p.keys(runtime, "runtime", ["seed"])
        seed = runtime.get("seed", 0) if isinstance(runtime, dict) else 0
        try:
            self.runtime = Runtime(clock="virtual", seed=seed)
        except UpstreamError as e:
            p.add("runtime", f"Runtime(clock='virtual', seed={seed!r}) failed: {e}")
            return
        names: set[str] = set()
        self.collect_header_names(self.v.get("steps", []), names)
        script = self.v.get("script", {})
        self.check_script(script)
        self.mock = ScriptedDependency(script if isinstance(script, dict) else {}, names, p, self.runtime)
        self.runtime.set_mock_transport(self.mock)
        if not self.make_client():
            return
        steps = self.v.get("steps", [])
        if not isinstance(steps, list):
            p.add("steps", "must be an array")
            return
        for i, s in enumerate(steps):
            self.step(s, f"steps[{i}]")

    # --- setting up

    @staticmethod
    def collect_header_names(node: object, names: set[str]) -> None:
        """The names of the request headers some "sent" expectation asks about: the mock records just those."""
        if isinstance(node, dict):
            sent = node.get("sent")
            if isinstance(sent, list):
                for s in sent:
                    if isinstance(s, dict) and isinstance(s.get("headers"), dict):
                        names.update(s["headers"])
            for value in node.values():
                Runner.collect_header_names(value, names)
        elif isinstance(node, list):
            for item in node:
                Runner.collect_header_names(item, names)

    def check_script(self, script: object) -> None:
        if not isinstance(script, dict):
            self.p.add("script", "must be an object")
            return
        for key, replies in script.items():
            path = f"script.{key}"
            if not isinstance(replies, list) or not replies:
                self.p.add(path, "must be a non-empty array of replies")
                continue
            for i, reply in enumerate(replies):
                self.p.keys(reply, f"{path}[{i}]", ["status", "headers", "body", "body_size", "delay_ms", "hang",
                                                   "error", "message", "body_error", "body_error_after",
                                                   "note"])

    def make_client(self) -> bool:
        p = self.p
        settings = self.v.get("settings", {})
        classify, policy = self.callbacks()
        want_error = "settings_error" in self.v
        if want_error and self.v.get("steps", []):
            p.add("steps", "must be empty with settings_error")
        try:
            self.client = Client.from_settings(settings, classify=classify, breaker_policy=policy,
                                               runtime=self.runtime)
        except UpstreamError as e:
            if not want_error:
                p.add("settings", f"refused: {e.status} {e.message}")
                return False
            expected = self.v["settings_error"]
            p.keys(expected, "settings_error", ["error", "fields"])
            p.equal("settings_error.error", expected.get("error"), e.status)
            if "fields" in expected:
                p.equal("settings_error.fields", sorted(expected["fields"]), sorted(e.fields))
            return False
        if want_error:
            p.add("settings_error", "expected the settings to be refused, the client was built")
            return False
        return True

    def callbacks(self) -> tuple[Callable[[humus_http.Attempt], Classification] | None, BreakerPolicy | None]:
        cb = self.v.get("callbacks")
        if cb is None:
            return None, None
        self.p.keys(cb, "callbacks", ["classifier", "breaker_policy"])
        classify = policy = None
        if isinstance(cb, dict) and "classifier" in cb:
            self.p.keys(cb["classifier"], "callbacks.classifier", ["fail_on_status"])
            classify = make_classifier({int(s) for s in cb["classifier"].get("fail_on_status", [])})
        if isinstance(cb, dict) and "breaker_policy" in cb:
            bp = cb["breaker_policy"]
            self.p.keys(bp, "callbacks.breaker_policy", ["consecutive_failures", "successes_to_close", "fail"])
            policy = make_policy(bp.get("consecutive_failures", 5), bp.get("successes_to_close", 3),
                                 bp.get("fail", ""))
        return classify, policy

    # --- steps

    def step(self, s: dict[str, Any], path: str) -> None:
        p = self.p
        assert self.runtime is not None
        p.keys(s, path, ["call", "expect", "repeat", "concurrent", "advance_ms", "open", "read", "cancel_after_read",
                         "hold", "close", "then", "note"])
        if not isinstance(s, dict):
            return
        if sum(k in s for k in ("call", "concurrent", "advance_ms", "open", "close")) > 1:
            p.add(path, "a step is one of call, concurrent, advance_ms, open, close (or only then)")
        if any(k in s for k in ("read", "cancel_after_read", "hold")) and "open" not in s:
            p.add(path, "read, cancel_after_read and hold go with open")
        if "open" in s:
            call_id = self.next_id
            self.next_id += 1
            o = self.opened_call(s, call_id, f"{path}.open")
            self.observe(s.get("expect", {}), o, call_id, f"{path}.expect")
        elif "close" in s:
            self.close_held()
        elif "call" in s:
            repeat = s.get("repeat", 1)
            for i in range(repeat):
                at = path if repeat == 1 else f"{path}#{i}"
                call_id = self.next_id
                self.next_id += 1
                o = self.blocking_call(s["call"], call_id, f"{at}.call")
                self.observe(s.get("expect", {}), o, call_id, f"{at}.expect")
        elif "concurrent" in s:
            self.concurrent(s["concurrent"], f"{path}.concurrent")
        elif "advance_ms" in s:
            try:
                self.runtime.advance_ms(s["advance_ms"])
            except (UpstreamError, TypeError, ValueError, RuntimeError) as e:
                p.add(f"{path}.advance_ms", f"Runtime.advance_ms failed: {e}")
        elif "repeat" in s or "expect" in s:
            p.add(path, "repeat and expect go with a call")
        self.then(s.get("then", {}), f"{path}.then")

    def prepare(self, call: dict[str, Any], call_id: int, path: str, expect: dict[str, Any]) -> PreparedCall:
        """The call's arguments for Client.request / AsyncClient.request."""
        p = self.p
        p.keys(call, path, ["method", "path", "url", "headers", "body", "idempotency_key", "retry", "timeout_ms",
                            "cancel_at_attempt", "note"])
        method = call.get("method", "GET")
        url = call.get("url") or self.base_origin() + call.get("path", "/")
        headers = [(h[0], h[1]) for h in call.get("headers", [])]
        headers.append((CALL_HEADER, str(call_id)))
        kwargs: dict[str, Any] = {"headers": headers}
        if "body" in call:
            kwargs["content"] = call["body"].encode()
        if "idempotency_key" in call:
            kwargs["idempotency_key"] = call["idempotency_key"]
        if "retry" in call:
            modes = {"default": None, "forbid": False, "force": True}
            if call["retry"] not in modes:
                p.add(f"{path}.retry", 'must be "default", "forbid" or "force"')
            kwargs["retry"] = modes.get(call["retry"])
        if "timeout_ms" in call:
            kwargs["timeout"] = call["timeout_ms"] / 1000
        control = Control(cancel_at_attempt=call.get("cancel_at_attempt", 0))
        if control.cancel_at_attempt > 0:
            control.token = kwargs["cancel"] = CancelToken()
        return PreparedCall(call_id, path, expect, method, url, kwargs, control)

    def base_origin(self) -> str:
        return origin_of(self.v.get("settings", {}).get("base_url", "http://payments:8080"))

    def blocking_call(self, call: dict[str, Any], call_id: int, path: str) -> Outcome:
        assert self.client is not None and self.runtime is not None and self.mock is not None
        prepared = self.prepare(call, call_id, path, {})
        self.mock.control(call_id, prepared.control)
        start = self.runtime.elapsed_ms()
        result: Response | BaseException
        try:
            result = self.client.request(prepared.method, prepared.url, **prepared.kwargs)
        except Exception as e:  # noqa: BLE001 (every outcome but a response is an exception: compared below)
            result = e
        self.mock.control(call_id, None)
        return outcome_of(result, start, self.p, path)

    def opened_call(self, s: dict[str, Any], call_id: int, path: str) -> Outcome:
        """An "open" step through Client.stream: reads of up to ``read`` bytes (absent: to the end) with
        iter_bytes, a cancel and one more read when ``cancel_after_read``, then the block is left unless
        ``hold`` (a "close" step leaves it)."""
        assert self.client is not None and self.runtime is not None and self.mock is not None
        prepared = self.prepare(s["open"], call_id, path, {})
        token = prepared.kwargs.setdefault("cancel", CancelToken())
        self.mock.control(call_id, prepared.control)
        start = self.runtime.elapsed_ms()
        block = self.client.stream(prepared.method, prepared.url, **prepared.kwargs)
        try:
            response = block.__enter__()
        except Exception as e:  # noqa: BLE001 (the open's failure is the call's outcome)
            self.mock.control(call_id, None)
            return outcome_of(e, start, self.p, path)
        o = Outcome(start_ms=start, end_ms=start + response.elapsed // MS, status=response.status_code,
                    attempts=response.attempts, headers=response.headers.multi_items(), url=response.url)
        limit = s.get("read")
        body = bytearray()
        pieces = response.iter_bytes(None if limit is None else max(1, limit))

        def read_one() -> bool:
            try:
                piece = next(pieces)
            except StopIteration:
                return False
            except Exception as e:  # noqa: BLE001 (a failed read is compared below)
                error = e if isinstance(e, UpstreamError) else humus_http.call_error(e)
                o.read_error = error.status if error is not None else type(e).__name__
                return False
            body.extend(piece)
            return True

        if limit is None:
            while read_one():
                pass
        elif limit > 0:
            read_one()
        if s.get("cancel_after_read", False) and o.read_error is None:
            token.cancel()
            read_one()
        o.body = bytes(body)
        o.trace = trace_for_vector(response.trace)  # once read, before it is closed
        self.mock.control(call_id, None)
        self.held.append(block)
        if not s.get("hold", False):
            self.close_held()
        return o

    def close_held(self) -> None:
        held, self.held = self.held, []
        for block in held:
            block.__exit__(None, None, None)

    def concurrent(self, group: object, path: str) -> None:
        assert self.client is not None and self.runtime is not None and self.mock is not None
        p = self.p
        if not isinstance(group, list):
            p.add(path, "must be an array")
            return
        if self.aclient is None:
            self.aclient = AsyncClient.from_client(self.client)
        calls: list[PreparedCall] = []
        for i, entry in enumerate(group):
            at = f"{path}[{i}]"
            p.keys(entry, at, ["call", "expect", "repeat", "note"])
            repeat = entry.get("repeat", 1)
            for k in range(repeat):
                call_id = self.next_id
                self.next_id += 1
                item = at if repeat == 1 else f"{at}#{k}"
                calls.append(self.prepare(entry.get("call", {}), call_id, f"{item}.call", entry.get("expect", {})))
        for c in calls:
            self.mock.control(c.id, c.control)
        self.mock.shut_gate()
        try:
            start = self.runtime.elapsed_ms()
            results = asyncio.run(self.run_group(calls, start, path))
        finally:
            self.mock.open_gate()
        for c, result in zip(calls, results, strict=True):
            self.mock.control(c.id, None)
            self.observe(c.expect, outcome_of(result, start, p, c.path), c.id, c.path.removesuffix(".call")
                         + ".expect")

    async def run_group(self, calls: list[PreparedCall], start: int, path: str) -> list[Response | BaseException]:
        assert self.aclient is not None and self.runtime is not None and self.mock is not None
        aclient = self.aclient
        tasks = [asyncio.ensure_future(aclient.request(c.method, c.url, **c.kwargs)) for c in calls]
        # Tasks run in the order they were made: after one turn of the loop, each has submitted its call (an
        # AsyncClient call is handed to the library before its first await).
        await asyncio.sleep(0)
        moved = self.runtime.elapsed_ms()
        if moved != start:
            self.p.add(path, f"the clock moved from {start} to {moved} ms while the group was being submitted")
        self.mock.open_gate()
        _, pending = await asyncio.wait(tasks, timeout=GROUP_TIMEOUT_S)
        if pending:
            self.p.add(path, f"the calls did not all complete within {GROUP_TIMEOUT_S:.0f} s of real time")
            self.close()  # cancels what is left
            await asyncio.wait(pending)
            raise RunnerStopped("concurrent group stuck")
        results: list[Response | BaseException] = []
        for t in tasks:
            exc = t.exception()
            results.append(exc if exc is not None else t.result())
        return results

    # --- expectations

    def observe(self, e: dict[str, Any], o: Outcome, call_id: int, path: str) -> None:
        assert self.mock is not None
        sent = self.mock.received_by(call_id)
        if DUMP:
            print(f"  {path} observed {json.dumps(describe(o, sent))}", file=sys.stderr)
        p = self.p
        p.keys(e, path, ["status", "error", "attempts", "attempt_times_ms", "elapsed_ms", "retry_after_ms", "body",
                         "body_size", "headers", "url", "message", "fields", "sent", "read_error", "trace"])
        outcome = f"status {o.status}" if o.error is None else f"{o.error} ({o.message})"
        if "status" in e:
            if o.error is not None:
                p.add(f"{path}.status", f"expected {json.dumps(e['status'])}, got {outcome}")
            else:
                p.equal(f"{path}.status", e["status"], o.status)
        if "error" in e:
            if o.error is None:
                p.add(f"{path}.error", f"expected {json.dumps(e['error'])}, got {outcome}")
            else:
                p.equal(f"{path}.error", e["error"], o.error)
        if "status" not in e and "error" not in e:
            p.add(path, "must say status or error")
        if "attempts" in e:
            p.equal(f"{path}.attempts", e["attempts"], o.attempts)
        if "attempt_times_ms" in e:
            p.equal(f"{path}.attempt_times_ms", e["attempt_times_ms"], [r.at_ms - o.start_ms for r in sent])
        if "elapsed_ms" in e:
            p.equal(f"{path}.elapsed_ms", e["elapsed_ms"], o.end_ms - o.start_ms)
        if "retry_after_ms" in e:
            p.equal(f"{path}.retry_after_ms", e["retry_after_ms"], o.retry_after_ms)
        if "read_error" in e or o.read_error is not None:
            p.equal(f"{path}.read_error", e.get("read_error"), o.read_error)
        if "body" in e:
            p.equal(f"{path}.body", e["body"], o.body.decode("utf-8", errors="surrogateescape"))
        if "body_size" in e:
            p.equal(f"{path}.body_size", e["body_size"], len(o.body))
        if "url" in e:
            p.equal(f"{path}.url", e["url"], o.url)
        if "message" in e:
            p.equal(f"{path}.message", e["message"], o.message)
        if "fields" in e:
            p.equal(f"{path}.fields", e["fields"], o.fields)
        if "headers" in e:
            for name, want in e["headers"].items():
                got = next((v for n, v in o.headers if n.lower() == name.lower()), None)
                p.equal(f"{path}.headers.{name}", want, got)
        if "trace" in e:
            self.check_trace(e["trace"], o.trace, f"{path}.trace")
        if "sent" in e:
            want_sent = e["sent"]
            if len(want_sent) != len(sent):
                p.add(f"{path}.sent", f"expected {len(want_sent)} requests, the mock received {len(sent)}")
            for i, (w, r) in enumerate(zip(want_sent, sent, strict=False)):
                at = f"{path}.sent[{i}]"
                p.keys(w, at, ["method", "path", "url", "headers", "body"])
                for key in ("method", "path", "url", "body"):
                    if key in w:
                        p.equal(f"{at}.{key}", w[key], getattr(r, key))
                for name, value in w.get("headers", {}).items():
                    p.equal(f"{at}.headers.{name}", value, r.headers.get(name))

    def check_trace(self, want: object, got: list[dict[str, Any]], path: str) -> None:
        """Every record, in order; each expected record names only the members it checks; numbers within 1e-6."""
        p = self.p
        if not isinstance(want, list):
            p.add(path, "must be an array")
            return
        if len(want) != len(got):
            p.add(path, f"expected {len(want)} records, the trace has {len(got)}: {json.dumps(got)}")
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            at = f"{path}[{i}]"
            if not p.keys(w, at, TRACE_KEYS):
                continue
            for key, value in w.items():
                actual = g[key]
                numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (value, actual))
                if numbers:
                    if abs(value - actual) > 1e-6:
                        p.add(f"{at}.{key}", f"expected {json.dumps(value)}, got {json.dumps(actual)}")
                else:
                    p.equal(f"{at}.{key}", value, actual)

    def then(self, t: dict[str, Any], path: str) -> None:
        """State checks after a step; only what the vector names is read (a breaker read may advance it)."""
        assert self.client is not None and self.runtime is not None and self.mock is not None
        p = self.p
        p.keys(t, path, ["breaker", "budget_tokens", "received", "clock_ms", "bulkhead_limit"])
        if DUMP and t:
            observed = {"breaker": dataclasses.asdict(self.client.breaker_counts),
                        "budget_tokens": self.client.budget_tokens, "received": len(self.mock.received()),
                        "clock_ms": self.runtime.elapsed_ms(), "bulkhead_limit": self.client.bulkhead_limit}
            print(f"  {path} observed {json.dumps(observed)}", file=sys.stderr)
        if "breaker" in t:
            b = t["breaker"]
            p.keys(b, f"{path}.breaker", ["state", "successes", "failures", "consecutive_successes",
                                           "consecutive_failures", "timed_out_probes", "window_results",
                                           "window_failures", "slow_results", "window_slow"])
            state = self.client.breaker_state
            if "state" in b:
                p.equal(f"{path}.breaker.state", b["state"], state)
            counts = self.client.breaker_counts
            for name in ("successes", "failures", "consecutive_successes", "consecutive_failures",
                         "timed_out_probes", "window_results", "window_failures", "slow_results", "window_slow"):
                if name in b:
                    p.equal(f"{path}.breaker.{name}", b[name], getattr(counts, name))
        if "budget_tokens" in t:
            tokens = self.client.budget_tokens
            if abs(t["budget_tokens"] - tokens) > 1e-6:
                p.add(f"{path}.budget_tokens", f"expected {json.dumps(t['budget_tokens'])}, got {json.dumps(tokens)}")
        if "received" in t:
            p.equal(f"{path}.received", t["received"], len(self.mock.received()))
        if "clock_ms" in t:
            p.equal(f"{path}.clock_ms", t["clock_ms"], self.runtime.elapsed_ms())
        if "bulkhead_limit" in t:
            p.equal(f"{path}.bulkhead_limit", t["bulkhead_limit"], self.client.bulkhead_limit)


def run_vector(file: Path) -> list[str]:
    """Every mismatch of one vector file, the first one first."""
    problems = Problems()
    try:
        vector = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        problems.add("", f"not a JSON object ({e})")
        return problems.list()
    if not isinstance(vector, dict):
        problems.add("", "not a JSON object")
        return problems.list()
    if vector.get("name") != file.stem:
        problems.add("name", f'must be the file\'s stem "{file.stem}"')
    if DUMP:
        print(f"vector {file.stem}", file=sys.stderr)
    runner = Runner(vector, problems)
    try:
        runner.run()
    except RunnerStopped:
        pass
    except Exception as e:  # noqa: BLE001 (the runner's own failure is a vector failure, named)
        problems.add("", f"runner stopped: {type(e).__name__}: {e}")
    finally:
        runner.close()
    return problems.list()


def test_the_vector_set_is_there() -> None:
    assert len(FILES) >= 40, f"expected the conformance vectors in {VECTORS}"


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_vector(file: Path, report_vector: Callable[[str], None]) -> None:
    found = run_vector(file)
    report_vector(f"vector {file.stem}: ok" if not found else f"vector {file.stem}: FAIL {found[0]}")
    assert not found, f"vector {file.stem}:\n  " + "\n  ".join(found)
