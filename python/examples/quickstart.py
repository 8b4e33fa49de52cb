import humus_http

with humus_http.Client("https://example.com", timeout=5.0, max_attempts=3) as client:
    try:
        response = client.get("/", params={"q": "humus"}).raise_for_status()
        print(response.status_code, response.http_version, len(response.content), "bytes")
    except humus_http.CircuitOpenError as error:
        print(f"example.com keeps failing; try again in {error.retry_after:.1f} s")
    except humus_http.UpstreamError as error:
        print(f"no luck: {error}")
