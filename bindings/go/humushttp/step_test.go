package humushttp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/humus-http/humus_http/bindings/go/humushttp"
)

// stepPeer is a server for the stepped calls' waits:
//
//	GET /hang          no headers until the request or the test ends
//	GET /flaky/NAME    503 the first time NAME is asked for (?after=N: with Retry-After N), then 200 "ok"
//	anything else      the stream tests' peer (peer.serve)
type stepPeer struct {
	*peer
	ended chan struct{}
	seen  sync.Map // NAME → struct{}
}

func newStepPeer(t *testing.T) *stepPeer {
	p := &stepPeer{peer: &peer{stalled: make(chan struct{})}, ended: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		close(p.ended)
		close(p.stalled)
		p.Close()
	})
	return p
}

func (p *stepPeer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/hang":
		select {
		case <-r.Context().Done():
		case <-p.ended:
		}
	case strings.HasPrefix(r.URL.Path, "/flaky/"):
		p.peer.serve(httptest.NewRecorder(), r) // counted as every path is
		if _, again := p.seen.LoadOrStore(r.URL.Path, struct{}{}); !again {
			if after := r.URL.Query().Get("after"); after != "" {
				w.Header().Set("Retry-After", after)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	default:
		p.peer.serve(w, r)
	}
}

// openStepped opens a client on p whose every Do is stepped.
func (p *stepPeer) openStepped(t *testing.T, edit func(*humushttp.Settings)) *humushttp.Client {
	c := p.open(t, edit)
	humushttp.StepAlways(c)
	return c
}

// A context cancelled while the step waits for the response's headers, in the netpoller on the socket, ends
// the call at once with ErrCancelled, which matches context.Canceled too, and nothing is left held.
func TestStepCancelWhileWaitingOnTheSocket(t *testing.T) {
	p := newStepPeer(t)
	c := p.openStepped(t, nil)
	before, steps := humushttp.Live(), humushttp.StepCalls()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	started := time.Now()
	_, err := c.Do(mustRequest(t, "GET", p.URL+"/hang").WithContext(ctx))
	if took := time.Since(started); !errors.Is(err, humushttp.ErrCancelled) || !errors.Is(err, context.Canceled) ||
		took > 20*time.Second {
		t.Fatalf("after %v: %v, want ErrCancelled and context.Canceled at once", took, err)
	}
	if n := humushttp.StepCalls() - steps; n != 1 {
		t.Errorf("%d calls stepped, want 1", n)
	}
	if n := counts(t, c); n.Successes+n.Failures != 0 {
		t.Errorf("a cancelled call was counted: %+v", n)
	}
	// Responses and handles only: another test's client may be freed by its cleanup meanwhile.
	if l := humushttp.Live(); l.Responses != before.Responses || l.Handles != before.Handles {
		t.Errorf("held after the call: %+v, before %+v", l, before)
	}
}

// A deadline while the step waits on the socket, the context's or the call's Timeout, ends the call on time
// with ErrTimeout: the step's wait is bounded by what the library says.
func TestStepDeadlineWhileWaitingOnTheSocket(t *testing.T) {
	p := newStepPeer(t)
	c := p.openStepped(t, nil)
	for _, way := range []string{"context", "Timeout"} {
		t.Run(way, func(t *testing.T) {
			ctx := context.Background()
			if way == "context" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			} else {
				ctx = humushttp.WithCallOptions(ctx, humushttp.Timeout(300*time.Millisecond))
			}
			started := time.Now()
			_, err := c.Do(mustRequest(t, "GET", p.URL+"/hang").WithContext(ctx))
			took := time.Since(started)
			if !errors.Is(err, humushttp.ErrTimeout) || took < 250*time.Millisecond || took > 10*time.Second {
				t.Fatalf("after %v: %v, want ErrTimeout at 300 ms", took, err)
			}
			if way == "context" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v does not match context.DeadlineExceeded", err)
			}
		})
	}
}

// A 503 retried after a backoff: the step's wait for the time alone, on a timer, then the second attempt's
// answer. A context cancelled during a long wait (a Retry-After of 30 s) ends that wait at once, with the 503.
func TestStepRetriesAfterABackoff(t *testing.T) {
	p := newStepPeer(t)
	c := p.openStepped(t, func(s *humushttp.Settings) {
		s.BackoffBase, s.BackoffMax = 100*time.Millisecond, 100*time.Millisecond
	})
	steps := humushttp.StepCalls()
	resp, err := c.Do(mustRequest(t, "GET", p.URL+"/flaky/a"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || err != nil || resp.Attempts != 2 {
		t.Errorf("%d %q after %d attempts: %v; want 200 \"ok\" after 2", resp.StatusCode, body, resp.Attempts, err)
	}
	if n := p.count("/flaky/a"); n != 2 {
		t.Errorf("/flaky/a reached the server %d times, want 2", n)
	}

	// A backoff is jittered (it may come out short); a Retry-After is waited as told.
	slow := p.openStepped(t, func(s *humushttp.Settings) {
		s.BackoffBase, s.BackoffMax = 30*time.Second, time.Minute
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	started := time.Now()
	resp, err = slow.Do(mustRequest(t, "GET", p.URL+"/flaky/b?after=30").WithContext(ctx))
	// A cancel during a wait after a response returns that response (docs/retries.md §6.6).
	if took := time.Since(started); err != nil || resp.StatusCode != 503 || took > 10*time.Second {
		t.Errorf("cancelled in a 30 s wait: %v after %v, want the 503 at once", err, took)
	}
	if err == nil {
		resp.Body.Close()
	}
	if n := humushttp.StepCalls() - steps; n != 2 {
		t.Errorf("%d calls stepped, want 2", n)
	}
}

// With a bulkhead of one held by an open body, stepped calls wait for the slot — in Go, on the step's
// wake-up, holding no OS thread — and each proceeds once the body before it is closed.
func TestStepWaitsForABulkheadSlot(t *testing.T) {
	p := newStepPeer(t)
	c := p.openStepped(t, func(s *humushttp.Settings) {
		wait := 20 * time.Second
		s.Bulkhead = &humushttp.BulkheadSettings{MaxConcurrent: 1, Wait: &wait}
	})
	steps := humushttp.StepCalls()
	held, err := c.Do(mustRequest(t, "GET", p.URL+"/bytes/"+strconv.Itoa(8*kMiB)))
	if err != nil {
		t.Fatal(err)
	}
	threads := pprof.Lookup("threadcreate")
	created := threads.Count()
	const waiters = 16
	var wg sync.WaitGroup
	var done atomic.Int64
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Do(mustRequest(t, "GET", p.URL+"/bytes/10"))
			done.Add(1)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close() // the slot goes to the next waiter
			if b, err := io.ReadAll(resp.Body); len(b) != 10 || err != nil {
				errs <- errors.New("a body of " + strconv.Itoa(len(b)) + " bytes")
			}
		}()
	}
	for humushttp.StepCalls()-steps < waiters+1 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // every waiter is in its wait now
	if n := done.Load(); n != 0 {
		t.Fatalf("%d calls ended while the slot was held", n)
	}
	if made := threads.Count() - created; made >= 8 {
		t.Errorf("%d calls waiting for a slot made %d OS threads; a wait in Go makes none", waiters, made)
	}
	held.Body.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := counts(t, c); n.Successes != waiters+1 || n.Failures != 0 {
		t.Errorf("counts %+v, want %d successes", n, waiters+1)
	}
}

// Calls joining others over HTTP/1.1 are stepped while at most stepMostInFlight (16) Do calls are in flight,
// their open bodies included: the 15 that join a held body, whatever their bodies' sizes; the 17th, while
// those are open, is not. Every body arrives whole, the breaker counts each call once, and nothing is held
// afterwards.
func TestConcurrentCallsOverHTTP1AreSteppedUpToSixteenInFlight(t *testing.T) {
	p := newStepPeer(t)
	c := p.open(t, nil)
	before := humushttp.Live()
	// Alone, so it blocks; held open, so every call below joins it.
	held, err := c.Do(mustRequest(t, "GET", p.URL+"/chunked/100"))
	if err != nil {
		t.Fatal(err)
	}
	steps := humushttp.StepCalls()
	const calls = 15
	sizes := []int64{1, 100, 64 << 10, 256<<10 + 1, 2 * kMiB} // none empty: an empty body ends at once
	resps := make([]*humushttp.Response, calls)
	var wg sync.WaitGroup
	errs := make(chan error, calls+1)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := sizes[i%len(sizes)]
			resp, err := c.Do(mustRequest(t, "GET", p.URL+"/bytes/"+strconv.FormatInt(size, 10)))
			if err != nil {
				errs <- err
				return
			}
			resps[i] = resp
		}()
	}
	wg.Wait()
	if n := humushttp.StepCalls() - steps; n != calls {
		t.Errorf("%d calls stepped, want %d", n, calls)
	}
	// 16 in flight, bodies open: one more is not stepped.
	steps = humushttp.StepCalls()
	extra, err := c.Do(mustRequest(t, "GET", p.URL+"/bytes/100"))
	if err != nil {
		t.Fatal(err)
	}
	if n := humushttp.StepCalls() - steps; n != 0 {
		t.Errorf("the 17th call in flight was stepped")
	}
	if n, err := io.Copy(io.Discard, extra.Body); n != 100 || err != nil {
		errs <- errors.New("the 17th call: " + strconv.FormatInt(n, 10) + " bytes")
	}
	extra.Body.Close()
	for i, resp := range resps {
		if resp == nil {
			continue
		}
		size := sizes[i%len(sizes)]
		if n, err := io.Copy(io.Discard, resp.Body); n != size || err != nil {
			errs <- errors.New("call " + strconv.Itoa(i) + ": " + strconv.FormatInt(n, 10) + " bytes")
		}
		resp.Body.Close()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	held.Body.Close()
	if n := counts(t, c); n.Successes != calls+2 || n.Failures != 0 {
		t.Errorf("counts %+v, want %d successes", n, calls+2)
	}
	// Responses and handles only: another test's client may be freed by its cleanup meanwhile.
	if l := humushttp.Live(); l.Responses != before.Responses || l.Handles != before.Handles {
		t.Errorf("held after every body closed: %+v, before %+v", l, before)
	}
}

// Over HTTP/2 a call joining others stays on the event loop, where it shares the connection.
func TestConcurrentCallsOverHTTP2StayOnTheLoop(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	held := uniquePath()
	s.script(t, held, map[string]any{"status": 200, "body_size": 1 << 20})
	first, err := c.Do(mustRequest(t, "GET", s.url("https", held)))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	if first.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", first.Proto)
	}
	steps, loops := humushttp.StepCalls(), humushttp.LoopCalls()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 200, "body_size": 100})
	resp, err := c.Do(mustRequest(t, "GET", s.url("https", path)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if humushttp.StepCalls() != steps || humushttp.LoopCalls() != loops+1 {
		t.Errorf("stepped %d, on the loop %d; want the loop's", humushttp.StepCalls()-steps,
			humushttp.LoopCalls()-loops)
	}
}

// Stepped over TLS (HTTP/1.1): the handshake's waits and the response's are the step's, on a fresh
// connection each, and every body arrives whole.
func TestStepOverTLS(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https_h1"))
	humushttp.StepAlways(c)
	steps := humushttp.StepCalls()
	const calls = 16
	sizes := []int{0, 100, 16<<10 + 1, 256 << 10, 3 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		path := uniquePath()
		size := sizes[i%len(sizes)]
		s.script(t, path, map[string]any{"status": 200, "body_size": size})
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Do(mustRequest(t, "GET", s.url("https_h1", path)))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if n, err := io.Copy(io.Discard, resp.Body); n != int64(size) || err != nil || resp.ProtoMajor != 1 {
				errs <- fmt.Errorf("call %d: %d of %d bytes over %s: %v", i, n, size, resp.Proto, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := humushttp.StepCalls() - steps; n != calls {
		t.Errorf("%d calls stepped, want %d", n, calls)
	}
}

// A request body small enough to be copied (not read from a Go reader) is sent by the steps, whole.
func TestStepSendsACopiedBody(t *testing.T) {
	p := newStepPeer(t)
	c := p.openStepped(t, nil)
	steps := humushttp.StepCalls()
	body := strings.Repeat("0123456789abcdef", 4<<10) // 64 KiB: the most a call copies
	req, _ := http.NewRequest("POST", p.URL+"/upload", strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256([]byte(body))
	if want := fmt.Sprintf("%d %s length", len(body), hex.EncodeToString(sum[:])); string(got) != want || err != nil {
		t.Errorf("the server got %q (%v), want %q", got, err, want)
	}
	if humushttp.StepCalls() != steps+1 {
		t.Error("the call was not stepped")
	}
}
