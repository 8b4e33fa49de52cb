package humushttp_test

// The vectors' "trace" expectation (tests/vectors/README.md): a call's decision trace, read through
// TraceOf and TraceOfError, in the vectors' terms, checked record by record.

import (
	"fmt"
	"math"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// traceKeys are the members of a record a vector may check; "_ms" ones are durations in milliseconds.
var traceKeys = []string{"decision", "wait_ms", "wait_source", "status", "error", "wire_sends", "retry_verdict",
	"breaker_verdict", "retry_after_ms", "retry_after_source", "breaker", "breaker_after", "budget_before",
	"budget_after", "redirect", "resend"}

// traceForVector writes records as the vectors do: JSON values, null where a record has none.
func traceForVector(records []humushttp.AttemptRecord) []map[string]any {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	orNil := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	position := func(p *humushttp.BreakerPosition) any {
		if p == nil {
			return nil
		}
		return map[string]any{"state": p.State.String(), "generation": float64(p.Generation)}
	}
	out := make([]map[string]any, 0, len(records))
	for _, r := range records {
		m := map[string]any{
			"decision": r.Decision, "wait_ms": ms(r.Wait), "wait_source": r.WaitSource, "status": nil,
			"error": orNil(r.Error), "wire_sends": float64(r.WireSends), "retry_verdict": orNil(r.RetryVerdict),
			"breaker_verdict": orNil(r.BreakerVerdict), "retry_after_ms": nil,
			"retry_after_source": orNil(r.RetryAfterSource), "breaker": position(r.Breaker),
			"breaker_after": position(r.BreakerAfter), "budget_before": r.BudgetBefore,
			"budget_after": r.BudgetAfter, "redirect": float64(r.Redirect), "resend": r.Resend,
		}
		if r.Status != 0 {
			m["status"] = float64(r.Status)
		}
		if r.RetryAfterSource != "" {
			m["retry_after_ms"] = ms(r.RetryAfter)
		}
		out = append(out, m)
	}
	return out
}

// checkTrace compares every record, in order; each expected record names only the members it checks, and
// numbers compare within 1e-6 (the C ABI carries seconds as doubles).
func (r *runner) checkTrace(want []any, got []map[string]any, path string) {
	p := r.p
	if len(want) != len(got) {
		p.add(path, fmt.Sprintf("expected %d records, the trace has %d: %s", len(want), len(got), dump(got)))
	}
	for i := 0; i < min(len(want), len(got)); i++ {
		at := fmt.Sprintf("%s[%d]", path, i)
		if !p.keys(want[i], at, traceKeys...) {
			continue
		}
		for key, value := range want[i].(map[string]any) {
			x, wantNumber := value.(float64)
			y, gotNumber := got[i][key].(float64)
			if wantNumber && gotNumber {
				if math.Abs(x-y) > 1e-6 {
					p.add(at+"."+key, "expected "+dump(value)+", got "+dump(got[i][key]))
				}
				continue
			}
			p.equal(at+"."+key, value, got[i][key])
		}
	}
}
