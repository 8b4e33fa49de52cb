"""An SDK written against httpx, given a humus client: the SDK keeps its httpx code, and every request it makes
goes through humus_http's retries, circuit breaker, bulkhead, retry budget and deadlines (docs/bindings.md §17.3).

    python3 sdk_over_httpx.py https://billing.internal
"""
from __future__ import annotations

import sys
from typing import Any

import httpx

import humus_http
import humus_http.httpx


class BillingAPI:
    """The shape of many vendor SDKs: it takes an httpx.Client and knows only httpx."""

    def __init__(self, http: httpx.Client) -> None:
        self._http = http

    def invoice(self, invoice_id: str) -> dict[str, Any]:
        response = self._http.get(f"/v1/invoices/{invoice_id}", headers={"Accept": "application/json"})
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body


def main(base_url: str) -> int:
    # One humus client per dependency, made once; the SDK's httpx.Client sends through it. httpx keeps its own
    # redirects (follow_redirects), headers and decoding; the humus client retries, and refuses to send while
    # its breaker is open.
    with humus_http.Client(base_url, timeout=5.0, max_attempts=3) as billing, \
            httpx.Client(base_url=base_url, transport=humus_http.httpx.Transport(billing),
                         follow_redirects=True) as http:
        api = BillingAPI(http)
        try:
            invoice = api.invoice("in_42")
        except humus_http.httpx.RejectedError as error:
            print(f"billing keeps failing; not asked again for {error.retry_after or 0:.1f} s")
            return 1
        except httpx.HTTPError as error:  # httpx's own exceptions; the humus error is error.__cause__
            print(f"no invoice: {error!r} (caused by {error.__cause__!r})")
            return 1
        print("invoice:", invoice)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "https://billing.example.com"))
