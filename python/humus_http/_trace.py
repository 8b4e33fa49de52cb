"""The decision trace (docs/trace.md §20): one record per attempt of a call, as ``Response.trace`` and
``UpstreamError.trace`` give it. The core records it and the C ABI renders it as JSON; this parses it into
plain, immutable values, the same fields every language reads."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class BreakerPosition:
    """Where the circuit breaker stood: ``state`` (``"closed"``, ``"open"``, ``"half_open"``) and that state's
    ``generation`` (1 at creation, one more per transition)."""

    state: str
    generation: int


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One attempt of a call and what the call decided after it. Times are seconds (floats).

    ``decision`` is one of ``"done"``, ``"again"``, ``"throttled"``, ``"exhausted"``, ``"expired"``,
    ``"stopped"``, ``"rejected"``; ``wait`` the wait before the next attempt (``"again"``) and ``wait_source``
    what set it (``"backoff"``, ``"capped"``, ``"retry_after"``, ``"none"``). ``status`` is the HTTP status the
    attempt got, or None; ``error`` the status name in its place (``"HUMUS_E_TIMEOUT"``), or None.
    ``wire_sends`` is how many times its request reached the wire: 0 for an attempt no connection carried
    (a failed dial or TLS handshake, a breaker rejection). Plain values: safe to read from any thread."""

    attempt: int
    start: float
    method: str | None
    url: str | None
    redirect: int
    resend: bool
    hedge: bool
    wire_sends: int
    status: int | None
    error: str | None
    duration: float
    retry_verdict: str | None
    breaker_verdict: str | None
    retry_after: float | None
    retry_after_source: str | None
    breaker: BreakerPosition | None
    breaker_after: BreakerPosition | None
    budget_before: float
    budget_after: float
    decision: str
    wait: float
    wait_source: str
    deadline_left: float


def _position(value: dict[str, Any] | None) -> BreakerPosition | None:
    return None if value is None else BreakerPosition(value["state"], value["generation"])


def parse(text: str) -> list[AttemptRecord]:
    """The records of the C ABI's JSON trace, in order."""
    records = []
    for r in json.loads(text):
        r["breaker"] = _position(r["breaker"])
        r["breaker_after"] = _position(r["breaker_after"])
        records.append(AttemptRecord(**r))
    return records
