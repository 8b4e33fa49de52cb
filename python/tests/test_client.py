"""The blocking client against the real server: the httpx-shaped Response, methods, bodies, URLs, headers."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import humus_http
import pytest
from server_harness import TestServer


def test_response_is_shaped_like_httpx(server: TestServer, make_client: Callable[..., humus_http.Client],
                                       listener: str, path: str) -> None:
    server.script(path, [{"status": 200, "body": '{"ok": true, "name": "caf\u00e9"}',
                          "headers": [["Content-Type", "application/json; charset=utf-8"], ["X-Multi", "a"],
                                      ["X-Multi", "b"]]}])
    client = make_client(listener)
    with client.get(path) as r:
        assert r.status_code == 200
        assert r.reason_phrase == "OK"
        assert r.is_success and not r.is_error
        assert r.http_version == ("HTTP/2" if listener == "https" else "HTTP/1.1")
        assert r.url == server.url(listener, path)
        assert r.attempts == 1
        assert r.headers["content-type"] == "application/json; charset=utf-8"
        assert r.headers["X-MULTI"] == "a, b"
        assert r.headers.get_list("x-multi") == ["a", "b"]
        assert ("X-Multi", "b") in [(k.title(), v) for k, v in r.headers.multi_items()]
        assert "x-multi" in r.headers and "x-missing" not in r.headers
        assert r.headers.get("x-missing") is None
        assert r.content == '{"ok": true, "name": "caf\u00e9"}'.encode()
        assert r.encoding == "utf-8"
        assert r.text == '{"ok": true, "name": "caf\u00e9"}'
        assert r.json() == {"ok": True, "name": "caf\u00e9"}
        assert r.raise_for_status() is r
        assert b"".join(r.iter_bytes(chunk_size=4)) == r.content
        assert len(list(r.iter_bytes(chunk_size=4))) == (len(r.content) + 3) // 4
        assert list(r.iter_bytes()) == [r.content]
        assert repr(r) == "<Response [200 OK]>"
    assert r.is_closed
    assert r.json()["ok"] is True  # what was read stays readable after close()


def test_close_before_reading_keeps_everything(server: TestServer, make_client: Callable[..., humus_http.Client],
                                               path: str) -> None:
    server.script(path, [{"status": 201, "body": "made", "headers": [["Location", "/x/1"]]}])
    r = make_client().post(path, content=b"x")
    r.close()
    r.close()  # idempotent
    assert (r.status_code, r.content, r.headers["location"], r.http_version, r.attempts) == \
        (201, b"made", "/x/1", "HTTP/1.1", 1)


def test_text_uses_the_declared_charset(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    server.script(path, [{"body": "\u00e9t\u00e9", "headers": [["Content-Type", "text/plain; charset=utf-8"]]}])
    assert make_client().get(path).text == "\u00e9t\u00e9"


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "DELETE", "POST", "PUT", "PATCH"])
def test_every_method(server: TestServer, make_client: Callable[..., humus_http.Client], listener: str,
                      method: str, path: str) -> None:
    client = make_client(listener)
    call: Callable[..., humus_http.Response] = getattr(client, method.lower())
    r = call(path, params={"q": "a b", "n": [1, 2], "flag": True})
    assert r.status_code == 200
    records = server.requests(path)
    assert [(rec["method"], rec["query"]) for rec in records] == [(method, "q=a+b&n=1&n=2&flag=true")]
    assert records[0]["protocol"] == ("2" if listener == "https" else "1.1")
    if method == "HEAD":
        assert r.content == b""
    else:
        assert r.json()["method"] == method


def test_bodies_json_and_content(server: TestServer, make_client: Callable[..., humus_http.Client],
                                 listener: str, path: str) -> None:
    client = make_client(listener)
    client.post(path, json={"amount": 10, "currency": "\u20ac"})
    client.put(path, content="text body")
    client.patch(path, content=b"\x00\x01\x02", headers={"Content-Type": "application/octet-stream"})
    client.post(path, json=[1], headers={"content-type": "application/vnd.x+json"})
    records = server.requests(path)
    sent = json.dumps({"amount": 10, "currency": "\u20ac"}, ensure_ascii=False, separators=(",", ":")).encode()
    assert records[0]["body_size"] == len(sent)
    assert dict(records[0]["headers"])["content-type"] == "application/json"
    assert records[1]["body_size"] == len("text body")
    assert records[2]["body_size"] == 3
    assert dict(records[2]["headers"])["content-type"] == "application/octet-stream"
    assert [v for k, v in records[3]["headers"] if k == "content-type"] == ["application/vnd.x+json"]
    with pytest.raises(TypeError, match="content= or json="):
        client.post(path, content=b"x", json={})


def test_urls_join_the_base_path(server: TestServer, runtime: humus_http.Runtime, path: str) -> None:
    with humus_http.Client(server.url("http", "/api/v1"), runtime=runtime) as client:
        client.get("users/7")
        client.get("/users/8", params="a=1")
        client.get(server.url("http", path))  # absolute, same origin
    paths = [r["path"] for r in server.requests() if r["path"].startswith("/api/v1/users")][-2:]
    assert paths == ["/api/v1/users/7", "/api/v1/users/8"]
    assert len(server.requests(path)) == 1


def test_headers_of_the_client_and_the_call(server: TestServer, make_client: Callable[..., humus_http.Client],
                                            listener: str, path: str) -> None:
    client = make_client(listener, headers={"X-Service": "checkout"})
    client.get(path, headers=[("X-Trace", "1"), ("X-Trace", "2")])
    client.get(path, headers=humus_http.Headers({"X-One": "1"}))
    first, second = server.requests(path)
    assert ("x-service", "checkout") in [tuple(h) for h in first["headers"]]
    assert [v for k, v in first["headers"] if k == "x-trace"] == ["1", "2"]
    assert ("x-one", "1") in [tuple(h) for h in second["headers"]]


def test_header_injection_is_refused_before_sending(server: TestServer,
                                                    make_client: Callable[..., humus_http.Client],
                                                    path: str) -> None:
    client = make_client()
    with pytest.raises(humus_http.InvalidRequestError) as caught:
        client.get(path, headers={"X-Bad": "a\r\nInjected: yes"})
    assert isinstance(caught.value, ValueError)
    assert caught.value.status == "HUMUS_E_INVALID_ARGUMENT"
    assert "X-Bad" in caught.value.fields
    with pytest.raises(ValueError, match="NUL"):
        client.get(path, headers={"X-Bad": "a\x00b"})
    with pytest.raises(TypeError, match="must be str"):
        client.get(path, headers={"X-Bad": 1})  # type: ignore[dict-item]
    assert server.requests(path) == []


# F109, S11: a NUL is refused as CR and LF are, an invalid request before any I/O. A C string ends at a NUL, so
# "/x\0evil" must not go out as "/x" (as it did before the extension checked).
def test_a_nul_in_the_url_or_the_method_is_refused_before_sending(server: TestServer,
                                                                  make_client: Callable[..., humus_http.Client],
                                                                  path: str) -> None:
    client = make_client()
    with pytest.raises(humus_http.InvalidRequestError, match="url contains a NUL") as caught:
        client.get(path + "\x00evil")
    assert caught.value.status == "HUMUS_E_INVALID_ARGUMENT" and caught.value.fields == ("url",)
    with pytest.raises(humus_http.InvalidRequestError, match="url contains a NUL"):
        client.get(client.base_url.rstrip("/") + path + "\x00")
    with pytest.raises(humus_http.InvalidRequestError, match="method contains a NUL") as caught:
        client.request("GE\x00T", path)
    assert caught.value.fields == ("method",)
    with pytest.raises(humus_http.InvalidRequestError, match="url contains a NUL"):
        with client.stream("GET", path + "\x00"):
            pass
    with pytest.raises(humus_http.InvalidRequestError, match="X-Bad: the value contains a NUL") as caught:
        client.get(path, headers={"X-Bad": "a\x00b"})
    assert caught.value.fields == ("X-Bad",)
    assert server.requests(path) == []


@pytest.mark.parametrize("name, value", [("Host", "evil.example"), ("Content-Length", "2"),
                                         ("Transfer-Encoding", "chunked"), ("Connection", "close"), ("TE", "x"),
                                         (":path", "/x"), ("X-Ctl", "a\x01b"), ("X-Del", "a\x7fb")])
def test_headers_the_client_owns_are_refused_before_sending(server: TestServer,
                                                            make_client: Callable[..., humus_http.Client],
                                                            path: str, name: str, value: str) -> None:
    # docs/transport.md §10.5: the same rule as in C, Go, Rust and the CLI (one check in the core).
    with pytest.raises(humus_http.InvalidRequestError) as caught:
        make_client().post(path, content=b"{}", headers={name: value})
    assert caught.value.fields == (name,)
    assert name in caught.value.message
    assert server.requests(path) == []


def test_raise_for_status(server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    server.script(path, [{"status": 404, "body": "no such thing"}])
    r = make_client().get(path)
    assert r.status_code == 404 and r.is_error
    with pytest.raises(humus_http.HTTPStatusError) as caught:
        r.raise_for_status()
    error = caught.value
    assert isinstance(error, humus_http.UpstreamError)
    assert error.response is r and error.status_code == 404
    assert str(error) == f"Client error '404 Not Found' for url '{r.url}'"


def test_closed_client_refuses_calls(make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client()
    with client as same:
        assert same is client
        assert same.get(path).status_code == 200
    assert client.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        client.get(path)
    client.close()  # idempotent


def test_per_call_keyword_types(make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client()
    kwargs: dict[str, Any] = {"idempotency_key": "k-1", "retry": False, "timeout": 2.5}
    assert client.request("get", path, **kwargs).json()["method"] == "GET"


def test_the_call_context_travels(server: TestServer, make_client: Callable[..., humus_http.Client],
                                  listener: str, path: str) -> None:
    """docs/telemetry.md §12: the request being served's trace headers and request id go on; its bearer token only with
    forward_authorization; the call's own headers win."""
    client = make_client(listener)
    incoming = {"Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "baggage": "tenant=acme", "X-Request-ID": "req-9", "Authorization": "Bearer t0k",
                "Accept": "text/html"}
    client.get(path, context=incoming)
    client.get(path, context=humus_http.CallContext(tracestate="v=1", request_id="req-10"),
               headers={"X-Request-ID": "mine"})
    first, second = server.requests(path)
    sent = dict((k, v) for k, v in first["headers"])
    assert sent["traceparent"] == incoming["Traceparent"]
    assert sent["baggage"] == "tenant=acme"
    assert sent["x-request-id"] == "req-9"
    assert "authorization" not in sent  # not without forward_authorization
    assert sent.get("accept") != "text/html"  # only the context's headers are taken from a mapping
    sent = dict((k, v) for k, v in second["headers"])
    assert sent["tracestate"] == "v=1"
    assert sent["x-request-id"] == "mine"


def test_a_bearer_token_travels_only_when_asked(server: TestServer,
                                                make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client("http", forward_authorization=True)
    client.get(path, context=humus_http.CallContext(authorization="Bearer t0k"))
    client.get(path, context=humus_http.CallContext(authorization="Basic dTpw"))
    first, second = server.requests(path)
    assert ("authorization", "Bearer t0k") in [tuple(h) for h in first["headers"]]
    assert "authorization" not in [h[0] for h in second["headers"]]


def test_a_cancel_that_is_not_a_token_is_refused_before_sending(server: TestServer,
                                                                make_client: Callable[..., humus_http.Client],
                                                                path: str) -> None:
    client = make_client("http")
    for wrong in (object(), "stop", True):
        with pytest.raises(TypeError, match="cancel= takes a humus_http.CancelToken"):
            client.get(path, cancel=wrong)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="cancel= takes a humus_http.CancelToken"):
            with client.stream("GET", path, cancel=wrong):  # type: ignore[arg-type]
                pass
    assert server.requests(path) == []
    assert client.get(path, cancel=humus_http.CancelToken()).status_code == 200


def test_a_bad_context_is_refused(make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client("http")
    with pytest.raises(TypeError, match="context"):
        client.get(path, context=42)  # type: ignore[arg-type]
    with pytest.raises(humus_http.UpstreamError, match="traceparent"):
        client.get(path, context=humus_http.CallContext(traceparent="a\r\nInjected: 1"))
