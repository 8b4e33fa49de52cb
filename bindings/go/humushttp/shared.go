//go:build cgo

package humushttp

import "sync"

// shared is the life of a native object held by its owner (the Go value a user closes) and by what uses it
// (calls in flight, clients built from a runtime, clients of a registry): free runs once, after the owner
// has let go and the last user has released. Safe for concurrent use; not to be copied after first use.
type shared struct {
	mu     sync.Mutex
	refs   int  // guarded by mu: the owner's reference, while it holds it, plus one per user
	closed bool // guarded by mu: the owner's reference is released
	free   func()
}

// own starts the life with the owner's reference; free runs when it ends.
func (s *shared) own(free func()) {
	s.refs = 1
	s.free = free
}

// closeOwner releases the owner's reference; later acquires fail. Idempotent.
func (s *shared) closeOwner() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.release()
}

// acquire takes a user's reference; false once the owner has let go.
func (s *shared) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.refs++
	return true
}

// release drops a reference; the last one runs free.
func (s *shared) release() {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		s.free()
	}
}

// releaseUnlessLast drops a reference unless it is the last one, and says whether it was: the caller then
// releases it where free may run.
func (s *shared) releaseUnlessLast() (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == 1 {
		return true
	}
	s.refs--
	return false
}
