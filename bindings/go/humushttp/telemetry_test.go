package humushttp_test

// Span and log sinks, failure injection and the upstreams registry against the real test server.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// collector gathers what a sink receives, from whichever thread delivers it.
type collector[T any] struct {
	mu    sync.Mutex
	items []T
}

func (c *collector[T]) add(v T) {
	c.mu.Lock()
	c.items = append(c.items, v)
	c.mu.Unlock()
}

func (c *collector[T]) all() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.items)
}

func newRuntime(t *testing.T, opts humushttp.RuntimeOptions) *humushttp.Runtime {
	t.Helper()
	rt, err := humushttp.NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestSpansOfARetriedCall(t *testing.T) {
	s := server(t)
	var spans collector[humushttp.Span]
	rt := newRuntime(t, humushttp.RuntimeOptions{SpanSink: spans.add})
	c := openOn(t, rt, s.settings("http"))
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200, "body": "ok"})
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	ctx := humushttp.WithCallContext(context.Background(), humushttp.CallContext{
		Traceparent: "00-" + traceID + "-" + parentID + "-01"})
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Attempts != 2 {
		t.Fatalf("got %d after %d attempts", resp.StatusCode, resp.Attempts)
	}
	got := spans.all()
	received := s.requests(t, path)
	if len(got) != 2 || len(received) != 2 {
		t.Fatalf("%d spans, %d requests received; want 2 and 2: %+v", len(got), len(received), got)
	}
	for i, sp := range got {
		if sp.Name != "GET" || sp.TraceID != traceID || sp.ParentSpanID != parentID || len(sp.SpanID) != 16 ||
			sp.TraceFlags != 1 || sp.End.Before(sp.Start) {
			t.Errorf("span %d: %+v", i, sp)
		}
		resend, _ := sp.Attributes["http.request.resend_count"].(int64) // absent on the first attempt
		if resend != int64(i) {
			t.Errorf("span %d: resend_count %v", i, sp.Attributes["http.request.resend_count"])
		}
		if tp, _ := received[i].header("traceparent"); tp != "00-"+sp.TraceID+"-"+sp.SpanID+"-01" {
			t.Errorf("attempt %d sent traceparent %q, span %s", i, tp, sp.SpanID)
		}
	}
	if got[0].SpanID == got[1].SpanID {
		t.Error("both attempts have the same span id")
	}
	if !got[0].Error || got[0].Attributes["error.type"] != "503" ||
		got[0].Attributes["http.response.status_code"] != int64(503) {
		t.Errorf("first span %+v", got[0])
	}
	if got[1].Error || got[1].Attributes["http.response.status_code"] != int64(200) {
		t.Errorf("second span %+v", got[1])
	}
	if _, ok := got[1].Attributes["error.type"]; ok {
		t.Errorf("second span has error.type: %+v", got[1])
	}
}

func TestPanickingSinksAreDropped(t *testing.T) {
	s := server(t)
	rt := newRuntime(t, humushttp.RuntimeOptions{
		SpanSink: func(humushttp.Span) { panic("span sink") },
		LogSink:  func(humushttp.LogRecord) { panic("log sink") },
	})
	settings := s.settings("http")
	settings.MaxAttempts = 1
	settings.Trip = &humushttp.TripSettings{ConsecutiveFailures: 1}
	c := openOn(t, rt, settings)
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 500})
	resp, err := c.HTTPClient().Get(s.url("http", path)) // a span, and the breaker opens: a log record
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if state, _ := c.BreakerState(); state != humushttp.CircuitOpen {
		t.Errorf("breaker %v", state)
	}
	if err := rt.SetSpanSink(nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.SetLogSink(nil); err != nil {
		t.Fatal(err)
	}
}

func TestBreakerOpeningIsLoggedAndRejectionsHaveSpans(t *testing.T) {
	s := server(t)
	var spans collector[humushttp.Span]
	var logs collector[humushttp.LogRecord]
	rt := newRuntime(t, humushttp.RuntimeOptions{SpanSink: spans.add, LogSink: logs.add})
	settings := s.settings("http")
	settings.MaxAttempts = 1
	settings.Trip = &humushttp.TripSettings{ConsecutiveFailures: 2}
	c := openOn(t, rt, settings)
	hc := c.HTTPClient()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 500})
	for i := 0; i < 2; i++ {
		resp, err := hc.Get(s.url("http", path))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := hc.Get(s.url("http", path)); !errors.Is(err, humushttp.ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	records := logs.all()
	if len(records) != 1 {
		t.Fatalf("%d log records, want 1: %+v", len(records), records)
	}
	r := records[0]
	if r.Event != "humus.circuit.state_change" || r.PreviousState != humushttp.CircuitClosed ||
		r.NewState != humushttp.CircuitOpen || r.ServerAddress != "127.0.0.1" || r.ServerPort != s.port("http") ||
		r.Counts.State != humushttp.CircuitClosed || r.Counts.ConsecutiveFailures != 2 || r.Upstream != "" ||
		r.Time.IsZero() || !strings.Contains(r.Message, "open") {
		t.Errorf("log record %+v", r)
	}
	got := spans.all()
	if len(got) != 3 {
		t.Fatalf("%d spans, want 3: %+v", len(got), got)
	}
	if last := got[2]; !last.Error || last.Attributes["error.type"] != "rejected" || last.ParentSpanID != "" {
		t.Errorf("rejected attempt's span %+v", last)
	}
	if got := s.requests(t, path); len(got) != 2 {
		t.Errorf("server received %d requests, want 2", len(got))
	}
}

func TestFaultInjectionSendsNothing(t *testing.T) {
	s := server(t)
	rt := newRuntime(t, humushttp.RuntimeOptions{Faults: true})
	settings := s.settings("http")
	settings.MaxAttempts = 1
	c := openOn(t, rt, settings)
	path := uniquePath()
	ctx := humushttp.WithCallContext(context.Background(), humushttp.CallContext{
		Baggage: fmt.Sprintf("humus.fault=http:127.0.0.1:%d=status:503", s.port("http"))})
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Attempts != 1 {
		t.Errorf("got %d after %d attempts, want the injected 503", resp.StatusCode, resp.Attempts)
	}
	if got := s.requests(t, path); len(got) != 0 {
		t.Errorf("server received %+v, want nothing", got)
	}
	// Faults off: the same baggage is only passed on.
	plain := openOn(t, newRuntime(t, humushttp.RuntimeOptions{}), settings)
	req, _ = http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	if resp, err = plain.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(s.requests(t, path)) != 1 {
		t.Errorf("without faults: %d, %d requests", resp.StatusCode, len(s.requests(t, path)))
	}
}

func TestUpstreams(t *testing.T) {
	s := server(t)
	var logs collector[humushttp.LogRecord]
	rt := newRuntime(t, humushttp.RuntimeOptions{LogSink: logs.add})
	t.Setenv("HUMUS_HTTP_UPSTREAMS__BILLING__BASE_URL", s.url("http", ""))
	doc := []byte(`{"upstreams": {
		"billing": {"base_url": "http://127.0.0.1:1", "timeout": "2s", "max_attempts": 1},
		"ledger-v2": {"base_url": "http://127.0.0.1:1", "max_attempts": 1}}}`)
	u, err := humushttp.OpenUpstreams(rt, doc)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if names := u.Names(); !slices.Equal(names, []string{"billing", "ledger-v2"}) {
		t.Errorf("Names() = %q", names)
	}
	records := logs.all()
	if len(records) != 1 || records[0].Event != "humus.upstreams.base_url_override" ||
		records[0].Upstream != "billing" || records[0].PreviousState != -1 || records[0].NewState != -1 {
		t.Errorf("log records %+v", records)
	}

	billing, err := u.Client("billing")
	if err != nil {
		t.Fatal(err)
	}
	path := uniquePath()
	req, _ := http.NewRequest("GET", s.url("http", path), nil) // the environment's base_url won
	resp, err := billing.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(s.requests(t, path)) != 1 {
		t.Errorf("billing: %d", resp.StatusCode)
	}
	hc, err := u.HTTPClient("ledger-v2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Get("http://127.0.0.1:1/x"); !errors.Is(err, humushttp.ErrConnect) {
		t.Errorf("ledger-v2 (nothing listens): %v", err)
	}

	var report struct {
		Status  string
		Clients []struct{ Name, State string }
	}
	data, err := u.Readiness()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &report); err != nil || report.Status != "ok" || len(report.Clients) != 2 {
		t.Errorf("readiness %s (%v)", data, err)
	}

	_, err = u.Client("biling")
	var he *humushttp.Error
	if !errors.As(err, &he) || he.Status != humushttp.StatusInvalidArgument ||
		!strings.Contains(he.Message, "billing") || !strings.Contains(he.Message, "ledger-v2") {
		t.Errorf("unknown name: %v", err)
	}

	// Closing the registry first: a client already handed out keeps working until it is closed.
	u.Close()
	if _, err := u.Client("billing"); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("Client after Close: %v", err)
	}
	if u.Names() != nil {
		t.Error("Names after Close")
	}
	req, _ = http.NewRequest("GET", s.url("http", path), nil)
	if resp, err = billing.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	billing.Close()
	req, _ = http.NewRequest("GET", s.url("http", path), nil)
	if _, err := billing.Do(req); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
}

func TestUpstreamsConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		field string
	}{
		{`{"upstreams": {"billing": {"base_url": "http://billing:8080", "timout": "5s"}}}`, "upstreams.billing.timout"},
		{`{"upstreams": {"billing": {"base_url": "http://billing:8080", "timeout": "soon"}}}`, "upstreams.billing.timeout"},
	} {
		u, err := humushttp.OpenUpstreams(nil, []byte(tc.doc))
		var he *humushttp.Error
		if !errors.As(err, &he) || he.Status != humushttp.StatusConfig || !errors.Is(err, humushttp.ErrConfig) ||
			!slices.Contains(he.Fields, tc.field) {
			t.Errorf("%s: %v (%+v)", tc.doc, err, he)
		}
		if u != nil {
			u.Close()
		}
	}
}

func TestSpansOfAsynchronousCalls(t *testing.T) {
	s := server(t)
	var spans collector[humushttp.Span]
	rt := newRuntime(t, humushttp.RuntimeOptions{})
	if err := rt.SetSpanSink(spans.add); err != nil { // delivered on the event-loop thread
		t.Fatal(err)
	}
	c := openOn(t, rt, s.settings("http"))
	var calls []*humushttp.Call
	for i := 0; i < 4; i++ {
		req, _ := http.NewRequest("GET", s.url("http", uniquePath()), nil)
		call, err := c.Start(req, nil)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call)
	}
	for _, call := range calls {
		resp, err := call.Wait()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := spans.all()
	if len(got) != 4 {
		t.Fatalf("%d spans, want 4", len(got))
	}
	for _, sp := range got {
		if sp.ParentSpanID != "" || len(sp.TraceID) != 32 || sp.Attributes["http.response.status_code"] != int64(200) {
			t.Errorf("span %+v", sp)
		}
	}
}

func TestCallContextFromContext(t *testing.T) {
	if cc, ok := humushttp.CallContextFromContext(context.Background()); ok || cc != (humushttp.CallContext{}) {
		t.Errorf("empty context: %+v, %v", cc, ok)
	}
	first := humushttp.CallContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Baggage: "a=1"}
	second := humushttp.CallContext{RequestID: "req-42"}
	ctx := humushttp.WithCallContext(context.Background(), first)
	ctx = humushttp.WithCallOptions(ctx, humushttp.RetryForbid) // other options leave it as it is
	if cc, ok := humushttp.CallContextFromContext(ctx); !ok || cc != first {
		t.Errorf("got %+v, %v; want %+v", cc, ok, first)
	}
	if cc, ok := humushttp.CallContextFromContext(humushttp.WithCallContext(ctx, second)); !ok || cc != second {
		t.Errorf("the last one attached: got %+v, %v; want %+v", cc, ok, second)
	}
}
