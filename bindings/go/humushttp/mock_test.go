package humushttp_test

// The testing kit offered to Go users (docs/testing-kit.md §16): the mock transport as a Go func and the virtual clock.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// mockRuntime is a virtual-clock runtime answering with mock, closed when the test ends.
func mockRuntime(t *testing.T, mock humushttp.MockTransport) *humushttp.Runtime {
	t.Helper()
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{VirtualClock: true, Seed: 7, MockTransport: mock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func openOn(t *testing.T, rt *humushttp.Runtime, settings humushttp.Settings, opts ...humushttp.Option) *humushttp.Client {
	t.Helper()
	c, err := humushttp.Open(settings, append(opts, humushttp.WithRuntime(rt))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func get(t *testing.T, c *humushttp.Client, url string, opts ...humushttp.CallOption) (*humushttp.Response, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	return c.Do(req, opts...)
}

func TestMockTransportOnVirtualClock(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	rt := mockRuntime(t, func(r *humushttp.MockRequest) (humushttp.MockReply, error) {
		mu.Lock()
		defer mu.Unlock()
		tag, _ := r.Header("x-tag")
		seen = append(seen, r.Method+" "+r.URL+" "+string(r.Body)+" "+tag)
		if len(seen) == 1 {
			return humushttp.MockReply{Status: 429, Header: http.Header{"Retry-After": {"120"}}}, nil
		}
		return humushttp.MockReply{Status: 200, Body: []byte("paid"), Header: http.Header{"X-Ledger": {"7"}}}, nil
	})
	// A two-minute Retry-After: waited exactly on the virtual clock, in less than half of it in real time,
	// which says none was really waited, and which no loaded machine takes for a mock call.
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080", Timeout: 4 * time.Minute,
		MaxRetryAfter: ptr(2 * time.Minute)})
	req, _ := http.NewRequest("PUT", "http://payments:8080/pay?id=1", strings.NewReader("10 EUR"))
	req.Header.Set("X-Tag", "t1")
	start, real := rt.ElapsedMs(), time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "paid" || resp.Attempts != 2 || resp.Header.Get("X-Ledger") != "7" {
		t.Fatalf("got %d %q after %d attempts", resp.StatusCode, body, resp.Attempts)
	}
	if waited := rt.ElapsedMs() - start; waited != 120_000 {
		t.Errorf("virtual time waited %d ms, want exactly Retry-After's 120000", waited)
	}
	if time.Since(real) > time.Minute {
		t.Errorf("a 2 min Retry-After took %v of real time", time.Since(real))
	}
	want := "PUT http://payments:8080/pay?id=1 10 EUR t1"
	if len(seen) != 2 || seen[0] != want || seen[1] != want {
		t.Errorf("the mock saw %q", seen)
	}
}

func TestRuntimeClock(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) { return humushttp.MockReply{}, nil })
	if err := rt.AdvanceMs(500); err != nil {
		t.Fatal(err)
	}
	if rt.ElapsedMs() != 500 || rt.Elapsed() != 500*time.Millisecond {
		t.Fatalf("elapsed %d ms", rt.ElapsedMs())
	}
	if err := rt.AdvanceMs(-1); !errors.Is(err, humushttp.ErrInvalidArgument) {
		t.Errorf("AdvanceMs(-1): %v", err)
	}

	real, err := humushttp.NewRuntime(humushttp.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := real.AdvanceMs(10); !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("AdvanceMs on a real clock: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if real.ElapsedMs() < 20 {
		t.Errorf("a real clock's elapsed: %d ms", real.ElapsedMs())
	}
	real.Close()
	real.Close() // idempotent
	if err := real.AdvanceMs(10); !errors.Is(err, humushttp.ErrClosed) || !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("AdvanceMs after Close: %v", err)
	}
	if real.ElapsedMs() != 0 {
		t.Errorf("ElapsedMs after Close: %d", real.ElapsedMs())
	}
	if _, err := humushttp.Open(humushttp.Settings{BaseURL: "http://p:1"}, humushttp.WithRuntime(real)); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("Open on a closed runtime: %v", err)
	}
}

var errMockDown = errors.New("the mock is down")

func TestMockTransportFailures(t *testing.T) {
	var mu sync.Mutex
	mode := "connect"
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		mu.Lock()
		defer mu.Unlock()
		switch mode {
		case "connect":
			return humushttp.MockReply{Error: humushttp.StatusConnect, ErrorMessage: "refused by the test"}, nil
		case "error":
			return humushttp.MockReply{}, errMockDown
		}
		panic("the mock panics")
	})
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	_, err := get(t, c, "http://payments:8080/")
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrConnect) || !errors.As(err, &he) || he.Attempts != 3 ||
		!strings.Contains(he.Message, "refused by the test") {
		t.Fatalf("a scripted connect error: %v", err)
	}
	for _, m := range []string{"error", "panic"} {
		mu.Lock()
		mode = m
		mu.Unlock()
		_, err := get(t, c, "http://payments:8080/")
		var ce *humushttp.CallbackError
		if !errors.Is(err, humushttp.ErrCallback) || !errors.As(err, &ce) || ce.Callback != "mock transport" {
			t.Fatalf("a mock that fails (%s): %v", m, err)
		}
		if m == "error" && !errors.Is(err, errMockDown) {
			t.Errorf("the mock's own error is not the cause: %v", err)
		}
	}
}

func TestMockTransportReplacedAndRemoved(t *testing.T) {
	answer := func(status int) humushttp.MockTransport {
		return func(*humushttp.MockRequest) (humushttp.MockReply, error) {
			return humushttp.MockReply{Status: status}, nil
		}
	}
	rt := mockRuntime(t, answer(201))
	first := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	if err := rt.SetMockTransport(answer(202)); err != nil {
		t.Fatal(err)
	}
	second := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	for c, want := range map[*humushttp.Client]int{first: 201, second: 202} {
		resp, err := get(t, c, "http://payments:8080/")
		if err != nil || resp.StatusCode != want {
			t.Fatalf("got %v %v, want %d", resp, err, want)
		}
		resp.Body.Close()
	}
	if err := rt.SetMockTransport(nil); err != nil {
		t.Fatal(err)
	}
	// A virtual clock needs a mock transport: real sockets do not run on virtual time.
	if _, err := humushttp.Open(humushttp.Settings{BaseURL: "http://payments:8080"}, humushttp.WithRuntime(rt)); !errors.Is(err, humushttp.ErrMisuse) {
		t.Fatalf("a virtual clock without a mock: %v", err)
	}
}

func TestBorrowedCallbackArgumentsExpire(t *testing.T) {
	var keptRequest *humushttp.MockRequest
	var keptAttempt *humushttp.Attempt
	rt := mockRuntime(t, func(r *humushttp.MockRequest) (humushttp.MockReply, error) {
		keptRequest = r
		return humushttp.MockReply{Header: http.Header{"X-A": {"1"}}}, nil
	})
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"},
		humushttp.WithClassifier(func(a *humushttp.Attempt) (humushttp.Classification, error) {
			if v, ok := a.Header("X-A"); !ok || v != "1" {
				t.Errorf("inside the classifier: Header = %q, %v", v, ok)
			}
			keptAttempt = a
			return humushttp.ClassifyDefault(a)
		}))
	req, _ := http.NewRequest("GET", "http://payments:8080/", nil)
	req.Header.Set("X-Q", "q")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := keptRequest.Header("X-Q"); ok {
		t.Error("MockRequest.Header answered after the mock returned")
	}
	if _, ok := keptAttempt.Header("X-A"); ok {
		t.Error("Attempt.Header answered after the classifier returned")
	}
	if _, err := humushttp.ClassifyDefault(keptAttempt); !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("ClassifyDefault after the classifier returned: %v", err)
	}
	if _, err := humushttp.ClassifyPreset("strict", keptAttempt); !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("ClassifyPreset after the classifier returned: %v", err)
	}
}

func TestClassifyPresets(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		return humushttp.MockReply{Status: 500}, nil
	})
	var got = map[string]humushttp.Classification{}
	var presetErr error
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080", MaxAttempts: 1},
		humushttp.WithClassifier(func(a *humushttp.Attempt) (humushttp.Classification, error) {
			for _, name := range []string{"humus", "jfast", "strict"} {
				got[name], _ = humushttp.ClassifyPreset(name, a)
			}
			_, presetErr = humushttp.ClassifyPreset("lenient", a)
			return humushttp.ClassifyDefault(a)
		}))
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// docs/retries.md §5.3/§5.5: a 500 is done and a failure, except for jfast, where it is a success.
	if got["humus"].Breaker != humushttp.BreakerFailure || got["jfast"].Breaker != humushttp.BreakerSuccess ||
		got["strict"].Breaker != humushttp.BreakerFailure || got["humus"].Retry != humushttp.RetryDone {
		t.Errorf("classifications %+v", got)
	}
	if !errors.Is(presetErr, humushttp.ErrInvalidArgument) {
		t.Errorf("an unknown preset: %v", presetErr)
	}
}

func TestGoBreakerPolicyOnVirtualClock(t *testing.T) {
	var mu sync.Mutex
	status := 500
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		mu.Lock()
		defer mu.Unlock()
		return humushttp.MockReply{Status: status}, nil
	})
	var trips, probes int
	policy := humushttp.BreakerPolicy{
		Trip: func(c humushttp.BreakerCounts) (bool, error) { trips++; return c.Failures >= 1, nil },
		Probe: func(c humushttp.BreakerCounts) (humushttp.ProbeDecision, error) {
			probes++
			if c.Successes >= 1 {
				return humushttp.ProbeClose, nil
			}
			return humushttp.ProbeReopen, nil
		},
	}
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080", MaxAttempts: 1,
		Breaker: &humushttp.BreakerSettings{OpenFor: time.Second}}, humushttp.WithBreakerPolicy(policy))
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("first call: %v %v", resp, err)
	}
	resp.Body.Close()
	_, err = get(t, c, "http://payments:8080/")
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrRejected) || !errors.As(err, &he) || he.RetryAfter != time.Second {
		t.Fatalf("second call: %v", err)
	}
	if err := rt.AdvanceMs(1000); err != nil {
		t.Fatal(err)
	}
	if state, _ := c.BreakerState(); state != humushttp.CircuitHalfOpen {
		t.Fatalf("after open_for: %v", state)
	}
	mu.Lock()
	status = 200
	mu.Unlock()
	resp, err = get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if state, _ := c.BreakerState(); state != humushttp.CircuitClosed || trips != 1 || probes != 1 {
		t.Fatalf("after a good probe: %v (trip asked %d times, probe %d)", state, trips, probes)
	}
}

func TestTimeoutOptionOnVirtualClock(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) { return humushttp.MockReply{Hang: true}, nil })
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	start := rt.ElapsedMs()
	_, err := get(t, c, "http://payments:8080/", humushttp.Timeout(300*time.Millisecond))
	if !errors.Is(err, humushttp.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout (the option, not a context)", err)
	}
	if waited := rt.ElapsedMs() - start; waited != 300 {
		t.Errorf("waited %d virtual ms, want 300", waited)
	}
	if _, err := get(t, c, "http://payments:8080/", humushttp.Timeout(0)); !errors.Is(err, humushttp.ErrInvalidArgument) {
		t.Errorf("Timeout(0): %v, want ErrInvalidArgument (deadlines cannot be turned off)", err)
	}
	if _, err := get(t, c, "http://payments:8080/", humushttp.IdempotencyKey("")); !errors.Is(err, humushttp.ErrInvalidArgument) {
		t.Errorf("an empty idempotency key: %v", err)
	}
}

func TestMetricsAndReadiness(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) {
		return humushttp.MockReply{Status: 204}, nil
	})
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	text, err := rt.MetricsPrometheus()
	if err != nil || !strings.Contains(text, `humus_circuit_calls_total{`) || !strings.Contains(text, `server_address="payments"`) {
		t.Errorf("Prometheus text: %v\n%s", err, text)
	}
	var metrics struct {
		Metrics []struct{ Name string } `json:"metrics"`
	}
	data, err := rt.MetricsJSON()
	if err != nil || json.Unmarshal(data, &metrics) != nil || len(metrics.Metrics) == 0 {
		t.Errorf("metrics JSON: %v %s", err, data)
	}
	var ready struct {
		Status  string `json:"status"`
		Clients []struct {
			Origin string `json:"origin"`
			State  string `json:"state"`
		} `json:"clients"`
	}
	data, err = rt.ReadinessJSON()
	if err != nil || json.Unmarshal(data, &ready) != nil || ready.Status != "ok" || len(ready.Clients) != 1 ||
		ready.Clients[0].Origin != "http://payments:8080" || ready.Clients[0].State != "closed" {
		t.Errorf("readiness: %v %s", err, data)
	}
}

func TestAsynchronousCallbackFailure(t *testing.T) {
	rt := mockRuntime(t, func(*humushttp.MockRequest) (humushttp.MockReply, error) { return humushttp.MockReply{}, nil })
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"},
		humushttp.WithClassifier(func(*humushttp.Attempt) (humushttp.Classification, error) { panic("async boom") }))
	req, _ := http.NewRequest("GET", "http://payments:8080/", nil)
	call, err := c.Start(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = call.Wait()
	var ce *humushttp.CallbackError
	if !errors.Is(err, humushttp.ErrCallback) || errors.As(err, &ce) {
		t.Fatalf("err = %v: want ErrCallback, without a cause (an asynchronous call cannot carry it)", err)
	}
	if counts, _ := c.BreakerCounts(); counts.Failures != 1 {
		t.Errorf("breaker counts %+v", counts)
	}
}
