package humushttp_test

// Native Go fuzz targets (go test -fuzz) for what the binding converts itself: the settings' JSON codec and
// the headers of a request and of a response. Their seeds run as ordinary tests with every `go test`.
//
//	go test -run '^$' -fuzz '^FuzzSettingsJSON$' -fuzztime 1m
//	go test -run '^$' -fuzz '^FuzzHeaders$' -fuzztime 1m

import (
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// What the library reads, SettingsFromJSON reads too, and the settings survive their own JSON form and the
// library's defaults: Marshal then read again gives the same settings, WithDefaults is stable.
func FuzzSettingsJSON(f *testing.F) {
	for _, seed := range []string{
		`{"base_url": "https://payments"}`,
		`{"base_url": "https://payments:8443/api", "timeout": "30s", "attempt_timeout": "1.5s",
		  "connect_timeout": "250ms", "max_attempts": 5, "backoff_base": "50ms", "backoff_max": "1m",
		  "retry_budget": {"policy": "ratio", "ratio": 0.3, "min_per_second": 4, "window": "30s"},
		  "breaker": {"window": 100, "open_for": "20s", "probes": 2, "probe_timeout": "3s"},
		  "trip": {"consecutive_failures": 7, "failure_rate": 0.25, "min_results": 40},
		  "probe": {"successes_to_close": 2}, "bulkhead": {"max_concurrent": 8, "wait": "0s"},
		  "max_retry_after": "10s", "max_idle_connections": 0, "idle_timeout": "5m",
		  "tls": {"ca_file": "/etc/ca.pem", "min_version": "1.3"}, "http_version": "1.1",
		  "headers": {"X-Api-Version": "2"}, "forward_authorization": true, "classify": "jfast"}`,
		`{"base_url": "https://payments", "timout": "5s"}`,
		`{"base_url": "http://p", "max_retry_after": null, "tls": null, "retry_budget": {"policy": "token_bucket"}}`,
		`{"base_url": "http://p", "headers": {"X-A": "a\r\nB: c"}}`,
		`{"base_url": "http://p", "timeout": "1.000000001s", "bulkhead": {"wait": "0s"}}`,
		`{"base_url": "http://p", "max_attempts": 1e308}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := humushttp.SettingsFromJSON(data)
		if err != nil {
			var e *humushttp.Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Fatalf("SettingsFromJSON(%q): %v is not an *Error with a message", data, err)
			}
			return
		}
		text, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of %+v read from %q: %v", s, data, err)
		}
		again, err := humushttp.SettingsFromJSON(text)
		if err != nil {
			t.Fatalf("%q read from %q does not read back: %v", text, data, err)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("%q read from %q reads back as %+v, want %+v", text, data, again, s)
		}
		full, err := s.WithDefaults()
		if err != nil {
			t.Fatalf("WithDefaults of %q: %v", data, err)
		}
		fuller, err := full.WithDefaults()
		if err != nil || !reflect.DeepEqual(fuller, full) {
			t.Fatalf("WithDefaults is not stable for %q: %+v then %+v (%v)", data, full, fuller, err)
		}
	})
}

func tokenChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// clientOwned are the headers that frame the message or name the origin, which a caller may not set
// (docs/transport.md §10.5).
var clientOwned = []string{"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
	"te", "trailer", "proxy-connection"}

// validHeader is RFC 9110's rule as docs/transport.md §10.5 applies it: a token as name that is not one of the
// client's own, and no control character in the value but horizontal tab (CR, LF, NUL, DEL and the rest).
func validHeader(name, value string) bool {
	if name == "" || slices.Contains(clientOwned, strings.ToLower(name)) {
		return false
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return false
		}
	}
	return true
}

// A request header is refused (ErrInvalidArgument) exactly when it is invalid; a valid one reaches the
// dependency byte for byte, and comes back in the response under its canonical name.
func FuzzHeaders(f *testing.F) {
	var mu sync.Mutex
	current := "" // the header name under test, which the mock echoes back
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{MockTransport: func(r *humushttp.MockRequest) (humushttp.MockReply, error) {
		mu.Lock()
		name := current
		mu.Unlock()
		value, ok := r.Header(name)
		if !ok {
			return humushttp.MockReply{Status: 404}, nil
		}
		return humushttp.MockReply{Header: http.Header{name: {value}}}, nil
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { rt.Close() })
	c, err := humushttp.Open(humushttp.Settings{BaseURL: "http://payments:8080", MaxAttempts: 1}, humushttp.WithRuntime(rt))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })

	for _, seed := range [][2]string{
		{"X-Api-Key", "secret"}, {"x-lower", "v"}, {"Accept", ""}, {"X-Spaces", "  a  b  "},
		{"X-Injection", "a\r\nEvil: 1"}, {"X-Nul", "a\x00b"}, {"Bad Name", "v"}, {"", "v"}, {"X-Nul\x00", "v"},
		{"X-Utf8", "caf\xc3\xa9"}, {"X-Obs", "\x80\xff"}, {"!#$%&'*+-.^_`|~", "tokens"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		lower := strings.ToLower(name)
		if lower == "host" || lower == "traceparent" || lower == "tracestate" || lower == "baggage" {
			return // taken from the request by other rules (the URL, the call context)
		}
		mu.Lock()
		current = name
		mu.Unlock()
		req, _ := http.NewRequest("GET", "http://payments:8080/echo", nil)
		req.Header[name] = []string{value} // as given, not canonicalised: the binding must cope with any key
		resp, err := c.Do(req)
		valid := validHeader(name, value)
		if err != nil {
			if valid {
				t.Fatalf("header %q: %q refused: %v", name, value, err)
			}
			if !errors.Is(err, humushttp.ErrInvalidArgument) {
				t.Fatalf("header %q: %q refused with %v, want ErrInvalidArgument", name, value, err)
			}
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if !valid {
			t.Fatalf("invalid header %q: %q was sent (status %d, the dependency saw %q)", name, value,
				resp.StatusCode, resp.Header.Get(name))
		}
		if resp.StatusCode != 200 {
			t.Fatalf("header %q: the dependency did not see it (status %d)", name, resp.StatusCode)
		}
		got := resp.Header[textproto.CanonicalMIMEHeaderKey(name)]
		if len(got) != 1 || got[0] != value {
			t.Fatalf("header %q: %q came back as %q", name, value, got)
		}
	})
}
