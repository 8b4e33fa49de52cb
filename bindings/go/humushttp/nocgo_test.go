package humushttp_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBuildWithoutCgo builds this package as a CGO_ENABLED=0 user would: the build must stop on nocgo.go's
// sentence, not on the identifiers only the cgo files define.
func TestBuildWithoutCgo(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(gocmd, "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("CGO_ENABLED=0 go build succeeded; want it to fail:\n%s", out)
	}
	const sentence = "humushttp needs cgo and libhumus_http: build with CGO_ENABLED=1"
	if !strings.Contains(string(out), sentence) || strings.Contains(string(out), "undefined:") {
		t.Fatalf("CGO_ENABLED=0 go build said:\n%s\nwant the sentence %q and no undefined identifiers", out, sentence)
	}
}
