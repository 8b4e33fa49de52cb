package humushttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/humus-http/humus_http/bindings/go/humushttp"
)

// Bodies whose bytes are late wait in Go's netpoller, not in C: 32 of them waiting at once make no new OS
// thread (a read that waited inside a cgo call held one each), and each still arrives whole.
func TestWaitingBodiesHoldNoThreads(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("http"))
	const bodies, size = 32, 256 << 10
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 200, "body_size": size, "body_delay_ms": 1200})
	// Opened one after another: the header waits stay on one thread, so what follows counts only reads.
	var opened []*humushttp.Response
	for range bodies {
		req, _ := http.NewRequest("GET", s.url("http", path), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		opened = append(opened, resp)
	}
	threads := pprof.Lookup("threadcreate")
	before := threads.Count()
	var wg sync.WaitGroup
	got := make(chan int64, bodies)
	for _, resp := range opened {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				t.Errorf("a late body: %v", err)
			}
			got <- n
		}()
	}
	time.Sleep(600 * time.Millisecond) // every reader is waiting for the body now
	during := threads.Count()
	wg.Wait()
	close(got)
	for n := range got {
		if n != size {
			t.Errorf("a late body came with %d bytes, want %d", n, size)
		}
	}
	if made := during - before; made >= 8 {
		t.Errorf("%d waiting bodies made %d OS threads; a wait in the netpoller makes none", bodies, made)
	}
}

// A Read waiting in the netpoller for a late body ends at once when the request's context is cancelled, and
// when the body is closed: neither waits for the server's bytes. The bodies would come after 30 s, within the
// calls' 60 s: only the cancel and the close can end the reads. The 20 s bound tells a read ended by them from
// one left to the body; no loaded machine nears it.
func TestAWaitingReadEndsOnCancelAndClose(t *testing.T) {
	s := server(t)
	settings := s.settings("http")
	settings.Timeout, settings.AttemptTimeout = time.Minute, time.Minute
	c := s.open(t, settings)
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 200, "body_size": 1000, "body_delay_ms": 30_000},
		map[string]any{"status": 200, "body_size": 1000, "body_delay_ms": 30_000})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	started := time.Now()
	_, err = io.Copy(io.Discard, resp.Body)
	if took := time.Since(started); !errors.Is(err, context.Canceled) || took > 20*time.Second {
		t.Errorf("a cancelled wait: %v after %v; want context.Canceled at once", err, took)
	}
	resp.Body.Close()

	req, _ = http.NewRequest("GET", s.url("http", path), nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { resp.Body.Close() })
	started = time.Now()
	_, err = io.Copy(io.Discard, resp.Body)
	if took := time.Since(started); err == nil || took > 20*time.Second {
		t.Errorf("a closed wait: %v after %v; want an error at once", err, took)
	}
	if got := counts(t, c); got.Failures != 0 {
		t.Errorf("after a cancel and a close: %+v, want no failure", got)
	}
}
