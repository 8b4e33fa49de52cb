package humushttp_test

// The project's test server (tests/server/humus_test_server.py: real loopback sockets, TLS, HTTP/1.1 and
// HTTP/2, scripted faults), started once for the package as tests/server/README.md says: a stdin pipe that
// stops it at EOF (so it dies with this process), the ready line read within 10 s, stdin closed at the end
// and the process killed if it has not stopped 2 s later.

import (
	"bufio"
	"bytes"
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
	"sync"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

type testServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	certs string
	ready map[string]any
	rt    *humushttp.Runtime // resolves payments:PORT of every TLS listener to 127.0.0.1
}

var shared struct {
	once   sync.Once
	server *testServer
	err    error
}

// tlsListeners are reached as https://payments:PORT (the certificates' name).
var tlsListeners = []string{"https", "https_h1", "mtls", "cn_only", "untrusted"}

// server is the package's test server, started on first use.
func server(t *testing.T) *testServer {
	t.Helper()
	shared.once.Do(func() { shared.server, shared.err = startServer() })
	if shared.err != nil {
		t.Fatalf("test server: %v", shared.err)
	}
	return shared.server
}

func startServer() (*testServer, error) {
	certs, err := os.MkdirTemp("", "humus-go-certs-")
	if err != nil {
		return nil, err
	}
	python := os.Getenv("HUMUS_PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, filepath.Join(repoRoot(), "tests", "server", "humus_test_server.py"), "--certs", certs)
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
		io.Copy(io.Discard, stdout) // nothing more is printed; keep the pipe drained anyway
	}()
	select {
	case b := <-line:
		if err := json.Unmarshal(b, &s.ready); err != nil {
			s.stop()
			return nil, fmt.Errorf("humus_test_server did not become ready (is `pip install -r tests/server/requirements.txt` done?): %q", b)
		}
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, fmt.Errorf("humus_test_server printed no ready line within 10 s")
	}
	resolve := map[string]string{}
	for _, name := range tlsListeners {
		if port := s.port(name); port != 0 {
			resolve[fmt.Sprintf("payments:%d", port)] = fmt.Sprintf("127.0.0.1:%d", port)
		}
	}
	// scripts/test-go.sh runs the suite twice: the loop on its own thread, then on the netpoller.
	netpoller := os.Getenv("HUMUSGO_TEST_LOOP") == "netpoller"
	if s.rt, err = humushttp.NewRuntime(humushttp.RuntimeOptions{Resolve: resolve, LoopOnNetpoller: netpoller}); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func stopSharedServer() {
	if shared.server != nil {
		shared.server.rt.Close()
		shared.server.stop()
	}
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

func (s *testServer) port(listener string) int {
	n, _ := s.ready[listener].(float64)
	return int(n)
}

// url is the URL a client uses for the listener: plain http by IP, TLS by the certificate's name.
func (s *testServer) url(listener, path string) string {
	if listener == "http" {
		return fmt.Sprintf("http://127.0.0.1:%d%s", s.port(listener), path)
	}
	return fmt.Sprintf("https://payments:%d%s", s.port(listener), path)
}

func (s *testServer) caFile() string { return filepath.Join(s.certs, "ca.pem") }

// script makes each request to path consume the next step (tests/server/README.md lists the fields).
func (s *testServer) script(t *testing.T, path string, steps ...map[string]any) {
	t.Helper()
	s.control(t, "POST", "/_control/script", map[string]any{"path": path, "steps": steps}, nil)
}

// record is what the server received for one request.
type record struct {
	Method     string     `json:"method"`
	Path       string     `json:"path"`
	Headers    [][]string `json:"headers"`
	BodySize   int        `json:"body_size"`
	Protocol   string     `json:"protocol"`
	ClientCert *string    `json:"client_cert"`
	Connection int        `json:"connection"`
}

func (r record) header(name string) (string, bool) {
	for _, h := range r.Headers {
		if len(h) == 2 && http.CanonicalHeaderKey(h[0]) == http.CanonicalHeaderKey(name) {
			return h[1], true
		}
	}
	return "", false
}

func (s *testServer) requests(t *testing.T, path string) []record {
	t.Helper()
	var out []record
	s.control(t, "GET", "/_control/requests?path="+url.QueryEscape(path), nil, &out)
	return out
}

// controlClient keeps no connection open, so none is left for the server to cut when it stops.
var controlClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// control calls the server's control API over the plain listener with net/http (the harness, not the client
// under test).
func (s *testServer) control(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		reader = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", s.port("http"), path), reader)
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

// uniquePath is a path of the test's own: scripts and records are per path on the shared server.
func uniquePath() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "/t/" + hex.EncodeToString(b)
}

// fast settings for a listener: quick retries, the test CA for TLS listeners.
func (s *testServer) settings(listener string) humushttp.Settings {
	settings := humushttp.Settings{
		BaseURL:     s.url(listener, ""),
		BackoffBase: 5 * time.Millisecond,
		BackoffMax:  10 * time.Millisecond,
	}
	if listener != "http" {
		settings.TLS = &humushttp.TLSSettings{CAFile: s.caFile()}
	}
	return settings
}

// open builds a client on the server's runtime and closes it when the test ends.
func (s *testServer) open(t *testing.T, settings humushttp.Settings, opts ...humushttp.Option) *humushttp.Client {
	t.Helper()
	c, err := humushttp.Open(settings, append([]humushttp.Option{humushttp.WithRuntime(s.rt)}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%+v): %v", settings, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
