package humushttp_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func ptr[T any](v T) *T { return &v }

func TestSettingsMarshalJSON(t *testing.T) {
	s := humushttp.Settings{
		BaseURL:        "https://payments:8443",
		Timeout:        2 * time.Second,
		AttemptTimeout: 750 * time.Millisecond,
		BackoffBase:    1500 * time.Microsecond,
		MaxAttempts:    4,
		RetryBudget:    &humushttp.RetryBudget{Policy: "ratio", Ratio: 0.2, MinPerSecond: ptr(0), Window: 10 * time.Second},
		Breaker:        &humushttp.BreakerSettings{Window: 50, OpenFor: time.Minute},
		Bulkhead:       &humushttp.BulkheadSettings{MaxConcurrent: 8, Wait: ptr(time.Duration(0))},
		MaxRetryAfter:  ptr(time.Duration(0)),
		TLS:            &humushttp.TLSSettings{CAFile: "/etc/ca.pem", MinVersion: "1.3"},
		Headers:        map[string]string{"User-Agent": "checkout/1"},
		Classify:       "jfast",
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"base_url":"https://payments:8443","timeout":"2000ms","attempt_timeout":"750ms","max_attempts":4,` +
		`"backoff_base":"1500000ns","retry_budget":{"policy":"ratio","ratio":0.2,"min_per_second":0,"window":"10000ms"},` +
		`"breaker":{"window":50,"open_for":"60000ms"},"bulkhead":{"max_concurrent":8,"wait":"0ms"},` +
		`"max_retry_after":"0ms","tls":{"ca_file":"/etc/ca.pem","min_version":"1.3"},` +
		`"headers":{"User-Agent":"checkout/1"},"classify":"jfast"}`
	if string(data) != want {
		t.Fatalf("got  %s\nwant %s", data, want)
	}
	var back humushttp.Settings
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip: got %+v, want %+v", back, s)
	}
	if data, _ := json.Marshal(humushttp.Settings{}); string(data) != `{}` {
		t.Errorf("zero settings marshal to %s, want {} (every default applies)", data)
	}
}

func TestNestedSettingsMarshalOnTheirOwn(t *testing.T) {
	for _, tc := range []struct {
		value any
		back  any
		want  string
	}{
		{humushttp.BreakerSettings{OpenFor: time.Second, Probes: 2}, &humushttp.BreakerSettings{}, `{"open_for":"1000ms","probes":2}`},
		{humushttp.BulkheadSettings{Wait: ptr(time.Duration(0))}, &humushttp.BulkheadSettings{}, `{"wait":"0ms"}`},
		{humushttp.RetryBudget{Policy: "ratio", Window: 2 * time.Second}, &humushttp.RetryBudget{}, `{"policy":"ratio","window":"2000ms"}`},
	} {
		data, err := json.Marshal(tc.value)
		if err != nil || string(data) != tc.want {
			t.Errorf("%T: %s %v, want %s", tc.value, data, err, tc.want)
			continue
		}
		if err := json.Unmarshal(data, tc.back); err != nil || !reflect.DeepEqual(reflect.ValueOf(tc.back).Elem().Interface(), tc.value) {
			t.Errorf("%T round trip: %+v %v", tc.value, tc.back, err)
		}
	}
	var b humushttp.BreakerSettings
	if err := json.Unmarshal([]byte(`{"open_for": 5}`), &b); !errors.Is(err, humushttp.ErrConfig) {
		t.Errorf("a duration as a number: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"windw": 5}`), &b); !errors.Is(err, humushttp.ErrConfig) || !strings.Contains(err.Error(), "windw") {
		t.Errorf("an unknown key: %v", err)
	}
}

func TestSettingsFromJSON(t *testing.T) {
	s, err := humushttp.SettingsFromJSON([]byte(`{"base_url": "http://payments:8080", "timeout": "1.5s",
		"breaker": {"probes": 2}, "max_idle_connections": 0, "trip": {"failure_rate": 0.25}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseURL != "http://payments:8080" || s.Timeout != 1500*time.Millisecond || s.Breaker.Probes != 2 ||
		s.MaxIdleConnections == nil || *s.MaxIdleConnections != 0 || s.Trip.FailureRate != 0.25 {
		t.Fatalf("got %+v", s)
	}

	// Every bad key at once, each named; a misspelt one with the nearest valid key.
	_, err = humushttp.SettingsFromJSON([]byte(`{"base_url": "ftp://x", "timout": "5s", "max_attempts": 0,
		"breaker": {"window": 0}}`))
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &he) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
	for _, field := range []string{"base_url", "timout", "max_attempts", "breaker.window"} {
		if !contains(he.Fields, field) {
			t.Errorf("fields %v lack %q", he.Fields, field)
		}
	}
	if !strings.Contains(he.Message, `"timeout"`) {
		t.Errorf("message %q does not suggest timeout", he.Message)
	}
	if _, err := humushttp.SettingsFromJSON([]byte(`[1]`)); !errors.Is(err, humushttp.ErrConfig) {
		t.Errorf("a JSON array: err = %v", err)
	}
}

func TestSettingsWithDefaults(t *testing.T) {
	full, err := humushttp.Settings{BaseURL: "http://payments:8080", Timeout: 3 * time.Second}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if full.Timeout != 3*time.Second || full.AttemptTimeout != 3*time.Second || full.MaxAttempts != 3 ||
		full.BackoffBase != 100*time.Millisecond || full.Breaker == nil || full.Breaker.Window != 20 ||
		full.Bulkhead == nil || full.Bulkhead.MaxConcurrent != 50 || full.HTTPVersion != "auto" {
		t.Fatalf("got %+v", full)
	}
	if _, err := (humushttp.Settings{BaseURL: "http://payments:8080", MaxAttempts: 11}).WithDefaults(); !errors.Is(err, humushttp.ErrConfig) {
		t.Errorf("max_attempts 11: err = %v", err)
	}
}

func TestCheckSetting(t *testing.T) {
	if err := humushttp.CheckSetting("breaker.window", "20"); err != nil {
		t.Errorf("a valid value: %v", err)
	}
	err := humushttp.CheckSetting("timeout", `"0s"`)
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &he) || !contains(he.Fields, "timeout") {
		t.Errorf("timeout 0s: err = %v", err)
	}
	if err := humushttp.CheckSetting("max_atempts", "3"); !errors.Is(err, humushttp.ErrConfig) ||
		!strings.Contains(err.Error(), "max_attempts") {
		t.Errorf("a misspelt key: err = %v", err)
	}
}

func TestOpenRefusesBadSettings(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) { return humushttp.MockReply{}, nil })
	cases := []struct {
		name     string
		settings humushttp.Settings
		opts     []humushttp.Option
		want     error
		fields   []string
	}{
		{"no base_url", humushttp.Settings{}, nil, humushttp.ErrConfig, []string{"base_url"}},
		{"negative timeout", humushttp.Settings{BaseURL: "http://p:1", Timeout: -time.Second}, nil, humushttp.ErrConfig, []string{"timeout"}},
		// Settings built in Go reach the library as one JSON load: rules across fields are ErrConfig there.
		{"backoff_max below base", humushttp.Settings{BaseURL: "http://p:1", BackoffBase: time.Second, BackoffMax: time.Millisecond},
			nil, humushttp.ErrConfig, []string{"backoff_max", "backoff_base"}},
		{"https without tls", humushttp.Settings{BaseURL: "http://p:1", TLS: &humushttp.TLSSettings{CAPEM: "x"}},
			nil, humushttp.ErrConfig, []string{"tls"}},
		{"nil classifier", humushttp.Settings{BaseURL: "http://p:1"}, []humushttp.Option{humushttp.WithClassifier(nil)},
			humushttp.ErrProgram, []string{"classify"}},
		{"half a policy", humushttp.Settings{BaseURL: "http://p:1"},
			[]humushttp.Option{humushttp.WithBreakerPolicy(humushttp.BreakerPolicy{Trip: func(humushttp.BreakerCounts) (bool, error) { return false, nil }})},
			humushttp.ErrProgram, []string{"breaker_policy.trip", "breaker_policy.probe"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := humushttp.Open(tc.settings, append(tc.opts, humushttp.WithRuntime(rt))...)
			var he *humushttp.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &he) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, f := range tc.fields {
				if !contains(he.Fields, f) {
					t.Errorf("fields %v lack %q (%s)", he.Fields, f, he.Message)
				}
			}
		})
	}
}

func TestRuntimeOptionsRefused(t *testing.T) {
	_, err := humushttp.NewRuntime(humushttp.RuntimeOptions{Resolve: map[string]string{"no-port": "127.0.0.1:1"}})
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &he) || !contains(he.Fields, "resolve.no-port") {
		t.Fatalf("err = %v", err)
	}
}

func TestGivenValuesAreCheckedAgainstEachOther(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) { return humushttp.MockReply{}, nil })
	// attempt_timeout 5s equals the library's default, yet it was set: refused, not silently capped.
	_, err := humushttp.Open(humushttp.Settings{BaseURL: "http://p:1", Timeout: time.Second, AttemptTimeout: 5 * time.Second},
		humushttp.WithRuntime(rt))
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &he) || !contains(he.Fields, "attempt_timeout") ||
		!contains(he.Fields, "timeout") {
		t.Fatalf("err = %v, want ErrConfig naming attempt_timeout and timeout", err)
	}
	c, err := humushttp.Open(humushttp.Settings{BaseURL: "http://p:1", Timeout: time.Second}, humushttp.WithRuntime(rt))
	if err != nil {
		t.Fatalf("timeout alone caps the default attempt_timeout: %v", err)
	}
	c.Close()
}

func TestConnectionAndResponseLimits(t *testing.T) {
	s := humushttp.Settings{BaseURL: "http://p:1", MaxConnectionLifetime: 30 * time.Minute, MaxResponseHeaders: 8192,
		MaxResponseBody: 1 << 30, Decompress: ptr(false)}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"base_url":"http://p:1","max_connection_lifetime":"1800000ms","max_response_headers":8192,` +
		`"max_response_body":1073741824,"decompress":false}`
	if string(data) != want {
		t.Fatalf("got  %s\nwant %s", data, want)
	}
	full, err := s.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if full.MaxConnectionLifetime != 30*time.Minute || full.MaxResponseHeaders != 8192 || full.MaxResponseBody != 1<<30 ||
		full.Decompress == nil || *full.Decompress {
		t.Fatalf("got %+v", full)
	}
	defaults, err := humushttp.Settings{BaseURL: "http://p:1"}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if defaults.MaxConnectionLifetime != 10*time.Minute || defaults.MaxResponseHeaders != 65536 ||
		defaults.MaxResponseBody != 64<<20 || defaults.Decompress == nil || !*defaults.Decompress {
		t.Fatalf("defaults %+v", defaults)
	}
	_, err = humushttp.Settings{BaseURL: "http://p:1", MaxConnectionLifetime: time.Millisecond, MaxResponseHeaders: 10,
		MaxResponseBody: 1<<40 + 1}.WithDefaults()
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &he) ||
		!reflect.DeepEqual(he.Fields, []string{"max_connection_lifetime", "max_response_headers", "max_response_body"}) {
		t.Fatalf("err = %v", err)
	}
}

// Every key of the library's schema is a field of Settings (or of its nested structs) with the same JSON name
// and a Go type of the same kind; and every field is a key of the schema.
func TestSettingsCoverTheLibrarySchema(t *testing.T) {
	text, err := humushttp.SettingsSchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Keys []struct {
			Key  string `json:"key"`
			Kind string `json:"kind"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(text, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Keys) < 40 {
		t.Fatalf("only %d keys in %s", len(schema.Keys), text)
	}
	durationType := reflect.TypeOf(time.Duration(0))
	kindOf := func(t reflect.Type) string {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t == durationType:
			return "duration"
		case t == reflect.TypeOf(humushttp.Plugin{}):
			return "plugin"
		case t.Kind() == reflect.Struct:
			return "object"
		case t.Kind() == reflect.Map:
			return "map"
		case t.Kind() == reflect.Bool:
			return "bool"
		case t.Kind() == reflect.String:
			return "string|enum"
		case t.Kind() == reflect.Float64:
			return "number|share"
		case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
			return "count|bytes"
		}
		return t.String()
	}
	goKeys := map[string]string{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if other := f.Tag.Get("humus"); other != "" { // a second field of one key (settings_json.go)
				name = other
			}
			key := prefix + name
			kind := kindOf(f.Type)
			if other, ok := goKeys[key]; ok { // a preset name or a plugin: two fields of one key
				goKeys[key] = other + "|" + kind
				continue
			}
			goKeys[key] = kind
			if kind == "object" {
				elem := f.Type
				for elem.Kind() == reflect.Pointer {
					elem = elem.Elem()
				}
				walk(elem, key+".")
			}
		}
	}
	walk(reflect.TypeOf(humushttp.Settings{}), "")
	for _, k := range schema.Keys {
		kind, ok := goKeys[k.Key]
		if !ok {
			t.Errorf("schema key %q (%s) has no Settings field", k.Key, k.Kind)
			continue
		}
		if !contains(strings.Split(kind, "|"), k.Kind) {
			t.Errorf("schema key %q is a %s, its Go field a %s", k.Key, k.Kind, kind)
		}
		delete(goKeys, k.Key)
	}
	for key := range goKeys {
		t.Errorf("Settings field %q is no key of the library's schema", key)
	}
}
