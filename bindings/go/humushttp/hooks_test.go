package humushttp_test

// Attempt hooks (docs/retries.md §6.7) against the project's test server: every attempt of a retried 503 and
// of a redirect, a header a hook sets reaching the server for its attempt only, a hook's failure ending the
// call; through Do (blocking and on the loop), Start and BufferBody.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// hookLog records what the hooks saw, in order.
type hookLog struct {
	mu        sync.Mutex
	requests  []humushttp.AttemptRequest
	responses []humushttp.AttemptResponse
}

func (l *hookLog) hooks() humushttp.AttemptHooks {
	return humushttp.AttemptHooks{
		Request: func(r *humushttp.AttemptRequest) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.requests = append(l.requests, *r)
			return nil
		},
		Response: func(r *humushttp.AttemptResponse) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.responses = append(l.responses, *r)
			return nil
		},
	}
}

// callWays are the ways a call is made: each must run the hooks of every attempt.
var callWays = []struct {
	name string
	call func(c *humushttp.Client, req *http.Request) (*humushttp.Response, error)
}{
	{"Do", func(c *humushttp.Client, req *http.Request) (*humushttp.Response, error) { return c.Do(req) }},
	{"DoOnLoop", func(c *humushttp.Client, req *http.Request) (*humushttp.Response, error) {
		humushttp.LoopAlways(c)
		return c.Do(req)
	}},
	{"Start", func(c *humushttp.Client, req *http.Request) (*humushttp.Response, error) {
		call, err := c.Start(req, nil)
		if err != nil {
			return nil, err
		}
		return call.Wait()
	}},
	{"BufferBody", func(c *humushttp.Client, req *http.Request) (*humushttp.Response, error) {
		return c.Do(req, humushttp.BufferBody())
	}},
}

func TestAttemptHooksSeeEveryAttemptOfARetried503(t *testing.T) {
	s := server(t)
	for _, way := range callWays {
		t.Run(way.name, func(t *testing.T) {
			var log hookLog
			c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(log.hooks()))
			path := uniquePath()
			s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 503},
				map[string]any{"status": 200, "body": "ok"})
			req, _ := http.NewRequest("GET", s.url("https", path), nil)
			resp, err := way.call(c, req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" || resp.Attempts != 3 {
				t.Fatalf("got %d %q after %d attempts", resp.StatusCode, body, resp.Attempts)
			}
			if len(log.requests) != 3 || len(log.responses) != 3 {
				t.Fatalf("%d request hooks, %d response hooks, want 3 each", len(log.requests), len(log.responses))
			}
			for i, want := range []int{503, 503, 200} {
				rq, rs := log.requests[i], log.responses[i]
				if rq.Attempt != i+1 || rq.Method != "GET" || rq.URL != s.url("https", path) {
					t.Errorf("request hook %d saw %+v", i, rq)
				}
				if rs.Attempt != i+1 || rs.StatusCode != want || rs.URL != rq.URL || rs.Method != "GET" {
					t.Errorf("response hook %d saw %+v, want status %d", i, rs, want)
				}
			}
			if got := log.responses[2].Header.Get("Content-Length"); got != "2" {
				t.Errorf("the response hook's headers: Content-Length %q", got)
			}
			if got := len(s.requests(t, path)); got != 3 {
				t.Errorf("server received %d requests, want 3", got)
			}
		})
	}
}

func TestAttemptHooksSeeARedirectHop(t *testing.T) {
	s := server(t)
	for _, way := range callWays {
		t.Run(way.name, func(t *testing.T) {
			var log hookLog
			c := s.open(t, s.settings("http"), humushttp.WithAttemptHooks(log.hooks()))
			from, to := uniquePath(), uniquePath()
			s.script(t, from, map[string]any{"status": 302, "headers": [][]string{{"Location", s.url("http", to)}}})
			s.script(t, to, map[string]any{"status": 200, "body": "moved"})
			req, _ := http.NewRequest("GET", s.url("http", from), nil)
			resp, err := way.call(c, req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "moved" || len(resp.Redirects) != 1 {
				t.Fatalf("got %d %q, redirects %+v", resp.StatusCode, body, resp.Redirects)
			}
			if len(log.requests) != 2 || len(log.responses) != 2 {
				t.Fatalf("%d request hooks, %d response hooks, want 2 each", len(log.requests), len(log.responses))
			}
			if r := log.requests[0]; r.URL != s.url("http", from) || r.Attempt != 1 {
				t.Errorf("first hop: %+v", r)
			}
			if r := log.requests[1]; r.URL != s.url("http", to) || r.Attempt != 1 {
				t.Errorf("redirect hop: %+v, want %s as attempt 1", r, s.url("http", to))
			}
			if r := log.responses[0]; r.StatusCode != 302 || r.Header.Get("Location") != s.url("http", to) || r.URL != s.url("http", from) {
				t.Errorf("first hop's response: %+v", r)
			}
			if r := log.responses[1]; r.StatusCode != 200 || r.URL != s.url("http", to) {
				t.Errorf("redirect hop's response: %+v", r)
			}
		})
	}
}

func TestAttemptHookHeadersReachTheServer(t *testing.T) {
	s := server(t)
	for _, way := range callWays {
		t.Run(way.name, func(t *testing.T) {
			hooks := humushttp.AttemptHooks{Request: func(r *humushttp.AttemptRequest) error {
				if r.Header.Get("X-Mode") != "call" { // every attempt starts from the call's own headers
					return fmt.Errorf("attempt %d saw X-Mode %q", r.Attempt, r.Header.Get("X-Mode"))
				}
				r.Header.Set("X-Signature", fmt.Sprintf("sig-%d", r.Attempt))
				r.Header.Set("X-Mode", "hooked")
				if r.Attempt == 1 {
					r.Header["X-First"] = []string{"a", "b"}
				}
				return nil
			}}
			c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
			path := uniquePath()
			s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200})
			req, _ := http.NewRequest("GET", s.url("https", path), nil)
			req.Header.Set("X-Mode", "call")
			resp, err := way.call(c, req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := s.requests(t, path)
			if len(got) != 2 {
				t.Fatalf("server received %d requests, want 2", len(got))
			}
			for i, r := range got {
				sig, _ := r.header("X-Signature")
				mode, _ := r.header("X-Mode")
				first, hasFirst := r.header("X-First")
				if sig != fmt.Sprintf("sig-%d", i+1) || mode != "hooked" || hasFirst != (i == 0) {
					t.Errorf("request %d: X-Signature %q, X-Mode %q, X-First %q", i+1, sig, mode, first)
				}
				if i == 0 && first != "a, b" {
					t.Errorf("two values of one header: X-First %q, want them joined", first)
				}
			}
		})
	}
}

// F140 (a request hook fails), F141 (a response hook fails or panics), F142 (a hook sets a header the client
// owns, or removes one): each ends the call with ErrCallback wrapping what the hook said, nothing more sent.
func TestAttemptHookFailureEndsTheCall(t *testing.T) {
	s := server(t)
	boom := errors.New("no signing key")
	for _, way := range callWays {
		t.Run(way.name, func(t *testing.T) {
			t.Run("request hook", func(t *testing.T) {
				hooks := humushttp.AttemptHooks{Request: func(r *humushttp.AttemptRequest) error {
					if r.Attempt == 2 {
						return boom
					}
					return nil
				}}
				c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
				path := uniquePath()
				s.script(t, path, map[string]any{"status": 503}, map[string]any{"status": 200})
				req, _ := http.NewRequest("GET", s.url("https", path), nil)
				_, err := way.call(c, req)
				checkHookError(t, err, "request hook", boom)
				if got := len(s.requests(t, path)); got != 1 {
					t.Errorf("server received %d requests, want 1: the refused attempt is not sent", got)
				}
			})
			t.Run("response hook", func(t *testing.T) {
				hooks := humushttp.AttemptHooks{Response: func(r *humushttp.AttemptResponse) error {
					if r.StatusCode == 503 {
						return boom
					}
					return nil
				}}
				c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
				path := uniquePath()
				s.script(t, path, map[string]any{"status": 503, "headers": [][]string{{"Retry-After", "1"}}},
					map[string]any{"status": 200})
				req, _ := http.NewRequest("GET", s.url("https", path), nil)
				_, err := way.call(c, req)
				checkHookError(t, err, "response hook", boom)
				if got := len(s.requests(t, path)); got != 1 {
					t.Errorf("server received %d requests, want 1: no retry after the hook failed", got)
				}
			})
			t.Run("response hook on the last response", func(t *testing.T) {
				hooks := humushttp.AttemptHooks{Response: func(*humushttp.AttemptResponse) error { panic("hook panicked") }}
				c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
				req, _ := http.NewRequest("GET", s.url("https", uniquePath()), nil)
				_, err := way.call(c, req)
				var ce *humushttp.CallbackError
				if !errors.Is(err, humushttp.ErrCallback) || !errors.As(err, &ce) || ce.Callback != "response hook" ||
					ce.Panic != "hook panicked" {
					t.Fatalf("err = %v, want ErrCallback with the response hook's panic", err)
				}
			})
			t.Run("refused header", func(t *testing.T) {
				hooks := humushttp.AttemptHooks{Request: func(r *humushttp.AttemptRequest) error {
					r.Header.Set("Content-Length", "5")
					return nil
				}}
				c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
				path := uniquePath()
				req, _ := http.NewRequest("GET", s.url("https", path), nil)
				_, err := way.call(c, req)
				var ce *humushttp.CallbackError
				if !errors.Is(err, humushttp.ErrCallback) || !errors.As(err, &ce) || !errors.Is(ce, humushttp.ErrInvalidArgument) ||
					!strings.Contains(err.Error(), "Content-Length") {
					t.Fatalf("err = %v, want ErrCallback caused by ErrInvalidArgument naming Content-Length", err)
				}
				if got := len(s.requests(t, path)); got != 0 {
					t.Errorf("server received %d requests, want none", got)
				}
			})
			t.Run("removed header", func(t *testing.T) {
				hooks := humushttp.AttemptHooks{Request: func(r *humushttp.AttemptRequest) error {
					r.Header.Del("X-Mode")
					return nil
				}}
				c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
				req, _ := http.NewRequest("GET", s.url("https", uniquePath()), nil)
				req.Header.Set("X-Mode", "call")
				_, err := way.call(c, req)
				if !errors.Is(err, humushttp.ErrCallback) || !strings.Contains(err.Error(), `removed the header "X-Mode"`) {
					t.Fatalf("err = %v, want ErrCallback naming the removed header", err)
				}
			})
		})
	}
}

func checkHookError(t *testing.T, err error, hook string, cause error) {
	t.Helper()
	var ce *humushttp.CallbackError
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrCallback) || !errors.Is(err, cause) || !errors.As(err, &ce) || ce.Callback != hook ||
		!errors.As(err, &he) || he.Attempts != 1 || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrCallback after 1 attempt wrapping the %s's error", err, hook)
	}
	if !strings.Contains(err.Error(), hook+" failed: "+cause.Error()) {
		t.Errorf("message %q does not say what the hook said", err.Error())
	}
}

func TestAttemptHooksNeedAFunc(t *testing.T) {
	_, err := humushttp.Open(humushttp.Settings{BaseURL: "http://127.0.0.1:1"}, humushttp.WithAttemptHooks(humushttp.AttemptHooks{}))
	if !errors.Is(err, humushttp.ErrProgram) {
		t.Fatalf("err = %v, want ErrProgram", err)
	}
}

// Hooks of many calls at once, on several threads (the callers' and the loop's): run under -race, every
// attempt hooked once, each call's header its own.
func TestAttemptHooksOfConcurrentCalls(t *testing.T) {
	s := server(t)
	var before, after atomic.Int64
	hooks := humushttp.AttemptHooks{
		Request: func(r *humushttp.AttemptRequest) error {
			before.Add(1)
			r.Header.Set("X-Hooked", r.Header.Get("X-Call"))
			return nil
		},
		Response: func(*humushttp.AttemptResponse) error { after.Add(1); return nil },
	}
	c := s.open(t, s.settings("https"), humushttp.WithAttemptHooks(hooks))
	const goroutines, each = 8, 10
	paths := make([]string, goroutines)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		paths[g] = uniquePath()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				req, _ := http.NewRequest("GET", s.url("https", paths[g]), nil)
				req.Header.Set("X-Call", fmt.Sprintf("%d-%d", g, i))
				// Not DoOnLoop: LoopAlways is set before a client's first call.
				way := callWays[[]int{0, 2, 3}[(g+i)%3]]
				resp, err := way.call(c, req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if before.Load() != goroutines*each || after.Load() != goroutines*each {
		t.Fatalf("%d request hooks, %d response hooks, want %d each", before.Load(), after.Load(), goroutines*each)
	}
	for g, path := range paths {
		got := s.requests(t, path)
		if len(got) != each {
			t.Fatalf("%s: %d requests", path, len(got))
		}
		for i, r := range got {
			if v, _ := r.header("X-Hooked"); v != fmt.Sprintf("%d-%d", g, i) {
				t.Errorf("request %d of goroutine %d: X-Hooked %q", i, g, v)
			}
		}
	}
}
