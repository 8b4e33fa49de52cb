"""Timeout (httpx's name for the deadlines of docs/timeouts.md §8) and USE_CLIENT_DEFAULT, the "not given" of a
per-call argument."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from ._errors import ConfigError

__all__ = ["USE_CLIENT_DEFAULT", "Timeout", "UseClientDefault", "refuse_no_timeout"]

_DEADLINES_ARE_MANDATORY = (
    "deadlines are mandatory in humus_http (docs/timeouts.md §8): there is no call without a timeout, so "
    "timeout=None is refused; give a number of seconds (timeout=30.0) or humus_http.Timeout(total, "
    "attempt=..., connect=...)")


class UseClientDefault:
    """The type of ``USE_CLIENT_DEFAULT``: an argument left at it is not given (as httpx's)."""

    _instance: UseClientDefault | None = None

    def __new__(cls) -> UseClientDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "USE_CLIENT_DEFAULT"


#: The default of a per-call ``timeout=``, ``auth=`` or ``follow_redirects=`` (the client's value applies), and
#: of the client's own ``timeout=`` (the settings' default applies). Unlike None, which is refused for
#: ``timeout=`` and means "no authentication" for ``auth=``.
USE_CLIENT_DEFAULT: Final = UseClientDefault()


def refuse_no_timeout(where: str) -> ConfigError:
    """The ConfigError for ``timeout=None`` given to ``where``."""
    return ConfigError(f"{where}: {_DEADLINES_ARE_MANDATORY}", status="HUMUS_E_CONFIG", fields=("timeout",))


@dataclass(frozen=True, slots=True)
class Timeout:
    """The deadlines of a call (docs/timeouts.md §8), as httpx.Timeout groups them: ``total`` bounds the whole call
    (every attempt, wait and redirect: the setting ``timeout``), ``attempt`` one attempt (``attempt_timeout``),
    ``connect`` dialling and the TLS handshake (``connect_timeout``); seconds, a timedelta, or a string such as
    ``"250ms"`` on a client. None for ``attempt`` or ``connect`` leaves the setting's default; ``total`` is
    required: ``Timeout(None)`` is a ConfigError, since deadlines are mandatory.

    Accepted wherever a timeout is: ``Client(..., timeout=Timeout(5.0, connect=1.0))`` sets the three settings;
    a call's ``timeout=Timeout(2.0)`` bounds that call (only ``total``: the attempt and connect deadlines are the
    client's settings, so a per-call Timeout with either is a ConfigError naming it). Immutable.
    """

    total: float | int | timedelta | str
    attempt: float | int | timedelta | str | None = None
    connect: float | int | timedelta | str | None = None

    def __post_init__(self) -> None:
        if self.total is None:
            raise refuse_no_timeout("Timeout(None)")

    def settings(self) -> dict[str, object]:
        """The settings keys this Timeout gives: ``timeout`` and, when set, ``attempt_timeout`` and
        ``connect_timeout``."""
        out: dict[str, object] = {"timeout": self.total}
        if self.attempt is not None:
            out["attempt_timeout"] = self.attempt
        if self.connect is not None:
            out["connect_timeout"] = self.connect
        return out


def call_timeout_ms(timeout: float | Timeout | UseClientDefault | None) -> int:
    """A call's ``timeout=`` as the extension takes it: 0 for the client's, else milliseconds (a value the core
    refuses, -1, for one <= 0, so that its message names the field). ConfigError for None and for a Timeout
    with ``attempt`` or ``connect``."""
    if timeout is USE_CLIENT_DEFAULT:
        return 0
    if timeout is None:
        raise refuse_no_timeout("a call's timeout=None")
    if isinstance(timeout, Timeout):
        extra = [name for name in ("attempt", "connect") if getattr(timeout, name) is not None]
        if extra:
            raise ConfigError(f"a call's Timeout sets only its total: {' and '.join(extra)} are the client's "
                              f"settings (Client(..., timeout=Timeout(total, attempt=..., connect=...)) or "
                              f"attempt_timeout=/connect_timeout=)", status="HUMUS_E_CONFIG",
                              fields=tuple(f"timeout.{name}" for name in extra))
        total = timeout.total
        if not isinstance(total, (int, float)):
            if isinstance(total, timedelta):
                total = total.total_seconds()
            else:
                raise ConfigError(f"a call's timeout is seconds (a number or a timedelta), not {total!r}",
                                  status="HUMUS_E_CONFIG", fields=("timeout",))
        timeout = total
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be seconds (a number) or humus_http.Timeout, not {type(timeout).__name__}")
    if not timeout > 0:
        return -1
    # Rounded to the microsecond first: 2.007 s * 1000 is 2007.0000000000002 in binary floating point.
    return max(1, math.ceil(round(timeout * 1000, 3)))
