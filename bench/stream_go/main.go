// Command stream_go is one streamed download for bench/stream_bench.py: `stream_go humus|nethttp URL` reads
// the body at URL through resp.Body in 64 KiB pieces and drops them (as `-o /dev/null` would), with the
// humushttp client (resp.Body streams from humus_client_open) or net/http's DefaultClient. Exits 1 with the
// error on stderr when the download fails.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func client(kind, target string) (*http.Client, error) {
	if kind == "nethttp" {
		return http.DefaultClient, nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	// The call's timeout bounds the body's reads too: the longest allowed (1 h), as curl has none.
	return humushttp.NewClient(humushttp.Settings{BaseURL: u.Scheme + "://" + u.Host, Timeout: time.Hour})
}

func run(kind, target string) error {
	c, err := client(kind, target)
	if err != nil {
		return err
	}
	resp, err := c.Get(target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Both sides wrapped: io.Discard's ReadFrom would otherwise read in its own 8 KiB pieces, not these.
	if _, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{resp.Body}, make([]byte, 64<<10)); err != nil {
		return err
	}
	return resp.Body.Close()
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "humus" && os.Args[1] != "nethttp") {
		fmt.Fprintln(os.Stderr, "usage: stream_go humus|nethttp URL")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "stream_go:", err)
		os.Exit(1)
	}
}
