"""Each redirect hop's head in Response.history: headers and HTTP version, as a Response gives its own
(docs/bindings.md §17.3)."""
from __future__ import annotations

from collections.abc import Callable

import humus_http
from server_harness import TestServer


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

