package humushttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

// A standard *http.Client whose transport is the C core: retries, breaker, bulkhead and deadlines included.
func ExampleNewClient() {
	dependency := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	defer dependency.Close()

	client, err := humushttp.NewClient(humushttp.Settings{BaseURL: dependency.URL, Timeout: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	if c, ok := humushttp.ClientOf(client); ok {
		defer c.Close() // optional: a cleanup frees it once the *http.Client is unreachable
	}
	resp, err := client.Get(dependency.URL + "/pay")
	switch {
	case errors.Is(err, humushttp.ErrRejected):
		fmt.Println("the breaker is open: nothing was sent")
	case err != nil:
		fmt.Println("no response:", err)
	default:
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output: 200 hello from /pay
}

// Testing your own code against a failing dependency: a mock transport on a virtual clock, so a 2 s
// Retry-After costs no real time.
func ExampleRuntimeOptions_mockTransport() {
	calls := 0
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{
		VirtualClock: true,
		MockTransport: func(r *humushttp.MockRequest) (humushttp.MockReply, error) {
			calls++ // one call at a time here; a mock shared by goroutines must lock
			if calls == 1 {
				return humushttp.MockReply{Status: 503, Header: http.Header{"Retry-After": {"2"}}}, nil
			}
			return humushttp.MockReply{Status: 200, Body: []byte("paid")}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	maxRetryAfter := 5 * time.Second // the default follows backoff_max (2s); allow the dependency's 2s
	client, err := humushttp.Open(humushttp.Settings{BaseURL: "http://payments:8080", MaxRetryAfter: &maxRetryAfter},
		humushttp.WithRuntime(rt))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	req, _ := http.NewRequest("GET", "http://payments:8080/pay", nil)
	start := rt.ElapsedMs()
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("%d %s after %d attempts and %d ms of virtual time\n", resp.StatusCode, body, resp.Attempts,
		rt.ElapsedMs()-start)
	// Output: 200 paid after 2 attempts and 2000 ms of virtual time
}
