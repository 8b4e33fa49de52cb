package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"net/http"
	"sync"
)

// Call is an asynchronous call in flight on the runtime's event loop (Client.Start). Its methods are safe
// for concurrent use.
type Call struct {
	client  *clientCore
	req     *http.Request
	sentURL string
	onDone  func(*Response, error)
	traced  bool // RecordTrace: the response keeps its trace
	done    chan struct{}
	resp    *Response // set before done is closed
	err     error     // set before done is closed

	// The request's context cancels the call through the native token on its request (nil: a context
	// that never ends and no hooks), as Do's does; the core honours it for submitted calls too. A streamed
	// call always has one: Cancel triggers it.
	state    *callState
	hooks    *callHooks // the call's attempt hooks (buffered calls: a streamed one's are its run's)
	streamed bool       // Do's body path, run on a goroutine of the call's own (see Start)

	mu     sync.Mutex
	native *C.humus_call // guarded by mu; nil until Start has it and after the call ended
	ended  bool          // guarded by mu
}

// Start begins the call and returns at once: every rule of Do applies — bulkhead, breaker, retries,
// deadline, attempt hooks — and concurrent calls share the client's connections (HTTP/2 multiplexes them).
// A request that cannot be built fails here.
//
// Bodies stream as Do's do, through the same path (docs/bodies.md §7): the Response comes once its headers
// are in and its Body reads from the connection (close it), and req.Body is sent as it is read, GetBody
// its rewind — memory stays bounded whatever either body's size. The call runs on a goroutine of its own,
// which waits as Do does: on a channel while the runtime's event loop drives the call (a call that joins
// others of the client, with no req.Body streamed), else blocked in C with an OS thread, as a lone Do.
// With the call option BufferBody, on a client opened with Settings.Hedge set (only a buffered call hedges,
// docs/retries.md §6.8) and on a virtual-clock runtime, the call is instead submitted to the
// event loop and buffered: req.Body read whole first, the Response's Body the buffer the core filled
// (bounded by max_response_body), no goroutine and no OS thread waiting for it.
//
// done, when not nil, receives the outcome exactly once before Wait returns it. For a streamed call it
// runs on the call's own goroutine, and may read the Body. For a buffered one it runs on the one goroutine
// that delivers the completions of the process (completions.go; on a virtual-clock runtime, on the
// event-loop thread at the moment the call ends, where a blocking Do is refused with ErrMisuse): it must
// not block, since every other completion waits for it. Cancelling req's context cancels the call, as
// does Call.Cancel. Safe for concurrent use.
func (c *Client) Start(req *http.Request, done func(*Response, error), opts ...CallOption) (*Call, error) {
	o := collectCallOptions(req.Context(), opts)
	if o.buffer || c.core.hedges || c.core.rt.virtual {
		return c.startBuffered(req, done, &o)
	}
	p, err := c.prepare(req, &o)
	if err != nil {
		return nil, err
	}
	call := &Call{client: c.core, req: req, onDone: done, done: make(chan struct{}), state: p.state, streamed: true}
	go func() {
		r, err := c.run(p)
		call.finish(r, err)
	}()
	return call, nil
}

// startBuffered submits the call to the event loop (humus_client_submit): req.Body read whole first, the
// response's body buffered by the core.
func (c *Client) startBuffered(req *http.Request, done func(*Response, error), o *callOptions) (*Call, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if err := c.core.acquire(); err != nil {
		return nil, err
	}
	ctx := req.Context()
	bound, err := callBound(ctx, o, c.core.rt.virtual)
	if err != nil {
		c.core.release()
		return nil, err
	}
	var state *callState
	if ctx.Done() != nil || c.core.hooks != nil {
		state = newCallState(ctx, bound.coreEndsDeadline)
	}
	native, sentURL, err := nativeRequest(req, requestBody{data: body}, o, bound.ms, bound.set, state.nativeToken())
	if err != nil {
		state.free()
		c.core.release()
		return nil, err
	}
	defer C.humus_request_free(native) // submit copies it, and the call holds its token
	var hooks *callHooks
	if c.core.hooks != nil {
		hooks = &callHooks{hooks: *c.core.hooks, state: state}
		if err := hooks.install(native); err != nil {
			state.free()
			c.core.release()
			return nil, err
		}
	}

	call := &Call{client: c.core, req: req, sentURL: sentURL, onDone: done, done: make(chan struct{}), state: state,
		traced: o.trace || c.core.traces, hooks: hooks}
	h := newHandle(call)
	var handle *C.humus_call
	var cerr *C.humus_error
	state.watch() // before submit: a context ending meanwhile triggers the token, which the call honours
	var st C.humus_status
	if !c.core.rt.virtual && queuedCompletions() {
		st = C.humusgo_client_submit_queued(c.core.native, native, C.uintptr_t(h), &handle, &cerr)
	} else {
		st = C.humusgo_client_submit(c.core.native, native, C.uintptr_t(h), &handle, &cerr)
	}
	if st != C.HUMUS_OK {
		deleteHandle(h) // never submitted: no completion will delete it
		state.unwatch()
		state.free()
		c.core.release()
		return nil, takeError(st, cerr)
	}
	call.mu.Lock()
	if call.ended { // it completed before submit returned
		C.humus_call_free(handle)
	} else {
		call.native = handle
	}
	call.mu.Unlock()
	return call, nil
}

// Cancel cancels the call: it ends as soon as the event loop (or the thread blocked for it) gets to it
// (ErrCancelled, or the response buffered before a retry). For a streamed call whose Response came, it
// cancels the reading of its Body (as the request's context would); nothing once the call has ended.
// Safe from any goroutine, callbacks included.
func (call *Call) Cancel() {
	if call.streamed {
		call.state.trigger() // nothing once the body has ended and the token is freed
		return
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	if call.native != nil && !call.ended {
		C.humus_call_cancel(call.native)
	}
}

// Done is closed once the call has ended and Wait has its outcome. Safe for concurrent use.
func (call *Call) Done() <-chan struct{} { return call.done }

// Wait waits for the call to end and returns its outcome, the same one done received (if done read the
// body, it is read). The error is an *Error as Do's. Safe for concurrent use: every waiter gets the same
// outcome (read the Body from one goroutine).
func (call *Call) Wait() (*Response, error) {
	<-call.done
	return call.resp, call.err
}

// complete runs once, on the completions goroutine or the event-loop thread (see Start), with the library's
// outcome (ours to free).
func (call *Call) complete(status C.humus_status, resp *C.humus_response, cerr *C.humus_error) {
	var r *Response
	var err error
	hookErr := call.hooks.failure()
	switch {
	case status == C.HUMUS_OK && hookErr != nil: // the last attempt's response hook failed
		err = hookFailed(&Error{Attempts: int(C.humus_response_attempts(resp))}, hookErr)
		C.humus_response_free(resp)
	case status == C.HUMUS_OK:
		r = newResponse(resp, call.req, call.sentURL, call.traced)
	case hookErr != nil:
		err = hookFailed(takeCallError(status, cerr), hookErr)
	default:
		e := takeCallError(status, cerr)
		e.cause = contextCause(call.req.Context(), e.Status)
		err = e
	}
	call.mu.Lock()
	call.ended = true
	native := call.native
	call.native = nil
	call.mu.Unlock()
	if native != nil {
		C.humus_call_free(native)
	}
	// The watcher only triggers the token; once it is stopped (or has run) the Go side's handle goes.
	call.state.unwatch()
	call.state.free()
	call.finish(r, err)
	call.client.releaseOffLoop()
}

// finish hands the outcome to done, then to Wait.
func (call *Call) finish(r *Response, err error) {
	if call.onDone != nil {
		if panicked := guard("call done", func() error { call.onDone(r, err); return nil }); panicked != nil {
			if r != nil {
				r.Body.Close()
			}
			r, err = nil, panicked
		}
	}
	call.resp, call.err = r, err
	close(call.done)
}
