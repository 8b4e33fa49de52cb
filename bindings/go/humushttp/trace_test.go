package humushttp_test

// The decision trace through Go (docs/trace.md §20): TraceOf for a response of a call that asked for it,
// TraceOfError for a failed call, on the virtual clock and the mock transport.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func TestTraceOfA503503200Call(t *testing.T) {
	var mu sync.Mutex
	n := 0
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		switch n {
		case 1:
			return humushttp.MockReply{Status: 503, Header: http.Header{"Retry-After": {"1"}}}, nil
		case 2:
			return humushttp.MockReply{Status: 503}, nil
		}
		return humushttp.MockReply{Status: 200, Body: []byte("paid")}, nil
	})
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080", Timeout: 30 * time.Second})
	// Through *http.Client with a Timeout, which wraps resp.Body: the trace is found by the response itself.
	hc := c.HTTPClient()
	hc.Timeout = time.Hour
	req, _ := http.NewRequest("GET", "http://payments:8080/pay", nil)
	req = req.WithContext(humushttp.WithCallOptions(context.Background(), humushttp.RecordTrace()))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	trace := humushttp.TraceOf(resp)
	if len(trace) != 3 {
		t.Fatalf("want 3 records, got %+v", trace)
	}
	for i, want := range []struct {
		status     int
		decision   string
		waitSource string
	}{{503, "again", "retry_after"}, {503, "again", ""}, {200, "done", "none"}} {
		r := trace[i]
		if r.Attempt != i+1 || r.Status != want.status || r.Decision != want.decision || r.WireSends != 1 ||
			r.Error != "" || r.Method != "GET" || r.URL != "http://payments:8080/pay" {
			t.Errorf("record %d: %+v", i, r)
		}
		if want.waitSource != "" && r.WaitSource != want.waitSource {
			t.Errorf("record %d: wait source %q, want %q", i, r.WaitSource, want.waitSource)
		}
		// The 200's body was streamed: its result is counted at its end, after the trace was made.
		if r.Breaker == nil || r.Breaker.State != humushttp.CircuitClosed || r.Breaker.Generation != 1 ||
			(i < 2) != (r.BreakerAfter != nil) || (i < 2 && r.BreakerAfter.State != humushttp.CircuitClosed) {
			t.Errorf("record %d: breaker %+v, after %+v", i, r.Breaker, r.BreakerAfter)
		}
	}
	first := trace[0]
	if first.Wait != time.Second || first.RetryAfter != time.Second || first.RetryAfterSource != "header" ||
		first.RetryVerdict != "again" || first.BreakerVerdict != "failure" || first.Start != 0 {
		t.Errorf("first record: %+v", first)
	}
	// The second 503 has no Retry-After: a backoff draw, within the first retry's cap's double.
	if second := trace[1]; second.RetryAfterSource != "" || second.RetryAfter != 0 || second.Wait <= 0 ||
		(second.WaitSource != "backoff" && second.WaitSource != "capped") || second.Start != time.Second || !second.Resend {
		t.Errorf("second record: %+v", second)
	}
	if last := trace[2]; last.Wait != 0 || last.BreakerVerdict != "success" || last.BudgetAfter > first.BudgetBefore {
		t.Errorf("last record: %+v", last)
	}

	// A call that did not ask keeps no trace; neither has a response of another transport, nor nil.
	plain, err := get(t, c, "http://payments:8080/pay")
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if got := humushttp.TraceOf(plain.Response); got != nil {
		t.Errorf("a call without RecordTrace: %+v", got)
	}
	if humushttp.TraceOf(&http.Response{}) != nil || humushttp.TraceOf(nil) != nil {
		t.Error("a response of no call of this package has a trace")
	}
}

func TestTraceOfARejectedCall(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		return humushttp.MockReply{Status: 503}, nil
	})
	// WithTraces: every response of the client keeps its trace, with no call option.
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080", MaxAttempts: 1,
		Breaker: &humushttp.BreakerSettings{OpenFor: 10 * time.Second},
		Trip:    &humushttp.TripSettings{ConsecutiveFailures: 2}}, humushttp.WithTraces())
	for i, after := range []humushttp.CircuitState{humushttp.CircuitClosed, humushttp.CircuitOpen} {
		resp, err := get(t, c, "http://payments:8080/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		trace := humushttp.TraceOf(resp.Response)
		if len(trace) != 1 || trace[0].Decision != "exhausted" || trace[0].BreakerAfter == nil ||
			trace[0].BreakerAfter.State != after {
			t.Fatalf("call %d: %+v", i+1, trace)
		}
	}
	_, err := get(t, c, "http://payments:8080/")
	if !errors.Is(err, humushttp.ErrRejected) {
		t.Fatalf("the third call: %v", err)
	}
	// Through wrapping, as errors.As reaches it.
	trace := humushttp.TraceOfError(fmt.Errorf("charging: %w", err))
	if len(trace) != 1 {
		t.Fatalf("want 1 record, got %+v", trace)
	}
	r := trace[0]
	if r.Decision != "rejected" || r.Error != "HUMUS_E_REJECTED" || r.WireSends != 0 || r.Status != 0 ||
		r.RetryVerdict != "" || r.Breaker == nil || r.Breaker.State != humushttp.CircuitOpen || r.Breaker.Generation != 2 {
		t.Errorf("the rejected record: %+v (breaker %+v)", r, r.Breaker)
	}
	// An error no call made has none.
	if humushttp.TraceOfError(errors.New("other")) != nil || humushttp.TraceOfError(nil) != nil {
		t.Error("an error of no call has a trace")
	}
	_, err = humushttp.Open(humushttp.Settings{BaseURL: "ftp://x"}, humushttp.WithRuntime(rt))
	if err == nil || humushttp.TraceOfError(err) != nil {
		t.Errorf("a refused setting: %v, trace %+v", err, humushttp.TraceOfError(err))
	}
}
