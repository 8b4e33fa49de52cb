package humushttp

/*
#cgo pkg-config: humus_http

// The functions of a call's hot path that never run Go (no callback, sink or destroy can fire inside
// them): nocallback lets cgo skip its preparation for a callback, and noescape keeps the Go pointers they
// are given (out-parameters, the request's buffer) on the caller's stack instead of the heap, since they
// keep none past their return. Both are only sound together here: a callback could grow the goroutine's
// stack and move what a noescape pointer points to. A function that can run Go (humusgo_client_open, the
// body reads of a blocking call, anything that frees a request or a response) is not listed: cgo's check
// would abort the process if one listed did.
#cgo nocallback humusgo_request_new
#cgo noescape humusgo_request_new
#cgo nocallback humusgo_response_read
#cgo noescape humusgo_response_read
#cgo nocallback humusgo_response_headers
#cgo noescape humusgo_response_headers
#cgo nocallback humusgo_redirect_read
#cgo noescape humusgo_redirect_read
#cgo nocallback humusgo_redirect_headers
#cgo noescape humusgo_redirect_headers
#cgo nocallback humus_response_take
#cgo noescape humus_response_take
#cgo nocallback humusgo_completions_take
#cgo noescape humusgo_completions_take
#cgo nocallback humus_cancel_new
#cgo noescape humus_cancel_new
#cgo nocallback humus_cancel_free
#cgo nocallback humus_response_attempts
// A stepped call's start and advances keep no Go pointer past their return, but a Go sink may run inside
// them, so they are not nocallback: cgo then still moves what they are given to the heap (it keeps a
// noescape argument on the stack only with nocallback too), and step.go passes heap fields anyway.
#cgo noescape humus_client_step_start
#cgo noescape humus_step_advance
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The ABI major this binding was compiled against must be the one loaded at run time (STYLE.md: version
// both ways). A mismatch is kept here and returned by every constructor rather than panicking at init.
var loadErr = checkVersion()

func checkVersion() error {
	if loaded := int(C.humus_abi_version()); loaded != C.HUMUS_ABI_VERSION {
		return &Error{Status: StatusMisuse, Message: fmt.Sprintf(
			"libhumus_http %s (ABI major %d) is loaded; this binding was built against ABI major %d (header %s)",
			C.GoString(C.humus_version()), loaded, C.HUMUS_ABI_VERSION, C.HUMUS_VERSION_STRING)}
	}
	return nil
}

// Version is the version of the loaded libhumus_http, e.g. "0.1.0". Safe for concurrent use.
func Version() string { return C.GoString(C.humus_version()) }

// takeError turns an error the library wrote through `humus_error **` into an *Error and frees it. err is
// NULL only after one of the few functions without an err parameter, whose status says everything (the
// header gives the reason beside each): no thread-local last error is read, so no OS thread is pinned.
func takeError(status C.humus_status, err *C.humus_error) *Error {
	if err == nil {
		return &Error{Status: Status(status), Message: Status(status).String()}
	}
	defer C.humus_error_free(err)
	return errorFrom(err)
}

func errorFrom(e *C.humus_error) *Error {
	out := &Error{
		Status:     Status(C.humus_error_status(e)),
		Message:    C.GoString(C.humus_error_message(e)),
		Attempts:   int(C.humus_error_attempts(e)),
		RetryAfter: msToDuration(int64(C.humus_error_retry_after_ms(e))),
	}
	if n := int(C.humus_error_field_count(e)); n > 0 {
		out.Fields = make([]string, 0, n)
		for i := 0; i < n; i++ {
			if f := C.humus_error_field(e, C.size_t(i)); f != nil {
				out.Fields = append(out.Fields, C.GoString(f))
			}
		}
	}
	return out
}

// cstrings packs Go strings NUL-terminated into one Go byte slice and remembers their offsets, so one cgo call
// can take many strings without a C allocation each. Go memory holding no Go pointers may be passed to C for
// the duration of a call; the library copies what it keeps.
type cstrings struct {
	buf     []byte
	offsets []uint32
}

func (p *cstrings) add(s string) {
	p.offsets = append(p.offsets, uint32(len(p.buf)))
	p.buf = append(p.buf, s...)
	p.buf = append(p.buf, 0)
}

func (p *cstrings) none() { p.offsets = append(p.offsets, C.HUMUSGO_NONE) }

func (p *cstrings) optional(s string) {
	if s == "" {
		p.none()
	} else {
		p.add(s)
	}
}

// cbytes is a pointer to b's first byte for a C call (nil when empty).
func cbytes(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// cstr is s NUL-terminated in Go memory, to pass to a C function that reads it during the call only.
func cstr(s string) *C.char {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return (*C.char)(unsafe.Pointer(&b[0]))
}
