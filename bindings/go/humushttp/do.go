package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"context"
	"errors"
	"net/http"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
)

// Do makes one call on the calling goroutine — every attempt, wait and redirect within the origin (docs/retries.md §6)
// — and returns the response whatever its status (a 404, a 500 or the last 503 are responses, docs/retries.md §6.6) once
// its headers are in; its Body then streams (see Response: close it). It fails only when no response came:
// an *Error (errors.Is with ErrTimeout, ErrRejected, ErrConnect, ...).
//
// req.Body is sent as a stream, as net/http sends it: req.ContentLength is its length (0 or -1 with a Body:
// unknown, sent chunked), and req.GetBody is how another attempt gets it again. Without GetBody the body
// cannot be replayed, so the call makes one attempt whatever its method (http.NewRequest sets GetBody for
// *bytes.Buffer, *bytes.Reader and *strings.Reader bodies); a failing req.Body ends the call with
// ErrCallback, its error the cause. req.Body is closed once the library is done with it.
//
// req.Header is sent as net/http sends it, and leaves out by net/http's conventions a header the client
// would add itself (humus_request_remove_header): a name present with no values (req.Header["Accept"] =
// nil, as net/http's server and httputil.ReverseProxy leave out the headers they add) sends none of that
// name — not the configured one (Settings.Headers), the call context's, libcurl's Accept or the core's
// Accept-Encoding (the body then comes as sent, not decoded) — and a User-Agent whose first value is ""
// (or none) sends no User-Agent, as net/http's client; of several User-Agent values the first is sent. An
// empty value of any other name is sent empty. Host and the framing headers (Content-Length,
// Transfer-Encoding, Connection, ...) can be neither set nor left out: ErrInvalidArgument naming the header.
//
// The request's context bounds the call and the reading of its body: its deadline becomes the call's
// deadline, and its cancellation cancels the native call (or the read in progress); the error then also
// matches context.DeadlineExceeded or context.Canceled. opts (and those attached with WithCallOptions /
// WithCallContext) set the per-call rules. Safe for concurrent use. The call blocks in C, its thread reading
// the socket itself (cgo releases its P, so other goroutines run, but an OS thread waits for the call),
// unless it joins other calls of the client. Over HTTP/1.1, with few calls in flight, it is then stepped on
// the calling goroutine: the library's work runs on its thread, and between steps it waits in Go's netpoller
// with no OS thread held (stepsCall, step.go). Over HTTP/2, and with more calls in flight, it runs on the
// runtime's event loop, its body read ahead into a bounded ring, and the goroutine waits in Go (onLoop,
// loop_body.go, docs/bodies.md §7).
// A call with attempt hooks or a request body read from a Go reader is never stepped; with hooks it takes
// the loop over HTTP/1.1 too while the client's bodies are small (under 256 KiB). Every path keeps every
// rule. With BufferBody the call runs as Start's does, and so does every call of a client
// opened with Settings.Hedge set: only a buffered call hedges (docs/retries.md §6.8).
func (c *Client) Do(req *http.Request, opts ...CallOption) (*Response, error) {
	o := collectCallOptions(req.Context(), opts)
	if o.buffer || c.core.hedges {
		call, err := c.Start(req, nil, opts...)
		if err != nil {
			return nil, err
		}
		return call.Wait()
	}
	p, err := c.prepare(req, &o)
	if err != nil {
		return nil, err
	}
	return c.run(p)
}

// prepared is a call of Do's body path (the request body streamed, the response's too) built but not run:
// Do runs it at once, Start on a goroutine of the call's own.
type prepared struct {
	req         *http.Request
	native      *C.humus_request // freed by run
	state       *callState       // always: the body's reads honour its token, and Body.Close uses it
	stateHandle cgo.Handle       // the state for callbacks of a blocking call; 0 when the context cannot end
	sentURL     string
	traced      bool
	alone       bool       // the client's only Do in flight when it began (clientCore.onLoop)
	inFlight    int32      // the client's Do calls in flight when it began, itself included (stepsCall)
	streamsBody bool       // req.Body is read by the library as the request goes out
	hooks       *callHooks // nil without attempt hooks
}

// prepare checks and builds the call: it takes the client's reference and the call's count (run, or the
// response it returns, gives them back) and fails here for a request that cannot be built.
func (c *Client) prepare(req *http.Request, o *callOptions) (*prepared, error) {
	ctx := req.Context()
	body, err := streamBody(req)
	if err != nil {
		return nil, err
	}
	if err := c.core.acquire(); err != nil {
		body.discard()
		return nil, err
	}
	inFlight := c.core.streams.Add(1)
	bound, err := callBound(ctx, o, c.core.rt.virtual)
	if err != nil {
		body.discard()
		c.core.endStream()
		return nil, err
	}
	// A token always: the body's reads honour it, and Body.Close uses it to interrupt one.
	state := newCallState(ctx, bound.coreEndsDeadline)
	streamsBody := body.reader != nil
	native, sentURL, err := nativeRequest(req, body, o, bound.ms, bound.set, state.token)
	if err != nil {
		state.free()
		c.core.endStream()
		return nil, err
	}
	p := &prepared{req: req, native: native, state: state, sentURL: sentURL, traced: o.trace || c.core.traces,
		alone: inFlight == 1, inFlight: inFlight, streamsBody: streamsBody}
	if c.core.hooks != nil {
		p.hooks = &callHooks{hooks: *c.core.hooks, state: state}
		if err := p.hooks.install(native); err != nil {
			C.humus_request_free(native)
			state.free()
			c.core.endStream()
			return nil, err
		}
	}
	if ctx.Done() != nil {
		p.stateHandle = newHandle(state)
	}
	return p, nil
}

// run makes the prepared call — stepped on this goroutine, on the event loop or blocking in C (see Do) — and
// returns at its headers.
func (c *Client) run(p *prepared) (*Response, error) {
	defer C.humus_request_free(p.native)
	if p.stateHandle != 0 {
		defer deleteHandle(p.stateHandle)
	}
	state := p.state
	if c.core.stepsCall(p) {
		return c.runStepped(p)
	}
	if c.core.onLoop(p.alone) && !p.streamsBody && queuedCompletions() {
		return c.openOnLoop(p)
	}
	state.watch()
	var resp *C.humus_response
	var cerr *C.humus_error
	var callbackErr C.uintptr_t
	status := C.humusgo_client_open(c.core.native, p.native, C.uintptr_t(p.stateHandle), &resp, &cerr, &callbackErr)
	cause := takeCallbackError(callbackErr)
	if status != C.HUMUS_OK {
		return nil, c.failed(p, takeCallError(status, cerr), cause)
	}
	return c.opened(p, resp, nil)
}

// failed ends a call of run's that got no response: it lets go of what the call held and returns its error,
// whose cause is a callback's failure (cause, from a blocking call) or the context's.
func (c *Client) failed(p *prepared, e *Error, cause error) error {
	p.state.unwatch()
	p.state.free()
	c.core.endStream()
	if hookErr := p.hooks.failure(); hookErr != nil {
		return hookFailed(e, hookErr)
	}
	if e.Status == StatusCallback && cause != nil {
		e.cause = cause
	} else {
		e.cause = contextCause(p.req.Context(), e.Status)
	}
	return e
}

// opened makes the Response of a call of run's whose headers came. wait is the netpoller's watch on the
// call's socket when a stepped call made one (nil otherwise): the body's reads use it if it is theirs.
func (c *Client) opened(p *prepared, resp *C.humus_response, wait *socketWait) (*Response, error) {
	state := p.state
	if hookErr := p.hooks.failure(); hookErr != nil {
		// The last attempt's response hook failed: the response is closed unread, the call fails.
		attempts := int(C.humus_response_attempts(resp))
		C.humus_response_free(resp)
		if wait != nil {
			wait.close()
		}
		state.unwatch()
		state.free()
		c.core.endStream()
		return nil, hookFailed(&Error{Attempts: attempts}, hookErr)
	}
	// The response now holds the client's reference, the token and the watcher, until its body ends.
	call := &streamCall{resp: resp, state: state, core: c.core, ctx: p.req.Context(), wait: wait}
	r := newStreamedResponse(call, p.req, p.sentURL, c.core.decodes(p.req), p.traced)
	c.core.sawResponse(r.Response)
	return r, nil
}

// hookFailed makes e, the outcome of a call an attempt hook ended, that hook's failure: ErrCallback with
// its *CallbackError as the cause (the core reports a request hook's as HUMUS_E_CALLBACK, a response
// hook's as the cancel that ended the call).
func hookFailed(e *Error, hookErr error) *Error {
	e.Status = StatusCallback
	e.Message = "an attempt hook failed, which ends the call: nothing more is sent (docs/retries.md §6.7)"
	e.Fields = nil
	e.RetryAfter = 0
	e.cause = hookErr
	return e
}

// onLoop says whether a Do runs on the event loop (loop_body.go) rather than blocking in C. Measured
// (bench/HISTORY.md "The Go boundary"): alone, a call is cheapest on its own thread, which reads its socket
// itself. Joining others, the loop costs less CPU per call than threads blocking in C: half over HTTP/2,
// where they share one connection, and a third less over HTTP/1.1 for a body that reaches Go whole with
// its headers (under HUMUS_READ_AHEAD_WHOLE). A body that flows through the ring costs the loop more over
// HTTP/1.1 than threads reading their own sockets on every core (for 256 MiB bodies, half their
// throughput: the one loop thread reads them all), so such calls block until the client's last body
// that told its size was small.
func (c *clientCore) onLoop(alone bool) bool {
	return c.readsOnLoop && (c.loopAlways || (!alone && (c.multiplexed.Load() || c.smallBodies.Load())))
}

// stepsCall says whether a Do is stepped on its goroutine (step.go) rather than run on the event loop or
// blocking in C. A call joining a few others over HTTP/1.1 is: it has a connection of its own on every path,
// and stepped it waits in Go with no OS thread held, as on the loop, without the loop's two thread hand-offs.
// Measured (bench/go_peers, 100 B, interleaved with the loop's build; bench/HISTORY.md, "2026-12-08: stepped
// calls"): at 16 goroutines stepping costs about a tenth less CPU a call than the loop, at 32 and 64 a fifth
// to a half more, where the loop thread serves many sockets per wake-up; so past stepMostInFlight calls the
// loop takes them.
// Over HTTP/2 the loop stays, whose calls share one connection (a stepped call's would be its own). A call
// alone still blocks, the cheapest way measured for one call (see onLoop).
// Like the loop, stepping needs a real clock and no Go classifier, policy or mock (readsOnLoop: their
// failures reach the caller only from a blocking call, see keepCallbackError), and no request body read from
// a Go reader; calls with attempt hooks are left to the paths whose hooks are tested.
func (c *clientCore) stepsCall(p *prepared) bool {
	if !c.readsOnLoop || p.streamsBody || p.hooks != nil {
		return false
	}
	if c.stepAlways {
		return true
	}
	return !c.loopAlways && !p.alone && p.inFlight <= stepMostInFlight && !c.multiplexed.Load()
}

// stepMostInFlight is the most Do calls in flight at which one more is stepped (see stepsCall): 16 measured
// better stepped, 32 better on the loop.
const stepMostInFlight = 16

// sawResponse records what onLoop decides by from a response of Do: its protocol and, when its headers
// tell it, its body's size.
func (c *clientCore) sawResponse(r *http.Response) {
	c.multiplexed.Store(r.ProtoMajor == 2)
	if r.ContentLength >= 0 {
		c.sawBody(r.ContentLength)
	}
}

// sawBody records the size of a body of Do's, told by its headers or, without them, counted to its end.
func (c *clientCore) sawBody(n int64) { c.smallBodies.Store(n < C.HUMUS_READ_AHEAD_WHOLE) }

// decodes says whether the core asks for a compressed body for req and hands over the decoded bytes: the
// setting decompress is on and the caller set neither Accept-Encoding nor Range (net/http's Transport rule),
// nor left Accept-Encoding out (a nil value: see leftOut), which asks for nothing.
func (c *clientCore) decodes(req *http.Request) bool {
	_, named := req.Header["Accept-Encoding"]
	return !c.compressionOff && req.Method != http.MethodHead && !named && req.Header.Get("Accept-Encoding") == "" &&
		req.Header.Get("Range") == ""
}

// bound is the per-call deadline handed to the core (humus_request_set_timeout_ms).
type bound struct {
	ms  int64
	set bool
	// The core's own deadline comes no later than the context's, on a real clock: the context's deadline
	// then needs no cancellation (the core ends the call with StatusTimeout at that moment itself).
	coreEndsDeadline bool
}

// callBound merges the Timeout option and the context's deadline. A context already done fails at once,
// before anything is built or sent. The context's remaining time is rounded down to whole milliseconds, so
// the core's deadline comes first and the outcome is the core's timeout rather than a race with the
// context's own timer (with http.Client.Timeout, net/http rewrites errors that end after its timer fired).
func callBound(ctx context.Context, o *callOptions, virtual bool) (bound, error) {
	if err := ctx.Err(); err != nil {
		return bound{}, contextDoneError(err)
	}
	var b bound
	if o.hasTimeout {
		b.ms, b.set = durationToMs(o.timeout), true // <= 0 is refused by the core, naming "timeout"
	}
	if deadline, ok := ctx.Deadline(); ok {
		remaining := time.Until(deadline)
		if remaining < time.Millisecond {
			return bound{}, contextDoneError(context.DeadlineExceeded)
		}
		if remaining <= time.Hour { // beyond the core's maximum; the settings' timeout (<= 1h) ends it sooner
			ms := int64(remaining / time.Millisecond)
			if !b.set || ms < b.ms {
				b.ms, b.set = ms, true
			}
			b.coreEndsDeadline = !virtual && b.ms <= ms
		}
	}
	return b, nil
}

func contextDoneError(err error) *Error {
	e := &Error{Status: StatusCancelled, Message: "the request's context was cancelled before the call started", cause: err}
	if err == context.DeadlineExceeded {
		e.Status, e.Message = StatusTimeout, "the request's context deadline passed before the call started"
	}
	return e
}

// contextCause is the context's error to wrap in a call's *Error, when the context is why the call ended.
func contextCause(ctx context.Context, status Status) error {
	err := ctx.Err()
	switch status {
	case StatusCancelled:
		return err
	case StatusTimeout:
		if err == context.DeadlineExceeded {
			return err
		}
		// The core's deadline fires up to 1 ms before the context's (see callBound).
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= 2*time.Millisecond {
			return context.DeadlineExceeded
		}
	}
	return nil
}

// callState is a call whose context can end (a blocking Do or a submitted Start): the native cancel token,
// and the watcher that triggers it. A nil *callState (context.Background) does nothing.
type callState struct {
	ctx              context.Context
	token            *C.humus_cancel
	coreEndsDeadline bool
	stop             func() bool
	stopped          chan struct{}
	// waiting is the socket a streamed body's Read waits on in the netpoller (socketWait), while it does:
	// trigger ends that wait too.
	waiting atomic.Pointer[socketWait]
	// mu orders trigger with free: Call.Cancel and a failing response hook may trigger at any time.
	mu    sync.Mutex
	freed bool // guarded by mu
}

func newCallState(ctx context.Context, coreEndsDeadline bool) *callState {
	s := &callState{ctx: ctx, coreEndsDeadline: coreEndsDeadline}
	C.humus_cancel_new(&s.token)
	return s
}

// nativeToken is the token to hand the request, or nil for no call state (a context that cannot end).
func (s *callState) nativeToken() *C.humus_cancel {
	if s == nil {
		return nil
	}
	return s.token
}

// watch triggers the token when the context ends (context.AfterFunc: no goroutine until then).
func (s *callState) watch() {
	if s == nil || s.ctx.Done() == nil {
		return
	}
	s.stopped = make(chan struct{})
	s.stop = context.AfterFunc(s.ctx, func() {
		defer close(s.stopped)
		s.cancelIfDone()
	})
}

// unwatch stops the watcher, waiting for it if it already started: the token is freed next.
func (s *callState) unwatch() {
	if s == nil || s.stop == nil {
		return
	}
	if !s.stop() {
		<-s.stopped
	}
}

// cancelIfDone triggers the token when the context ended (and the core does not end it itself); it says
// whether it did.
func (s *callState) cancelIfDone() bool {
	err := s.ctx.Err()
	if err == nil || (err == context.DeadlineExceeded && s.coreEndsDeadline) {
		return false
	}
	s.trigger()
	return true
}

// trigger cancels the call: the token, which a read in the library sees, and a wait in the netpoller for
// the body's socket, which then reads again and sees it.
func (s *callState) trigger() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return
	}
	C.humus_cancel_trigger(s.token)
	if w := s.waiting.Load(); w != nil {
		w.interrupt()
	}
}

// free releases the Go side's handle on the token (requests and calls holding it keep theirs).
func (s *callState) free() {
	if s != nil {
		s.mu.Lock()
		s.freed = true
		C.humus_cancel_free(s.token)
		s.mu.Unlock()
	}
}

// Transport is the http.RoundTripper whose calls are the C core's (Client.Do); get one from
// Client.Transport. It is what NewClient's *http.Client uses; it may also serve any *http.Client (give it
// CheckRedirect: FollowWithinOrigin for the core's redirect rule; net/http's default follows up to 10
// redirects, and one to another origin then fails with ErrCrossOrigin). Safe for concurrent use.
type Transport struct {
	client *Client
}

// noFollow is the option RoundTrip adds last: a RoundTripper follows no redirect (net/http's loop does).
var noFollow = FollowRedirects(false)

// RoundTrip makes one call (Client.Do) and returns its *http.Response, a 3xx included: as http.RoundTripper
// says, it follows no redirect, so net/http's loop and the client's CheckRedirect decide (see
// Client.HTTPClient). Errors are *Error values. Safe for concurrent use.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.client == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &Error{Status: StatusMisuse, Message: "a zero humushttp.Transport has no client: use Client.Transport"}
	}
	resp, err := t.client.Do(req, noFollow)
	if err != nil {
		var e *Error
		// req.Response is set while net/http follows a redirect: say what to do instead of following it.
		if req.Response != nil && errors.As(err, &e) && e.Status == StatusCrossOrigin {
			e.Message += "; a redirect (" + req.Response.Status + ") that CheckRedirect allowed: this client " +
				"sends nothing to another origin (docs/origin.md §2), so return http.ErrUseLastResponse from " +
				"CheckRedirect (as FollowWithinOrigin does) to get the 3xx, or call that origin with a client of its own"
		}
		return nil, err
	}
	return resp.Response, nil
}

// Client is the Client this transport calls through. Safe for concurrent use.
func (t *Transport) Client() *Client { return t.client }
