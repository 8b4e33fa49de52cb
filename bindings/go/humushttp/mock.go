package humushttp

/*
#include <humus_http.h>
*/
import "C"

import (
	"net/http"
	"sort"
	"time"
)

// MockTransport answers requests without sockets (docs/testing-kit.md §16.2): install it with RuntimeOptions.MockTransport or
// Runtime.SetMockTransport, and every attempt of the clients built afterwards from that runtime reaches it
// instead of the network — a test of your own code's handling of a failing dependency, fast and
// deterministic, with retries, breaker and deadlines all real. With RuntimeOptions.VirtualClock, delays,
// backoff and timeouts cost no real time.
//
// It runs on the goroutine of a blocking call or on the runtime's event loop, possibly several at once: it
// must be safe for concurrent use. A returned error or a panic fails the attempt as a failing callback
// (StatusCallback), which the client classifies like a transport error.
type MockTransport func(req *MockRequest) (MockReply, error)

// MockRequest is one attempt's request as the mock transport sees it. Method, URL and Body are copies;
// Header reads the request only while the mock runs, on the mock's goroutine; the fields are plain copies.
type MockRequest struct {
	Method string
	URL    string // absolute, e.g. "http://payments:8080/pay?x=1"
	Body   []byte // nil when the request has none

	native *C.humus_mock_request // nil once the mock has returned
}

// Header is the first value of the request header name (case-insensitive), or false when absent. Only valid
// while the mock runs: afterwards it reports false.
func (r *MockRequest) Header(name string) (string, bool) {
	if r.native == nil {
		return "", false
	}
	v := C.humus_mock_request_header(r.native, cstr(name))
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// MockReply is what the mock answers; the zero value is a 200 with no headers and an empty body. A plain
// value: the library copies it when the mock returns.
type MockReply struct {
	Status       int           // the response status; 0 means 200
	Header       http.Header   // response headers, added name by name in sorted order
	Body         []byte        // the response body
	Delay        time.Duration // answer this much later, on the runtime's clock (bounded by attempt_timeout)
	Hang         bool          // never answer: the attempt times out
	Error        Status        // non-zero: the attempt fails with this transport error (StatusConnect, ...)
	ErrorMessage string        // the transport error's message
	// Non-zero: the body breaks off with this error (StatusConnectionLost, ...) after BodyErrorAfter bytes, as
	// a reset mid-body would; resp.Body's reads get those bytes, then the error.
	BodyError      Status
	BodyErrorAfter int
}

// apply writes the reply into the library's reply object.
func (m *MockReply) apply(reply *C.humus_mock_reply) {
	if m.Status != 0 {
		C.humus_mock_reply_set_status(reply, C.int32_t(m.Status))
	}
	names := make([]string, 0, len(m.Header))
	for name := range m.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, value := range m.Header[name] {
			C.humus_mock_reply_add_header(reply, cstr(name), cstr(value))
		}
	}
	if len(m.Body) > 0 {
		C.humus_mock_reply_set_body(reply, cbytes(m.Body), C.size_t(len(m.Body)))
	}
	if m.Delay > 0 {
		C.humus_mock_reply_set_delay_ms(reply, C.int64_t(durationToMs(m.Delay)))
	}
	if m.Hang {
		C.humus_mock_reply_set_hang(reply)
	}
	if m.Error != StatusOK {
		C.humus_mock_reply_set_error(reply, C.humus_status(m.Error), cstr(m.ErrorMessage))
	}
	if m.BodyError != StatusOK {
		C.humus_mock_reply_set_body_error(reply, C.size_t(max(m.BodyErrorAfter, 0)), C.humus_status(m.BodyError), nil)
	}
}
