package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// RuntimeOptions configure a Runtime (humus_runtime_new). The zero value is a real clock with no overrides.
// A plain value (its MockTransport must itself be safe for concurrent use).
type RuntimeOptions struct {
	// Resolve sends "host:port" connections to "address:port" while TLS still verifies host (docs/transport.md §10.6),
	// like curl --resolve.
	Resolve map[string]string
	// Faults turns on failure injection through the humus.fault baggage member (docs/failure-injection.md §14).
	Faults bool
	// VirtualClock makes every wait of the runtime's clients run on a virtual clock that advances on its own
	// whenever every call in flight waits only on timers (docs/testing-kit.md §16.1), or through AdvanceMs. It needs
	// MockTransport: real sockets do not run on virtual time.
	VirtualClock bool
	// Seed fixes a virtual clock's random draws (backoff jitter).
	Seed uint64
	// LoopOnNetpoller runs the event loop of the runtime's asynchronous calls (Start, and Do when it joins
	// other calls) on Go's netpoller, driven by a goroutine, instead of on a thread of the library's
	// ("loop": "caller", docs/bindings.md §17.1). Without that thread, a call crosses no thread hand-off:
	// measured (bench/HISTORY.md, "The Go boundary, 2026-12-04"), Start costs 10-15 % less CPU a call
	// sequentially and at 16 goroutines, but at 64 calls in flight the loop thread running beside the
	// goroutines is faster, so it is not the default. A real clock only (ignored with VirtualClock).
	LoopOnNetpoller bool
	// MockTransport, when set, answers every attempt of the clients built from the runtime (docs/testing-kit.md §16.2).
	MockTransport MockTransport
	// SpanSink, when set, receives every attempt's span (docs/telemetry.md §13.1); see SpanSink and Runtime.SetSpanSink.
	SpanSink SpanSink
	// LogSink, when set, receives the log records (docs/telemetry.md §13.3); see LogSink and Runtime.SetLogSink.
	LogSink LogSink
}

// Runtime is the process-wide machinery clients share (docs/README.md §1): the event loop, the clock, name overrides,
// the mock transport. Clients built without WithRuntime share a default runtime that is never closed.
//
// All methods are safe for concurrent use. Close may be called once the runtime is no longer needed; its
// native object is freed when its last client has been freed too (a cleanup does the same if Close is never
// called and the Runtime becomes unreachable).
type Runtime struct {
	core    *runtimeCore
	cleanup runtime.Cleanup
}

// runtimeCore holds the native runtime and counts its holders: the Runtime value and every live client. The
// C ABI requires every client to be freed before its runtime; the count makes that so whatever order Close,
// Client.Close and the garbage collector's cleanups run in.
type runtimeCore struct {
	native  *C.humus_runtime
	virtual bool
	driver  *loopDriver // the event loop's goroutine with LoopOnNetpoller; nil when the loop has a thread
	mock    atomic.Bool // a mock transport is set: the clients built now call Go on the loop for every attempt

	ref shared // the Runtime's own reference plus one per live client, registry or call
}

// NewRuntime makes a runtime. Invalid options are an *Error with ErrConfig naming every bad key. Safe for
// concurrent use.
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	doc := map[string]any{}
	if len(opts.Resolve) > 0 {
		doc["resolve"] = opts.Resolve
	}
	if opts.Faults {
		doc["faults"] = true
	}
	driven := opts.LoopOnNetpoller && !opts.VirtualClock
	if opts.VirtualClock {
		doc["clock"] = "virtual"
	}
	if driven {
		doc["loop"] = "caller" // driven by a goroutine on the netpoller (loop_driver.go)
	}
	if opts.Seed != 0 {
		doc["seed"] = opts.Seed
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, &Error{Status: StatusInvalidArgument, Message: "runtime options: " + err.Error()}
	}
	var native *C.humus_runtime
	var cerr *C.humus_error
	if st := C.humus_runtime_new((*C.char)(cbytes(data)), C.size_t(len(data)), &native, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	var driver *loopDriver
	if driven {
		if driver, err = startLoopDriver(native); err != nil {
			C.humus_runtime_free(native)
			return nil, err
		}
	}
	live.runtimes.Add(1)
	core := &runtimeCore{native: native, virtual: opts.VirtualClock, driver: driver}
	core.ref.own(core.free)
	rt := &Runtime{core: core}
	rt.cleanup = runtime.AddCleanup(rt, (*runtimeCore).closeOwner, core)
	if opts.MockTransport != nil {
		if err := rt.SetMockTransport(opts.MockTransport); err != nil {
			rt.Close()
			return nil, err
		}
	}
	if opts.SpanSink != nil {
		if err := rt.SetSpanSink(opts.SpanSink); err != nil {
			rt.Close()
			return nil, err
		}
	}
	if opts.LogSink != nil {
		if err := rt.SetLogSink(opts.LogSink); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

var defaultRuntime struct {
	once sync.Once
	core *runtimeCore
	err  error
}

// theDefaultRuntime is shared by clients built without WithRuntime; it lives as long as the process, like
// net/http's DefaultTransport.
func theDefaultRuntime() (*runtimeCore, error) {
	defaultRuntime.once.Do(func() {
		rt, err := NewRuntime(RuntimeOptions{})
		if err != nil {
			defaultRuntime.err = err
			return
		}
		rt.cleanup.Stop()
		defaultRuntime.core = rt.core // its owner reference is never released
	})
	return defaultRuntime.core, defaultRuntime.err
}

// Close releases the runtime. Clients built from it keep working until they are closed; the native runtime
// is freed after the last of them. Calls to the Runtime's methods after Close fail with ErrClosed (or return
// 0 for ElapsedMs). Close is idempotent.
func (rt *Runtime) Close() error {
	rt.cleanup.Stop()
	rt.core.closeOwner()
	return nil
}

func (c *runtimeCore) closeOwner() { c.ref.closeOwner() }

// acquire takes a reference for a client being built; false once the runtime is closed.
func (c *runtimeCore) acquire() bool { return c.ref.acquire() }

// held takes a reference for one method call; the caller releases it.
func (c *runtimeCore) held() (*C.humus_runtime, error) {
	if !c.acquire() {
		return nil, closedError("runtime")
	}
	return c.native, nil
}

// release drops a reference and frees the native runtime with the last one. Never called on the runtime's
// event-loop thread (the loop cannot join itself): completions release on a new goroutine.
func (c *runtimeCore) release() { c.ref.release() }

func (c *runtimeCore) free() {
	if c.driver != nil {
		c.driver.close()
	}
	C.humus_runtime_free(c.native)
	live.runtimes.Add(-1)
}

// AdvanceMs moves a virtual clock forward by ms (>= 0), waking the waits that come due. An *Error with
// ErrMisuse on a real clock, ErrInvalidArgument for a negative ms.
func (rt *Runtime) AdvanceMs(ms int64) error {
	native, err := rt.core.held()
	if err != nil {
		return err
	}
	defer rt.core.release()
	var cerr *C.humus_error
	if st := C.humus_runtime_advance_ms(native, C.int64_t(ms), &cerr); st != C.HUMUS_OK {
		return takeError(st, cerr)
	}
	return nil
}

// ElapsedMs is how far the runtime's clock has advanced since the runtime was made, in milliseconds (virtual
// or real); 0 after Close.
func (rt *Runtime) ElapsedMs() int64 {
	native, err := rt.core.held()
	if err != nil {
		return 0
	}
	defer rt.core.release()
	return int64(C.humus_runtime_elapsed_ms(native))
}

// Elapsed is ElapsedMs as a time.Duration.
func (rt *Runtime) Elapsed() time.Duration { return msToDuration(rt.ElapsedMs()) }

// SetMockTransport installs (nil: removes) the mock transport for the clients built afterwards; clients
// already built keep the transport they were built with. See MockTransport.
func (rt *Runtime) SetMockTransport(m MockTransport) error {
	native, err := rt.core.held()
	if err != nil {
		return err
	}
	defer rt.core.release()
	var h cgo.Handle
	if m != nil {
		h = newHandle(m)
	}
	var cerr *C.humus_error
	if st := C.humusgo_set_mock_transport(native, C.uintptr_t(h), &cerr); st != C.HUMUS_OK {
		if h != 0 {
			deleteHandle(h) // refused: the library did not take it
		}
		return takeError(st, cerr)
	}
	rt.core.mock.Store(m != nil)
	return nil
}

// MetricsPrometheus is the runtime's metrics (docs/telemetry.md §13.2) in the Prometheus text exposition format 0.0.4,
// summed over its clients by origin.
func (rt *Runtime) MetricsPrometheus() (string, error) {
	text, err := rt.text(func(native *C.humus_runtime, out **C.char, n *C.size_t, cerr **C.humus_error) C.humus_status {
		return C.humus_runtime_metrics_prometheus(native, out, n, cerr)
	})
	return string(text), err
}

// MetricsJSON is the same metrics as a JSON document (see humus_runtime_metrics_json in the C header).
func (rt *Runtime) MetricsJSON() ([]byte, error) {
	return rt.text(func(native *C.humus_runtime, out **C.char, n *C.size_t, cerr **C.humus_error) C.humus_status {
		return C.humus_runtime_metrics_json(native, out, n, cerr)
	})
}

// ReadinessJSON is a readiness report of every live client of the runtime (docs/upstreams.md §15.2): {"status": "ok" |
// "degraded", "clients": [{"origin", "state", "retry_after_ms", "counts"}]}. Reading it advances a due
// open breaker to half-open.
func (rt *Runtime) ReadinessJSON() ([]byte, error) {
	return rt.text(func(native *C.humus_runtime, out **C.char, n *C.size_t, cerr **C.humus_error) C.humus_status {
		return C.humus_runtime_readiness_json(native, out, n, cerr)
	})
}

func (rt *Runtime) text(get func(*C.humus_runtime, **C.char, *C.size_t, **C.humus_error) C.humus_status) ([]byte, error) {
	native, err := rt.core.held()
	if err != nil {
		return nil, err
	}
	defer rt.core.release()
	var out *C.char
	var n C.size_t
	var cerr *C.humus_error
	if st := get(native, &out, &n, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	defer C.humus_string_free(out)
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}

func closedError(what string) *Error {
	return &Error{Status: StatusMisuse, Message: "the " + what + " is closed", cause: ErrClosed}
}
