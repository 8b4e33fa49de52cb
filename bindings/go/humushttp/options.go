//go:build cgo

package humushttp

import (
	"context"
	"net/http"
	"time"
)

// Option configures a client being built (Open, NewClient). Options are plain values: safe to share
// between goroutines and reuse.
type Option func(*clientOptions)

type clientOptions struct {
	runtime            *Runtime
	classifier         Classifier
	classifierSet      bool // WithClassifier was used, possibly with nil (refused)
	policy             *BreakerPolicy
	disableCompression bool
	traces             bool
	hooks              AttemptHooks
	hooksSet           bool // WithAttemptHooks was used, possibly with two nil funcs (refused)
}

// WithRuntime builds the client from rt (its clock, resolve overrides, mock transport) instead of the
// default runtime. The runtime's native object lives at least as long as the client.
func WithRuntime(rt *Runtime) Option { return func(o *clientOptions) { o.runtime = rt } }

// WithClassifier installs a Go classifier (docs/retries.md §5.4) in place of the settings' preset. A nil func is an
// *Error with ErrProgram when the client is built (docs/settings.md §3.3).
func WithClassifier(f Classifier) Option {
	return func(o *clientOptions) { o.classifier, o.classifierSet = f, true }
}

// WithDisableCompression is net/http's Transport.DisableCompression: the client does not ask for compressed
// bodies and hands over the bytes as sent (the setting decompress = false). Without it, a request that sets
// no Accept-Encoding (nor Range) asks for gzip, deflate, br and zstd, and its Response has the body decoded,
// Content-Encoding and Content-Length removed and Uncompressed set (docs/bodies.md §7); a request that sets
// its own Accept-Encoding gets the raw bytes.
func WithDisableCompression() Option { return func(o *clientOptions) { o.disableCompression = true } }

// WithTraces keeps the decision trace of every response of the client for TraceOf, as the call option
// RecordTrace does for one call. It costs each call the rendering of its trace as JSON in the library;
// errors keep theirs without it (TraceOfError).
func WithTraces() Option { return func(o *clientOptions) { o.traces = true } }

// WithBreakerPolicy installs Go trip and probe policies (docs/breaker.md §9.3) in place of the built-in ones.
func WithBreakerPolicy(p BreakerPolicy) Option { return func(o *clientOptions) { o.policy = &p } }

// CallOption is a per-call setting: pass it to Client.Do or Client.Start, or attach it to a request's
// context with WithCallOptions so a call through *http.Client carries it. The CallOptions are RetryMode
// values, IdempotencyKey, Timeout, FollowRedirects, BufferBody and RecordTrace. Plain values: safe to share between
// goroutines and reuse.
type CallOption interface{ applyCall(*callOptions) }

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

type callOptions struct {
	retry          RetryMode
	idempotencyKey string
	hasKey         bool
	timeout        time.Duration
	hasTimeout     bool
	context        *CallContext
	// follow is humus_request_set_follow_redirects' argument: -1 leaves the core's default (follow), and
	// collectCallOptions starts from it.
	follow int32
	buffer bool // BufferBody: Do runs the call as Start does and waits for it
	trace  bool // RecordTrace: the response keeps its decision trace for TraceOf
}

// RetryMode is the caller's per-call override of the retry rules (docs/retries.md §4). A RetryMode is itself a
// CallOption: client.Do(req, humushttp.RetryForbid). A plain value.
type RetryMode int32

// Retry modes.
const (
	RetryDefault RetryMode = 0 // the rules decide
	RetryForbid  RetryMode = 1 // exactly one attempt
	RetryForce   RetryMode = 2 // vouch for a request the rules would not retry (budget, deadline, breaker still apply)
)

func (m RetryMode) applyCall(o *callOptions) { o.retry = m }

// IdempotencyKey sets the Idempotency-Key header: the request becomes safe to send twice (docs/retries.md §4). An empty
// key, or one with CR, LF or NUL, is refused with ErrInvalidArgument.
func IdempotencyKey(key string) CallOption {
	return callOptionFunc(func(o *callOptions) { o.idempotencyKey = key; o.hasKey = true })
}

// Timeout is the caller's bound on the whole call, on the runtime's clock (virtual clocks included); the call
// ends at the earlier of it, the context's deadline and the settings' timeout. It must be > 0 and <= 1h:
// anything else is refused with ErrInvalidArgument (deadlines cannot be turned off, docs/timeouts.md §8).
func Timeout(d time.Duration) CallOption {
	return callOptionFunc(func(o *callOptions) { o.timeout = d; o.hasTimeout = true })
}

// FollowRedirects(false) makes a call of Client.Do or Client.Start return its first 3xx as the response,
// whatever origin its Location names, for the caller to decide; FollowRedirects(true) is the default: the core
// follows redirects within the origin, at most 10 (docs/origin.md §2), and Response.Redirects lists them. A
// call through *http.Client (Transport.RoundTrip) never has the core follow, whatever this option says:
// net/http follows there, asking the client's CheckRedirect (see Client.HTTPClient).
func FollowRedirects(follow bool) CallOption {
	return callOptionFunc(func(o *callOptions) {
		o.follow = 0
		if follow {
			o.follow = 1
		}
	})
}

// BufferBody makes Client.Do (and so a call through *http.Client, with WithCallOptions) read the response
// body whole before it returns, as Client.Start does, instead of streaming it: the call then runs on the
// runtime's event loop and the goroutine waits without an OS thread blocked in C for it, which is cheaper
// under concurrency (bench/HISTORY.md "The Go boundary"). For responses known to be small: the body is held
// in memory, and one past the setting max_response_body fails with ErrTooLarge; req.Body is read whole
// first, as Start reads it. A plain value.
func BufferBody() CallOption { return callOptionFunc(func(o *callOptions) { o.buffer = true }) }

// RecordTrace keeps the call's decision trace (docs/trace.md §20) with its response, for TraceOf: the
// trace is rendered when the response's head is built, which costs the call CPU, so a response keeps none
// unless its call asks (or its client, WithTraces). A failed call's *Error keeps its trace without it
// (TraceOfError). A plain value.
func RecordTrace() CallOption { return callOptionFunc(func(o *callOptions) { o.trace = true }) }

// CallContext is what the request being served carries, passed on to the dependency (docs/telemetry.md §12): its W3C
// trace context and baggage, its X-Request-ID (sent only when given) and its Authorization (sent only with
// the setting forward_authorization, and only a Bearer token). Empty parts are left unset. A plain value.
type CallContext struct {
	Traceparent   string
	Tracestate    string
	Baggage       string
	RequestID     string
	Authorization string
}

// CallContextFromRequest is the call context of an incoming server request: its traceparent, tracestate,
// baggage, X-Request-ID and Authorization headers. It only reads r, as any reader of a request may.
func CallContextFromRequest(r *http.Request) CallContext {
	return CallContext{
		Traceparent:   r.Header.Get("Traceparent"),
		Tracestate:    r.Header.Get("Tracestate"),
		Baggage:       r.Header.Get("Baggage"),
		RequestID:     r.Header.Get("X-Request-Id"),
		Authorization: r.Header.Get("Authorization"),
	}
}

// WithCallContext returns a context carrying cc: every call made with it (through *http.Client or Client)
// passes cc on (docs/telemetry.md §12: in Go, the call context travels in the request's context.Context). Contexts
// are immutable: safe for concurrent use.
func WithCallContext(ctx context.Context, cc CallContext) context.Context {
	return WithCallOptions(ctx, callOptionFunc(func(o *callOptions) { c := cc; o.context = &c }))
}

// CallContextFromContext is the call context that calls made with ctx pass on: the one the last
// WithCallContext attached (false: none). An adapter uses it to change one part and keep the others, as
// otelhumus puts the span of an OpenTelemetry context in place of the traceparent and tracestate. Safe for
// concurrent use.
func CallContextFromContext(ctx context.Context) (CallContext, bool) {
	if o := collectCallOptions(ctx, nil); o.context != nil {
		return *o.context, true
	}
	return CallContext{}, false
}

type callOptionsKey struct{}

// WithCallOptions returns a context carrying opts, for calls made through *http.Client (whose Do takes no
// options): req = req.WithContext(humushttp.WithCallOptions(ctx, humushttp.RetryForbid)). Options already
// in ctx come first; Client.Do's own options come last and win. Safe for concurrent use.
func WithCallOptions(ctx context.Context, opts ...CallOption) context.Context {
	prev, _ := ctx.Value(callOptionsKey{}).([]CallOption)
	all := make([]CallOption, 0, len(prev)+len(opts))
	all = append(append(all, prev...), opts...)
	return context.WithValue(ctx, callOptionsKey{}, all)
}

func collectCallOptions(ctx context.Context, opts []CallOption) callOptions {
	o := callOptions{follow: -1}
	if fromCtx, ok := ctx.Value(callOptionsKey{}).([]CallOption); ok {
		for _, opt := range fromCtx {
			opt.applyCall(&o)
		}
	}
	for _, opt := range opts {
		opt.applyCall(&o)
	}
	return o
}
