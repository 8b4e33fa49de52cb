"""Cancel tokens: the caller gave up (docs/README.md §1), for blocking and asynchronous calls alike."""
from __future__ import annotations

from . import _native

__all__ = ["CancelToken"]


class CancelToken:
    """Ends calls early: pass it as ``cancel=`` to any call of a Client or an AsyncClient, then ``cancel()``.

    Every call made with the token ends as soon as it can, now and later: a call in flight stops waiting (its
    attempt, a backoff, a bulkhead slot) and raises CancelledCallError, or returns the response it had
    buffered before a retry; a call made after ``cancel()`` ends at once. A cancelled call is ignored by the
    breaker and the retry budget (docs/retries.md §5.1). A token cancels for good: make one per operation you may abandon.

    Thread-safe: cancel from any thread, also from inside a callback (a classifier, a mock transport handler).
    """

    __slots__ = ("_native",)

    def __init__(self) -> None:
        self._native = _native.Cancel()

    def cancel(self) -> None:
        """Cancels every call made with this token, now and later. Idempotent; never blocks on the calls."""
        self._native.trigger()

    @property
    def cancelled(self) -> bool:
        """True once cancel() ran."""
        return self._native.triggered

    @property
    def native(self) -> _native.Cancel:
        """The extension's handle (for humus_http's clients)."""
        return self._native

    def __repr__(self) -> str:
        return f"<humus_http.CancelToken{' cancelled' if self.cancelled else ''}>"


def native_cancel(cancel: CancelToken | None) -> _native.Cancel | None:
    """A call's ``cancel=`` as the extension takes it. TypeError for anything but a CancelToken or None."""
    if cancel is None:
        return None
    if not isinstance(cancel, CancelToken):
        raise TypeError(f"cancel= takes a humus_http.CancelToken (or None), not {type(cancel).__name__}")
    return cancel._native
