"""humus_http.httpx: the real httpx.Client and httpx.AsyncClient sending through a humus client against the
test server — bodies streamed both ways, a retried 503, httpx's own redirects on top, failures as httpx's
exceptions with the humus error as their cause, a breaker rejection and a full bulkhead as RejectedError."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

import humus_http
from server_harness import TestServer
from test_package import EXAMPLES, mypy

httpx = pytest.importorskip("httpx")
import humus_http.httpx  # noqa: E402  (needs httpx)

# An ordered body of distinct bytes, so that a chunk out of place or lost changes the digest.
_PATTERN = bytes(range(256)) * 4


def _chunks(count: int) -> Iterator[bytes]:
    for _ in range(count):
        yield _PATTERN


def test_get_goes_through_the_humus_client(server: TestServer, make_client: Callable[..., humus_http.Client],
                                           listener: str, path: str) -> None:
    server.script(path, [{"headers": [["X-Answer", "42"]], "body": "hello"}])
    client = make_client(listener)
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        response = http.get(path, params={"q": "1"}, headers={"X-Trace": "abc"})
    assert response.status_code == 200
    assert response.text == "hello"
    assert response.headers["x-answer"] == "42"
    assert response.http_version == ("HTTP/2" if listener == "https" else "HTTP/1.1")
    assert response.extensions["humus_http.response"].attempts == 1
    (seen,) = server.requests(path)
    headers = dict(seen["headers"])
    assert seen["query"] == "q=1"
    assert headers["x-trace"] == "abc"
    assert headers["user-agent"].startswith("python-httpx/")  # httpx's headers, sent by the humus client
    assert client.breaker_counts.successes == 1


def test_streamed_download_is_read_as_httpx_iterates(server: TestServer,
                                                     make_client: Callable[..., humus_http.Client],
                                                     listener: str, path: str) -> None:
    size = 4 * 1024 * 1024
    server.script(path, [{"body_size": size}])
    client = make_client(listener, timeout=60)
    total = 0
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        with http.stream("GET", path) as r:
            assert r.status_code == 200
            # The breaker counts a streamed call's result when its body ends: not yet, so not buffered.
            assert client.breaker_counts.successes == 0
            for chunk in r.iter_bytes():
                total += len(chunk)
            assert client.breaker_counts.successes == 1
    assert total == size


def test_streamed_upload_is_read_as_it_is_sent(server: TestServer, make_client: Callable[..., humus_http.Client],
                                               listener: str, path: str) -> None:
    client = make_client(listener)
    pulled: list[int] = []

    def body() -> Iterator[bytes]:
        for i, chunk in enumerate(_chunks(64)):
            pulled.append(i)
            yield chunk

    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        response = http.post(path, content=body())
    assert response.status_code == 200
    assert len(pulled) == 64
    (seen,) = server.requests(path)
    assert seen["body_size"] == 64 * len(_PATTERN)
    assert seen["body_sha256"] == hashlib.sha256(_PATTERN * 64).hexdigest()
    if listener == "http":
        assert ("transfer-encoding", "chunked") in [tuple(h) for h in seen["headers"]]


def test_a_503_is_retried_by_the_humus_client(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              make_runtime: Callable[..., humus_http.Runtime], path: str) -> None:
    server.script(path, [{"status": 503}, {"body": "ok"}])
    spans: list[humus_http.Span] = []
    client = make_client(runtime=make_runtime(span_sink=spans.append))
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        response = http.get(path)
    assert (response.status_code, response.text) == (200, "ok")
    assert response.extensions["humus_http.response"].attempts == 2
    # A span per attempt, each the parent named in what that attempt sent.
    assert [span.attributes["http.response.status_code"] for span in spans] == [503, 200]
    assert [dict(r["headers"])["traceparent"] for r in server.requests(path)] == [s.traceparent for s in spans]


def test_httpx_follows_redirects_one_request_at_a_time(server: TestServer,
                                                       make_client: Callable[..., humus_http.Client],
                                                       path: str) -> None:
    server.script(path, [{"status": 302, "headers": [["Location", path + "/there"]]}])
    server.script(path + "/there", [{"body": "arrived"}])
    client = make_client()  # follow_redirects=True: the transport turns it off per call
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        not_followed = http.get(path)
        followed = http.get(path, follow_redirects=True)
    assert not_followed.status_code == 302 and not_followed.next_request is not None
    assert (followed.status_code, followed.text) == (200, "arrived")
    assert [r.status_code for r in followed.history] == [302]
    assert followed.extensions["humus_http.response"].attempts == 1
    assert len(server.requests(path)) == 2 and len(server.requests(path + "/there")) == 1


def test_httpx_decodes_the_body_it_asked_to_be_compressed(server: TestServer,
                                                          make_client: Callable[..., humus_http.Client],
                                                          path: str) -> None:
    server.script(path, [{"gzip_bomb": 5000}])
    client = make_client()
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        response = http.get(path)
    # httpx sent its Accept-Encoding, so the humus client left the body as it came, headers included.
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) == response.num_bytes_downloaded < 5000
    assert response.content == bytes(5000)


def test_failures_are_httpx_exceptions_caused_by_the_humus_error(
        server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client(max_attempts=1, timeout=5, attempt_timeout=0.3)
    server.script(path + "/slow", [{"delay_ms": 1500}])
    server.script(path + "/reset", [{"reset": "before_headers"}])
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        with pytest.raises(httpx.ReadTimeout) as timeout:
            http.get(path + "/slow")
        with pytest.raises(httpx.RemoteProtocolError) as reset:
            http.get(path + "/reset")
        with pytest.raises(httpx.UnsupportedProtocol) as elsewhere:
            http.get("http://127.0.0.1:9/x")
    assert isinstance(timeout.value.__cause__, humus_http.UpstreamTimeoutError)
    assert isinstance(reset.value.__cause__, humus_http.ProtocolError)
    assert isinstance(elsewhere.value.__cause__, humus_http.CrossOriginError)
    assert timeout.value.request.url.path == path + "/slow"

    closed = make_client(max_attempts=1)  # nothing listens on the discard port
    refused = humus_http.Client("http://127.0.0.1:9", timeout=5, max_attempts=1, runtime=closed._runtime)
    try:
        with httpx.Client(transport=humus_http.httpx.Transport(refused)) as http:
            with pytest.raises(httpx.ConnectError) as connect:
                http.get("http://127.0.0.1:9/")
    finally:
        refused.close()
    assert isinstance(connect.value.__cause__, humus_http.UpstreamConnectError)


def test_a_refused_certificate_is_a_connect_error(make_client: Callable[..., humus_http.Client]) -> None:
    client = make_client("untrusted", max_attempts=1)
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        with pytest.raises(httpx.ConnectError) as caught:
            http.get("/")
    assert isinstance(caught.value.__cause__, humus_http.UpstreamTLSError)


def test_a_body_breaking_off_raises_while_httpx_reads_it(server: TestServer,
                                                         make_client: Callable[..., humus_http.Client],
                                                         listener: str, path: str) -> None:
    server.script(path, [{"body_size": 256 * 1024, "reset": "mid_body"}])
    client = make_client(listener, max_attempts=1)
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        with http.stream("GET", path) as r:
            with pytest.raises(httpx.RemoteProtocolError) as caught:
                r.read()
    assert isinstance(caught.value.__cause__, humus_http.ProtocolError)


def test_an_open_breaker_is_a_rejection(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    client = make_client(max_attempts=1, trip=humus_http.Trip(consecutive_failures=1),
                         breaker=humus_http.Breaker(open_for=600))
    server.script(path, [{"status": 503}])
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        assert http.get(path).status_code == 503  # the failure that opens the breaker
        with pytest.raises(humus_http.httpx.RejectedError) as caught:
            http.get(path)
    assert isinstance(caught.value, httpx.TransportError)
    assert isinstance(caught.value.__cause__, humus_http.CircuitOpenError)
    assert caught.value.retry_after is not None and caught.value.retry_after > 0
    assert len(server.requests(path)) == 1


def test_a_full_bulkhead_is_a_rejection(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    client = make_client(bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0))
    server.script(path, [{"body_size": 1024 * 1024}])
    with httpx.Client(base_url=client.base_url, transport=humus_http.httpx.Transport(client)) as http:
        with http.stream("GET", path) as holding:  # an open stream holds its call's slot
            with pytest.raises(humus_http.httpx.RejectedError) as caught:
                http.get(path)
            assert holding.status_code == 200
        assert http.get(path).status_code == 200  # the slot is back once the stream closed
    assert isinstance(caught.value.__cause__, humus_http.BulkheadFullError)
    assert caught.value.retry_after is None


@pytest.mark.asyncio
async def test_async_transport_streams_and_retries(server: TestServer,
                                                   make_async_client: Callable[..., humus_http.AsyncClient],
                                                   listener: str, path: str) -> None:
    size = 1024 * 1024
    server.script(path, [{"status": 503}, {"body_size": size}])
    server.script(path + "/up", [{"body": "stored"}])
    client = make_async_client(listener, timeout=60)

    async def body() -> AsyncIterator[bytes]:
        for chunk in _chunks(16):
            yield chunk

    async with httpx.AsyncClient(base_url=client.base_url,
                                 transport=humus_http.httpx.AsyncTransport(client)) as http:
        async with http.stream("GET", path) as r:
            assert r.status_code == 200
            assert client.breaker_counts.successes == 0
            total = 0
            async for chunk in r.aiter_bytes():
                total += len(chunk)
            assert client.breaker_counts.successes == 1
        uploaded = await http.put(path + "/up", content=body())
    assert total == size
    assert r.extensions["humus_http.response"].attempts == 2
    assert uploaded.text == "stored"
    (seen,) = server.requests(path + "/up")
    assert seen["body_sha256"] == hashlib.sha256(_PATTERN * 16).hexdigest()


@pytest.mark.asyncio
async def test_async_failures_are_httpx_exceptions(server: TestServer,
                                                   make_async_client: Callable[..., humus_http.AsyncClient],
                                                   path: str) -> None:
    client = make_async_client(max_attempts=1, trip=humus_http.Trip(consecutive_failures=1),
                               breaker=humus_http.Breaker(open_for=600))
    server.script(path, [{"reset": "before_headers"}])
    async with httpx.AsyncClient(base_url=client.base_url,
                                 transport=humus_http.httpx.AsyncTransport(client)) as http:
        with pytest.raises(httpx.RemoteProtocolError) as reset:
            await http.get(path)
        with pytest.raises(humus_http.httpx.RejectedError) as rejected:
            await http.get(path)
    assert isinstance(reset.value.__cause__, humus_http.ProtocolError)
    assert isinstance(rejected.value.__cause__, humus_http.CircuitOpenError)


def test_the_transports_take_their_own_kind_of_client(make_client: Callable[..., humus_http.Client],
                                                      make_async_client: Callable[..., humus_http.AsyncClient]) -> None:
    with pytest.raises(TypeError, match="AsyncTransport"):
        humus_http.httpx.Transport(make_async_client())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Transport"):
        humus_http.httpx.AsyncTransport(make_client())  # type: ignore[arg-type]


def test_closing_httpx_leaves_the_humus_client_open(make_client: Callable[..., humus_http.Client]) -> None:
    client = make_client()
    with httpx.Client(transport=humus_http.httpx.Transport(client)):
        pass
    assert not client.is_closed


def test_importing_humus_http_does_not_import_httpx() -> None:
    probe = ("import sys, humus_http\n"
             "assert 'httpx' not in sys.modules and 'humus_http.httpx' not in sys.modules\n"
             "assert humus_http.httpx.Transport.__name__ == 'Transport'\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_sdk_example_sends_through_the_humus_client(server: TestServer, tmp_path: Path) -> None:
    example = EXAMPLES / "sdk_over_httpx.py"
    done = subprocess.run([sys.executable, str(example), server.url("http").rstrip("/")], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "'path': '/v1/invoices/in_42'" in done.stdout, done.stdout
    pytest.importorskip("mypy")
    checked = mypy(tmp_path, example)  # mypy --strict, as the other examples
    assert checked.returncode == 0, checked.stdout + checked.stderr
