//go:build cgo

package humushttp

import (
	"runtime/cgo"
	"sync/atomic"
)

// live counts the native objects and handles this package holds, so the tests can prove that every one is
// freed (a leak shows as a count that does not return to where it was).
var live struct {
	runtimes  atomic.Int64
	clients   atomic.Int64
	responses atomic.Int64
	handles   atomic.Int64
	upstreams atomic.Int64
	loopCalls atomic.Int64 // Do's calls that ran on the event loop (loop_body.go), ever
	stepCalls atomic.Int64 // Do's calls stepped on their goroutine (step.go), ever
}

// newHandle and deleteHandle wrap runtime/cgo handles (how Go values travel as C user data) to count them.
func newHandle(v any) cgo.Handle {
	live.handles.Add(1)
	return cgo.NewHandle(v)
}

func deleteHandle(h cgo.Handle) {
	h.Delete()
	live.handles.Add(-1)
}
