package humushttp_test

// What net/http users read of a response's head and leave out of a request's, against real servers: the
// status line's reason phrase as sent (Response.Status), every redirect hop's head (Response.Redirects), and
// headers left out (a nil value; an empty User-Agent). The test server sends Python's phrases — "I'm a
// Teapot" for 418 where Go's StatusText says "I'm a teapot", "Unknown" for a code it has none for — and a
// raw loopback peer sends the status lines it never does.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// rawPeer is a loopback HTTP/1.1 server for the status lines the test server never sends: each request
// is answered with answer(its target) — a status line and any header lines, without the final CRLF — and an
// empty body, the connection kept open. It stops, its connections closed, when the test ends.
func rawPeer(t *testing.T, answer func(target string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	serve := func(conn net.Conn) {
		defer wg.Done()
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n') // GET /target HTTP/1.1
			if err != nil {
				return
			}
			fields := strings.Fields(line)
			for line != "\r\n" { // the rest of the head; the client sends GETs without a body
				if line, err = r.ReadString('\n'); err != nil {
					return
				}
			}
			target := ""
			if len(fields) > 1 {
				target = fields[1]
			}
			if _, err := io.WriteString(conn, answer(target)+"\r\nContent-Length: 0\r\n\r\n"); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go serve(conn)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

func getClosed(t *testing.T, c *humushttp.Client, url string, opts ...humushttp.CallOption) *humushttp.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	resp, err := c.Do(req, opts...)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp
}

// Over HTTP/1.1, Status is the code and the phrase as the server sent it, as net/http's HTTP/1 reader
// makes it; a status line without a phrase gets StatusText's.
func TestStatusReasonAsSentHTTP1(t *testing.T) {
	s := server(t)
	for _, listener := range []string{"http", "https_h1"} {
		t.Run(listener, func(t *testing.T) {
			c := s.open(t, s.settings(listener))
			for _, tc := range []struct {
				code int
				want string
			}{{418, "418 I'm a Teapot"}, {299, "299 Unknown"}, {404, "404 Not Found"}} {
				path := uniquePath()
				s.script(t, path, map[string]any{"status": tc.code})
				resp := getClosed(t, c, s.url(listener, path))
				if resp.Status != tc.want || resp.StatusCode != tc.code || resp.Proto != "HTTP/1.1" {
					t.Errorf("got Status %q StatusCode %d %s, want %q over HTTP/1.1", resp.Status, resp.StatusCode,
						resp.Proto, tc.want)
				}
			}
		})
	}
	t.Run("raw", func(t *testing.T) {
		for _, tc := range []struct{ line, want string }{
			{"HTTP/1.1 200 Fine, Thanks", "200 Fine, Thanks"},
			{"HTTP/1.1 200 Not  Quite  OK", "200 Not  Quite  OK"},
			{"HTTP/1.1 299 Custom", "299 Custom"},
			{"HTTP/1.1 200", "200 OK"}, // no phrase: StatusText's, as over HTTP/2
			{"HTTP/1.1 204 ", "204 No Content"},
		} {
			base := rawPeer(t, func(string) string { return tc.line })
			c := s.open(t, humushttp.Settings{BaseURL: base, MaxAttempts: 1})
			resp := getClosed(t, c, base+"/r")
			if resp.Status != tc.want {
				t.Errorf("%q: Status %q, want %q", tc.line, resp.Status, tc.want)
			}
			// Through *http.Client too: its Transport makes the same Response.
			hresp, err := c.HTTPClient().Get(base + "/r")
			if err != nil {
				t.Fatal(err)
			}
			hresp.Body.Close()
			if hresp.Status != tc.want {
				t.Errorf("%q through *http.Client: Status %q, want %q", tc.line, hresp.Status, tc.want)
			}
		}
	})
}

// HTTP/2 has no reason phrase: Status is net/http's HTTP/2 transport's, the code, a space and StatusText,
// whatever phrase the server would have sent over HTTP/1.1.
func TestStatusOverHTTP2IsStatusText(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("https"))
	for _, tc := range []struct {
		code int
		want string
	}{{418, "418 I'm a teapot"}, {299, "299 "}, {200, "200 OK"}} {
		path := uniquePath()
		s.script(t, path, map[string]any{"status": tc.code})
		resp := getClosed(t, c, s.url("https", path))
		if resp.Status != tc.want || resp.Proto != "HTTP/2.0" {
			t.Errorf("got Status %q %s, want %q over HTTP/2.0", resp.Status, resp.Proto, tc.want)
		}
	}
}

// Each redirect the core followed keeps its head — status with its phrase, protocol, headers — for Do,
// a streamed Start and a buffered one alike, over HTTP/1.1 and HTTP/2.
func TestRedirectHopHeads(t *testing.T) {
	s := server(t)
	for _, tc := range []struct{ listener, proto, status301, status418 string }{
		{"https_h1", "HTTP/1.1", "301 Moved Permanently", "418 I'm a Teapot"},
		{"https", "HTTP/2.0", "301 Moved Permanently", "418 I'm a teapot"},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			c := s.open(t, s.settings(tc.listener))
			for _, how := range []string{"Do", "Start", "Start BufferBody"} {
				from, mid, to := uniquePath(), uniquePath(), uniquePath()
				s.script(t, from, map[string]any{"status": 301, "headers": [][]string{{"Location", mid},
					{"X-Hop", "first"}, {"X-Hop", "again"}}})
				s.script(t, mid, map[string]any{"status": 307, "headers": [][]string{{"Location", to},
					{"X-Hop", "second"}}})
				s.script(t, to, map[string]any{"status": 418, "body": "arrived"})
				req, _ := http.NewRequest("GET", s.url(tc.listener, from), nil)
				var resp *humushttp.Response
				var err error
				switch how {
				case "Do":
					resp, err = c.Do(req)
				default:
					var opts []humushttp.CallOption
					if how == "Start BufferBody" {
						opts = append(opts, humushttp.BufferBody())
					}
					var call *humushttp.Call
					if call, err = c.Start(req, nil, opts...); err == nil {
						resp, err = call.Wait()
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.Status != tc.status418 || string(body) != "arrived" || len(resp.Redirects) != 2 {
					t.Fatalf("%s: got %q %q after %d redirects, want %q \"arrived\" after 2", how, resp.Status, body,
						len(resp.Redirects), tc.status418)
				}
				first, second := resp.Redirects[0], resp.Redirects[1]
				if first.StatusCode != 301 || first.Status != tc.status301 || first.URL != s.url(tc.listener, from) ||
					first.Proto != tc.proto || first.ProtoMajor != resp.ProtoMajor || first.ProtoMinor != resp.ProtoMinor ||
					first.Header.Get("Location") != mid || !slices.Equal(first.Header["X-Hop"], []string{"first", "again"}) {
					t.Errorf("%s: first hop %+v, want the 301 %q of %s over %s with Location %s and X-Hop first, again",
						how, first, tc.status301, from, tc.proto, mid)
				}
				if second.StatusCode != 307 || second.Status != "307 Temporary Redirect" ||
					second.URL != s.url(tc.listener, mid) || second.Proto != tc.proto ||
					second.Header.Get("Location") != to || !slices.Equal(second.Header["X-Hop"], []string{"second"}) {
					t.Errorf("%s: second hop %+v, want the 307 of %s over %s with Location %s and X-Hop second",
						how, second, mid, tc.proto, to)
				}
			}
		})
	}
}

// A hop's reason phrase is the one its server sent, custom ones included, as the final response's.
func TestRedirectHopReasonAsSent(t *testing.T) {
	s := server(t)
	base := rawPeer(t, func(target string) string {
		if target == "/from" {
			return "HTTP/1.1 302 Look Over There\r\nLocation: /to\r\nX-Hop: raw"
		}
		return "HTTP/1.1 200 Fine, Thanks"
	})
	c := s.open(t, humushttp.Settings{BaseURL: base, MaxAttempts: 1})
	resp := getClosed(t, c, base+"/from")
	if resp.Status != "200 Fine, Thanks" || len(resp.Redirects) != 1 {
		t.Fatalf("got %q after %+v, want \"200 Fine, Thanks\" after one redirect", resp.Status, resp.Redirects)
	}
	if hop := resp.Redirects[0]; hop.Status != "302 Look Over There" || hop.StatusCode != 302 ||
		hop.URL != base+"/from" || hop.Proto != "HTTP/1.1" || hop.Header.Get("X-Hop") != "raw" {
		t.Fatalf("hop %+v, want the 302 \"Look Over There\" of /from with X-Hop raw", hop)
	}
}

// A header the client would add is left out by a name with no values (Header["Accept"] = nil), and the
// User-Agent by an empty one as net/http's client does: none of them reaches the server, over HTTP/1.1 and
// HTTP/2, through Do and through *http.Client. Without them, each is sent.
func TestHeadersLeftOut(t *testing.T) {
	s := server(t)
	for _, listener := range []string{"https_h1", "https"} {
		t.Run(listener, func(t *testing.T) {
			settings := s.settings(listener)
			settings.Headers = map[string]string{"X-Team": "checkout"}
			c := s.open(t, settings)
			hc := c.HTTPClient()
			send := func(how string, header http.Header) record {
				t.Helper()
				path := uniquePath()
				req, _ := http.NewRequest("GET", s.url(listener, path), nil)
				req.Header = header
				var resp *http.Response
				if how == "Do" {
					r, err := c.Do(req)
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					resp = r.Response
				} else {
					r, err := hc.Do(req)
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					resp = r
				}
				resp.Body.Close()
				got := s.requests(t, path)
				if len(got) != 1 {
					t.Fatalf("%s: the server received %d requests, want 1", how, len(got))
				}
				return got[0]
			}
			for _, how := range []string{"Do", "*http.Client"} {
				plain := send(how, http.Header{})
				for _, name := range []string{"User-Agent", "Accept", "Accept-Encoding", "X-Team"} {
					if _, ok := plain.header(name); !ok {
						t.Fatalf("%s: a plain request sent no %s (%v): nothing to leave out", how, name, plain.Headers)
					}
				}
				left := send(how, http.Header{"User-Agent": {""}, "Accept": nil, "Accept-Encoding": nil, "X-Team": nil,
					"X-Mine": {"kept"}})
				for _, name := range []string{"User-Agent", "Accept", "Accept-Encoding", "X-Team"} {
					if v, ok := left.header(name); ok {
						t.Errorf("%s: %s: %q sent, want none", how, name, v)
					}
				}
				if v, _ := left.header("X-Mine"); v != "kept" {
					t.Errorf("%s: X-Mine %q, want \"kept\"", how, v)
				}
				// A nil User-Agent too; and of several, net/http sends the first.
				if v, ok := send(how, http.Header{"User-Agent": nil}).header("User-Agent"); ok {
					t.Errorf("%s: a nil User-Agent sent %q", how, v)
				}
				if v, _ := send(how, http.Header{"User-Agent": {"sdk/2", "other/1"}}).header("User-Agent"); v != "sdk/2" {
					t.Errorf("%s: User-Agent sdk/2, other/1 sent %q, want \"sdk/2\"", how, v)
				}
				// An empty value of another header is sent empty, as net/http sends it.
				if v, ok := send(how, http.Header{"Accept": {""}}).header("Accept"); !ok || v != "" {
					t.Errorf("%s: Accept \"\": sent %q (%v), want an empty Accept", how, v, ok)
				}
			}
		})
	}
}

// A header the client owns cannot be left out, as it cannot be set: ErrInvalidArgument naming it, nothing
// sent.
func TestHeaderLeftOutTheClientOwns(t *testing.T) {
	s := server(t)
	c := s.open(t, s.settings("http"))
	path := uniquePath()
	req, _ := http.NewRequest("GET", s.url("http", path), nil)
	req.Header["Content-Length"] = nil
	_, err := c.Do(req)
	var he *humushttp.Error
	if !errors.Is(err, humushttp.ErrInvalidArgument) || !errors.As(err, &he) ||
		!slices.ContainsFunc(he.Fields, func(f string) bool { return strings.EqualFold(f, "Content-Length") }) {
		t.Fatalf("err = %v, want ErrInvalidArgument naming Content-Length", err)
	}
	if n := len(s.requests(t, path)); n != 0 {
		t.Fatalf("the server received %d requests, want none", n)
	}
}
