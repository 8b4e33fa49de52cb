package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"encoding/json"
	"net/http"
	"runtime"
	"unsafe"
)

// Upstreams is a registry of clients by name (docs/upstreams.md §15.1), built from one JSON document:
//
//	{"upstreams": {"billing": {"base_url": "https://billing:8443", "timeout": "5s"}, "ledger": {...}}}
//
// Each upstream's keys are the settings of SettingsFromJSON. HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL (NAME in
// uppercase, '-' written '_'), read once by OpenUpstreams, wins over the file's base_url; when both are given
// and differ, one LogRecord with Event "humus.upstreams.base_url_override" goes to the runtime's log sink.
//
// All methods are safe for concurrent use. The native clients belong to the registry: the *Client values
// that Client returns share them, and the registry is freed once it is closed and every such Client is
// closed too (or unreachable: cleanups do the same).
type Upstreams struct {
	core    *upstreamsCore
	cleanup runtime.Cleanup
}

// upstreamsCore holds the native registry and counts its holders: the Upstreams value and every Client
// handed out (each of which holds the registry while it is open). The registry holds one reference to the
// runtime, which must outlive it.
type upstreamsCore struct {
	native *C.humus_upstreams
	rt     *runtimeCore

	ref shared // the Upstreams' own reference plus one per *Client handed out
}

// OpenUpstreams builds every upstream's client on rt (nil: the default runtime). Problems are an *Error:
// ErrConfig whose Fields name every bad key by its path ("upstreams.billing.timout" for a misspelt key, the
// nearest valid key in the message), a top-level key other than "upstreams", or a bad name; ErrProgram for
// a rule across one upstream's fields (docs/settings.md §3.2). Safe for concurrent use.
func OpenUpstreams(rt *Runtime, data []byte) (*Upstreams, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	var core *runtimeCore
	if rt != nil {
		core = rt.core
	} else {
		var err error
		if core, err = theDefaultRuntime(); err != nil {
			return nil, err
		}
	}
	if !core.acquire() {
		return nil, closedError("runtime")
	}
	var native *C.humus_upstreams
	var cerr *C.humus_error
	if st := C.humus_upstreams_from_json(core.native, (*C.char)(cbytes(data)), C.size_t(len(data)), &native,
		&cerr); st != C.HUMUS_OK {
		core.release()
		return nil, takeError(st, cerr)
	}
	live.upstreams.Add(1)
	uc := &upstreamsCore{native: native, rt: core}
	uc.ref.own(uc.free)
	u := &Upstreams{core: uc}
	u.cleanup = runtime.AddCleanup(u, (*upstreamsCore).closeOwner, uc)
	return u, nil
}

// Close releases the registry. Clients already returned by Client keep working until they are closed; the
// native registry and its clients are freed after the last of them. Methods called after Close fail with
// ErrClosed (Names returns nil). Close is idempotent.
func (u *Upstreams) Close() error {
	u.cleanup.Stop()
	u.core.closeOwner()
	return nil
}

func (c *upstreamsCore) closeOwner() { c.ref.closeOwner() }

func (c *upstreamsCore) acquire() bool { return c.ref.acquire() }

// release drops a reference; the last one frees the registry (and its clients) and releases the runtime.
// Never on the event-loop thread (see clientCore.releaseOffLoop).
func (c *upstreamsCore) release() { c.ref.release() }

func (c *upstreamsCore) free() {
	C.humus_upstreams_free(c.native)
	live.upstreams.Add(-1)
	c.rt.release()
}

// Client is the client of upstream name: a new *Client sharing the registry's native client (its breaker,
// budget and connections are the same for every *Client of that name). Its Close only detaches it from the
// registry; the native client lives until the registry is freed. An unknown name is an *Error with
// ErrInvalidArgument whose message lists the configured names.
func (u *Upstreams) Client(name string) (*Client, error) {
	if !u.core.acquire() {
		return nil, closedError("upstreams registry")
	}
	var native *C.humus_client
	var cerr *C.humus_error
	if st := C.humus_upstreams_client(u.core.native, cstr(name), &native, &cerr); st != C.HUMUS_OK {
		u.core.release()
		return nil, takeError(st, cerr)
	}
	// The client holds the registry reference taken above; the registry holds the runtime.
	core := &clientCore{native: native, rt: u.core.rt, owner: u.core}
	core.ref.own(core.free)
	c := &Client{core: core}
	c.cleanup = runtime.AddCleanup(c, (*clientCore).closeOwner, core)
	return c, nil
}

// HTTPClient is Client(name).HTTPClient(): a standard *http.Client over upstream name. The registry stays
// alive while the *http.Client is reachable (a cleanup detaches it afterwards).
func (u *Upstreams) HTTPClient(name string) (*http.Client, error) {
	c, err := u.Client(name)
	if err != nil {
		return nil, err
	}
	return c.HTTPClient(), nil
}

// Names are the upstreams' names in sorted order; nil after Close.
func (u *Upstreams) Names() []string {
	if !u.core.acquire() {
		return nil
	}
	defer u.core.release()
	n := int(C.humus_upstreams_count(u.core.native))
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if p := C.humus_upstreams_name(u.core.native, C.size_t(i)); p != nil {
			names = append(names, C.GoString(p))
		}
	}
	return names
}

// Readiness is the readiness report of the registry's clients (docs/upstreams.md §15.2), as Runtime.ReadinessJSON's,
// each client with its "name". Reading it advances a due open breaker to half-open.
func (u *Upstreams) Readiness() (json.RawMessage, error) {
	if !u.core.acquire() {
		return nil, closedError("upstreams registry")
	}
	defer u.core.release()
	var out *C.char
	var n C.size_t
	var cerr *C.humus_error
	if st := C.humus_upstreams_readiness_json(u.core.native, &out, &n, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	defer C.humus_string_free(out)
	return json.RawMessage(C.GoBytes(unsafe.Pointer(out), C.int(n))), nil
}
