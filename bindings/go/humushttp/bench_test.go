package humushttp_test

// BenchmarkHumusVsNetHTTP: sequential GETs on one keep-alive connection to a plain net/http server on
// loopback, through the humus client (its *http.Client, and Client.Do) and through net/http's own client.
// The server is this test binary re-executed in a process of its own (pinned to CPU 1 when taskset is
// there), so the client's CPU time — read with getrusage, every thread of the process included, the core's
// event loop too — is the client's alone. Measure pinned to one CPU:
//
//	taskset -c 0 go test -run '^$' -bench HumusVsNetHTTP -benchtime 5s
//
// The server inherits the benchmark's CPU (client and server then share one, as bench/run_engine_bench.sh
// does: a request hopping between cores costs more than it measures); HUMUSHTTP_BENCH_SERVER_CPU=N pins it
// elsewhere, and HUMUSHTTP_BENCH_URL=http://127.0.0.1:PORT uses a server already running (nginx, say) for
// GET /. It reports req/s and CPU µs per request per client, then the ratios. It never fails on speed.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

const benchServerEnv = "HUMUSHTTP_BENCH_SERVER"

var benchBody = []byte(strings.Repeat("x", 64))

// benchServerMain serves GET / with a 64-byte body until stdin closes. It runs in the child process.
func benchServerMain() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(benchBody)
	}))
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

type benchServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

func startBenchServer(b *testing.B) *benchServer {
	if url := os.Getenv("HUMUSHTTP_BENCH_URL"); url != "" {
		return &benchServer{url: strings.TrimSuffix(url, "/")}
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{exe}
	if cpu := os.Getenv("HUMUSHTTP_BENCH_SERVER_CPU"); cpu != "" {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			b.Fatalf("HUMUSHTTP_BENCH_SERVER_CPU needs taskset: %v", err)
		}
		args = append([]string{taskset, "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		stdin.Close()
		cmd.Wait()
		b.Fatalf("bench server: %q %v %v", line, err, perr)
	}
	return &benchServer{cmd: cmd, stdin: stdin, url: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

func (s *benchServer) stop() {
	if s.cmd != nil {
		s.stdin.Close()
		s.cmd.Wait()
	}
}

// cpuTime is the user+system time of every thread of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type benchResult struct {
	reqPerSec float64
	cpuPerReq time.Duration
}

// measure runs get b.N times after a warm-up and reports the rate and the CPU per request.
func measure(b *testing.B, get func() error, out *benchResult) {
	for i := 0; i < 200; i++ {
		if err := get(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, wall0 := cpuTime(), time.Now()
	for i := 0; i < b.N; i++ {
		if err := get(); err != nil {
			b.Fatal(err)
		}
	}
	wall, cpu := time.Since(wall0), cpuTime()-cpu0
	b.StopTimer()
	out.reqPerSec = float64(b.N) / wall.Seconds()
	out.cpuPerReq = cpu / time.Duration(b.N)
	b.ReportMetric(out.reqPerSec, "req/s")
	b.ReportMetric(float64(out.cpuPerReq.Nanoseconds())/1e3, "cpu-µs/req")
}

// fetch does one GET and reads the whole body, as a caller would.
func fetch(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && (resp.StatusCode != 200 || n == 0) {
		err = fmt.Errorf("got %d with %d bytes", resp.StatusCode, n)
	}
	return err
}

func BenchmarkHumusVsNetHTTP(b *testing.B) {
	srv := startBenchServer(b)
	defer srv.stop()
	url := srv.url + "/"

	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	client, err := humushttp.Open(humushttp.Settings{BaseURL: srv.url}, humushttp.WithRuntime(rt))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	humusHTTP := client.HTTPClient()
	netHTTP := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	defer netHTTP.CloseIdleConnections()

	var humus, humusDo, humusStart, humusStartBuffered, std benchResult
	b.Run("humus", func(b *testing.B) { measure(b, func() error { return fetch(humusHTTP, url) }, &humus) })
	b.Run("humus_do", func(b *testing.B) {
		measure(b, func() error {
			req, _ := http.NewRequest("GET", url, nil)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}, &humusDo)
	})
	// Start streams as Do does, on a goroutine of the call's own; with BufferBody it completes on the event
	// loop and wakes the goroutine from there: the concurrent path, measured here one call at a time to show
	// what those handoffs cost.
	for _, start := range []struct {
		name string
		opts []humushttp.CallOption
		res  *benchResult
	}{{"humus_start", nil, &humusStart}, {"humus_start_buffered", []humushttp.CallOption{humushttp.BufferBody()}, &humusStartBuffered}} {
		b.Run(start.name, func(b *testing.B) {
			measure(b, func() error {
				req, _ := http.NewRequest("GET", url, nil)
				call, err := client.Start(req, nil, start.opts...)
				if err != nil {
					return err
				}
				resp, err := call.Wait()
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				return resp.Body.Close()
			}, start.res)
		})
	}
	b.Run("net_http", func(b *testing.B) { measure(b, func() error { return fetch(netHTTP, url) }, &std) })
	if std.reqPerSec > 0 {
		for _, r := range []struct {
			name string
			res  benchResult
		}{{"humus *http.Client", humus}, {"humus Client.Do   ", humusDo}, {"humus Client.Start", humusStart},
			{"humus Start+BufferBody", humusStartBuffered}} {
			fmt.Printf("%s: %.2fx net/http's req/s (%.0f vs %.0f), %.2fx its CPU per request (%v vs %v)\n",
				r.name, r.res.reqPerSec/std.reqPerSec, r.res.reqPerSec, std.reqPerSec,
				float64(r.res.cpuPerReq)/float64(std.cpuPerReq), r.res.cpuPerReq, std.cpuPerReq)
		}
	}
}
