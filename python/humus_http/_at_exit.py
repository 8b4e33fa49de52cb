"""Native objects still open at interpreter exit are closed before Python finalizes, while the event-loop
thread can still take the GIL to deliver what is in flight."""
from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class CloseAtExit(Generic[T]):
    """A weak set of open objects, each closed by ``close`` at exit unless discarded first. Thread-safe."""

    def __init__(self, close: Callable[[T], None]) -> None:
        self._open: weakref.WeakSet[T] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._close = close
        atexit.register(self.close_all)

    def add(self, obj: T) -> None:
        with self._lock:
            self._open.add(obj)

    def discard(self, obj: T) -> None:
        with self._lock:
            self._open.discard(obj)

    def close_all(self) -> None:
        with self._lock:
            still_open = list(self._open)
        for obj in still_open:
            self._close(obj)
