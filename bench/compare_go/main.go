// Command compare_go is the Go client of bench/compare.py: net/http (the peer a Go user would pick) and the
// humushttp binding, the same loop for both.
//
//	compare_go nethttp|humus|humus-buffered|humus-start URL CONCURRENCY SECONDS WARMUP_SECONDS
//	           [--ca FILE] [--resolve HOST:PORT=ADDR:PORT] [--h2] [--netpoller]
//
// CONCURRENCY goroutines each GET URL, read the body whole and close it, until the time is up. humus is
// humushttp.NewClient's *http.Client (the binding's Client.Do under net/http's redirect loop); humus-buffered
// the same with the call option BufferBody in the request's context; humus-start is
// the binding's Client.Start and Call.Wait (humus_client_submit, the body buffered); nethttp is an
// http.Client whose Transport keeps CONCURRENCY idle connections per host (its default of 2 would reconnect
// under load, which no careful user leaves) and, with --h2, speaks HTTP/2 over TLS. --netpoller gives the
// humus modes a runtime whose event loop runs on Go's netpoller (RuntimeOptions.LoopOnNetpoller) instead of
// a thread of its own, to measure one design against the other (bench/HISTORY.md). After WARMUP_SECONDS it
// runs for SECONDS and prints one JSON line: requests, errors, wall and CPU seconds of this process. It
// never judges the numbers.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func newClient(mode, target, ca, resolve string, h2, netpoller bool, conc int) (*http.Client, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	from, to, _ := strings.Cut(resolve, "=")
	switch mode {
	case "nethttp":
		tr := &http.Transport{MaxIdleConns: 2 * conc, MaxIdleConnsPerHost: 2 * conc, ForceAttemptHTTP2: h2}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		}
		if resolve != "" {
			var d net.Dialer
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == from {
					addr = to
				}
				return d.DialContext(ctx, network, addr)
			}
		}
		return &http.Client{Transport: tr}, nil
	case "humus", "humus-buffered", "humus-start":
		s := humushttp.Settings{BaseURL: u.Scheme + "://" + u.Host, HTTPVersion: "1.1",
			Bulkhead: &humushttp.BulkheadSettings{MaxConcurrent: max(conc, 50)}}
		if h2 {
			s.HTTPVersion = "2"
		}
		if ca != "" {
			s.TLS = &humushttp.TLSSettings{CAFile: ca}
		}
		var opts []humushttp.Option
		if resolve != "" || netpoller {
			ro := humushttp.RuntimeOptions{LoopOnNetpoller: netpoller}
			if resolve != "" {
				ro.Resolve = map[string]string{from: to}
			}
			rt, err := humushttp.NewRuntime(ro)
			if err != nil {
				return nil, err
			}
			opts = append(opts, humushttp.WithRuntime(rt))
		}
		return humushttp.NewClient(s, opts...)
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

// get is one call: net/http's Get (with ctx's call options), or with start, the binding's Start and Wait.
func get(ctx context.Context, c *http.Client, start bool, target string) (*http.Response, error) {
	if !start {
		req, err := http.NewRequestWithContext(ctx, "GET", target, nil)
		if err != nil {
			return nil, err
		}
		return c.Do(req)
	}
	hc, _ := humushttp.ClientOf(c)
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		return nil, err
	}
	call, err := hc.Start(req, nil)
	if err != nil {
		return nil, err
	}
	resp, err := call.Wait()
	if err != nil {
		return nil, err
	}
	return resp.Response, nil
}

// run makes calls from conc goroutines until the time is up and returns the counts.
func run(c *http.Client, mode, target string, conc int, d time.Duration) (requests, errors int64) {
	ctx := context.Background()
	if mode == "humus-buffered" {
		ctx = humushttp.WithCallOptions(ctx, humushttp.BufferBody())
	}
	var req, bad atomic.Int64
	until := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) {
				req.Add(1)
				resp, err := get(ctx, c, mode == "humus-start", target)
				if err != nil {
					if bad.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "compare_go:", err)
					}
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return req.Load(), bad.Load()
}

func main() {
	args := os.Args[1:]
	if len(args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: compare_go nethttp|humus|humus-buffered|humus-start URL CONCURRENCY "+
			"SECONDS WARMUP [--ca F] [--resolve X] [--h2] [--netpoller]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("compare_go", flag.ExitOnError)
	ca := fs.String("ca", "", "CA file")
	resolve := fs.String("resolve", "", "HOST:PORT=ADDR:PORT")
	h2 := fs.Bool("h2", false, "HTTP/2 over TLS")
	netpoller := fs.Bool("netpoller", false, "the humus modes' event loop on Go's netpoller")
	fs.Parse(args[5:])
	mode, target := args[0], args[1]
	conc, _ := strconv.Atoi(args[2])
	seconds, _ := strconv.ParseFloat(args[3], 64)
	warmup, _ := strconv.ParseFloat(args[4], 64)
	c, err := newClient(mode, target, *ca, *resolve, *h2, *netpoller, conc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare_go:", err)
		os.Exit(1)
	}
	_, warmErrors := run(c, mode, target, conc, time.Duration(warmup*float64(time.Second)))
	w0, c0 := time.Now(), cpuSeconds()
	requests, errors := run(c, mode, target, conc, time.Duration(seconds*float64(time.Second)))
	wall, cpu := time.Since(w0).Seconds(), cpuSeconds()-c0
	fmt.Printf("{\"requests\": %d, \"errors\": %d, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n",
		requests, errors+warmErrors, wall, cpu)
}
