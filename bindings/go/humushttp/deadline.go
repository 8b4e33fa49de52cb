//go:build cgo

package humushttp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Deadline propagation (docs/timeouts.md §8.4): the calling service's client sends each attempt's time left in a
// header (the settings' deadline_header); the called service reads it back into the context of the calls it
// makes in turn, so a chain of services shares one budget.

// ContextFromRequest returns the context for the calls r's handler makes: r.Context() carrying r's call context
// (CallContextFromRequest) and, when header holds a deadline, that deadline counted from now; calls made with it
// (Client.Do, or *http.Client through the Transport) get at most what is left. A header absent or malformed (it
// comes from the network) adds no deadline. Call cancel once the handler is done, as with context.WithDeadline.
// It only reads r: safe for concurrent use.
func ContextFromRequest(r *http.Request, header string) (context.Context, context.CancelFunc) {
	ctx := WithCallContext(r.Context(), CallContextFromRequest(r))
	if left, ok := ParseDeadline(r.Header.Get(header)); ok {
		return context.WithDeadline(ctx, time.Now().Add(left))
	}
	return context.WithCancel(ctx)
}

// grpcUnits are the units of gRPC's grpc-timeout header.
var grpcUnits = map[byte]time.Duration{
	'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond,
}

// ParseDeadline reads a deadline header's value: whole milliseconds ("1500", the settings' "ms" format) or
// gRPC's grpc-timeout form, at most 8 digits and a unit H, M, S, m, u or n ("1500m", "2S"). false for anything
// else.
func ParseDeadline(value string) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	unit, digits := time.Millisecond, value
	if last := value[len(value)-1]; last < '0' || last > '9' {
		u, ok := grpcUnits[last]
		if !ok {
			return 0, false
		}
		unit, digits = u, value[:len(value)-1]
	}
	if len(digits) == 0 || len(digits) > 8 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(n) * unit, true
}
