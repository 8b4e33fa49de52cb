//go:build cgo

package humushttp

// Counts of the native objects and handles the package holds, for the tests' leak checks.
type LiveCounts struct{ Runtimes, Clients, Responses, Handles, Upstreams int64 }

func Live() LiveCounts {
	return LiveCounts{live.runtimes.Load(), live.clients.Load(), live.responses.Load(), live.handles.Load(), live.upstreams.Load()}
}
