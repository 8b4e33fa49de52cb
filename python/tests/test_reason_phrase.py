"""Response.reason_phrase as httpx gives it: the phrase the server sent over HTTP/1.1 (a custom one as it is, an
empty one empty, bytes past ASCII dropped), the standard phrase over HTTP/2, which has none."""
from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import humus_http
import pytest
from server_harness import TestServer


@pytest.fixture
def answering() -> Iterator[Callable[..., str]]:
    """answering(status_line, redirect=None) -> the URL of a loopback peer answering every request with that
    status line; with `redirect` (a status line), a request for /from gets it with a Location to /to first."""
    socks: list[socket.socket] = []

    def start(status_line: bytes, redirect: bytes | None = None) -> str:
        sock = socket.create_server(("127.0.0.1", 0))
        socks.append(sock)

        def serve() -> None:
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                with conn:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if redirect is not None and data.startswith(b"GET /from "):
                        conn.sendall(redirect + b"\r\nLocation: /to\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                    else:
                        conn.sendall(status_line + b"\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for sock in socks:
        sock.close()


@pytest.mark.parametrize(("line", "phrase"), [(b"HTTP/1.1 200 OK", "OK"),
                                              (b"HTTP/1.1 299 Fine, Thanks", "Fine, Thanks"),
                                              (b"HTTP/1.1 404 Not Here", "Not Here"), (b"HTTP/1.1 200 ", ""),
                                              (b"HTTP/1.1 503 Busy \xe2\x80\x94 later", "Busy  later")])
def test_the_phrase_is_the_one_sent(answering: Callable[..., str], line: bytes, phrase: str) -> None:
    base = answering(line)
    with humus_http.Client(base, max_attempts=1) as client:
        response = client.get("/r")
        assert response.reason_phrase == phrase
        response.close()
        assert response.reason_phrase == phrase  # kept once closed
        assert repr(response) == f"<Response [{response.status_code} {phrase}]>"


def test_http2_has_the_standard_phrase_as_httpx_gives_it(server: TestServer,
                                                          make_client: Callable[..., humus_http.Client]) -> None:
    server.script("/teapot", [{"status": 418}])
    server.script("/odd", [{"status": 299}])
    client = make_client("https")
    assert client.get("/teapot").reason_phrase == "I'm a Teapot"
    assert client.get("/odd").reason_phrase == ""


def test_httpx_through_the_transport_gets_the_phrase_as_sent(answering: Callable[..., str]) -> None:
    httpx = pytest.importorskip("httpx")
    import humus_http.httpx

    base = answering(b"HTTP/1.1 299 Fine, Thanks")
    with humus_http.Client(base, max_attempts=1) as client, \
            httpx.Client(base_url=base, transport=humus_http.httpx.Transport(client)) as http:
        assert http.get("/r").reason_phrase == "Fine, Thanks"


def test_a_redirect_in_history_has_its_phrase_as_sent(answering: Callable[..., str], server: TestServer,
                                                      make_client: Callable[..., humus_http.Client]) -> None:
    base = answering(b"HTTP/1.1 200 Here", redirect=b"HTTP/1.1 302 Go There")
    with humus_http.Client(base, max_attempts=1) as client:
        response = client.get("/from")
        assert [(r.status_code, r.reason_phrase) for r in response.history] == [(302, "Go There")]
        assert response.reason_phrase == "Here"
    server.script("/h2-from", [{"status": 302, "headers": [["Location", "/h2-to"]]}])
    response = make_client("https").get("/h2-from")
    assert [(r.status_code, r.reason_phrase) for r in response.history] == [(302, "Found")]  # HTTP/2: the standard
