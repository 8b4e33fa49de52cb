//go:build !cgo

package humushttp

// Without cgo this package is this one declaration, so `CGO_ENABLED=0 go build` stops on the sentence below
// rather than on every identifier the cgo files define ("undefined: Status").
var _ int = "humushttp needs cgo and libhumus_http: build with CGO_ENABLED=1 and a C compiler, with pkg-config finding humus_http.pc (see bindings/go/README.md)"
