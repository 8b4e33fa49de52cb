"""The call context (docs/telemetry.md §12): what the request being served carries, passed on to the dependency."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CallContext", "ContextTypes", "context_parts"]


@dataclass(frozen=True)
class CallContext:
    """The trace headers, request id and credentials of the request being served.

    ``traceparent``, ``tracestate`` and ``baggage`` travel on; ``request_id`` is sent as X-Request-ID (never
    invented); ``authorization`` is sent only when the client was built with ``forward_authorization`` and
    only if it is a Bearer token. Configured headers come first, these next, the call's own headers win.
    Immutable, so one context may serve calls on any thread."""

    traceparent: str | None = None
    tracestate: str | None = None
    baggage: str | None = None
    request_id: str | None = None
    authorization: str | None = None


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
