"""The WSGI app of test_share.py's gunicorn (docs/shared.md §22, issue 36): each request makes one call to the
dependency through a module-level humus_http.Client sharing the segment HUMUS_SHARE_NAME. The module is imported
in each worker (gunicorn without --preload), so each worker makes its own client after the fork, as §22.3 says.

- ``/call``: one GET of the dependency; answers 200 with ``<worker pid> status <code>``, or 503 with
  ``<worker pid> rejected`` when the breaker is open (CircuitOpenError), or 502 with ``<worker pid> error ...``;
- ``/readiness``: this worker's runtime's readiness report (JSON)."""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import humus_http

# The same settings in every worker (docs/shared.md §22.1); open for longer than the test runs, so no probe
# reaches the dependency while the test counts.
runtime = humus_http.Runtime()
client = humus_http.Client(os.environ["HUMUS_DEP_ORIGIN"], runtime=runtime, max_attempts=1,
                           breaker=humus_http.Breaker(open_for="10m"),
                           share=humus_http.Share(name=os.environ["HUMUS_SHARE_NAME"]))


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    pid = os.getpid()
    if environ.get("PATH_INFO") == "/readiness":
        status, body = "200 OK", json.dumps(runtime.readiness())
    else:
        try:
            status, body = "200 OK", f"{pid} status {client.get('/dep').status_code}"
        except humus_http.CircuitOpenError:
            status, body = "503 Service Unavailable", f"{pid} rejected"
        except humus_http.UpstreamError as error:
            status, body = "502 Bad Gateway", f"{pid} error {type(error).__name__}: {error}"
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(data)))])
    return [data]
