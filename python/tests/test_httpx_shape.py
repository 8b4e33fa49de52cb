"""The httpx-shaped parts against the real server, where the probe (test_httpx_probe.py) does not reach: what
humus_http does on its own (credentials kept on the origin, history, deadlines refused, hooks per attempt)
and the errors of a wrong argument."""
from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import humus_http
import pytest
from server_harness import TestServer


def _values(server: TestServer, path: str, header: str) -> list[list[str]]:
    return [[v for k, v in r["headers"] if k == header] for r in server.requests(path)]


def test_authorization_never_leaves_the_origin(server: TestServer, make_client: Callable[..., humus_http.Client],
                                               path: str) -> None:
    elsewhere = f"http://localhost:{server.port('http')}{path}/elsewhere"
    server.script(path, [{"status": 302, "headers": [["Location", elsewhere]]}])
    client = make_client(auth=humus_http.BearerAuth("t0ken"))
    r = client.get(path, follow_redirects=True)
    assert (r.status_code, r.history) == (302, [])  # not followed: another origin
    assert server.requests(path + "/elsewhere") == []
    assert _values(server, path, "authorization") == [["Bearer t0ken"]]
    with pytest.raises(humus_http.CrossOriginError) as caught:
        client.get(elsewhere)
    assert "make a client for the other origin" in str(caught.value)
    assert caught.value.message.startswith("request to http://localhost:")  # the core's, as every binding's

    def move(request: humus_http.Request) -> None:
        request.url = humus_http.URL(elsewhere)  # a hook cannot send the credentials elsewhere either

    client.event_hooks = {"request": [move]}
    with pytest.raises(ValueError, match="changed the url"):  # hooks run per attempt: headers only
        client.get(path)
    assert server.requests(path + "/elsewhere") == []


def test_history_lists_each_redirect_followed(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    server.script(path, [{"status": 308, "headers": [["Location", path + "/2"]]}])
    server.script(path + "/2", [{"status": 302, "headers": [["Location", "/" + path.lstrip("/") + "/3"]]}])
    server.script(path + "/3", [{"body": "end"}])
    client = make_client()
    with client.post(path, content=b"payload") as r:
        assert r.text == "end" and r.url.path == path + "/3"
        assert [(h.status_code, str(h.url)) for h in r.history] == [
            (308, server.url("http", path)), (302, server.url("http", path + "/2"))]
        assert all(h.is_redirect and not h.is_success for h in r.history)
        assert r.request.method == "GET" and "content-type" not in r.request.headers  # a 302 after a POST
    assert len(r.history) == 2  # kept after close()
    assert repr(r.history[0]) == f"<Redirect [308 Permanent Redirect] {server.url('http', path)!r}>"
    unfollowed = make_client(follow_redirects=False).post(path, content=b"payload")
    assert (unfollowed.status_code, unfollowed.is_redirect, unfollowed.history) == (308, True, [])
    assert make_client(follow_redirects=False).post(path, content=b"p", follow_redirects=True).text == "end"


def test_deadlines_are_mandatory(server: TestServer, make_client: Callable[..., humus_http.Client],
                                 path: str) -> None:
    for build in (lambda: humus_http.Client(server.url("http"), timeout=None),  # type: ignore[arg-type]
                  lambda: humus_http.Client.from_settings({"base_url": server.url("http"), "timeout": None}),
                  lambda: humus_http.Timeout(None),  # type: ignore[arg-type]
                  lambda: make_client().get(path, timeout=None)):  # type: ignore[arg-type]
        with pytest.raises(humus_http.ConfigError) as caught:
            build()
        assert "deadlines are mandatory" in str(caught.value) and caught.value.fields == ("timeout",)
        assert "humus_http.Timeout(total" in str(caught.value)
    assert server.requests(path) == []


def test_a_timeout_object_sets_the_three_deadlines(server: TestServer,
                                                   make_client: Callable[..., humus_http.Client],
                                                   path: str) -> None:
    # The answer comes after 5 s, within the total 30 s: only the attempt's 0.3 s can end the call first.
    server.script(path, [{"delay_ms": 5000}])
    client = make_client(timeout=humus_http.Timeout(30.0, attempt=0.3, connect=0.2), max_attempts=1)
    with pytest.raises(humus_http.UpstreamTimeoutError) as caught:
        client.get(path)
    assert caught.value.elapsed is not None and caught.value.attempts == 1
    with pytest.raises(humus_http.ConfigError) as twice:
        make_client(timeout=humus_http.Timeout(3.0, attempt=1.0), attempt_timeout=2.0)
    assert twice.value.fields == ("attempt_timeout",)
    with pytest.raises(humus_http.ConfigError) as per_call:
        client.get(path, timeout=humus_http.Timeout(1.0, attempt=0.5, connect=0.1))
    assert per_call.value.fields == ("timeout.attempt", "timeout.connect")
    assert "client's settings" in str(per_call.value)
    with pytest.raises(humus_http.ConfigError) as order:  # the core still checks the three against each other
        make_client(timeout=humus_http.Timeout(1.0, attempt=2.0))
    assert "attempt_timeout" in order.value.fields


def test_hooks_run_per_attempt(server: TestServer, make_client: Callable[..., humus_http.Client],
                               path: str) -> None:
    server.script(path, [{"status": 503}, {"status": 200}])
    attempts: list[int] = []
    statuses: list[int] = []
    client = make_client(event_hooks={"request": [lambda request: attempts.append(request.attempt)],
                                      "response": [lambda response: statuses.append(response.status_code)]})
    r = client.get(path)
    assert (r.status_code, r.attempts, attempts, statuses) == (200, 2, [1, 2], [503, 200])
    assert client.event_hooks == {"request": client.event_hooks["request"], "response": client.event_hooks["response"]}


def test_a_failing_request_hook_sends_nothing(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    def refuse(request: humus_http.Request) -> None:
        raise PermissionError(f"not {request.method} {request.url.path}")

    with pytest.raises(PermissionError, match=f"not GET {path}"):
        make_client(event_hooks={"request": [refuse]}).get(path)
    assert server.requests(path) == []
    with pytest.raises(humus_http.ConfigError) as caught:
        make_client(event_hooks={"requests": [print]})
    assert caught.value.fields == ("event_hooks.requests",)
    with pytest.raises(humus_http.ConfigError):
        make_client(event_hooks={"response": ["not callable"]})


def test_auth_and_cookies_arguments(server: TestServer, make_client: Callable[..., humus_http.Client],
                                    path: str) -> None:
    client = make_client(auth=("ana", "pw"))
    client.get(path, cookies=[("a", "1")], headers={"Cookie": "given=0"})
    client.get(path, auth=humus_http.BearerAuth("tok"))
    assert _values(server, path, "authorization") == [
        ["Basic " + base64.b64encode(b"ana:pw").decode()], ["Bearer tok"]]
    assert _values(server, path, "cookie")[0] == ["given=0; a=1"]
    assert "pw" not in repr(humus_http.BasicAuth("ana", "pw")) and "tok" not in repr(humus_http.BearerAuth("tok"))
    with pytest.raises(TypeError, match="returns the Request"):
        client.get(path, auth=lambda request: "nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="auth must be"):
        client.get(path, auth=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be sent in a Cookie header"):
        client.get(path, cookies={"a": "1;b=2"})
    with pytest.raises(TypeError, match="one of content=, json= or data=/files="):
        client.post(path, data={"a": "1"}, json={})
    with pytest.raises(TypeError, match="use content="):
        client.post(path, data=b"raw")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword argument 'follow'"):
        client.get(path, follow=True)  # type: ignore[call-arg]


def test_elapsed_has_microseconds(make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client()
    elapsed = [client.get(path).elapsed for _ in range(5)]
    assert all(e.total_seconds() > 0 for e in elapsed)
    assert any(e.microseconds % 1000 for e in elapsed)  # not whole milliseconds


def test_the_httpx_exception_names() -> None:
    h = humus_http
    assert h.HTTPError is h.UpstreamError and h.RemoteProtocolError is h.ProtocolError
    for error, bases in ((h.UpstreamTimeoutError, (h.TimeoutException, h.TransportError, h.RequestError, TimeoutError)),
                         (h.UpstreamConnectError, (h.ConnectError, h.TransportError, h.RequestError)),
                         (h.UpstreamTLSError, (h.ConnectError,)), (h.ProtocolError, (h.TransportError,)),
                         (h.CircuitOpenError, (h.RequestError,)), (h.BulkheadFullError, (h.RequestError,)),
                         (h.CancelledCallError, (h.RequestError,)), (h.ResponseTooLargeError, (h.RequestError,))):
        assert all(issubclass(error, base) for base in bases), error
    for outside in (h.HTTPStatusError, h.ConfigError, h.CrossOriginError, h.InvalidRequestError):
        assert issubclass(outside, h.HTTPError) and not issubclass(outside, h.RequestError)


def test_no_module_level_calls() -> None:
    with pytest.raises(AttributeError, match=r"no module-level post\(\).*humus_http.Client\("):
        humus_http.post  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        humus_http.nothing  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(humus_http, "get")


def test_url_and_mutable_headers() -> None:
    url = humus_http.URL("https://[::1]:443/a%2Fb?x=1#frag")
    assert (url.host, url.port, url.path, url.query, url.fragment, url.netloc) == (
        "::1", None, "/a/b", b"x=1", "frag", b"[::1]")
    assert url.join("../c") == "https://[::1]:443/c" and hash(url) == hash(str(url))
    headers = humus_http.MutableHeaders([("A", "1"), ("b", "2"), ("a", "3")])
    headers["a"] = "9"
    assert headers.multi_items() == [("A", "9"), ("b", "2")]
    del headers["B"]
    headers["New"] = "x"
    assert headers.multi_items() == [("A", "9"), ("New", "x")] and headers["new"] == "x"
    with pytest.raises(KeyError):
        del headers["missing"]


def test_response_request_without_hooks(make_client: Callable[..., humus_http.Client], path: str) -> None:
    client = make_client(headers={"X-Service": "checkout"})
    request = client.get(path, params={"q": "1"}, headers={"X-Call": "c"}).request
    assert (request.method, request.url.query, request.attempt) == ("GET", b"q=1", 1)
    assert (request.headers["x-service"], request.headers["x-call"]) == ("checkout", "c")


def test_async_client_forms_auth_and_hooks(server: TestServer,
                                           make_async_client: Callable[..., humus_http.AsyncClient],
                                           path: str) -> None:
    seen: list[Any] = []

    async def on_response(response: humus_http.Response) -> None:
        await asyncio.sleep(0)
        seen.append(response.status_code)

    async def main() -> None:
        client = make_async_client(auth=("u", "p"), event_hooks={"response": [on_response]})
        r = await client.post(path, data={"a": "1"}, files={"f": ("f.txt", b"x")}, cookies={"c": "1"})
        assert r.status_code == 200 and r.request.headers["content-type"].startswith("multipart/form-data")
        sync_copy = humus_http.Client.from_client(client)
        assert sync_copy.auth is client.auth and sync_copy.follow_redirects
        sync_copy.close()

    asyncio.run(main())
    (record,) = server.requests(path)
    assert seen == [200]
    assert {k: v for k, v in record["headers"] if k in ("authorization", "cookie")} == {
        "authorization": "Basic " + base64.b64encode(b"u:p").decode(), "cookie": "c=1"}
