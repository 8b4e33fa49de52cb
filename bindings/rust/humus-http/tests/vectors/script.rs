//! The scripted dependency: the mock transport's closure answers each request from the vector's `script`
//! (each key keeps its own position, the last reply repeats), records what arrived, cancels calls at their
//! `cancel_at_attempt`, and holds attempts at a gate while a concurrent group is being submitted.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use humus_http::{CallHandle, CancelToken, ErrorKind, MockReply, MockRequest};
use serde_json::{Map, Value};

use crate::problems::Problems;

/// The header the runner adds to every call so the mock knows which call an attempt belongs to.
pub const CALL_HEADER: &str = "Vector-Call";

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct Received {
    pub call: i64, // the Vector-Call header; -1 when absent
    pub method: String,
    pub url: String,
    pub path: String,
    pub at_ms: i64,                                // the runtime's clock when the request reached the mock
    pub headers: BTreeMap<String, Option<String>>, // the names some expectation asks about
    pub body: Option<String>,                      // None: no body
}

/// How the runner cancels one call from inside the mock.
#[derive(Clone, Default)]
pub struct Control {
    pub cancel_at_attempt: i64, // 0: never
    pub seen: i64,
    pub token: Option<CancelToken>, // a blocking call's
    pub handle: Option<CallHandle>, // an asynchronous call's
}

#[derive(Default)]
struct State {
    gate_open: bool,
    served: HashMap<String, usize>, // replies served per script key
    received: Vec<Received>,
    controls: HashMap<i64, Control>,
}

pub struct Script {
    replies: Map<String, Value>,
    header_names: BTreeSet<String>,
    problems: Arc<Problems>,
    state: Mutex<State>,
    gate: Condvar,
}

impl Script {
    pub fn new(replies: Map<String, Value>, header_names: BTreeSet<String>, problems: Arc<Problems>) -> Script {
        let state = State { gate_open: true, ..State::default() };
        Script { replies, header_names, problems, state: Mutex::new(state), gate: Condvar::new() }
    }

    /// While the gate is shut, attempts wait in the mock: the thread driving them stays busy, so the virtual
    /// clock cannot move until every call of a concurrent group has been handed to the library.
    pub fn shut_gate(&self) {
        self.state.lock().unwrap().gate_open = false;
    }

    pub fn open_gate(&self) {
        self.state.lock().unwrap().gate_open = true;
        self.gate.notify_all();
    }

    pub fn control(&self, call: i64, control: Control) {
        self.state.lock().unwrap().controls.insert(call, control);
    }

    pub fn set_handle(&self, call: i64, handle: CallHandle) {
        self.state.lock().unwrap().controls.entry(call).or_default().handle = Some(handle);
    }

    pub fn forget(&self, call: i64) {
        self.state.lock().unwrap().controls.remove(&call);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    pub fn received_by(&self, call: i64) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.call == call).collect()
    }

    /// The mock transport's answer to one request.
    pub fn respond(&self, request: &MockRequest<'_>) -> MockReply {
        let mut state = self.gate.wait_while(self.state.lock().unwrap(), |s| !s.gate_open).unwrap();
        let url = request.url().to_string();
        let body = request.body();
        let received = Received {
            call: request.header(CALL_HEADER).and_then(|id| id.parse().ok()).unwrap_or(-1),
            method: request.method().to_string(),
            path: path_of(&url),
            url,
            at_ms: request.elapsed_ms(),
            headers: self
                .header_names
                .iter()
                .map(|name| (name.clone(), request.header(name).map(str::to_string)))
                .collect(),
            body: (!body.is_empty()).then(|| String::from_utf8_lossy(body).into_owned()),
        };
        let key = format!("{} {}", received.method, received.path);
        let call = received.call;
        state.received.push(received);

        if let Some(control) = state.controls.get_mut(&call) {
            control.seen += 1;
            if control.seen == control.cancel_at_attempt {
                if let Some(token) = &control.token {
                    token.cancel();
                }
                if let Some(handle) = &control.handle {
                    handle.cancel();
                }
            }
        }

        let key = if self.replies.contains_key(&key) { key } else { "*".to_string() };
        let Some(replies) = self.replies.get(&key).and_then(Value::as_array).filter(|r| !r.is_empty()) else {
            self.problems.add("script", format!("no reply for \"{key}\" and no \"*\""));
            return MockReply::new().error(ErrorKind::Connect, "unscripted request");
        };
        let next = state.served.entry(key.clone()).or_insert(0);
        let one = &replies[(*next).min(replies.len() - 1)];
        *next += 1;
        drop(state);
        self.reply(one, &format!("script.{key}"))
    }

    fn reply(&self, one: &Value, path: &str) -> MockReply {
        let mut reply = MockReply::new().status(one.get("status").and_then(Value::as_u64).unwrap_or(200) as u16);
        for h in one.get("headers").and_then(Value::as_array).into_iter().flatten() {
            reply = reply.header(h[0].as_str().unwrap_or_default(), h[1].as_str().unwrap_or_default());
        }
        if let Some(body) = one.get("body").and_then(Value::as_str) {
            reply = reply.body(body);
        } else if let Some(size) = one.get("body_size").and_then(Value::as_u64) {
            reply = reply.body(vec![b'x'; size as usize]);
        }
        if let Some(ms) = one.get("delay_ms").and_then(Value::as_u64) {
            reply = reply.delay(Duration::from_millis(ms));
        }
        if one.get("hang").and_then(Value::as_bool).unwrap_or(false) {
            reply = reply.hang();
        }
        if let Some(name) = one.get("error").and_then(Value::as_str) {
            let kind = ErrorKind::from_name(name).unwrap_or_else(|| {
                self.problems.add(&format!("{path}.error"), format!("unknown status name {name}"));
                ErrorKind::Connect
            });
            reply = reply.error(kind, one.get("message").and_then(Value::as_str).unwrap_or("scripted"));
        }
        if let Some(name) = one.get("body_error").and_then(Value::as_str) {
            let kind = ErrorKind::from_name(name).unwrap_or_else(|| {
                self.problems.add(&format!("{path}.body_error"), format!("unknown status name {name}"));
                ErrorKind::ConnectionLost
            });
            let after = one.get("body_error_after").and_then(Value::as_u64).unwrap_or(0) as usize;
            reply = reply.body_error(after, kind);
        }
        reply
    }
}

/// The path and query of an absolute URL: "http://payments:8080/a?b" → "/a?b".
pub fn path_of(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        None => "/".to_string(),
        Some(i) => {
            let rest = &url[after_scheme + i..];
            if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("/{rest}")
            }
        }
    }
}

/// The origin of an absolute URL: "http://payments:8080/a" → "http://payments:8080".
pub fn origin_of(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        None => url.to_string(),
        Some(i) => url[..after_scheme + i].to_string(),
    }
}
