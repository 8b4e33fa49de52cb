package humushttp

/*
#include <humus_http.h>
*/
import "C"

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A stepped Do (humus_client_step_start, humus_step_advance): the call's libcurl work runs on the calling
// goroutine's thread, a step at a time, and between steps the goroutine waits in Go — in the netpoller for
// the socket the step names, on a timer for a backoff — so no OS thread waits for the server and no hand-off
// to the event loop's thread and back is paid (what makes the loop dear over HTTP/1.1, see stepsCall).

// stepper is one stepped call being driven: the step and the out-parameters of its last advance. They live
// in this heap object for as long as the call runs (see native.go: a noescape function that may call back
// into Go must not be given pointers into the goroutine's stack).
type stepper struct {
	step    *C.humus_step
	state   *callState
	wait    *socketWait     // the netpoller's watch on the socket the last wait named, made on its first wait
	timer   *time.Timer     // for waits of time alone, made by the first
	ctxDone <-chan struct{} // the context's Done while a time wait should end with it; nil once it did

	status C.humus_status
	resp   *C.humus_response
	fd     C.int
	events C.int
	ms     C.int64_t
	err    *C.humus_error
}

// runStepped makes the prepared call stepped on this goroutine and returns at its headers, as run does.
func (c *Client) runStepped(p *prepared) (*Response, error) {
	live.stepCalls.Add(1)
	p.state.watch() // before the first advance: a context ending from now on triggers the token it honours
	s := &stepper{state: p.state, ctxDone: p.req.Context().Done()}
	s.status = C.humus_client_step_start(c.core.native, p.native, &s.step, &s.err)
	if s.status == C.HUMUS_OK {
		s.drive()
	}
	// Freed before the request (run defers its free): every advance read it. The response stays valid.
	C.humus_step_free(s.step)
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.status != C.HUMUS_OK {
		if s.wait != nil {
			s.wait.close()
		}
		return nil, c.failed(p, takeCallError(s.status, s.err), nil)
	}
	if s.wait != nil {
		s.wait.lent = true // the body's first wait checks that it is its socket (streamCall.socketFor)
	}
	return c.opened(p, s.resp, s.wait)
}

// advance runs the call on as far as it goes without waiting.
func (s *stepper) advance() {
	s.resp = nil
	s.status = C.humus_step_advance(s.step, &s.resp, &s.fd, &s.events, &s.ms, &s.err)
}

// done says the call ended: a response or a failure.
func (s *stepper) done() bool { return s.status != C.HUMUS_OK || s.resp != nil }

// drive advances the step until the call ends, waiting in Go for what each step names.
func (s *stepper) drive() {
	s.advance()
	for !s.done() {
		if s.fd < 0 {
			s.sleep(s.ms)
			s.advance()
			continue
		}
		w := s.socketFor(s.fd)
		if w == nil || !s.poll(w) {
			// The netpoller cannot wait on this descriptor, and a call cannot move to the blocking path
			// midway: wait a bounded time instead (at most 1 ms with no bound given) and look again, as an
			// early advance is harmless. Not expected on Linux, where every socket is pollable.
			s.sleep(fallbackWait(s.ms))
			s.advance()
		}
	}
}

// fallbackWait is how long a wait the netpoller cannot make lasts: the step's bound, at most 1 ms.
func fallbackWait(ms C.int64_t) C.int64_t {
	if ms < 0 || ms > 1 {
		return 1
	}
	return ms
}

// socketFor is the wait for fd, made on the first wait and again when the step names another socket (a
// retry's connection may reuse a closed one's number: socketWait.watches). A watch no longer needed is closed
// at once: its duplicate keeps the socket open, which the library may have closed and the server waits to see.
func (s *stepper) socketFor(fd C.int) *socketWait {
	if s.wait != nil && s.wait.watches(fd) {
		return s.wait
	}
	if s.wait != nil {
		s.wait.close()
	}
	s.wait = newSocketWait(fd)
	return s.wait
}

// poll waits in the netpoller for w's socket to poll as the last step asked, at most its wait_ms, advancing
// the step each time it does, until the call ends or a step asks for something else; false when the
// netpoller cannot wait on it.
func (s *stepper) poll(w *socketWait) bool {
	fd, events := s.fd, s.events
	var deadline time.Time
	if s.ms >= 0 {
		deadline = time.Now().Add(time.Duration(s.ms) * time.Millisecond)
	}
	w.file.SetDeadline(deadline)
	// Published after the deadline is set, which would undo an interrupt: a cancel from now on ends the wait,
	// and one from before triggered the token, which the next advance sees.
	s.state.waiting.Store(w)
	defer s.state.waiting.Store(nil)
	first := true
	ready := func(dup uintptr) bool {
		// Arming the wait forgets readiness that came before it: the first call, before the goroutine parks,
		// looks for it. The step was advanced a moment ago, so it asks the kernel (one poll syscall, cheaper
		// than an advance) and advances only if the socket is ready already.
		if first {
			first = false
			if !pollsNow(dup, events) {
				return false
			}
		}
		s.advance()
		return s.done() || s.fd != fd || s.events != events || s.sooner(deadline)
	}
	var err error
	switch events {
	case C.HUMUS_WAIT_READ | C.HUMUS_WAIT_WRITE:
		err = waitEither(w.file, w.raw, ready)
	case C.HUMUS_WAIT_WRITE:
		err = w.raw.Write(ready)
	default:
		err = w.raw.Read(ready)
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if err != nil {
		// The step's wait_ms passed, or a cancel interrupted the wait: the library tells which.
		s.advance()
	}
	return true
}

// waitEither waits for the socket of file (raw its RawConn) to turn writable or readable (a request body
// going out while an early answer may come: either will do), calling ready as raw.Write does. A goroutine
// parks in the netpoller for one direction only, so a helper parks for the answer and, when it comes, ends
// this goroutine's wait for the socket to take more of the body with a write deadline already past, which
// the caller treats as the end of a wait: it advances the step. The helper is gone when this returns (the
// deadlines are the caller's to set again).
func waitEither(file *os.File, raw syscall.RawConn, ready func(uintptr) bool) error {
	helped := make(chan struct{})
	go func() {
		defer close(helped)
		first := true
		err := raw.Read(func(dup uintptr) bool {
			// As in poll: readiness from before the wait was armed is looked for by the first call.
			if first {
				first = false
				return pollsNow(dup, C.HUMUS_WAIT_READ)
			}
			return true
		})
		if err == nil {
			file.SetWriteDeadline(time.Unix(1, 0))
		}
	}()
	err := raw.Write(ready)
	file.SetReadDeadline(time.Unix(1, 0)) // ends the helper's wait if it is still parked
	<-helped
	return err
}

// sooner says the last step bounds its wait earlier than the deadline being waited for (by more than the
// milliseconds' rounding): the wait ends, to be armed again with the step's bound.
func (s *stepper) sooner(deadline time.Time) bool {
	if s.ms < 0 {
		return false
	}
	return deadline.IsZero() || time.Until(deadline) > time.Duration(s.ms+1)*time.Millisecond
}

// sleep waits ms milliseconds (a backoff, a Retry-After), or until the context ends: its watcher triggers
// the token, which is triggered here too so that the next advance sees it whichever goroutine runs first.
func (s *stepper) sleep(ms C.int64_t) {
	d := time.Duration(max(ms, 0)) * time.Millisecond
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-s.timer.C:
	case <-s.ctxDone:
		s.timer.Stop()
		s.state.cancelIfDone()
		// Seen once: a context ended by its deadline, which the core ends the call at itself (cancelIfDone
		// then triggers nothing), must not make every later wait return at once.
		s.ctxDone = nil
	}
}

// pollsNow says whether the descriptor polls for events (HUMUS_WAIT_READ or HUMUS_WAIT_WRITE) right now,
// without waiting; true when it cannot tell, so the step is advanced (which is always harmless).
func pollsNow(fd uintptr, events C.int) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: pollEvents(events)}
	var zero syscall.Timespec
	n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
		uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return errno != 0 || n != 0
}

// pollEvents is poll(2)'s events for a step's wait_events.
func pollEvents(events C.int) int16 {
	const pollIn, pollOut = 0x1, 0x4 // POLLIN, POLLOUT: the same on every Linux architecture
	var e int16
	if events&C.HUMUS_WAIT_READ != 0 {
		e |= pollIn
	}
	if events&C.HUMUS_WAIT_WRITE != 0 {
		e |= pollOut
	}
	return e
}
