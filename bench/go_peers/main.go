// Command go_peers runs humushttp against what a Go service that wants retries, a breaker and a bulkhead
// picks instead (issue 38), in one process, against one local nginx answering 100 B:
//
//	a  net/http: an http.Transport keeping 128 idle connections per host
//	b  a's transport under failsafe-go's failsafehttp RoundTripper: RetryPolicy (3 attempts, backoff 100 ms
//	   to 2 s, failsafehttp's retryable errors and statuses), CircuitBreaker (5xx and errors are failures),
//	   Bulkhead (50, waiting at most 500 ms)
//	c  a's transport under sony/gobreaker/v2 (one breaker, each attempt through it) inside
//	   hashicorp/go-retryablehttp (3 attempts, backoff 100 ms to 2 s), as its RoundTripper
//	d  humushttp with default settings (retries, breaker, bulkhead of 50 waiting 500 ms): Client.Do
//
// Every call is a GET whose body is read to its end and closed. Each round runs every mode at every
// concurrency (goroutines each making calls back to back), the order reversed every other round, each row
// after a short warm-up of its own. Per row it measures requests/s, CPU µs per request of the whole process
// (getrusage: user + sys, every thread, the C library's included; nginx is another process), Go heap
// allocations (runtime.MemStats.Mallocs: C allocations are not counted), cgo calls (runtime.NumCgoCall)
// and context switches (voluntary + involuntary, getrusage) per request. It prints the medians over rounds,
// then each mode's medians of per-round ratios to (a) and to (b). It never judges the numbers.
//
//	go_peers [--rounds 5] [--seconds 1] [--warmup 0.3] [--conc 1,16,64] [--modes a,b,c,d] [--gomaxprocs 2]
//	         [--url URL]
//
// Without --url it starts nginx itself (the nginx binary on PATH or /usr/sbin/nginx) on a free loopback
// port, with a temporary prefix that it removes at the end. bench/go_peers/run.sh builds it against a
// staged library and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/sony/gobreaker/v2"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

var modeNames = map[string]string{
	"a": "net/http",
	"b": "net/http+failsafe-go",
	"c": "net/http+gobreaker+retryablehttp",
	"d": "humushttp",
}

// caller makes one call; the response's body is the caller's to read and close.
type caller func(ctx context.Context, url string) (*http.Response, error)

func transport() *http.Transport {
	return &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, DisableCompression: false}
}

func viaClient(c *http.Client) caller {
	return func(ctx context.Context, url string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		return c.Do(req)
	}
}

// breakerTransport sends each attempt through one gobreaker: an error or a 5xx is a failure.
type breakerTransport struct {
	cb    *gobreaker.CircuitBreaker[*http.Response]
	inner http.RoundTripper
}

var errServer = errors.New("server error")

func (t *breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	_, err := t.cb.Execute(func() (*http.Response, error) {
		r, err := t.inner.RoundTrip(req)
		resp = r
		if err == nil && r.StatusCode >= 500 {
			return r, errServer
		}
		return r, err
	})
	if errors.Is(err, errServer) {
		return resp, nil
	}
	return resp, err
}

func newCaller(mode, base string) (caller, func(), error) {
	switch mode {
	case "a":
		return viaClient(&http.Client{Transport: transport()}), func() {}, nil
	case "b":
		retry := failsafehttp.NewRetryPolicyBuilder().WithMaxAttempts(3).WithBackoff(100*time.Millisecond, 2*time.Second).Build()
		breaker := circuitbreaker.NewBuilder[*http.Response]().
			HandleIf(func(r *http.Response, err error) bool { return err != nil || r.StatusCode >= 500 }).
			WithFailureThresholdRatio(5, 10).WithDelay(10 * time.Second).Build()
		bh := bulkhead.NewBuilder[*http.Response](50).WithMaxWaitTime(500 * time.Millisecond).Build()
		return viaClient(&http.Client{Transport: failsafehttp.NewRoundTripper(transport(), retry, breaker, bh)}), func() {}, nil
	case "c":
		cb := gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{Name: "peer", Timeout: 10 * time.Second})
		rc := retryablehttp.NewClient()
		rc.HTTPClient = &http.Client{Transport: &breakerTransport{cb: cb, inner: transport()}}
		rc.RetryMax = 2 // 3 attempts
		rc.RetryWaitMin, rc.RetryWaitMax = 100*time.Millisecond, 2*time.Second
		rc.Logger = nil
		return viaClient(&http.Client{Transport: &retryablehttp.RoundTripper{Client: rc}}), func() {}, nil
	case "d":
		hc, err := humushttp.NewClient(humushttp.Settings{BaseURL: base})
		if err != nil {
			return nil, nil, err
		}
		c, _ := humushttp.ClientOf(hc)
		return func(ctx context.Context, url string) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			r, err := c.Do(req)
			if err != nil {
				return nil, err
			}
			return r.Response, nil
		}, func() { c.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown mode %q", mode)
}

type usage struct {
	cpu     time.Duration
	csw     int64
	mallocs uint64
	cgo     int64
}

func now() usage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{
		cpu:     time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		csw:     ru.Nvcsw + ru.Nivcsw,
		mallocs: ms.Mallocs,
		cgo:     runtime.NumCgoCall(),
	}
}

// row is one measured run of one mode at one concurrency.
type row struct {
	rps, cpuUs, allocs, cgo, csw float64
	errors                       int64
}

// drive makes calls from conc goroutines for d and returns the requests made and the failures.
func drive(call caller, url string, conc int, d time.Duration) (int64, int64) {
	ctx := context.Background()
	var n, bad atomic.Int64
	until := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) {
				n.Add(1)
				resp, err := call(ctx, url)
				if err != nil {
					if bad.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "go_peers:", err)
					}
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return n.Load(), bad.Load()
}

func measure(call caller, url string, conc int, seconds, warmup time.Duration) row {
	drive(call, url, conc, warmup)
	runtime.GC()
	u0, t0 := now(), time.Now()
	n, bad := drive(call, url, conc, seconds)
	wall, u1 := time.Since(t0), now()
	if n == 0 {
		n = 1
	}
	f := float64(n)
	return row{
		rps:    f / wall.Seconds(),
		cpuUs:  float64(u1.cpu-u0.cpu) / 1e3 / f,
		allocs: float64(u1.mallocs-u0.mallocs) / f,
		cgo:    float64(u1.cgo-u0.cgo) / f,
		csw:    float64(u1.csw-u0.csw) / f,
		errors: bad,
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// startNginx serves 100 B at /100 on a free loopback port; stop kills it and removes its prefix.
func startNginx() (url string, stop func(), err error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "humus-go-peers-")
	if err != nil {
		return "", nil, err
	}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/octet-stream;
  keepalive_requests 1000000000;
  keepalive_timeout 600s;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server {
    listen 127.0.0.1:%[2]d;
    location = /100 { return 200 "%[3]s"; }
  }
}
`, dir, port, strings.Repeat("x", 100))
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("starting nginx (apt-get install nginx-light): %w", err)
	}
	stop = func() {
		// SIGTERM, not a kill: nginx's master then stops its worker, which a killed master leaves running,
		// holding its port and a CPU's share of every later run.
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	url = fmt.Sprintf("http://127.0.0.1:%d/100", port)
	for range 100 {
		if resp, err := http.Get(url); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			http.DefaultClient.CloseIdleConnections()
			return url, stop, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return "", nil, errors.New("nginx did not answer in 10 s")
}

func main() {
	rounds := flag.Int("rounds", 5, "rounds (the order reversed every other one)")
	seconds := flag.Float64("seconds", 1, "measured seconds a row")
	warmup := flag.Float64("warmup", 0.3, "warm-up seconds before each row")
	concList := flag.String("conc", "1,16,64", "concurrencies")
	modeList := flag.String("modes", "a,b,c,d", "modes (a net/http, b +failsafe-go, c +gobreaker+retryablehttp, d humushttp)")
	procs := flag.Int("gomaxprocs", 2, "GOMAXPROCS (0: the runtime's own)")
	target := flag.String("url", "", "the URL to GET (default: an nginx of its own serving 100 B)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	var concs []int
	for _, s := range strings.Split(*concList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "go_peers: bad --conc", s)
			os.Exit(2)
		}
		concs = append(concs, n)
	}
	modes := strings.Split(*modeList, ",")
	url := *target
	if url == "" {
		u, stop, err := startNginx()
		if err != nil {
			fmt.Fprintln(os.Stderr, "go_peers:", err)
			os.Exit(1)
		}
		defer stop()
		url = u
	}
	base := url[:strings.Index(url[len("http://"):], "/")+len("http://")]
	callers := map[string]caller{}
	for _, m := range modes {
		c, closeFn, err := newCaller(m, base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go_peers:", err)
			os.Exit(1)
		}
		defer closeFn()
		callers[m] = c
	}
	type key struct {
		mode string
		conc int
	}
	results := map[key][]row{}
	var order []key
	for _, c := range concs {
		for _, m := range modes {
			order = append(order, key{m, c})
		}
	}
	fmt.Printf("go_peers: %s, GOMAXPROCS=%d, %d rounds x %.1f s a row (warm-up %.1f s), %s\n",
		runtime.Version(), runtime.GOMAXPROCS(0), *rounds, *seconds, *warmup, url)
	for r := range *rounds {
		this := append([]key(nil), order...)
		if r%2 == 1 {
			for i, j := 0, len(this)-1; i < j; i, j = i+1, j-1 {
				this[i], this[j] = this[j], this[i]
			}
		}
		for _, k := range this {
			results[k] = append(results[k], measure(callers[k.mode], url, k.conc,
				time.Duration(*seconds*float64(time.Second)), time.Duration(*warmup*float64(time.Second))))
		}
		fmt.Fprintf(os.Stderr, "go_peers: round %d of %d done\n", r+1, *rounds)
	}

	fmt.Printf("\nmedians over rounds\n%-34s %5s %10s %9s %8s %8s %8s %6s\n",
		"mode", "conc", "req/s", "CPU µs/r", "allocs/r", "cgo/r", "csw/r", "errors")
	for _, k := range order {
		rs := results[k]
		pick := func(f func(row) float64) float64 {
			xs := make([]float64, len(rs))
			for i, x := range rs {
				xs[i] = f(x)
			}
			return median(xs)
		}
		var errs int64
		for _, x := range rs {
			errs += x.errors
		}
		fmt.Printf("%-34s %5d %10.0f %9.2f %8.1f %8.2f %8.3f %6d\n", k.mode+" "+modeNames[k.mode], k.conc,
			pick(func(x row) float64 { return x.rps }), pick(func(x row) float64 { return x.cpuUs }),
			pick(func(x row) float64 { return x.allocs }), pick(func(x row) float64 { return x.cgo }),
			pick(func(x row) float64 { return x.csw }), errs)
	}
	fmt.Printf("\nmedians of per-round ratios (req/s ratio, CPU per request ratio)\n%-34s %5s %15s %15s\n",
		"mode", "conc", "vs a", "vs b")
	for _, k := range order {
		ratio := func(peer string) string {
			ps, ok := results[key{peer, k.conc}]
			if !ok {
				return "-"
			}
			var rps, cpu []float64
			for i, x := range results[k] {
				rps = append(rps, x.rps/ps[i].rps)
				cpu = append(cpu, x.cpuUs/ps[i].cpuUs)
			}
			return fmt.Sprintf("%.2fx / %.2fx", median(rps), median(cpu))
		}
		fmt.Printf("%-34s %5d %15s %15s\n", k.mode+" "+modeNames[k.mode], k.conc, ratio("a"), ratio("b"))
	}
}
