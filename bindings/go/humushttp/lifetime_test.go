package humushttp_test

// Lifetimes: Close, cleanups for what is dropped unclosed, and the order in which native objects are freed.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func ok200(*humushttp.MockRequest) (humushttp.MockReply, error) {
	return humushttp.MockReply{Body: []byte("body of the response")}, nil
}

func TestCloseRefusesLaterCalls(t *testing.T) {
	rt := mockRuntime(t, ok200)
	c, err := humushttp.Open(humushttp.Settings{BaseURL: "http://payments:8080"}, humushttp.WithRuntime(rt))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	before := humushttp.Live()
	c.Close()
	c.Close() // idempotent
	if after := humushttp.Live(); after.Clients != before.Clients {
		t.Errorf("live clients %d → %d: Close freed the client under an open body", before.Clients, after.Clients)
	}
	body, _ := io.ReadAll(resp.Body) // an open body stays readable after Close, and its end frees the client
	resp.Body.Close()
	if string(body) != "body of the response" {
		t.Errorf("body after Close: %q", body)
	}
	if after := humushttp.Live(); after.Clients != before.Clients-1 {
		t.Errorf("live clients %d → %d: the client outlived its last body", before.Clients, after.Clients)
	}
	_, err = get(t, c, "http://payments:8080/")
	if !errors.Is(err, humushttp.ErrClosed) || !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("Do after Close: %v", err)
	}
	req, _ := http.NewRequest("GET", "http://payments:8080/", nil)
	if _, err := c.Start(req, nil); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if _, err := c.BreakerState(); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("BreakerState after Close: %v", err)
	}
	if _, err := c.BreakerCounts(); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("BreakerCounts after Close: %v", err)
	}
	if _, err := c.BudgetTokens(); !errors.Is(err, humushttp.ErrClosed) {
		t.Errorf("BudgetTokens after Close: %v", err)
	}
}

func TestCloseDuringACallFreesAfterIt(t *testing.T) {
	s := server(t)
	c, err := humushttp.Open(s.settings("http"), humushttp.WithRuntime(s.rt))
	if err != nil {
		t.Fatal(err)
	}
	path := uniquePath()
	s.script(t, path, map[string]any{"delay_ms": 300})
	before := humushttp.Live()
	done := make(chan error, 1)
	go func() {
		resp, err := get(t, c, s.url("http", path))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); len(s.requests(t, path)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the server")
		}
	}
	c.Close() // returns at once; the native client waits for the call
	if humushttp.Live().Clients != before.Clients {
		t.Error("the native client was freed while a call was in flight")
	}
	if err := <-done; err != nil {
		t.Fatalf("the call in flight failed: %v", err)
	}
	if humushttp.Live().Clients != before.Clients-1 {
		t.Error("the native client was not freed after its last call")
	}
}

func TestUnclosedObjectsFreedByCleanups(t *testing.T) {
	rt := mockRuntime(t, ok200)
	before := stableLive()
	func() {
		hc, err := humushttp.NewClient(humushttp.Settings{BaseURL: "http://payments:8080"}, humushttp.WithRuntime(rt))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get("http://payments:8080/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp // dropped without reading or closing its body
	}()
	if left, ok := settle(func(l humushttp.LiveCounts) bool {
		return l.Clients == before.Clients && l.Responses == before.Responses && l.Handles == before.Handles
	}); !ok {
		t.Fatalf("still held after GC: %+v (before %+v)", left, before)
	}
}

func TestRuntimeOutlivesItsClients(t *testing.T) {
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{VirtualClock: true, MockTransport: ok200})
	if err != nil {
		t.Fatal(err)
	}
	c, err := humushttp.Open(humushttp.Settings{BaseURL: "http://payments:8080"}, humushttp.WithRuntime(rt))
	if err != nil {
		t.Fatal(err)
	}
	before := humushttp.Live()
	rt.Close() // the client still needs the native runtime
	if humushttp.Live().Runtimes != before.Runtimes {
		t.Fatal("the native runtime was freed under a live client")
	}
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatalf("a call after Runtime.Close: %v", err)
	}
	resp.Body.Close()
	c.Close()
	if after := humushttp.Live(); after.Runtimes != before.Runtimes-1 || after.Handles != before.Handles-1 {
		t.Fatalf("after the last client: %+v (before %+v): the runtime and its mock's handle should be gone", after, before)
	}
}

func TestBodyReads(t *testing.T) {
	rt := mockRuntime(t, ok200)
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	before := humushttp.Live()
	resp, err := get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if n, err := resp.Body.Read(buf); n != 4 || err != nil || string(buf) != "body" {
		t.Fatalf("Read: %d %v %q", n, err, buf)
	}
	rest, err := io.ReadAll(resp.Body) // reading to the end frees the native response already
	if string(rest) != " of the response" || err != nil || humushttp.Live().Responses != before.Responses {
		t.Fatalf("rest %q %v, live %+v", rest, err, humushttp.Live())
	}
	if n, err := resp.Body.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read after the end: %d %v", n, err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("Read after Close succeeded")
	}

	resp, err = get(t, c, "http://payments:8080/")
	if err != nil {
		t.Fatal(err)
	}
	var sink bytesWriter
	if n, err := io.Copy(&sink, resp.Body); n != 20 || err != nil || string(sink) != "body of the response" {
		t.Fatalf("io.Copy: %d %v %q", n, err, sink)
	}
	resp.Body.Close()
	if humushttp.Live().Responses != before.Responses {
		t.Error("a response read through WriteTo is still held")
	}
}

// stableLive is the live counts once the cleanups of what earlier tests dropped have run.
func stableLive() humushttp.LiveCounts {
	last := humushttp.Live()
	for i := 0; i < 100; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		now := humushttp.Live()
		if now == last && i >= 2 {
			break
		}
		last = now
	}
	return last
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

func TestDefaultRuntime(t *testing.T) {
	s := server(t)
	settings := s.settings("http")
	hc, err := humushttp.NewClient(settings) // no WithRuntime: the process-wide default runtime
	if err != nil {
		t.Fatal(err)
	}
	c, _ := humushttp.ClientOf(hc)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url("http", uniquePath()), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestTransport(t *testing.T) {
	rt := mockRuntime(t, ok200)
	c := openOn(t, rt, humushttp.Settings{BaseURL: "http://payments:8080"})
	tr := c.Transport()
	if tr.Client() != c {
		t.Error("Transport.Client is not the client it came from")
	}
	req, _ := http.NewRequest("GET", "http://payments:8080/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("RoundTrip: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := new(humushttp.Transport).RoundTrip(req); !errors.Is(err, humushttp.ErrMisuse) {
		t.Errorf("a zero Transport: %v", err)
	}
}

func TestStatusesAndErrors(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(humushttp.Version()) {
		t.Errorf("Version() = %q", humushttp.Version())
	}
	statuses := []humushttp.Status{humushttp.StatusInvalidArgument, humushttp.StatusMisuse, humushttp.StatusProgram,
		humushttp.StatusCrossOrigin, humushttp.StatusNoMemory, humushttp.StatusInternal, humushttp.StatusCallback,
		humushttp.StatusConfig, humushttp.StatusRejected, humushttp.StatusBulkheadFull, humushttp.StatusTimeout,
		humushttp.StatusCancelled, humushttp.StatusConnect, humushttp.StatusResolve, humushttp.StatusConnectionLost,
		humushttp.StatusProtocol, humushttp.StatusStreamRefused, humushttp.StatusTooLarge, humushttp.StatusResource, humushttp.StatusTLS, humushttp.StatusTLSClientCert}
	for _, s := range statuses {
		back, ok := humushttp.StatusByName(s.String())
		if !ok || back != s || s.Err() == nil {
			t.Errorf("%d %s: by name %d %v, Err %v", s, s, back, ok, s.Err())
		}
		e := &humushttp.Error{Status: s}
		for _, other := range statuses {
			if errors.Is(e, other.Err()) != (other == s) {
				t.Errorf("errors.Is(%s, %s) wrong", s, other)
			}
		}
	}
	if humushttp.StatusOK.String() != "HUMUS_OK" || humushttp.StatusOK.Err() != nil {
		t.Error("StatusOK")
	}
	if _, ok := humushttp.StatusByName("HUMUS_E_NOPE"); ok {
		t.Error("an unknown name was found")
	}
	e := &humushttp.Error{Status: humushttp.StatusTimeout, Message: "the call's deadline passed", Attempts: 2}
	if got := e.Error(); got != "humushttp: HUMUS_E_TIMEOUT: the call's deadline passed (2 attempts)" || !e.Timeout() {
		t.Errorf("Error() = %q", got)
	}
	if got := humushttp.ErrTLS.Error(); got != "humushttp: HUMUS_E_TLS" {
		t.Errorf("a sentinel's text: %q", got)
	}
}
