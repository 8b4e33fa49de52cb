package otelhumus_test

// The project's test server (tests/server/humus_test_server.py), started once for the package as
// tests/server/README.md says: a stdin pipe that stops it at EOF, the ready line read within 10 s, stdin
// closed at the end and the process killed if it has not stopped 2 s later. Only its plain listener is used:
// these tests are about the headers it records.

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

type testServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	certs string
	port  int // the plain HTTP/1.1 listener
}

var shared struct {
	once   sync.Once
	server *testServer
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.server != nil {
		shared.server.stop()
	}
	os.Exit(code)
}

func server(t *testing.T) *testServer {
	t.Helper()
	shared.once.Do(func() { shared.server, shared.err = startServer() })
	if shared.err != nil {
		t.Fatalf("test server: %v", shared.err)
	}
	return shared.server
}

func startServer() (*testServer, error) {
	_, file, _, _ := runtime.Caller(0) // bindings/go/otelhumus
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "tests", "server", "humus_test_server.py")
	certs, err := os.MkdirTemp("", "humus-otelgo-certs-")
	if err != nil {
		return nil, err
	}
	python := os.Getenv("HUMUS_PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, script, "--certs", certs)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(certs)
		return nil, fmt.Errorf("%s: %w (is python3 installed?)", python, err)
	}
	s := &testServer{cmd: cmd, stdin: stdin, certs: certs}
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(stdout).ReadBytes('\n')
		line <- b
		io.Copy(io.Discard, stdout)
	}()
	select {
	case b := <-line:
		var ready struct {
			HTTP int `json:"http"`
		}
		if err := json.Unmarshal(b, &ready); err != nil || ready.HTTP == 0 {
			s.stop()
			return nil, fmt.Errorf("humus_test_server did not become ready (is `pip install -r tests/server/requirements.txt` done?): %q", b)
		}
		s.port = ready.HTTP
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, fmt.Errorf("humus_test_server printed no ready line within 10 s")
	}
	return s, nil
}

func (s *testServer) stop() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.certs)
}

func (s *testServer) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.port, path)
}

// open builds a client of the plain listener (on rt; nil: the default runtime), closed when the test ends.
func (s *testServer) open(t *testing.T, rt *humushttp.Runtime) *humushttp.Client {
	t.Helper()
	settings := humushttp.Settings{BaseURL: s.url(""), BackoffBase: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond}
	var opts []humushttp.Option
	if rt != nil {
		opts = append(opts, humushttp.WithRuntime(rt))
	}
	c, err := humushttp.Open(settings, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// record is what the server received for one request.
type record struct {
	Headers [][]string `json:"headers"`
}

func (r record) header(name string) (string, bool) {
	for _, h := range r.Headers {
		if len(h) == 2 && strings.EqualFold(h[0], name) {
			return h[1], true
		}
	}
	return "", false
}

// controlClient is net/http's (the harness, not the client under test), keeping no connection open.
var controlClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func (s *testServer) control(t *testing.T, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url(path), strings.NewReader(body))
	resp, err := controlClient.Do(req)
	if err != nil {
		t.Fatalf("control %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("control %s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("control %s %s: %v in %s", method, path, err, data)
		}
	}
}

// script makes each request to path consume the next step (tests/server/README.md lists the fields).
func (s *testServer) script(t *testing.T, path string, steps ...map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"path": path, "steps": steps})
	s.control(t, "POST", "/_control/script", string(body), nil)
}

func (s *testServer) requests(t *testing.T, path string) []record {
	t.Helper()
	var out []record
	s.control(t, "GET", "/_control/requests?path="+url.QueryEscape(path), "", &out)
	return out
}

// uniquePath is a path of the test's own: scripts and records are per path on the shared server.
func uniquePath() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "/t/" + hex.EncodeToString(b)
}

// onlyRequest is the one request the server received on path; the test fails when it saw none or more.
func (s *testServer) onlyRequest(t *testing.T, path string) record {
	t.Helper()
	received := s.requests(t, path)
	if len(received) != 1 {
		t.Fatalf("%d requests received on %s, want 1", len(received), path)
	}
	return received[0]
}
