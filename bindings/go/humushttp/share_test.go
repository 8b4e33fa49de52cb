//go:build cgo

package humushttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/humus-http/humus_http/bindings/go/humushttp"
)

// Two clients whose settings name one share segment see one breaker (docs/shared.md §22): failures through
// either count toward opening both, and a third client without share keeps its own.
func TestTwoClientsOfOneShareNameSeeOneBreaker(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	name := fmt.Sprintf("go_test_%d", os.Getpid())
	defer os.Remove("/dev/shm/humus_http." + name)
	share := &humushttp.ShareSettings{Name: name}
	var clients []*humushttp.Client
	for _, s := range []*humushttp.ShareSettings{share, share, nil} {
		c, err := humushttp.Open(humushttp.Settings{BaseURL: srv.URL, MaxAttempts: 1, Share: s})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequest("GET", srv.URL+"/dep", nil)
		resp, err := clients[i%2].Do(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		resp.Body.Close()
	}
	for i, want := range []humushttp.CircuitState{humushttp.CircuitOpen, humushttp.CircuitOpen, humushttp.CircuitClosed} {
		got, err := clients[i].BreakerState()
		if err != nil || got != want {
			t.Errorf("client %d: breaker %v (%v), want %v", i, got, err, want)
		}
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("the dependency saw %d calls, want 5", n)
	}
}
