package humushttp

/*
#include <humus_http.h>
*/
import "C"

// CircuitState is a circuit breaker's state (docs/breaker.md §9.2). A plain value, safe for concurrent use.
type CircuitState int32

// Circuit states.
const (
	CircuitClosed   CircuitState = C.HUMUS_CIRCUIT_CLOSED
	CircuitOpen     CircuitState = C.HUMUS_CIRCUIT_OPEN
	CircuitHalfOpen CircuitState = C.HUMUS_CIRCUIT_HALF_OPEN
)

// String is "closed", "open" or "half_open", as in readiness reports and the vectors. Safe for concurrent use.
func (s CircuitState) String() string {
	switch s {
	case CircuitClosed:
		return "closed"
	case CircuitOpen:
		return "open"
	case CircuitHalfOpen:
		return "half_open"
	}
	return "unknown"
}

// BreakerCounts are the counts a breaker policy sees (docs/breaker.md §9.3): since the current state began, plus the
// last breaker.window results. A plain value (a copy), safe for concurrent use.
type BreakerCounts struct {
	State                CircuitState // the state these counts belong to
	Successes            uint64
	Failures             uint64
	ConsecutiveSuccesses uint64
	ConsecutiveFailures  uint64
	TimedOutProbes       uint64
	WindowResults        uint32 // results in the window, at most breaker.window
	WindowFailures       uint32 // failures among them
	// Results whose attempt took longer than breaker.slow_call_duration (docs/breaker.md §9.3a), successes or
	// failures; 0 while that setting is unset.
	SlowResults uint64 // since the state began
	WindowSlow  uint32 // among the window's results
}

func countsFrom(c *C.humus_breaker_counts) BreakerCounts {
	return BreakerCounts{
		State:                CircuitState(c.state),
		Successes:            uint64(c.successes),
		Failures:             uint64(c.failures),
		ConsecutiveSuccesses: uint64(c.consecutive_successes),
		ConsecutiveFailures:  uint64(c.consecutive_failures),
		TimedOutProbes:       uint64(c.timed_out_probes),
		WindowResults:        uint32(c.window_results),
		WindowFailures:       uint32(c.window_failures),
		SlowResults:          uint64(c.slow_results),
		WindowSlow:           uint32(c.window_slow),
	}
}

// ProbeDecision is what a probe policy decides in half-open after each probe's result. A plain value.
type ProbeDecision int32

// Probe decisions.
const (
	ProbeContinue ProbeDecision = C.HUMUS_PROBE_CONTINUE // keep probing
	ProbeClose    ProbeDecision = C.HUMUS_PROBE_CLOSE    // close the breaker
	ProbeReopen   ProbeDecision = C.HUMUS_PROBE_REOPEN   // open it for another open_for
)

// BreakerPolicy replaces the built-in trip and probe policies (the ones the "trip" and "probe" settings
// parameterise). Both funcs are required (nil is an *Error with ErrProgram, docs/settings.md §3.3).
//
// They run under the breaker's lock on whichever goroutine or thread delivers a result: they must be fast,
// safe for concurrent use, and must not call the client. A returned error or a panic counts the result as a
// failure and leaves the breaker consistent (docs/breaker.md §9.4). WithBreakerPolicy copies the struct.
type BreakerPolicy struct {
	// Trip runs in closed after each result: true opens the breaker.
	Trip func(BreakerCounts) (open bool, err error)
	// Probe runs in half-open after each probe's result.
	Probe func(BreakerCounts) (ProbeDecision, error)
}
