package humushttp

// The //export trampolines: the Go side of glue.c's callback tables. cgo allows only declarations in the
// preamble of a file that exports, hence this file of its own.

/*
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"runtime/debug"
	"unsafe"
)

//export humusgoDeleteHandle
func humusgoDeleteHandle(h C.uintptr_t) { deleteHandle(cgo.Handle(h)) }

//export humusgoClassify
func humusgoClassify(h C.uintptr_t, a *C.humus_attempt, out *C.humus_classification) C.humus_status {
	classify := cgo.Handle(h).Value().(Classifier)
	attempt := attemptFrom(a)
	var c Classification
	err := guard("classifier", func() (err error) {
		c, err = classify(attempt)
		return err
	})
	attempt.native = nil
	defer cancelIfDone()
	if err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	*out = c.toC()
	return C.HUMUS_OK
}

// The policy trampolines run under the breaker's lock: they touch nothing but the policy.

//export humusgoTrip
func humusgoTrip(h C.uintptr_t, counts *C.humus_breaker_counts, open *C.int32_t) C.humus_status {
	policy := cgo.Handle(h).Value().(*BreakerPolicy)
	var opened bool
	err := guard("breaker policy trip", func() (err error) {
		opened, err = policy.Trip(countsFrom(counts))
		return err
	})
	if err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	*open = 0
	if opened {
		*open = 1
	}
	return C.HUMUS_OK
}

//export humusgoProbe
func humusgoProbe(h C.uintptr_t, counts *C.humus_breaker_counts, decision *C.int32_t) C.humus_status {
	policy := cgo.Handle(h).Value().(*BreakerPolicy)
	var d ProbeDecision
	err := guard("breaker policy probe", func() (err error) {
		d, err = policy.Probe(countsFrom(counts))
		return err
	})
	if err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	*decision = C.int32_t(d)
	return C.HUMUS_OK
}

//export humusgoMockRespond
func humusgoMockRespond(h C.uintptr_t, r *C.humus_mock_request, reply *C.humus_mock_reply) C.humus_status {
	mock := cgo.Handle(h).Value().(MockTransport)
	req := &MockRequest{
		Method: C.GoString(C.humus_mock_request_method(r)),
		URL:    C.GoString(C.humus_mock_request_url(r)),
		native: r,
	}
	var data unsafe.Pointer
	var n C.size_t
	C.humus_mock_request_body(r, &data, &n)
	if n > 0 {
		req.Body = C.GoBytes(data, C.int(n))
	}
	var answer MockReply
	err := guard("mock transport", func() (err error) {
		answer, err = mock(req)
		return err
	})
	req.native = nil
	defer cancelIfDone()
	if err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	answer.apply(reply)
	return C.HUMUS_OK
}

// The body reader's trampolines run on the thread driving the attempt, inside the caller's Do: a failure
// (or panic) of req.Body becomes the call's ErrCallback, with the body's error as its cause.

//export humusgoBodyRead
func humusgoBodyRead(h C.uintptr_t, buf unsafe.Pointer, capacity C.size_t, n *C.size_t) C.humus_status {
	body := cgo.Handle(h).Value().(*bodyReader)
	var got int
	err := guard("request body", func() (err error) {
		got, err = body.read(unsafe.Slice((*byte)(buf), int(capacity)))
		return err
	})
	if err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	*n = C.size_t(got)
	return C.HUMUS_OK
}

//export humusgoBodyRewind
func humusgoBodyRewind(h C.uintptr_t) C.humus_status {
	body := cgo.Handle(h).Value().(*bodyReader)
	if err := guard("request body GetBody", body.rewind); err != nil {
		keepCallbackError(err)
		return C.HUMUS_E_CALLBACK
	}
	return C.HUMUS_OK
}

//export humusgoBodyDestroy
func humusgoBodyDestroy(h C.uintptr_t) {
	body := cgo.Handle(h).Value().(*bodyReader)
	deleteHandle(cgo.Handle(h))
	_ = guard("request body Close", func() error { body.close(); return nil })
}

//export humusgoCallDone
func humusgoCallDone(h C.uintptr_t, status C.humus_status, resp *C.humus_response, err *C.humus_error) {
	call := cgo.Handle(h).Value().(*Call)
	deleteHandle(cgo.Handle(h))
	call.complete(status, resp, err)
}

// guard runs a user callback, turning a returned error or a panic into a *CallbackError: a panic must not
// unwind into C.
func guard(name string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &CallbackError{Callback: name, Panic: p, Stack: debug.Stack()}
		}
	}()
	if e := f(); e != nil {
		return &CallbackError{Callback: name, Err: e}
	}
	return nil
}

// keepCallbackError hands a callback's failure to the blocking call running on this thread, which reports it
// as the cause of its ErrCallback. Elsewhere (the event loop) there is no call to hand it to and it is
// dropped: the library still counts the failure.
func keepCallbackError(err error) {
	h := newHandle(err)
	if rejected := C.humusgo_keep_callback_error(C.uintptr_t(h)); rejected != 0 {
		deleteHandle(cgo.Handle(rejected))
	}
}

// takeCallbackError turns the handle a blocking call brought back into its error (nil for 0).
func takeCallbackError(h C.uintptr_t) error {
	if h == 0 {
		return nil
	}
	err, ok := cgo.Handle(h).Value().(error)
	deleteHandle(cgo.Handle(h))
	if !ok {
		return fmt.Errorf("humushttp: a callback failed")
	}
	return err
}

// cancelIfDone cancels the blocking call running on this thread at once if its context ended while the
// callback ran (say, a test's mock cancelling "when the 2nd attempt arrives"): the context watcher would
// do it too, but a moment later, when the attempt may already have been answered.
func cancelIfDone() {
	if h := C.humusgo_current_call(); h != 0 {
		cgo.Handle(h).Value().(*callState).cancelIfDone()
	}
}

// The sink trampolines run on a caller's thread or the event-loop thread, possibly several at once. A sink
// has nothing to report back: its panic is recovered and dropped (it must not unwind into C).

//export humusgoSpan
func humusgoSpan(h C.uintptr_t, s *C.humus_span) {
	sink := cgo.Handle(h).Value().(SpanSink)
	span := spanFrom(s)
	defer func() { _ = recover() }()
	sink(span)
}

//export humusgoLogRecord
func humusgoLogRecord(h C.uintptr_t, r *C.humus_log_record) {
	sink := cgo.Handle(h).Value().(LogSink)
	record := logRecordFrom(r)
	defer func() { _ = recover() }()
	sink(record)
}
