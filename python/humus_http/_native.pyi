"""Type stubs of humus_http._native, the extension over the C ABI (include/humus_http.h)."""
from collections.abc import Callable
from typing import Any

VERSION: str

#: A streamed request body (humus_request_set_body_reader): read(cap) -> at most cap bytes (b"" at the end),
#: rewind() or None (not replayable), the length or -1. Called with the GIL taken only inside each callback.
BodyReader = tuple[Callable[[int], bytes], Callable[[], object] | None, int]
#: One call's attempt hooks (humus_request_set_attempt_hooks): ``before(method, url, attempt, headers)`` returns
#: the (name, value) pairs to set on that attempt, or None; ``after(attempt, status, headers)`` (status 0: no
#: response).
AttemptHooks = tuple[Callable[[str, str, int, list[tuple[str, str]]], list[tuple[str, str]] | None],
                     Callable[[int, int, list[tuple[str, str]]], None]]

class Failure(Exception):
    """A C ABI call failed before any request was made; args[0] is the ErrorInfo."""

class ErrorInfo:
    """What a failed C call reported (copied out of its humus_error)."""
    @property
    def status(self) -> int: ...
    @property
    def status_name(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def fields(self) -> tuple[str, ...]: ...
    @property
    def retry_after_ms(self) -> int: ...
    @property
    def elapsed_us(self) -> int:
        """The call's duration in microseconds on the runtime's clock; -1 when the error did not come from a
        call."""
    @property
    def exception(self) -> BaseException | None: ...
    def trace_json(self) -> str:
        """The failed call's decision trace as JSON (humus_error_trace): "[]" when no call made the error."""

class Runtime:
    """A humus_runtime: event loop, clock, name overrides."""
    def __init__(self, options_json: str) -> None: ...
    def advance_ms(self, ms: int) -> None:
        """Moves a virtual clock forward (humus_runtime_advance_ms)."""
    def elapsed_ms(self) -> int:
        """Milliseconds the runtime's clock has advanced since it was made."""

class Attempt:
    """One attempt as a classifier sees it; valid only during that call."""
    @property
    def method(self) -> str:
        """The request's method, e.g. "GET"."""
    @property
    def status(self) -> int:
        """The response status, or 0 when the attempt got no response."""
    @property
    def error(self) -> str | None:
        """The C status name of the error when no response came (e.g. "HUMUS_E_CONNECT"), else None."""
    @property
    def error_message(self) -> str:
        """The error's message, "" when there is none."""
    @property
    def number(self) -> int:
        """1 for the first attempt of a request."""
    def header(self, name: str) -> str | None:
        """A response header (case-insensitive), or None when absent or no response came."""

def settings_schema_json() -> str: ...
def classify_default(attempt: Attempt) -> tuple[int, int, int]: ...
def classify_preset(preset: str, attempt: Attempt) -> tuple[int, int, int]: ...

class Response:
    """A whole response (humus_response); close() frees it."""
    @property
    def status(self) -> int: ...
    @property
    def attempts(self) -> int: ...
    @property
    def elapsed_us(self) -> int: ...
    def redirects(self) -> list[tuple[int, str, bytes | None, str, list[tuple[str, str]]]]:
        """The redirects followed, oldest first: (3xx status, URL of the request that got it, its reason phrase
        as sent or None over HTTP/2, its HTTP version ("1.1", "2"), its headers as headers() gives them)."""
    @property
    def http_version(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def reason(self) -> bytes | None:
        """The status line's reason phrase as sent (humus_response_reason), None over HTTP/2."""
    def body(self) -> bytes: ...
    def read(self, cap: int) -> bytes:
        """Up to ``cap`` next bytes of the body, b"" at its end (humus_response_read); raises Failure."""
    def read_rest(self) -> bytes:
        """The rest of the body into memory, within max_response_body; raises Failure."""
    def take(self, cap: int) -> bytes | None:
        """Up to ``cap`` next bytes of a body from Client.submit_open, copied out of what the library read ahead
        (humus_response_take, never waiting), b"" at the end, or None when none are in yet (then wait());
        raises Failure when the body failed."""
    def wait(self, bridge: Bridge, future: Any) -> bool:
        """After take() gave None: ``future`` (an asyncio.Future of bridge's loop) gets None once a take may find
        something; False when that came already (take again). One reader at a time (RuntimeError)."""
    def hurry(self) -> None:
        """The reader waiting is done waiting for a batch (humus_response_hurry): what came wakes it now."""
    def headers(self) -> list[tuple[str, str]]: ...
    def trace_json(self) -> str:
        """The call's decision trace as JSON (humus_response_trace); raises Failure."""
    def close(self) -> None: ...

class Bridge:
    """Delivers completions to the asyncio loop that watches fileno()."""
    def __init__(self) -> None: ...
    def fileno(self) -> int:
        """An eventfd that turns readable when completions are queued: the loop's reader calls drain()."""
    def drain(self) -> None: ...

class Call:
    """An asynchronous call in flight; cancel() ends it early."""
    def cancel(self) -> None: ...

class Cancel:
    """A cancel token (humus_cancel) that also cancels submitted calls."""
    def __init__(self) -> None: ...
    def trigger(self) -> None: ...
    @property
    def triggered(self) -> bool: ...

class Client:
    """A humus_client and its runtime."""
    def __init__(self, runtime: Runtime, settings_json: str,
                 classifier: Callable[[Attempt], tuple[int, int, int]] | None,
                 trip: Callable[[tuple[int, ...]], int] | None,
                 probe: Callable[[tuple[int, ...]], int] | None) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def breaker_state(self) -> str: ...
    def breaker_counts(self) -> tuple[int, int, int, int, int, int, int, int, int, int]: ...
    def budget_tokens(self) -> float: ...
    def bulkhead_limit(self) -> int: ...
    def share(self) -> Client:
        """Another owner of the same C client."""
    def request(self, method: str, url: str, headers: list[tuple[str, str | None]] | None, body: bytes | BodyReader | None,
                idempotency_key: str | None, retry: int, follow: int, timeout_ms: int,
                context: tuple[str | None, ...] | None = None,
                cancel: Cancel | None = None, hooks: AttemptHooks | None = None) -> Response | ErrorInfo: ...
    def open(self, method: str, url: str, headers: list[tuple[str, str | None]] | None, body: bytes | BodyReader | None,
             idempotency_key: str | None, retry: int, follow: int, timeout_ms: int,
             context: tuple[str | None, ...] | None = None,
             cancel: Cancel | None = None, hooks: AttemptHooks | None = None) -> Response | ErrorInfo:
        """humus_client_open: the response once its headers are in; its body through Response.read()."""
    def submit(self, method: str, url: str, headers: list[tuple[str, str | None]] | None, body: bytes | BodyReader | None,
               idempotency_key: str | None, retry: int, follow: int, timeout_ms: int, bridge: Bridge,
               future: Any, context: tuple[str | None, ...] | None = None, cancel: Cancel | None = None,
               hooks: AttemptHooks | None = None) -> Call: ...
    def submit_open(self, method: str, url: str, headers: list[tuple[str, str | None]] | None,
                    body: bytes | BodyReader | None, idempotency_key: str | None, retry: int, follow: int,
                    timeout_ms: int, bridge: Bridge, future: Any, context: tuple[str | None, ...] | None = None,
                    cancel: Cancel | None = None, hooks: AttemptHooks | None = None) -> Call:
        """humus_client_submit_open: ``future`` receives the Response once its headers are in (its body read
        ahead from then on, copied out with Response.take(); it keeps this client alive) or an ErrorInfo."""

class Upstreams:
    """A humus_upstreams registry: clients by name (docs/upstreams.md §15.1)."""
    def __init__(self, runtime: Runtime, document: str) -> None: ...
    def close(self) -> None:
        """Releases this share of the registry."""
    @property
    def closed(self) -> bool: ...
    def names(self) -> tuple[str, ...]:
        """The upstreams' names, sorted."""
    def client(self, name: str) -> Client:
        """A Client over the registry's client of that name (the registry stays alive while it is open)."""
    def readiness_json(self) -> str:
        """The readiness report of the registry's clients."""

# Telemetry (telemetry.cpp): the span and log sinks, metrics and readiness.

def set_span_sink(runtime: Runtime, adapter: Callable[[tuple[Any, ...]], None] | None, user: object) -> None:
    """Installs (or with adapter None removes) the span sink of a runtime for the calls that start afterwards;
    adapter(tuple) receives each attempt's span, and an exception it raises is reported against `user` through
    sys.unraisablehook."""
def set_log_sink(runtime: Runtime, adapter: Callable[[tuple[Any, ...]], None] | None, user: object) -> None:
    """Installs (or with adapter None removes) the log sink of a runtime; adapter(tuple) receives each log
    record, and an exception it raises is reported against `user` through sys.unraisablehook."""
def metrics_prometheus(runtime: Runtime) -> str:
    """The runtime's metrics in the Prometheus text format 0.0.4."""
def metrics_json(runtime: Runtime) -> str:
    """The runtime's metrics as JSON text."""
def readiness_json(runtime: Runtime) -> str:
    """The readiness report of every live client of the runtime, as JSON text."""

# The testing kit (testing.cpp): the mock transport and status names.

class MockRequestView:
    """A request as the mock transport sees it; valid only during that callback."""
    @property
    def method(self) -> str: ...
    @property
    def url(self) -> str: ...
    def header(self, name: str) -> str | None: ...
    def body(self) -> bytes: ...

def set_mock_transport(runtime: Runtime,
                       respond: Callable[[MockRequestView], tuple[Any, ...]] | None) -> None:
    """Installs (or with None removes) the mock transport of a runtime for the clients built afterwards."""
def status_name(status: int) -> str:
    """The C name of a status number ("HUMUS_E_UNKNOWN" for one this version does not know)."""
def status_number(name: str) -> int | None:
    """The number of a C status name ("HUMUS_E_CONNECT" -> 300), or None for an unknown name."""
