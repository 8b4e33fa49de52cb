"""How a settings value reaches the settings' JSON form (docs/settings.md §3), by the form of its key: what the
generated settings groups (_settings_gen.py) and the clients' keyword arguments share."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from datetime import timedelta
from typing import ClassVar

#: A duration: seconds (int or float), a ``timedelta``, or the settings' string form (``"250ms"``, ``"5s"``).
Duration = float | int | timedelta | str


def duration_json(value: object) -> object:
    """The JSON form of a duration; values of other types are passed on for the core to refuse by key."""
    if isinstance(value, bool):
        return value
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            return str(value)
        ms = value * 1000
        if ms == int(ms):
            return f"{int(ms)}ms"
        return f"{round(value * 1e9)}ns"
    if isinstance(value, str):
        return value
    return repr(value)


def json_value(value: object) -> object:
    """Values JSON cannot carry become their repr, which the core then refuses naming the key."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def path_json(value: object) -> object:
    """A file path as text (``os.PathLike`` included)."""
    return os.fspath(value) if isinstance(value, (str, os.PathLike)) else json_value(value)


#: The forms a generated group names for each of its fields.
FORMS: dict[str, Callable[[object], object]] = {"duration": duration_json, "path": path_json, "value": json_value}


class Group:
    """A settings group (``breaker``, ``tls``, ...) as a frozen value: the generated dataclasses derive from it,
    naming each field's form."""

    FORMS: ClassVar[dict[str, str]]

    def to_json(self) -> dict[str, object]:
        """The group's JSON form: the fields given (not None), durations as strings, paths as text."""
        out: dict[str, object] = {}
        for name, form in self.FORMS.items():
            value = getattr(self, name)
            if value is not None:
                out[name] = FORMS[form](value)
        return out
