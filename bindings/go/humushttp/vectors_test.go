package humushttp_test

// The conformance vectors (docs/vectors.md §18) through the Go API: every tests/vectors/*.json file, run as
// tests/vectors/README.md specifies and as the C++ reference runner (tests/vectors/vectors_test.cc) does,
// but with Go's Client.Do for blocking calls, Client.Start for concurrent groups, Go funcs as the mock
// transport, classifier and breaker policy, and a context for cancellation. One line per vector:
// "vector <name>: ok" or "vector <name>: FAIL <field path>: <what>".
//
// HUMUS_VECTORS_DIR runs another folder; HUMUS_VECTOR_DUMP=1 also prints what each call and step observed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	humushttp "github.com/humus-http/humus_http/bindings/go/humushttp"
)

const callHeader = "Vector-Call"

func vectorsDir() string {
	if dir := os.Getenv("HUMUS_VECTORS_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(repoRoot(), "tests", "vectors")
}

func vectorFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(vectorsDir(), "*.json"))
	if err != nil {
		t.Fatalf("listing %s: %v", vectorsDir(), err)
	}
	sort.Strings(files)
	return files
}

func dumping() bool {
	v := os.Getenv("HUMUS_VECTOR_DUMP")
	return v != "" && v != "0"
}

// TestVectorSet guards the runner itself: a wrong folder must fail, not pass with nothing run.
func TestVectorSet(t *testing.T) {
	if n := len(vectorFiles(t)); n < 40 {
		t.Fatalf("%d vector files in %s; docs/vectors.md §18 has at least 40", n, vectorsDir())
	}
}

func TestVectors(t *testing.T) {
	for _, file := range vectorFiles(t) {
		stem := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(stem, func(t *testing.T) {
			var p problems
			runVectorFile(file, stem, &p)
			found := p.all()
			if len(found) == 0 {
				fmt.Printf("vector %s: ok\n", stem)
				return
			}
			fmt.Printf("vector %s: FAIL %s\n", stem, found[0])
			for _, one := range found {
				t.Errorf("vector %s: %s", stem, one)
			}
		})
	}
}

func runVectorFile(file, stem string, p *problems) {
	data, err := os.ReadFile(file)
	if err != nil {
		p.add("", "cannot read: "+err.Error())
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	err = dec.Decode(&doc)
	object, isObject := doc.(map[string]any)
	if err != nil || !isObject {
		p.add("", "not a JSON object")
		return
	}
	if s, _ := object["name"].(string); s != stem {
		p.add("name", fmt.Sprintf("must be the file's stem %q", stem))
	}
	if dumping() {
		fmt.Fprintf(os.Stderr, "vector %s\n", stem)
	}
	r := &runner{v: object, p: p, nextID: 1}
	defer r.close()
	if err := r.run(); err != nil {
		p.add("", "runner stopped: "+err.Error())
	}
}

// --- Mismatches --------------------------------------------------------------------------------------------

type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) add(path, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, path+": "+what)
}

func (p *problems) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

// keys refuses keys the format does not know: a misspelt expectation must not pass by checking nothing.
func (p *problems) keys(node any, path string, allowed ...string) bool {
	object, ok := node.(map[string]any)
	if !ok {
		p.add(path, "must be an object")
		return false
	}
	good := true
	for _, key := range sortedKeys(object) {
		if !contains(allowed, key) {
			p.add(path+"."+key, "unknown key")
			good = false
		}
	}
	return good
}

// equal compares JSON values as JSON (numbers by value), reporting "expected X, got Y".
func (p *problems) equal(path string, expected, actual any) {
	if !sameJSON(expected, actual) {
		p.add(path, "expected "+dump(expected)+", got "+dump(actual))
	}
}

func sameJSON(a, b any) bool {
	var x, y any
	if json.Unmarshal([]byte(dump(a)), &x) != nil || json.Unmarshal([]byte(dump(b)), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func dump(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// --- Reading the vector's JSON -----------------------------------------------------------------------------

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // nlohmann::json objects iterate sorted: the first mismatch is the C++ runner's
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func object(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	if o == nil {
		return map[string]any{}
	}
	return o
}

func array(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func integer(v any, def int64) int64 {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
		if f, err := n.Float64(); err == nil {
			return int64(f)
		}
	}
	return def
}

func text(m map[string]any, key, def string) string {
	if s, ok := m[key].(string); ok {
		return s
	}
	return def
}

func has(m map[string]any, key string) bool {
	_, ok := m[key]
	return ok
}

// pair reads a [name, value] header entry.
func pair(v any) (string, string) {
	a, _ := v.([]any)
	if len(a) != 2 {
		return "", ""
	}
	n, _ := a[0].(string)
	s, _ := a[1].(string)
	return n, s
}

// pathOf is the path and query of an absolute URL: "http://payments:8080/a?b" → "/a?b".
func pathOf(u string) string {
	start := 0
	if i := strings.Index(u, "://"); i >= 0 {
		start = i + 3
	}
	slash := strings.IndexAny(u[start:], "/?#")
	if slash < 0 {
		return "/"
	}
	rest := u[start+slash:]
	if rest[0] != '/' {
		rest = "/" + rest
	}
	return rest
}

// originOf is "http://payments:8080" of "http://payments:8080/a".
func originOf(u string) string {
	start := 0
	if i := strings.Index(u, "://"); i >= 0 {
		start = i + 3
	}
	slash := strings.IndexAny(u[start:], "/?#")
	if slash < 0 {
		return u
	}
	return u[:start+slash]
}

// --- The scripted dependency -------------------------------------------------------------------------------

type received struct {
	call    int // the Vector-Call header; -1 when absent
	method  string
	url     string
	path    string
	atMs    int64              // rt.ElapsedMs() when the attempt reached the mock
	headers map[string]*string // the names some expectation asks about
	body    *string            // nil: no body
}

type callControl struct {
	cancelAtAttempt int // 0: never
	seen            int
	cancel          context.CancelFunc // a blocking call's context
	handle          *humushttp.Call    // an asynchronous call's
}

type mock struct {
	script      map[string]any
	headerNames []string
	p           *problems
	rt          *humushttp.Runtime

	mu       sync.Mutex
	gate     *sync.Cond
	gateOpen bool                 // guarded by mu
	served   map[string]int       // guarded by mu: replies served per script key
	received []received           // guarded by mu
	controls map[int]*callControl // guarded by mu
}

func newMock(script map[string]any, headerNames []string, p *problems) *mock {
	m := &mock{script: script, headerNames: headerNames, p: p, gateOpen: true, served: map[string]int{},
		controls: map[int]*callControl{}}
	m.gate = sync.NewCond(&m.mu)
	return m
}

// While the gate is shut, attempts wait in the mock: the thread driving them stays busy, so the virtual
// clock cannot move until every call of a concurrent group has been handed to the library.
func (m *mock) shutGate() {
	m.mu.Lock()
	m.gateOpen = false
	m.mu.Unlock()
}

func (m *mock) openGate() {
	m.mu.Lock()
	m.gateOpen = true
	m.mu.Unlock()
	m.gate.Broadcast()
}

func (m *mock) control(call int, c *callControl) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c == nil {
		delete(m.controls, call)
	} else {
		m.controls[call] = c
	}
}

func (m *mock) setHandle(call int, h *humushttp.Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.controls[call]; c != nil {
		c.handle = h
	}
}

func (m *mock) receivedAll() []received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]received(nil), m.received...)
}

func (m *mock) receivedBy(call int) []received {
	var out []received
	for _, r := range m.receivedAll() {
		if r.call == call {
			out = append(out, r)
		}
	}
	return out
}

func (m *mock) respond(r *humushttp.MockRequest) (humushttp.MockReply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for !m.gateOpen {
		m.gate.Wait()
	}
	rec := received{call: -1, method: r.Method, url: r.URL, path: pathOf(r.URL), atMs: m.rt.ElapsedMs(),
		headers: map[string]*string{}}
	if id, ok := r.Header(callHeader); ok {
		if n, err := strconv.Atoi(id); err == nil {
			rec.call = n
		}
	}
	for _, name := range m.headerNames {
		if v, ok := r.Header(name); ok {
			rec.headers[name] = &v
		} else {
			rec.headers[name] = nil
		}
	}
	if len(r.Body) > 0 {
		b := string(r.Body)
		rec.body = &b
	}
	m.received = append(m.received, rec)

	if c := m.controls[rec.call]; c != nil {
		c.seen++
		if c.seen == c.cancelAtAttempt {
			// Cancelled before answering, as the C++ runner does: a context cancelled inside a callback of
			// its blocking call takes effect before the callback returns; a Call's Cancel at once.
			if c.cancel != nil {
				c.cancel()
			}
			if c.handle != nil {
				c.handle.Cancel()
			}
		}
	}

	key := rec.method + " " + rec.path
	if !has(m.script, key) {
		key = "*"
	}
	replies, _ := m.script[key].([]any)
	if len(replies) == 0 {
		m.p.add("script", fmt.Sprintf(`no reply for "%s %s" and no "*"`, rec.method, rec.path))
		return humushttp.MockReply{Error: humushttp.StatusConnect, ErrorMessage: "unscripted request"}, nil
	}
	next := m.served[key]
	m.served[key] = next + 1
	one, _ := replies[min(next, len(replies)-1)].(map[string]any)
	return m.reply(one, "script."+key), nil
}

func (m *mock) reply(one map[string]any, path string) humushttp.MockReply {
	reply := humushttp.MockReply{Status: int(integer(one["status"], 200))}
	if hs := array(one, "headers"); len(hs) > 0 {
		reply.Header = http.Header{}
		for _, h := range hs {
			name, value := pair(h)
			reply.Header[name] = append(reply.Header[name], value) // the name as written, not canonicalised
		}
	}
	if has(one, "body") {
		reply.Body = []byte(text(one, "body", ""))
	} else if has(one, "body_size") {
		reply.Body = bytes.Repeat([]byte("x"), int(integer(one["body_size"], 0)))
	}
	if has(one, "delay_ms") {
		reply.Delay = time.Duration(integer(one["delay_ms"], 0)) * time.Millisecond
	}
	if hang, _ := one["hang"].(bool); hang {
		reply.Hang = true
	}
	if has(one, "error") {
		name := text(one, "error", "")
		status, ok := humushttp.StatusByName(name)
		if !ok {
			m.p.add(path+".error", "unknown status name "+name)
			status = humushttp.StatusConnect
		}
		reply.Error = status
		reply.ErrorMessage = text(one, "message", "scripted")
	}
	if has(one, "body_error") {
		name := text(one, "body_error", "")
		status, ok := humushttp.StatusByName(name)
		if !ok {
			m.p.add(path+".body_error", "unknown status name "+name)
			status = humushttp.StatusConnectionLost
		}
		reply.BodyError = status
		reply.BodyErrorAfter = int(integer(one["body_error_after"], 0))
	}
	return reply
}

// --- Code-supplied callbacks (docs/retries.md §5.4, docs/breaker.md §9.3): what a Go user would install --------------------------------

var errVectorCallback = errors.New("the vector's callback fails here")

// vectorClassifier panics for the listed statuses (a panicking Go callback, docs/breaker.md §9.4) and otherwise
// delegates to the default classifier.
func vectorClassifier(failOn map[int]bool) humushttp.Classifier {
	return func(a *humushttp.Attempt) (humushttp.Classification, error) {
		if failOn[a.Status] {
			panic(fmt.Sprintf("classifier told to fail on %d", a.Status))
		}
		return humushttp.ClassifyDefault(a)
	}
}

// vectorPolicy returns an error from the callback named by fail, every time it is asked.
func vectorPolicy(consecutiveFailures, successesToClose uint64, fail string) humushttp.BreakerPolicy {
	return humushttp.BreakerPolicy{
		Trip: func(c humushttp.BreakerCounts) (bool, error) {
			if fail == "trip" {
				return false, errVectorCallback
			}
			return c.ConsecutiveFailures >= consecutiveFailures, nil
		},
		Probe: func(c humushttp.BreakerCounts) (humushttp.ProbeDecision, error) {
			if fail == "probe" {
				return 0, errVectorCallback
			}
			switch {
			case c.Failures > 0:
				return humushttp.ProbeReopen, nil
			case c.Successes >= successesToClose:
				return humushttp.ProbeClose, nil
			}
			return humushttp.ProbeContinue, nil
		},
	}
}

// --- One call's outcome ------------------------------------------------------------------------------------

type outcome struct {
	err        *humushttp.Error // nil: a response
	status     int
	attempts   int
	retryAfter int64
	message    string
	fields     []string
	body       string
	header     http.Header
	url        string
	startMs    int64
	endMs      int64
	readError  string           // an opened call's: the status name of the read that failed
	trace      []map[string]any // the decision trace (TraceOf, TraceOfError), as the vectors write it
}

func outcomeOf(resp *humushttp.Response, err error) outcome {
	var o outcome
	if err != nil {
		var he *humushttp.Error
		if !errors.As(err, &he) {
			he = &humushttp.Error{Status: humushttp.StatusInternal, Message: "not a *humushttp.Error: " + err.Error()}
		}
		o.err = he
		o.attempts = he.Attempts
		o.retryAfter = he.RetryAfter.Milliseconds()
		o.message = he.Message
		o.fields = he.Fields
		o.trace = traceForVector(humushttp.TraceOfError(err))
		return o
	}
	o.status = resp.StatusCode
	o.attempts = resp.Attempts
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	o.body = string(body)
	o.header = resp.Header
	o.url = resp.Request.URL.String()
	o.trace = traceForVector(humushttp.TraceOf(resp.Response))
	return o
}

func (o outcome) describe(sent []received) map[string]any {
	d := map[string]any{"attempts": o.attempts, "elapsed_ms": o.endMs - o.startMs}
	if o.err == nil {
		d["status"] = o.status
	} else {
		d["error"], d["message"], d["retry_after_ms"] = o.err.Status.String(), o.message, o.retryAfter
	}
	times, paths := []int64{}, []string{}
	for _, r := range sent {
		times = append(times, r.atMs-o.startMs)
		paths = append(paths, r.method+" "+r.path)
	}
	d["attempt_times_ms"], d["sent"], d["trace"] = times, paths, o.trace
	if len(o.body) <= 64 {
		d["body"] = o.body
	} else {
		d["body_size"] = len(o.body)
	}
	return d
}

// --- The runner --------------------------------------------------------------------------------------------

type runner struct {
	v      map[string]any
	p      *problems
	rt     *humushttp.Runtime
	client *humushttp.Client
	mock   *mock
	nextID int
	held   []heldBody // bodies of "open" steps not closed yet
}

type heldBody struct {
	body   io.ReadCloser
	cancel context.CancelFunc
}

func (r *runner) close() {
	r.closeHeld()
	if r.client != nil {
		r.client.Close()
	}
	if r.rt != nil {
		r.rt.Close()
	}
}

func (r *runner) run() error {
	p := r.p
	p.keys(r.v, "", "name", "spec", "description", "runtime", "settings", "callbacks", "script", "steps",
		"settings_error")
	rtSpec := object(r.v, "runtime")
	p.keys(rtSpec, "runtime", "seed")
	var names []string
	collectHeaderNames(r.v["steps"], map[string]bool{}, &names)
	script := object(r.v, "script")
	r.mock = newMock(script, names, p)
	r.checkScript(r.v["script"])
	rt, err := humushttp.NewRuntime(humushttp.RuntimeOptions{
		VirtualClock:  true,
		Seed:          uint64(integer(rtSpec["seed"], 0)),
		MockTransport: r.mock.respond,
	})
	if err != nil {
		p.add("runtime", "humushttp.NewRuntime failed: "+err.Error())
		return nil
	}
	r.rt = rt
	r.mock.rt = rt
	if !r.makeClient() {
		return nil
	}
	steps, ok := r.v["steps"].([]any)
	if !ok && has(r.v, "steps") {
		p.add("steps", "must be an array")
		return nil
	}
	for i, s := range steps {
		if err := r.step(s, fmt.Sprintf("steps[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// collectHeaderNames finds the request headers some "sent" expectation asks about: the mock records those.
func collectHeaderNames(node any, seen map[string]bool, out *[]string) {
	switch n := node.(type) {
	case map[string]any:
		if sent, ok := n["sent"].([]any); ok {
			for _, s := range sent {
				if so, ok := s.(map[string]any); ok {
					if hs, ok := so["headers"].(map[string]any); ok {
						for _, name := range sortedKeys(hs) {
							if !seen[name] {
								seen[name] = true
								*out = append(*out, name)
							}
						}
					}
				}
			}
		}
		for _, k := range sortedKeys(n) {
			collectHeaderNames(n[k], seen, out)
		}
	case []any:
		for _, item := range n {
			collectHeaderNames(item, seen, out)
		}
	}
}

func (r *runner) checkScript(node any) {
	script, ok := node.(map[string]any)
	if !ok {
		if node != nil {
			r.p.add("script", "must be an object")
		}
		return
	}
	for _, key := range sortedKeys(script) {
		path := "script." + key
		replies, ok := script[key].([]any)
		if !ok || len(replies) == 0 {
			r.p.add(path, "must be a non-empty array of replies")
			continue
		}
		for i, one := range replies {
			r.p.keys(one, fmt.Sprintf("%s[%d]", path, i), "status", "headers", "body", "body_size", "delay_ms",
				"hang", "error", "message", "body_error", "body_error_after", "note")
		}
	}
}

// makeClient reads the settings through SettingsFromJSON (the JSON text verbatim), installs the callbacks and
// opens the client; with settings_error, one of those must fail as told.
func (r *runner) makeClient() bool {
	p := r.p
	text, _ := json.Marshal(object(r.v, "settings"))
	var client *humushttp.Client
	settings, err := humushttp.SettingsFromJSON(text)
	if err == nil {
		// WithTraces: every response keeps its decision trace, for the "trace" expectations.
		client, err = humushttp.Open(settings,
			append(r.callbackOptions(), humushttp.WithRuntime(r.rt), humushttp.WithTraces())...)
	}
	want := r.v["settings_error"]
	if want != nil && len(array(r.v, "steps")) > 0 {
		p.add("steps", "must be empty with settings_error")
	}
	if err == nil {
		r.client = client
		if want != nil {
			p.add("settings_error", "expected the settings to be refused, the client was built")
			return false
		}
		return true
	}
	var he *humushttp.Error
	if !errors.As(err, &he) {
		p.add("settings", "refused with a non-humushttp error: "+err.Error())
		return false
	}
	if want == nil {
		p.add("settings", "refused: "+he.Status.String()+" "+he.Message)
		return false
	}
	e, _ := want.(map[string]any)
	p.keys(want, "settings_error", "error", "fields")
	p.equal("settings_error.error", e["error"], he.Status.String())
	if has(e, "fields") {
		got := append([]string{}, he.Fields...)
		sort.Strings(got)
		var wantFields []string
		for _, f := range array(e, "fields") {
			s, _ := f.(string)
			wantFields = append(wantFields, s)
		}
		sort.Strings(wantFields)
		p.equal("settings_error.fields", wantFields, got)
	}
	return false
}

func (r *runner) callbackOptions() []humushttp.Option {
	if !has(r.v, "callbacks") {
		return nil
	}
	cb := object(r.v, "callbacks")
	r.p.keys(r.v["callbacks"], "callbacks", "classifier", "breaker_policy")
	var opts []humushttp.Option
	if has(cb, "classifier") {
		c := object(cb, "classifier")
		r.p.keys(cb["classifier"], "callbacks.classifier", "fail_on_status")
		failOn := map[int]bool{}
		for _, s := range array(c, "fail_on_status") {
			failOn[int(integer(s, 0))] = true
		}
		opts = append(opts, humushttp.WithClassifier(vectorClassifier(failOn)))
	}
	if has(cb, "breaker_policy") {
		bp := object(cb, "breaker_policy")
		r.p.keys(cb["breaker_policy"], "callbacks.breaker_policy", "consecutive_failures", "successes_to_close", "fail")
		opts = append(opts, humushttp.WithBreakerPolicy(vectorPolicy(
			uint64(integer(bp["consecutive_failures"], 5)), uint64(integer(bp["successes_to_close"], 3)),
			text(bp, "fail", ""))))
	}
	return opts
}

func (r *runner) step(node any, path string) error {
	p := r.p
	p.keys(node, path, "call", "expect", "repeat", "concurrent", "advance_ms", "open", "read", "cancel_after_read",
		"hold", "close", "then", "note")
	s, _ := node.(map[string]any)
	kinds := 0
	for _, k := range []string{"call", "concurrent", "advance_ms", "open", "close"} {
		if has(s, k) {
			kinds++
		}
	}
	if kinds > 1 {
		p.add(path, "a step is one of call, concurrent, advance_ms, open, close (or only then)")
	}
	if (has(s, "read") || has(s, "cancel_after_read") || has(s, "hold")) && !has(s, "open") {
		p.add(path, "read, cancel_after_read and hold go with open")
	}
	switch {
	case has(s, "open"):
		id := r.nextID
		r.nextID++
		o := r.openedCall(s, id, path+".open")
		r.observe(object(s, "expect"), o, id, path+".expect")
	case has(s, "close"):
		r.closeHeld()
	case has(s, "call"):
		repeat := int(integer(s["repeat"], 1))
		for i := 0; i < repeat; i++ {
			at := path
			if repeat != 1 {
				at = fmt.Sprintf("%s#%d", path, i)
			}
			id := r.nextID
			r.nextID++
			o := r.blockingCall(object(s, "call"), id, at+".call")
			r.observe(object(s, "expect"), o, id, at+".expect")
		}
	case has(s, "concurrent"):
		if err := r.concurrent(s["concurrent"], path+".concurrent"); err != nil {
			return err
		}
	case has(s, "advance_ms"):
		if err := r.rt.AdvanceMs(integer(s["advance_ms"], 0)); err != nil {
			p.add(path+".advance_ms", "Runtime.AdvanceMs failed: "+err.Error())
		}
	case has(s, "repeat") || has(s, "expect"):
		p.add(path, "repeat and expect go with a call")
	}
	r.then(object(s, "then"), path+".then")
	return nil
}

// build makes the call's *http.Request and options. A request Go itself cannot represent (an unparsable
// URL) is refused here as the library would refuse it.
func (r *runner) build(call map[string]any, id int, path string, ctx context.Context) (*http.Request, []humushttp.CallOption, *callControl, *outcome) {
	p := r.p
	p.keys(call, path, "method", "path", "url", "headers", "body", "idempotency_key", "retry", "timeout_ms",
		"cancel_at_attempt", "note")
	method := text(call, "method", "GET")
	target := text(call, "url", "")
	if target == "" {
		target = originOf(text(object(r.v, "settings"), "base_url", "http://payments:8080")) + text(call, "path", "/")
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, nil, nil, &outcome{err: &humushttp.Error{Status: humushttp.StatusInvalidArgument,
			Message: "url: " + err.Error(), Fields: []string{"url"}}}
	}
	req := (&http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}}).WithContext(ctx)
	for _, h := range array(call, "headers") {
		name, value := pair(h)
		req.Header[name] = append(req.Header[name], value) // as written: the library checks the name
	}
	req.Header[callHeader] = []string{strconv.Itoa(id)}
	if has(call, "body") {
		body := text(call, "body", "")
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
		// A vector's body is bytes, which every attempt may replay: as http.NewRequest would make it.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	}
	var opts []humushttp.CallOption
	if has(call, "idempotency_key") {
		opts = append(opts, humushttp.IdempotencyKey(text(call, "idempotency_key", "")))
	}
	if has(call, "retry") {
		switch text(call, "retry", "") {
		case "default":
			opts = append(opts, humushttp.RetryDefault)
		case "forbid":
			opts = append(opts, humushttp.RetryForbid)
		case "force":
			opts = append(opts, humushttp.RetryForce)
		default:
			p.add(path+".retry", `must be "default", "forbid" or "force"`)
		}
	}
	if has(call, "timeout_ms") {
		opts = append(opts, humushttp.Timeout(time.Duration(integer(call["timeout_ms"], 0))*time.Millisecond))
	}
	return req, opts, &callControl{cancelAtAttempt: int(integer(call["cancel_at_attempt"], 0))}, nil
}

// hedged adds BufferBody to a call of a client whose settings hedge: hedging applies to buffered calls
// (docs/retries.md §6.8), and Do and Start stream unless asked to buffer.
func (r *runner) hedged(opts []humushttp.CallOption) []humushttp.CallOption {
	if r.hedging() {
		return append(opts, humushttp.BufferBody())
	}
	return opts
}

// hedging: the vector's settings hedge.
func (r *runner) hedging() bool {
	_, on := object(r.v, "settings")["hedge"].(map[string]any)
	return on
}

func (r *runner) blockingCall(call map[string]any, id int, path string) outcome {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, opts, control, refused := r.build(call, id, path, ctx)
	if refused != nil {
		refused.startMs = r.rt.ElapsedMs()
		refused.endMs = refused.startMs
		return *refused
	}
	if control.cancelAtAttempt > 0 {
		control.cancel = cancel
	}
	r.mock.control(id, control)
	defer r.mock.control(id, nil)
	if r.hedging() {
		return r.bufferedCall(req, id, opts)
	}
	start := r.rt.ElapsedMs()
	resp, err := r.client.Do(req, opts...)
	end := r.rt.ElapsedMs()
	o := outcomeOf(resp, err)
	o.startMs, o.endMs = start, end
	return o
}

// bufferedCall runs a blocking call of a hedging client as Start with BufferBody and waits for it: hedging
// applies to buffered calls (docs/retries.md §6.8). As for a concurrent group, the gate holds its attempts until
// its handle is known, so cancel_at_attempt cancels through the handle at once, as the C++ runner's token does.
func (r *runner) bufferedCall(req *http.Request, id int, opts []humushttp.CallOption) outcome {
	r.mock.shutGate()
	defer r.mock.openGate()
	var o outcome
	done := make(chan struct{})
	start := r.rt.ElapsedMs()
	call, err := r.client.Start(req, func(resp *humushttp.Response, err error) {
		o = outcomeOf(resp, err)
		o.startMs, o.endMs = start, r.rt.ElapsedMs() // read in the completion, as the C++ runner does
		close(done)
	}, r.hedged(opts)...)
	if err != nil {
		o = outcomeOf(nil, err)
		o.startMs, o.endMs = start, start
		return o
	}
	r.mock.setHandle(id, call)
	r.mock.openGate()
	<-done
	return o
}

// openedCall is an "open" step: Client.Do, whose resp.Body streams from humus_client_open; reads of up to
// "read" bytes (absent: to the end), a context cancel and one more read when "cancel_after_read", then
// Body.Close unless "hold" (a "close" step closes it).
func (r *runner) openedCall(s map[string]any, id int, path string) outcome {
	ctx, cancel := context.WithCancel(context.Background())
	req, opts, control, refused := r.build(object(s, "open"), id, path, ctx)
	if refused != nil {
		cancel()
		refused.startMs = r.rt.ElapsedMs()
		refused.endMs = refused.startMs
		return *refused
	}
	r.mock.control(id, control)
	defer r.mock.control(id, nil)
	start := r.rt.ElapsedMs()
	resp, err := r.client.Do(req, opts...)
	end := r.rt.ElapsedMs()
	if err != nil {
		cancel()
		o := outcomeOf(nil, err)
		o.startMs, o.endMs = start, end
		return o
	}
	o := outcome{status: resp.StatusCode, attempts: resp.Attempts, header: resp.Header,
		url: resp.Request.URL.String(), startMs: start, endMs: end}
	limit := integer(s["read"], -1)
	var body []byte
	read := func(want int) bool {
		buf := make([]byte, want)
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err == io.EOF {
			return false
		}
		if err != nil {
			var he *humushttp.Error
			if errors.As(err, &he) {
				o.readError = he.Status.String()
			} else {
				o.readError = "not a *humushttp.Error: " + err.Error()
			}
			return false
		}
		return n > 0
	}
	for limit < 0 || int64(len(body)) < limit {
		want := 16384
		if limit >= 0 {
			want = min(want, int(limit)-len(body))
		}
		if !read(want) {
			break
		}
	}
	if done, _ := s["cancel_after_read"].(bool); done && o.readError == "" {
		cancel()
		read(16384)
	}
	o.body = string(body)
	o.trace = traceForVector(humushttp.TraceOf(resp.Response)) // once read, before it is closed
	r.held = append(r.held, heldBody{resp.Body, cancel})
	if hold, _ := s["hold"].(bool); !hold {
		r.closeHeld()
	}
	return o
}

func (r *runner) closeHeld() {
	for _, h := range r.held {
		h.body.Close()
		h.cancel()
	}
	r.held = nil
}

func (r *runner) concurrent(node any, path string) error {
	p := r.p
	group, ok := node.([]any)
	if !ok {
		p.add(path, "must be an array")
		return nil
	}
	type item struct {
		id     int
		path   string
		expect map[string]any
		done   bool
		out    outcome
	}
	var mu sync.Mutex
	finished := sync.NewCond(&mu)
	var items []*item
	r.mock.shutGate()
	defer r.mock.openGate() // whatever happens while submitting, the gate must open again
	start := r.rt.ElapsedMs()
	for i, e := range group {
		at := fmt.Sprintf("%s[%d]", path, i)
		p.keys(e, at, "call", "expect", "repeat", "note")
		entry, _ := e.(map[string]any)
		repeat := int(integer(entry["repeat"], 1))
		for k := 0; k < repeat; k++ {
			it := &item{id: r.nextID, path: at, expect: object(entry, "expect")}
			r.nextID++
			if repeat != 1 {
				it.path = fmt.Sprintf("%s#%d", at, k)
			}
			items = append(items, it)
			req, opts, control, refused := r.build(object(entry, "call"), it.id, it.path+".call", context.Background())
			if refused != nil {
				it.out, it.done = *refused, true
				it.out.startMs, it.out.endMs = start, start
				continue
			}
			r.mock.control(it.id, control)
			call, err := r.client.Start(req, func(resp *humushttp.Response, err error) {
				o := outcomeOf(resp, err)
				o.startMs, o.endMs = start, r.rt.ElapsedMs() // read in the completion, as the C++ runner does
				mu.Lock()
				it.out, it.done = o, true
				mu.Unlock()
				finished.Broadcast()
			}, r.hedged(opts)...)
			if err != nil {
				it.out, it.done = outcomeOf(nil, err), true
				it.out.startMs, it.out.endMs = start, start
				continue
			}
			r.mock.setHandle(it.id, call)
		}
	}
	r.mock.openGate()

	deadline := time.Now().Add(20 * time.Second)
	timer := time.AfterFunc(20*time.Second, finished.Broadcast)
	defer timer.Stop()
	mu.Lock()
	for {
		all := true
		for _, it := range items {
			all = all && it.done
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			mu.Unlock()
			p.add(path, "the calls did not all complete within 20 s of real time")
			r.client.Close()
			r.client = nil
			return errors.New("concurrent group stuck")
		}
		finished.Wait()
	}
	mu.Unlock()
	for _, it := range items {
		r.mock.control(it.id, nil)
		r.observe(it.expect, it.out, it.id, it.path+".expect")
	}
	return nil
}

func (r *runner) observe(e map[string]any, o outcome, id int, path string) {
	sent := r.mock.receivedBy(id)
	if dumping() {
		fmt.Fprintf(os.Stderr, "  %s observed %s\n", path, dump(o.describe(sent)))
	}
	p := r.p
	p.keys(e, path, "status", "error", "attempts", "attempt_times_ms", "elapsed_ms", "retry_after_ms", "body",
		"body_size", "headers", "url", "message", "fields", "sent", "read_error", "trace")
	var what string
	if o.err == nil {
		what = fmt.Sprintf("status %d", o.status)
	} else {
		what = fmt.Sprintf("%s (%s)", o.err.Status, o.message)
	}
	if has(e, "status") {
		if o.err != nil {
			p.add(path+".status", "expected "+dump(e["status"])+", got "+what)
		} else {
			p.equal(path+".status", e["status"], o.status)
		}
	}
	if has(e, "error") {
		if o.err == nil {
			p.add(path+".error", "expected "+dump(e["error"])+", got "+what)
		} else {
			p.equal(path+".error", e["error"], o.err.Status.String())
		}
	}
	if !has(e, "status") && !has(e, "error") {
		p.add(path, "must say status or error")
	}
	if has(e, "attempts") {
		p.equal(path+".attempts", e["attempts"], o.attempts)
	}
	if has(e, "attempt_times_ms") {
		times := []int64{}
		for _, s := range sent {
			times = append(times, s.atMs-o.startMs)
		}
		p.equal(path+".attempt_times_ms", e["attempt_times_ms"], times)
	}
	if has(e, "elapsed_ms") {
		p.equal(path+".elapsed_ms", e["elapsed_ms"], o.endMs-o.startMs)
	}
	if has(e, "retry_after_ms") {
		p.equal(path+".retry_after_ms", e["retry_after_ms"], o.retryAfter)
	}
	if has(e, "read_error") || o.readError != "" {
		var want any
		if has(e, "read_error") {
			want = e["read_error"]
		}
		var got any
		if o.readError != "" {
			got = o.readError
		}
		p.equal(path+".read_error", want, got)
	}
	if has(e, "body") {
		p.equal(path+".body", e["body"], o.body)
	}
	if has(e, "body_size") {
		p.equal(path+".body_size", e["body_size"], len(o.body))
	}
	if has(e, "url") {
		p.equal(path+".url", e["url"], o.url)
	}
	if has(e, "message") {
		p.equal(path+".message", e["message"], o.message)
	}
	if has(e, "fields") {
		fields := o.fields
		if fields == nil {
			fields = []string{}
		}
		p.equal(path+".fields", e["fields"], fields)
	}
	if has(e, "headers") {
		want := object(e, "headers")
		for _, name := range sortedKeys(want) {
			var got any
			if vs := o.header[textproto.CanonicalMIMEHeaderKey(name)]; len(vs) > 0 {
				got = vs[0]
			}
			p.equal(path+".headers."+name, want[name], got)
		}
	}
	if has(e, "trace") {
		r.checkTrace(array(e, "trace"), o.trace, path+".trace")
	}
	if has(e, "sent") {
		want := array(e, "sent")
		if len(want) != len(sent) {
			p.add(path+".sent", fmt.Sprintf("expected %d requests, the mock received %d", len(want), len(sent)))
		}
		for i := 0; i < min(len(want), len(sent)); i++ {
			at := fmt.Sprintf("%s.sent[%d]", path, i)
			w, _ := want[i].(map[string]any)
			p.keys(want[i], at, "method", "path", "url", "headers", "body")
			if has(w, "method") {
				p.equal(at+".method", w["method"], sent[i].method)
			}
			if has(w, "path") {
				p.equal(at+".path", w["path"], sent[i].path)
			}
			if has(w, "url") {
				p.equal(at+".url", w["url"], sent[i].url)
			}
			if has(w, "body") {
				var got any
				if sent[i].body != nil {
					got = *sent[i].body
				}
				p.equal(at+".body", w["body"], got)
			}
			headers := object(w, "headers")
			for _, name := range sortedKeys(headers) {
				var got any
				if v := sent[i].headers[name]; v != nil {
					got = *v
				}
				p.equal(at+".headers."+name, headers[name], got)
			}
		}
	}
}

// then checks the client after a step. Only what the vector names is read (a breaker read may advance it
// lazily, docs/breaker.md §9.2), so every runner reads the client at the same points.
func (r *runner) then(t map[string]any, path string) {
	p := r.p
	p.keys(t, path, "breaker", "budget_tokens", "received", "clock_ms", "bulkhead_limit")
	if dumping() && len(t) > 0 {
		r.dumpState(path)
	}
	if has(t, "breaker") {
		b := object(t, "breaker")
		p.keys(t["breaker"], path+".breaker", "state", "successes", "failures", "consecutive_successes",
			"consecutive_failures", "timed_out_probes", "window_results", "window_failures", "slow_results", "window_slow")
		state, err := r.client.BreakerState()
		if err != nil {
			p.add(path+".breaker", "Client.BreakerState failed: "+err.Error())
		}
		if has(b, "state") {
			p.equal(path+".breaker.state", b["state"], state.String())
		}
		counts, err := r.client.BreakerCounts()
		if err != nil {
			p.add(path+".breaker", "Client.BreakerCounts failed: "+err.Error())
		}
		for _, f := range []struct {
			name  string
			value uint64
		}{
			{"successes", counts.Successes},
			{"failures", counts.Failures},
			{"consecutive_successes", counts.ConsecutiveSuccesses},
			{"consecutive_failures", counts.ConsecutiveFailures},
			{"timed_out_probes", counts.TimedOutProbes},
			{"window_results", uint64(counts.WindowResults)},
			{"window_failures", uint64(counts.WindowFailures)},
			{"slow_results", counts.SlowResults},
			{"window_slow", uint64(counts.WindowSlow)},
		} {
			if has(b, f.name) {
				p.equal(path+".breaker."+f.name, b[f.name], f.value)
			}
		}
	}
	if has(t, "budget_tokens") {
		tokens, err := r.client.BudgetTokens()
		if err != nil {
			p.add(path+".budget_tokens", "Client.BudgetTokens failed: "+err.Error())
		}
		want, _ := t["budget_tokens"].(json.Number)
		w, _ := want.Float64()
		if math.Abs(w-tokens) > 1e-6 {
			p.add(path+".budget_tokens", "expected "+dump(t["budget_tokens"])+", got "+dump(tokens))
		}
	}
	if has(t, "received") {
		p.equal(path+".received", t["received"], len(r.mock.receivedAll()))
	}
	if has(t, "clock_ms") {
		p.equal(path+".clock_ms", t["clock_ms"], r.rt.ElapsedMs())
	}
	if has(t, "bulkhead_limit") {
		p.equal(path+".bulkhead_limit", t["bulkhead_limit"], r.client.BulkheadLimit())
	}
}

func (r *runner) dumpState(path string) {
	counts, _ := r.client.BreakerCounts()
	tokens, _ := r.client.BudgetTokens()
	fmt.Fprintf(os.Stderr, "  %s observed %s\n", path, dump(map[string]any{
		"breaker": map[string]any{
			"state": counts.State.String(), "successes": counts.Successes, "failures": counts.Failures,
			"consecutive_successes": counts.ConsecutiveSuccesses, "consecutive_failures": counts.ConsecutiveFailures,
			"timed_out_probes": counts.TimedOutProbes, "window_results": counts.WindowResults,
			"window_failures": counts.WindowFailures, "slow_results": counts.SlowResults, "window_slow": counts.WindowSlow,
		},
		"budget_tokens": tokens, "received": len(r.mock.receivedAll()), "clock_ms": r.rt.ElapsedMs(),
		"bulkhead_limit": r.client.BulkheadLimit(),
	}))
}
