// Package humushttp is the Go binding of humus_http, a resilient HTTP client whose C++ core (libcurl
// underneath) is exported through a stable C ABI (include/humus_http.h). Retries with full-jitter backoff
// and a retry budget, a circuit breaker, a bulkhead, deadlines and Retry-After all live in the core, and
// behave the same from C, Python, Go and Rust (docs/vectors.md §18's conformance vectors run through each binding).
//
// The entry point is NewClient, which returns a standard *http.Client whose Transport is the C core:
//
//	client, err := humushttp.NewClient(humushttp.Settings{BaseURL: "https://payments:8443", Timeout: 2 * time.Second})
//	resp, err := client.Get("https://payments:8443/pay")
//	if errors.Is(err, humushttp.ErrRejected) { /* the breaker is open: nothing was sent */ }
//
// Open returns the *Client itself, for Close, the breaker's state and counts, the retry budget, and the
// lower-level Do and Start that report the attempts made. Runtime carries what clients share: the resolve
// overrides, the fault switch, the span and log sinks (docs/telemetry.md §13), and for tests a virtual clock and a mock
// transport (docs/testing-kit.md §16). OpenUpstreams builds a registry of clients by name from one JSON document (docs/upstreams.md §15).
//
// Thread-safety follows the C ABI: Client, Runtime, Upstreams, Transport and Call are safe for concurrent
// use; Settings are plain values; a Response is used by one goroutine (its Body may be closed while another
// reads it). Callbacks (Classifier, BreakerPolicy, MockTransport, SpanSink, LogSink, AttemptHooks) may run on several threads at once and must be safe
// for concurrent use. Each identifier's comment says more. AttemptHooks (WithAttemptHooks) run around every
// attempt — each retry and redirect hop — to set headers per attempt or count attempts (docs/retries.md §6.7).
//
// Redirects through *http.Client are net/http's to follow: the Transport follows none, so a CheckRedirect
// of yours decides as with any *http.Client, and the default, FollowWithinOrigin, is the core's rule
// (docs/origin.md §2). A redirect to another origin is never sent, whatever CheckRedirect says.
//
// Heads are net/http's: Response.Status carries the reason phrase as the server sent it over HTTP/1.x, and
// over HTTP/2, which has none, net/http's "200 OK" from http.StatusText. Each redirect Do and Start followed
// keeps its head in Response.Redirects. A header the client would add (the configured headers, Accept,
// Accept-Encoding, User-Agent, ...) is left out by net/http's conventions: a name in req.Header with no
// values (req.Header["Accept"] = nil), and a User-Agent set to "".
//
// Without cgo (CGO_ENABLED=0, or no C compiler) the package is a stub whose build stops with a sentence
// saying that cgo and libhumus_http are needed.
//
// Bodies stream as with net/http (docs/bodies.md §7): a call's resp.Body (Do's and Start's) reads from the connection
// (close it: that, or reading to io.EOF, is when the breaker counts the result), and req.Body is sent as it
// is read, req.GetBody replaying it (none: one attempt). Bodies arrive decoded, as with Go's own Transport:
// the core asks for gzip, deflate, br and zstd and removes Content-Encoding and Content-Length
// (Response.Uncompressed); WithDisableCompression, or a request's own Accept-Encoding, gets the bytes as sent.
//
// What the binding cannot express, and why (the C ABI decides): there are no 1xx responses and no trailers, no Host
// override, no per-request TLS state (http.Response.TLS is nil) and no proxy (the core reads no proxy
// settings by design, docs/transport.md §10.4).
package humushttp
