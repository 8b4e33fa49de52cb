"""The soak's own test: each invariant catches a planted bug, and a short real soak passes.

    python -m pytest tests/soak/test_soak_selftest.py
"""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import invariants  # noqa: E402

T0 = 1000.0
REFUSED = (1010.0, 1011.0)


def clean() -> dict[str, Any]:
    """A small run that keeps every invariant: three calls of one client, one retried once."""
    calls = [
        {"rid": "a-0", "client": "a", "method": "GET", "idem": False, "t0": T0, "t1": T0 + 0.2, "deadline": 1.0,
         "outcome": "response", "kind": 200, "attempts": 2, "traced": 2, "sent": 2, "own": True},
        {"rid": "a-1", "client": "a", "method": "POST", "idem": False, "t0": T0 + 0.3, "t1": T0 + 0.4,
         "deadline": 1.0, "outcome": "error", "kind": "UpstreamConnectError", "attempts": 1, "traced": 1,
         "sent": 1},
        {"rid": "a-2", "client": "a", "method": "POST", "idem": True, "t0": T0 + 0.3, "t1": T0 + 0.9,
         "deadline": 0.5, "outcome": "response", "kind": 200, "attempts": 1, "traced": 1, "sent": 1, "own": True},
        # Dialled a closed port once (its trace says that attempt sent nothing), then got through.
        {"rid": "a-3", "client": "a", "method": "GET", "idem": False, "t0": 1010.9, "t1": 1011.2,
         "deadline": 1.0, "outcome": "response", "kind": 200, "attempts": 2, "traced": 2, "sent": 1, "own": True},
    ]

    def entry(rid: str, method: str, idem: bool, t: float, status: int | None, inflight: int) -> dict[str, Any]:
        return {"rid": rid, "client": "a", "method": method, "idem": idem, "t": t, "status": status,
                "t_answer": None if status is None else t + 0.01, "inflight": inflight, "action": "x"}

    ledger = [
        entry("a-0", "GET", False, T0 + 0.01, 503, 1),
        entry("a-0", "GET", False, T0 + 0.1, 200, 1),
        entry("a-1", "POST", False, T0 + 0.31, None, 1),
        entry("a-2", "POST", True, T0 + 0.32, 200, 2),
        entry("a-3", "GET", False, 1011.1, 200, 1),
    ]
    return {
        "calls": calls,
        "ledger": ledger,
        "header": {"phases": [["outage_refused", *REFUSED]]},
        "meta": {"clients": {"a": {"max_attempts": 3, "bulkhead": 2, "tokens": 10, "ratio": 0.1}},
                 "started": {"a": 4}, "unfinished": []},
        "resources": {"baseline": {"fds": 10, "sockets": 2, "threads": 1, "tasks": 3},
                      "after": {"fds": 10, "sockets": 2, "threads": 1, "tasks": 3}},
        "rss": [(T0 + i, 50e6 + (i % 2) * 1e5) for i in range(40)],
    }


def counted(call: dict[str, Any], attempts: int, sent: int | None = None) -> None:
    """The call reports `attempts`, its trace holds as many, and says `sent` (all, by default) reached the wire."""
    call.update(attempts=attempts, traced=attempts, sent=attempts if sent is None else sent)


def verdicts(run: dict[str, Any]) -> dict[str, bool]:
    results = invariants.check_all(run["calls"], run["ledger"], run["header"], run["meta"], run["resources"],
                                   run["rss"])
    return {name: ok for name, ok, _ in results}


def failing(run: dict[str, Any]) -> set[str]:
    return {name for name, ok in verdicts(run).items() if not ok}


def test_clean_run_passes_every_invariant() -> None:
    assert failing(clean()) == set()


def test_report_format() -> None:
    lines, failed = invariants.report([("a", True, "fine"), ("b", False, "broken")])
    assert lines == ["invariant a: ok fine", "invariant b: FAIL broken", "1 passed, 1 failed"]
    assert failed == 1


# --- planted bugs: each one is caught by its invariant, and only by the ones it really breaks -------------------

def test_attempt_counted_twice() -> None:
    run = clean()
    run["calls"][0]["attempts"] = 3  # the client says 3, its trace and the wire 2
    assert failing(run) == {"attempts_match_wire"}


def test_attempt_missing_from_count() -> None:
    run = clean()
    run["calls"][0]["attempts"] = 1
    assert "attempts_match_wire" in failing(run)


def test_the_wire_must_see_what_the_trace_says_was_sent() -> None:
    run = clean()
    run["ledger"].append({**run["ledger"][-1], "t": 1011.15})  # a-3: the trace says 1 of 2 sent, the wire saw 2
    assert failing(run) == {"attempts_match_wire"}
    counted(run["calls"][3], 2)  # both sent: exact again
    assert failing(run) == set()


def test_an_attempt_that_dialled_a_closed_port_sends_nothing() -> None:
    run = clean()
    run["calls"].append({"rid": "a-4", "client": "a", "method": "GET", "idem": False, "t0": 1011.3, "t1": 1011.31,
                         "deadline": 1.0, "outcome": "error", "kind": "UpstreamConnectError",
                         "status": "HUMUS_E_CONNECT", "attempts": 1, "traced": 1, "sent": 1})
    run["meta"]["started"]["a"] += 1
    assert failing(run) == {"attempts_match_wire"}  # its trace claims a request no wire saw
    run["calls"][-1]["sent"] = 0
    assert failing(run) == set()


def test_an_attempt_with_an_answer_cannot_have_sent_nothing() -> None:
    run = clean()
    run["calls"][0]["answered_unsent"] = 1
    assert failing(run) == {"attempts_match_wire"}


def test_more_requests_sent_than_attempts() -> None:
    run = clean()
    run["ledger"].append({**run["ledger"][3], "t": T0 + 0.5})  # a-2: a second request, one attempt
    run["calls"][2]["sent"] = 2
    assert failing(run) == {"attempts_match_wire"}


def _cancelled(run: dict[str, Any], attempts: int, wire: int, **fields: Any) -> None:
    """A GET of client a, ended by a cancel after `attempts` attempts, `wire` of them on the wire."""
    call = {"rid": "a-c", "client": "a", "method": "GET", "idem": False, "t0": T0 + 2, "t1": T0 + 2.1,
            "deadline": 1.0, "outcome": "error", "kind": "CancelledCallError", "status": "HUMUS_E_CANCELLED",
            "attempts": attempts, "traced": attempts, "sent": attempts, "cut": True}
    call.update(fields)
    run["calls"].append(call)
    run["meta"]["started"]["a"] += 1
    for n in range(wire):
        run["ledger"].append({"rid": "a-c", "client": "a", "method": "GET", "idem": False, "t": T0 + 2 + n * 0.03,
                              "status": 503 if n + 1 < attempts else None, "t_answer": None, "inflight": 1,
                              "action": "x"})


def test_a_cancel_may_cut_the_last_attempt_before_it_went_out() -> None:
    # Cancelled while its attempt dialled: counted (the breaker admitted it), on no wire.
    for attempts, wire in ((1, 1), (1, 0), (2, 1), (0, 0)):
        run = clean()
        _cancelled(run, attempts, wire)
        assert failing(run) == set(), (attempts, wire)
    for attempts, wire in ((2, 0), (1, 2), (0, 1)):  # only the last one, and never more than reported
        run = clean()
        _cancelled(run, attempts, wire)
        assert "attempts_match_wire" in failing(run), (attempts, wire)


def test_only_a_cancelled_call_may_lose_a_request_it_sent() -> None:
    run = clean()
    _cancelled(run, 1, 0, outcome="error", kind="UpstreamTimeoutError", status="HUMUS_E_TIMEOUT", cut=False)
    assert failing(run) == {"attempts_match_wire"}
    run["calls"][-1]["sent"] = 0  # a dial or TLS handshake that timed out: counted, and its trace says unsent
    assert failing(run) == set()


def test_a_response_a_cancel_returned_may_have_an_unsent_retry() -> None:
    # The retry after a 503 was cut before it went out: the call returns the 503 with 2 attempts.
    run = clean()
    _cancelled(run, 2, 1, outcome="response", kind=503, status=None, own=True)
    assert failing(run) == set()
    run = clean()
    _cancelled(run, 2, 1, outcome="response", kind=503, status=None, own=True, cut=False)
    assert failing(run) == {"attempts_match_wire"}


def test_stale_answer_on_a_reused_connection() -> None:
    run = clean()
    run["calls"][2]["own"] = False
    assert failing(run) == {"response_is_own"}


def test_two_outcomes_for_one_call() -> None:
    run = clean()
    run["calls"].append(copy.deepcopy(run["calls"][1]))
    assert "one_outcome" in failing(run)


def test_call_that_never_returned() -> None:
    run = clean()
    run["meta"]["unfinished"] = ["a-4"]
    run["meta"]["started"]["a"] = 5
    assert failing(run) == {"one_outcome"}


def test_exception_outside_the_upstream_error_tree() -> None:
    run = clean()
    run["calls"][1].update(outcome="unexpected", kind="KeyError: 'x'")
    assert failing(run) == {"one_outcome"}


def test_wire_request_of_no_call() -> None:
    run = clean()
    run["ledger"].append({**run["ledger"][0], "rid": "ghost-1"})
    assert "one_outcome" in failing(run)


def test_cancelled_call_is_an_outcome_checked_on_the_wire_only() -> None:
    run = clean()
    run["calls"][0].update(outcome="cancelled", kind="cancelled", attempts=None)
    assert failing(run) == set()
    run["meta"]["clients"]["a"]["max_attempts"] = 1  # its two requests on the wire are still counted
    assert "max_attempts" in failing(run)


def test_post_twice_on_the_wire() -> None:
    run = clean()
    run["ledger"].append({**run["ledger"][2], "t": T0 + 0.35})
    counted(run["calls"][1], 2)  # even when the client owns up to it
    assert failing(run) == {"post_once"}


def test_post_with_a_key_may_be_sent_twice() -> None:
    run = clean()
    run["ledger"].append({**run["ledger"][3], "t": T0 + 0.5})
    counted(run["calls"][2], 2)
    assert failing(run) == set()


def test_call_over_max_attempts() -> None:
    run = clean()
    run["meta"]["clients"]["a"]["max_attempts"] = 1
    assert "max_attempts" in failing(run)


def test_retries_over_the_budget() -> None:
    run = clean()
    # tokens 2: a retry needs more than 1 token left after its charge, so not one retry is possible.
    run["meta"]["clients"]["a"]["tokens"] = 2
    assert failing(run) == {"retry_budget"}


def test_retry_budget_bound_is_exact() -> None:
    # 10 tokens, no success: retries 1..4 leave 9..6 (> 5): allowed; the 5th leaves 5: refused.
    assert invariants.budget_allows(4, 10, 0.1, 0)
    assert not invariants.budget_allows(5, 10, 0.1, 0)
    # One success lifts the 5th charge to 5.1 left; the 6th needs 11 (10 successes leave exactly 5).
    assert invariants.budget_allows(5, 10, 0.1, 1)
    assert not invariants.budget_allows(6, 10, 0.1, 10)
    assert invariants.budget_allows(6, 10, 0.1, 11)


def test_retries_on_the_wire_before_their_successes() -> None:
    run = clean()
    # 6 calls retried at once in a 10-token bucket with no success yet: the 5th retry was over.
    for i in range(6):
        rid = f"a-r{i}"
        run["calls"].append({"rid": rid, "client": "a", "method": "GET", "idem": False, "t0": T0 - 1.1,
                             "t1": T0 - 0.9, "deadline": 1.0, "outcome": "error", "kind": "UpstreamTimeoutError",
                             "attempts": 2, "traced": 2, "sent": 2})
        for j in range(2):
            run["ledger"].append({"rid": rid, "client": "a", "method": "GET", "idem": False,
                                  "t": T0 - 1 + j * 0.01 + i * 0.001, "status": None, "t_answer": None,
                                  "inflight": 1, "action": "hang"})
    run["meta"]["started"]["a"] += 6
    assert failing(run) == {"retry_budget"}


def _add_call(run: dict[str, Any], rid: str, t: float, statuses: list[int | None]) -> None:
    """A GET of client a whose attempts reached the wire at t, t + 0.05, ... with these statuses."""
    run["calls"].append({"rid": rid, "client": "a", "method": "GET", "idem": False, "t0": t - 0.01,
                         "t1": t + 0.05 * len(statuses), "deadline": 1.0,
                         "outcome": "response" if statuses[-1] else "error",
                         "kind": statuses[-1] or "UpstreamTimeoutError", "attempts": len(statuses),
                         "traced": len(statuses), "sent": len(statuses), "own": True})
    for n, status in enumerate(statuses):
        run["ledger"].append({"rid": rid, "client": "a", "method": "GET", "idem": False, "t": t + 0.05 * n,
                              "status": status, "t_answer": None if status is None else t + 0.05 * n + 0.001,
                              "inflight": 1, "action": "x"})
    run["meta"]["started"]["a"] += 1


def test_retries_through_an_outage_despite_earlier_successes() -> None:
    # 200 successes early earn 20 tokens' worth over the whole run, but the bucket is capped at 10: in an
    # outage 10 s later, with no success near, the 5th retry is past the bound of that window.
    run = clean()
    for n in range(200):
        _add_call(run, f"a-ok{n}", T0 + 1 + n * 0.001, [200])
    for n in range(4):
        _add_call(run, f"a-out{n}", T0 + 20 + n * 0.3, [503, 503])
    assert failing(run) == set()
    _add_call(run, "a-out4", T0 + 20 + 4 * 0.3, [503, 503])
    assert failing(run) == {"retry_budget"}


def test_bulkhead_exceeded() -> None:
    run = clean()
    run["ledger"][3]["inflight"] = 3
    assert failing(run) == {"bulkhead"}


def test_bulkhead_counts_a_stream_whose_call_ended_as_done() -> None:
    """Over HTTP/2 an abandoned stream's reset and a new stream on another connection reach the upstream in
    either order: a stream whose call had ended at the client no longer holds its slot."""
    run = clean()
    ledger = run["ledger"]
    for e in ledger:
        e["t_done"] = e["t"] + 0.05
    ledger[2]["t_done"] = T0 + 0.45  # a-1's stream, reset after its call ended at T0 + 0.4
    ledger[3]["t_done"] = T0 + 0.5   # a-2's first stream, still held
    ledger.append(dict(ledger[3], t=T0 + 0.42, inflight=3))  # a-2's second, counted with a-1's and a-2's first
    assert "bulkhead" not in failing(run)
    run["calls"][1]["t1"] = T0 + 0.5  # a-1's call still held its slot when the third came
    assert "bulkhead" in failing(run)


def test_call_past_its_deadline() -> None:
    run = clean()
    run["calls"][2]["t1"] = run["calls"][2]["t0"] + 0.5 + 0.26
    assert failing(run) == {"deadline"}


def test_leaked_socket() -> None:
    run = clean()
    run["resources"]["after"] = {**run["resources"]["after"], "fds": 11, "sockets": 3}
    assert failing(run) == {"resources_released"}


def test_leaked_thread() -> None:
    run = clean()
    run["resources"]["after"] = {**run["resources"]["after"], "tasks": 4}
    assert failing(run) == {"resources_released"}


def test_memory_growing() -> None:
    run = clean()
    # 100 kB a second is ~5.7 MiB a minute.
    run["rss"] = [(T0 + i, 50e6 + i * 1e5) for i in range(40)]
    assert failing(run) == {"memory_flat"}


def test_memory_growing_only_early_is_flat() -> None:
    run = clean()
    run["rss"] = [(T0 + i, 50e6 + min(i, 15) * 1e6) for i in range(40)]
    assert failing(run) == set()


def test_short_run_may_grow_by_the_noise_floor_only() -> None:
    run = clean()
    run["rss"] = [(T0 + i * 0.25, 50e6 + i * 0.02e6) for i in range(40)]  # 0.4 MB over the second half
    assert failing(run) == set()
    run["rss"] = [(T0 + i * 0.25, 50e6 + i * 0.075e6) for i in range(40)]  # 1.5 MB over it: a short warm-up
    assert failing(run) == set()
    run["rss"] = [(T0 + i * 0.25, 50e6 + i * 0.2e6) for i in range(40)]  # 4 MB over the second half
    assert failing(run) == {"memory_flat"}


# --- a short real soak ------------------------------------------------------------------------------------------

def test_short_soak_passes() -> None:
    done = subprocess.run([sys.executable, str(HERE / "soak.py"), "--duration", "10"], capture_output=True,
                          text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[-1] == "10 passed, 0 failed", done.stdout
    assert sum(1 for line in lines if line.startswith("invariant ")) == 10


@pytest.mark.parametrize("flag", ["--duration=1", "--duration=abc"])
def test_soak_refuses_a_bad_duration(flag: str) -> None:
    done = subprocess.run([sys.executable, str(HERE / "soak.py"), flag], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2


# --- HTTP/2: refused streams, and the protocol of the run -------------------------------------------------------

def test_a_refused_stream_is_an_attempt_but_not_the_posts_processing() -> None:
    run = clean()
    # a-1's keyless POST: refused unprocessed (REFUSED_STREAM or above a GOAWAY) first, then processed.
    run["ledger"].insert(2, {**run["ledger"][2], "t": T0 + 0.305, "refused": True, "action": "refused"})
    counted(run["calls"][1], 2)
    assert failing(run) == set()
    counted(run["calls"][1], 1)  # a refused stream reached the wire: the client must count it
    assert failing(run) == {"attempts_match_wire"}


def test_a_keyless_post_processed_twice_over_http2_names_the_fault() -> None:
    run = clean()
    run["ledger"][2].update(action="conn_error", violation="data_on_stream_0", conn=4, stream=3, nth=2)
    run["ledger"].append({**run["ledger"][2], "t": T0 + 0.35, "action": "ok", "conn": 5, "stream": 1, "nth": 1,
                          "violation": None})
    counted(run["calls"][1], 2)
    run["calls"][1]["status"] = "HUMUS_E_STREAM_REFUSED"
    results = {name: (ok, detail) for name, ok, detail in invariants.check_all(
        run["calls"], run["ledger"], run["header"], run["meta"], run["resources"], run["rss"])}
    assert not results["post_once"][0]
    assert "conn_error data_on_stream_0 on conn 4 stream 3 (pooled, #2) -> ok on conn 5 stream 1 (fresh)" \
        in results["post_once"][1]
    assert "HUMUS_E_STREAM_REFUSED" in results["post_once"][1]


def test_a_response_over_another_protocol_than_the_runs() -> None:
    run = clean()
    run["meta"]["version"] = "HTTP/2"
    for c in run["calls"]:
        c["version"] = "HTTP/2"
    assert failing(run) == set()
    run["calls"][2]["version"] = "HTTP/1.1"
    assert failing(run) == {"response_is_own"}
