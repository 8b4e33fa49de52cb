package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
)

// Client is one dependency's client (docs/README.md §1): its connections, circuit breaker, retry budget and bulkhead,
// all in the C core. Build one per dependency and share it: every method is safe for concurrent use.
//
// Close frees the native client; calls in flight finish first (the free waits for the last of them), and
// calls started after Close fail with ErrClosed. A Client that becomes unreachable without Close is closed by
// a cleanup, so NewClient's *http.Client, which has no Close, frees its native client when the garbage
// collector finds it unused.
type Client struct {
	core    *clientCore
	cleanup runtime.Cleanup
}

// clientCore holds the native client and counts its holders: the Client's own reference and one per call
// in flight. The C ABI forbids freeing a client while a blocking call runs on it.
type clientCore struct {
	native *C.humus_client
	rt     *runtimeCore
	// owner is the registry that owns native (Upstreams.Client): the last release detaches from it instead
	// of freeing native. nil for a client of Open.
	owner *upstreamsCore
	// compressionOff: the setting decompress is false, so bodies come as sent (see decodes). A registry's
	// client is taken to have the default.
	compressionOff bool
	// readsOnLoop: Do may run on the event loop (loop_body.go): a real clock and no Go callback.
	readsOnLoop bool
	// streams counts Do's calls in flight, their open bodies included: one that starts alone blocks.
	streams atomic.Int32
	// multiplexed: the last response of Do came over HTTP/2 (see onLoop).
	multiplexed atomic.Bool
	// smallBodies: the last body of Do that told its size fit a small ring (see onLoop, sawBody); false
	// until one did, so that a new client's first calls block as they always could.
	smallBodies atomic.Bool
	// loopAlways sends every Do that can run on the loop there: set only by the tests (export_test.go), so
	// that they check that path on any protocol.
	loopAlways bool
	// stepAlways steps every Do that can be stepped (stepsCall), whatever the protocol and the calls in
	// flight: set only by the tests (export_test.go), as loopAlways.
	stepAlways bool
	// traces: every response keeps its decision trace (WithTraces).
	traces bool
	// hooks run around every attempt of every call (WithAttemptHooks); nil for none.
	hooks *AttemptHooks
	// hedges: Settings.Hedge is set, so Do buffers the body as BufferBody does: only a buffered call hedges
	// (docs/retries.md §6.8). Unknown for a registry's client, whose settings Go does not see.
	hedges bool

	ref shared
}

// Open builds a client for settings.BaseURL's origin. Invalid settings are an *Error with ErrConfig naming
// every bad key (rules across fields included: Go settings reach the library as one JSON load, docs/settings.md §3.2),
// or ErrProgram for nil callbacks (docs/settings.md §3.3). Safe for concurrent use.
func Open(settings Settings, opts ...Option) (*Client, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.disableCompression {
		off := false
		settings.Decompress = &off
	}
	rt, err := o.runtimeCore()
	if err != nil {
		return nil, err
	}
	if !rt.acquire() {
		return nil, closedError("runtime")
	}
	native, err := buildClient(rt.native, settings, &o)
	if err != nil {
		rt.release()
		return nil, err
	}
	live.clients.Add(1)
	core := &clientCore{native: native, rt: rt, compressionOff: settings.Decompress != nil && !*settings.Decompress,
		readsOnLoop: !rt.virtual && !rt.mock.Load() && o.classifier == nil && o.policy == nil, traces: o.traces,
		hedges: settings.Hedge != nil}
	if o.hooksSet {
		h := o.hooks
		core.hooks = &h
	}
	core.ref.own(core.free)
	c := &Client{core: core}
	c.cleanup = runtime.AddCleanup(c, (*clientCore).closeOwner, core)
	return c, nil
}

// NewClient is docs/bindings.md §17.4's constructor: a standard *http.Client whose Transport is the C core, so Go code,
// generated clients and SDKs use it as any client. Redirects are followed by net/http's loop, under the
// client's CheckRedirect, as with any *http.Client (see Client.HTTPClient); its Timeout and the request
// context's deadline bound the call; cancelling the context cancels the native call. The native client is freed by a cleanup once the *http.Client and its
// Transport are unreachable; use Open and Client.Close to free it at a moment of your choosing, and
// ClientOf to reach the breaker. Safe for concurrent use.
func NewClient(settings Settings, opts ...Option) (*http.Client, error) {
	c, err := Open(settings, opts...)
	if err != nil {
		return nil, err
	}
	return c.HTTPClient(), nil
}

func (o *clientOptions) runtimeCore() (*runtimeCore, error) {
	if o.runtime != nil {
		return o.runtime.core, nil
	}
	return theDefaultRuntime()
}

// buildClient makes the native settings, installs the Go callbacks and builds the client. The settings object
// is freed here: the client keeps a copy, and the callbacks' handles until it is freed.
func buildClient(rt *C.humus_runtime, settings Settings, o *clientOptions) (*C.humus_client, error) {
	if o.classifierSet && o.classifier == nil {
		return nil, &Error{Status: StatusProgram, Message: "classifier: WithClassifier was given a nil func (docs/settings.md §3.3)",
			Fields: []string{"classify"}}
	}
	if o.policy != nil && (o.policy.Trip == nil || o.policy.Probe == nil) {
		return nil, &Error{Status: StatusProgram, Message: "breaker policy: Trip and Probe must both be set (docs/settings.md §3.3)",
			Fields: []string{"breaker_policy.trip", "breaker_policy.probe"}}
	}
	if o.hooksSet && o.hooks.Request == nil && o.hooks.Response == nil {
		return nil, &Error{Status: StatusProgram, Message: "attempt hooks: WithAttemptHooks was given neither Request nor Response (docs/settings.md §3.3)",
			Fields: []string{"attempt_hooks"}}
	}
	s, err := settings.native()
	if err != nil {
		return nil, err
	}
	defer C.humus_settings_free(s)
	var cerr *C.humus_error
	if o.classifier != nil {
		h := newHandle(o.classifier)
		if st := C.humusgo_set_classifier(s, C.uintptr_t(h), &cerr); st != C.HUMUS_OK {
			deleteHandle(h) // refused: the library did not take it
			return nil, takeError(st, cerr)
		}
	}
	if o.policy != nil {
		h := newHandle(o.policy)
		if st := C.humusgo_set_breaker_policy(s, C.uintptr_t(h), &cerr); st != C.HUMUS_OK {
			deleteHandle(h)
			return nil, takeError(st, cerr)
		}
	}
	var native *C.humus_client
	if st := C.humus_client_new(rt, s, &native, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	return native, nil
}

// Close frees the native client once the calls in flight have returned and the streamed bodies they
// returned are closed (or read to their end); calls started afterwards fail with an *Error whose Status is
// StatusMisuse and whose cause is ErrClosed. Bodies already returned stay readable. Close is idempotent,
// never blocks, and is safe for concurrent use.
func (c *Client) Close() error {
	c.cleanup.Stop()
	c.core.closeOwner()
	return nil
}

func (c *clientCore) closeOwner() { c.ref.closeOwner() }

// acquire takes a reference for a call; an error once the client is closed.
func (c *clientCore) acquire() error {
	if !c.ref.acquire() {
		return closedError("client")
	}
	return nil
}

// release drops a reference; the last one frees the native client (or detaches from the registry that owns
// it) and releases the runtime. Must not run on the runtime's event-loop thread (see releaseOffLoop).
func (c *clientCore) release() { c.ref.release() }

// endStream gives back what Do took: the call's count and its client reference.
func (c *clientCore) endStream() {
	c.streams.Add(-1)
	c.release()
}

// free ends the native client's life in this package.
func (c *clientCore) free() {
	if c.owner != nil {
		c.owner.release()
		return
	}
	C.humus_client_free(c.native)
	live.clients.Add(-1)
	c.rt.release()
}

// releaseOffLoop is release for code on the event-loop thread (an asynchronous completion): freeing the
// client there would be completed later by the library, but freeing the runtime there would have the loop
// join itself, so the last release moves to a goroutine of its own.
func (c *clientCore) releaseOffLoop() {
	if c.ref.releaseUnlessLast() {
		go c.release()
	}
}

// HTTPClient is a new *http.Client over this client (see NewClient): its Transport is the C core, and each
// call returns a fresh *http.Client sharing this Client; set its Timeout, Jar or CheckRedirect as you like.
// Safe for concurrent use.
//
// Redirects are net/http's to follow, as with any *http.Client: the Transport returns every 3xx (the core
// follows nothing for it), and net/http asks CheckRedirect with the next request and the via chain, changes
// the method and carries the headers and the Jar's cookies as it always does. The CheckRedirect set here,
// FollowWithinOrigin, is the core's own rule (docs/origin.md §2): follow within the origin, at most 10 per
// call, and hand back a 3xx to another origin. Set your own and it decides instead: http.ErrUseLastResponse
// returns the 3xx, another error is returned inside a *url.Error, and nil follows — except to another
// origin, which this client never sends to: that redirect fails with ErrCrossOrigin, nothing sent, its
// message saying to return http.ErrUseLastResponse for the 3xx. One difference from the core's rule comes
// from net/http: a malformed Location is an error there, where the core returns the 3xx.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{Transport: c.Transport(), CheckRedirect: FollowWithinOrigin}
}

// maxRedirects is the core's limit of redirects followed per call (docs/origin.md §2).
const maxRedirects = 10

// FollowWithinOrigin is the CheckRedirect of the *http.Client that NewClient and HTTPClient make: the core's
// redirect rule applied by net/http's loop (docs/origin.md §2). A redirect within the origin of the first
// request is followed, at most 10 per call; one to another origin, and the 11th, come back as the 3xx
// (http.ErrUseLastResponse). Use it in a CheckRedirect of your own to keep that rule and add yours. Safe for
// concurrent use.
func FollowWithinOrigin(req *http.Request, via []*http.Request) error {
	if len(via) == 0 || len(via) > maxRedirects || !sameOrigin(req.URL, via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// sameOrigin compares scheme, host (case-insensitively) and port, the scheme's default filled in.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// Transport is the http.RoundTripper over this client. Safe for concurrent use.
func (c *Client) Transport() *Transport { return &Transport{client: c} }

// ClientOf is the Client behind an *http.Client made by NewClient or HTTPClient (false for any other), to
// read its breaker or close it. Safe for concurrent use.
func ClientOf(hc *http.Client) (*Client, bool) {
	if t, ok := hc.Transport.(*Transport); ok {
		return t.client, true
	}
	return nil, false
}

// BreakerState is the circuit breaker's state now, after any due open → half-open advance (docs/breaker.md §9.2).
// Safe for concurrent use, as every accessor of the breaker and the budget.
func (c *Client) BreakerState() (CircuitState, error) {
	if err := c.core.acquire(); err != nil {
		return 0, err
	}
	defer c.core.release()
	var state C.int32_t
	if st := C.humus_client_breaker_state(c.core.native, &state); st != C.HUMUS_OK {
		return 0, &Error{Status: Status(st), Message: "humus_client_breaker_state failed"}
	}
	return CircuitState(state), nil
}

// BreakerCounts are the breaker's counts now (docs/breaker.md §9.3), after any due advance.
func (c *Client) BreakerCounts() (BreakerCounts, error) {
	if err := c.core.acquire(); err != nil {
		return BreakerCounts{}, err
	}
	defer c.core.release()
	counts := C.humus_breaker_counts{version: C.HUMUS_BREAKER_COUNTS_VERSION} // written up to this version
	if st := C.humus_client_breaker_counts(c.core.native, &counts); st != C.HUMUS_OK {
		return BreakerCounts{}, &Error{Status: Status(st), Message: "humus_client_breaker_counts failed"}
	}
	return countsFrom(&counts), nil
}

// BudgetTokens is the retry budget's balance (docs/retries.md §6.4): tokens for the token bucket, retries still allowed
// in the window for the ratio policy.
func (c *Client) BudgetTokens() (float64, error) {
	if err := c.core.acquire(); err != nil {
		return 0, err
	}
	defer c.core.release()
	var tokens C.double
	if st := C.humus_client_budget_tokens(c.core.native, &tokens); st != C.HUMUS_OK {
		return 0, &Error{Status: Status(st), Message: "humus_client_budget_tokens failed"}
	}
	return float64(tokens), nil
}

// BulkheadLimit is the bulkhead's limit now (docs/bulkhead.md §11): bulkhead.max_concurrent for a fixed bulkhead; for
// an adaptive one (bulkhead.mode "adaptive", §11.1) where its algorithm has moved it, within bulkhead.min..max.
// 0 once the client is closed. Safe for concurrent use.
func (c *Client) BulkheadLimit() uint32 {
	if err := c.core.acquire(); err != nil {
		return 0
	}
	defer c.core.release()
	var limit C.uint32_t
	if st := C.humus_client_bulkhead_limit(c.core.native, &limit); st != C.HUMUS_OK {
		return 0
	}
	return uint32(limit)
}
