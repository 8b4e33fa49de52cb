//! The mismatches of one vector, in the order found: the first is printed, all are reported.
use std::sync::Mutex;

use serde_json::Value;

#[derive(Default)]
pub struct Problems {
    list: Mutex<Vec<String>>,
}

impl Problems {
    pub fn add(&self, path: &str, what: impl AsRef<str>) {
        self.list.lock().unwrap().push(format!("{path}: {}", what.as_ref()));
    }

    pub fn list(&self) -> Vec<String> {
        self.list.lock().unwrap().clone()
    }

    /// Refuses keys the format does not know: a misspelt expectation must not pass by checking nothing.
    pub fn keys(&self, object: &Value, path: &str, allowed: &[&str]) -> bool {
        let Some(map) = object.as_object() else {
            self.add(path, "must be an object");
            return false;
        };
        let mut ok = true;
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                self.add(&format!("{path}.{key}"), "unknown key");
                ok = false;
            }
        }
        ok
    }

    pub fn equal(&self, path: &str, expected: &Value, actual: impl Into<Value>) {
        let actual = actual.into();
        if !same(expected, &actual) {
            self.add(path, format!("expected {expected}, got {actual}"));
        }
    }
}

/// JSON equality as nlohmann's (the reference runner's): numbers compare by value, so 2 equals 2.0.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
