//go:build cgo

package humushttp

import (
	"encoding/json"
	"time"
)

// Settings are one dependency's settings (docs/settings.md §3), in the JSON form every binding shares: the JSON tags are
// the §3 names, durations travel as strings such as "250ms". A zero field is left out, so the library's
// default applies (timeout 10s, attempt_timeout 5s, max_attempts 3, ...); the fields whose zero is a valid
// value of its own (bulkhead.wait, max_retry_after, max_idle_connections, retry_budget.min_per_second,
// decompress) are pointers for that reason. Only what is set reaches the library, which alone holds the
// defaults (SettingsSchemaJSON lists them) and checks the values set against each other.
// The library checks every value when a client is built and reports every bad one at once (ErrConfig,
// Error.Fields naming the keys).
//
// Settings are plain values: build them on one goroutine, then share them read-only.
type Settings struct {
	BaseURL               string            `json:"base_url"`                // required: scheme://host[:port] of the dependency
	Timeout               time.Duration     `json:"timeout"`                 // the whole call (default 10s; > 0, <= 1h)
	AttemptTimeout        time.Duration     `json:"attempt_timeout"`         // dial to response headers (default 5s)
	ConnectTimeout        time.Duration     `json:"connect_timeout"`         // default 2s
	MaxAttempts           int               `json:"max_attempts"`            // 1..10 (default 3; 1 turns retries off)
	BackoffBase           time.Duration     `json:"backoff_base"`            // default 100ms
	BackoffMax            time.Duration     `json:"backoff_max"`             // default 2s
	RetryBudget           *RetryBudget      `json:"retry_budget"`            // default a token bucket of 10
	Breaker               *BreakerSettings  `json:"breaker"`                 // window, open_for, probes, probe_timeout
	Trip                  *TripSettings     `json:"trip"`                    // the built-in trip policy's parameters
	Probe                 *ProbeSettings    `json:"probe"`                   // the built-in probe policy's parameters
	Bulkhead              *BulkheadSettings `json:"bulkhead"`                // max_concurrent, wait
	MaxRetryAfter         *time.Duration    `json:"max_retry_after"`         // nil: follows backoff_max
	MaxIdleConnections    *int              `json:"max_idle_connections"`    // nil: 100
	IdleTimeout           time.Duration     `json:"idle_timeout"`            // default 90s
	MaxConnectionLifetime time.Duration     `json:"max_connection_lifetime"` // older connections take no new request (default 10m; 1s..24h)
	MaxResponseHeaders    int               `json:"max_response_headers"`    // bytes (default 64 KiB; 4 KiB..1 MiB)
	MaxResponseBody       int64             `json:"max_response_body"`       // a buffered body's bytes (default 64 MiB; 1 KiB..1 TiB)
	Decompress            *bool             `json:"decompress"`              // nil: true (ask for compressed bodies, decode them)
	TLS                   *TLSSettings      `json:"tls"`                     // nil: plain text (an http base_url)
	HTTPVersion           string            `json:"http_version"`            // "auto" (default), "1.1", "2"
	Headers               map[string]string `json:"headers"`                 // sent with every request
	ForwardAuthorization  bool              `json:"forward_authorization"`   // pass on the call context's bearer token
	ForwardScenario       bool              `json:"forward_scenario"`        // keep the fault scenario in baggage
	Classify              string            `json:"classify"`                // a preset: "humus" (default), "jfast", "strict"
	ClassifyPlugin        *Plugin           `json:"-" humus:"classify"`      // or a plugin's classifier (not with Classify)
	BreakerPolicy         *Plugin           `json:"breaker_policy"`          // a plugin's trip/probe policy; nil: the built-in one
}

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

// RetryBudget bounds retries across the calls of a client (docs/retries.md §6.4): policy "token_bucket" (Tokens,
// default 10, and Ratio, default 0.1: tokens earned per success) or "ratio" (Ratio of the requests of the last
// Window, default 0.2 of 10s, plus MinPerSecond retries, default 1).
// A plain value, as Settings are.
type RetryBudget struct {
	Policy       string        `json:"policy"`
	Tokens       float64       `json:"tokens"`
	Ratio        float64       `json:"ratio"`
	MinPerSecond *int          `json:"min_per_second"` // nil: 1
	Window       time.Duration `json:"window"`
}

// BreakerSettings are the circuit breaker's (docs/breaker.md §9).
// A plain value, as Settings are.
type BreakerSettings struct {
	Window       int           `json:"window"`        // results remembered (default 20)
	OpenFor      time.Duration `json:"open_for"`      // default 10s
	Probes       int           `json:"probes"`        // probes in flight at once in half-open (default 1)
	ProbeTimeout time.Duration `json:"probe_timeout"` // default 10s
}

// TripSettings parameterise the built-in trip policy: open after ConsecutiveFailures in a row, or when at
// least FailureRate of the last MinResults (or more) results failed.
// A plain value, as Settings are.
type TripSettings struct {
	ConsecutiveFailures int     `json:"consecutive_failures"`
	FailureRate         float64 `json:"failure_rate"`
	MinResults          int     `json:"min_results"`
}

// ProbeSettings parameterise the built-in probe policy: SuccessesToClose successful probes close.
// A plain value, as Settings are.
type ProbeSettings struct {
	SuccessesToClose int `json:"successes_to_close"`
}

// BulkheadSettings bound the calls in flight (docs/bulkhead.md §11).
// A plain value, as Settings are.
type BulkheadSettings struct {
	MaxConcurrent int            `json:"max_concurrent"` // default 50
	Wait          *time.Duration `json:"wait"`           // nil: 500ms; 0: never wait
}

// TLSSettings: the trust roots (a CA file or PEM; none: the system's), a client certificate and key for
// mTLS, and the minimum version ("1.2", "1.3"). Verification cannot be turned off.
// A plain value, as Settings are.
type TLSSettings struct {
	CAFile     string `json:"ca_file"`
	CAPEM      string `json:"ca_pem"`
	CertFile   string `json:"cert_file"`
	CertPEM    string `json:"cert_pem"`
	KeyFile    string `json:"key_file"`
	KeyPEM     string `json:"key_pem"`
	MinVersion string `json:"min_version"`
}
