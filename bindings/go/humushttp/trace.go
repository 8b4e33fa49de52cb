//go:build cgo

package humushttp

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"time"
)

// AttemptRecord is one attempt of a call and what the call decided after it: one element of the decision
// trace (docs/trace.md §20), with the fields every language reads. Read it with TraceOf or TraceOfError. A
// plain value: safe to read from any goroutine.
//
// A member the record has no value for is the zero value: Status 0 (the attempt got no HTTP status), Error,
// RetryVerdict, BreakerVerdict, RetryAfterSource, Method and URL "" — and RetryAfter 0 whenever
// RetryAfterSource is "" — and Breaker, BreakerAfter nil. Times are durations from the call's start (Start)
// or lengths (the rest), rounded to the nanosecond.
type AttemptRecord struct {
	Attempt   int           // 1-based position in the trace
	Start     time.Duration // when the attempt started, from the call's start
	Method    string        // what was sent
	URL       string        // without user-info
	Redirect  int           // 0 the request itself, n the n-th redirect followed
	Resend    bool          // a retry of the same hop
	Hedge     bool          // a hedged copy of another attempt (docs/retries.md §6.8)
	WireSends int           // times the request reached the wire: 0 when no connection carried it
	Status    int           // the HTTP status the attempt got; 0 none
	Error     string        // the error in its place, by status name ("HUMUS_E_TIMEOUT"); "" none
	Duration  time.Duration // from sending to the answer's head (or the failure)
	// RetryVerdict is the classifier's "again" or "done"; "" when no classifier judged (rejected, not
	// started, ended by the client).
	RetryVerdict string
	// BreakerVerdict is the classifier's "success", "failure" or "ignored"; "" as RetryVerdict.
	BreakerVerdict   string
	RetryAfter       time.Duration // the wait the dependency asked for (see RetryAfterSource)
	RetryAfterSource string        // "header", "classifier", or "" when none was asked for
	// Breaker is where the breaker stood when the attempt was admitted or rejected; nil when the call
	// stopped before asking it.
	Breaker *BreakerPosition
	// BreakerAfter is where it stood once this attempt's result was counted; nil when none was, or while a
	// streamed body still holds the verdict (docs/bodies.md §7).
	BreakerAfter *BreakerPosition
	BudgetBefore float64 // the retry budget's balance before the attempt
	BudgetAfter  float64 // and after its decision
	// Decision is one of "done", "again", "throttled", "exhausted", "expired", "stopped", "rejected"
	// (docs/trace.md §20.2).
	Decision string
	Wait     time.Duration // before the next attempt ("again"); 0 otherwise
	// WaitSource is what set Wait: "backoff", "capped", "retry_after", or "none".
	WaitSource   string
	DeadlineLeft time.Duration // the call's time left when the decision was taken
}

// BreakerPosition is where a circuit breaker stood: its state and that state's generation (1 at creation,
// one more per transition). A plain value.
type BreakerPosition struct {
	State      CircuitState
	Generation uint64
}

// TraceOfError is the decision trace of a failed call: one record per attempt, in order, from the *Error
// in err's chain (errors.As, so through fmt.Errorf's %w, *url.Error and the like). Nil when err holds no
// *Error, or one no call made (a refused setting or request, a closed client). The library keeps each call
// error's trace and renders it here, on demand. Safe for concurrent use.
func TraceOfError(err error) []AttemptRecord {
	var e *Error
	if !errors.As(err, &e) || e.trace == nil {
		return nil
	}
	return parseTrace(e.trace.render())
}

// TraceOf is the decision trace of a response of this package's (Client.Do, Client.Start, a
// *http.Client from NewClient or HTTPClient, Transport.RoundTrip): one record per attempt, in order, the
// response's own last. It is kept only for a call that asked for it — the call option RecordTrace, or the
// client option WithTraces — since making it costs the call CPU (the library renders it as JSON); TraceOf is nil
// for any other response, and for one that did not come from this package. The last record's BreakerAfter
// is nil for a streamed body (Do's, unless BufferBody): its result is counted when the body ends, after
// the trace was made (docs/trace.md §20.1). Safe for concurrent use, also while the body is read.
func TraceOf(resp *http.Response) []AttemptRecord {
	return parseTrace(responseTraceText(resp))
}

// traceRecord is a record as the C ABI renders it (docs/trace.md §20.1): seconds, and null where no value.
type traceRecord struct {
	Attempt          int            `json:"attempt"`
	Start            float64        `json:"start"`
	Method           *string        `json:"method"`
	URL              *string        `json:"url"`
	Redirect         int            `json:"redirect"`
	Resend           bool           `json:"resend"`
	Hedge            bool           `json:"hedge"`
	WireSends        int            `json:"wire_sends"`
	Status           *int           `json:"status"`
	Error            *string        `json:"error"`
	Duration         float64        `json:"duration"`
	RetryVerdict     *string        `json:"retry_verdict"`
	BreakerVerdict   *string        `json:"breaker_verdict"`
	RetryAfter       *float64       `json:"retry_after"`
	RetryAfterSource *string        `json:"retry_after_source"`
	Breaker          *tracePosition `json:"breaker"`
	BreakerAfter     *tracePosition `json:"breaker_after"`
	BudgetBefore     float64        `json:"budget_before"`
	BudgetAfter      float64        `json:"budget_after"`
	Decision         string         `json:"decision"`
	Wait             float64        `json:"wait"`
	WaitSource       string         `json:"wait_source"`
	DeadlineLeft     float64        `json:"deadline_left"`
}

type tracePosition struct {
	State      string `json:"state"`
	Generation uint64 `json:"generation"`
}

// parseTrace turns the C ABI's JSON into records; nil for no text (a trace the library could not render:
// out of memory) or an empty trace.
func parseTrace(text []byte) []AttemptRecord {
	var raw []traceRecord
	if len(text) == 0 || json.Unmarshal(text, &raw) != nil || len(raw) == 0 {
		return nil
	}
	out := make([]AttemptRecord, len(raw))
	for i, r := range raw {
		out[i] = AttemptRecord{
			Attempt: r.Attempt, Start: seconds(r.Start), Method: orEmpty(r.Method), URL: orEmpty(r.URL),
			Redirect: r.Redirect, Resend: r.Resend, Hedge: r.Hedge, WireSends: r.WireSends,
			Error: orEmpty(r.Error), Duration: seconds(r.Duration), RetryVerdict: orEmpty(r.RetryVerdict),
			BreakerVerdict: orEmpty(r.BreakerVerdict), RetryAfterSource: orEmpty(r.RetryAfterSource),
			Breaker: r.Breaker.position(), BreakerAfter: r.BreakerAfter.position(),
			BudgetBefore: r.BudgetBefore, BudgetAfter: r.BudgetAfter, Decision: r.Decision,
			Wait: seconds(r.Wait), WaitSource: r.WaitSource, DeadlineLeft: seconds(r.DeadlineLeft),
		}
		if r.Status != nil {
			out[i].Status = *r.Status
		}
		if r.RetryAfter != nil {
			out[i].RetryAfter = seconds(*r.RetryAfter)
		}
	}
	return out
}

func (p *tracePosition) position() *BreakerPosition {
	if p == nil {
		return nil
	}
	out := &BreakerPosition{Generation: p.Generation, State: CircuitState(-1)}
	for _, s := range []CircuitState{CircuitClosed, CircuitOpen, CircuitHalfOpen} {
		if s.String() == p.State {
			out.State = s
		}
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
