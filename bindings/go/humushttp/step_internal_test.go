package humushttp

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// socketPair is a connected pair of nonblocking sockets: ours on the netpoller, and the peer's descriptor.
func socketPair(t *testing.T) (*os.File, syscall.RawConn, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	file := os.NewFile(uintptr(fds[0]), "ours")
	raw, err := file.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		file.Close()
		syscall.Close(fds[1])
	})
	// Full: our socket does not poll writable until the peer reads.
	chunk := make([]byte, 64<<10)
	for {
		if _, err := syscall.Write(fds[0], chunk); err != nil {
			break
		}
	}
	return file, raw, fds[1]
}

// A wait for either direction ends when the socket turns readable (an early answer while the body cannot go
// out) with the write deadline past, which the step takes as "advance again"; and when it turns writable,
// with ready's verdict. The helper goroutine is gone either way.
func TestWaitEither(t *testing.T) {
	t.Run("readable", func(t *testing.T) {
		file, raw, peer := socketPair(t)
		calls := 0
		time.AfterFunc(50*time.Millisecond, func() { syscall.Write(peer, []byte("HTTP/1.1 413")) })
		err := waitEither(file, raw, func(uintptr) bool { calls++; return false })
		if !errors.Is(err, os.ErrDeadlineExceeded) || calls != 1 {
			t.Fatalf("ended with %v after %d calls, want the write deadline past after 1", err, calls)
		}
	})
	t.Run("writable", func(t *testing.T) {
		file, raw, peer := socketPair(t)
		calls := 0
		time.AfterFunc(50*time.Millisecond, func() {
			b := make([]byte, 1<<20)
			for {
				if _, err := syscall.Read(peer, b); err != nil {
					return
				}
			}
		})
		err := waitEither(file, raw, func(uintptr) bool { calls++; return calls > 1 })
		if err != nil || calls != 2 {
			t.Fatalf("ended with %v after %d calls, want ready's true on the second", err, calls)
		}
	})
}
