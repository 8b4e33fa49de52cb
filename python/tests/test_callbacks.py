"""Python callables as classifiers and breaker policies, including ones that raise."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import humus_http
import pytest
from humus_http import Attempt, BreakerCounts, Classification, ProbeDecision
from server_harness import TestServer


class Boom(Exception):
    """Raised by the callbacks under test."""


def test_a_classifier_sees_each_attempt_and_decides(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    listener: str, path: str) -> None:
    seen: list[tuple[str, int, str | None, int, str | None]] = []
    threads: set[int] = set()

    def classify(attempt: Attempt) -> Classification:
        seen.append((attempt.method, attempt.status, attempt.header("x-reason"), attempt.number, attempt.error))
        threads.add(threading.get_ident())
        if attempt.status == 404:  # this dependency answers 404 while it warms up
            return Classification(retry=True, breaker="failure")
        return humus_http.default_classify(attempt)

    server.script(path, [{"status": 404, "headers": [["X-Reason", "warming"]]}, {"status": 200}])
    r = make_client(listener, classify=classify).get(path)
    assert (r.status_code, r.attempts) == (200, 2)
    assert seen == [("GET", 404, "warming", 1, None), ("GET", 200, None, 2, None)]
    assert threads == {threading.get_ident()}  # a blocking call classifies on the caller's thread


def test_default_classify_and_presets(server: TestServer, make_client: Callable[..., humus_http.Client],
                                      path: str) -> None:
    verdicts: list[tuple[Classification, Classification]] = []

    def classify(attempt: Attempt) -> Classification:
        verdicts.append((humus_http.default_classify(attempt), humus_http.preset_classify("jfast", attempt)))
        return humus_http.default_classify(attempt)

    server.script(path, [{"status": 429, "headers": [["Retry-After", "0"]]}, {"status": 500}])
    r = make_client(classify=classify, max_attempts=2).get(path)
    assert r.status_code == 500
    assert verdicts[0][0] == Classification(retry=True, breaker="success", retry_after=None)
    assert verdicts[1][0] == Classification(retry=False, breaker="failure")
    assert verdicts[1][1].breaker == "success"  # jfast: a 500 answers, so the dependency is up


def test_a_classifier_sees_transport_errors(make_client: Callable[..., humus_http.Client]) -> None:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    errors: list[tuple[int, str | None, bool]] = []

    def classify(attempt: Attempt) -> Classification:
        errors.append((attempt.status, attempt.error, bool(attempt.error_message)))
        return Classification(retry=False, breaker="ignored")

    runtime = humus_http.Runtime()
    with humus_http.Client(f"http://127.0.0.1:{port}", classify=classify, runtime=runtime) as client:
        with pytest.raises(humus_http.UpstreamConnectError):
            client.get("/")
        assert client.breaker_state == "closed"
    assert errors == [(0, "HUMUS_E_CONNECT", True)]


def test_a_classifier_named_by_preset(server: TestServer, make_client: Callable[..., humus_http.Client],
                                      path: str) -> None:
    client = make_client(classify="jfast", max_attempts=1, trip=humus_http.Trip(consecutive_failures=1))
    server.script(path, [{"status": 500}])
    client.get(path)
    assert client.breaker_state == "closed"  # jfast counts a 500 as a success


# F108
def test_a_raising_classifier_ends_the_call_with_its_exception(server: TestServer,
                                                               make_client: Callable[..., humus_http.Client],
                                                               listener: str, path: str) -> None:
    def classify(attempt: Attempt) -> Classification:
        raise Boom(f"cannot classify {attempt.status}")

    client = make_client(listener, classify=classify, max_attempts=3, trip=humus_http.Trip(consecutive_failures=2))
    with pytest.raises(Boom, match="cannot classify 200") as caught:
        client.get(path)
    assert any("raised by a callback" in note for note in getattr(caught.value, "__notes__", []))
    assert caught.value.__traceback__ is not None
    assert len(server.requests(path)) == 1  # the call ended: no retry
    assert client.breaker_state == "closed"  # counted as one failure
    with pytest.raises(Boom):
        client.get(path)
    assert client.breaker_state == "open"  # the second failure in a row trips it: the breaker stayed consistent
    with pytest.raises(humus_http.CircuitOpenError):
        client.get(path)


def test_a_classifier_returning_junk_raises_type_error(make_client: Callable[..., humus_http.Client],
                                                       path: str) -> None:
    client = make_client(classify=lambda attempt: "retry")
    with pytest.raises(TypeError, match="not humus_http.Classification"):
        client.get(path)
    with pytest.raises(ValueError, match="breaker"):
        Classification(retry=True, breaker="sucess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retry_after"):
        Classification(retry=True, breaker="success", retry_after=-1)


def test_an_attempt_is_valid_only_inside_the_classifier(make_client: Callable[..., humus_http.Client],
                                                        path: str) -> None:
    kept: list[Attempt] = []

    def classify(attempt: Attempt) -> Classification:
        kept.append(attempt)
        return humus_http.default_classify(attempt)

    make_client(classify=classify).get(path)
    with pytest.raises(RuntimeError, match="only during the classifier call"):
        _ = kept[0].status


def test_breaker_policy_callables(server: TestServer, make_client: Callable[..., humus_http.Client],
                                  make_runtime: Callable[..., humus_http.Runtime], path: str) -> None:
    trips: list[BreakerCounts] = []
    probes: list[BreakerCounts] = []

    def trip(counts: BreakerCounts) -> bool:
        trips.append(counts)
        return counts.failures >= 1  # one failure opens

    def probe(counts: BreakerCounts) -> ProbeDecision:
        probes.append(counts)
        return ProbeDecision.CLOSE if counts.successes >= 1 else ProbeDecision.REOPEN

    changes: list[tuple[str | None, str | None]] = []
    runtime = make_runtime(log_sink=lambda record: changes.append((record.previous_state, record.new_state))
                           if record.event == "humus.circuit.state_change" else None)
    client = make_client(max_attempts=1, breaker=humus_http.Breaker(open_for=0.2), runtime=runtime,
                         breaker_policy=humus_http.BreakerPolicy(trip=trip, probe=probe))
    server.script(path, [{"status": 200}, {"status": 502}, {"status": 200}])
    client.get(path)
    assert client.breaker_state == "closed"
    client.get(path)
    # Opened by the trip: seen in the breaker's changes, not in a state read that a loaded machine could make
    # after the 0.2 s open time has run out.
    assert changes == [("closed", "open")]
    assert [(c.state, c.successes, c.failures, c.consecutive_failures) for c in trips] == \
        [("closed", 1, 0, 0), ("closed", 1, 1, 1)]
    assert trips[1].window_results == 2 and trips[1].window_failures == 1
    time.sleep(0.25)  # past the open time: a lower bound, which load only lengthens
    assert client.get(path).status_code == 200
    assert client.breaker_state == "closed"
    assert probes[0].state == "half_open" and probes[0].successes == 1


# F108
def test_a_raising_breaker_policy_ends_the_call_and_keeps_the_breaker(server: TestServer,
                                                                      make_client: Callable[..., humus_http.Client],
                                                                      path: str) -> None:
    calls = 0

    def trip(counts: BreakerCounts) -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise Boom("policy bug")
        return False

    client = make_client(max_attempts=1, breaker_policy=humus_http.BreakerPolicy(
        trip=trip, probe=lambda counts: ProbeDecision.CONTINUE))
    with pytest.raises(Boom, match="policy bug"):
        client.get(path)
    assert client.breaker_state == "closed"
    assert client.get(path).status_code == 200  # consistent: the next call goes through normally
    assert calls == 2


def test_callbacks_run_on_many_threads_at_once(server: TestServer, make_client: Callable[..., humus_http.Client],
                                               path: str) -> None:
    lock = threading.Lock()
    count = 0

    def classify(attempt: Attempt) -> Classification:
        nonlocal count
        with lock:
            count += 1
        return humus_http.default_classify(attempt)

    client = make_client("https", classify=classify)
    threads = [threading.Thread(target=lambda: [client.get(path) for _ in range(20)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert count == 160
