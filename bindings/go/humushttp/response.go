package humushttp

/*
#include <string.h>
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Response is a call's response: a standard *http.Response (status, every header, the body, Request.URL
// the URL of the last request after the redirects the core followed) plus what net/http has no field for.
//
// Status is net/http's: over HTTP/1.x the status line's code and reason phrase as the server sent them
// ("200 OK", "404 Not Found", "299 Fine, Thanks"; humus_response_reason, its first 256 bytes, each control
// byte a space). HTTP/2 has no reason phrase, so there it is what net/http's HTTP/2 transport makes: the
// code, a space and http.StatusText ("200 OK"; "599 " for a code StatusText does not know). A response
// whose status line had no phrase (and one of a mock transport, which has no status line) gets the HTTP/2
// form too: the C ABI reads an empty phrase and a missing one alike, where net/http's HTTP/1 reader would
// give "200" or "200 ".
//
// The Body of a blocking call (Client.Do, and so *http.Client) streams from its connection: each Read is
// one humus_response_read into the caller's buffer, so memory stays at that buffer whatever the body's
// size. The call is not over until the body is read to io.EOF or closed: that is when the breaker counts its
// result (a body closed early counts as it was classified; a read failing mid-body is a breaker failure,
// docs/bodies.md §7), and until then the call holds its bulkhead slot, its connection and a reference to
// its Client (Client.Close waits for it). So, as with net/http, the caller must close the Body. A Body
// dropped unclosed is closed by a cleanup once the garbage collector finds it, and a half-open breaker's
// probe slot is given back after breaker.probe_timeout at the latest, but the slot and connection are held
// until then.
//
// The Body of an asynchronous call (Client.Start) streams the same way; with BufferBody (and on a
// virtual-clock runtime) it was read whole by the core before the call completed, and Body reads that
// buffer in place.
//
// A Response is not safe for concurrent use, except that Body.Close may race Body.Read: a Close while a
// Read waits for bytes cancels that read (its result is then not counted, as for a cancelled call) and
// returns once the Read has returned.
type Response struct {
	*http.Response
	Attempts int // attempts the call made, every redirect's included
	// Redirects are the redirects the core followed within the origin, oldest first (docs/origin.md §2).
	// None with FollowRedirects(false), and none through *http.Client, where net/http follows them (its
	// CheckRedirect's via chain).
	Redirects []Redirect
}

// Redirect is one redirect the core followed (Response.Redirects): the URL of the request that got it and
// the head of its 3xx response, as Response has them — StatusCode, Status with the reason phrase as sent
// (the rule of Response.Status), the protocol, and every header in the order received (Location among
// them), names canonicalised; no body. A plain value, the caller's to keep.
type Redirect struct {
	StatusCode int
	URL        string
	Status     string // e.g. "302 Found"
	Proto      string // "HTTP/1.1" or "HTTP/2.0"
	ProtoMajor int
	ProtoMinor int
	Header     http.Header
}

// newResponse takes ownership of resp, a buffered response (humus_client_do, humus_client_submit); sentURL
// is the URL the request was made with; traced says the call keeps its trace (RecordTrace).
func newResponse(resp *C.humus_response, req *http.Request, sentURL string, traced bool) *Response {
	live.responses.Add(1)
	r, info := responseHead(resp, req, sentURL, true)
	out := r.Response
	keepResponseTrace(traced, out, resp)
	if info.body_len == 0 {
		out.Body = http.NoBody
		out.ContentLength = contentLength(req, out.Header, 0)
		freeResponse(resp)
	} else {
		b := &body{native: resp, data: unsafe.Slice((*byte)(info.body), int(info.body_len))}
		b.cleanup = runtime.AddCleanup(b, freeResponse, resp)
		out.Body = b
		out.ContentLength = int64(info.body_len)
	}
	return r
}

// responseHead is everything of a response but its body: status, protocol, headers, the final URL, the
// attempts and the redirects followed.
func responseHead(resp *C.humus_response, req *http.Request, sentURL string, withBody bool) (*Response,
	C.humusgo_response_info) {
	var info C.humusgo_response_info
	C.humusgo_response_read(resp, &info, cbool(withBody))

	header := readHeaders(resp, int(info.header_count))

	out := &http.Response{
		StatusCode: int(info.status),
		Status:     statusText(int(info.status), info.reason),
		Header:     header,
		Request:    req,
	}
	out.Proto, out.ProtoMajor, out.ProtoMinor = proto(info.http_version)
	if final := view(info.url); req != nil && final != "" && final != sentURL { // redirected within the origin
		if u, err := url.Parse(strings.Clone(final)); err == nil {
			moved := new(http.Request)
			*moved = *req
			moved.URL = u
			out.Request = moved
		}
	}
	return &Response{Response: out, Attempts: int(info.attempts), Redirects: readRedirects(resp, int(info.redirect_count))},
		info
}

// proto is net/http's Proto, ProtoMajor and ProtoMinor for the C ABI's HTTP version ("1.1" or "2").
func proto(version *C.char) (string, int, int) {
	if view(version) == "2" {
		return "HTTP/2.0", 2, 0
	}
	return "HTTP/1.1", 1, 1
}

// readRedirects copies the redirects the core followed, each hop's head with it: two crossings a hop (its
// scalars, its headers); nil when there were none.
func readRedirects(resp *C.humus_response, n int) []Redirect {
	if n == 0 {
		return nil
	}
	out := make([]Redirect, 0, n)
	for i := range n {
		var info C.humusgo_redirect_info
		C.humusgo_redirect_read(resp, C.size_t(i), &info)
		if info.status == 0 { // out of range: cannot happen below the count the response gave
			continue
		}
		hop := Redirect{StatusCode: int(info.status), URL: C.GoString(info.url),
			Status: statusText(int(info.status), info.reason)}
		hop.Proto, hop.ProtoMajor, hop.ProtoMinor = proto(info.http_version)
		var raw []C.humusgo_header
		if m := int(info.header_count); m > 0 {
			raw = make([]C.humusgo_header, m)
			C.humusgo_redirect_headers(resp, C.size_t(i), &raw[0], C.size_t(m))
		}
		hop.Header = copyHeaders(raw)
		out = append(out, hop)
	}
	return out
}

// readHeaders copies every header of the response into an http.Header.
func readHeaders(resp *C.humus_response, n int) http.Header {
	if n == 0 {
		return make(http.Header)
	}
	raw := make([]C.humusgo_header, n)
	C.humusgo_response_headers(resp, &raw[0], C.size_t(n))
	return copyHeaders(raw)
}

// copyHeaders copies borrowed headers into an http.Header (names canonicalised, repeated names in order)
// with two allocations for all the text and all the values rather than a few per header.
func copyHeaders(raw []C.humusgo_header) http.Header {
	n := len(raw)
	header := make(http.Header, n)
	if n == 0 {
		return header
	}
	total := 0
	for _, h := range raw {
		total += int(h.name_len) + int(h.value_len)
	}
	buf := make([]byte, 0, total)
	for _, h := range raw {
		buf = append(buf, unsafe.Slice((*byte)(unsafe.Pointer(h.name)), int(h.name_len))...)
		buf = append(buf, unsafe.Slice((*byte)(unsafe.Pointer(h.value)), int(h.value_len))...)
	}
	text := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is never written again
	values := make([]string, n)
	at := 0
	for i, h := range raw {
		name := text[at : at+int(h.name_len)]
		at += int(h.name_len)
		values[i] = text[at : at+int(h.value_len)]
		at += int(h.value_len)
		key := textproto.CanonicalMIMEHeaderKey(name)
		if prev, ok := header[key]; ok {
			header[key] = append(prev, values[i])
		} else {
			header[key] = values[i : i+1 : i+1] // shares the backing array; an append copies
		}
	}
	return header
}

// contentLength is what net/http would report: the body's length, or for a HEAD the Content-Length the
// server announced (-1 when none).
func contentLength(req *http.Request, header http.Header, n int64) int64 {
	if req != nil && req.Method == http.MethodHead {
		if v, err := strconv.ParseInt(header.Get("Content-Length"), 10, 64); err == nil {
			return v
		}
		return -1
	}
	return n
}

// statusLines are net/http's HTTP/2 Status for each code, "200 OK" and the like (code, space, StatusText),
// made once rather than per response.
var statusLines = func() (lines [600]string) {
	for code := range lines {
		lines[code] = strconv.Itoa(code) + " " + http.StatusText(code)
	}
	return lines
}()

// statusText is Response.Status: the code and the reason phrase the server sent, or net/http's HTTP/2 form
// when it sent none (HTTP/2 never does). The phrase is copied (it lives in the C response) unless it is
// StatusText's, the usual case, whose line is made already.
func statusText(code int, reason *C.char) string {
	phrase := view(reason)
	known := code >= 0 && code < len(statusLines)
	if phrase == "" || known && phrase == http.StatusText(code) {
		if known {
			return statusLines[code]
		}
		return strconv.Itoa(code) + " " + http.StatusText(code)
	}
	return strconv.Itoa(code) + " " + phrase // the concatenation copies the phrase
}

// view is a C string as a Go string without copying: only for comparing or copying while the C memory lives.
func view(s *C.char) string {
	if s == nil {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(s)), int(C.strlen(s)))
}

func freeResponse(resp *C.humus_response) {
	C.humus_response_free(resp)
	live.responses.Add(-1)
}

// body reads the core's buffer in place: data aliases the C response's memory, valid until native is freed.
type body struct {
	mu      sync.Mutex
	native  *C.humus_response // nil once freed
	data    []byte
	off     int
	closed  bool
	cleanup runtime.Cleanup // frees native if the body is dropped unclosed
}

var (
	errBodyClosed     = errors.New("humushttp: read on closed response body")
	errConcurrentRead = errors.New("humushttp: concurrent Read on one response body")
)

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	if b.off == len(b.data) {
		b.free() // read to the end: nothing more to keep
		return n, io.EOF
	}
	return n, nil
}

// WriteTo hands the rest of the buffer to w in one Write (io.Copy uses it), then frees it.
func (b *body) WriteTo(w io.Writer) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	if b.off >= len(b.data) {
		return 0, nil
	}
	n, err := w.Write(b.data[b.off:])
	b.off += n
	if b.off == len(b.data) {
		b.free()
	}
	return int64(n), err
}

func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.free()
	return nil
}

// free releases the C response; b.mu is held. Afterwards Read reports EOF (or, once closed, errBodyClosed).
func (b *body) free() {
	if b.native == nil {
		return
	}
	b.cleanup.Stop()
	freeResponse(b.native)
	b.native = nil
	b.data, b.off = nil, 0
}
