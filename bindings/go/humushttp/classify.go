package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// Classifier decides what one attempt's result means (docs/retries.md §5.4): whether to retry and how the breaker
// counts it. Install it with WithClassifier; it may delegate to ClassifyDefault or ClassifyPreset.
//
// It runs on the goroutine of a blocking call or on the runtime's event loop, possibly several at once: it
// must be safe for concurrent use. A returned error or a panic is a failing callback: the call ends with
// ErrCallback (its *CallbackError as the cause, for blocking calls) and the breaker counts a failure
// (docs/breaker.md §9.4). Whatever it says, a request that is not safe to send twice makes one attempt (docs/retries.md §5.2).
type Classifier func(a *Attempt) (Classification, error)

// Attempt is one attempt as a classifier sees it: the request's method and the response status, or the
// transport error when no response came. Header reads the response only while the classifier runs, on
// the classifier's goroutine; the fields are plain copies, readable from any goroutine.
type Attempt struct {
	Method     string // the request's method, e.g. "GET"
	Status     int    // the response status; 0 when no response came
	Err        Status // the transport error when no response came (StatusConnect, StatusTimeout, ...), else StatusOK
	ErrMessage string // that error's message, or ""
	Number     int    // 1 for the first attempt of a request
	native     *C.humus_attempt
}

// Header is the first value of the response header name (case-insensitive), or false when absent or when no
// response came. Only valid while the classifier runs: afterwards it reports false.
func (a *Attempt) Header(name string) (string, bool) {
	if a.native == nil {
		return "", false
	}
	v := C.humus_attempt_header(a.native, cstr(name))
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// RetryDecision is a classification's verdict for retrying. A plain value.
type RetryDecision int32

// Retry decisions.
const (
	RetryDone  RetryDecision = C.HUMUS_RETRY_DONE  // this result is the call's (no further attempt)
	RetryAgain RetryDecision = C.HUMUS_RETRY_AGAIN // worth another attempt, if the rules allow one
)

// BreakerOutcome is how the circuit breaker counts a result. A plain value.
type BreakerOutcome int32

// Breaker outcomes.
const (
	BreakerSuccess BreakerOutcome = C.HUMUS_BREAKER_SUCCESS
	BreakerFailure BreakerOutcome = C.HUMUS_BREAKER_FAILURE
	BreakerIgnored BreakerOutcome = C.HUMUS_BREAKER_IGNORED
)

// Classification is what a Classifier returns. Both Retry and Breaker must be set; RetryAfter is the
// dependency's Retry-After (0: none; a negative value is a program error). A plain value.
type Classification struct {
	Retry      RetryDecision
	Breaker    BreakerOutcome
	RetryAfter time.Duration
}

// ClassifyDefault is the library's default classifier (docs/retries.md §5.3), for a custom one to delegate to. Only
// valid while a classifier runs, with the Attempt it was given; safe in classifiers running concurrently.
func ClassifyDefault(a *Attempt) (Classification, error) {
	if a.native == nil {
		return Classification{}, attemptGone()
	}
	var out C.humus_classification
	if st := C.humus_classify_default(a.native, &out); st != C.HUMUS_OK {
		return Classification{}, &Error{Status: Status(st), Message: "humus_classify_default failed"}
	}
	return classificationFrom(out), nil
}

// ClassifyPreset classifies with a named preset: "humus" (the default), "jfast", "strict" (docs/retries.md §5.5). An
// unknown name is an *Error with ErrInvalidArgument. Only valid while a classifier runs; safe in
// classifiers running concurrently.
func ClassifyPreset(preset string, a *Attempt) (Classification, error) {
	if a.native == nil {
		return Classification{}, attemptGone()
	}
	var out C.humus_classification
	if st := C.humus_classify_preset(cstr(preset), a.native, &out); st != C.HUMUS_OK {
		return Classification{}, &Error{Status: Status(st), Message: fmt.Sprintf("classify preset %q: unknown (humus, jfast, strict)", preset),
			Fields: []string{"classify"}}
	}
	return classificationFrom(out), nil
}

func attemptGone() error {
	return &Error{Status: StatusMisuse, Message: "an Attempt was used after its classifier returned"}
}

func classificationFrom(c C.humus_classification) Classification {
	return Classification{
		Retry:      RetryDecision(c.retry),
		Breaker:    BreakerOutcome(c.breaker),
		RetryAfter: msToDuration(int64(c.retry_after_ms)),
	}
}

func (c Classification) toC() C.humus_classification {
	return C.humus_classification{
		retry:          C.int32_t(c.Retry),
		breaker:        C.int32_t(c.Breaker),
		retry_after_ms: C.int64_t(retryAfterMs(c.RetryAfter)),
	}
}

// retryAfterMs rounds a positive Retry-After up to whole milliseconds and keeps a negative one negative, so
// the library refuses it as the program error it is.
func retryAfterMs(d time.Duration) int64 {
	if d < 0 && d > -time.Millisecond {
		return -1
	}
	return durationToMs(d)
}

func attemptFrom(a *C.humus_attempt) *Attempt {
	var info C.humusgo_attempt_info
	C.humusgo_attempt_read(a, &info)
	return &Attempt{
		Method:     C.GoString(info.method),
		Status:     int(info.status),
		Err:        Status(info.error),
		ErrMessage: C.GoString(info.error_message),
		Number:     int(info.number),
		native:     a,
	}
}
