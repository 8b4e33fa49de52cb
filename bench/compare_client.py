#!/usr/bin/env python3
"""The Python clients of bench/compare.py: humus_http's Client and AsyncClient, pycurl and aiohttp (on uvloop).

    compare_client.py pycurl|humus|aiohttp|humus-async URL CONCURRENCY SECONDS WARMUP [--ca F] [--resolve X] [--h2]

pycurl and humus are sequential (CONCURRENCY 1): one easy handle reused, one Client. aiohttp and humus-async
keep CONCURRENCY tasks in flight on one uvloop event loop (asyncio's own loop when uvloop is missing, said on
stderr). Each reads the body whole. After WARMUP seconds it runs for SECONDS and prints one JSON line:
requests, errors, wall and CPU seconds of this process. It never judges the numbers. --resolve is
HOST:PORT=ADDR:PORT, the h2 name's address.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit


def cpu() -> float:
    return time.process_time()


def sequential(call: Callable[[], bool], seconds: float) -> tuple[int, int]:
    requests = errors = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        requests += 1
        if not call():
            errors += 1
    return requests, errors


def make_sequential(args: argparse.Namespace) -> Callable[[], bool]:
    if args.mode == "pycurl":
        import pycurl
        from io import BytesIO
        c = pycurl.Curl()
        c.setopt(pycurl.URL, args.url)
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2TLS if args.h2 else pycurl.CURL_HTTP_VERSION_1_1)
        if args.ca:
            c.setopt(pycurl.CAINFO, args.ca)
        if args.resolve:
            host_port, addr_port = args.resolve.split("=")
            c.setopt(pycurl.CONNECT_TO, [f"{host_port}:{addr_port}"])

        def pc() -> bool:
            buf = BytesIO()
            c.setopt(pycurl.WRITEDATA, buf)
            c.perform()
            return c.getinfo(pycurl.RESPONSE_CODE) == 200 and len(buf.getvalue()) > 0
        return pc
    client = humus_client(args, sync=True)

    def humus() -> bool:
        r = client.get(args.url)
        return r.status_code == 200 and len(r.content) > 0
    return humus


def humus_client(args: argparse.Namespace, sync: bool):  # noqa: ANN201 - Client or AsyncClient
    import humus_http
    parts = urlsplit(args.url)
    kw: dict[str, object] = {"http_version": "2" if args.h2 else "1.1", "max_idle_connections": max(args.conc, 64),
                             "bulkhead": humus_http.Bulkhead(max_concurrent=max(args.conc, 50))}
    if args.ca:
        kw["tls"] = humus_http.TLS(ca_file=args.ca)
    if args.resolve:
        host_port, addr_port = args.resolve.split("=")
        kw["runtime"] = humus_http.Runtime(resolve={host_port: addr_port})
    cls = humus_http.Client if sync else humus_http.AsyncClient
    return cls(f"{parts.scheme}://{parts.netloc}", **kw)


async def concurrent(args: argparse.Namespace, seconds_list: list[float]) -> list[tuple[int, int, float, float]]:
    if args.mode == "aiohttp":
        import aiohttp
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.conc))

        async def call() -> bool:
            async with session.get(args.url) as r:
                return r.status == 200 and len(await r.read()) > 0
    else:
        client = humus_client(args, sync=False)

        async def call() -> bool:
            r = await client.get(args.url)
            return r.status_code == 200 and len(r.content) > 0

    out = []
    for seconds in seconds_list:
        counts = [0, 0]
        until = time.monotonic() + seconds

        async def worker() -> None:
            while time.monotonic() < until:
                counts[0] += 1
                try:
                    if not await call():
                        counts[1] += 1
                except Exception as e:  # noqa: BLE001 - counted and reported once
                    if counts[1] == 0:
                        print(f"compare_client: {e!r}", file=sys.stderr)
                    counts[1] += 1
        w0, c0 = time.monotonic(), cpu()
        await asyncio.gather(*(worker() for _ in range(args.conc)))
        out.append((counts[0], counts[1], time.monotonic() - w0, cpu() - c0))
    if args.mode == "aiohttp":
        await session.close()
    else:
        await client.aclose()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["pycurl", "humus", "aiohttp", "humus-async"])
    p.add_argument("url")
    p.add_argument("conc", type=int)
    p.add_argument("seconds", type=float)
    p.add_argument("warmup", type=float)
    p.add_argument("--ca")
    p.add_argument("--resolve")
    p.add_argument("--h2", action="store_true")
    args = p.parse_args()
    if args.mode in ("pycurl", "humus"):
        call = make_sequential(args)
        _, warm_errors = sequential(call, args.warmup)
        w0, c0 = time.monotonic(), cpu()
        requests, errors = sequential(call, args.seconds)
        wall, used = time.monotonic() - w0, cpu() - c0
    else:
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            print("compare_client: uvloop missing: asyncio's own loop", file=sys.stderr)
        (_, warm_errors, _, _), (requests, errors, wall, used) = asyncio.run(
            concurrent(args, [args.warmup, args.seconds]))
    print(json.dumps({"requests": requests, "errors": errors + warm_errors, "wall_s": wall, "cpu_s": used}))


if __name__ == "__main__":
    main()
