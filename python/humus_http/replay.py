"""Recording traffic for ``humus-http replay`` (docs/replay.md §21.6): a span sink that writes one traffic line
(§21.1) per attempt of live calls, so what a dependency did today can be replayed under other settings::

    from humus_http.replay import TrafficRecorder

    with TrafficRecorder("payments.jsonl") as recorder:
        runtime = humus_http.Runtime(span_sink=recorder)
        client = humus_http.Client("https://payments:8443", runtime=runtime)
        ...                                     # the service runs; every attempt becomes a line
        client.close()

    # then: humus-http replay --settings tuned.json payments.jsonl

Each attempt's span (docs/telemetry.md §13.1) gives a line: ``time`` (its start, in seconds from the recorder's
origin), ``method``, ``status`` or ``error`` (the span's ``error.type`` when no answer came: ``"timeout"``,
``"connect"``, ``"rejected"``, ...), ``latency`` (the span's length) and ``resend`` (its
``http.request.resend_count``: a retry or a redirect hop, which replays as part of its call, not as a call).
Spans carry no response headers, so ``retry_after`` is not recorded. An attempt that ended for a reason of the
caller's own (cancelled, a failing callback) says nothing of the dependency and writes no line.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from . import _native
from ._telemetry import Span

__all__ = ["TrafficRecorder"]

# The failures of the dependency a line may name: the transport and TLS statuses (300-499, docs/README.md §1),
# spelled as the spans spell error.type (lowercase, without the prefix), plus the two the replay reads itself.
_DEPENDENCY_ERRORS = frozenset(
    name[len("HUMUS_E_"):].lower()
    for name in (_native.status_name(s) for s in range(300, 500))
    if name.startswith("HUMUS_E_") and name != "HUMUS_E_UNKNOWN"
) | {"timeout", "rejected"}


class TrafficRecorder:
    """A span sink (``Runtime(span_sink=recorder)`` or ``runtime.set_span_sink(recorder)``) writing traffic lines.

    ``target`` is a path (opened for writing, truncated, closed by ``close()``) or a text file object (written,
    flushed, never closed). ``origin_unix_ns`` is the instant of ``time`` 0, in nanoseconds since the Unix epoch
    on the runtime's clock's calendar; by default the moment the recorder was made (right for a real clock; a
    virtual clock keeps a calendar of its own: pass the first span's start, or any instant before it). A span
    that started before the origin is written at time 0. Thread-safe: spans arrive on whichever thread ends an
    attempt; each line is written whole and flushed. ``lines`` counts the lines written.
    """

    def __init__(self, target: str | Path | IO[str], *, origin_unix_ns: int | None = None) -> None:
        self._lock = threading.Lock()
        self._owned = isinstance(target, (str, Path))
        self._file: IO[str] = open(target, "w", encoding="utf-8") if isinstance(target, (str, Path)) else target
        self._origin = time.time_ns() if origin_unix_ns is None else origin_unix_ns
        self._closed = False
        self.lines = 0

    def __call__(self, span: Span) -> None:
        line = self.line_for(span)
        if line is None:
            return
        text = json.dumps(line) + "\n"
        with self._lock:
            if self._closed:
                return
            self._file.write(text)
            self._file.flush()
            self.lines += 1

    def line_for(self, span: Span) -> dict[str, Any] | None:
        """The traffic line of one span, or None when the span says nothing of the dependency."""
        attributes = span.attributes
        line: dict[str, Any] = {
            "time": round(max(0, span.start_time_unix_nano - self._origin) / 1e9, 3),
            "method": str(attributes.get("http.request.method", span.name)),
        }
        status = attributes.get("http.response.status_code")
        if isinstance(status, int):
            line["status"] = status
        else:
            error = str(attributes.get("error.type", ""))
            if error not in _DEPENDENCY_ERRORS:
                return None
            line["error"] = error
        line["latency"] = round(max(0, span.end_time_unix_nano - span.start_time_unix_nano) / 1e9, 3)
        resend = attributes.get("http.request.resend_count", 0)
        if isinstance(resend, int) and resend > 0:
            line["resend"] = resend
        return line

    def close(self) -> None:
        """Stops writing; closes the file the recorder opened. Spans arriving later are dropped."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owned:
                self._file.close()
            else:
                self._file.flush()

    def __enter__(self) -> TrafficRecorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

