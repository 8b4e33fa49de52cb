"""The upstreams registry (docs/upstreams.md §15): one client per named dependency, built from one JSON document, and the
readiness report of their circuit breakers."""
from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from . import _native
from ._at_exit import CloseAtExit
from ._client import Client, _BaseClient
from ._urls import origin_of
from ._closing import Closing
from ._errors import ConfigError, UnknownUpstreamError, from_native
from ._settings import Runtime, default_runtime

__all__ = ["Upstreams", "base_url_variable"]

if TYPE_CHECKING:
    from ._async import AsyncClient

_C = TypeVar("_C", "Client", "AsyncClient")

# Closed at exit before Python finalizes, as clients are (see _at_exit.py).
_open_registries: CloseAtExit[Upstreams] = CloseAtExit(lambda registry: registry.close())


def base_url_variable(name: str) -> str:
    """The environment variable that overrides upstream ``name``'s base_url (docs/upstreams.md §15.1):
    ``HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL``, the name in uppercase with ``-`` written ``_``."""
    return "HUMUS_HTTP_UPSTREAMS__" + name.upper().replace("-", "_") + "__BASE_URL"


def _base_urls(text: str, names: tuple[str, ...]) -> dict[str, str]:
    """Each upstream's base_url as the core built it: the environment variable when set and not empty, else the
    document's. Used only to join relative URLs onto the base_url's path (the core keeps no path to ask for)."""
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    upstreams = document.get("upstreams") if isinstance(document, dict) else None
    found: dict[str, str] = {}
    for name in names:
        from_env = os.environ.get(base_url_variable(name))
        if from_env:
            found[name] = from_env
            continue
        entry = upstreams.get(name) if isinstance(upstreams, dict) else None
        from_file = entry.get("base_url") if isinstance(entry, dict) else None
        if isinstance(from_file, str):
            found[name] = from_file
    return found


def _max_bodies(text: str) -> dict[str, int]:
    """Each upstream's max_response_body when its document entry sets one (the core checked it), for
    AsyncClient.stream()'s aread() (the core keeps no setting to ask for)."""
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    upstreams = document.get("upstreams") if isinstance(document, dict) else None
    if not isinstance(upstreams, dict):
        return {}
    return {name: entry["max_response_body"] for name, entry in upstreams.items()
            if isinstance(entry, dict) and isinstance(entry.get("max_response_body"), int)}


class Upstreams(Closing):
    """A registry of clients by name (docs/upstreams.md §15.1), built from one JSON document::

        {"upstreams": {"billing": {"base_url": "https://billing:8443", "timeout": "5s", ...}, ...}}

    Each upstream's keys are the settings of docs/settings.md §3 in their JSON form (as ``Client.from_settings`` takes them:
    durations as strings such as ``"250ms"``). Build it with ``from_file()`` or ``from_json()``; every problem of
    the document is reported at once as a ConfigError whose ``fields`` are the paths
    (``"upstreams.billing.timout"`` for a misspelt key, the message naming the nearest valid key).

    ``HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL`` in the environment (NAME in uppercase, ``-`` written ``_``), read
    once when the registry is built, wins over the document's ``base_url``: where the service runs decides its
    dependencies' addresses. When both are given and differ, the runtime's log sink receives one LogRecord
    (event ``"humus.upstreams.base_url_override"``). For every other key the document wins.

    ``client(name)`` and ``async_client(name)`` hand out clients over the registry's own native clients: every
    client of one name shares its connections, circuit breaker, retry budget and bulkhead. An unknown name raises
    UnknownUpstreamError (a KeyError) listing the configured names. ``readiness()`` reports every breaker.

    The registry is a context manager: ``close()`` (or leaving the ``with`` block) closes every client it handed
    out, then frees the registry once the calls still in flight have ended. A registry dropped without close()
    leaves its clients open: each keeps the native registry (which owns the native clients) alive until it is
    closed. Thread-safe.
    """

    def __init__(self, native: _native.Upstreams, runtime: Runtime, base_urls: Mapping[str, str],
                 max_bodies: Mapping[str, int] | None = None) -> None:
        """Use ``from_file()`` or ``from_json()``."""
        self._native = native
        self._max_bodies: Mapping[str, int] = max_bodies or {}
        self._runtime = runtime
        self._names: tuple[str, ...] = native.names()
        origins = {str(c.get("name")): str(c.get("origin"))
                   for c in json.loads(native.readiness_json()).get("clients", [])}
        self._origins = origins
        self._base_urls: dict[str, str] = {}
        for name in self._names:
            origin = origins.get(name, "")
            base_url = base_urls.get(name, "")
            # The path is kept only from a base_url whose origin is the one the core built the client for.
            self._base_urls[name] = base_url if origin_of(base_url).lower() == origin.lower() else origin
        self._lock = threading.Lock()
        self._clients: weakref.WeakSet[_BaseClient] = weakref.WeakSet()
        _open_registries.add(self)

    @classmethod
    def from_json(cls, document: str | bytes | Mapping[str, Any], runtime: Runtime | None = None) -> Upstreams:
        """A registry from the JSON document (text, bytes, or the parsed mapping), its clients built on
        ``runtime`` (default: the shared default runtime). Raises ConfigError naming every bad key by its path,
        and for rules across one upstream's fields (``backoff_max`` below ``backoff_base``…)."""
        if isinstance(document, bytes):
            text = document.decode("utf-8")
        elif isinstance(document, str):
            text = document
        elif isinstance(document, Mapping):
            # Values JSON cannot carry become their repr, which the core then refuses naming the key.
            text = json.dumps(dict(document), default=lambda v: dict(v) if isinstance(v, Mapping) else repr(v))
        else:
            raise TypeError(f"Upstreams.from_json: document must be str, bytes or a mapping, not "
                            f"{type(document).__name__}")
        runtime = runtime if runtime is not None else default_runtime()
        try:
            native = _native.Upstreams(runtime.native, text)
            names = native.names()
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None
        return cls(native, runtime, _base_urls(text, names), _max_bodies(text))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], runtime: Runtime | None = None) -> Upstreams:
        """A registry from a JSON file (UTF-8), as from_json(). A file that cannot be read raises ConfigError
        naming the path (an operator's mistake, like a bad key), chained to the OSError."""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"upstreams: cannot read {os.fspath(path)!s}: {e}", status="HUMUS_E_CONFIG",
                              fields=(os.fspath(path),)) from e
        return cls.from_json(text, runtime)

    @property
    def names(self) -> tuple[str, ...]:
        """The configured names, sorted."""
        return self._names

    @property
    def runtime(self) -> Runtime:
        """The runtime the registry's clients were built on."""
        return self._runtime

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def base_url(self, name: str) -> str:
        """The base_url upstream ``name`` was built with (after the environment override). UnknownUpstreamError
        for a name not configured."""
        if name not in self._base_urls:
            raise self._unknown(name, None)
        return self._base_urls[name]

    def origin(self, name: str) -> str:
        """The origin (``scheme://host:port``) of upstream ``name``. UnknownUpstreamError for a name not
        configured."""
        if name not in self._origins:
            raise self._unknown(name, None)
        return self._origins[name]

    def client(self, name: str) -> Client:
        """A blocking Client for upstream ``name``, over the registry's native client (the same connections,
        circuit breaker, retry budget and bulkhead as every other client of that name). Close it when done, or
        let the registry's close() do it. Raises UnknownUpstreamError (a KeyError) listing the configured names
        for a name not configured, RuntimeError once the registry is closed."""
        return self._keep(Client._adopt(self._native_client(name), self._base_urls[name], self._origins[name],
                                        self._runtime, self._max_bodies.get(name)))

    def async_client(self, name: str) -> AsyncClient:
        """The same as client(), as an AsyncClient."""
        from ._async import AsyncClient  # here: importing it (and asyncio) is for the processes that use it

        return self._keep(AsyncClient._adopt(self._native_client(name), self._base_urls[name],
                                             self._origins[name], self._runtime, self._max_bodies.get(name)))

    def _native_client(self, name: str) -> _native.Client:
        if not isinstance(name, str):
            raise TypeError(f"Upstreams: an upstream's name is a str, not {type(name).__name__}")
        if "\x00" in name:  # a C string would end there, and name another upstream
            raise self._unknown(name, None)
        try:
            return self._native.client(name)
        except _native.Failure as failure:
            raise self._unknown(name, failure.args[0]) from None

    def _keep(self, client: _C) -> _C:
        with self._lock:
            self._clients.add(client)
        return client

    def _unknown(self, name: str, info: _native.ErrorInfo | None) -> BaseException:
        if info is not None and info.status_name != "HUMUS_E_INVALID_ARGUMENT":
            return from_native(info, "")
        message = info.message if info is not None else (
            f"no upstream named {name!r}; configured: {', '.join(self._names) or 'none'}")
        return UnknownUpstreamError(message, name=name, configured=self._names)

    def readiness(self) -> dict[str, Any]:
        """The readiness report (docs/upstreams.md §15.2) of the registry's clients: ``{"status": "ok" | "degraded",
        "clients": [{"name", "origin", "state": "closed" | "open" | "half_open", "retry_after_ms",
        "counts": {...}}]}``, ``"degraded"`` when any breaker is not closed, never ``"unavailable"``.
        Thread-safe."""
        try:
            text = self._native.readiness_json()
        except _native.Failure as failure:
            raise from_native(failure.args[0], "") from None
        result: dict[str, Any] = json.loads(text)
        return result

    @property
    def closed(self) -> bool:
        """True once close() ran."""
        return self._native.closed

    def close(self) -> None:
        """Closes every client handed out (their asynchronous calls in flight are cancelled) and releases the
        registry, which is freed once the blocking calls still in flight have ended. Later client() calls raise
        RuntimeError. Idempotent."""
        with self._lock:
            clients = list(self._clients)
            self._clients.clear()
        for client in clients:
            client._close_native()
        self._native.close()
        _open_registries.discard(self)

    def __repr__(self) -> str:
        return f"<humus_http.Upstreams {', '.join(self._names)}{' closed' if self.closed else ''}>"
