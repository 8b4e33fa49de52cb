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

// socketWait is how a streamed body's Read waits for bytes in Go's netpoller rather than inside C
// (humus_response_read_ready, docs/bodies.md §7): a cgo call that waits holds an OS thread and, past
// sysmon's 20 µs tick, has its P taken and handed on, which on one CPU costs a context switch per wait
// (bench/HISTORY.md, "stream_bench.py"). A goroutine parked in the netpoller costs neither. It watches a
// duplicate of the transfer's socket: the library's descriptor is lent and never closed here.
type socketWait struct {
	fd   C.int // the library's descriptor this duplicates
	file *os.File
	raw  syscall.RawConn
	// dev and ino name the socket itself: the library may close fd and get the same number for another
	// socket (a retry's new connection), which a wait must not mistake for the one it duplicated.
	dev uint64
	ino uint64
	// lent: a stepped call's wait handed to its body (step.go), whose socket is checked on first use: the
	// call's last wait may have been on an attempt or a connection before the one the body comes on.
	lent bool
}

// newSocketWait duplicates fd for the netpoller; nil when it cannot (the read then waits in C).
func newSocketWait(fd C.int) *socketWait {
	var st syscall.Stat_t
	if syscall.Fstat(int(fd), &st) != nil {
		return nil
	}
	dup, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// The duplicate shares the socket's nonblocking mode, so NewFile puts it on the netpoller.
	file := os.NewFile(dup, "humus-body-socket")
	raw, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil
	}
	return &socketWait{fd: fd, file: file, raw: raw, dev: uint64(st.Dev), ino: st.Ino}
}

// watches says whether w waits on the socket the library's fd is now.
func (w *socketWait) watches(fd C.int) bool {
	var st syscall.Stat_t
	return w.fd == fd && syscall.Fstat(int(fd), &st) == nil && uint64(st.Dev) == w.dev && st.Ino == w.ino
}

// interrupt ends a wait in progress (and every later one, until a deadline is set again): the Read reads
// again, or the step advances again, and finds the call cancelled. Both deadlines: a stepped call may be
// waiting for its socket to turn writable. Any goroutine.
func (w *socketWait) interrupt() { w.file.SetDeadline(time.Unix(1, 0)) }

func (w *socketWait) close() { w.file.Close() }

// readReady is one Read of a streamed body: the library hands over what is there without waiting, and
// while nothing is, this goroutine waits in the netpoller for the socket the library names. p holds no Go
// pointers and is used only during each call: the library reads straight into it.
func (c *streamCall) readReady(p []byte, n *C.size_t, cerr **C.humus_error) C.humus_status {
	var fd C.int
	var ms C.int64_t
	read := func() C.humus_status {
		return C.humus_response_read_ready(c.resp, unsafe.Pointer(&p[0]), C.size_t(len(p)), n, &fd, &ms, cerr)
	}
	st := read()
	for st == C.HUMUS_OK && *n == 0 && fd >= 0 {
		w := c.socketFor(fd)
		if w == nil {
			return C.humus_response_read(c.resp, unsafe.Pointer(&p[0]), C.size_t(len(p)), n, cerr)
		}
		if !c.waitOn(w, time.Duration(ms)*time.Millisecond, read, &st, n, &fd) {
			return C.humus_response_read(c.resp, unsafe.Pointer(&p[0]), C.size_t(len(p)), n, cerr)
		}
	}
	return st
}

// socketFor is the wait for fd, made on the first wait and again if the library names another socket.
func (c *streamCall) socketFor(fd C.int) *socketWait {
	if c.wait != nil && c.wait.lent {
		c.wait.lent = false
		if c.wait.watches(fd) {
			return c.wait
		}
	} else if c.wait != nil && c.wait.fd == fd {
		return c.wait
	}
	if c.wait != nil {
		c.wait.close()
	}
	c.wait = newSocketWait(fd)
	return c.wait
}

// waitOn waits for w's socket to turn readable, at most `bound` (the call's timeout; negative: none), reading
// again each time it does; false when the netpoller cannot wait on it. The read runs after the netpoller
// armed the wait, which forgets an edge that came before: bytes that came since the last read are read
// there, and later ones wake the wait.
func (c *streamCall) waitOn(w *socketWait, bound time.Duration, read func() C.humus_status, st *C.humus_status,
	n *C.size_t, fd *C.int) bool {
	var deadline time.Time
	if bound >= 0 {
		deadline = time.Now().Add(bound)
	}
	w.file.SetReadDeadline(deadline)
	// Published before the first read below: a cancel from now on ends the wait, and one from before is
	// what that read reports.
	c.state.waiting.Store(w)
	defer c.state.waiting.Store(nil)
	err := w.raw.Read(func(uintptr) bool {
		*st = read()
		return *st != C.HUMUS_OK || *n > 0 || *fd != w.fd
	})
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if err != nil {
		// The call's deadline, or interrupt(): the library says which on the next read.
		*st = read()
	}
	return true
}
