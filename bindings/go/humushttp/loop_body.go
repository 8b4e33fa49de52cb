package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
	"unsafe"
)

// A streamed Do whose attempts and body reads run on the runtime's event loop (body_pump.c): the call is
// submitted with humus_client_submit_open, its headers come back through the completion queue, and the
// library reads the body ahead into a bounded ring (humus_response_read_ahead) that Read copies out of. No OS thread waits for the
// server, which is what a blocking cgo call per call in flight costs (bench/HISTORY.md "The Go boundary").
//
// Do takes this path for a call that joins others (clientCore.onLoop) when nothing in the call
// needs the caller's thread: a real clock, no Go callback on the client or the runtime (a classifier, a
// breaker policy, a mock transport: their failures reach the caller only from a blocking call, see
// keepCallbackError), and no request body read from a Go reader (the loop must not wait on one).

// bodySignal is what the completions goroutine delivers for one call: its headers once, then one wake-up
// per Read that found the ring empty. The cgo.Handle the C side keeps points here and nowhere else, so a
// Body dropped unclosed still becomes unreachable and its cleanup closes the native body.
type bodySignal struct {
	opened    chan openedBody // capacity 1: exactly one, from HUMUSGO_BODY_OPENED or a whole body's first ready
	ready     chan struct{}   // capacity 1: one HUMUSGO_BODY_READY per HUMUS_TOOK_WAIT
	headersIn atomic.Bool     // the headers were delivered: a ready is a wake-up from here on
}

type openedBody struct {
	status C.humus_status
	err    *C.humus_error
	resp   *C.humus_response
}

//export humusgoBodyEvent
func humusgoBodyEvent(h C.uintptr_t, kind C.int32_t, status C.humus_status, cerr *C.humus_error, resp *C.humus_response) {
	signal := cgo.Handle(h).Value().(*bodySignal)
	// A body held whole comes with its first ready, not with an HUMUSGO_BODY_OPENED of its own.
	if kind == C.HUMUSGO_BODY_OPENED || !signal.headersIn.Swap(true) {
		signal.headersIn.Store(true)
		signal.opened <- openedBody{status: status, err: cerr, resp: resp}
		return
	}
	signal.ready <- struct{}{}
}

// openOnLoop submits the call (the request is copied) and waits for its headers on a channel. The state's
// token cancels it; the client's reference taken by Do is the response's from here on, or released.
func (c *Client) openOnLoop(p *prepared) (*Response, error) {
	req, state := p.req, p.state
	live.loopCalls.Add(1)
	signal := &bodySignal{opened: make(chan openedBody, 1), ready: make(chan struct{}, 1)}
	h := newHandle(signal)
	fail := func(e *Error) (*Response, error) {
		deleteHandle(h)
		state.unwatch()
		state.free()
		c.core.endStream()
		if hookErr := p.hooks.failure(); hookErr != nil {
			return nil, hookFailed(e, hookErr)
		}
		return nil, e
	}
	state.watch() // before submit: a context ending meanwhile triggers the token, which the call honours
	var cerr *C.humus_error
	if st := C.humusgo_client_submit_open_queued(c.core.native, p.native, C.uintptr_t(h), nil, &cerr); st != C.HUMUS_OK {
		return fail(takeError(st, cerr))
	}
	opened := <-signal.opened
	if opened.status != C.HUMUS_OK {
		e := takeCallError(opened.status, opened.err)
		e.cause = contextCause(req.Context(), e.Status)
		return fail(e)
	}
	if p.hooks.failure() != nil {
		// The last attempt's response hook failed: the body is closed unread, the call fails.
		attempts := int(C.humus_response_attempts(opened.resp))
		C.humus_response_close(opened.resp)
		return fail(&Error{Attempts: attempts})
	}
	call := &loopCall{resp: opened.resp, handle: h, state: state, core: c.core, ctx: req.Context()}
	r := newLoopResponse(call, signal, req, p.sentURL, c.core.decodes(req), p.traced)
	c.core.sawResponse(r.Response)
	return r, nil
}

// loopCall is what an open body holds until it ends: the native response (its body read ahead), the handle
// its completions name, the cancel token and its context watcher, and a reference to the client.
type loopCall struct {
	resp   *C.humus_response
	ended  bool // a take saw the end or the failure: the result is counted, the free need not wait
	handle cgo.Handle
	state  *callState
	core   *clientCore
	ctx    context.Context
}

// end closes the body — which counts the result if it was not read to its end — then lets go of the rest.
// No completion names the handle any more: the headers came, and a wake-up comes only to a waiting Read.
func (c *loopCall) interrupt() { c.state.trigger() }

func (c *loopCall) end() {
	if c.ended {
		C.humus_response_free(c.resp)
	} else {
		// It returns once the result is counted, as a blocking body's close does; a pending read of the
		// ring has completed by then, and no ready comes after it.
		C.humus_response_close(c.resp)
	}
	live.responses.Add(-1)
	deleteHandle(c.handle)
	c.state.unwatch()
	c.state.free()
	c.core.endStream()
}

func newLoopResponse(call *loopCall, signal *bodySignal, req *http.Request, sentURL string, decodes, traced bool) *Response {
	live.responses.Add(1)
	resp := call.resp
	r := streamedHead(resp, req, sentURL, decodes)
	keepResponseTrace(traced, r.Response, resp)
	s := &loopStream{signal: signal}
	s.open(call)
	if r.ContentLength < 0 {
		s.unsized = call.core
	}
	s.cleanup = runtime.AddCleanup(s, (*loopCall).end, call)
	if hasNoBody(req, r.Response) {
		// Read to its end now, which counts the result and keeps the connection.
		var b [1]byte
		s.Read(b[:])
		s.Close()
		r.Response.Body = http.NoBody
	} else {
		r.Response.Body = s
	}
	return r
}

// loopStream is the Body of a call opened on the loop. Read copies what the loop has read ahead.
type loopStream struct {
	bodyGate[*loopCall]
	signal *bodySignal
	batch  *time.Timer // the Read's, made by its first wait
}

// Read copies the next bytes into p, waiting until at least one has come; io.EOF at the end, which counts
// the call's result. A failure mid-body is an *Error (errors.Is with ErrConnectionLost, ErrTimeout,
// ErrCancelled when the request's context ended: it then also matches the context's error). Not for
// concurrent use, except with Close.
func (s *loopStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return 0, errBodyClosed
	case s.err != nil:
		return 0, s.err
	case s.reading:
		return 0, errConcurrentRead
	case len(p) == 0:
		return 0, nil
	}
	call := s.call
	// A context that ended cancels the body now, and the bytes read ahead are dropped: the read must fail
	// as a blocking one would, with the breaker counting nothing.
	drop := C.uint32_t(0)
	if call.state.cancelIfDone() {
		drop = C.HUMUS_TAKE_DROP
	}
	for {
		var n C.size_t
		var took C.int32_t
		var cerr *C.humus_error
		// p holds no Go pointers and is used only during the call: the ring is copied straight into it.
		st := C.humus_response_take(call.resp, unsafe.Pointer(&p[0]), C.size_t(len(p)), drop, &n, &took, &cerr)
		switch {
		case st != C.HUMUS_OK:
			call.ended = true
			e := takeError(st, cerr)
			e.cause = contextCause(call.ctx, e.Status)
			s.err = e
			s.end()
			return 0, e
		case took == C.HUMUS_TOOK_BYTES:
			s.read += int64(n)
			return int(n), nil
		case took == C.HUMUS_TOOK_LAST:
			call.ended = true
			s.read += int64(n)
			s.err = io.EOF
			s.sawEnd()
			s.end()
			return int(n), io.EOF
		case took == C.HUMUS_TOOK_END:
			call.ended = true
			s.err = io.EOF
			s.sawEnd()
			s.end()
			return 0, io.EOF
		}
		drop = 0
		s.reading = true
		s.mu.Unlock()
		s.await(call.resp)
		s.mu.Lock()
		s.reading = false
		s.returned.Broadcast()
		if s.closed { // Close cancelled this read and waits to end the call
			return 0, errBodyClosed
		}
	}
}

// batchWait is how long a Read waits for the loop to gather a batch of a flowing body before it takes
// whatever came (humus_response_hurry): a wake-up per batch instead of per receive buffer, at a bounded delay.
const batchWait = 500 * time.Microsecond

// await waits for the one HUMUSGO_BODY_READY a HUMUS_TOOK_WAIT promises.
func (s *loopStream) await(resp *C.humus_response) {
	if s.batch == nil {
		s.batch = time.NewTimer(batchWait)
	} else {
		s.batch.Reset(batchWait)
	}
	select {
	case <-s.signal.ready:
		s.batch.Stop()
	case <-s.batch.C:
		C.humus_response_hurry(resp)
		<-s.signal.ready
	}
}
