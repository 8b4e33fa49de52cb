"""Retries and Retry-After, idempotency keys, the circuit breaker and the bulkhead, as seen from Python."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

import humus_http
import pytest
from server_harness import TestServer

# --- retries ---------------------------------------------------------------------------------------------------


def test_get_is_retried_through_a_503(server: TestServer, make_client: Callable[..., humus_http.Client],
                                      listener: str, path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200, "body": "ok"}])
    r = make_client(listener).get(path)
    assert (r.status_code, r.text, r.attempts) == (200, "ok", 2)
    assert len(server.requests(path)) == 2


def test_the_last_response_is_returned_when_attempts_run_out(server: TestServer,
                                                             make_client: Callable[..., humus_http.Client],
                                                             path: str) -> None:
    server.script(path, [{"status": 503}])
    r = make_client(max_attempts=3).get(path)
    assert (r.status_code, r.attempts) == (503, 3)
    assert len(server.requests(path)) == 3


def test_retry_after_is_honoured(server: TestServer, make_client: Callable[..., humus_http.Client],
                                 path: str) -> None:
    server.script(path, [{"status": 429, "headers": [["Retry-After", "1"]]}, {"status": 200}])
    client = make_client(max_retry_after=2.0)
    started = time.monotonic()
    r = client.get(path)
    waited = time.monotonic() - started
    assert (r.status_code, r.attempts) == (200, 2)
    assert waited >= 0.95  # the 1 s asked for, not the 5-10 ms backoff (a lower bound: load only adds to it)


def test_a_retry_after_too_long_returns_the_response(server: TestServer,
                                                     make_client: Callable[..., humus_http.Client],
                                                     path: str) -> None:
    server.script(path, [{"status": 503, "headers": [["Retry-After", "30"]]}, {"status": 200}])
    r = make_client(max_retry_after=0.5).get(path)
    # Returned as it came, not waited for: one attempt, one request (a wait would have ended in a second one).
    assert (r.status_code, r.attempts, r.headers["retry-after"]) == (503, 1, "30")
    assert len(server.requests(path)) == 1


def test_post_is_not_retried(server: TestServer, make_client: Callable[..., humus_http.Client], listener: str,
                             path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200}])
    r = make_client(listener).post(path, json={"amount": 1})
    assert (r.status_code, r.attempts) == (503, 1)
    assert len(server.requests(path)) == 1


def test_an_idempotency_key_makes_a_post_retryable_and_is_sent(server: TestServer,
                                                               make_client: Callable[..., humus_http.Client],
                                                               listener: str, path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 201}])
    r = make_client(listener).post(path, json={"amount": 1}, idempotency_key="order-42")
    assert (r.status_code, r.attempts) == (201, 2)
    records = server.requests(path)
    assert [dict(rec["headers"]).get("idempotency-key") for rec in records] == ["order-42", "order-42"]
    assert records[0]["body_sha256"] == records[1]["body_sha256"]


def test_retry_false_forbids_and_true_vouches(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    client = make_client()
    server.script(path, [{"status": 503}, {"status": 200}])
    assert client.get(path, retry=False).attempts == 1
    server.script(path, [{"status": 503}, {"status": 200}])
    assert client.post(path, content=b"x", retry=True).attempts == 2


# --- circuit breaker -------------------------------------------------------------------------------------------


# A breaker that must be seen open stays open for far longer than any loaded machine takes between two
# statements; one that must be seen half-open is waited for past its (short) open time, a lower bound that
# load only adds to.
OPEN_FOR_LONG = 60.0
OPEN_FOR_SHORT = 0.3


def breaker_client(make_client: Callable[..., humus_http.Client], listener: str = "http",
                   open_for: float = OPEN_FOR_SHORT, **settings: object) -> humus_http.Client:
    return make_client(listener, max_attempts=1, trip=humus_http.Trip(consecutive_failures=2),
                       probe=humus_http.Probe(successes_to_close=1),
                       breaker=humus_http.Breaker(open_for=open_for), **settings)


class StateChanges:
    """The breaker's state changes, from the runtime's log sink: (previous, new) in order."""

    def __init__(self) -> None:
        self.changes: list[tuple[str | None, str | None]] = []
        self._lock = threading.Lock()

    def __call__(self, record: humus_http.LogRecord) -> None:
        if record.event == "humus.circuit.state_change":
            with self._lock:
                self.changes.append((record.previous_state, record.new_state))


def test_breaker_opens_rejects_then_probes_and_closes(server: TestServer,
                                                      make_client: Callable[..., humus_http.Client],
                                                      listener: str, path: str) -> None:
    client = breaker_client(make_client, listener, open_for=OPEN_FOR_LONG)
    server.script(path, [{"status": 500}])
    assert client.breaker_state == "closed"
    assert client.get(path).status_code == 500
    assert client.breaker_state == "closed"
    assert client.get(path).status_code == 500
    assert client.breaker_state == "open"

    with pytest.raises(humus_http.CircuitOpenError) as caught:
        client.get(path)
    error = caught.value
    assert error.status == "HUMUS_E_REJECTED"
    assert 0 < error.retry_after <= OPEN_FOR_LONG
    assert error.attempts == 0
    assert len(server.requests(path)) == 2  # the rejected call sent nothing

    # Past its open time, the breaker lets a probe through, and the probe's success closes it.
    client = breaker_client(make_client, listener)
    probed = path + "/probed"
    server.script(probed, [{"status": 500}, {"status": 500}, {"status": 200}])
    assert [client.get(probed).status_code for _ in range(2)] == [500, 500]
    time.sleep(OPEN_FOR_SHORT + 0.05)
    assert client.breaker_state == "half_open"
    assert client.get(probed).status_code == 200
    assert client.breaker_state == "closed"
    assert len(server.requests(probed)) == 3


def test_a_failed_probe_reopens(server: TestServer, make_client: Callable[..., humus_http.Client],
                                make_runtime: Callable[..., humus_http.Runtime], path: str) -> None:
    changes = StateChanges()
    client = breaker_client(make_client, runtime=make_runtime(log_sink=changes))
    server.script(path, [{"status": 503}])
    client.get(path)
    client.get(path)
    time.sleep(OPEN_FOR_SHORT + 0.05)
    assert client.breaker_state == "half_open"
    assert client.get(path).status_code == 503
    # Reopened by the failed probe: seen in the order of the changes, not in a state read that a loaded
    # machine could make after the new open time has run out too.
    assert changes.changes == [("closed", "open"), ("open", "half_open"), ("half_open", "open")]


def test_4xx_does_not_open_the_breaker(server: TestServer, make_client: Callable[..., humus_http.Client],
                                       path: str) -> None:
    client = breaker_client(make_client)
    server.script(path, [{"status": 404}])
    for _ in range(5):
        assert client.get(path).status_code == 404
    assert client.breaker_state == "closed"


# --- bulkhead --------------------------------------------------------------------------------------------------


def test_bulkhead_turns_away_the_call_past_its_limit(server: TestServer,
                                                     make_client: Callable[..., humus_http.Client],
                                                     listener: str, path: str) -> None:
    client = make_client(listener, bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0.05), timeout=60,
                         attempt_timeout=60)
    server.script(path, [{"hang": True}])  # the slot is held until the call is cancelled, however long it takes
    token = humus_http.CancelToken()
    ended: list[str] = []

    def hold() -> None:
        try:
            client.get(path, cancel=token)
            ended.append("returned")
        except humus_http.CancelledCallError:
            ended.append("cancelled")

    slow = threading.Thread(target=hold, daemon=True)
    slow.start()
    deadline = time.monotonic() + 30
    while not server.requests(path):
        assert time.monotonic() < deadline, "the holding call never reached the server"
        time.sleep(0.01)
    with pytest.raises(humus_http.BulkheadFullError) as caught:
        client.get(path + "/other")
    assert caught.value.status == "HUMUS_E_BULKHEAD_FULL"
    assert caught.value.attempts == 0
    token.cancel()
    slow.join(30)
    assert ended == ["cancelled"]
    assert server.requests(path + "/other") == []
    assert client.get(path + "/other").status_code == 200  # the slot came back


def test_a_call_waits_briefly_for_a_slot(server: TestServer, make_client: Callable[..., humus_http.Client],
                                         path: str) -> None:
    # The slot's wait is long enough for any loaded machine to finish the first call: the second waits for the
    # slot and is answered instead of being turned away.
    client = make_client(bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=30.0), timeout=60.0)
    server.script(path, [{"delay_ms": 200}])
    first: list[int] = []
    slow = threading.Thread(target=lambda: first.append(client.get(path).status_code))
    slow.start()
    deadline = time.monotonic() + 30
    while not server.requests(path):
        assert time.monotonic() < deadline, "the first call never reached the server"
        time.sleep(0.01)
    assert client.get(path + "/next").status_code == 200
    slow.join()
    assert first == [200]
