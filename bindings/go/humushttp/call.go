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
	// that never ends and no hooks), as Do's does; the core honours it for submitted calls too.
	state *callState
	hooks *callHooks // the call's attempt hooks

	mu     sync.Mutex
	native *C.humus_call // guarded by mu; nil until Start has it and after the call ended
	ended  bool          // guarded by mu
}

// Start begins the call and returns at once (humus_client_submit): every rule of Do applies — bulkhead
// (waiting on a timer, not a goroutine), breaker, retries, deadline, attempt hooks — and concurrent calls
// share the client's connections (HTTP/2 multiplexes them). A request that cannot be built fails here.
//
// req.Body is read whole first, and the Response's Body is buffered: the attempts run on the event loop,
// which must not wait on a Go reader, and the C ABI has no asynchronous body read yet.
//
// done, when not nil, receives the outcome exactly once before Wait returns it, on the one goroutine that
// delivers the completions of the process (completions.go; on a virtual-clock runtime, on the event-loop
// thread at the moment the call ends, where a blocking Do is refused with ErrMisuse): it must not block,
// since every other completion waits for it. Cancelling req's context cancels the call, as does
// Call.Cancel. Safe for concurrent use.
func (c *Client) Start(req *http.Request, done func(*Response, error), opts ...CallOption) (*Call, error) {
	o := collectCallOptions(req.Context(), opts)
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if err := c.core.acquire(); err != nil {
		return nil, err
	}
	ctx := req.Context()
	bound, err := callBound(ctx, &o, c.core.rt.virtual)
	if err != nil {
		c.core.release()
		return nil, err
	}
	var state *callState
	if ctx.Done() != nil || c.core.hooks != nil {
		state = newCallState(ctx, bound.coreEndsDeadline)
	}
	native, sentURL, err := nativeRequest(req, requestBody{data: body}, &o, bound.ms, bound.set, state.nativeToken())
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

// Cancel cancels the call: it ends as soon as the event loop gets to it (ErrCancelled, or the response
// buffered before a retry). Nothing once it has ended. Safe from any goroutine, callbacks included.
func (call *Call) Cancel() {
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
