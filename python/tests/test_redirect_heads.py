"""Each redirect hop's head in Response.history (headers and HTTP version, as a Response gives its own), and a
header whose value is None left out of the request (docs/bindings.md §17.3): the caller's, the configured ones and
the client's own (User-Agent, Accept, Accept-Encoding); Host and the framing headers cannot be left out."""
from __future__ import annotations

from collections.abc import Callable

import humus_http
import pytest
from server_harness import TestServer


def _names(record: dict[str, object]) -> list[str]:
    return [name for name, _ in record["headers"]]  # type: ignore[attr-defined]


def test_each_hop_of_a_chain_has_its_head(server: TestServer, make_client: Callable[..., humus_http.Client],
                                          listener: str, path: str) -> None:
    server.script(f"{path}/a", [{"status": 301, "headers": [["Location", f"{path}/b"], ["X-Hop", "a"],
                                                             ["Set-Cookie", "one=1"], ["Set-Cookie", "two=2"]]}])
    server.script(f"{path}/b", [{"status": 307, "headers": [["Location", f"{path}/c"], ["X-Hop", "b"]]}])
    server.script(f"{path}/c", [{"status": 200, "headers": [["X-Hop", "final"]], "body": "ok"}])
    response = make_client(listener).get(f"{path}/a")
    version = "HTTP/2" if listener == "https" else "HTTP/1.1"
    assert response.status_code == 200
    assert response.http_version == version
    first, second = response.history
    assert (first.status_code, second.status_code) == (301, 307)
    assert (first.http_version, second.http_version) == (version, version)
    assert first.headers["x-hop"] == "a"
    assert first.headers["Location"] == f"{path}/b"
    assert first.headers.get_list("set-cookie") == ["one=1", "two=2"]  # repeated fields kept, in order
    assert second.headers["x-hop"] == "b"
    assert "set-cookie" not in second.headers
    assert response.headers["x-hop"] == "final"  # the final response's own, not a hop's
    response.close()
    assert [r.headers["x-hop"] for r in response.history] == ["a", "b"]  # kept once closed


def test_no_redirect_no_history(make_client: Callable[..., humus_http.Client], path: str) -> None:
    response = make_client().get(path)
    assert response.history == []


def test_a_redirect_made_by_hand_has_no_head() -> None:
    redirect = humus_http.Redirect(302, "http://example.test/a")
    assert redirect.headers == humus_http.Headers()
    assert redirect.http_version == ""


def test_none_leaves_out_the_clients_own_headers(server: TestServer, make_client: Callable[..., humus_http.Client],
                                                 listener: str, path: str) -> None:
    client = make_client(listener)
    client.get(path)
    client.get(path, headers={"User-Agent": None, "Accept": None, "Accept-Encoding": None, "X-Kept": "1"})
    plain, left_out = server.requests(path)
    assert {"user-agent", "accept", "accept-encoding"} <= set(_names(plain))  # what None leaves out is sent else
    assert not {"user-agent", "accept", "accept-encoding"} & set(_names(left_out))
    assert ("x-kept", "1") in [tuple(h) for h in left_out["headers"]]


def test_none_leaves_out_a_configured_header(server: TestServer, make_client: Callable[..., humus_http.Client],
                                             path: str) -> None:
    client = make_client(headers={"X-Service": "checkout"})
    response = client.get(path, headers=[("X-Service", None)])
    assert "X-Service" not in response.request.headers
    client.get(path)
    left_out, configured = server.requests(path)
    assert "x-service" not in _names(left_out)
    assert ("x-service", "checkout") in [tuple(h) for h in configured["headers"]]


def test_a_default_header_of_none_is_sent_by_no_call(server: TestServer,
                                                     make_client: Callable[..., humus_http.Client],
                                                     path: str) -> None:
    client = make_client(headers={"User-Agent": None, "X-Service": "checkout"})
    client.get(path)
    client.get(path, params={"q": "1"})
    client.get(path, headers={"User-Agent": "mine/1"})  # a call's own value is sent
    bare, with_options, own = server.requests(path)
    for record in (bare, with_options):
        assert "user-agent" not in _names(record)
        assert ("x-service", "checkout") in [tuple(h) for h in record["headers"]]
    assert [v for k, v in own["headers"] if k == "user-agent"] == ["mine/1"]


def test_none_with_event_hooks_and_auth(server: TestServer, make_client: Callable[..., humus_http.Client],
                                        path: str) -> None:
    seen: list[humus_http.Request] = []
    client = make_client(headers={"Accept": None}, event_hooks={"request": [seen.append]})
    response = client.get(path, headers={"User-Agent": None}, auth=("user", "pass"))
    (record,) = server.requests(path)
    assert not {"user-agent", "accept"} & set(_names(record))
    assert "authorization" in _names(record)
    assert "User-Agent" not in seen[0].headers
    assert "User-Agent" not in response.request.headers


@pytest.mark.parametrize("name", ["Host", "Content-Length", "Transfer-Encoding"])
def test_host_and_framing_cannot_be_left_out(server: TestServer, make_client: Callable[..., humus_http.Client],
                                             path: str, name: str) -> None:
    client = make_client()
    with pytest.raises(humus_http.InvalidRequestError) as caught:
        client.get(path, headers={name: None})
    assert isinstance(caught.value, ValueError)
    assert name in caught.value.fields
    assert server.requests(path) == []
    with pytest.raises(humus_http.InvalidRequestError):
        make_client(headers={name: None}).get(path)
    assert server.requests(path) == []


@pytest.mark.asyncio
async def test_async_client_leaves_out_none(server: TestServer,
                                            make_async_client: Callable[..., humus_http.AsyncClient],
                                            path: str) -> None:
    client = make_async_client(headers={"Accept": None})
    await client.get(path, headers={"User-Agent": None})
    (record,) = server.requests(path)
    assert not {"user-agent", "accept"} & set(_names(record))


def test_requests_sends_no_accept_it_left_out(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              path: str) -> None:
    requests = pytest.importorskip("requests")
    import humus_http.requests

    client = make_client()
    with requests.Session() as session:
        session.mount(client.origin + "/", humus_http.requests.Adapter(client))
        session.get(client.origin + path)
        session.headers["Accept"] = None  # requests drops the header before the adapter sees the request
        session.get(client.origin + path, headers={"User-Agent": None})
    kept, left_out = server.requests(path)
    assert [v for k, v in kept["headers"] if k == "accept"] == ["*/*"]  # requests' own
    assert "accept" not in _names(left_out)
