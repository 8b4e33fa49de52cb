// Package otelhumus makes the attempts of humushttp calls children of the OpenTelemetry span in the
// request's context.Context (trace.SpanContextFromContext), as the core makes them children of a caller's
// traceparent (docs/telemetry.md §12, §13.1). It is a module of its own,
// github.com/humus-http/humus_http/bindings/go/otelhumus, so that humushttp itself keeps no OpenTelemetry
// dependency; this one needs only the OpenTelemetry trace API (go.opentelemetry.io/otel/trace), not the SDK.
//
// Through an *http.Client, wrap its Transport:
//
//	hc, err := humushttp.NewClient(settings)
//	hc.Transport = otelhumus.NewTransport(hc.Transport)
//	ctx, span := tracer.Start(ctx, "checkout")
//	req, _ := http.NewRequestWithContext(ctx, "POST", "https://payments:8443/v1/charges", body)
//	resp, err := hc.Do(req) // the dependency sees traceparent 00-<span's trace id>-<attempt's span id>-<flags>
//
// With Client.Do or Client.Start, give the request such a context:
//
//	resp, err := client.Do(req.WithContext(otelhumus.WithSpanFromContext(req.Context())))
//
// What the call context gets from a valid span context: the traceparent
// 00-<trace id>-<span id>-<flags>, the flags being the sampled flag only (W3C trace context level 1, as
// OpenTelemetry's own propagator writes it), and the span's tracestate (none when it is empty). The span
// replaces the traceparent and tracestate of a call context already in ctx (humushttp.WithCallContext with
// humushttp.CallContextFromRequest, say: the span is normally a server span, itself the child of that
// incoming traceparent) and keeps its baggage, X-Request-ID and Authorization. A context without a valid span
// context is left as it is.
//
// What the dependency receives then follows docs/telemetry.md §12: with a span sink on the runtime, each
// attempt is a span of the core, whose TraceID is the OpenTelemetry span's trace id and whose ParentSpanID is
// its span id, and the traceparent sent names that attempt span; without a sink the span's traceparent is
// sent unchanged. The core's attempt spans reach a span sink (humushttp.RuntimeOptions.SpanSink); recording
// them in an OpenTelemetry SDK is the sink's business, not this package's.
//
// Getting it: a program of yours requires this module beside humushttp's,
//
//	go get github.com/humus-http/humus_http/bindings/go/otelhumus
//
// which resolves once the two modules are tagged at matching versions (tags bindings/go/vX.Y.Z and
// bindings/go/otelhumus/vX.Y.Z). Until then, add to your go.mod a replace directive for each of the two,
// pointing at a checkout of this repository (bindings/go and bindings/go/otelhumus), as this module's own
// go.mod does for humushttp: a dependency's replace directives do not apply to the modules that use it. Like
// humushttp, it needs cgo and libhumus_http. Everything here is safe for concurrent use.
package otelhumus

import (
	"context"
	"net/http"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
	"go.opentelemetry.io/otel/trace"
)

// CallContext is the call context that calls made with ctx should pass on: humushttp's own (the last one
// humushttp.WithCallContext attached, if any) with the traceparent and tracestate of the span context in
// ctx. False when ctx holds no valid span context; the call context returned then is humushttp's, unchanged.
func CallContext(ctx context.Context) (humushttp.CallContext, bool) {
	cc, _ := humushttp.CallContextFromContext(ctx)
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return cc, false
	}
	cc.Traceparent = Traceparent(sc)
	cc.Tracestate = sc.TraceState().String()
	return cc, true
}

// Traceparent is sc as a W3C traceparent value: 00-<trace id>-<span id>-<flags>, the flags keeping only the
// sampled flag. "" for an invalid span context.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" +
		(sc.TraceFlags() & trace.FlagsSampled).String()
}

// WithSpanFromContext returns ctx carrying, as its humushttp call context, the span context in ctx
// (CallContext): every call made with the returned context, through *http.Client or Client.Do and
// Client.Start, makes its attempts children of that span. ctx itself when it holds no valid span context.
func WithSpanFromContext(ctx context.Context) context.Context {
	cc, ok := CallContext(ctx)
	if !ok {
		return ctx
	}
	return humushttp.WithCallContext(ctx, cc)
}

// Transport is an http.RoundTripper that gives each request's call context the span of the request's
// context (WithSpanFromContext), then sends it through Base. Base is normally humushttp's Transport (the
// Transport of an *http.Client from humushttp.NewClient or Client.HTTPClient); another RoundTripper ignores
// the call context. humushttp.ClientOf does not see through a Transport: keep the *humushttp.Client, or the
// *http.Client before wrapping, to reach the client. Safe for concurrent use.
type Transport struct {
	Base http.RoundTripper // nil: http.DefaultTransport, which ignores call contexts
}

// NewTransport wraps base (see Transport).
func NewTransport(base http.RoundTripper) *Transport { return &Transport{Base: base} }

// RoundTrip sends req through Base with the span of req's context as its call context. req is not
// modified: a request with a new context is sent when there is a span, req itself otherwise.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	if with := WithSpanFromContext(ctx); with != ctx {
		req = req.WithContext(with)
	}
	return base.RoundTrip(req)
}
