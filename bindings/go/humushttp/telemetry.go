package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"runtime/cgo"
	"time"
	"unsafe"
)

// Span is one attempt's span (docs/telemetry.md §13.1), of kind CLIENT: one per attempt sent (each retry and each
// redirect has its own) and one per attempt the breaker rejected (error.type "rejected"). Its parent is the
// span of the call context's traceparent (WithCallContext, or a Traceparent header of the request); without
// one every attempt of the call is a root span of one new trace. The traceparent the attempt sent carries
// exactly TraceID and SpanID. A plain value (a copy), safe for concurrent use.
type Span struct {
	Name         string // the method, e.g. "GET"
	TraceID      string // 32 lowercase hex digits
	SpanID       string // 16 lowercase hex digits
	ParentSpanID string // 16 lowercase hex digits, or "" for a root span
	TraceState   string // the caller's tracestate passed on, or ""
	TraceFlags   uint8  // the caller's, or 01 (sampled) for a new trace
	Start, End   time.Time
	Error        bool // status ERROR: a 4xx/5xx answer or none
	// Attributes are OpenTelemetry attributes, each a string or an int64: url.full, server.address,
	// server.port, http.request.method, http.response.status_code, network.protocol.version,
	// http.request.resend_count (when > 0), error.type.
	Attributes map[string]any
}

// SpanSink receives every attempt's span when it ends (RuntimeOptions.SpanSink, Runtime.SetSpanSink). It
// runs on the goroutine of a blocking call or on the runtime's event-loop thread, possibly several at once:
// it must be safe for concurrent use and fast, and must not close a client or the runtime. A call's spans
// arrive in the order of its attempts. A panic is recovered and dropped.
type SpanSink func(Span)

// LogRecord is one log record (docs/telemetry.md §13.3). Two events exist: "humus.circuit.state_change" (one per
// breaker state change, docs/breaker.md §9.5) and "humus.upstreams.base_url_override" (an environment variable
// replaced an upstream's base_url; Upstream is set). A plain value, safe for concurrent use.
type LogRecord struct {
	Event         string
	Message       string // one line for people
	ServerAddress string // the origin's host
	ServerPort    int    // the origin's port, the scheme's default filled in
	// PreviousState and NewState are the states the breaker left and entered; -1 when the record is no
	// state change.
	PreviousState, NewState CircuitState
	Counts                  BreakerCounts // at the change: the state left, including the result that caused it
	Time                    time.Time     // when the change took effect, on the runtime's clock's calendar
	Upstream                string        // the upstream's name for upstreams records, else ""
}

// LogSink receives log records (RuntimeOptions.LogSink, Runtime.SetLogSink). It runs on the goroutine whose
// call caused the change or on the event-loop thread, possibly several at once for different clients: it
// must be safe for concurrent use and fast, and must not close a client or the runtime. Records of one
// breaker never overlap and arrive in order. A panic is recovered and dropped.
type LogSink func(LogRecord)

func spanFrom(s *C.humus_span) Span {
	out := Span{
		Name:         C.GoString(s.name),
		TraceID:      C.GoString(s.trace_id),
		SpanID:       C.GoString(s.span_id),
		ParentSpanID: C.GoString(s.parent_span_id),
		TraceState:   C.GoString(s.tracestate),
		TraceFlags:   uint8(s.trace_flags),
		Start:        time.Unix(0, int64(s.start_unix_ns)),
		End:          time.Unix(0, int64(s.end_unix_ns)),
		Error:        s.status == C.HUMUS_SPAN_STATUS_ERROR,
		Attributes:   make(map[string]any, int(s.attribute_count)),
	}
	if s.attribute_count > 0 {
		attrs := unsafe.Slice(s.attributes, int(s.attribute_count))
		for i := range attrs {
			a := &attrs[i]
			switch a._type {
			case C.HUMUS_ATTRIBUTE_STRING:
				out.Attributes[C.GoString(a.key)] = C.GoString(a.string_value)
			case C.HUMUS_ATTRIBUTE_INT:
				out.Attributes[C.GoString(a.key)] = int64(a.int_value)
			}
		}
	}
	return out
}

func logRecordFrom(r *C.humus_log_record) LogRecord {
	return LogRecord{
		Event:         C.GoString(r.event),
		Message:       C.GoString(r.message),
		ServerAddress: C.GoString(r.server_address),
		ServerPort:    int(r.server_port),
		PreviousState: CircuitState(r.previous_state),
		NewState:      CircuitState(r.new_state),
		Counts:        countsFrom(r.counts),
		Time:          time.UnixMilli(int64(r.time_unix_ms)),
		Upstream:      C.GoString(r.upstream),
	}
}

// SetSpanSink installs (nil: removes) the runtime's span sink, for the calls that start afterwards. Without
// a sink no span and no trace id is made, and a caller's traceparent passes through unchanged. The previous
// sink may still receive the spans of calls started under it. Safe for concurrent use.
func (rt *Runtime) SetSpanSink(sink SpanSink) error {
	return rt.setSink(sink == nil, sink, func(native *C.humus_runtime, h C.uintptr_t, cerr **C.humus_error) C.humus_status {
		return C.humusgo_set_span_sink(native, h, cerr)
	})
}

// SetLogSink installs (nil: removes) the runtime's log sink; it affects every client of the runtime at
// once. Safe for concurrent use.
func (rt *Runtime) SetLogSink(sink LogSink) error {
	return rt.setSink(sink == nil, sink, func(native *C.humus_runtime, h C.uintptr_t, cerr **C.humus_error) C.humus_status {
		return C.humusgo_set_log_sink(native, h, cerr)
	})
}

func (rt *Runtime) setSink(none bool, sink any, set func(*C.humus_runtime, C.uintptr_t, **C.humus_error) C.humus_status) error {
	native, err := rt.core.held()
	if err != nil {
		return err
	}
	defer rt.core.release()
	var h cgo.Handle
	if !none {
		h = newHandle(sink)
	}
	var cerr *C.humus_error
	if st := set(native, C.uintptr_t(h), &cerr); st != C.HUMUS_OK {
		if h != 0 {
			deleteHandle(h) // refused: the library did not take it
		}
		return takeError(st, cerr)
	}
	return nil
}
