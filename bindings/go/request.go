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
// (the library copies it, so every attempt can replay it), the per-call options and the cancel token. One
// cgo crossing does it all. It also returns the URL as sent (to tell a redirected response).
func nativeRequest(req *http.Request, body []byte, o *callOptions, timeoutMs int64, hasTimeout bool,
	cancel *C.humus_cancel) (*C.humus_request, string, error) {
	if req.URL == nil {
		return nil, "", &Error{Status: StatusInvalidArgument, Message: "url: the request has no URL", Fields: []string{"url"}}
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	target := req.URL.String()
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
		for _, value := range req.Header[name] {
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
	var native *C.humus_request
	var cerr *C.humus_error
	st := C.humusgo_request_new((*C.char)(unsafe.Pointer(&p.buf[0])), (*C.uint32_t)(unsafe.Pointer(&p.offsets[0])),
		C.size_t(headers), cbool(hasContext), cbytes(body), C.size_t(len(body)), C.int32_t(o.retry),
		cbool(hasTimeout), C.int64_t(timeoutMs), cancel, &native, &cerr)
	if st != C.HUMUS_OK {
		return nil, "", takeError(st, cerr)
	}
	return native, target, nil
}

// refuseNUL is ErrInvalidArgument naming field when s holds a NUL byte (never quoting s: it may be a
// credential).
func refuseNUL(field, s string) error {
	if strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return &Error{Status: StatusInvalidArgument, Fields: []string{field},
		Message: field + ": the value contains a NUL byte (header injection)"}
}

// readBody reads and closes the request body: the core needs it whole to replay it on a retry.
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
