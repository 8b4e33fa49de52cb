"""Uses most of humus_http's public API with types spelled out; test_typing.py runs mypy --strict on it."""
from __future__ import annotations

import asyncio
from datetime import timedelta

import humus_http
from humus_http import Attempt, BreakerCounts, Classification, ProbeDecision


def classify(attempt: Attempt) -> Classification:
    if attempt.status == 404 and attempt.header("x-warming-up") is not None:
        return Classification(retry=True, breaker="ignored", retry_after=0.2)
    if attempt.error == "HUMUS_E_CONNECT" and attempt.number < 2:
        return Classification(retry=True, breaker="failure")
    return humus_http.default_classify(attempt)


def trip(counts: BreakerCounts) -> bool:
    return counts.consecutive_failures >= 3 or (counts.window_results >= 10 and
                                                counts.window_failures * 2 >= counts.window_results)


def probe(counts: BreakerCounts) -> ProbeDecision:
    if counts.failures:
        return ProbeDecision.REOPEN
    return ProbeDecision.CLOSE if counts.successes >= 2 else ProbeDecision.CONTINUE


def build(runtime: humus_http.Runtime) -> humus_http.Client:
    return humus_http.Client(
        "https://payments:8443", timeout=2.0, attempt_timeout=timedelta(milliseconds=800), connect_timeout="300ms",
        max_attempts=4, backoff_base=0.05, backoff_max=1.0, max_retry_after=3.0,
        retry_budget=humus_http.RetryBudget(policy="ratio", ratio=0.2, min_per_second=1, window=10),
        breaker=humus_http.Breaker(window=50, open_for=5, probes=2, probe_timeout=5),
        bulkhead=humus_http.Bulkhead(max_concurrent=20, wait=0.1),
        tls=humus_http.TLS(ca_file="/etc/ssl/payments-ca.pem", min_version="1.3"), http_version="2",
        headers={"User-Agent": "checkout/1.0"}, classify=classify,
        breaker_policy=humus_http.BreakerPolicy(trip=trip, probe=probe), runtime=runtime)


def use(client: humus_http.Client) -> dict[str, object]:
    response: humus_http.Response = client.post("/v1/charges", json={"amount": 1000}, idempotency_key="o-1",
                                                timeout=1.5)
    response.raise_for_status()
    values: list[str] = response.headers.get_list("set-cookie")
    chunks: list[bytes] = list(response.iter_bytes(chunk_size=1024))
    state: str = client.breaker_state
    body: dict[str, object] = response.json()
    body.update(values=values, chunks=len(chunks), state=state, version=response.http_version,
                attempts=response.attempts, url=response.url, text=response.text)
    return body


async def use_async(runtime: humus_http.Runtime) -> int:
    async with humus_http.AsyncClient.from_settings({"base_url": "https://payments:8443", "timeout": "2s"},
                                                    classify=classify, runtime=runtime) as client:
        try:
            responses = await asyncio.gather(*(client.get("/v1/rates", params={"page": i}) for i in range(8)))
        except humus_http.CircuitOpenError as error:
            await asyncio.sleep(error.retry_after)
            return 0
        except humus_http.UpstreamTimeoutError:
            return -1
        except humus_http.UpstreamError as error:
            print(error.status, error.message, error.origin, error.attempts, error.fields)
            raise
        return sum(r.status_code for r in responses)


async def use_async_stream(runtime: humus_http.Runtime) -> tuple[int, list[str], bytes]:
    async with humus_http.AsyncClient("https://payments:8443", timeout=30.0, runtime=runtime) as client:
        size = 0
        async with client.stream("GET", "/v1/export", params={"format": "csv"}) as resp:
            async for chunk in resp.aiter_bytes(chunk_size=64 * 1024):
                size += len(chunk)
        async with client.stream("GET", "/v1/events") as resp:
            lines: list[str] = [line async for line in resp.aiter_lines()]
        async with client.stream("POST", "/v1/report", json={"q": 1}, idempotency_key="k") as resp:
            body: bytes = await resp.aread()
            await resp.aclose()
        return size, lines, body


def use_like_httpx(runtime: humus_http.Runtime) -> list[str]:
    def sign(request: humus_http.Request) -> humus_http.Request:
        request.headers["X-Signature"] = f"{request.method} {request.url.path}"
        return request

    def log_response(response: humus_http.Response) -> None:
        print(response.status_code, response.elapsed.microseconds, response.request.method)

    hooks: humus_http.EventHooks = {"request": [sign], "response": [log_response]}
    with humus_http.Client("https://payments:8443", timeout=humus_http.Timeout(5.0, attempt=2.0, connect=0.5),
                           auth=humus_http.BearerAuth("token"), follow_redirects=True, event_hooks=hooks,
                           runtime=runtime) as client:
        form = client.post("/v1/forms", data={"a": "1", "tags": ["x", "y"]}, cookies={"session": "s"})
        upload = client.post("/v1/uploads", files={"file": ("report.csv", b"a,b\n", "text/csv")},
                             auth=("user", "password"), timeout=humus_http.Timeout(2.0))
        moved = client.get("/v1/moved", follow_redirects=False, timeout=1.0)
        history: list[humus_http.Redirect] = upload.history
        url: humus_http.URL = form.url
        try:
            moved.raise_for_status()
        except humus_http.RequestError as error:  # httpx's names
            print(error.status)
        except humus_http.HTTPError:
            pass
        return [url.host, url.path, url.query.decode(), *(str(h.url) for h in history),
                str(moved.is_redirect), str(form.is_client_error)]


def main() -> None:
    runtime = humus_http.Runtime(resolve={"payments:8443": "127.0.0.1:8443"})
    try:
        with build(runtime) as client:
            print(use(client))
    except humus_http.ConfigError as error:
        print("bad settings:", ", ".join(error.fields))
    except humus_http.HTTPStatusError as error:
        print(error.status_code, error.response.text)
    print(asyncio.run(use_async(runtime)))
    print(asyncio.run(use_async_stream(runtime)))
    print(use_like_httpx(runtime))


if __name__ == "__main__":
    main()
