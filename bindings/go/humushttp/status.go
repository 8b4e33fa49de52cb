package humushttp

/*
#include <humus_http.h>
*/
import "C"

// Status is a humus_status of the C ABI: 0 is OK; numbers are pinned and grouped in ranges (usage 1–99,
// configuration 100–199, resilience verdicts 200–299, transport 300–399, TLS 400–499). Its String is the
// C enumerator's name, e.g. "HUMUS_E_TIMEOUT". A plain value: safe for concurrent use.
type Status int32

// The statuses of include/humus_http.h. Each non-OK one has a sentinel error below.
const (
	StatusOK              Status = C.HUMUS_OK
	StatusInvalidArgument Status = C.HUMUS_E_INVALID_ARGUMENT
	StatusMisuse          Status = C.HUMUS_E_MISUSE
	StatusProgram         Status = C.HUMUS_E_PROGRAM
	StatusCrossOrigin     Status = C.HUMUS_E_CROSS_ORIGIN
	StatusNoMemory        Status = C.HUMUS_E_NO_MEMORY
	StatusInternal        Status = C.HUMUS_E_INTERNAL
	StatusCallback        Status = C.HUMUS_E_CALLBACK
	StatusConfig          Status = C.HUMUS_E_CONFIG
	StatusRejected        Status = C.HUMUS_E_REJECTED
	StatusBulkheadFull    Status = C.HUMUS_E_BULKHEAD_FULL
	StatusTimeout         Status = C.HUMUS_E_TIMEOUT
	StatusCancelled       Status = C.HUMUS_E_CANCELLED
	StatusConnect         Status = C.HUMUS_E_CONNECT
	StatusResolve         Status = C.HUMUS_E_RESOLVE
	StatusConnectionLost  Status = C.HUMUS_E_CONNECTION_LOST
	StatusProtocol        Status = C.HUMUS_E_PROTOCOL
	StatusStreamRefused   Status = C.HUMUS_E_STREAM_REFUSED
	StatusTooLarge        Status = C.HUMUS_E_TOO_LARGE
	StatusResource        Status = C.HUMUS_E_RESOURCE
	StatusTLS             Status = C.HUMUS_E_TLS
	StatusTLSClientCert   Status = C.HUMUS_E_TLS_CLIENT_CERT
)

// String is the C name of the status ("HUMUS_E_UNKNOWN" for a number the loaded library does not know).
func (s Status) String() string { return C.GoString(C.humus_status_name(C.humus_status(s))) }

// StatusByName is the status whose String is name ("HUMUS_E_CONNECT"), asking the loaded library; false
// when no status has that name. Safe for concurrent use.
func StatusByName(name string) (Status, bool) {
	for s := Status(0); s < 1000; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// A sentinel stands for every *Error of one status: errors.Is(err, ErrTimeout) holds for an *Error whose
// Status is StatusTimeout, also through *url.Error and other wrappers.
type sentinel struct{ status Status }

// Error is "humushttp: HUMUS_E_...".
func (s *sentinel) Error() string { return "humushttp: " + s.status.String() }

// The sentinel errors, one per status of the C ABI. Match them with errors.Is; read the detail with
// errors.As(err, &humusErr) (*Error). Safe for concurrent use.
var (
	ErrInvalidArgument error = &sentinel{StatusInvalidArgument} // a bad method, URL or header (CR/LF/NUL)
	ErrMisuse          error = &sentinel{StatusMisuse}          // a call in the wrong state: closed client, real clock advanced, blocking call in a callback
	ErrProgram         error = &sentinel{StatusProgram}         // a fault in code: a nil callback, an invalid classification
	ErrCrossOrigin     error = &sentinel{StatusCrossOrigin}     // a request to another origin than the client's base_url
	ErrNoMemory        error = &sentinel{StatusNoMemory}        // the library could not allocate
	ErrInternal        error = &sentinel{StatusInternal}        // a bug in humus_http; the message says where
	ErrCallback        error = &sentinel{StatusCallback}        // a Go callback returned an error or panicked (see CallbackError)
	ErrConfig          error = &sentinel{StatusConfig}          // invalid settings or runtime options; Error.Fields names every bad key
	ErrRejected        error = &sentinel{StatusRejected}        // the circuit breaker is open: nothing was sent; Error.RetryAfter
	ErrBulkheadFull    error = &sentinel{StatusBulkheadFull}    // no bulkhead slot within bulkhead.wait: nothing was sent
	ErrTimeout         error = &sentinel{StatusTimeout}         // the call's deadline passed
	ErrCancelled       error = &sentinel{StatusCancelled}       // the caller cancelled the call (its context, Call.Cancel)
	ErrConnect         error = &sentinel{StatusConnect}         // connection refused or could not be made
	ErrResolve         error = &sentinel{StatusResolve}         // the host name did not resolve
	ErrConnectionLost  error = &sentinel{StatusConnectionLost}  // reset or closed before a full response
	ErrProtocol        error = &sentinel{StatusProtocol}        // the peer broke HTTP
	ErrStreamRefused   error = &sentinel{StatusStreamRefused}   // HTTP/2 stream refused before processing
	ErrTooLarge        error = &sentinel{StatusTooLarge}        // headers or buffered body past the client's limit
	ErrResource        error = &sentinel{StatusResource}        // a local shortage (descriptors, ports), not the dependency
	ErrTLS             error = &sentinel{StatusTLS}             // TLS handshake failed: untrusted certificate, name mismatch, version
	ErrTLSClientCert   error = &sentinel{StatusTLSClientCert}   // the server refused or required a client certificate
)

// Err is the sentinel error of s (nil for StatusOK and for statuses this binding does not know). Safe for
// concurrent use.
func (s Status) Err() error {
	for _, e := range []error{ErrInvalidArgument, ErrMisuse, ErrProgram, ErrCrossOrigin, ErrNoMemory,
		ErrInternal, ErrCallback, ErrConfig, ErrRejected, ErrBulkheadFull, ErrTimeout, ErrCancelled,
		ErrConnect, ErrResolve, ErrConnectionLost, ErrProtocol, ErrStreamRefused, ErrTooLarge, ErrResource, ErrTLS, ErrTLSClientCert} {
		if e.(*sentinel).status == s {
			return e
		}
	}
	return nil
}
