package humushttp

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestParseDeadlineReadsBothFormats(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"1500": 1500 * time.Millisecond, "1500m": 1500 * time.Millisecond, "2S": 2 * time.Second,
		"1M": time.Minute, "1H": time.Hour, "250000u": 250 * time.Millisecond, "7n": 7, " 40 ": 40 * time.Millisecond,
	} {
		got, ok := ParseDeadline(value)
		if !ok || got != want {
			t.Errorf("ParseDeadline(%q) = %v, %v; want %v", value, got, ok, want)
		}
	}
	for _, value := range []string{"", "-5", "1.5", "12x", "123456789", "m", "+5"} {
		if _, ok := ParseDeadline(value); ok {
			t.Errorf("ParseDeadline(%q) accepted a malformed value", value)
		}
	}
}

func TestContextFromRequestCarriesTheDeadlineAndTheCallContext(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Request-Timeout", "800")
	r.Header.Set("X-Request-Id", "r-1")
	before := time.Now()
	ctx, cancel := ContextFromRequest(r, "X-Request-Timeout")
	defer cancel()
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(before.Add(800*time.Millisecond)) || deadline.After(time.Now().Add(800*time.Millisecond)) {
		t.Fatalf("deadline %v (set %v), want 800ms from the call", deadline, ok)
	}
	if cc, ok := CallContextFromContext(ctx); !ok || cc.RequestID != "r-1" {
		t.Fatalf("call context %+v, %v", cc, ok)
	}

	r.Header.Set("X-Request-Timeout", "soon")
	ctx2, cancel2 := ContextFromRequest(r, "X-Request-Timeout")
	defer cancel2()
	if _, ok := ctx2.Deadline(); ok {
		t.Fatal("a malformed header added a deadline")
	}
}

// A chain: service A got X-Request-Timeout: 300 and calls B (a real local server) with the context: B reads at most
// 300 ms in the same header, not the client's 10 s.
func TestADeadlineTravelsDownAChain(t *testing.T) {
	seen := make(chan string, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("X-Request-Timeout")
	}))
	defer b.Close()
	c, err := NewClient(Settings{BaseURL: b.URL, DeadlineHeader: "X-Request-Timeout"})
	if err != nil {
		t.Fatal(err)
	}

	incoming := httptest.NewRequest("GET", "/a", nil)
	incoming.Header.Set("X-Request-Timeout", "300")
	ctx, cancel := ContextFromRequest(incoming, "X-Request-Timeout")
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.URL+"/b", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ms, err := strconv.Atoi(<-seen)
	if err != nil || ms <= 0 || ms > 300 {
		t.Fatalf("B read X-Request-Timeout %d (%v), want 1..300", ms, err)
	}
}
