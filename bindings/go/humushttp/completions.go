package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"os"
	"sync"
)

// How an asynchronous call's completion reaches Go (Client.Start). The event-loop thread only appends it to
// a queue in C (glue.c) and, when the queue was empty, writes the queue's eventfd; one goroutine per process
// waits on that eventfd through Go's netpoller (a nonblocking *os.File: no OS thread sits in a read) and
// delivers whatever it finds in batches of one cgo crossing each. Measured against the design it replaced
// (each completion a cgo callback into Go on the event-loop thread, which then waits for a P of its own
// while goroutines hold them) in bench/HISTORY.md "The Go boundary".
//
// A virtual-clock runtime keeps the callback: its completions must run at the loop's moment, before the
// clock moves on (a done callback reads Runtime.ElapsedMs, as the conformance vectors do).

const completionBatch = 128

var completions struct {
	once sync.Once
	ok   bool // the eventfd exists and its goroutine runs; false: every call uses the callback
}

// queuedCompletions starts the delivering goroutine on first use and says whether it runs.
func queuedCompletions() bool {
	completions.once.Do(func() {
		fd := C.humusgo_completions_fd()
		if fd < 0 {
			return
		}
		f := os.NewFile(uintptr(fd), "humus-completions")
		if f == nil {
			return
		}
		completions.ok = true
		go deliverCompletions(f)
	})
	return completions.ok
}

// deliverCompletions runs for the life of the process: f is never closed, since calls may complete at any
// time. Each wake-up drains the eventfd's counter, then the queue until a take comes back short.
func deliverCompletions(f *os.File) {
	var counter [8]byte
	// C memory would do as well; a Go array holding no Go pointers may be written by C during the call.
	batch := make([]C.humusgo_completion, completionBatch)
	for {
		if _, err := f.Read(counter[:]); err != nil {
			// An eventfd read fails only for a wrong buffer size; nothing to recover, and calls would hang.
			panic("humushttp: reading the completion eventfd: " + err.Error())
		}
		deliverQueued(batch, int(C.humusgo_completions_take(&batch[0], completionBatch)))
	}
}

// deliverQueued delivers the n completions just taken into batch, then takes and delivers more while a take
// fills the batch (a short one means the queue was empty).
func deliverQueued(batch []C.humusgo_completion, n int) {
	for {
		for i := range n {
			c := &batch[i]
			if c.kind == C.HUMUSGO_CALL_DONE {
				humusgoCallDone(C.uintptr_t(c.handle), c.status, c.resp, c.err)
			} else {
				humusgoBodyEvent(C.uintptr_t(c.handle), c.kind, c.status, c.err, c.resp)
			}
		}
		if n < len(batch) {
			return
		}
		n = int(C.humusgo_completions_take(&batch[0], C.size_t(len(batch))))
	}
}
