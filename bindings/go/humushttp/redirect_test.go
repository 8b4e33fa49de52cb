package humushttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// chain scripts from → 302 → mid → 302 → to → 200 "arrived" on the server and returns the three paths.
func chain(t *testing.T, s *testServer) (from, mid, to string) {
	from, mid, to = uniquePath(), uniquePath(), uniquePath()
	s.script(t, from, map[string]any{"status": 302, "headers": [][]string{{"Location", mid}}})
	s.script(t, mid, map[string]any{"status": 302, "headers": [][]string{{"Location", to}}})
	s.script(t, to, map[string]any{"status": 200, "body": "arrived"})
	return from, mid, to
}

// A CheckRedirect of the user's sees every redirect, within the origin too, with net/http's via chain: the
// core followed none of them itself.
func TestCheckRedirectSeesEveryHop(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	from, mid, to := chain(t, s)
	var seen []string
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		seen = append(seen, req.URL.Path+" after "+via[len(via)-1].URL.Path)
		if len(via) != len(seen) || req.Response == nil || req.Response.StatusCode != 302 {
			t.Errorf("redirect %d: via has %d requests, Response %v", len(seen), len(via), req.Response)
		}
		return nil
	}
	resp, err := hc.Get(s.url("https", from))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := []string{mid + " after " + from, to + " after " + mid}
	if resp.StatusCode != 200 || string(body) != "arrived" || resp.Request.URL.Path != to ||
		strings.Join(seen, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got %d %q at %v, CheckRedirect saw %q; want 200 \"arrived\" at %s, %q", resp.StatusCode, body,
			resp.Request.URL, seen, to, want)
	}
	for _, p := range []string{from, mid, to} {
		if n := len(s.requests(t, p)); n != 1 {
			t.Errorf("%s received %d requests, want 1", p, n)
		}
	}
}

// http.ErrUseLastResponse returns the first 3xx, a within-origin one included, and nothing more is sent.
func TestCheckRedirectUseLastResponse(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	from, mid, _ := chain(t, s)
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Get(s.url("https", from))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || resp.Header.Get("Location") != mid {
		t.Fatalf("got %d Location %q, want the 302 to %s", resp.StatusCode, resp.Header.Get("Location"), mid)
	}
	if n := len(s.requests(t, mid)); n != 0 {
		t.Fatalf("%s received %d requests, want none", mid, n)
	}
}

// An error from CheckRedirect is returned as net/http returns it: inside a *url.Error, the response's body
// closed, nothing more sent.
func TestCheckRedirectError(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	from, mid, _ := chain(t, s)
	errStop := errors.New("no redirects for this SDK")
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errStop }
	resp, err := hc.Get(s.url("https", from))
	var ue *url.Error
	if !errors.Is(err, errStop) || !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want a *url.Error wrapping CheckRedirect's error", err, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	if n := len(s.requests(t, mid)); n != 0 {
		t.Fatalf("%s received %d requests, want none", mid, n)
	}
}

// A CheckRedirect that allows a redirect to another origin does not get it sent: ErrCrossOrigin, with a
// message that says how to get the 3xx instead.
func TestCheckRedirectAcrossOriginsNeverSent(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	from, away := uniquePath(), uniquePath()
	s.script(t, from, map[string]any{"status": 307, "headers": [][]string{{"Location", s.url("https_h1", away)}}})
	asked := 0
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { asked++; return nil }
	_, err := hc.Get(s.url("https", from))
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrCrossOrigin) || !errors.As(err, &he) ||
		!strings.Contains(he.Message, "return http.ErrUseLastResponse from CheckRedirect") || he.Attempts != 0 {
		t.Fatalf("err = %v, want ErrCrossOrigin saying to return http.ErrUseLastResponse, 0 attempts", err)
	}
	if asked != 1 {
		t.Fatalf("CheckRedirect asked %d times, want 1", asked)
	}
	if n := len(s.requests(t, away)); n != 0 {
		t.Fatalf("the other origin received %d requests, want none", n)
	}
}

// The default CheckRedirect (FollowWithinOrigin) is the core's rule: a redirect loop makes 11 requests and
// returns the last 302, as the vector redirect_at_most_ten says of the core.
func TestFollowWithinOriginAtMostTen(t *testing.T) {
	s := server(t)
	hc := s.open(t, s.settings("https")).HTTPClient()
	loop := uniquePath()
	s.script(t, loop, map[string]any{"status": 302, "headers": [][]string{{"Location", loop}}})
	resp, err := hc.Get(s.url("https", loop))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(s.requests(t, loop)); resp.StatusCode != 302 || n != 11 {
		t.Fatalf("got %d after %d requests, want the 302 after 11", resp.StatusCode, n)
	}
}

// Client.Do follows within the origin in the core, listing what it followed; FollowRedirects(false) returns
// the first 3xx.
func TestDoRedirects(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	from, mid, to := chain(t, s)
	req, _ := http.NewRequest("GET", s.url("https", from), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []string{"302 " + s.url("https", from), "302 " + s.url("https", mid)}
	var got []string
	for _, r := range resp.Redirects {
		got = append(got, strconv.Itoa(r.StatusCode)+" "+r.URL)
	}
	if resp.StatusCode != 200 || resp.Request.URL.Path != to || strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got %d at %v, Redirects %q; want 200 at %s, %q", resp.StatusCode, resp.Request.URL, got, to, want)
	}

	resp, err = c.Do(req, humushttp.FollowRedirects(false))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || resp.Header.Get("Location") != mid || resp.Redirects != nil {
		t.Fatalf("FollowRedirects(false): %d Location %q, Redirects %+v; want the 302 to %s and none",
			resp.StatusCode, resp.Header.Get("Location"), resp.Redirects, mid)
	}
}
