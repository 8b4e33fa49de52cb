"""The testing kit (docs/testing-kit.md §16) through the public API: the virtual clock, the mock transport (every kind of reply,
a raising handler), humus_http.testing's MockTransport and fixture; and what the conformance vectors needed the
API to say: cancel tokens, one client shared by blocking and asyncio code, breaker counts, budget tokens, a
call's elapsed time."""
from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import threading
import time
import weakref
from datetime import timedelta
from pathlib import Path

import humus_http
import pytest
from humus_http import CancelToken, Classification, MockReply, MockRequest, Runtime
from humus_http.testing import MockTransport, RecordedRequest, mock_transport  # noqa: F401 (the fixture)

BASE = "http://payments:8080"


class Boom(Exception):
    """Raised by the handlers under test."""


def virtual(handler: humus_http.MockHandler, seed: int = 1) -> Runtime:
    return Runtime(clock="virtual", seed=seed, mock=handler)


# --- replies of each kind ------------------------------------------------------------------------------------------


def test_a_reply_with_status_headers_and_body() -> None:
    reply = MockReply(status=201, headers=[("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-Id", "7")],
                      body='{"ok": true}')
    with humus_http.Client(BASE, runtime=virtual(lambda request: reply)) as client:
        r = client.post("/charges", json={"amount": 1})
    assert (r.status_code, r.attempts, r.http_version, r.url) == (201, 1, "HTTP/1.1", f"{BASE}/charges")
    assert r.headers.get_list("set-cookie") == ["a=1", "b=2"] and r.headers["x-id"] == "7"
    assert r.json() == {"ok": True}
    assert MockReply(headers={"A": "1"}).headers == (("A", "1"),)  # a mapping works too
    assert MockReply(body=b"\x00\xff").body == b"\x00\xff"


@pytest.mark.parametrize(("error", "raised", "status"), [
    ("HUMUS_E_CONNECT", humus_http.UpstreamConnectError, "HUMUS_E_CONNECT"),
    ("HUMUS_E_RESOLVE", humus_http.UpstreamConnectError, "HUMUS_E_RESOLVE"),
    ("HUMUS_E_CONNECTION_LOST", humus_http.ProtocolError, "HUMUS_E_CONNECTION_LOST"),
    ("HUMUS_E_TLS", humus_http.UpstreamTLSError, "HUMUS_E_TLS"),
    (humus_http.UpstreamConnectError, humus_http.UpstreamConnectError, "HUMUS_E_CONNECT"),
    (humus_http.ProtocolError, humus_http.ProtocolError, "HUMUS_E_CONNECTION_LOST"),
    (humus_http.UpstreamTimeoutError, humus_http.UpstreamTimeoutError, "HUMUS_E_TIMEOUT"),
    (humus_http.UpstreamTLSError, humus_http.UpstreamTLSError, "HUMUS_E_TLS"),
])
def test_a_reply_with_a_transport_error(error: str | type[humus_http.UpstreamError],
                                        raised: type[humus_http.UpstreamError], status: str) -> None:
    runtime = virtual(lambda request: MockReply(error=error, message="scripted failure"))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=2, backoff_base=0.1) as client, \
            pytest.raises(raised) as caught:
        client.get("/x")
    assert caught.value.status == status
    retried = status not in ("HUMUS_E_TLS",)  # TLS failures are not retried (docs/retries.md §5.3)
    assert caught.value.attempts == (2 if retried else 1)
    assert caught.value.elapsed is not None and caught.value.elapsed == timedelta(milliseconds=runtime.elapsed_ms())


# A virtual wait is two minutes long: the call returning in less than half of it in real time says it took no
# real time, and no loaded machine takes that long for a mock call.
VIRTUAL_WAIT_S = 120


def test_a_delayed_reply_takes_virtual_time_only() -> None:
    runtime = virtual(lambda request: MockReply(delay_ms=VIRTUAL_WAIT_S * 1000, body="late"))
    started = time.monotonic()
    with humus_http.Client(BASE, runtime=runtime, timeout=2 * VIRTUAL_WAIT_S,
                           attempt_timeout=VIRTUAL_WAIT_S + 1) as client:
        r = client.get("/slow")
    assert r.text == "late" and r.elapsed == timedelta(seconds=VIRTUAL_WAIT_S)
    assert runtime.elapsed_ms() == VIRTUAL_WAIT_S * 1000
    assert time.monotonic() - started < VIRTUAL_WAIT_S / 2


def test_a_hanging_reply_times_the_attempt_out() -> None:
    runtime = virtual(lambda request: MockReply(hang=True))
    with humus_http.Client(BASE, runtime=runtime, timeout=3.0, attempt_timeout=1.0, max_attempts=1) as client, \
            pytest.raises(humus_http.UpstreamTimeoutError) as caught:
        client.get("/hang")
    assert caught.value.attempts == 1
    assert caught.value.elapsed == timedelta(seconds=1) and runtime.elapsed_ms() == 1000


def test_a_per_call_timeout_is_exact_to_the_millisecond() -> None:
    runtime = virtual(lambda request: MockReply(hang=True))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=1) as client, \
            pytest.raises(humus_http.UpstreamTimeoutError) as caught:
        client.get("/hang", timeout=2.007)  # 2.007 * 1000 is 2007.0000000000002 in binary floating point
    assert caught.value.elapsed == timedelta(milliseconds=2007)
    assert Classification(retry=True, breaker="success", retry_after=2.007).to_native() == (2, 1, 2007)


def test_replies_are_checked_naming_the_field() -> None:
    with pytest.raises(ValueError, match="MockReply.status"):
        MockReply(status=42)
    with pytest.raises(ValueError, match="no transport error"):
        MockReply(error="HUMUS_E_REJECTED")
    with pytest.raises(ValueError, match="no transport error"):
        MockReply(error=humus_http.CircuitOpenError)
    with pytest.raises(TypeError, match="MockReply.error"):
        MockReply(error=KeyError)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CR or LF"):
        MockReply(headers=[("X-A", "1\r\nX-Injected: 1")])
    with pytest.raises(TypeError, match="pairs"):
        MockReply(headers=["X-A"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="delay_ms"):
        MockReply(delay_ms=-1)
    with pytest.raises(TypeError, match="MockReply.body"):
        MockReply(body=7)  # type: ignore[arg-type]


# --- the request a handler sees ----------------------------------------------------------------------------------


def test_the_handler_sees_the_request() -> None:
    seen: list[MockRequest] = []
    read: list[tuple[str, str, str, bytes, str | None, str | None]] = []

    def handler(request: MockRequest) -> MockReply:
        seen.append(request)
        read.append((request.method, request.url, request.path, request.body, request.header("idempotency-key"),
                     request.header("X-Absent")))
        return MockReply(status=201)

    with humus_http.Client(BASE, runtime=virtual(handler)) as client:
        client.post("/charges", params={"x": "1"}, content=b"amount=1", idempotency_key="k-1")
    assert read == [("POST", f"{BASE}/charges?x=1", "/charges?x=1", b"amount=1", "k-1", None)]
    assert seen[0].header("Idempotency-Key") == "k-1"  # read during the handler: kept
    with pytest.raises(RuntimeError, match="only while the mock handler runs"):
        seen[0].header("traceparent")
    assert repr(seen[0]) == f"<MockRequest POST {BASE}/charges?x=1>"


def test_handlers_run_on_the_thread_that_drives_the_attempt() -> None:
    threads: list[str] = []  # names: a finished thread's ident may be reused by the next one

    def handler(request: MockRequest) -> MockReply:
        threads.append(threading.current_thread().name)
        return MockReply()

    runtime = virtual(handler)
    with humus_http.Client(BASE, runtime=runtime) as client:
        client.get("/")
        worker = threading.Thread(target=client.get, args=("/",), name="worker")
        worker.start()
        worker.join()

    async def in_asyncio() -> None:
        async with humus_http.AsyncClient(BASE, runtime=runtime) as aclient:
            await aclient.get("/")

    asyncio.run(in_asyncio())
    assert threads[:2] == ["MainThread", "worker"]  # a blocking call: the caller's thread
    assert threads[2] not in ("MainThread", "worker")  # asyncio: the runtime's event-loop thread


# --- a handler that raises ------------------------------------------------------------------------------------


def test_an_exception_in_the_handler_fails_the_call_with_it() -> None:
    calls = 0

    def handler(request: MockRequest) -> MockReply:
        nonlocal calls
        calls += 1
        if request.path == "/boom":
            raise Boom(f"cannot answer {request.path}")
        return MockReply()

    with humus_http.Client(BASE, runtime=virtual(handler), max_attempts=3) as client:
        with pytest.raises(Boom, match="cannot answer /boom") as caught:
            client.get("/boom")
        record = humus_http.call_error(caught.value)
        assert record is not None
        assert (record.status, record.attempts, record.origin) == ("HUMUS_E_CALLBACK", 1, BASE)
        assert "mock transport" in record.message and record.elapsed == timedelta(0)
        assert any("raised by a callback" in note for note in caught.value.__notes__)
        assert client.get("/fine").status_code == 200  # nothing broke
        assert client.breaker_counts.failures == 1  # the failed attempt counted like any failure
    assert calls == 2
    assert humus_http.call_error(Boom("not from a call")) is None


def test_an_exception_in_the_handler_of_an_async_call() -> None:
    def handler(request: MockRequest) -> MockReply:
        raise Boom("async boom")

    async def call() -> None:
        async with humus_http.AsyncClient(BASE, runtime=virtual(handler)) as client:
            with pytest.raises(Boom, match="async boom") as caught:
                await client.get("/")
            record = humus_http.call_error(caught.value)
            assert record is not None and record.status == "HUMUS_E_CALLBACK"

    asyncio.run(call())


def test_a_handler_returning_junk_raises_type_error() -> None:
    junk = virtual(lambda request: 200)  # type: ignore[arg-type,return-value]
    with humus_http.Client(BASE, runtime=junk) as client, pytest.raises(TypeError, match="not humus_http.MockReply"):
        client.get("/")
    with pytest.raises(TypeError, match="callable"):
        Runtime(clock="virtual", mock="no")  # type: ignore[arg-type]


# --- the virtual clock ---------------------------------------------------------------------------------------


def test_a_two_minute_retry_after_costs_no_real_time() -> None:
    replies = iter([MockReply(status=503, headers={"Retry-After": str(VIRTUAL_WAIT_S)}), MockReply(body="ok")])
    arrivals: list[int] = []
    runtime: Runtime

    def handler(request: MockRequest) -> MockReply:
        arrivals.append(runtime.elapsed_ms())
        return next(replies)

    runtime = virtual(handler)
    started = time.monotonic()
    with humus_http.Client(BASE, runtime=runtime, timeout=2 * VIRTUAL_WAIT_S,
                           max_retry_after=VIRTUAL_WAIT_S) as client:
        r = client.get("/pay")
    assert (r.status_code, r.text, r.attempts) == (200, "ok", 2)
    assert arrivals == [0, VIRTUAL_WAIT_S * 1000] and r.elapsed == timedelta(seconds=VIRTUAL_WAIT_S)
    assert time.monotonic() - started < VIRTUAL_WAIT_S / 2


def test_advancing_the_clock_by_hand() -> None:
    runtime = virtual(lambda request: MockReply(status=500))
    with humus_http.Client(BASE, runtime=runtime, max_attempts=1, trip=humus_http.Trip(consecutive_failures=2),
                           breaker=humus_http.Breaker(open_for=10)) as client:
        client.get("/")
        client.get("/")
        assert client.breaker_state == "open"
        with pytest.raises(humus_http.CircuitOpenError) as caught:
            client.get("/")
        assert caught.value.retry_after == 10.0
        runtime.advance_ms(9999)
        assert client.breaker_state == "open" and runtime.elapsed_ms() == 9999
        runtime.advance_ms(1)
        assert client.breaker_state == "half_open"
        runtime.advance_ms(0)
        assert runtime.elapsed_ms() == 10000
    assert (runtime.clock, runtime.seed) == ("virtual", 1)


def test_advance_refuses_what_it_cannot_do() -> None:
    with pytest.raises(RuntimeError, match="clock is real"):
        Runtime().advance_ms(10)
    runtime = Runtime(clock="virtual")
    with pytest.raises(ValueError, match=">= 0"):
        runtime.advance_ms(-1)
    with pytest.raises(TypeError, match="int of milliseconds"):
        runtime.advance_ms(1.5)  # type: ignore[arg-type]
    assert Runtime().elapsed_ms() >= 0


def test_runtime_options_are_checked() -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        Runtime(clock="virtul")  # type: ignore[arg-type]
    assert caught.value.fields == ("clock",)
    with pytest.raises(humus_http.ConfigError, match="seed"):
        Runtime(clock="virtual", seed=-1)
    with pytest.raises(humus_http.UpstreamError, match="needs a mock transport") as missing:
        humus_http.Client(BASE, runtime=Runtime(clock="virtual"))
    assert missing.value.status == "HUMUS_E_MISUSE"
    assert repr(Runtime(clock="virtual")) == "<humus_http.Runtime clock=virtual>"


def test_the_seed_fixes_the_backoff_draws() -> None:
    def times(seed: int) -> list[int]:
        arrivals: list[int] = []
        runtime: Runtime

        def handler(request: MockRequest) -> MockReply:
            arrivals.append(runtime.elapsed_ms())
            return MockReply(status=503)

        runtime = virtual(handler, seed=seed)
        with humus_http.Client(BASE, runtime=runtime, max_attempts=4) as client:
            client.get("/")
        return arrivals

    assert times(7) == times(7)
    assert len(times(7)) == 4 and times(7) != times(8)


def test_set_mock_transport_affects_clients_built_afterwards() -> None:
    runtime = virtual(lambda request: MockReply(body="first"))
    first = humus_http.Client(BASE, runtime=runtime)
    runtime.set_mock_transport(lambda request: MockReply(body="second"))
    second = humus_http.Client(BASE, runtime=runtime)
    assert (first.get("/").text, second.get("/").text) == ("first", "second")
    runtime.set_mock_transport(None)
    with pytest.raises(humus_http.UpstreamError, match="needs a mock transport"):
        humus_http.Client(BASE, runtime=runtime)
    assert first.get("/").text == "first"  # built before: keeps its handler
    first.close()
    second.close()


def test_a_mock_on_a_real_clock_waits_in_real_time() -> None:
    runtime = Runtime(mock=lambda request: MockReply(delay_ms=50, body="real"))
    started = time.monotonic()
    with humus_http.Client(BASE, runtime=runtime) as client:
        assert client.get("/").text == "real"
    assert time.monotonic() - started >= 0.045


def test_the_handler_is_released_with_its_runtime() -> None:
    class Handler:
        def __init__(self) -> None:
            self.runtime: Runtime | None = None

        def __call__(self, request: MockRequest) -> MockReply:
            assert self.runtime is not None
            return MockReply(body=str(self.runtime.elapsed_ms()))

    handler = Handler()
    runtime = virtual(handler)
    handler.runtime = runtime  # a cycle through the runtime: the garbage collector must still free both
    with humus_http.Client(BASE, runtime=runtime) as client:
        assert client.get("/").text == "0"
    gone = weakref.ref(handler)
    del handler, runtime, client
    gc.collect()
    assert gone() is None


# --- cancel tokens -------------------------------------------------------------------------------------------------


def _cancelling_handler(token: CancelToken, received: list[str] | None = None) -> humus_http.MockHandler:
    def handler(request: MockRequest) -> MockReply:
        if received is not None:
            received.append(request.path)
        token.cancel()  # the caller gives up as the request arrives
        return MockReply(hang=True)
    return handler


def test_a_cancel_token_ends_a_blocking_call() -> None:
    token = CancelToken()
    assert not token.cancelled and repr(token) == "<humus_http.CancelToken>"
    received: list[str] = []
    runtime = virtual(_cancelling_handler(token, received))
    with humus_http.Client(BASE, runtime=runtime) as client:
        with pytest.raises(humus_http.CancelledCallError) as caught:
            client.get("/hang", cancel=token)
        assert (caught.value.attempts, caught.value.elapsed) == (1, timedelta(0))
        assert token.cancelled and repr(token) == "<humus_http.CancelToken cancelled>"
        with pytest.raises(humus_http.CancelledCallError) as later:  # cancels for good: later calls end at once
            client.get("/hang", cancel=token)
        assert (later.value.attempts, later.value.elapsed, received) == (0, timedelta(0), ["/hang"])
        counts = client.breaker_counts
        assert (counts.successes, counts.failures) == (0, 0)  # ignored by the breaker (docs/retries.md §5.1)
        assert client.budget_tokens == 10.0


def test_a_cancel_token_on_a_worker_thread_and_from_another_thread() -> None:
    arrived = threading.Event()

    def handler(request: MockRequest) -> MockReply:
        arrived.set()
        return MockReply(hang=True)

    token = CancelToken()
    outcome: list[BaseException] = []
    with humus_http.Client(BASE, runtime=Runtime(mock=handler), timeout=30.0, attempt_timeout=30.0) as client:
        def call() -> None:
            try:
                client.get("/hang", cancel=token)
            except humus_http.UpstreamError as e:
                outcome.append(e)

        worker = threading.Thread(target=call)
        worker.start()
        assert arrived.wait(10)
        token.cancel()
        worker.join(10)
    assert not worker.is_alive()
    assert isinstance(outcome[0], humus_http.CancelledCallError) and outcome[0].attempts == 1


def test_a_cancel_token_ends_an_async_call_with_its_outcome() -> None:
    async def call() -> None:
        token = CancelToken()
        received: list[str] = []
        async with humus_http.AsyncClient(BASE, runtime=virtual(_cancelling_handler(token, received))) as client:
            with pytest.raises(humus_http.CancelledCallError) as caught:
                await client.get("/hang", cancel=token)
            assert (caught.value.attempts, caught.value.elapsed) == (1, timedelta(0))
            with pytest.raises(humus_http.CancelledCallError) as later:
                await client.get("/hang", cancel=token)  # already cancelled: ends at once, nothing sent
            assert (later.value.attempts, later.value.elapsed, received) == (0, timedelta(0), ["/hang"])

    asyncio.run(call())


# --- one client, blocking and asyncio ------------------------------------------------------------------------------


def test_from_client_shares_the_breaker_and_budget() -> None:
    runtime = virtual(lambda request: MockReply(status=503))
    client = humus_http.Client(BASE, runtime=runtime, max_attempts=2, trip=humus_http.Trip(consecutive_failures=50))
    aclient = humus_http.AsyncClient.from_client(client)
    assert (aclient.base_url, aclient.origin) == (client.base_url, client.origin)
    client.get("/")

    async def call() -> int:
        return (await aclient.get("/")).status_code

    assert asyncio.run(call()) == 503
    counts = client.breaker_counts
    assert counts == aclient.breaker_counts and counts.failures == 4 and counts.state == "closed"
    assert client.budget_tokens == aclient.budget_tokens == pytest.approx(6.0)  # a token per failed attempt
    client.close()
    assert asyncio.run(call()) == 503  # the other share still works
    assert humus_http.Client.from_client(aclient).get("/").status_code == 503
    aclient.close()
    with pytest.raises(RuntimeError, match="closed"):
        humus_http.Client.from_client(aclient)
    with pytest.raises(TypeError, match="from_client"):
        humus_http.Client.from_client("client")  # type: ignore[arg-type]


# --- humus_http.testing ------------------------------------------------------------------------------------------


def test_mock_transport_scripts_routes(mock_transport: MockTransport) -> None:  # noqa: F811 (the fixture)
    mock_transport.script("GET /pay", 503, MockReply(body="ok"))
    mock_transport.script("POST /charges", lambda request: MockReply(status=201, body=request.body))
    mock_transport.script("*", 404)
    client = mock_transport.client(BASE)
    assert client.get("/pay").text == "ok"
    assert client.get("/pay").text == "ok"  # the last reply repeats
    assert client.post("/charges", content="x").content == b"x"
    assert client.get("/elsewhere").status_code == 404
    assert [f"{r.method} {r.path}" for r in mock_transport.requests] == \
        ["GET /pay", "GET /pay", "GET /pay", "POST /charges", "GET /elsewhere"]
    assert len(mock_transport.received("GET /pay")) == 3
    assert mock_transport.elapsed_ms() == mock_transport.requests[1].at_ms > 0  # the backoff, in virtual time
    mock_transport.advance_ms(5)
    assert mock_transport.elapsed_ms() == mock_transport.requests[1].at_ms + 5


def test_mock_transport_records_headers_and_refuses_unscripted() -> None:
    with MockTransport(record_headers=["Idempotency-Key"]) as mock:
        mock.script("POST /charges", 201)
        client = mock.client(BASE)
        client.post("/charges", idempotency_key="k-9")
        recorded: RecordedRequest = mock.requests[0]
        assert recorded.header("idempotency-key") == "k-9" and recorded.body == b""
        with pytest.raises(KeyError, match="record_headers"):
            recorded.header("traceparent")
        with pytest.raises(LookupError, match='no reply scripted for "GET /nowhere"'):
            client.get("/nowhere")
        with pytest.raises(ValueError, match="route"):
            mock.script("pay", 200)
        with pytest.raises(ValueError, match="at least one reply"):
            mock.script("GET /pay")
        with pytest.raises(TypeError, match="a reply is"):
            mock.script("GET /pay", "ok")  # type: ignore[arg-type]
        assert "requests=2" in repr(mock)
    assert client.is_closed  # closed with the MockTransport


def test_mock_transport_async_client() -> None:
    async def call(mock: MockTransport) -> list[int]:
        client = mock.async_client(BASE, bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0))
        results = await asyncio.gather(client.get("/slow"), client.get("/slow"), return_exceptions=True)
        return [r.status_code if isinstance(r, humus_http.Response) else -1 for r in results]

    with MockTransport() as mock:
        mock.script("GET /slow", MockReply(delay_ms=100))
        assert sorted(asyncio.run(call(mock))) == [-1, 200]  # the second was turned away by the bulkhead


def test_the_fixture_as_a_pytest_plugin(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["humus_http.testing"]\n')
    (tmp_path / "test_user.py").write_text(
        "from humus_http import MockReply\n"
        "from humus_http.testing import MockTransport\n\n"
        "def test_retry_after(mock_transport: MockTransport) -> None:\n"
        "    mock_transport.script('GET /pay', MockReply(status=429, headers={'Retry-After': '2'}), 200)\n"
        "    assert mock_transport.client('http://payments').get('/pay').status_code == 200\n"
        "    assert mock_transport.elapsed_ms() == 2000\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_testing_kit_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    usage = tmp_path / "usage.py"
    usage.write_text(
        "import asyncio\n"
        "from datetime import timedelta\n"
        "import humus_http\n"
        "from humus_http import CancelToken, MockReply, MockRequest\n"
        "from humus_http.testing import MockTransport, RecordedRequest\n\n"
        "def handler(request: MockRequest) -> MockReply:\n"
        "    key: str | None = request.header('Idempotency-Key')\n"
        "    return MockReply(status=201 if key else 400, headers={'X': request.path}, body=request.body)\n\n"
        "def use() -> int:\n"
        "    runtime = humus_http.Runtime(clock='virtual', seed=3, mock=handler)\n"
        "    runtime.set_mock_transport(lambda r: MockReply(error=humus_http.UpstreamConnectError))\n"
        "    runtime.advance_ms(10)\n"
        "    token = CancelToken()\n"
        "    with humus_http.Client('http://x', runtime=runtime) as client:\n"
        "        elapsed: timedelta = client.get('/', cancel=token).elapsed\n"
        "        counts: humus_http.BreakerCounts = client.breaker_counts\n"
        "        tokens: float = client.budget_tokens\n"
        "        shared = humus_http.AsyncClient.from_client(client)\n"
        "        shared.close()\n"
        "    try:\n"
        "        pass\n"
        "    except humus_http.UpstreamError as e:\n"
        "        record: humus_http.UpstreamError | None = humus_http.call_error(e)\n"
        "        print(e.elapsed, record)\n"
        "    with MockTransport(seed=1, record_headers=['traceparent']) as mock:\n"
        "        mock.script('GET /pay', 503, MockReply(body='ok'), lambda r: MockReply())\n"
        "        seen: list[RecordedRequest] = mock.requests\n"
        "        print(elapsed, counts, tokens, seen, mock.elapsed_ms(), runtime.elapsed_ms())\n"
        "    return mock.client().get('/').status_code\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
                           str(tmp_path / "mypy-cache"), str(usage)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
