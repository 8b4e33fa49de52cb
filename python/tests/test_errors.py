"""Every exception kind, raised by real failures of real sockets."""
from __future__ import annotations

import socket
from collections.abc import Callable

import humus_http
import pytest
from server_harness import TestServer


def test_timeout(server: TestServer, make_client: Callable[..., humus_http.Client], listener: str,
                 path: str) -> None:
    server.script(path, [{"hang": True}])
    client = make_client(listener, timeout=0.3, attempt_timeout=0.3)
    with pytest.raises(humus_http.UpstreamTimeoutError) as caught:  # the server never answers: the deadline
        client.get(path)
    error = caught.value
    assert isinstance(error, TimeoutError) and isinstance(error, humus_http.UpstreamError)
    assert error.status == "HUMUS_E_TIMEOUT"
    assert error.origin == client.origin
    assert error.attempts >= 1
    assert error.origin in str(error) and "HUMUS_E_TIMEOUT" in str(error)


def test_per_call_timeout_bounds_the_call(server: TestServer, make_client: Callable[..., humus_http.Client],
                                          path: str) -> None:
    # The answer comes after 5 s, within the client's 30 s: only the call's own 0.2 s can end it first.
    server.script(path, [{"delay_ms": 5000}])
    client = make_client(timeout=30.0, attempt_timeout=30.0)
    with pytest.raises(humus_http.UpstreamTimeoutError) as caught:
        client.get(path, timeout=0.2)
    assert caught.value.status == "HUMUS_E_TIMEOUT" and caught.value.attempts == 1
    with pytest.raises(humus_http.InvalidRequestError, match="timeout"):
        client.get(path, timeout=0)


# F07
def test_connect_refused_is_retried_then_raised(runtime: humus_http.Runtime) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with humus_http.Client(f"http://127.0.0.1:{port}", max_attempts=2, backoff_base=0.005, backoff_max=0.01,
                           runtime=runtime) as client, pytest.raises(humus_http.UpstreamConnectError) as caught:
        client.get("/")
    assert caught.value.status == "HUMUS_E_CONNECT"
    assert caught.value.attempts == 2
    assert caught.value.origin == f"http://127.0.0.1:{port}"


# F01
def test_unresolvable_host_is_a_connect_error(runtime: humus_http.Runtime) -> None:
    with humus_http.Client("http://humus-no-such-host.invalid:80", max_attempts=1, runtime=runtime) as client:
        with pytest.raises(humus_http.UpstreamConnectError) as caught:
            client.get("/")
    assert caught.value.status == "HUMUS_E_RESOLVE"


@pytest.mark.parametrize("listener_name", ["untrusted", "cn_only"])
def test_tls_failures(server: TestServer, make_client: Callable[..., humus_http.Client], listener_name: str,
                      path: str) -> None:
    client = make_client(listener_name, max_attempts=3)
    with pytest.raises(humus_http.UpstreamTLSError) as caught:
        client.get(path)
    assert caught.value.status == "HUMUS_E_TLS"
    assert caught.value.attempts == 1  # an untrusted certificate is not retried
    assert server.requests(path) == []


def test_mtls(server: TestServer, make_client: Callable[..., humus_http.Client], path: str) -> None:
    tls = humus_http.TLS(ca_file=server.ca_file, cert_file=server.client_cert, key_file=server.client_key)
    assert make_client("mtls", tls=tls).get(path).status_code == 200
    assert server.requests(path)[0]["client_cert"]
    with pytest.raises(humus_http.UpstreamTLSError) as caught:
        make_client("mtls", max_attempts=1).get(path)
    assert caught.value.status == "HUMUS_E_TLS_CLIENT_CERT"


def test_connection_reset_is_a_protocol_error(server: TestServer, make_client: Callable[..., humus_http.Client],
                                              listener: str, path: str) -> None:
    server.script(path, [{"reset": "before_headers"}])
    with pytest.raises(humus_http.ProtocolError) as caught:
        make_client(listener).post(path, content=b"pay")  # a POST without a key: one attempt
    assert caught.value.status in ("HUMUS_E_CONNECTION_LOST", "HUMUS_E_PROTOCOL")
    assert caught.value.attempts == 1
    assert len(server.requests(path)) == 1


def test_broken_http_is_a_protocol_error(server: TestServer, make_client: Callable[..., humus_http.Client],
                                         path: str) -> None:
    server.script(path, [{"duplicate_content_length": True, "body": "abc"}])
    with pytest.raises(humus_http.ProtocolError) as caught:
        make_client(max_attempts=1).get(path)
    assert caught.value.status == "HUMUS_E_PROTOCOL"


def test_cross_origin_is_refused_before_sending(server: TestServer, make_client: Callable[..., humus_http.Client],
                                                path: str) -> None:
    client = make_client("https")
    other = server.url("https_h1", path)  # same host, another port: another origin
    with pytest.raises(humus_http.CrossOriginError) as caught:
        client.get(other)
    assert caught.value.status == "HUMUS_E_CROSS_ORIGIN"
    assert f"https://payments:{server.port('https_h1')}" in caught.value.message
    assert f"https://payments:{server.port('https')}" in caught.value.message
    assert caught.value.attempts == 0
    assert server.requests(path) == []


def test_config_error_lists_every_bad_field(runtime: humus_http.Runtime) -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client("ftp://payments", timeout=-1, max_attempts=0, breaker=humus_http.Breaker(window=0),
                          bulkhead=humus_http.Bulkhead(max_concurrent=0), runtime=runtime)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.status == "HUMUS_E_CONFIG"
    assert {"base_url", "timeout", "max_attempts", "breaker.window", "bulkhead.max_concurrent"} <= set(error.fields)
    for field in ("timeout", "max_attempts", "breaker.window"):
        assert field in error.message


def test_config_error_for_rules_across_fields(runtime: humus_http.Runtime) -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client("http://payments", timeout=1.0, attempt_timeout=2.0, backoff_base=1.0, backoff_max=0.5,
                          runtime=runtime)
    assert {"attempt_timeout", "timeout", "backoff_max", "backoff_base"} <= set(caught.value.fields)
    with pytest.raises(humus_http.ConfigError) as tls:
        humus_http.Client("http://payments", tls=humus_http.TLS(ca_pem="x"), runtime=runtime)
    assert "tls" in tls.value.fields


def test_unset_defaults_are_capped_by_what_was_set(runtime: humus_http.Runtime) -> None:
    # attempt_timeout's default (5 s) would exceed timeout=1.0: as in the JSON form, an unset default is capped.
    with humus_http.Client("http://payments", timeout=1.0, runtime=runtime) as client:
        assert client.breaker_state == "closed"


def test_runtime_options_are_checked() -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Runtime(resolve={"payments": "127.0.0.1"})
    assert caught.value.fields == ("resolve.payments",)


@pytest.mark.parametrize("base_url", ["http://[::1", "payments:8443", "https://user:pw@payments", ""])
def test_a_bad_base_url_is_a_config_error(runtime: humus_http.Runtime, base_url: str) -> None:
    with pytest.raises(humus_http.ConfigError) as caught:
        humus_http.Client(base_url, runtime=runtime)
    assert "base_url" in caught.value.fields
