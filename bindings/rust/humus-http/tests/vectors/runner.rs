//! Runs one vector through the safe crate's API, as `tests/vectors/README.md` specifies and
//! `tests/vectors/vectors_test.cc` (the reference runner) does through the C ABI.
use std::collections::BTreeSet;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use humus_http::{
    Attempt, BreakerCounts, CancelToken, CircuitState, Classification, Client, Error, ProbeDecision, Request, Response,
    RetryMode, Runtime, Settings, StreamingResponse,
};
use serde_json::{json, Value};

use crate::problems::Problems;
use crate::script::{origin_of, Control, Script, CALL_HEADER};

/// What a classifier or policy says when the vector wants it to fail: the panic hook of main.rs keeps
/// these panics quiet, since they are the scenario.
pub const SCRIPTED_PANIC: &str = "vector: scripted callback panic";

/// One call's outcome.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    error: Option<Error>,
    response: Option<Response>,
    opened: Option<Opened>,
    start_ms: i64,
    end_ms: i64,
}

/// What an "open" step saw of its StreamingResponse: the head, the bytes read, the read that failed.
#[derive(Clone, Debug, Default)]
struct Opened {
    status: u16,
    attempts: u32,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    read_error: Option<String>,
    trace: Vec<humus_http::AttemptRecord>, // once read, before it was closed
}

impl Outcome {
    fn of(result: Result<Response, Error>, start_ms: i64, end_ms: i64) -> Outcome {
        match result {
            Ok(response) => Outcome { response: Some(response), error: None, opened: None, start_ms, end_ms },
            Err(error) => Outcome { error: Some(error), response: None, opened: None, start_ms, end_ms },
        }
    }

    fn attempts(&self) -> u32 {
        match (&self.response, &self.opened, &self.error) {
            (Some(r), _, _) => r.attempts(),
            (_, Some(o), _) => o.attempts,
            (_, _, Some(e)) => e.attempts(),
            _ => 0,
        }
    }

    fn status(&self) -> Option<u16> {
        self.response.as_ref().map(Response::status).or(self.opened.as_ref().map(|o| o.status))
    }

    fn body(&self) -> Option<&[u8]> {
        self.response.as_ref().map(Response::body).or(self.opened.as_ref().map(|o| o.body.as_slice()))
    }

    fn url(&self) -> Option<&str> {
        self.response.as_ref().map(Response::url).or(self.opened.as_ref().map(|o| o.url.as_str()))
    }

    fn header(&self, name: &str) -> Option<&str> {
        match (&self.response, &self.opened) {
            (Some(r), _) => r.header(name),
            (_, Some(o)) => o.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()),
            _ => None,
        }
    }

    /// The call's decision trace, in the vectors' terms.
    fn trace(&self) -> Vec<Value> {
        match (&self.response, &self.opened, &self.error) {
            (Some(r), _, _) => crate::trace::for_vector(&r.trace()),
            (_, Some(o), _) => crate::trace::for_vector(&o.trace),
            (_, _, Some(e)) => crate::trace::for_vector(&e.trace()),
            _ => Vec::new(),
        }
    }

    fn describe(&self) -> String {
        match (self.status(), &self.error) {
            (Some(status), _) => format!("status {status}"),
            (_, Some(e)) => format!("{} ({})", e.kind().name(), e.message()),
            _ => "nothing".to_string(),
        }
    }
}

pub struct Runner {
    v: Value,
    problems: Arc<Problems>,
    runtime: Option<Runtime>,
    client: Option<Arc<Client>>,
    script: Option<Arc<Script>>,
    next_id: i64,
    dump: bool,
}

impl Runner {
    pub fn new(v: Value, problems: Arc<Problems>, dump: bool) -> Runner {
        Runner { v, problems, runtime: None, client: None, script: None, next_id: 1, dump }
    }

    pub fn run(&mut self) {
        let p = Arc::clone(&self.problems);
        p.keys(
            &self.v,
            "",
            &["name", "spec", "description", "runtime", "settings", "callbacks", "script", "steps", "settings_error"],
        );
        let runtime_options = self.v.get("runtime").cloned().unwrap_or(json!({}));
        p.keys(&runtime_options, "runtime", &["seed"]);
        let seed = runtime_options.get("seed").and_then(Value::as_u64).unwrap_or(0);
        let runtime = match Runtime::builder().virtual_clock().seed(seed).build() {
            Ok(runtime) => runtime,
            Err(e) => return p.add("runtime", format!("Runtime::build failed: {e}")),
        };
        let mut names = BTreeSet::new();
        collect_header_names(self.v.get("steps").unwrap_or(&Value::Null), &mut names);
        let script_json = self.v.get("script").cloned().unwrap_or(json!({}));
        self.check_script(&script_json);
        let script = Arc::new(Script::new(
            script_json.as_object().cloned().unwrap_or_default(),
            names,
            Arc::clone(&self.problems),
        ));
        let answering = Arc::clone(&script);
        if let Err(e) = runtime.set_mock_transport(move |request| answering.respond(request)) {
            return p.add("runtime", format!("set_mock_transport failed: {e}"));
        }
        self.runtime = Some(runtime);
        self.script = Some(script);
        if !self.make_client() {
            return;
        }
        let steps = self.v.get("steps").cloned().unwrap_or(json!([]));
        let Some(steps) = steps.as_array() else {
            return p.add("steps", "must be an array");
        };
        // The StreamingResponses of "open" steps with "hold" borrow this handle of the client; they are
        // dropped (closed) before it.
        let client = Arc::clone(self.client.as_ref().expect("made in make_client()"));
        let mut held = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            self.step(step, &format!("steps[{i}]"), &client, &mut held);
        }
        drop(held);
    }

    fn runtime(&self) -> &Runtime {
        self.runtime.as_ref().expect("made in run()")
    }

    fn client(&self) -> &Client {
        self.client.as_deref().expect("made in make_client()")
    }

    fn script(&self) -> &Arc<Script> {
        self.script.as_ref().expect("made in run()")
    }

    fn check_script(&self, script: &Value) {
        let Some(map) = script.as_object() else {
            return self.problems.add("script", "must be an object");
        };
        for (key, replies) in map {
            let path = format!("script.{key}");
            match replies.as_array() {
                Some(list) if !list.is_empty() => {
                    for (i, reply) in list.iter().enumerate() {
                        self.problems.keys(
                            reply,
                            &format!("{path}[{i}]"),
                            &[
                                "status",
                                "headers",
                                "body",
                                "body_size",
                                "delay_ms",
                                "hang",
                                "error",
                                "message",
                                "body_error",
                                "body_error_after",
                                "note",
                            ],
                        );
                    }
                }
                _ => self.problems.add(&path, "must be a non-empty array of replies"),
            }
        }
    }

    fn make_client(&mut self) -> bool {
        let p = Arc::clone(&self.problems);
        let settings_text = self.v.get("settings").cloned().unwrap_or(json!({})).to_string();
        let built = Settings::from_json(&settings_text).and_then(|mut settings| {
            self.install_callbacks(&mut settings);
            Client::new(self.runtime(), &settings)
        });
        let want_error = self.v.get("settings_error");
        if want_error.is_some() && self.v.get("steps").and_then(Value::as_array).is_some_and(|s| !s.is_empty()) {
            p.add("steps", "must be empty with settings_error");
        }
        match (built, want_error) {
            (Ok(client), None) => {
                self.client = Some(Arc::new(client));
                true
            }
            (Ok(_), Some(_)) => {
                p.add("settings_error", "expected the settings to be refused, the client was built");
                false
            }
            (Err(e), None) => {
                p.add("settings", format!("refused: {} {}", e.kind().name(), e.message()));
                false
            }
            (Err(e), Some(want)) => {
                p.keys(want, "settings_error", &["error", "fields"]);
                p.equal("settings_error.error", want.get("error").unwrap_or(&Value::Null), e.kind().name());
                if let Some(fields) = want.get("fields") {
                    let mut got: Vec<String> = e.fields().to_vec();
                    got.sort();
                    let mut expected: Vec<String> = fields
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| f.as_str().unwrap_or_default().to_string())
                        .collect();
                    expected.sort();
                    p.equal("settings_error.fields", &json!(expected), json!(got));
                }
                false
            }
        }
    }

    /// The callbacks a user's code would plug in: closures that panic where the vector wants them to fail.
    fn install_callbacks(&self, settings: &mut Settings) {
        let Some(cb) = self.v.get("callbacks") else { return };
        let p = &self.problems;
        p.keys(cb, "callbacks", &["classifier", "breaker_policy"]);
        if let Some(classifier) = cb.get("classifier") {
            p.keys(classifier, "callbacks.classifier", &["fail_on_status"]);
            let fail: BTreeSet<u64> = classifier
                .get("fail_on_status")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .collect();
            let installed = settings.set_classifier(move |attempt: &Attempt<'_>| -> Classification {
                if attempt.status().is_some_and(|s| fail.contains(&u64::from(s))) {
                    panic!("{SCRIPTED_PANIC}");
                }
                attempt.classify_default().expect("the default classifier")
            });
            if let Err(e) = installed {
                p.add("callbacks.classifier", format!("set_classifier failed: {e}"));
            }
        }
        if let Some(policy) = cb.get("breaker_policy") {
            p.keys(policy, "callbacks.breaker_policy", &["consecutive_failures", "successes_to_close", "fail"]);
            let consecutive = policy.get("consecutive_failures").and_then(Value::as_u64).unwrap_or(5);
            let to_close = policy.get("successes_to_close").and_then(Value::as_u64).unwrap_or(3);
            let fail = policy.get("fail").and_then(Value::as_str).unwrap_or_default().to_string();
            let (fail_trip, fail_probe) = (fail == "trip", fail == "probe");
            let installed = settings.set_breaker_policy(
                move |counts: &BreakerCounts| {
                    if fail_trip {
                        panic!("{SCRIPTED_PANIC}");
                    }
                    counts.consecutive_failures >= consecutive
                },
                move |counts: &BreakerCounts| {
                    if fail_probe {
                        panic!("{SCRIPTED_PANIC}");
                    }
                    if counts.failures > 0 {
                        ProbeDecision::Reopen
                    } else if counts.successes >= to_close {
                        ProbeDecision::Close
                    } else {
                        ProbeDecision::Continue
                    }
                },
            );
            if let Err(e) = installed {
                p.add("callbacks.breaker_policy", format!("set_breaker_policy failed: {e}"));
            }
        }
    }

    fn step<'c>(&mut self, s: &Value, path: &str, client: &'c Client, held: &mut Vec<StreamingResponse<'c>>) {
        let p = Arc::clone(&self.problems);
        p.keys(
            s,
            path,
            &[
                "call",
                "expect",
                "repeat",
                "concurrent",
                "advance_ms",
                "open",
                "read",
                "cancel_after_read",
                "hold",
                "close",
                "then",
                "note",
            ],
        );
        let kinds =
            ["call", "concurrent", "advance_ms", "open", "close"].iter().filter(|k| s.get(**k).is_some()).count();
        if kinds > 1 {
            p.add(path, "a step is one of call, concurrent, advance_ms, open, close (or only then)");
        }
        if ["read", "cancel_after_read", "hold"].iter().any(|k| s.get(*k).is_some()) && s.get("open").is_none() {
            p.add(path, "read, cancel_after_read and hold go with open");
        }
        let no_expectations = json!({});
        if s.get("open").is_some() {
            let id = self.next_id;
            self.next_id += 1;
            let outcome = self.opened_call(s, id, &format!("{path}.open"), client, held);
            self.observe(s.get("expect").unwrap_or(&no_expectations), &outcome, id, &format!("{path}.expect"));
        } else if s.get("close").is_some() {
            held.clear();
        } else if let Some(call) = s.get("call") {
            let repeat = s.get("repeat").and_then(Value::as_i64).unwrap_or(1);
            for i in 0..repeat {
                let at = if repeat == 1 { path.to_string() } else { format!("{path}#{i}") };
                let id = self.next_id;
                self.next_id += 1;
                let outcome = self.blocking_call(call, id, &format!("{at}.call"));
                self.observe(s.get("expect").unwrap_or(&no_expectations), &outcome, id, &format!("{at}.expect"));
            }
        } else if let Some(group) = s.get("concurrent") {
            self.concurrent(group, &format!("{path}.concurrent"));
        } else if let Some(ms) = s.get("advance_ms") {
            if let Err(e) = self.runtime().advance_ms(ms.as_u64().unwrap_or(0)) {
                p.add(&format!("{path}.advance_ms"), format!("advance_ms failed: {e}"));
            }
        } else if s.get("repeat").is_some() || s.get("expect").is_some() {
            p.add(path, "repeat and expect go with a call");
        }
        self.then(s.get("then").unwrap_or(&no_expectations), &format!("{path}.then"));
    }

    /// Builds the request; its refusal (a bad header, timeout_ms 0) is kept in it and is the call's outcome.
    fn build(&self, call: &Value, id: i64, path: &str) -> (Request, Control) {
        let p = &self.problems;
        p.keys(
            call,
            path,
            &[
                "method",
                "path",
                "url",
                "headers",
                "body",
                "idempotency_key",
                "retry",
                "timeout_ms",
                "cancel_at_attempt",
                "note",
            ],
        );
        let text = |key: &str| call.get(key).and_then(Value::as_str);
        let method = text("method").unwrap_or("GET");
        let url = match text("url") {
            Some(url) if !url.is_empty() => url.to_string(),
            _ => format!("{}{}", self.base_origin(), text("path").unwrap_or("/")),
        };
        let mut request = Request::new(method, &url);
        for h in call.get("headers").and_then(Value::as_array).into_iter().flatten() {
            request = request.header(h[0].as_str().unwrap_or_default(), h[1].as_str().unwrap_or_default());
        }
        request = request.header(CALL_HEADER, &id.to_string());
        if let Some(body) = text("body") {
            request = request.body(body);
        }
        if let Some(key) = text("idempotency_key") {
            request = request.idempotency_key(key);
        }
        if let Some(mode) = text("retry") {
            let mode = match mode {
                "forbid" => RetryMode::Forbid,
                "force" => RetryMode::Force,
                "default" => RetryMode::Default,
                _ => {
                    p.add(&format!("{path}.retry"), r#"must be "default", "forbid" or "force""#);
                    RetryMode::Default
                }
            };
            request = request.retry(mode);
        }
        if let Some(ms) = call.get("timeout_ms").and_then(Value::as_i64) {
            request = request.timeout_ms(ms);
        }
        let control = Control {
            cancel_at_attempt: call.get("cancel_at_attempt").and_then(Value::as_i64).unwrap_or(0),
            ..Control::default()
        };
        (request, control)
    }

    fn base_origin(&self) -> String {
        let base = self.v.pointer("/settings/base_url").and_then(Value::as_str).unwrap_or("http://payments:8080");
        origin_of(base)
    }

    fn blocking_call(&self, call: &Value, id: i64, path: &str) -> Outcome {
        let (mut request, mut control) = self.build(call, id, path);
        if let Some(refused) = request.error() {
            let now = self.runtime().elapsed_ms();
            return Outcome::of(Err(refused.clone()), now, now);
        }
        if control.cancel_at_attempt > 0 {
            let token = CancelToken::new();
            request = request.cancel_token(&token);
            control.token = Some(token);
        }
        self.script().control(id, control);
        let start_ms = self.runtime().elapsed_ms();
        let result = self.client().execute(&request);
        let end_ms = self.runtime().elapsed_ms();
        self.script().forget(id);
        Outcome::of(result, start_ms, end_ms)
    }

    /// An "open" step: Client::stream, reads of up to "read" bytes (absent: to the end), a cancel and one more
    /// read when "cancel_after_read", then the StreamingResponse is dropped unless "hold" (a "close" step
    /// drops it).
    fn opened_call<'c>(
        &self,
        s: &Value,
        id: i64,
        path: &str,
        client: &'c Client,
        held: &mut Vec<StreamingResponse<'c>>,
    ) -> Outcome {
        let (request, mut control) = self.build(&s["open"], id, path);
        if let Some(refused) = request.error() {
            let now = self.runtime().elapsed_ms();
            return Outcome::of(Err(refused.clone()), now, now);
        }
        let token = CancelToken::new();
        let request = request.cancel_token(&token);
        control.token = Some(token.clone());
        self.script().control(id, control);
        let start_ms = self.runtime().elapsed_ms();
        let result = client.stream(&request);
        let end_ms = self.runtime().elapsed_ms();
        self.script().forget(id);
        let mut stream = match result {
            Ok(stream) => stream,
            Err(e) => return Outcome::of(Err(e), start_ms, end_ms),
        };
        let mut o = Opened {
            status: stream.status(),
            attempts: stream.attempts(),
            url: stream.url().to_string(),
            headers: stream.headers().to_vec(),
            ..Opened::default()
        };
        let limit = s.get("read").and_then(Value::as_u64).map(|n| n as usize);
        let mut read = |o: &mut Opened, want: usize| -> bool {
            let mut buf = vec![0u8; want.min(16384)];
            match stream.read(&mut buf) {
                Ok(n) => {
                    o.body.extend_from_slice(&buf[..n]);
                    n > 0
                }
                Err(e) => {
                    let name = e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()).map(|e| e.kind().name());
                    o.read_error = Some(name.map_or_else(|| format!("not a humus_http::Error: {e}"), str::to_string));
                    false
                }
            }
        };
        while limit.map_or(true, |n| o.body.len() < n) {
            let want = limit.map_or(16384, |n| n - o.body.len());
            if !read(&mut o, want) {
                break;
            }
        }
        if s.get("cancel_after_read").and_then(Value::as_bool).unwrap_or(false) && o.read_error.is_none() {
            token.cancel();
            read(&mut o, 16384);
        }
        o.trace = stream.trace();
        held.push(stream);
        if !s.get("hold").and_then(Value::as_bool).unwrap_or(false) {
            held.clear();
        }
        Outcome { opened: Some(o), start_ms, end_ms, ..Outcome::default() }
    }

    fn concurrent(&mut self, group: &Value, path: &str) {
        let p = Arc::clone(&self.problems);
        let Some(entries) = group.as_array() else {
            return p.add(path, "must be an array");
        };
        struct Item {
            id: i64,
            path: String,
            expect: Value,
        }
        // Outcomes by item index, filled on the event loop; `all` wakes the runner when one arrives.
        let outcomes: Arc<(Mutex<Vec<Option<Outcome>>>, Condvar)> = Arc::default();
        let mut items = Vec::new();
        let script = Arc::clone(self.script());
        script.shut_gate();
        // Whatever happens while submitting, the gate must open again or the event loop stays stuck.
        struct Reopen(Arc<Script>);
        impl Drop for Reopen {
            fn drop(&mut self) {
                self.0.open_gate();
            }
        }
        let reopen = Reopen(Arc::clone(&script));
        let start = self.runtime().elapsed_ms();
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("{path}[{i}]");
            p.keys(entry, &at, &["call", "expect", "repeat", "note"]);
            let repeat = entry.get("repeat").and_then(Value::as_i64).unwrap_or(1);
            for k in 0..repeat {
                let id = self.next_id;
                self.next_id += 1;
                let item_path = if repeat == 1 { at.clone() } else { format!("{at}#{k}") };
                let index = items.len();
                outcomes.0.lock().unwrap().push(None);
                let call = entry.get("call").cloned().unwrap_or(json!({}));
                let (request, control) = self.build(&call, id, &format!("{item_path}.call"));
                let immediate = if let Some(refused) = request.error() {
                    Some(Outcome::of(Err(refused.clone()), start, self.runtime().elapsed_ms()))
                } else {
                    script.control(id, control);
                    let runtime = self.runtime().clone();
                    let delivered = Arc::clone(&outcomes);
                    let submitted = self.client().submit_with(&request, move |result| {
                        let end = runtime.elapsed_ms();
                        let (list, all) = &*delivered;
                        list.lock().unwrap()[index] = Some(Outcome::of(result, start, end));
                        all.notify_all();
                    });
                    match submitted {
                        Ok(handle) => {
                            script.set_handle(id, handle);
                            None
                        }
                        Err(e) => Some(Outcome::of(Err(e), start, start)),
                    }
                };
                if let Some(outcome) = immediate {
                    outcomes.0.lock().unwrap()[index] = Some(outcome);
                }
                items.push(Item { id, path: item_path, expect: entry.get("expect").cloned().unwrap_or(json!({})) });
            }
        }
        drop(reopen);
        let (list, all) = &*outcomes;
        let (list, timeout) = all
            .wait_timeout_while(list.lock().unwrap(), Duration::from_secs(20), |l| l.iter().any(Option::is_none))
            .unwrap();
        if timeout.timed_out() {
            drop(list);
            p.add(path, "the calls did not all complete within 20 s of real time");
            self.client = None; // freeing the client cancels what is left and waits for every completion
            panic!("concurrent group stuck");
        }
        let done: Vec<Outcome> = list.iter().map(|o| o.clone().expect("all complete")).collect();
        drop(list);
        for (item, outcome) in items.iter().zip(done) {
            script.forget(item.id);
            self.observe(&item.expect, &outcome, item.id, &format!("{}.expect", item.path));
        }
    }

    fn observe(&self, e: &Value, o: &Outcome, id: i64, path: &str) {
        let sent = self.script().received_by(id);
        let p = &self.problems;
        if self.dump {
            eprintln!("  {path} observed {}", describe(o, &sent));
        }
        p.keys(
            e,
            path,
            &[
                "status",
                "error",
                "attempts",
                "attempt_times_ms",
                "elapsed_ms",
                "retry_after_ms",
                "body",
                "body_size",
                "headers",
                "url",
                "message",
                "fields",
                "sent",
                "read_error",
                "trace",
            ],
        );
        let at = |field: &str| format!("{path}.{field}");
        if let Some(want) = e.get("trace") {
            crate::trace::check(p, want, &o.trace(), &at("trace"));
        }
        if let Some(status) = e.get("status") {
            match o.status() {
                Some(got) => p.equal(&at("status"), status, got),
                None => p.add(&at("status"), format!("expected {status}, got {}", o.describe())),
            }
        }
        if let Some(error) = e.get("error") {
            match &o.error {
                Some(err) => p.equal(&at("error"), error, err.kind().name()),
                None => p.add(&at("error"), format!("expected {error}, got {}", o.describe())),
            }
        }
        if e.get("status").is_none() && e.get("error").is_none() {
            p.add(path, "must say status or error");
        }
        if let Some(attempts) = e.get("attempts") {
            p.equal(&at("attempts"), attempts, o.attempts());
        }
        if let Some(times) = e.get("attempt_times_ms") {
            let got: Vec<i64> = sent.iter().map(|r| r.at_ms - o.start_ms).collect();
            p.equal(&at("attempt_times_ms"), times, got);
        }
        if let Some(elapsed) = e.get("elapsed_ms") {
            p.equal(&at("elapsed_ms"), elapsed, o.end_ms - o.start_ms);
        }
        let error = o.error.as_ref();
        if let Some(retry_after) = e.get("retry_after_ms") {
            let got = error.map_or(0, |e| e.retry_after().as_millis() as i64);
            p.equal(&at("retry_after_ms"), retry_after, got);
        }
        let read_error = o.opened.as_ref().and_then(|x| x.read_error.clone());
        if e.get("read_error").is_some() || read_error.is_some() {
            p.equal(
                &at("read_error"),
                e.get("read_error").unwrap_or(&Value::Null),
                read_error.map_or(Value::Null, Value::from),
            );
        }
        let body = o.body().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        if let Some(want) = e.get("body") {
            p.equal(&at("body"), want, body.clone());
        }
        if let Some(want) = e.get("body_size") {
            p.equal(&at("body_size"), want, o.body().map_or(0, <[u8]>::len));
        }
        if let Some(want) = e.get("url") {
            p.equal(&at("url"), want, o.url().unwrap_or_default().to_string());
        }
        if let Some(want) = e.get("message") {
            p.equal(&at("message"), want, error.map(|e| e.message().to_string()).unwrap_or_default());
        }
        if let Some(want) = e.get("fields") {
            p.equal(&at("fields"), want, error.map(|e| e.fields().to_vec()).unwrap_or_default());
        }
        if let Some(headers) = e.get("headers").and_then(Value::as_object) {
            for (name, want) in headers {
                let got = o.header(name).map_or(Value::Null, |v| json!(v));
                p.equal(&format!("{path}.headers.{name}"), want, got);
            }
        }
        if let Some(want) = e.get("sent") {
            let want = want.as_array().cloned().unwrap_or_default();
            if want.len() != sent.len() {
                p.add(&at("sent"), format!("expected {} requests, the mock received {}", want.len(), sent.len()));
            }
            for (i, (w, got)) in want.iter().zip(&sent).enumerate() {
                let at = format!("{path}.sent[{i}]");
                p.keys(w, &at, &["method", "path", "url", "headers", "body"]);
                if let Some(m) = w.get("method") {
                    p.equal(&format!("{at}.method"), m, got.method.clone());
                }
                if let Some(x) = w.get("path") {
                    p.equal(&format!("{at}.path"), x, got.path.clone());
                }
                if let Some(u) = w.get("url") {
                    p.equal(&format!("{at}.url"), u, got.url.clone());
                }
                if let Some(b) = w.get("body") {
                    p.equal(&format!("{at}.body"), b, got.body.clone().map_or(Value::Null, Value::from));
                }
                for (name, value) in w.get("headers").and_then(Value::as_object).into_iter().flatten() {
                    let v = got.headers.get(name).cloned().flatten().map_or(Value::Null, Value::from);
                    p.equal(&format!("{at}.headers.{name}"), value, v);
                }
            }
        }
    }

    /// State checks after a step. Only what the vector asks for is read (a breaker read may advance it
    /// lazily, docs/breaker.md §9.2), so every runner reads the client at the same points.
    fn then(&self, t: &Value, path: &str) {
        let p = &self.problems;
        p.keys(t, path, &["breaker", "budget_tokens", "received", "clock_ms", "bulkhead_limit"]);
        if self.dump && t.as_object().is_some_and(|o| !o.is_empty()) {
            self.dump_state(path);
        }
        if let Some(b) = t.get("breaker") {
            p.keys(
                b,
                &format!("{path}.breaker"),
                &[
                    "state",
                    "successes",
                    "failures",
                    "consecutive_successes",
                    "consecutive_failures",
                    "timed_out_probes",
                    "window_results",
                    "window_failures",
                    "slow_results",
                    "window_slow",
                ],
            );
            let state = self.client().breaker_state();
            if let Err(e) = &state {
                p.add(&format!("{path}.breaker"), format!("breaker_state failed: {e}"));
            }
            if let Some(want) = b.get("state") {
                let got = state.map(CircuitState::as_str).unwrap_or("unknown");
                p.equal(&format!("{path}.breaker.state"), want, got);
            }
            match self.client().breaker_counts() {
                Err(e) => p.add(&format!("{path}.breaker"), format!("breaker_counts failed: {e}")),
                Ok(c) => {
                    let fields = [
                        ("successes", c.successes),
                        ("failures", c.failures),
                        ("consecutive_successes", c.consecutive_successes),
                        ("consecutive_failures", c.consecutive_failures),
                        ("timed_out_probes", c.timed_out_probes),
                        ("window_results", u64::from(c.window_results)),
                        ("window_failures", u64::from(c.window_failures)),
                        ("slow_results", c.slow_results),
                        ("window_slow", u64::from(c.window_slow)),
                    ];
                    for (name, value) in fields {
                        if let Some(want) = b.get(name) {
                            p.equal(&format!("{path}.breaker.{name}"), want, value);
                        }
                    }
                }
            }
        }
        if let Some(want) = t.get("budget_tokens") {
            match self.client().budget_tokens() {
                Err(e) => p.add(&format!("{path}.budget_tokens"), format!("budget_tokens failed: {e}")),
                Ok(tokens) => {
                    if (want.as_f64().unwrap_or(f64::NAN) - tokens).abs() > 1e-6 {
                        p.add(&format!("{path}.budget_tokens"), format!("expected {want}, got {tokens}"));
                    }
                }
            }
        }
        if let Some(want) = t.get("received") {
            p.equal(&format!("{path}.received"), want, self.script().received().len());
        }
        if let Some(want) = t.get("clock_ms") {
            p.equal(&format!("{path}.clock_ms"), want, self.runtime().elapsed_ms());
        }
        if let Some(want) = t.get("bulkhead_limit") {
            match self.client().bulkhead_limit() {
                Err(e) => p.add(&format!("{path}.bulkhead_limit"), format!("bulkhead_limit failed: {e}")),
                Ok(limit) => p.equal(&format!("{path}.bulkhead_limit"), want, limit),
            }
        }
    }

    fn dump_state(&self, path: &str) {
        let counts = self.client().breaker_counts().ok();
        let d = json!({
            "breaker": counts.map(|c| json!({
                "state": c.state.as_str(),
                "successes": c.successes,
                "failures": c.failures,
                "consecutive_successes": c.consecutive_successes,
                "consecutive_failures": c.consecutive_failures,
                "timed_out_probes": c.timed_out_probes,
                "window_results": c.window_results,
                "window_failures": c.window_failures,
                "slow_results": c.slow_results,
                "window_slow": c.window_slow,
            })),
            "budget_tokens": self.client().budget_tokens().ok(),
            "received": self.script().received().len(),
            "clock_ms": self.runtime().elapsed_ms(),
            "bulkhead_limit": self.client().bulkhead_limit().ok(),
        });
        eprintln!("  {path} observed {d}");
    }
}

/// The names of the request headers some "sent" expectation asks about: the mock records just those.
fn collect_header_names(node: &Value, names: &mut BTreeSet<String>) {
    match node {
        Value::Object(map) => {
            for s in map.get("sent").and_then(Value::as_array).into_iter().flatten() {
                for name in s.get("headers").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k) {
                    names.insert(name.clone());
                }
            }
            for value in map.values() {
                collect_header_names(value, names);
            }
        }
        Value::Array(list) => list.iter().for_each(|item| collect_header_names(item, names)),
        _ => {}
    }
}

/// What a call observed, for HUMUS_VECTOR_DUMP=1.
fn describe(o: &Outcome, sent: &[crate::script::Received]) -> Value {
    let mut d = json!({});
    match (o.status(), o.body(), &o.error) {
        (Some(status), Some(body), _) => {
            d["status"] = json!(status);
            if body.len() <= 64 {
                d["body"] = json!(String::from_utf8_lossy(body));
            } else {
                d["body_size"] = json!(body.len());
            }
        }
        (_, _, Some(e)) => {
            d["error"] = json!(e.kind().name());
            d["message"] = json!(e.message());
            d["retry_after_ms"] = json!(e.retry_after().as_millis() as u64);
        }
        _ => {}
    }
    d["attempts"] = json!(o.attempts());
    d["attempt_times_ms"] = json!(sent.iter().map(|r| r.at_ms - o.start_ms).collect::<Vec<_>>());
    d["sent"] = json!(sent.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>());
    d["elapsed_ms"] = json!(o.end_ms - o.start_ms);
    d["trace"] = json!(o.trace());
    d
}
