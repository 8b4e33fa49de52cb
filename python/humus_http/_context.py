"""The call context (docs/telemetry.md §12): what the request being served carries, passed on to the dependency."""
from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["CallContext", "ContextTypes", "context_parts", "deadline_from_request", "parse_deadline",
           "within_deadline_ms"]


@dataclass(frozen=True)
class CallContext:
    """The trace headers, request id and credentials of the request being served.

    ``traceparent``, ``tracestate`` and ``baggage`` travel on; ``request_id`` is sent as X-Request-ID (never
    invented); ``authorization`` is sent only when the client was built with ``forward_authorization`` and
    only if it is a Bearer token. Configured headers come first, these next, the call's own headers win.
    ``deadline`` (seconds on ``time.monotonic()``'s clock) bounds every call made with the context: its timeout
    becomes at most what is left, so a chain of services shares one budget (docs/timeouts.md §8.4;
    ``deadline_from_request`` reads it from an incoming request). Immutable, so one context may serve calls on
    any thread."""

    traceparent: str | None = None
    tracestate: str | None = None
    baggage: str | None = None
    request_id: str | None = None
    authorization: str | None = None
    deadline: float | None = None


# A CallContext, or the incoming request's headers as a mapping (names case-insensitive; other headers ignored).
ContextTypes = CallContext | Mapping[str, str]

_HEADER_NAMES = ("traceparent", "tracestate", "baggage", "x-request-id", "authorization")


def context_parts(context: ContextTypes | None) -> tuple[str | None, ...] | None:
    """The five parts in the order the native layer takes them, or None for no context."""
    if context is None:
        return None
    if isinstance(context, CallContext):
        return (context.traceparent, context.tracestate, context.baggage, context.request_id,
                context.authorization)
    if isinstance(context, Mapping):
        found: dict[str, str] = {}
        for name, value in context.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError("context: a mapping of header names to str values is needed")
            key = name.lower()
            if key in _HEADER_NAMES and key not in found:
                found[key] = value
        return tuple(found.get(name) for name in _HEADER_NAMES)
    raise TypeError(f"context: expected a CallContext or a mapping of headers, got {type(context).__name__}")


# A deadline header's value (docs/timeouts.md §8.4): whole milliseconds ("1500"), or gRPC's grpc-timeout form, at
# most 8 digits and a unit ("1500m", "2S").
_DEADLINE = re.compile(r"\s*(\d{1,8})([HMSmun]?)\s*")
_UNIT_SECONDS = {"": 1e-3, "H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def parse_deadline(value: str) -> float | None:
    """The time a deadline header's value leaves, in seconds, or None when it is not one (a malformed value from
    the network is ignored, not an error)."""
    match = _DEADLINE.fullmatch(value)
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _headers_of(request: Any) -> Mapping[str, str]:
    """The headers of a Starlette/FastAPI Request (its ``.headers``) or of a WSGI environ (its ``HTTP_*`` keys)."""
    headers = getattr(request, "headers", None)
    if isinstance(headers, Mapping):
        return headers
    if isinstance(request, Mapping):
        found: dict[str, str] = {}
        for key, value in request.items():
            if isinstance(key, str) and key.startswith("HTTP_") and isinstance(value, str):
                found[key[5:].replace("_", "-").lower()] = value
        return found
    raise TypeError(f"deadline_from_request: expected a Starlette/FastAPI Request or a WSGI environ, "
                    f"got {type(request).__name__}")


def deadline_from_request(request: Any, header: str = "X-Request-Timeout") -> CallContext:
    """The call context of an incoming request: its trace headers, X-Request-ID and Authorization, and ``deadline`` from ``header`` (``deadline_header`` of the service that called, in either
    of its formats), counted from now. ``request`` is a Starlette/FastAPI Request or a WSGI environ. A header
    absent or malformed leaves ``deadline`` None. Pass the result as ``context=`` to every call the request
    makes; any thread."""
    headers = _headers_of(request)
    lowered = {name.lower(): value for name, value in headers.items()}
    get = lowered.get
    context = CallContext(traceparent=get("traceparent"), tracestate=get("tracestate"), baggage=get("baggage"),
                          request_id=get("x-request-id"), authorization=get("authorization"))
    value = lowered.get(header.lower())
    left = parse_deadline(value) if isinstance(value, str) else None
    return context if left is None else replace(context, deadline=time.monotonic() + left)


def within_deadline_ms(timeout_ms: int, context: object) -> int:
    """A call's timeout in milliseconds (0: the client's) bounded by ``context``'s deadline: what is left, rounded
    down, at least 1 (a deadline already passed ends the call at once with a timeout) and at most the hour a
    timeout may be."""
    if not isinstance(context, CallContext) or context.deadline is None:
        return timeout_ms
    left_ms = min(max(int((context.deadline - time.monotonic()) * 1000), 1), 3_600_000)
    return left_ms if timeout_ms <= 0 else min(timeout_ms, left_ms)
