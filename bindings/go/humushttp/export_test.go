//go:build cgo

package humushttp

// Counts of the native objects and handles the package holds, for the tests' leak checks.
type LiveCounts struct{ Runtimes, Clients, Responses, Handles, Upstreams int64 }

func Live() LiveCounts {
	return LiveCounts{live.runtimes.Load(), live.clients.Load(), live.responses.Load(), live.handles.Load(), live.upstreams.Load()}
}

// LoopAlways sends c's Do calls to the event loop whenever they can run there (loop_body.go), whatever
// the protocol and the calls in flight. Set it before c's first call.
func LoopAlways(c *Client) { c.core.loopAlways = true }

// LoopCalls is how many Do calls ran on the event loop so far, in the whole process.
func LoopCalls() int64 { return live.loopCalls.Load() }

// StepAlways steps c's Do calls on their goroutines whenever they can be (step.go), whatever the protocol
// and the calls in flight. Set it before c's first call.
func StepAlways(c *Client) { c.core.stepAlways = true }

// StepCalls is how many Do calls were stepped so far, in the whole process.
func StepCalls() int64 { return live.stepCalls.Load() }
