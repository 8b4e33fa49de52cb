package humushttp

// Attempt hooks (docs/retries.md §6.7): Go functions run around every attempt of a call, each retry and
// redirect hop included, through the C ABI's humus_attempt_hooks. Each call gets a table of its own
// (humus_request_set_attempt_hooks), whose user_data is a cgo.Handle to that call's callHooks: a hook's
// failure is kept there, whichever thread ran it, and the call reports it, blocking or not.

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"net/http"
	"net/textproto"
	"runtime/cgo"
	"strings"
	"sync"
)

// AttemptHooks run around every attempt of every call of a client (WithAttemptHooks): for a header of
// each attempt's own (a signature, a fresh token), logging or counting attempts. Deciding whether to retry
// is the classifier's (WithClassifier), not a hook's. Either func may be nil.
//
// Request runs once the breaker and the bulkhead have let an attempt go, just before it is sent: every
// retry and every redirect hop the core follows (a hop starts again at Attempt 1). What it changes of
// Header is sent with that attempt only — the next one starts again from the call's own headers. It may
// add headers and replace values (several values of one name are sent joined with ", "); removing a
// header, changing Method or URL, or setting a header the client owns (Host, Content-Length,
// Transfer-Encoding, Connection, ...) fails the call. An error (or a panic) ends the call at once: that
// attempt is not sent, no retry follows, and the call fails with ErrCallback whose cause is a
// *CallbackError wrapping it.
//
// Response runs once per attempt that got a response (a status and headers; not for an attempt that
// failed without one), before the classifier sees it — for a retried or redirected attempt too, whose
// body is not the caller's. An error (or a panic) ends the call: no further attempt is sent and the call
// fails with ErrCallback wrapping it, its response (if it was the last) closed unread.
//
// Where they run: on the thread that drives the attempt — inside the goroutine that called Do while Do
// blocks in C (the goroutine is the caller's, on its locked OS thread for the call), on the runtime's
// event-loop thread (a goroutine of its own) for a call on the loop (Start, BufferBody, and a Do that
// joins others on the loop), or on the goroutine running the loop (RuntimeOptions.LoopOnNetpoller). So
// they may run on several goroutines at once for different calls, must be safe for concurrent use, and
// must be short and never block: on the loop they hold up every call of the runtime. The values they
// receive are the hook's for the duration of the call only.
type AttemptHooks struct {
	Request  func(*AttemptRequest) error
	Response func(*AttemptResponse) error
}

// AttemptRequest is one attempt as a request hook sees it. Method, URL and Attempt are read-only; Header
// is the attempt's headers (the configured ones, the call context's and the request's own; the transport
// adds Host, Content-Length and the like, and traceparent is set after the hook when a span sink traces
// the call), the hook's to change.
type AttemptRequest struct {
	Method  string
	URL     string // the attempt's full URL (a redirect hop's own)
	Attempt int    // 1 for the first attempt of a request; a redirect hop starts again at 1
	Header  http.Header
}

// AttemptResponse is one attempt's response as a response hook sees it: no body.
type AttemptResponse struct {
	Method     string
	URL        string // the URL the attempt was sent to
	Attempt    int
	StatusCode int
	Header     http.Header
}

// WithAttemptHooks runs h around every attempt of every call of the client (see AttemptHooks). Both funcs
// nil is an *Error with ErrProgram when the client is built (docs/settings.md §3.3).
func WithAttemptHooks(h AttemptHooks) Option {
	return func(o *clientOptions) { o.hooks, o.hooksSet = h, true }
}

// callHooks is one call's: the client's hooks, what they failed with, and the attempt in flight (its URL
// for the response hook). The hooks of one call run one at a time (its attempts are sequential), but on
// whichever thread drives it: mu orders them with the goroutine that reads err once the call has ended.
type callHooks struct {
	hooks AttemptHooks
	state *callState // the call's cancel token: a failing response hook ends the call at once

	mu     sync.Mutex
	err    error // guarded by mu: the first hook failure, a *CallbackError
	method string
	url    string
}

// failure is the hook failure that ended the call, or nil.
func (h *callHooks) failure() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *callHooks) fail(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
}

// install gives native a table of its own for this call; the table's destroy deletes the handle, once,
// when the request and every call made with it are freed. On failure the handle is deleted here.
func (h *callHooks) install(native *C.humus_request) error {
	handle := newHandle(h)
	var cerr *C.humus_error
	if st := C.humusgo_set_attempt_hooks(native, C.uintptr_t(handle), cbool(h.hooks.Response != nil), &cerr); st != C.HUMUS_OK {
		deleteHandle(handle) // refused: the library did not take it
		return takeError(st, cerr)
	}
	return nil
}

// hookError is the *Error of a call a hook ended: ErrCallback, the hook's *CallbackError as its cause.
func hookError(cause error, attempts int) *Error {
	return &Error{Status: StatusCallback, Message: "an attempt hook failed, which ends the call (docs/retries.md §6.7)",
		Attempts: attempts, cause: cause}
}

//export humusgoAttemptBefore
func humusgoAttemptBefore(hh C.uintptr_t, r *C.humus_attempt_request) C.humus_status {
	h := cgo.Handle(hh).Value().(*callHooks)
	if h.failure() != nil { // a response hook failed: nothing more is sent
		return C.HUMUS_E_CALLBACK
	}
	var info C.humusgo_attempt_request_info
	C.humusgo_attempt_request_read(r, &info)
	req := &AttemptRequest{Method: C.GoString(info.method), URL: C.GoString(info.url), Attempt: int(info.number)}
	h.mu.Lock()
	h.method, h.url = req.Method, req.URL
	h.mu.Unlock()
	if h.hooks.Request == nil {
		return C.HUMUS_OK
	}
	sent := readAttemptHeaders(int(info.header_count), func(out *C.humusgo_header, n C.size_t) {
		C.humusgo_attempt_request_headers(r, out, n)
	})
	req.Header = sent.Clone()
	method, target := req.Method, req.URL
	err := guard("request hook", func() error { return h.hooks.Request(req) })
	if err == nil {
		err = applyHeaders(r, req, method, target, sent)
	}
	if err != nil {
		h.fail(err)
		return C.HUMUS_E_CALLBACK
	}
	return C.HUMUS_OK
}

// applyHeaders sends what the hook changed of the headers with this attempt.
func applyHeaders(r *C.humus_attempt_request, req *AttemptRequest, method, target string, sent http.Header) error {
	refuse := func(format string, args ...any) error {
		return &CallbackError{Callback: "request hook", Err: fmt.Errorf(format, args...)}
	}
	if req.Method != method || req.URL != target {
		return refuse("it changed the attempt's method or URL: a request hook changes headers only")
	}
	for name := range sent {
		if len(req.Header.Values(name)) == 0 {
			return refuse("it removed the header %q: a request hook may add and replace headers, not remove them", name)
		}
	}
	for name, values := range req.Header {
		if len(values) == 0 {
			return refuse("it left the header %q without a value: a request hook may add and replace headers, not remove them", name)
		}
		if same(values, sent.Values(name)) {
			continue
		}
		value := strings.Join(values, ", ")
		if err := refuseNUL(name, name+value); err != nil {
			return &CallbackError{Callback: "request hook", Err: err}
		}
		var cerr *C.humus_error
		if st := C.humus_attempt_request_set_header(r, cstr(name), cstr(value), &cerr); st != C.HUMUS_OK {
			return &CallbackError{Callback: "request hook", Err: takeError(st, cerr)}
		}
	}
	return nil
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

//export humusgoAttemptAfter
func humusgoAttemptAfter(hh C.uintptr_t, a *C.humus_attempt) {
	h := cgo.Handle(hh).Value().(*callHooks)
	var info C.humusgo_attempt_info
	C.humusgo_attempt_read(a, &info)
	if info.status == 0 || h.hooks.Response == nil || h.failure() != nil { // no response came
		return
	}
	h.mu.Lock()
	resp := &AttemptResponse{Method: h.method, URL: h.url, Attempt: int(info.number), StatusCode: int(info.status)}
	h.mu.Unlock()
	resp.Header = readAttemptHeaders(int(C.humus_attempt_header_count(a)), func(out *C.humusgo_header, n C.size_t) {
		C.humusgo_attempt_headers(a, out, n)
	})
	if err := guard("response hook", func() error { return h.hooks.Response(resp) }); err != nil {
		h.fail(err)
		// The C `after` cannot fail the call: the token ends it now (a wait for a retry included), and the
		// next attempt's `before` refuses it in any case. The call reports this failure, not a cancel.
		h.state.trigger()
	}
}

// readAttemptHeaders copies n headers that read fills in, names canonicalised, repeated names in order.
func readAttemptHeaders(n int, read func(*C.humusgo_header, C.size_t)) http.Header {
	header := make(http.Header, n)
	if n == 0 {
		return header
	}
	raw := make([]C.humusgo_header, n)
	read(&raw[0], C.size_t(n))
	for _, h := range raw {
		name := C.GoStringN(h.name, C.int(h.name_len))
		value := C.GoStringN(h.value, C.int(h.value_len))
		key := textproto.CanonicalMIMEHeaderKey(name)
		header[key] = append(header[key], value)
	}
	return header
}
