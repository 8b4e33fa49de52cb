//go:build cgo

package humushttp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error is what a failed call, a refused setting or a refused request reports: the C ABI's humus_error,
// copied out (the C object is freed at once). A call that got a response never fails: a 404, a 500 or the
// last 503 is a response (docs/retries.md §6.6); an *Error means no response came.
//
// errors.Is(err, ErrTimeout) (and every other sentinel) matches on Status. Unwrap gives the cause the
// binding knows beyond the C status: the context's error for a call its context ended
// (context.Canceled, context.DeadlineExceeded), the *CallbackError of a Go callback, ErrClosed. An *Error is
// a plain value: safe to read from any goroutine.
type Error struct {
	Status     Status        // the C status, e.g. StatusTimeout
	Message    string        // what was wrong, naming the setting, header or URL
	Fields     []string      // the settings keys or header names the error is about (every bad key of a load)
	Attempts   int           // attempts the call made (0 when it failed before sending anything)
	RetryAfter time.Duration // for StatusRejected: how much longer the breaker stays open
	cause      error
	trace      *errorTrace // a call's: its decision trace (TraceOfError); nil for other errors
}

// Error is "humushttp: <STATUS>: <message> (<n> attempts)", and the callback's failure when there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("humushttp: ")
	b.WriteString(e.Status.String())
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " (%d attempt%s)", e.Attempts, plural(e.Attempts))
	}
	if e.cause != nil && !isContextError(e.cause) && !errors.Is(e.cause, ErrClosed) {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's status.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.status == e.Status
}

// Unwrap is the cause beyond the status (see Error), or nil.
func (e *Error) Unwrap() error { return e.cause }

// Timeout reports whether the call ended at a deadline, as net.Error and url.Error.Timeout expect.
func (e *Error) Timeout() bool { return e.Status == StatusTimeout }

// ErrClosed is the cause of the error a call on a closed Client or Runtime returns (whose Status is
// StatusMisuse). Safe for concurrent use.
var ErrClosed = errors.New("humushttp: the client is closed")

// CallbackError is the cause of an ErrCallback: a Go callback (classifier, breaker policy, mock transport)
// returned an error or panicked. The library counts that as a failure for the breaker (docs/breaker.md §9.4); a
// classifier failure ends the call with StatusCallback, and this carries what the callback said.
// errors.Is and errors.As reach the callback's own error through Unwrap. A plain value: safe to read from
// any goroutine.
type CallbackError struct {
	Callback string // "classifier", "breaker policy trip", "breaker policy probe", "mock transport"
	Err      error  // the error the callback returned; nil when it panicked
	Panic    any    // the value it panicked with, when it did
	Stack    []byte // the panicking goroutine's stack, when it panicked
}

// Error names the callback and what it returned or panicked with.
func (e *CallbackError) Error() string {
	if e.Err != nil {
		return e.Callback + " failed: " + e.Err.Error()
	}
	return fmt.Sprintf("%s panicked: %v", e.Callback, e.Panic)
}

// Unwrap is the error the callback returned (nil when it panicked).
func (e *CallbackError) Unwrap() error { return e.Err }

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func msToDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// durationToMs rounds up, so a positive duration never becomes 0 ms.
func durationToMs(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}
