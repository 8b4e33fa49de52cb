"""The httpx probe: the idioms httpx users write first, run as the same code under httpx and under humus_http
against the test server; each must behave the same — what the server saw and what the code got back — except
the documented design differences (docs/bindings.md §17.3), each of which must fail under humus_http with a message
naming what to write instead. Prints "httpx probe: N idioms, N same, K documented differences" in the summary.

Every idiom is a function of the module under test (``hx``: httpx or humus_http) and an Env; it returns what it
observed. httpx comes from python/requirements-test.txt; without it the probe skips.
"""
from __future__ import annotations

import asyncio
import io
import socket
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import humus_http
import pytest
from server_harness import TestServer

httpx: ModuleType | None
try:
    import httpx
except ImportError:  # the probe skips
    httpx = None


@dataclass
class Env:
    """What an idiom runs against: the server's plain listener, a path of its own, another origin."""

    server: TestServer
    path: str
    _seen_before: int = 0  # the server's records when this run started

    @property
    def base(self) -> str:
        return str(self.server.url("http"))

    @property
    def url(self) -> str:
        return str(self.server.url("http", self.path))

    @property
    def other_origin(self) -> str:
        """The same listener by name instead of address: another origin."""
        return f"http://localhost:{self.server.port('http')}"

    def script(self, *steps: dict[str, Any], path: str | None = None) -> None:
        self.server.script(path or self.path, list(steps))

    def start(self) -> None:
        self._seen_before = len(self.server.requests())

    def seen(self, *headers: str, path: str | None = None) -> list[dict[str, Any]]:
        """The requests to ``path`` (default: the idiom's) since this run started: method, query, body hash and
        size, and the values of ``headers``."""
        wanted = path or self.path
        records = [r for r in self.server.requests()[self._seen_before:] if r["path"] == wanted]
        return [{"method": r["method"], "query": r["query"], "body_sha256": r["body_sha256"],
                 "body_size": r["body_size"],
                 **{h: [v for k, v in r["headers"] if k == h] for h in headers}} for r in records]


Idiom = Callable[[ModuleType, Env], Any]
IDIOMS: dict[str, Idiom] = {}


def idiom(fn: Idiom) -> Idiom:
    IDIOMS[fn.__name__] = fn
    return fn


# --- the same under both ----------------------------------------------------------------------------------

@idiom
def get_with_params(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "ok"})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path, params={"q": "a b&c", "n": 2, "tags": ["x", "y"], "flag": True})
    return r.status_code, r.text, env.seen()[0]["query"]


@idiom
def get_params_as_pairs(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path, params=[("a", "1"), ("a", "2")])
    return r.json()["query"], str(r.url).endswith("?a=1&a=2")


@idiom
def json_body_of_the_response(hx: ModuleType, env: Env) -> Any:
    env.script({"body": '{"id": 7, "name": "caf\u00e9", "tags": ["a"]}',
                "headers": [["Content-Type", "application/json"]]})
    with hx.Client(base_url=env.base) as client:
        return client.get(env.path).json()


@idiom
def raise_for_status_then_json(hx: ModuleType, env: Env) -> Any:
    env.script({"body": '{"ok": true}'})
    with hx.Client(base_url=env.base) as client:
        return client.get(env.path).raise_for_status().json()


@idiom
def text_content_encoding(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "d\u00e9j\u00e0 vu", "headers": [["Content-Type", "text/plain; charset=utf-8"]]})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
    return r.text, r.content, r.encoding


@idiom
def response_headers_case_insensitive(hx: ModuleType, env: Env) -> Any:
    env.script({"headers": [["X-Request-Id", "r-1"], ["Set-Cookie", "a=1"], ["Set-Cookie", "b=2"]]})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
    return (r.headers["x-request-id"], r.headers["X-REQUEST-ID"], "x-request-id" in r.headers,
            r.headers.get("x-missing"), r.headers.get("x-missing", "dflt"), r.headers.get_list("set-cookie"),
            [(k.lower(), v) for k, v in r.headers.multi_items() if k.lower() == "set-cookie"])


@idiom
def request_headers_dict(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.get(env.path, headers={"X-Api-Key": "k1", "Accept": "application/json"})
    return env.seen("x-api-key", "accept")


@idiom
def request_headers_list_repeated(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.get(env.path, headers=[("X-Tag", "a"), ("X-Tag", "b")])
    return env.seen("x-tag")


@idiom
def client_default_headers(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base, headers={"X-Client": "checkout"}) as client:
        client.get(env.path)
        client.get(env.path, headers={"X-Client": "override"})
    return env.seen("x-client")


@idiom
def post_content_bytes(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 201})
    with hx.Client(base_url=env.base) as client:
        r = client.post(env.path, content=b"\x00raw bytes\xff")
    return r.status_code, env.seen("content-type")


@idiom
def post_content_str(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.post(env.path, content="caf\u00e9")
    return env.seen("content-type")


@idiom
def post_json(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        r = client.post(env.path, json={"amount": 10, "note": "\u00fc", "items": [1, 2.5, None, True]})
    return r.json()["method"], env.seen("content-type")


@idiom
def post_form_data(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.post(env.path, data={"user": "ana mar\u00eda", "roles": ["a", "b"], "n": 3, "on": False})
    return env.seen("content-type")


@idiom
def post_files_multipart(hx: ModuleType, env: Env) -> Any:
    # A fixed boundary (httpx takes it from the Content-Type given): the bodies must then be byte for byte equal.
    with hx.Client(base_url=env.base) as client:
        client.post(env.path, data={"kind": "avatar"},
                    files={"image": ("me.png", b"\x89PNG...", "image/png"), "notes": ("n.txt", "hello")},
                    headers={"Content-Type": "multipart/form-data; boundary=probe-boundary"})
    return env.seen("content-type")


@idiom
def post_files_file_object(hx: ModuleType, env: Env) -> Any:
    upload = io.BytesIO(b"a,b\n1,2\n")
    upload.name = "/tmp/report.csv"
    with hx.Client(base_url=env.base) as client:
        client.post(env.path, files=[("report", upload), ("raw", ("blob", b"\x01\x02", None))],
                    headers={"Content-Type": "multipart/form-data; boundary=b0undary"})
    return env.seen("content-type")


@idiom
def post_files_own_boundary(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.post(env.path, files={"f": ("a.txt", b"abc")})
    (seen,) = env.seen("content-type")
    content_type = seen.pop("content-type")[0]
    kind, _, boundary = content_type.partition("; boundary=")
    return kind, len(boundary), seen["body_size"]


@idiom
def other_methods(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 204})
    with hx.Client(base_url=env.base) as client:
        statuses = [client.put(env.path, json={}).status_code, client.patch(env.path, content=b"x").status_code,
                    client.delete(env.path).status_code, client.head(env.path).status_code,
                    client.options(env.path).status_code, client.request("PURGE", env.path).status_code]
    return statuses, [r["method"] for r in env.seen()]


@idiom
def raise_for_status_error(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 404, "body": "nope"})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
        try:
            r.raise_for_status()
        except hx.HTTPStatusError as error:
            return (error.response.status_code, error.response.text, isinstance(error, hx.HTTPError),
                    str(error).splitlines()[0])
    return None


@idiom
def status_predicates(hx: ModuleType, env: Env) -> Any:
    out = []
    with hx.Client(base_url=env.base) as client:
        for status in (200, 201, 404, 503):
            env.script({"status": status})
            r = client.get(env.path)
            out.append((r.status_code, r.reason_phrase, r.is_success, r.is_error, r.is_client_error,
                        r.is_server_error, r.is_redirect))
    return out


@idiom
def response_url_object(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path + "/caf%C3%A9", params={"page": 2})
    return str(r.url), r.url.path, r.url.query, r.url.host, r.url.port, r.url.scheme, r.url == str(r.url)


@idiom
def response_request(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        r = client.post(env.path, json=[1], headers={"X-Trace": "t1"})
    return r.request.method, str(r.request.url), r.request.headers["x-trace"], r.request.headers["content-type"]


@idiom
def base_url_relative_paths(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base + env.path.lstrip("/") + "/api") as client:
        return [client.get(p).json()["path"] for p in ("items", "/items", "items/1?x=1")]


@idiom
def client_context_manager(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        inside = client.is_closed
        status = client.get(env.path).status_code
    client.close()  # idempotent
    return inside, status, client.is_closed


@idiom
def stream_iter_bytes(hx: ModuleType, env: Env) -> Any:
    env.script({"body_size": 200_000, "headers": [["X-Size", "200000"]]})
    with hx.Client(base_url=env.base) as client:
        with client.stream("GET", env.path) as r:
            early = (r.status_code, r.headers["x-size"])
            total = sum(len(chunk) for chunk in r.iter_bytes())
    return early, total


@idiom
def stream_iter_lines_and_text(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "one\ntwo\r\nthree\n\u00e9", "headers": [["Content-Type", "text/plain; charset=utf-8"]]})
    with hx.Client(base_url=env.base) as client:
        with client.stream("GET", env.path) as r:
            lines = list(r.iter_lines())
        with client.stream("GET", env.path) as r:
            text = "".join(r.iter_text())
        with client.stream("GET", env.path) as r:
            read = r.read()
    return lines, text, read


@idiom
def iter_bytes_chunk_size(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "abcdefghij"})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
    return list(r.iter_bytes(chunk_size=4))


@idiom
def encoding_as_the_response_names_it(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "caf\u00e9", "headers": [["Content-Type", 'text/plain; charset="ISO-8859-1"']]})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
    return r.encoding, r.text


@idiom
def stream_iter_raw(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "abcdefghij"})
    with hx.Client(base_url=env.base) as client:
        with client.stream("GET", env.path) as r:
            return b"".join(r.iter_raw()), r.headers["content-length"]


@idiom
def http_version(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        return client.get(env.path).http_version


@idiom
def auth_tuple_is_basic(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        client.get(env.path, auth=("ana", "s3cr\u00e9t"))
    return env.seen("authorization")


@idiom
def auth_basic_class_on_the_client(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base, auth=hx.BasicAuth("svc", "pw")) as client:
        client.get(env.path)
        client.get(env.path, auth=None)  # per call: none
    return env.seen("authorization")


@idiom
def auth_callable_sets_headers(hx: ModuleType, env: Env) -> Any:
    def sign(request: Any) -> Any:
        request.headers["Authorization"] = f"Token {request.method.lower()}"
        request.headers["X-Signed"] = "yes"
        return request

    with hx.Client(base_url=env.base) as client:
        client.post(env.path, content=b"x", auth=sign)
    return env.seen("authorization", "x-signed")


@idiom
def auth_kept_on_a_same_origin_redirect(hx: ModuleType, env: Env) -> Any:
    target = env.path + "/next"
    env.script({"status": 302, "headers": [["Location", target]]})
    with hx.Client(base_url=env.base, follow_redirects=True) as client:
        r = client.get(env.path, auth=("u", "p"))
    return r.status_code, env.seen("authorization", path=target)


@idiom
def cookies_per_call(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # httpx deprecates per-request cookies
        client.get(env.path, cookies={"session": "abc", "theme": "dark"})
    return env.seen("cookie")


@idiom
def follow_redirects_true(hx: ModuleType, env: Env) -> Any:
    middle, final = env.path + "/b", env.path + "/c"
    env.script({"status": 301, "headers": [["Location", middle]]})
    env.script({"status": 307, "headers": [["Location", env.base.rstrip("/") + final]]}, path=middle)
    env.script({"body": "arrived"}, path=final)
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path, follow_redirects=True)
    return (r.status_code, r.text, str(r.url), [(h.status_code, str(h.url), h.is_redirect) for h in r.history])


@idiom
def follow_redirects_on_the_client(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 303, "headers": [["Location", env.path + "/done"]]})
    with hx.Client(base_url=env.base, follow_redirects=True) as client:
        r = client.post(env.path, json={"a": 1})
        not_followed = client.post(env.path, json={"a": 1}, follow_redirects=False)
    return (r.status_code, r.request.method, len(r.history), not_followed.status_code, not_followed.is_redirect,
            not_followed.headers["location"], not_followed.history)


@idiom
def event_hooks(hx: ModuleType, env: Env) -> Any:
    seen: list[Any] = []

    def on_request(request: Any) -> None:
        request.headers["X-Hooked"] = "1"
        seen.append(("request", request.method, str(request.url)))

    def on_response(response: Any) -> None:
        seen.append(("response", response.status_code, response.request.method))

    env.script({"status": 202})
    with hx.Client(base_url=env.base, event_hooks={"request": [on_request], "response": [on_response]}) as client:
        client.get(env.path)
    return seen, env.seen("x-hooked")


@idiom
def raise_for_status_in_a_response_hook(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 500})

    def check(response: Any) -> None:
        response.raise_for_status()

    with hx.Client(base_url=env.base, event_hooks={"response": [check]}) as client:
        try:
            client.get(env.path)
        except hx.HTTPStatusError as error:
            return error.response.status_code
    return None


@idiom
def elapsed_is_a_timedelta(hx: ModuleType, env: Env) -> Any:
    env.script({"delay_ms": 30})
    with hx.Client(base_url=env.base) as client:
        r = client.get(env.path)
    return type(r.elapsed).__name__, r.elapsed.total_seconds() >= 0.03


@idiom
def timeout_object(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base, timeout=hx.Timeout(5.0, connect=2.0)) as client:
        return client.get(env.path, timeout=3.0).status_code, client.get(env.path, timeout=hx.Timeout(2.0)).status_code


@idiom
def timeout_exception(hx: ModuleType, env: Env) -> Any:
    env.script({"delay_ms": 5000})  # far past the 0.3 s
    with hx.Client(base_url=env.base) as client:
        try:
            client.get(env.path, timeout=0.3)
        except hx.TimeoutException as error:
            return (isinstance(error, hx.TransportError), isinstance(error, hx.RequestError),
                    isinstance(error, hx.HTTPError), isinstance(error, hx.ConnectError))
    return None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@idiom
def connect_error(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=f"http://127.0.0.1:{_closed_port()}") as client:
        try:
            client.get("/")
        except hx.ConnectError as error:
            return (isinstance(error, hx.TransportError), isinstance(error, hx.RequestError),
                    isinstance(error, hx.TimeoutException))
    return None


@idiom
def remote_protocol_error(hx: ModuleType, env: Env) -> Any:
    env.script({"body": "x", "duplicate_content_length": True})
    with hx.Client(base_url=env.base) as client:
        try:
            client.get(env.path)
        except hx.RemoteProtocolError as error:
            return isinstance(error, hx.TransportError), isinstance(error, hx.RequestError)
    return None


@idiom
def headers_and_url_types(hx: ModuleType, env: Env) -> Any:
    headers = hx.Headers({"Content-Type": "text/plain"})
    url = hx.URL("http://example.test:8080/a%20b?x=1&y=2")
    return headers["content-type"], "CONTENT-TYPE" in headers, url.path, url.query, url.host, url.port


@idiom
def async_client_calls(hx: ModuleType, env: Env) -> Any:
    env.script({"body": '{"n": 1}'})

    async def main() -> Any:
        log: list[str] = []

        async def on_request(request: Any) -> None:
            log.append(request.method)

        async with hx.AsyncClient(base_url=env.base, event_hooks={"request": [on_request]}) as client:
            r = await client.get(env.path, params={"a": 1})
            p = await client.post(env.path, json={"b": 2}, auth=("u", "p"))
            many = await asyncio.gather(*(client.get(env.path) for _ in range(3)))
        return r.json(), r.status_code, p.request.headers["authorization"], [m.status_code for m in many], log

    return asyncio.run(main())


@idiom
def async_timeout_exception(hx: ModuleType, env: Env) -> Any:
    env.script({"delay_ms": 5000})  # far past the 0.3 s

    async def main() -> Any:
        async with hx.AsyncClient(base_url=env.base) as client:
            try:
                await client.get(env.path, timeout=0.3)
            except hx.TimeoutException:
                return "timeout"
        return None

    return asyncio.run(main())


# --- the documented design differences ----------------------------------------------------------------------

@dataclass
class Difference:
    """An idiom that works under httpx and, by design, fails under humus_http with ``error`` whose message
    contains ``names`` (the alternative); ``alternative`` (optional) then shows the humus_http way giving the
    httpx result."""

    run: Idiom
    error: type[BaseException]
    names: str
    alternative: Idiom | None = None
    why: str = ""


DIFFERENCES: dict[str, Difference] = {}


def difference(error: type[BaseException], names: str, why: str,
               alternative: Idiom | None = None) -> Callable[[Idiom], Idiom]:
    def add(fn: Idiom) -> Idiom:
        DIFFERENCES[fn.__name__] = Difference(fn, error, names, alternative, why)
        return fn
    return add


@difference(AttributeError, "humus_http.Client(", "one origin per client: no module-level calls")
def module_level_get(hx: ModuleType, env: Env) -> Any:
    return hx.get(env.url).status_code


@difference(humus_http.CrossOriginError, "make a client for the other origin", "one origin per client")
def one_client_two_origins(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        return client.get(env.path).status_code, client.get(env.other_origin + env.path).status_code


@difference(TypeError, "base_url", "one origin per client: a client names its origin")
def client_without_base_url(hx: ModuleType, env: Env) -> Any:
    with hx.Client() as client:
        return client.get(env.url).status_code


@difference(humus_http.ConfigError, "deadlines are mandatory", "mandatory deadlines")
def client_timeout_none(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base, timeout=None) as client:
        return client.get(env.path).status_code


@difference(humus_http.ConfigError, "deadlines are mandatory", "mandatory deadlines")
def call_timeout_none(hx: ModuleType, env: Env) -> Any:
    with hx.Client(base_url=env.base) as client:
        return client.get(env.path, timeout=None).status_code


@difference(humus_http.ConfigError, "deadlines are mandatory", "mandatory deadlines")
def timeout_object_none(hx: ModuleType, env: Env) -> Any:
    return repr(hx.Timeout(None))[:7]


def _cross_origin_redirect_followed_there(hx: ModuleType, env: Env) -> Any:
    """The humus_http way: the 3xx comes back, and a client for the other origin follows it."""
    env.script({"status": 302, "headers": [["Location", env.other_origin + env.path + "/there"]]})
    env.script({"body": "there"}, path=env.path + "/there")
    with hx.Client(base_url=env.base, follow_redirects=True) as client:
        r = client.get(env.path)
    assert r.status_code == 302
    with hx.Client(base_url=env.other_origin) as other:
        there = other.get(r.headers["location"])
    return there.status_code, there.text


@difference(humus_http.HTTPStatusError, "make a client for", "same-origin redirects only",
            alternative=_cross_origin_redirect_followed_there)
def follow_a_redirect_to_another_origin(hx: ModuleType, env: Env) -> Any:
    env.script({"status": 302, "headers": [["Location", env.other_origin + env.path + "/there"]]})
    env.script({"body": "there"}, path=env.path + "/there")
    with hx.Client(base_url=env.base, follow_redirects=True) as client:
        r = client.get(env.path).raise_for_status()
    return r.status_code, r.text


# Same-origin redirects are followed by default (httpx follows none): no error carries this one, so the probe
# shows the behaviour and that follow_redirects=False gives httpx's result.
def _redirect_by_default(hx: ModuleType, env: Env, **options: Any) -> Any:
    env.script({"status": 302, "headers": [["Location", env.path + "/moved"]]})
    env.script({"body": "moved"}, path=env.path + "/moved")
    with hx.Client(base_url=env.base, **options) as client:
        r = client.get(env.path)
    return r.status_code, r.is_redirect, [h.status_code for h in r.history]


@dataclass
class Report:
    idioms: int = 0
    same: int = 0
    differences: int = 0
    failures: list[str] = field(default_factory=list)


def _run(hx: ModuleType, fn: Idiom, env: Env) -> Any:
    env.start()
    return fn(hx, env)


@pytest.mark.skipif(httpx is None, reason="httpx is not installed: python3 -m pip install -r "
                                          "python/requirements-test.txt (the probe runs the same code under it)")
def test_httpx_idioms_behave_the_same(server: TestServer, report_probe: Callable[[str], None]) -> None:
    reference = httpx
    assert reference is not None
    report = Report()
    for name, fn in IDIOMS.items():
        report.idioms += 1
        env = Env(server, f"/probe/{name}")
        try:
            expected = _run(reference, fn, env)
            got = _run(humus_http, fn, env)
        except Exception as error:  # one idiom's failure is reported with the others
            report.failures.append(f"{name}: raised {type(error).__name__}: {error}")
            continue
        if expected is None:
            report.failures.append(f"{name}: did not reach its observation under httpx")
        elif expected != got:
            report.failures.append(f"{name}: httpx {expected!r} != humus_http {got!r}")
        else:
            report.same += 1
    for name, diff in DIFFERENCES.items():
        report.idioms += 1
        env = Env(server, f"/probe/{name}")
        try:
            _run(reference, diff.run, env)
        except Exception as error:
            report.failures.append(f"{name}: does not work under httpx: {type(error).__name__}: {error}")
            continue
        try:
            _run(humus_http, diff.run, env)
        except diff.error as error:
            if diff.names not in str(error):
                report.failures.append(f"{name}: the message does not name the alternative ({diff.names!r}): "
                                       f"{error}")
                continue
        except Exception as error:
            report.failures.append(f"{name}: raised {type(error).__name__} instead of {diff.error.__name__}: "
                                   f"{error}")
            continue
        else:
            report.failures.append(f"{name}: works under humus_http, yet is listed as a difference ({diff.why})")
            continue
        if diff.alternative is not None:
            wanted = _run(reference, diff.run, env)
            shown = _run(humus_http, diff.alternative, env)
            if shown != wanted:
                report.failures.append(f"{name}: the alternative gave {shown!r}, httpx {wanted!r}")
                continue
        report.differences += 1
    # The default redirect policy: humus_http follows within the origin, httpx follows nothing.
    report.idioms += 1
    env = Env(server, "/probe/redirect_by_default")
    httpx_default = _run(reference, _redirect_by_default, env)
    humus_default = _run(humus_http, _redirect_by_default, env)
    humus_unfollowed = _run(humus_http, lambda hx, e: _redirect_by_default(hx, e, follow_redirects=False), env)
    if httpx_default == (302, True, []) and humus_default == (200, False, [302]) and humus_unfollowed == httpx_default:
        report.differences += 1
    else:
        report.failures.append(f"redirect_by_default: httpx {httpx_default}, humus_http {humus_default}, "
                               f"humus_http follow_redirects=False {humus_unfollowed}")
    report_probe(f"httpx probe: {report.idioms} idioms, {report.same} same, {report.differences} documented "
                 f"differences, {len(report.failures)} failing")
    assert not report.failures, "\n".join(report.failures)
    assert report.same + report.differences == report.idioms
