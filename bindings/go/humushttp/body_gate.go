package humushttp

// A cgo file, as every file that names the binding's types: without cgo only nocgo.go builds.

import "C"

import (
	"runtime"
	"sync"
)

// openBody is a call whose body is still open (streamCall, loopCall): how to end it, and how to interrupt
// a Read waiting for bytes (its cancel token, see callState.trigger).
type openBody interface {
	comparable
	end()
	interrupt()
}

// bodyGate is what both Body types share (stream, loopStream): the lock, whether a Read is waiting outside
// it, the end or failure every later Read returns, and the Close that ends the call once.
type bodyGate[T openBody] struct {
	mu       sync.Mutex
	returned sync.Cond // on mu: a Read that waited without mu came back
	call     T         // guarded by mu; the zero T once ended
	reading  bool      // guarded by mu: a Read waits without mu, so Close can interrupt it
	closed   bool      // guarded by mu
	err      error     // guarded by mu: io.EOF or the failure mid-body, what every later Read returns
	cleanup  runtime.Cleanup
	// unsized is the client of a body whose headers did not tell its size: it learns the size at the end
	// (clientCore.sawBody). read counts the bytes Read returned; both guarded by mu.
	unsized *clientCore
	read    int64
}

func (g *bodyGate[T]) open(call T) {
	g.call = call
	g.returned.L = &g.mu
}

// Close ends the call: a body not read to its end is closed and its result counted as it was classified
// (docs/bodies.md §7); its connection, bulkhead slot and client reference are given back. A Close while a
// Read waits for bytes cancels that read (the breaker then counts nothing, as for a cancelled call) and
// returns once the Read has. Idempotent; safe to call concurrently with Read.
func (g *bodyGate[T]) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.reading {
		g.call.interrupt()
		for g.reading {
			g.returned.Wait()
		}
	}
	g.end()
	return nil
}

// sawEnd tells an unsized body's client its size; g.mu is held, the body read to its end.
func (g *bodyGate[T]) sawEnd() {
	if g.unsized != nil {
		g.unsized.sawBody(g.read)
	}
}

// end ends the call once; g.mu is held.
func (g *bodyGate[T]) end() {
	var ended T
	if g.call == ended {
		return
	}
	g.cleanup.Stop()
	g.call.end()
	g.call = ended
}
