package humushttp_test

// A classifier and a breaker policy compiled in C as a plugin (docs/retries.md §5.4a), named in the settings:
// bindings/c/examples/retry_409_plugin.c, from HUMUS_TEST_PLUGIN when set, else built here with the C
// compiler cgo uses. The rule runs in C: no Go callback is installed.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

func examplePlugin(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("HUMUS_TEST_PLUGIN"); path != "" {
		return path
	}
	root := repoRoot()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	out := filepath.Join(t.TempDir(), "libretry_409_plugin.so")
	build := exec.Command(cc, "-std=c99", "-shared", "-fPIC", "-Wall", "-Werror", "-I"+filepath.Join(root, "include"),
		"-o", out, filepath.Join(root, "bindings/c/examples/retry_409_plugin.c"))
	if text, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example plugin: %v\n%s", err, text)
	}
	return out
}

func TestPluginClassifierRetriesA409(t *testing.T) {
	s := server(t)
	settings := s.settings("http")
	settings.ClassifyPlugin = &humushttp.Plugin{Path: examplePlugin(t), Symbol: "retry_409_classifier",
		Config: json.RawMessage(`{"status": 409}`)}
	c := s.open(t, settings)
	path := uniquePath()
	s.script(t, path, map[string]any{"status": 409}, map[string]any{"status": 200, "body": "paid"})
	req, _ := http.NewRequest("GET", s.url("http", path), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "paid" || resp.Attempts != 2 {
		t.Fatalf("got %d %q after %d attempts, want the 409 retried", resp.StatusCode, body, resp.Attempts)
	}
	if counts, err := c.BreakerCounts(); err != nil || counts.Successes != 2 || counts.Failures != 0 {
		t.Fatalf("breaker counts %+v (%v): the 409 must count as a success", counts, err)
	}
}

func TestPluginSettingsSurviveTheirJSON(t *testing.T) {
	plugin := examplePlugin(t)
	text := `{"base_url": "http://127.0.0.1:1", "classify": {"plugin": "` + plugin +
		`", "symbol": "retry_409_classifier"}, "breaker_policy": {"plugin": "` + plugin +
		`", "symbol": "consecutive_failures_policy", "config": {"consecutive_failures": 2}}}`
	s, err := humushttp.SettingsFromJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.ClassifyPlugin == nil || s.ClassifyPlugin.Symbol != "retry_409_classifier" || s.Classify != "" ||
		s.BreakerPolicy == nil || string(s.BreakerPolicy.Config) != `{"consecutive_failures": 2}` {
		t.Fatalf("read %+v", s)
	}
	full, err := s.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if full.ClassifyPlugin == nil || full.ClassifyPlugin.Symbol != s.ClassifyPlugin.Symbol {
		t.Fatalf("WithDefaults lost the plugin: %+v", full)
	}
}

func TestPluginMissingSymbolIsAConfigError(t *testing.T) {
	s := server(t)
	settings := s.settings("http")
	settings.BreakerPolicy = &humushttp.Plugin{Path: examplePlugin(t), Symbol: "no_such_policy"}
	_, err := humushttp.Open(settings, humushttp.WithRuntime(s.rt))
	var e *humushttp.Error
	if !errors.Is(err, humushttp.ErrConfig) || !errors.As(err, &e) || len(e.Fields) == 0 ||
		e.Fields[0] != "breaker_policy.symbol" {
		t.Fatalf("err = %v, want ErrConfig naming breaker_policy.symbol", err)
	}
}
