package humushttp

/*
#include <humus_http.h>
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"unsafe"
)

// nativeRequest builds the library's request for one call: the method, the URL, every header value, the body
// (bytes the library copies, or a stream it reads), the per-call options and the cancel token. One cgo
// crossing does it all, and one more installs a streamed body. It also returns the URL as sent (to tell a
// redirected response). It takes charge of body: on failure it is closed here, on success the request's.
func nativeRequest(req *http.Request, body requestBody, o *callOptions, timeoutMs int64, hasTimeout bool,
	cancel *C.humus_cancel) (native *C.humus_request, target string, err error) {
	defer func() {
		if err != nil {
			body.discard()
		}
	}()
	if req.URL == nil {
		return nil, "", &Error{Status: StatusInvalidArgument, Message: "url: the request has no URL", Fields: []string{"url"}}
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	target = req.URL.String()
	// The strings cross as C strings: a NUL would silently cut one short (a header "a\x00b" sent as "a", a
	// name "X\x00Y" as "X"), so each is refused here, as the core refuses CR and LF.
	if err := refuseNUL("method", method); err != nil {
		return nil, "", err
	}
	if err := refuseNUL("url", target); err != nil {
		return nil, "", err
	}
	if o.hasKey {
		if err := refuseNUL("Idempotency-Key", o.idempotencyKey); err != nil {
			return nil, "", err
		}
	}
	if cc := o.context; cc != nil {
		for _, part := range [][2]string{{"traceparent", cc.Traceparent}, {"tracestate", cc.Tracestate},
			{"baggage", cc.Baggage}, {"X-Request-ID", cc.RequestID}, {"Authorization", cc.Authorization}} {
			if err := refuseNUL(part[0], part[1]); err != nil {
				return nil, "", err
			}
		}
	}
	var p cstrings
	p.add(method)
	p.add(target)
	if o.hasKey {
		p.add(o.idempotencyKey)
	} else {
		p.none()
	}
	hasContext := o.context != nil
	if hasContext {
		cc := o.context
		for _, part := range []string{cc.Traceparent, cc.Tracestate, cc.Baggage, cc.RequestID, cc.Authorization} {
			p.optional(part)
		}
	} else {
		for range 5 {
			p.none()
		}
	}
	names := make([]string, 0, len(req.Header))
	for name := range req.Header {
		if name != "Host" { // as net/http: the host comes from the URL
			names = append(names, name)
		}
	}
	sort.Strings(names)
	headers := 0
	for _, name := range names {
		if strings.IndexByte(name, 0) >= 0 {
			return nil, "", &Error{Status: StatusInvalidArgument, Fields: []string{name},
				Message: fmt.Sprintf("header name %q contains a NUL byte", name)}
		}
		values := req.Header[name]
		if leftOut(name, values) {
			p.add(name)
			p.none() // humus_request_remove_header
			headers++
			continue
		}
		if isUserAgent(name) {
			values = values[:1] // net/http sends one User-Agent, the first
		}
		for _, value := range values {
			if err := refuseNUL(name, value); err != nil {
				return nil, "", err
			}
			p.add(name)
			p.add(value)
			headers++
		}
	}
	// A Host override goes to the core as the header it is, and the core refuses it with every other header
	// the client owns (docs/transport.md §10.5): one rule for every language.
	if req.Host != "" && req.Host != req.URL.Host {
		p.add("Host")
		p.add(req.Host)
		headers++
	}
	var cerr *C.humus_error
	st := C.humusgo_request_new((*C.char)(unsafe.Pointer(&p.buf[0])), (*C.uint32_t)(unsafe.Pointer(&p.offsets[0])),
		C.size_t(headers), cbool(hasContext), cbytes(body.data), C.size_t(len(body.data)), C.int32_t(o.retry),
		cbool(hasTimeout), C.int64_t(timeoutMs), C.int32_t(o.follow), cancel, &native, &cerr)
	if st != C.HUMUS_OK {
		return nil, "", takeError(st, cerr)
	}
	if body.reader != nil {
		h := newHandle(body.reader)
		var cerr *C.humus_error
		replayable := cbool(body.reader.getBody != nil)
		if st := C.humusgo_set_body_reader(native, C.uintptr_t(h), C.int64_t(body.length), replayable, &cerr); st != C.HUMUS_OK {
			deleteHandle(h) // refused: the library did not take it
			C.humus_request_free(native)
			return nil, "", takeError(st, cerr)
		}
	}
	return native, target, nil
}

// leftOut says whether a request header is one the call must not send, not even the one the client would
// add (humus_request_remove_header), following net/http's conventions: a name present with no values
// (Header["Accept"] = nil, as net/http's server and ReverseProxy leave out the headers they would add), and
// a User-Agent whose first value is "" (net/http's client then sends none).
func leftOut(name string, values []string) bool {
	return len(values) == 0 || values[0] == "" && isUserAgent(name)
}

func isUserAgent(name string) bool { return len(name) == 10 && strings.EqualFold(name, "User-Agent") }

// refuseNUL is ErrInvalidArgument naming field when s holds a NUL byte (never quoting s: it may be a
// credential).
func refuseNUL(field, s string) error {
	if strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return &Error{Status: StatusInvalidArgument, Fields: []string{field},
		Message: field + ": the value contains a NUL byte (header injection)"}
}

// requestBody is what a call sends: nothing, bytes the library copies (every attempt replays them), or
// req.Body streamed through a body reader.
type requestBody struct {
	data   []byte
	reader *bodyReader
	length int64 // the reader's bytes, -1 when unknown
}

// copiedBodyMax is the largest replayable body (one with GetBody) copied whole rather than streamed: one
// crossing instead of a callback per piece, and the library's copy is what the retries replay anyway.
const copiedBodyMax = 64 << 10

// streamBody is the body of a blocking call, as net/http sends one: req.Body read as the request goes out,
// req.ContentLength its length (0 with a Body: unknown, sent chunked), req.GetBody the way to send it again.
// Without GetBody the body cannot be replayed, so the call makes one attempt whatever its method
// (docs/bodies.md §7). A small body with GetBody is copied instead (copiedBodyMax).
func streamBody(req *http.Request) (requestBody, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return requestBody{}, nil
	}
	if req.GetBody != nil && req.ContentLength > 0 && req.ContentLength <= copiedBodyMax {
		data, err := readBody(req)
		return requestBody{data: data}, err
	}
	length := req.ContentLength
	if length <= 0 {
		length = -1
	}
	return requestBody{reader: &bodyReader{body: req.Body, getBody: req.GetBody}, length: length}, nil
}

// discard closes a body that will not be sent (as http.RoundTripper must close req.Body on every error).
func (b requestBody) discard() {
	if b.reader != nil {
		b.reader.close()
	}
}

// bodyReader is req.Body as the library's body reader reads it: read fills the library's buffer straight
// from the Go reader, rewind takes a fresh body from GetBody (net/http's replay contract), and the library's
// destroy closes it. The library calls one of them at a time, on the thread driving the attempt.
type bodyReader struct {
	body    io.ReadCloser
	getBody func() (io.ReadCloser, error) // nil: not replayable
	end     error                         // io.EOF or a failure the reader returned with its last bytes
}

// read returns at least one byte, or 0 at the end.
func (b *bodyReader) read(buf []byte) (int, error) {
	for b.end == nil {
		n, err := b.body.Read(buf)
		if err != nil {
			b.end = err
		}
		if n > 0 {
			return n, nil // the error, if any, comes with the next read
		}
	}
	if b.end == io.EOF {
		return 0, nil
	}
	return 0, b.end
}

func (b *bodyReader) rewind() error {
	body, err := b.getBody()
	if err != nil {
		return err
	}
	b.body.Close()
	b.body, b.end = body, nil
	return nil
}

func (b *bodyReader) close() { b.body.Close() }

// readBody reads and closes the request body: the core keeps a copy to replay on a retry. A buffered
// asynchronous call (Client.Start with BufferBody, or on a virtual clock) sends its body this way: its
// attempts run on the event loop, which must not wait on a Go reader.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	var body []byte
	var err error
	if req.ContentLength > 0 {
		body = make([]byte, 0, req.ContentLength)
		body, err = readAllInto(body, req.Body)
	} else {
		body, err = io.ReadAll(req.Body)
	}
	if err != nil {
		return nil, &Error{Status: StatusInvalidArgument, Message: "reading the request body: " + err.Error(),
			Fields: []string{"body"}, cause: err}
	}
	return body, nil
}

func readAllInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
