package humushttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// F193: a client opened with Settings.Hedge hedges Do's calls with no call option (docs/retries.md §6.8): the first
// request never answers until it is cancelled, the copy sent after the delay answers, and the first copy's
// connection is closed once the copy has won. Asserted on what the server saw, not on times.
func TestDoOfAHedgingClientHedgesWithoutBufferBody(t *testing.T) {
	var requests atomic.Int32
	loserCancelled := make(chan struct{}, 2) // one per round; never reassigned (the handler reads it)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			select {
			case <-r.Context().Done(): // the client closed the losing copy's connection
				loserCancelled <- struct{}{}
			case <-time.After(20 * time.Second):
			}
			return
		}
		_, _ = io.WriteString(w, "from the copy")
	}))
	defer srv.Close()
	c, err := Open(Settings{BaseURL: srv.URL, Hedge: &HedgeSettings{Delay: "50ms", Max: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, start := range []bool{false, true} {
		requests.Store(0)
		req, _ := http.NewRequest("GET", srv.URL+"/slow-then-fast", nil)
		var resp *Response
		if start {
			call, err := c.Start(req, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err = call.Wait()
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
		} else if resp, err = c.Do(req); err != nil {
			t.Fatalf("Do: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "from the copy" {
			t.Fatalf("start=%v: body %q, %v; want the hedged copy's answer", start, body, err)
		}
		if got := requests.Load(); got != 2 {
			t.Fatalf("start=%v: the server saw %d requests, want 2 (the first and its hedge)", start, got)
		}
		select {
		case <-loserCancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("start=%v: the losing copy's connection was never closed", start)
		}
	}
}
