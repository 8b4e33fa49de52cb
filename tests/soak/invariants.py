"""The soak's invariants, as pure functions over what the run recorded (see README.md for each one's why).

Inputs, all plain data so that the self-test can doctor them:

- ``calls``: one dict per outcome the soak saw: ``rid``, ``client``, ``method``, ``idem`` (an
  Idempotency-Key was sent), ``t0``/``t1`` (time.monotonic() around the call), ``deadline`` (seconds),
  ``outcome`` (``"response"``, ``"error"`` for an UpstreamError, ``"unexpected"`` for anything else), ``kind``
  (the status code or the exception's class name), ``attempts`` (what the client reported) and, for a
  response, ``own`` (it echoed the call's id); for an UpstreamError, ``status`` (``HUMUS_E_...``); ``cut``
  (the soak's own cancel — a CancelToken, or the AsyncClient's aclose() — fired before the call returned). A
  call the soak itself cancelled (an asyncio task cancelled mid-call) has the outcome ``"cancelled"`` and
  ``attempts`` None: no count comes back from it, so only the wire's count is checked for it.
- ``ledger``: the upstream's entries (upstream.py): ``rid``, ``client``, ``method``, ``idem``, ``t``,
  ``status``, ``t_answer``, ``inflight``; and its header: ``phases`` ([name, start, end]) and ``refused``
  ([closed, reopened]: when the listener really went away and came back, which lags the schedule).
- ``meta``: ``clients`` (name -> ``max_attempts``, ``bulkhead``, ``tokens``, ``ratio``), ``started``
  (name -> calls begun), ``unfinished`` (ids of calls that never came back).
- ``resources``: ``baseline`` and ``after``, each ``fds``, ``sockets``, ``threads``, ``tasks``.
- ``rss``: (time, bytes) samples over the run.
"""
from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

DEADLINE_SLACK_S = 0.25
# Memory: the least-squares slope of RSS over the second half of the run, in MiB per minute; the second half
# of a short run (under RSS_SHORT_HALF_S) may also grow by the noise floor, whatever slope that makes: over a
# few seconds the allocator's warm-up and the last phases' first calls cannot be told from a leak (a 10 s
# run's second half grew by 0.9-1.3 MiB on a 2-core machine, the same on two builds a session apart).
RSS_SLOPE_MAX_MIB_PER_MIN = 4.0
RSS_NOISE_MIB = 2.0
RSS_SHORT_HALF_S = 15.0
UNITS = 1_000_000  # the budget's millionths of a token (src/retry/budget.h)

Result = tuple[str, bool, str]


def _examples(items: Iterable[Any], n: int = 3) -> str:
    items = list(items)
    shown = ", ".join(str(i) for i in items[:n])
    return f"{shown}{', ...' if len(items) > n else ''}"


def wire_counts(ledger: Sequence[Mapping[str, Any]]) -> Counter[str]:
    return Counter(e["rid"] for e in ledger)


# A call that ended cancelled was cut where the cancel found it, which may be after its last attempt's request was
# handed to the connection (its trace counts it sent) and before a byte of it left: on no wire, though sent.
CANCELLED = "HUMUS_E_CANCELLED"


def last_attempt_may_be_unsent(call: Mapping[str, Any]) -> bool:
    """Whether the call's last request counted sent may not have left, by how the call ended: cancelled
    (HUMUS_E_CANCELLED), or a response of an earlier attempt that a cancel returned, cutting the retry after it
    (a CancelToken "returns the response it had buffered before a retry", docs/retries.md §6.6)."""
    if call.get("status") == CANCELLED:
        return True
    return call["outcome"] == "response" and bool(call.get("cut")) and (call["attempts"] or 0) >= 2


def check_one_outcome(calls: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]],
                      meta: Mapping[str, Any]) -> Result:
    """Every call began ends exactly once, with a response or one UpstreamError; the wire saw no other id."""
    per_rid = Counter(c["rid"] for c in calls)
    twice = [rid for rid, n in per_rid.items() if n > 1]
    per_client = Counter(c["client"] for c in calls)
    short = {name: (n, per_client.get(name, 0)) for name, n in meta["started"].items()
             if per_client.get(name, 0) != n}
    unexpected = [f"{c['rid']}:{c['kind']}" for c in calls if c["outcome"] == "unexpected"]
    strangers = sorted({e["rid"] for e in ledger} - set(per_rid))
    problems = []
    if twice:
        problems.append(f"{len(twice)} call(s) with two outcomes ({_examples(twice)})")
    if short:
        problems.append("started/outcomes differ " + _examples(f"{k} {a}/{b}" for k, (a, b) in short.items()))
    if meta.get("unfinished"):
        problems.append(f"{len(meta['unfinished'])} call(s) never returned ({_examples(meta['unfinished'])})")
    if unexpected:
        problems.append(f"{len(unexpected)} exception(s) outside UpstreamError ({_examples(unexpected)})")
    if strangers:
        problems.append(f"{len(strangers)} wire request(s) of no call ({_examples(strangers)})")
    kinds = Counter(c["outcome"] for c in calls)
    detail = (f"{len(calls)} calls: {kinds.get('response', 0)} responses, {kinds.get('error', 0)} errors, "
              f"{kinds.get('cancelled', 0)} cancelled by the soak")
    return ("one_outcome", not problems, detail if not problems else "; ".join(problems))


def check_response_is_own(calls: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None) -> Result:
    """Every response a call returned is the upstream's answer to that call (it echoes the call id): never a
    stale answer left on a reused connection, nor another call's (docs/transport.md §10.7); and it came over
    the run's protocol (meta ``version``, when given: ``HTTP/2`` in the h2 mode, so that ALPN really chose it)."""
    responses = [c for c in calls if c["outcome"] == "response"]
    foreign = [c["rid"] for c in responses if not c["own"]]
    if foreign:
        return ("response_is_own", False, f"{len(foreign)} response(s) not the call's own: {_examples(foreign)}")
    version = (meta or {}).get("version")
    other = [f"{c['rid']} {c.get('version')}" for c in responses if version and c.get("version") != version]
    if other:
        return ("response_is_own", False, f"{len(other)} response(s) not over {version}: {_examples(other)}")
    return ("response_is_own", True, f"{len(responses)} responses{' over ' + version if version else ''}, "
            "each echoing its call's id")


def check_attempts_match_wire(calls: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]],
                              header: Mapping[str, Any]) -> Result:
    """Each call's decision trace (docs/trace.md) holds the attempts the client reported (``traced``), and the
    requests it says reached the wire (``sent``) are the requests the upstream saw for that id, and no more
    than the attempts: an attempt that sent
    nothing (a refused or timed-out dial, a TLS handshake past connect_timeout, a breaker rejection) is counted
    and on no wire, and says so; no attempt with an HTTP status says it sent nothing. A call a cancel cut
    (last_attempt_may_be_unsent) may have lost its last request between the connection and the wire: one less."""
    del header  # the trace says which attempts dialled a closed port: no window of the outage is exempt
    wire = wire_counts(ledger)
    bad = []
    exact = cut = lost = cancelled = unsent = 0
    for c in calls:
        seen = wire.get(c["rid"], 0)
        if c["attempts"] is None:
            cancelled += 1
            continue
        sent = c.get("sent", 0)
        unsent += c["attempts"] - sent
        if c.get("traced", 0) != c["attempts"]:
            bad.append(f"{c['rid']} reported {c['attempts']} attempts, its trace {c.get('traced', 0)}")
        elif sent > c["attempts"]:
            bad.append(f"{c['rid']} sent {sent} in {c['attempts']} attempts")
        elif c.get("answered_unsent"):
            bad.append(f"{c['rid']} has {c['answered_unsent']} answered attempt(s) the trace says were not sent")
        elif last_attempt_may_be_unsent(c):
            cut += 1
            lost += seen == sent - 1
            if not sent - 1 <= seen <= sent:
                bad.append(f"{c['rid']} sent {sent} wire {seen} ({c.get('status') or 'cut'})")
        else:
            exact += 1
            if seen != sent:
                bad.append(f"{c['rid']} reported {c['attempts']} sent {sent} wire {seen} ({c.get('status') or c['kind']})")
    detail = (f"{exact} calls exact, {cut} cut by a cancel (of which {lost} lost their last request), "
              f"{cancelled} cancelled unchecked, {sum(wire.values())} requests; {unsent} attempts sent nothing")
    if bad:
        return ("attempts_match_wire", False, f"{len(bad)} mismatch(es): {_examples(bad)}")
    return ("attempts_match_wire", True, detail)


def _how(e: Mapping[str, Any]) -> str:
    """One wire request, for a message: what the upstream did, on which connection, fresh or pooled."""
    where = f"conn {e.get('conn')}"
    if "nth" in e:
        where += f" stream {e.get('stream')} ({'fresh' if e['nth'] == 1 else 'pooled, #' + str(e['nth'])})"
    extra = f" {e['violation']}" if e.get("violation") else ""
    return f"{e.get('action')}{extra} on {where}"


def check_post_once(ledger: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]] = ()) -> Result:
    """A POST without an Idempotency-Key never reaches the wire twice (docs/retries.md §4) — but for streams
    the HTTP/2 upstream refused unprocessed (``refused``: RST_STREAM REFUSED_STREAM, or above a GOAWAY's
    last_stream_id): RFC 9113 §8.7 lets any request go again then. Refused or not, each is an attempt."""
    keyless = [e for e in ledger if e["method"] == "POST" and not e["idem"]]
    posts = Counter(e["rid"] for e in keyless if not e.get("refused"))
    twice = {rid: n for rid, n in posts.items() if n > 1}
    refused = sum(1 for e in keyless if e.get("refused"))
    if twice:
        ended = {c["rid"]: c.get("status") or c["kind"] for c in calls}
        shown = [f"{rid} x{n} [{' -> '.join(_how(e) for e in keyless if e['rid'] == rid)}; the call: "
                 f"{ended.get(rid)}]" for rid, n in list(twice.items())[:3]]
        return ("post_once", False, f"{len(twice)} POST(s) processed twice: {'; '.join(shown)}"
                f"{' ...' if len(twice) > 3 else ''}")
    return ("post_once", True, f"{len(posts)} keyless POSTs on the wire, each once"
            + (f" ({refused} refused unprocessed streams besides)" if refused else ""))


def check_max_attempts(calls: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]],
                       meta: Mapping[str, Any]) -> Result:
    """No call makes more than max_attempts attempts, by its own count or the wire's (docs/retries.md §6.1)."""
    wire = wire_counts(ledger)
    bad = []
    most = 0
    for c in calls:
        cap = meta["clients"][c["client"]]["max_attempts"]
        n = max(c["attempts"] or 0, wire.get(c["rid"], 0))
        most = max(most, n)
        if n > cap:
            bad.append(f"{c['rid']} {n}>{cap}")
    if bad:
        return ("max_attempts", False, f"{len(bad)} call(s) over: {_examples(bad)}")
    return ("max_attempts", True, f"most attempts of a call {most}")


def budget_allows(retries: int, tokens: float, ratio: float, successes: int) -> bool:
    """Whether a token bucket can have allowed `retries` retries after `successes` successes:
    retries < tokens/2 + ratio x successes, compared exactly in millionths of a token.

    Why (docs/retries.md §6.4, src/retry/budget.cc): the bucket starts at `tokens`; each attempt classified
    `retry` takes one token (never below zero); a retry follows only if the balance right after that charge
    is MORE than half; each breaker `success` adds `ratio`, capped at full. A charge that allows a retry
    leaves more than half, so it took a whole token. After the k-th such charge the balance is at most
    tokens - k + ratio x (successes so far), and more than tokens/2: k < tokens/2 + ratio x successes.
    """
    return 2 * retries * UNITS < round(tokens * UNITS) + 2 * round(ratio * UNITS) * successes


def budget_bound(tokens: float, ratio: float, successes: int) -> float:
    """The bound of budget_allows(), in tokens, for messages."""
    return tokens / 2 + ratio * successes


def _wire_retries(mine: Sequence[Mapping[str, Any]]) -> list[float]:
    """When each retry reached the wire: a call's requests after its first one."""
    seen: set[str] = set()
    times = []
    for e in sorted(mine, key=lambda e: e["t"]):
        if e["rid"] in seen:
            times.append(e["t"])
        seen.add(e["rid"])
    return times


def check_retry_budget(calls: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]],
                       meta: Mapping[str, Any]) -> Result:
    """Per client, the token bucket's bound (budget_allows) three ways:

    - over the whole run: the retries the calls reported against every success;
    - at every retry the wire saw: the retries arrived by then against the successes answered by then;
    - over every window of retries on the wire: the balance is never over `tokens` (the cap), so the retries
      charged within any stretch of time are bound by the successes of that stretch alone. Retries arriving in
      [t_i, t_j] were charged in [t_i - charge_lag, t_j] (charge_lag: the longest backoff or Retry-After wait,
      plus connecting); the client counted a success at most count_lag after the upstream answered it (the
      call's deadline). This is what catches retries that go on during an outage.

    A success is an attempt the upstream answered with a status below 500 (the default classifier's breaker
    `success`, docs/retries.md §5.3), counted when its status line was written: the client can only count it
    later, so the bound with the upstream's count is never tighter than the client's."""
    problems = []
    details = []
    for name, conf in sorted(meta["clients"].items()):
        tokens, ratio = conf["tokens"], conf["ratio"]
        reach = conf.get("charge_lag", 0.75) + conf.get("count_lag", 1.25)
        mine = [e for e in ledger if e["client"] == name]
        answers = sorted(e["t_answer"] for e in mine if e["status"] is not None and e["status"] < 500)
        wire = wire_counts(mine)
        retries_total = sum(max(0, (wire.get(c["rid"], 0) if c["attempts"] is None else c["attempts"]) - 1)
                            for c in calls if c["client"] == name)
        bound_total = budget_bound(tokens, ratio, len(answers))
        if not budget_allows(retries_total, tokens, ratio, len(answers)):
            problems.append(f"{name}: {retries_total} retries, bound < {bound_total:g}")
        retry_times = _wire_retries(mine)
        worst_prefix = worst_window = -math.inf
        failed = False
        for j, t in enumerate(retry_times):
            by_then = bisect.bisect_right(answers, t)
            worst_prefix = max(worst_prefix, j + 1 - budget_bound(tokens, ratio, by_then))
            if not budget_allows(j + 1, tokens, ratio, by_then):
                problems.append(f"{name}: {j + 1} retries on the wire by t={t:.3f}, {by_then} successes, "
                                f"bound < {budget_bound(tokens, ratio, by_then):g}")
                failed = True
                break
            # Windows ending at retry j, growing backwards; once even all retries so far fit, wider ones do.
            for i in range(j, -1, -1):
                in_window = by_then - bisect.bisect_left(answers, retry_times[i] - reach)
                k = j - i + 1
                worst_window = max(worst_window, k - budget_bound(tokens, ratio, in_window))
                if not budget_allows(k, tokens, ratio, in_window):
                    problems.append(f"{name}: {k} retries on the wire in [{retry_times[i]:.3f}, {t:.3f}], "
                                    f"{in_window} successes within {reach:g}s before, "
                                    f"bound < {budget_bound(tokens, ratio, in_window):g}")
                    failed = True
                    break
                if budget_allows(j + 1, tokens, ratio, in_window):
                    break
            if failed:
                break
        if retry_times:
            details.append(f"{name} {retries_total} retries / {len(answers)} successes (bound "
                           f"{bound_total:g}; closest margin {-worst_prefix:g} at a retry, "
                           f"{-worst_window:g} in a window)")
        else:
            details.append(f"{name} {retries_total} retries / {len(answers)} successes")
    if problems:
        return ("retry_budget", False, "; ".join(problems))
    return ("retry_budget", True, "; ".join(details))


# How much earlier than the soak's record of a call's end the client may have freed its bulkhead slot: the
# outcome crosses from the event-loop thread to the soak's thread or task first (about 1 ms in the ledgers of an
# HTTP/2 run, where a new stream on another connection reached the upstream before the reset).
CALL_END_LAG = 0.05


def check_bulkhead(ledger: Sequence[Mapping[str, Any]], meta: Mapping[str, Any],
                   calls: Sequence[Mapping[str, Any]] = ()) -> Result:
    """The requests of one client in flight at the upstream never exceed its bulkhead.max_concurrent
    (docs/bulkhead.md §11: a call holds its slot through every attempt, so one request at a time per slot).

    A request is in flight from its arrival until the upstream is done with it, or until its call ended at the
    client if that came first: the client resets an abandoned HTTP/2 stream before it ends the call and frees
    the slot (docs/transport.md §10.7), but the reset on one connection and a new stream on another may reach
    the upstream in either order. An arrival the upstream counted over the cap is counted again that way,
    where the ledger says when each request was done (``t_done``). The call's end is its ``t1``, on the same
    monotonic clock, less CALL_END_LAG: the client frees the slot (and has sent the reset) before its outcome
    reaches the soak's task, which then reads the clock."""
    ended = {c["rid"]: c.get("t1") for c in calls}
    by_client: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in ledger:
        by_client[e["client"]].append(e)

    def held_at(client: str, t: float) -> int:
        def held(o: Mapping[str, Any]) -> bool:
            call_end = ended.get(o["rid"])
            return (o["t"] <= t and (o.get("t_done") is None or o["t_done"] > t)
                    and (call_end is None or call_end - CALL_END_LAG > t))
        return sum(1 for o in by_client[client] if held(o))

    most: dict[str, int] = defaultdict(int)
    excused = 0
    for e in ledger:
        n = e["inflight"]
        cap = meta["clients"][e["client"]]["bulkhead"]
        if n > cap and "t_done" in e:
            n = held_at(e["client"], e["t"])
            excused += n <= cap
        most[e["client"]] = max(most[e["client"]], n)
    over = [f"{n} {most[n]}>{c['bulkhead']}" for n, c in sorted(meta["clients"].items()) if most[n] > c["bulkhead"]]
    detail = ", ".join(f"{n} max {most[n]}/{c['bulkhead']}" for n, c in sorted(meta["clients"].items()))
    if excused:
        detail += f" ({excused} arrival(s) counted over the cap only with streams whose calls had ended)"
    return ("bulkhead", not over, detail if not over else "over the cap: " + ", ".join(over))


def check_deadline(calls: Sequence[Mapping[str, Any]]) -> Result:
    """No call outlives its deadline (the client's timeout, or the call's shorter one) by more than 250 ms."""
    late = []
    worst = -math.inf
    for c in calls:
        over = (c["t1"] - c["t0"]) - c["deadline"]
        worst = max(worst, over)
        if over > DEADLINE_SLACK_S:
            late.append(f"{c['rid']} {c['t1'] - c['t0']:.3f}s/{c['deadline']:g}s")
    if late:
        return ("deadline", False, f"{len(late)} call(s) past deadline+{DEADLINE_SLACK_S * 1000:.0f}ms: "
                f"{_examples(late)}")
    return ("deadline", True, f"worst {worst * 1000:+.0f} ms against the deadline" if calls else "no calls")


def check_resources(resources: Mapping[str, Mapping[str, int]]) -> Result:
    """After every client closed, fds, sockets and threads are back to the baseline taken before the run."""
    base, after = resources["baseline"], resources["after"]
    grown = [f"{k} {base[k]}->{after[k]}" for k in sorted(base) if after.get(k, 0) > base[k]]
    detail = ", ".join(f"{k} {base[k]}->{after.get(k)}" for k in sorted(base))
    if "peak" in resources:
        detail += " (peak " + ", ".join(f"{k} {v}" for k, v in sorted(resources["peak"].items())) + ")"
    return ("resources_released", not grown, detail if not grown else "leaked: " + ", ".join(grown))


def slope(samples: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of y over t."""
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    my = sum(y for _, y in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return sum((t - mt) * (y - my) for t, y in samples) / var if var else 0.0


def check_memory(rss: Sequence[tuple[float, float]]) -> Result:
    """RSS is flat: the least-squares slope over the second half of the run stays under 4 MiB/min, or, for a
    run whose second half is under 15 s, under 2 MiB over that half."""
    if len(rss) < 8:
        return ("memory_flat", False, f"only {len(rss)} RSS samples")
    half = [s for s in rss if s[0] >= (rss[0][0] + rss[-1][0]) / 2]
    per_min = slope(half) * 60 / (1 << 20)
    span_min = (half[-1][0] - half[0][0]) / 60
    short = span_min * 60 < RSS_SHORT_HALF_S
    noise = (RSS_NOISE_MIB / span_min if span_min > 0 else math.inf) if short else 0.0
    bound = max(RSS_SLOPE_MAX_MIB_PER_MIN, noise)
    detail = (f"second-half slope {per_min:+.2f} MiB/min (bound {bound:.3g}), "
              f"RSS {rss[0][1] / (1 << 20):.1f}->{max(y for _, y in rss) / (1 << 20):.1f}->"
              f"{rss[-1][1] / (1 << 20):.1f} MiB over {len(rss)} samples")
    return ("memory_flat", per_min <= bound, detail)


def check_all(calls: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]], header: Mapping[str, Any],
              meta: Mapping[str, Any], resources: Mapping[str, Mapping[str, int]],
              rss: Sequence[tuple[float, float]]) -> list[Result]:
    return [
        check_one_outcome(calls, ledger, meta),
        check_response_is_own(calls, meta),
        check_attempts_match_wire(calls, ledger, header),
        check_post_once(ledger, calls),
        check_max_attempts(calls, ledger, meta),
        check_retry_budget(calls, ledger, meta),
        check_bulkhead(ledger, meta, calls),
        check_deadline(calls),
        check_resources(resources),
        check_memory(rss),
    ]


def report(results: Sequence[Result]) -> tuple[list[str], int]:
    """The lines to print and the number of failures."""
    lines = [f"invariant {name}: {'ok' if ok else 'FAIL'} {detail}" for name, ok, detail in results]
    failed = sum(1 for _, ok, _ in results if not ok)
    lines.append(f"{len(results) - failed} passed, {failed} failed")
    return lines, failed
