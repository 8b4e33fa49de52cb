package otelhumus_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
	"github.com/humus-http/humus_http/bindings/go/otelhumus"
	"go.opentelemetry.io/otel/trace"
)

const (
	traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex  = "00f067aa0ba902b7"
)

// spanContext is what a tracer's span (or a remote parent) puts in a context: built by hand, since the
// adapter reads only the trace API.
func spanContext(t *testing.T, flags trace.TraceFlags, tracestate string) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceHex)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanHex)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.ParseTraceState(tracestate)
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: ts})
}

func TestTraceparent(t *testing.T) {
	for _, c := range []struct {
		flags trace.TraceFlags
		want  string
	}{
		{trace.FlagsSampled, "00-" + traceHex + "-" + spanHex + "-01"},
		{0, "00-" + traceHex + "-" + spanHex + "-00"},
		{0x03, "00-" + traceHex + "-" + spanHex + "-01"}, // bits level 1 does not define are not sent
	} {
		if got := otelhumus.Traceparent(spanContext(t, c.flags, "")); got != c.want {
			t.Errorf("flags %02x: %q, want %q", byte(c.flags), got, c.want)
		}
	}
	if got := otelhumus.Traceparent(trace.SpanContext{}); got != "" {
		t.Errorf("invalid span context: %q", got)
	}
}

func TestCallContextKeepsTheRest(t *testing.T) {
	incoming := humushttp.CallContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		Tracestate: "old=1", Baggage: "tenant=7", RequestID: "req-42", Authorization: "Bearer t"}
	ctx := humushttp.WithCallContext(context.Background(), incoming)

	// No span: humushttp's call context as it is, and the context itself.
	if cc, ok := otelhumus.CallContext(ctx); ok || cc != incoming {
		t.Errorf("without a span: %+v, %v", cc, ok)
	}
	if otelhumus.WithSpanFromContext(ctx) != ctx {
		t.Error("WithSpanFromContext made a new context without a span")
	}

	ctx = trace.ContextWithSpanContext(ctx, spanContext(t, trace.FlagsSampled, "vendor=a,other=b"))
	want := incoming
	want.Traceparent = "00-" + traceHex + "-" + spanHex + "-01"
	want.Tracestate = "vendor=a,other=b"
	if cc, ok := otelhumus.CallContext(ctx); !ok || cc != want {
		t.Errorf("with a span: %+v, %v; want %+v", cc, ok, want)
	}
	if cc, ok := humushttp.CallContextFromContext(otelhumus.WithSpanFromContext(ctx)); !ok || cc != want {
		t.Errorf("WithSpanFromContext attached %+v, %v; want %+v", cc, ok, want)
	}

	// A span with no tracestate clears the incoming one: that belongs to another parent.
	bare := trace.ContextWithRemoteSpanContext(humushttp.WithCallContext(context.Background(), incoming),
		spanContext(t, 0, ""))
	want = incoming
	want.Traceparent = "00-" + traceHex + "-" + spanHex + "-00"
	want.Tracestate = ""
	if cc, ok := otelhumus.CallContext(bare); !ok || cc != want {
		t.Errorf("unsampled span without tracestate: %+v, %v; want %+v", cc, ok, want)
	}
	if cc, ok := otelhumus.CallContext(trace.ContextWithRemoteSpanContext(context.Background(), spanContext(t, 0, ""))); !ok ||
		cc != (humushttp.CallContext{Traceparent: want.Traceparent}) {
		t.Errorf("no humushttp call context: %+v, %v", cc, ok)
	}
}

type spans struct {
	mu  sync.Mutex
	all []humushttp.Span
}

func (s *spans) add(sp humushttp.Span) {
	s.mu.Lock()
	s.all = append(s.all, sp)
	s.mu.Unlock()
}

func (s *spans) get() []humushttp.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]humushttp.Span(nil), s.all...)
}

// Through an *http.Client with the wrapped Transport, a span sink on the runtime: every attempt, a retry
// included, is a child of the span in the request's context, and the server saw exactly that.
func TestTransportParentsTheAttempts(t *testing.T) {
	s := server(t)
	var got spans
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{SpanSink: got.add})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c := s.open(t, rt)
	hc := c.HTTPClient()
	hc.Transport = otelhumus.NewTransport(hc.Transport)
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200, "body": "ok"})

	ctx := humushttp.WithCallContext(context.Background(), humushttp.CallContext{
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Baggage: "tenant=7"})
	ctx = trace.ContextWithSpanContext(ctx, spanContext(t, trace.FlagsSampled, "vendor=a"))
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url(path), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}

	received := s.requests(t, path)
	attempts := got.get()
	if len(received) != 2 || len(attempts) != 2 {
		t.Fatalf("%d requests received, %d spans; want 2 and 2", len(received), len(attempts))
	}
	for i, sp := range attempts {
		if sp.TraceID != traceHex || sp.ParentSpanID != spanHex || sp.TraceFlags != 1 || sp.TraceState != "vendor=a" {
			t.Errorf("attempt %d: span %+v", i, sp)
		}
		r := received[i]
		if tp, _ := r.header("traceparent"); tp != "00-"+traceHex+"-"+sp.SpanID+"-01" {
			t.Errorf("attempt %d: the server saw traceparent %q, the attempt's span is %s", i, tp, sp.SpanID)
		}
		if ts, _ := r.header("tracestate"); ts != "vendor=a" {
			t.Errorf("attempt %d: tracestate %q", i, ts)
		}
		if b, _ := r.header("baggage"); b != "tenant=7" {
			t.Errorf("attempt %d: baggage %q", i, b)
		}
	}
	if req.Context() != ctx {
		t.Error("RoundTrip changed the caller's request")
	}
}

// Client.Do with WithSpanFromContext, no span sink: the span's traceparent is sent unchanged, its sampled
// flag off as the span's.
func TestDoSendsTheSpanUnsampled(t *testing.T) {
	s := server(t)
	c := s.open(t, nil)
	path := uniquePath()
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), spanContext(t, 0, ""))
	req, _ := http.NewRequestWithContext(otelhumus.WithSpanFromContext(ctx), "GET", s.url(path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	received := s.onlyRequest(t, path)
	if tp, _ := received.header("traceparent"); tp != "00-"+traceHex+"-"+spanHex+"-00" {
		t.Errorf("the server saw traceparent %q", tp)
	}
	if ts, ok := received.header("tracestate"); ok {
		t.Errorf("the server saw tracestate %q, want none", ts)
	}
}

// Without a span the Transport passes the request through: no traceparent is invented without a sink.
func TestTransportWithoutSpan(t *testing.T) {
	s := server(t)
	hc := s.open(t, nil).HTTPClient()
	hc.Transport = otelhumus.NewTransport(hc.Transport)
	path := uniquePath()
	resp, err := hc.Get(s.url(path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	received := s.onlyRequest(t, path)
	if tp, ok := received.header("traceparent"); ok {
		t.Errorf("the server saw traceparent %q, want none", tp)
	}
}
