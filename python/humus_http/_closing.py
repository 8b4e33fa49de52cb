"""The context-manager protocol of everything the package lets a caller close."""
from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """``with obj:`` closes ``obj`` on the way out, whatever happened inside. Subclasses define ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
