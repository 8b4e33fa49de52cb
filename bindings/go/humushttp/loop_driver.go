package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// How a runtime made with LoopOnNetpoller runs its event loop: on Go's netpoller, with no thread of the
// library's (the runtime's "loop": "caller", humus_runtime_loop_run; docs/bindings.md §17.1). One goroutine per
// runtime waits for the loop's descriptor to turn readable, or for the loop's next timer, then runs the loop in
// one short cgo call that also takes the completions the run queued, and delivers them itself: no thread
// hand-off between a call and its completion (bench/HISTORY.md, "The Go boundary, 2026-12-04").
//
// Anything else that waits for the loop (a body closed, a client freed with calls in flight) runs the loop
// on its own thread while it waits (the C ABI does so), so no wait depends on this goroutine getting a P.
type loopDriver struct {
	native *C.humus_runtime
	file   *os.File // the loop's descriptor, on the netpoller
	conn   syscall.RawConn
	stop   atomic.Bool
	done   chan struct{}
}

// startLoopDriver starts the goroutine that drives the runtime's loop.
func startLoopDriver(native *C.humus_runtime) (*loopDriver, error) {
	var fd C.int
	var cerr *C.humus_error
	if st := C.humus_runtime_loop_fd(native, &fd, &cerr); st != C.HUMUS_OK {
		return nil, takeError(st, cerr)
	}
	f := os.NewFile(uintptr(fd), "humus-loop")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, &Error{Status: StatusResource, Message: "the runtime's loop descriptor: " + err.Error()}
	}
	d := &loopDriver{native: native, file: f, conn: conn, done: make(chan struct{})}
	go d.run()
	return d, nil
}

// close stops the goroutine and waits for it: the native runtime may be freed once it returns. Closing the
// file ends a wait in progress.
func (d *loopDriver) close() {
	d.stop.Store(true)
	d.file.Close()
	<-d.done
}

func (d *loopDriver) run() {
	defer close(d.done)
	batch := make([]C.humusgo_completion, completionBatch)
	var armed time.Time // the read deadline in force; zero: none
	for {
		var next C.int64_t
		var taken C.size_t
		var cerr *C.humus_error
		if st := C.humusgo_loop_run(d.native, &next, &batch[0], C.size_t(len(batch)), &taken, &cerr); st != C.HUMUS_OK {
			// Only a misuse of the ABI fails here: nothing to recover, and every call would hang.
			panic("humushttp: running the event loop: " + takeError(st, cerr).Error())
		}
		deliverQueued(batch, int(taken))
		if d.stop.Load() {
			return
		}
		if next == 0 {
			continue
		}
		// A deadline earlier than the next timer only wakes the loop early, to no harm: re-armed only when
		// the timer is sooner than the deadline in force (a timer per call would otherwise re-arm every call).
		if next > 0 {
			if at := time.Now().Add(time.Duration(next) * time.Microsecond); armed.IsZero() || at.Before(armed) {
				d.file.SetReadDeadline(at)
				armed = at
			}
		}
		err := d.conn.Read(func(fd uintptr) bool {
			// Asked after the netpoller armed the wait (which forgets any edge that came before), so work
			// that arrived since the run is seen here, and anything later wakes the wait: the set is watched
			// edge-triggered, and an edge missed is a loop that sleeps with work in it.
			return C.humusgo_fd_readable(C.int(fd)) != 0
		})
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			armed = time.Time{}
			d.file.SetReadDeadline(armed)
		case d.stop.Load():
			return
		default:
			panic("humushttp: waiting on the event loop's descriptor: " + err.Error())
		}
	}
}
