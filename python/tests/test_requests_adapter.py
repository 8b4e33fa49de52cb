"""humus_http.requests: a real requests.Session with the adapter mounted on the test server's origin — bodies
streamed both ways, a retried 503, requests' own redirects and cookie jar on top, failures as requests'
exceptions with the humus error as their cause, a breaker rejection and a full bulkhead as RejectedError."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import humus_http
from server_harness import TestServer

requests = pytest.importorskip("requests")
import humus_http.requests  # noqa: E402  (needs requests)

# An ordered body of distinct bytes, so that a chunk out of place or lost changes the digest.
_PATTERN = bytes(range(256)) * 4


def _session(client: humus_http.Client) -> requests.Session:
    session = requests.Session()
    session.mount(client.origin + "/", humus_http.requests.Adapter(client))
    return session


def _cause_chain(error: BaseException) -> list[BaseException]:
    """The error, then what caused it (``__cause__``, else ``__context__``), down to the first."""
    chain = [error]
    while (error := error.__cause__ or error.__context__) is not None:  # type: ignore[assignment]
        chain.append(error)
    return chain


def test_get_goes_through_the_humus_client(server: TestServer, make_client: Callable[..., humus_http.Client],
                                           listener: str, path: str) -> None:
    server.script(path, [{"headers": [["X-Answer", "42"]], "body": "hello"}])
    client = make_client(listener)
    with _session(client) as session:
        response = session.get(client.origin + path, params={"q": "1"}, headers={"X-Trace": "abc"})
    assert response.status_code == 200
    assert response.text == "hello"
    assert response.headers["x-answer"] == "42"
    assert response.reason == "OK"
    (seen,) = server.requests(path)
    headers = dict(seen["headers"])
    assert seen["query"] == "q=1"
    assert headers["x-trace"] == "abc"
    assert headers["user-agent"].startswith("python-requests/")  # requests' headers, sent by the humus client
    assert client.breaker_counts.successes == 1


def test_streamed_download_is_read_as_requests_iterates(server: TestServer,
                                                        make_client: Callable[..., humus_http.Client],
                                                        listener: str, path: str) -> None:
    size = 4 * 1024 * 1024
    server.script(path, [{"body_size": size}])
    client = make_client(listener, timeout=60)
    total = 0
    with _session(client) as session:
        with session.get(client.origin + path, stream=True) as r:
            assert r.status_code == 200
            # The breaker counts a streamed call's result when its body ends: not yet, so not buffered.
            assert client.breaker_counts.successes == 0
            for chunk in r.iter_content(chunk_size=64 * 1024):
                total += len(chunk)
            assert client.breaker_counts.successes == 1
    assert total == size


def test_streamed_uploads_are_read_as_they_are_sent(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    listener: str, path: str, tmp_path: Path) -> None:
    client = make_client(listener)
    pulled: list[int] = []

    def body() -> Iterator[bytes]:
        for i in range(64):
            pulled.append(i)
            yield _PATTERN

    upload = tmp_path / "upload.bin"
    upload.write_bytes(_PATTERN * 32)
    with _session(client) as session:
        assert session.post(client.origin + path, data=body()).status_code == 200
        with upload.open("rb") as file:
            assert session.put(client.origin + path + "/file", data=file).status_code == 200
    assert len(pulled) == 64
    (seen,) = server.requests(path)
    assert seen["body_sha256"] == hashlib.sha256(_PATTERN * 64).hexdigest()
    (seen_file,) = server.requests(path + "/file")
    assert seen_file["body_sha256"] == hashlib.sha256(_PATTERN * 32).hexdigest()
    if listener == "http":  # a generator is sent chunked, a file with its length
        assert ("transfer-encoding", "chunked") in [tuple(h) for h in seen["headers"]]
        assert ("content-length", str(32 * len(_PATTERN))) in [tuple(h) for h in seen_file["headers"]]


def test_a_503_is_retried_by_the_humus_client(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    server.script(path, [{"status": 503}, {"body": "ok"}])
    client = make_client()
    with _session(client) as session:
        response = session.get(client.origin + path)
    assert (response.status_code, response.text) == (200, "ok")
    assert len(server.requests(path)) == 2


def test_requests_follows_redirects_and_keeps_cookies(server: TestServer,
                                                      make_client: Callable[..., humus_http.Client],
                                                      path: str) -> None:
    server.script(path, [{"status": 302, "headers": [["Location", path + "/there"],
                                                     ["Set-Cookie", "session=s1; Path=/"]]}])
    server.script(path + "/there", [{"body": "arrived"}])
    client = make_client()  # follow_redirects=True: the adapter turns it off per call
    with _session(client) as session:
        response = session.get(client.origin + path)
        not_followed = session.get(client.origin + path, allow_redirects=False)
        assert session.cookies.get("session") == "s1"
    assert (response.status_code, response.text) == (200, "arrived")
    assert [r.status_code for r in response.history] == [302]
    assert not_followed.status_code == 302 and not_followed.is_redirect
    hop = server.requests(path + "/there")[0]
    assert ("cookie", "session=s1") in [tuple(h) for h in hop["headers"]]  # requests' jar, on the next hop


def test_requests_decodes_the_body_it_asked_to_be_compressed(server: TestServer,
                                                             make_client: Callable[..., humus_http.Client],
                                                             path: str) -> None:
    server.script(path, [{"gzip_bomb": 5000}])
    client = make_client()
    with _session(client) as session:
        response = session.get(client.origin + path)
    # requests sent its Accept-Encoding, so the humus client left the body as it came, headers included.
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) < 5000
    assert response.content == bytes(5000)


def test_failures_are_requests_exceptions_caused_by_the_humus_error(
        server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client(max_attempts=1, timeout=5, attempt_timeout=0.3)
    server.script(path + "/slow", [{"delay_ms": 1500}])
    server.script(path + "/reset", [{"reset": "before_headers"}])
    with _session(client) as session:
        with pytest.raises(requests.Timeout) as timeout:
            session.get(client.origin + path + "/slow")
        with pytest.raises(requests.ConnectionError) as reset:
            session.get(client.origin + path + "/reset")
        session.mount("http://", humus_http.requests.Adapter(client))  # every http URL, this client's or not
        with pytest.raises(requests.exceptions.InvalidSchema) as elsewhere:
            session.get("http://127.0.0.1:9/x")
        with pytest.raises(ValueError, match="tls=humus_http.TLS"):
            session.get(client.origin + path, verify=False)
    assert isinstance(timeout.value, requests.exceptions.ReadTimeout)
    assert isinstance(timeout.value.__cause__, humus_http.UpstreamTimeoutError)
    assert isinstance(reset.value.__cause__, humus_http.ProtocolError)
    assert isinstance(elsewhere.value.__cause__, humus_http.CrossOriginError)
    assert timeout.value.request is not None and timeout.value.request.url.endswith("/slow")

    refused = humus_http.Client("http://127.0.0.1:9", timeout=5, max_attempts=1, runtime=client._runtime)
    try:
        with _session(refused) as session:
            with pytest.raises(requests.ConnectionError) as connect:
                session.get("http://127.0.0.1:9/")
    finally:
        refused.close()
    assert isinstance(connect.value.__cause__, humus_http.UpstreamConnectError)


def test_a_refused_certificate_is_an_ssl_error(make_client: Callable[..., humus_http.Client]) -> None:
    client = make_client("untrusted", max_attempts=1)
    with _session(client) as session:
        with pytest.raises(requests.exceptions.SSLError) as caught:
            session.get(client.origin + "/")
    assert isinstance(caught.value.__cause__, humus_http.UpstreamTLSError)


def test_a_body_breaking_off_raises_while_requests_reads_it(server: TestServer,
                                                            make_client: Callable[..., humus_http.Client],
                                                            listener: str, path: str) -> None:
    server.script(path, [{"body_size": 256 * 1024, "reset": "mid_body"}])
    client = make_client(listener, max_attempts=1)
    with _session(client) as session:
        with session.get(client.origin + path, stream=True) as r:
            with pytest.raises(requests.exceptions.ChunkedEncodingError) as caught:
                r.content
    assert any(isinstance(e, humus_http.ProtocolError) for e in _cause_chain(caught.value))


def test_an_open_breaker_is_a_rejection(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    client = make_client(max_attempts=1, trip=humus_http.Trip(consecutive_failures=1),
                         breaker=humus_http.Breaker(open_for=600))
    server.script(path, [{"status": 503}])
    with _session(client) as session:
        assert session.get(client.origin + path).status_code == 503  # the failure that opens the breaker
        with pytest.raises(humus_http.requests.RejectedError) as caught:
            session.get(client.origin + path)
    assert isinstance(caught.value, requests.ConnectionError)
    assert isinstance(caught.value.__cause__, humus_http.CircuitOpenError)
    assert caught.value.retry_after is not None and caught.value.retry_after > 0
    assert len(server.requests(path)) == 1


def test_a_full_bulkhead_is_a_rejection(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    client = make_client(bulkhead=humus_http.Bulkhead(max_concurrent=1, wait=0))
    server.script(path, [{"body_size": 1024 * 1024}])
    with _session(client) as session:
        with session.get(client.origin + path, stream=True) as holding:  # an open stream holds its slot
            with pytest.raises(humus_http.requests.RejectedError) as caught:
                session.get(client.origin + path)
            assert holding.status_code == 200
        assert session.get(client.origin + path).status_code == 200  # the slot is back once it closed
    assert isinstance(caught.value.__cause__, humus_http.BulkheadFullError)
    assert caught.value.retry_after is None


def test_the_adapter_takes_a_blocking_client(make_async_client: Callable[..., humus_http.AsyncClient]) -> None:
    with pytest.raises(TypeError, match="humus_http.Client"):
        humus_http.requests.Adapter(make_async_client())  # type: ignore[arg-type]


def test_closing_the_session_leaves_the_humus_client_open(make_client: Callable[..., humus_http.Client]) -> None:
    client = make_client()
    with _session(client):
        pass
    assert not client.is_closed


def test_importing_humus_http_does_not_import_requests() -> None:
    probe = ("import sys, humus_http\n"
             "assert 'requests' not in sys.modules and 'humus_http.requests' not in sys.modules\n"
             "assert humus_http.requests.Adapter.__name__ == 'Adapter'\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
