// Command stream_go is one streamed download or upload for bench/stream_bench.py, with the humushttp client
// or net/http's DefaultClient:
//
//	stream_go humus|nethttp URL             reads the body at URL through resp.Body in 64 KiB pieces and
//	                                        drops them (as `-o /dev/null` would); humushttp's resp.Body
//	                                        streams from humus_client_open
//	stream_go humus-up|nethttp-up FILE URL  PUTs FILE to URL with the open file as req.Body (a reader,
//	                                        sent as it is read) and its size as the ContentLength
//
// Exits 1 with the error on stderr when the call fails.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
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
	// The call's timeout bounds the body's reads too: the longest allowed (1 h), as curl has none. An upload's
	// answer comes once the server has read the whole body, so the attempt gets the whole hour as well.
	return humushttp.NewClient(humushttp.Settings{BaseURL: u.Scheme + "://" + u.Host, Timeout: time.Hour,
		AttemptTimeout: time.Hour})
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

func upload(kind, path, target string) error {
	c, err := client(kind, target)
	if err != nil {
		return err
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return err
	}
	req, err := http.NewRequest("PUT", target, file)
	if err != nil {
		return err
	}
	req.ContentLength = info.Size()
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the server answered %s", resp.Status)
	}
	return resp.Body.Close()
}

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && (os.Args[1] == "humus" || os.Args[1] == "nethttp"):
		err = run(os.Args[1], os.Args[2])
	case len(os.Args) == 4 && (os.Args[1] == "humus-up" || os.Args[1] == "nethttp-up"):
		err = upload(strings.TrimSuffix(os.Args[1], "-up"), os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: stream_go humus|nethttp URL | stream_go humus-up|nethttp-up FILE URL")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream_go:", err)
		os.Exit(1)
	}
}
