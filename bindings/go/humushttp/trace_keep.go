package humushttp

/*
#include <stdlib.h>
#include <humus_http.h>
*/
import "C"

import (
	"net/http"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// Where the decision traces live between a call and TraceOf / TraceOfError (trace.go).
//
// An error keeps the library's humus_error, which holds its call's trace, until the garbage collector finds
// the *Error unreachable: no call pays for rendering a trace nobody reads, and a failed call pays one cleanup
// registration. A response's native handle cannot stay: its body's memory and the end of its call (the
// breaker's count, the connection, the client's reference) go with it when the body ends. So a response's
// trace is kept only when its call asks (RecordTrace, WithTraces): rendered once, when the head is built,
// and found again from the *http.Response through a table of weak keys — net/http hands the caller the very
// *http.Response the transport returned, whatever it does to the Body (a Timeout wraps it).

// errorTrace is a call error's humus_error, freed once no *Error (or copy of one) refers to it.
type errorTrace struct{ native *C.humus_error }

func keepErrorTrace(e *Error, native *C.humus_error) {
	t := &errorTrace{native: native}
	runtime.AddCleanup(t, func(n *C.humus_error) { C.humus_error_free(n) }, native)
	e.trace = t
}

// render is the trace's JSON; nil when the library could not make it (out of memory).
func (t *errorTrace) render() []byte {
	var text *C.char
	var n C.size_t
	if C.humus_error_trace(t.native, &text, &n) != C.HUMUS_OK {
		return nil
	}
	defer C.humus_string_free(text)
	out := C.GoBytes(unsafe.Pointer(text), C.int(n))
	runtime.KeepAlive(t) // the cleanup must not free the error while it is read
	return out
}

// takeCallError is takeError for the outcome of a call: the *Error keeps the humus_error for its trace.
func takeCallError(status C.humus_status, err *C.humus_error) *Error {
	if err == nil {
		return takeError(status, nil)
	}
	e := errorFrom(err)
	keepErrorTrace(e, err)
	return e
}

// responseTraces maps a weak *http.Response to its trace's JSON ([]byte); the entry goes when the response
// does.
var responseTraces sync.Map

// keepResponseTrace renders native's trace for resp when its call asked for it (RecordTrace, WithTraces).
// The core's trace is complete and immutable once the head is out — a streamed body's verdict is counted
// later but not written into it (docs/trace.md §20.1) — so one rendering, now, is all there is to keep.
func keepResponseTrace(want bool, resp *http.Response, native *C.humus_response) {
	if !want {
		return
	}
	var text *C.char
	var n C.size_t
	if C.humus_response_trace(native, &text, &n, nil) != C.HUMUS_OK {
		return
	}
	out := C.GoBytes(unsafe.Pointer(text), C.int(n))
	C.humus_string_free(text)
	key := weak.Make(resp)
	responseTraces.Store(key, out)
	runtime.AddCleanup(resp, func(k weak.Pointer[http.Response]) { responseTraces.Delete(k) }, key)
}

// responseTraceText is the JSON kept for resp; nil when none was.
func responseTraceText(resp *http.Response) []byte {
	if resp == nil {
		return nil
	}
	if text, ok := responseTraces.Load(weak.Make(resp)); ok {
		return text.([]byte)
	}
	return nil
}
