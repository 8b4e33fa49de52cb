package humushttp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// TestMain stops the shared test server after every test has run, then checks that nothing native leaked:
// every client, response and handle the tests made was freed (by Close, or by a cleanup once unreachable).
func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" { // this binary re-executed as the benchmark's server
		benchServerMain()
	}
	code := m.Run()
	stopSharedServer()
	if code == 0 {
		if left, ok := settle(func(l humushttp.LiveCounts) bool {
			return l.Clients == 0 && l.Responses == 0 && l.Handles == 0 && l.Upstreams == 0 && l.Runtimes <= 1 // the default runtime
		}); !ok {
			fmt.Fprintf(os.Stderr, "leak: native objects still held after every test: %+v\n", left)
			code = 1
		}
	}
	os.Exit(code)
}

// settle runs the garbage collector until done holds for the live counts (cleanups run asynchronously),
// for at most 5 s.
func settle(done func(humushttp.LiveCounts) bool) (humushttp.LiveCounts, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		l := humushttp.Live()
		if done(l) {
			return l, true
		}
		if time.Now().After(deadline) {
			return l, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// repoRoot is the repository's root: this package lives in bindings/go/humushttp.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
