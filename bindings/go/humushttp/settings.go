//go:build cgo

package humushttp

import "encoding/json"

// Settings and its groups (RetryBudget, BreakerSettings, ...) are generated from the library's settings schema:
// settings_gen.go (docs/settings.md §3.4).

// Plugin names a classifier or breaker policy compiled as a shared object (docs/retries.md §5.4a): the library
// opens Path (absolute) once per process, calls the entry point Symbol with Config (a JSON object, or nil for
// {}) and uses the callback table it fills, so the rule runs in C with no call into Go per attempt. Loading
// fails, when the settings are used, with ErrConfig naming "classify.plugin" or "classify.symbol" (or
// "breaker_policy.…"). A plugin is code run in this process: name only paths your own configuration names.
// A plain value, as Settings are.
type Plugin struct {
	Path   string          `json:"plugin"`
	Symbol string          `json:"symbol"`
	Config json.RawMessage `json:"config,omitempty"`
}
