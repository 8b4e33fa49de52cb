package humushttp_test

// The real client against the real local test server: TLS with the test CA and a resolve entry, HTTP/2 and
// HTTP/1.1, scripted failures checked by what the server received.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func TestGetOverHTTPS(t *testing.T) {
	s := server(t)
	for _, tc := range []struct{ listener, proto, wire string }{
		{"https", "HTTP/2.0", "2"},
		{"https_h1", "HTTP/1.1", "1.1"},
		{"http", "HTTP/1.1", "1.1"},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			hc, err := humushttp.NewClient(s.settings(tc.listener), humushttp.WithRuntime(s.rt))
			if err != nil {
				t.Fatal(err)
			}
			c, _ := humushttp.ClientOf(hc)
			defer c.Close()
			path := uniquePath()
			resp, err := hc.Get(s.url(tc.listener, path+"?q=1"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var echo struct {
				Method, Path, Query, Protocol string
			}
			if err := json.NewDecoder(resp.Body).Decode(&echo); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || resp.Proto != tc.proto || echo.Protocol != tc.wire || echo.Path != path ||
				echo.Query != "q=1" || echo.Method != "GET" {
				t.Fatalf("got %d %s %+v", resp.StatusCode, resp.Proto, echo)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if resp.ContentLength <= 0 {
				t.Errorf("ContentLength %d", resp.ContentLength)
			}
			if got := s.requests(t, path); len(got) != 1 || got[0].Protocol != tc.wire {
				t.Errorf("server received %+v", got)
			}
		})
	}
}

func TestRetryThroughScripted503(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200, "body": "ok"})
	req, _ := http.NewRequest("GET", s.url("https", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || resp.Attempts != 2 {
		t.Fatalf("got %d %q after %d attempts", resp.StatusCode, body, resp.Attempts)
	}
	if got := s.requests(t, path); len(got) != 2 {
		t.Fatalf("server received %d requests, want 2", len(got))
	}
}

func TestPostNotRetried(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("http")).HTTPClient()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503})
	resp, err := hc.Post(s.url("http", path), "text/plain", strings.NewReader("pay 10"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want the 503 returned as it is", resp.StatusCode)
	}
	got := s.requests(t, path)
	if len(got) != 1 || got[0].Method != "POST" || got[0].BodySize != len("pay 10") {
		t.Fatalf("server received %+v, want one POST with its body", got)
	}
}

func TestIdempotencyKeyMakesPostRetryable(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("http")).HTTPClient()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 201})
	req, _ := http.NewRequest("POST", s.url("http", path), strings.NewReader("pay 10"))
	req = req.WithContext(humushttp.WithCallOptions(req.Context(), humushttp.IdempotencyKey("k-1")))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := s.requests(t, path)
	if resp.StatusCode != 201 || len(got) != 2 {
		t.Fatalf("status %d after %d requests", resp.StatusCode, len(got))
	}
	for _, r := range got {
		if key, _ := r.header("Idempotency-Key"); key != "k-1" || r.BodySize != 6 {
			t.Errorf("request %+v", r)
		}
	}
}

func TestRetryForbidMakesOneAttempt(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("http"))
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503})
	req, _ := http.NewRequest("GET", s.url("http", path), nil)
	resp, err := c.Do(req, humushttp.RetryForbid)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Attempts != 1 || len(s.requests(t, path)) != 1 {
		t.Fatalf("status %d after %d attempts", resp.StatusCode, resp.Attempts)
	}
}

// The hanging calls below may last a minute: only the context's deadline, the http.Client's timeout or the
// cancel can end them. Their 30 s bound tells that from a call left to its own deadline; no loaded machine
// nears it. A lower bound (not before the deadline) stays: load only lengthens it.
func hangingSettings(s *testServer, listener string) humushttp.Settings {
	settings := s.settings(listener)
	settings.Timeout, settings.AttemptTimeout = time.Minute, time.Minute
	return settings
}

func TestContextDeadlineCutsHangingCall(t *testing.T) {
	s := server(t)
	c := s.open(t, hangingSettings(s, "https"))
	path := uniquePath()
	s.script(t, path, map[string]any{"hang": true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("https", path), nil)
	start := time.Now()
	_, err := c.HTTPClient().Do(req)
	elapsed := time.Since(start)
	if !errors.Is(err, humushttp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and context.DeadlineExceeded", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Errorf("err = %#v, want a *url.Error whose Timeout() is true", err)
	}
	if elapsed < 250*time.Millisecond || elapsed > 30*time.Second {
		t.Errorf("the call took %v, want about 300ms", elapsed)
	}
}

func TestHTTPClientTimeoutCutsHangingCall(t *testing.T) {
	s := server(t)
	hc := s.open(t, hangingSettings(s, "http")).HTTPClient()
	hc.Timeout = 300 * time.Millisecond
	path := uniquePath()
	s.script(t, path, map[string]any{"hang": true})
	start := time.Now()
	_, err := hc.Get(s.url("http", path))
	elapsed := time.Since(start)
	// net/http may rewrite an error that ends after its own timer fired; DeadlineExceeded holds either way.
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if elapsed > 30*time.Second {
		t.Errorf("the call took %v, want about 300ms", elapsed)
	}
	t.Logf("errors.Is(err, ErrTimeout) = %v: %v", errors.Is(err, humushttp.ErrTimeout), err)
}

func TestContextCancelCutsHangingCall(t *testing.T) {
	s := server(t)
	c := s.open(t, hangingSettings(s, "https_h1"))
	path := uniquePath()
	s.script(t, path, map[string]any{"hang": true})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("https_h1", path), nil)
	start := time.Now()
	_, err := c.Do(req)
	elapsed := time.Since(start)
	if !errors.Is(err, humushttp.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrCancelled and context.Canceled", err)
	}
	if elapsed < 150*time.Millisecond || elapsed > 30*time.Second {
		t.Errorf("the call took %v, want about 200ms", elapsed)
	}
}

func TestContextDoneBeforeTheCall(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("http"))
	path := uniquePath()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	if _, err := c.Do(req); !errors.Is(err, humushttp.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", s.url("http", path), nil)
	if _, err := c.Do(req); !errors.Is(err, humushttp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if got := s.requests(t, path); len(got) != 0 {
		t.Fatalf("server received %d requests", len(got))
	}
}

func TestTLSFailureUntrusted(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("untrusted")).HTTPClient()
	_, err := hc.Get(s.url("untrusted", uniquePath()))
	if !errors.Is(err, humushttp.ErrTLS) {
		t.Fatalf("err = %v, want ErrTLS", err)
	}
	var he *humushttp.Error
	if !errors.As(err, &he) || he.Attempts != 1 {
		t.Fatalf("err = %#v, want an *Error after 1 attempt (an untrusted certificate is not retried)", err)
	}
}

func TestCNOnlyCertificateRefused(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("cn_only")).HTTPClient()
	if _, err := hc.Get(s.url("cn_only", uniquePath())); !errors.Is(err, humushttp.ErrTLS) {
		t.Fatalf("err = %v, want ErrTLS (a certificate without subjectAltName, docs/libcurl-traps.md §19)", err)
	}
}

func TestMutualTLS(t *testing.T) {
	s := server(t)
	settings := s.settings("mtls")
	settings.TLS.CertFile = s.certs + "/client.pem"
	settings.TLS.KeyFile = s.certs + "/client.key"
	path := uniquePath()
	resp, err := s.open(t, settings).HTTPClient().Get(s.url("mtls", path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := s.requests(t, path); resp.StatusCode != 200 || len(got) != 1 || got[0].ClientCert == nil {
		t.Fatalf("status %d, server received %+v", resp.StatusCode, got)
	}
	_, err = s.open(t, s.settings("mtls")).HTTPClient().Get(s.url("mtls", path))
	if !errors.Is(err, humushttp.ErrTLSClientCert) {
		t.Fatalf("without a client certificate: err = %v, want ErrTLSClientCert", err)
	}
}

func TestConnectFailure(t *testing.T) {
	s := server(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	settings := s.settings("http")
	settings.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	hc := s.open(t, settings).HTTPClient()
	_, err = hc.Get(settings.BaseURL + "/x")
	if !errors.Is(err, humushttp.ErrConnect) {
		t.Fatalf("err = %v, want ErrConnect", err)
	}
	var he *humushttp.Error
	if errors.As(err, &he); he.Attempts != 3 {
		t.Errorf("%d attempts, want 3 (a refused connection is retried)", he.Attempts)
	}
}

func TestBreakerOpensWithoutReachingTheServer(t *testing.T) {
	s := server(t)
	settings := s.settings("http")
	settings.MaxAttempts = 1
	settings.Trip = &humushttp.TripSettings{ConsecutiveFailures: 2}
	hc, err := humushttp.NewClient(settings, humushttp.WithRuntime(s.rt))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := humushttp.ClientOf(hc)
	if !ok {
		t.Fatal("ClientOf: not a humushttp client")
	}
	defer c.Close()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 500})
	for i := 0; i < 2; i++ {
		resp, err := hc.Get(s.url("http", path))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	_, err = hc.Get(s.url("http", path))
	if !errors.Is(err, humushttp.ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	var he *humushttp.Error
	if errors.As(err, &he); he.RetryAfter <= 0 || he.RetryAfter > 10*time.Second || he.Attempts != 0 {
		t.Errorf("RetryAfter %v, Attempts %d", he.RetryAfter, he.Attempts)
	}
	if got := s.requests(t, path); len(got) != 2 {
		t.Errorf("server received %d requests, want 2", len(got))
	}
	state, _ := c.BreakerState()
	counts, _ := c.BreakerCounts()
	if state != humushttp.CircuitOpen || counts.State != humushttp.CircuitOpen {
		t.Errorf("breaker %v, counts %+v", state, counts)
	}
	if _, ok := humushttp.ClientOf(http.DefaultClient); ok {
		t.Error("ClientOf(http.DefaultClient) should be false")
	}
}

func TestGoClassifier(t *testing.T) {
	s := server(t)
	var seen sync.Map
	classify := func(a *humushttp.Attempt) (humushttp.Classification, error) {
		teapot, _ := a.Header("X-Teapot")
		seen.Store(a.Number, fmt.Sprintf("%s %d %s", a.Method, a.Status, teapot))
		if a.Status == 418 {
			return humushttp.Classification{Retry: humushttp.RetryAgain, Breaker: humushttp.BreakerFailure}, nil
		}
		return humushttp.ClassifyPreset("strict", a)
	}
	c := s.open(t, s.settings("https"), humushttp.WithClassifier(classify))
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 418, "headers": [][]string{{"X-Teapot", "short"}}},
		map[string]any{"status": 200})
	req, _ := http.NewRequest("GET", s.url("https", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Attempts != 2 || len(s.requests(t, path)) != 2 {
		t.Fatalf("status %d after %d attempts", resp.StatusCode, resp.Attempts)
	}
	first, _ := seen.Load(1)
	second, _ := seen.Load(2)
	if first != "GET 418 short" || second != "GET 200 " {
		t.Errorf("the classifier saw %q then %q", first, second)
	}
	counts, _ := c.BreakerCounts()
	if counts.Failures != 1 || counts.Successes != 1 {
		t.Errorf("breaker counts %+v", counts)
	}
}

var errClassifierSaysNo = errors.New("the classifier says no")

func TestFailingClassifier(t *testing.T) {
	s := server(t)
	for _, tc := range []struct {
		name     string
		classify humushttp.Classifier
		check    func(*testing.T, *humushttp.CallbackError, error)
	}{
		{"panic", func(*humushttp.Attempt) (humushttp.Classification, error) { panic("boom") },
			func(t *testing.T, ce *humushttp.CallbackError, err error) {
				if ce.Panic != "boom" || len(ce.Stack) == 0 || !strings.Contains(err.Error(), "classifier panicked: boom") {
					t.Errorf("cause %+v, message %q", ce, err)
				}
			}},
		{"error", func(*humushttp.Attempt) (humushttp.Classification, error) {
			return humushttp.Classification{}, errClassifierSaysNo
		}, func(t *testing.T, ce *humushttp.CallbackError, err error) {
			if !errors.Is(err, errClassifierSaysNo) || ce.Panic != nil {
				t.Errorf("cause %+v", ce)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.open(t, s.settings("http"), humushttp.WithClassifier(tc.classify))
			req, _ := http.NewRequest("GET", s.url("http", uniquePath()), nil)
			_, err := c.Do(req)
			if !errors.Is(err, humushttp.ErrCallback) {
				t.Fatalf("err = %v, want ErrCallback", err)
			}
			var ce *humushttp.CallbackError
			if !errors.As(err, &ce) || ce.Callback != "classifier" {
				t.Fatalf("err = %v, want a *CallbackError from the classifier", err)
			}
			tc.check(t, ce, err)
			if counts, _ := c.BreakerCounts(); counts.Failures != 1 {
				t.Errorf("breaker counts %+v, want the failing callback counted as a failure", counts)
			}
		})
	}
}

func TestConcurrentGoroutinesShareOneClient(t *testing.T) {
	s := server(t)
	for _, listener := range []string{"https", "http"} {
		t.Run(listener, func(t *testing.T) {
			hc := s.open(t, s.settings(listener)).HTTPClient()
			path := uniquePath()
			const goroutines, each = 8, 15
			var wg sync.WaitGroup
			var ok atomic.Int64
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						resp, err := hc.Get(s.url(listener, path))
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 200 {
							ok.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if ok.Load() != goroutines*each || len(s.requests(t, path)) != goroutines*each {
				t.Fatalf("%d ok of %d", ok.Load(), goroutines*each)
			}
		})
	}
}

func TestAsynchronousCalls(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200, "body": "late"})
	var calls []*humushttp.Call
	var done atomic.Int64
	for i := 0; i < 10; i++ {
		req, _ := http.NewRequest("GET", s.url("https", path), nil)
		call, err := c.Start(req, func(*humushttp.Response, error) { done.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call)
	}
	for _, call := range calls {
		resp, err := call.Wait()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
	}
	if done.Load() != 10 || len(s.requests(t, path)) != 11 {
		t.Fatalf("%d completions, %d requests", done.Load(), len(s.requests(t, path)))
	}

	// A cancelled context cancels an asynchronous call too.
	hang := uniquePath()
	s.script(t, hang, map[string]any{"hang": true})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("https", hang), nil)
	call, err := c.Start(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	select {
	case <-call.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
	if _, err := call.Wait(); !errors.Is(err, humushttp.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	call.Cancel() // nothing once it has ended
}

// Many goroutines starting calls at once, on HTTP/1.1 and HTTP/2: none waits on a loop asleep with work in
// it. The loop's driver watches the loop's descriptor through the netpoller, edge-triggered; it once lost the
// edge of work that came between its run and its wait, and calls then waited for the next timer: these
// 1,920 calls took 105 s instead of under 1 (and a benchmark's 16 goroutines stalled for good). 15 s is
// twenty times what they need.
func TestManyCallersNeverWaitOnASleepingLoop(t *testing.T) {
	s := server(t)
	budget, cancel := context.WithTimeout(context.Background(), 15*time.Second) // closes for every waiter
	defer cancel()
	for _, listener := range []string{"http", "https"} {
		c := s.open(t, s.settings(listener))
		const goroutines, each = 16, 60
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					req, _ := http.NewRequest("GET", s.url(listener, "/echo"), nil)
					call, err := c.Start(req, nil)
					if err != nil {
						errs <- err
						return
					}
					select {
					case <-call.Done():
					case <-budget.Done():
						errs <- fmt.Errorf("%s: calls still waiting after 15 s: a loop slept with work in it", listener)
						return
					}
					resp, err := call.Wait()
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

func TestHeadersBodyAndCallContext(t *testing.T) {
	s := server(t)
	settings := s.settings("https")
	settings.Headers = map[string]string{"X-Service": "checkout"}
	hc := s.open(t, settings).HTTPClient()
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 202, "body": "accepted",
		"headers": [][]string{{"X-Multi", "a"}, {"X-Multi", "b"}, {"x-lower", "c"}}})
	incoming := httpRequestWith(map[string]string{"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"Baggage": "tenant=7", "X-Request-Id": "req-42"})
	ctx := humushttp.WithCallContext(context.Background(), humushttp.CallContextFromRequest(incoming))
	req, _ := http.NewRequestWithContext(ctx, "PUT", s.url("https", path), strings.NewReader(`{"n":1}`))
	req.Header.Add("X-Tag", "one")
	req.Header.Add("X-Tag", "two")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || resp.Status != "202 Accepted" || string(body) != "accepted" ||
		strings.Join(resp.Header["X-Multi"], ",") != "a,b" || resp.Header.Get("X-Lower") != "c" {
		t.Fatalf("got %s %q %v", resp.Status, body, resp.Header)
	}
	got := s.requests(t, path)
	if len(got) != 1 {
		t.Fatalf("server received %d requests", len(got))
	}
	var tags []string
	for _, h := range got[0].Headers {
		if h[0] == "x-tag" {
			tags = append(tags, h[1])
		}
	}
	want := map[string]string{"x-service": "checkout", "baggage": "tenant=7", "x-request-id": "req-42",
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	for name, value := range want {
		if v, _ := got[0].header(name); v != value {
			t.Errorf("%s: %q, want %q", name, v, value)
		}
	}
	if strings.Join(tags, ",") != "one,two" || got[0].Method != "PUT" || got[0].BodySize != 7 {
		t.Errorf("server received %+v", got[0])
	}
}

func httpRequestWith(headers map[string]string) *http.Request {
	r, _ := http.NewRequest("GET", "http://incoming/", nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

func TestRedirects(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	from, to := uniquePath(), uniquePath()
	s.script(t, from, map[string]any{"status": 302, "headers": [][]string{{"Location", to}}})
	s.script(t, to, map[string]any{"status": 200, "body": "moved here"})
	resp, err := hc.Get(s.url("https", from))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "moved here" || resp.Request.URL.Path != to {
		t.Fatalf("within the origin: %d %q at %v", resp.StatusCode, body, resp.Request.URL)
	}

	// Another listener's port is another origin: the caller gets the 3xx with its Location.
	away := s.url("https_h1", uniquePath())
	s.script(t, from, map[string]any{"status": 307, "headers": [][]string{{"Location", away}}})
	resp, err = hc.Get(s.url("https", from))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 || resp.Header.Get("Location") != away {
		t.Fatalf("across origins: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestRequestsRefusedBeforeSending(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("http")).HTTPClient()
	if _, err := hc.Get(s.url("https", "/elsewhere")); !errors.Is(err, humushttp.ErrCrossOrigin) {
		t.Fatalf("another origin: err = %v, want ErrCrossOrigin", err)
	}
	req, _ := http.NewRequest("GET", s.url("http", "/x"), nil)
	req.Header["X-Evil"] = []string{"a\r\nInjected: yes"}
	_, err := hc.Do(req)
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrInvalidArgument) || !errors.As(err, &he) || len(he.Fields) != 1 || he.Fields[0] != "X-Evil" {
		t.Fatalf("header injection: err = %v, want ErrInvalidArgument naming X-Evil", err)
	}
	req, _ = http.NewRequest("GET", s.url("http", "/x"), nil)
	req.Host = "other:1"
	if _, err := hc.Do(req); !errors.Is(err, humushttp.ErrInvalidArgument) || !errors.As(err, &he) ||
		len(he.Fields) != 1 || he.Fields[0] != "Host" {
		t.Fatalf("a Host override: err = %v, want ErrInvalidArgument naming Host", err)
	}
	// The headers the client owns (framing, connection management) are the core's, as in every language.
	for _, name := range []string{"Content-Length", "Transfer-Encoding", "Connection", "Te", "Upgrade"} {
		req, _ = http.NewRequest("POST", s.url("http", "/x"), nil)
		req.Header[name] = []string{"2"}
		if _, err := hc.Do(req); !errors.Is(err, humushttp.ErrInvalidArgument) || !errors.As(err, &he) ||
			he.Fields[0] != name {
			t.Fatalf("%s: err = %v, want ErrInvalidArgument naming it", name, err)
		}
	}
}

// BufferBody runs Do as Start runs a call: the body comes whole (through *http.Client too), and one past
// max_response_body fails the call itself, where a streamed body would fail only when read.
func TestBufferBody(t *testing.T) {
	s := server(t)
	settings := s.settings("https")
	settings.MaxResponseBody = 1024
	c := s.open(t, settings)
	small, large := uniquePath(), uniquePath()
	s.script(t, small, map[string]any{"status": 200, "body": "buffered"})
	s.script(t, large, map[string]any{"status": 200, "body": strings.Repeat("x", 2000)},
		map[string]any{"status": 200, "body": strings.Repeat("x", 2000)})

	req, _ := http.NewRequestWithContext(humushttp.WithCallOptions(context.Background(), humushttp.BufferBody()),
		"GET", s.url("https", small), nil)
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != "buffered" || resp.ContentLength != int64(len("buffered")) {
		t.Fatalf("body %q (length %d), err %v", got, resp.ContentLength, err)
	}

	req, _ = http.NewRequest("GET", s.url("https", large), nil)
	if _, err := c.Do(req, humushttp.BufferBody()); !errors.Is(err, humushttp.ErrTooLarge) {
		t.Fatalf("buffered past max_response_body: err = %v", err)
	}
	req, _ = http.NewRequest("GET", s.url("https", large), nil)
	streamed, err := c.Do(req)
	if err != nil {
		t.Fatalf("streamed: %v", err)
	}
	n, err := io.Copy(io.Discard, streamed.Body)
	streamed.Body.Close()
	if err != nil || n != 2000 {
		t.Fatalf("streamed: %d bytes, err %v", n, err)
	}
}

// Calls that join others over HTTP/2 run on the event loop (loop_body.go): many at once, small bodies whole
// and large ones streamed through their rings, each body exact and each request on the wire once.
func TestConcurrentCallsOverHTTP2(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	// A body held open the whole time: every call below joins it.
	held := uniquePath()
	s.script(t, held, map[string]any{"status": 200, "body_size": 8 << 20})
	first, err := c.Do(mustRequest(t, "GET", s.url("https", held)))
	if err != nil {
		t.Fatal(err)
	}
	if first.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", first.Proto)
	}
	before := humushttp.Live()
	loopCalls := humushttp.LoopCalls()
	const calls = 24
	sizes := []int{0, 100, 64<<10 - 1, 64 << 10, 256<<10 - 1, 256 << 10, 3 << 20}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	paths := make([]string, calls)
	for i := range calls {
		paths[i] = uniquePath()
		size := sizes[i%len(sizes)]
		s.script(t, paths[i], map[string]any{"status": 200, "body_size": size})
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Do(mustRequest(t, "GET", s.url("https", paths[i])))
			if err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
				return
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil || n != int64(size) || resp.ProtoMajor != 2 {
				errs <- fmt.Errorf("call %d: %d of %d bytes over %s: %v", i, n, size, resp.Proto, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := humushttp.LoopCalls() - loopCalls; n != calls {
		t.Errorf("%d calls ran on the event loop, want %d", n, calls)
	}
	first.Body.Close() // early: counted as classified, a success
	for _, path := range paths {
		if got := s.requests(t, path); len(got) != 1 {
			t.Errorf("%s reached the server %d times", path, len(got))
		}
	}
	if n := counts(t, c); n.Successes != calls+1 || n.Failures != 0 {
		t.Errorf("counts %+v, want %d successes", n, calls+1)
	}
	if l := humushttp.Live(); l.Responses != before.Responses-1 { // the held one is closed too now
		t.Errorf("responses held after every body closed: %+v, before %+v", l, before)
	}
}

// On the event loop over HTTP/2, a body failing mid-way: a stream reset is a breaker failure after the bytes
// that came, and a body that trickles past the call's timeout fails its Read with ErrTimeout on time.
func TestLoopBodyFailuresOverHTTP2(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	humushttp.LoopAlways(c)
	loopCalls := humushttp.LoopCalls()

	reset := uniquePath()
	s.script(t, reset, map[string]any{"status": 200, "body_size": 1 << 20, "reset": "mid_body"})
	resp, err := c.Do(mustRequest(t, "GET", s.url("https", reset)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !errors.Is(err, humushttp.ErrConnectionLost) || n >= 1<<20 {
		t.Errorf("a reset stream: %d bytes, %v; want ErrConnectionLost before the end", n, err)
	}
	if got := counts(t, c); got.Failures != 1 || got.Successes != 0 {
		t.Errorf("after the reset: %+v, want one failure", got)
	}

	slow := uniquePath()
	// 64 pieces 100 ms apart take 6.4 s: the call's 1.5 s timeout, not the body's end, ends the Read.
	s.script(t, slow, map[string]any{"status": 200, "body_size": 1 << 20, "chunk_delay_ms": 100})
	ctx := humushttp.WithCallOptions(context.Background(), humushttp.Timeout(1500*time.Millisecond))
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("https", slow), nil)
	started := time.Now()
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if took := time.Since(started); !errors.Is(err, humushttp.ErrTimeout) || n >= 1<<20 || took < 1400*time.Millisecond {
		t.Errorf("a trickle past the timeout: %d bytes, %v after %v; want ErrTimeout at 1.5 s, mid-body", n, err, took)
	}
	if n == 0 {
		t.Error("no byte came before the timeout: the trickle's first chunks should have")
	}
	if got := humushttp.LoopCalls() - loopCalls; got != 2 {
		t.Errorf("%d calls ran on the loop, want 2", got)
	}
}

// Many calls on the event loop over HTTP/2, one connection, that end every way a caller ends one — read to
// the end, closed after the first Read, cancelled mid-body, timed out mid-body — at once: each ends as it
// should, and nothing is held afterwards. It found two defects of the core's streamed transfers: a handle
// reused after a stream cut while paused handed the next request bytes of the old one, and a timed-out
// stream cut the connection under the one other stream still on it.
// Stepped (StepAlways), each call has a connection of its own: the same ends, over HTTP/2 still.
func TestLoopBodiesEndingEveryWayAtOnce(t *testing.T) {
	for _, way := range []string{"loop", "step"} {
		t.Run(way, func(t *testing.T) { bodiesEndingEveryWayAtOnce(t, way) })
	}
}

func bodiesEndingEveryWayAtOnce(t *testing.T, way string) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	ran := humushttp.LoopCalls
	if way == "step" {
		humushttp.StepAlways(c)
		ran = humushttp.StepCalls
	} else {
		humushttp.LoopAlways(c)
	}
	before := humushttp.Live()
	loopCalls := ran()
	const calls = 48
	var wg sync.WaitGroup
	var timedOut atomic.Int64
	errs := make(chan error, calls)
	for i := range calls {
		path := uniquePath()
		size := []int{100, 64 << 10, 2 << 20}[i%3]
		step := map[string]any{"status": 200, "body_size": size}
		if i%4 == 3 {
			step["chunk_delay_ms"] = 50 // slow enough for the cancel and the timeout to land mid-body
		}
		s.script(t, path, step)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%8 == 7 {
				ctx = humushttp.WithCallOptions(ctx, humushttp.Timeout(300*time.Millisecond))
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", s.url("https", path), nil)
			resp, err := c.Do(req)
			if err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
				return
			}
			defer resp.Body.Close()
			switch {
			case i%8 == 7: // times out mid-body, unless the body was small enough to come first
				_, err := io.Copy(io.Discard, resp.Body)
				if errors.Is(err, humushttp.ErrTimeout) {
					timedOut.Add(1)
				} else if err != nil {
					errs <- fmt.Errorf("call %d (timeout): %w", i, err)
				}
			case i%4 == 3: // cancelled mid-body
				time.AfterFunc(80*time.Millisecond, cancel)
				if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, context.Canceled) {
					errs <- fmt.Errorf("call %d (cancel): %w", i, err)
				}
			case i%4 == 1: // closed after its first bytes
				if _, err := resp.Body.Read(make([]byte, 1024)); err != nil && err != io.EOF {
					errs <- fmt.Errorf("call %d (early close): %w", i, err)
				}
			default:
				if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(size) {
					errs <- fmt.Errorf("call %d: %d of %d bytes: %v", i, n, size, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ran() - loopCalls; n != calls {
		t.Errorf("%d calls ran on the %s path, want %d", n, way, calls)
	}
	if l := humushttp.Live(); l.Responses != before.Responses || l.Handles != before.Handles {
		t.Errorf("held after every call ended: %+v, before %+v", l, before)
	}
	// A read the call's timeout ended is a failure (docs/bodies.md §7); a cancel or an early close is none.
	if n := counts(t, c); n.Failures != uint64(timedOut.Load()) || timedOut.Load() == 0 {
		t.Errorf("counts %+v after %d timed-out reads: only those are failures", n, timedOut.Load())
	}
}
