package humushttp

/*
#include <humus_http.h>
*/
import "C"

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"unsafe"
)

// streamCall is what a blocking call holds until its body ends (humus_client_open): the native response,
// the cancel token its reads honour and the context watcher that triggers it, and a reference to its client
// (the C ABI frees a response before its client).
type streamCall struct {
	resp  *C.humus_response
	state *callState
	core  *clientCore
	ctx   context.Context
	wait  *socketWait // the netpoller's watch on the body's socket, from its first wait (socket_wait.go)
}

// end frees the response — which counts the result if the body was not read to its end — then the token,
// then the reference to the client.
func (c *streamCall) interrupt() { c.state.trigger() }

func (c *streamCall) end() {
	if c.wait != nil {
		c.wait.close()
	}
	freeResponse(c.resp)
	c.state.unwatch()
	c.state.free()
	c.core.endStream()
}

// newStreamedResponse takes charge of call. decodes says the core asked for a compressed body and decodes
// it (see Client.decodes); traced that the call keeps its trace (RecordTrace).
func newStreamedResponse(call *streamCall, req *http.Request, sentURL string, decodes, traced bool) *Response {
	live.responses.Add(1)
	r := streamedHead(call.resp, req, sentURL, decodes)
	keepResponseTrace(traced, r.Response, call.resp)
	if hasNoBody(req, r.Response) {
		// No body: reach its end now, which counts the result and keeps the connection.
		var b [1]byte
		var n C.size_t
		C.humus_response_read(call.resp, unsafe.Pointer(&b[0]), 1, &n, nil)
		call.end()
		r.Response.Body = http.NoBody
	} else {
		s := &stream{}
		s.open(call)
		if r.ContentLength < 0 {
			s.unsized = call.core
		}
		s.cleanup = runtime.AddCleanup(s, (*streamCall).end, call)
		r.Response.Body = s
	}
	return r
}

// streamedHead is the Response of a streamed body before its Body is set.
func streamedHead(resp *C.humus_response, req *http.Request, sentURL string, decodes bool) *Response {
	r, _ := responseHead(resp, req, sentURL, false)
	out := r.Response
	out.ContentLength = -1
	if v, err := strconv.ParseInt(out.Header.Get("Content-Length"), 10, 64); err == nil && v >= 0 {
		out.ContentLength = v
	}
	// The core removes Content-Encoding and Content-Length when it decodes, and says no more: a body it asked
	// a coding for that comes without either was decoded, as far as the C ABI lets one tell (an unencoded
	// body of unknown length reads as Uncompressed too; its ContentLength is -1 either way).
	out.Uncompressed = decodes && out.ContentLength < 0 && out.Header.Get("Content-Encoding") == ""
	return r
}

// hasNoBody says that out can have no body (net/http then gives http.NoBody).
func hasNoBody(req *http.Request, out *http.Response) bool {
	return req.Method == http.MethodHead || out.ContentLength == 0 || out.StatusCode == http.StatusNoContent ||
		out.StatusCode == http.StatusNotModified
}

// stream is the Body of a blocking call: each Read is a read of the library's into the caller's buffer that
// waits in the netpoller while nothing has come (streamCall.readReady), made without the gate's lock so that
// Close can interrupt it.
type stream struct {
	bodyGate[*streamCall]
}

// Read reads the next bytes into p, blocking until at least one has come; io.EOF at the end, which counts
// the call's result. A failure mid-body is an *Error (errors.Is with ErrConnectionLost, ErrTimeout,
// ErrCancelled when the request's context ended: it then also matches the context's error), and frees the
// response. Not for concurrent use, except with Close.
func (s *stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return 0, errBodyClosed
	case s.err != nil:
		s.mu.Unlock()
		return 0, s.err
	case s.reading:
		s.mu.Unlock()
		return 0, errConcurrentRead
	case len(p) == 0:
		s.mu.Unlock()
		return 0, nil
	}
	s.reading = true
	call := s.call
	s.mu.Unlock()
	// A context that ended before this read cancels it now: the watcher would too, but a moment later, when
	// this read may already have returned bytes.
	call.state.cancelIfDone()

	var n C.size_t
	var cerr *C.humus_error
	st := call.readReady(p, &n, &cerr)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading = false
	s.returned.Broadcast()
	if s.closed { // Close cancelled this read and waits to free the response
		if cerr != nil {
			C.humus_error_free(cerr)
		}
		return 0, errBodyClosed
	}
	if st != C.HUMUS_OK {
		e := takeError(st, cerr)
		e.cause = contextCause(call.ctx, e.Status)
		s.err = e
		s.end()
		return 0, e
	}
	if n == 0 {
		s.err = io.EOF
		s.sawEnd()
		s.end()
		return 0, io.EOF
	}
	s.read += int64(n)
	return int(n), nil
}
