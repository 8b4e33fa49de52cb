//! The little JSON this crate writes: runtime options and settings in docs/settings.md §3's JSON form, handed to the C
//! core, which parses and checks them; and the little it reads: the library's own output (a decision trace,
//! docs/trace.md §20). No serde dependency for a writer of a few objects and a reader of well-formed text.
use std::fmt::Write as _;
use std::time::Duration;

/// A JSON value to write. Objects keep their keys in insertion order; setting a key again replaces it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Bool(bool),
    Int(i128),
    Num(f64),
    Str(String),
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// A duration as docs/settings.md §3 writes them: a string with the largest unit that keeps it exact ("250ms",
    /// "5s", "1500us"), so messages about it read as the user wrote it. The core refuses a value too large
    /// for it, naming the key.
    pub(crate) fn duration(d: Duration) -> Json {
        let ns = d.as_nanos();
        let text = match ns {
            0 => "0s".to_string(),
            _ if ns % 1_000_000_000 == 0 => format!("{}s", ns / 1_000_000_000),
            _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
            _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
            _ => format!("{ns}ns"),
        };
        Json::Str(text)
    }

    /// A number; a non-finite one (JSON has none) becomes a string the core refuses, naming the key.
    pub(crate) fn number(x: f64) -> Json {
        if x.is_finite() {
            Json::Num(x)
        } else {
            Json::Str(x.to_string())
        }
    }

    /// Sets `key` in an object (replacing an earlier value); a no-op on other values.
    pub(crate) fn set(&mut self, key: &str, value: Json) {
        if let Json::Obj(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    /// The object under `key`, made empty first if absent or not an object.
    pub(crate) fn object(&mut self, key: &str) -> &mut Json {
        let Json::Obj(entries) = self else { unreachable!("object() is called on objects only") };
        let index = match entries.iter().position(|(k, _)| k == key) {
            Some(i) => {
                if !matches!(entries[i].1, Json::Obj(_)) {
                    entries[i].1 = Json::Obj(Vec::new());
                }
                i
            }
            None => {
                entries.push((key.to_string(), Json::Obj(Vec::new())));
                entries.len() - 1
            }
        };
        &mut entries[index].1
    }

    /// The JSON text.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            // `{:?}` prints the shortest text that reads back as the same f64 (0.1, not 0.1000000000000000055).
            Json::Num(x) => {
                let _ = write!(out, "{x:?}");
            }
            Json::Str(s) => write_string(s, out),
            Json::Obj(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259 §7).
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The string value of the first member `key` in JSON `text` (the library's own output: what is read is
/// well-formed), unescaped; `None` when there is none or its value is not a string.
pub(crate) fn string_member(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\"");
    let rest = text[text.find(&quoted)? + quoted.len()..].trim_start().strip_prefix(':')?.trim_start();
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut out = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32).unwrap_or('\u{fffd}'));
                }
                other => out.push(other), // \" \\ \/
            },
            c => out.push(c),
        }
    }
}

/// A JSON value read from the library's output.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object; `Null` when absent or not an object.
    pub(crate) fn get(&self, key: &str) -> &Value {
        match self {
            Value::Obj(entries) => entries.iter().find(|(k, _)| k == key).map_or(&Value::Null, |(_, v)| v),
            _ => &Value::Null,
        }
    }

    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// Parses JSON text (RFC 8259); `None` when it is not one well-formed value.
pub(crate) fn parse(text: &str) -> Option<Value> {
    let mut reader = Reader { bytes: text.as_bytes(), at: 0 };
    let value = reader.value(0)?;
    reader.space();
    (reader.at == reader.bytes.len()).then_some(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// Nesting deeper than this is refused rather than recursed into.
    const MAX_DEPTH: usize = 64;

    fn space(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let ok = self.bytes.get(self.at) == Some(&byte);
        if ok {
            self.at += 1;
        }
        ok
    }

    fn literal(&mut self, word: &str, value: Value) -> Option<Value> {
        let ok = self.bytes[self.at..].starts_with(word.as_bytes());
        self.at += word.len();
        ok.then_some(value)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > Self::MAX_DEPTH {
            return None;
        }
        self.space();
        match *self.bytes.get(self.at)? {
            b'n' => self.literal("null", Value::Null),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'"' => self.string().map(Value::Str),
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Value::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Value::Arr(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'{' => {
                self.at += 1;
                let mut entries = Vec::new();
                if self.eat(b'}') {
                    return Some(Value::Obj(entries));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    entries.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Value::Obj(entries));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        while matches!(self.bytes.get(self.at), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
            self.at += 1;
        }
        std::str::from_utf8(&self.bytes[start..self.at]).ok()?.parse().ok().map(Value::Num)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        self.at += 4;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    }

    fn string(&mut self) -> Option<String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return String::from_utf8(out).ok();
                }
                b'\\' => {
                    self.at += 1;
                    let escaped = *self.bytes.get(self.at)?;
                    self.at += 1;
                    let c = match escaped {
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut code = self.hex4()?;
                            // A surrogate pair: the high half here, the low half in the next escape.
                            if (0xd800..0xdc00).contains(&code) && self.bytes[self.at..].starts_with(b"\\u") {
                                self.at += 2;
                                let low = self.hex4()?;
                                code = 0x10000 + ((code - 0xd800) << 10) + (low.checked_sub(0xdc00)? & 0x3ff);
                            }
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        other => char::from(other), // \" \\ \/
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                byte => {
                    out.push(byte);
                    self.at += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_it_could_write() {
        let v = parse(r#" [{"a": 1.5, "b": null, "c": [true, false], "d": "x\"\u00e9\ud83d\ude00", "e": -2e3}, {}] "#)
            .expect("well-formed");
        let Value::Arr(items) = &v else { panic!("an array") };
        assert_eq!(items[0].get("a").as_f64(), Some(1.5));
        assert_eq!(items[0].get("b"), &Value::Null);
        assert_eq!(items[0].get("c"), &Value::Arr(vec![Value::Bool(true), Value::Bool(false)]));
        assert_eq!(items[0].get("d").as_str(), Some("x\"é😀"));
        assert_eq!(items[0].get("e").as_f64(), Some(-2000.0));
        assert_eq!(items[0].get("missing"), &Value::Null);
        assert_eq!(items[1], Value::Obj(Vec::new()));
        assert_eq!(parse("[1,]"), None);
        assert_eq!(parse("{\"a\" 1}"), None);
        assert_eq!(parse("[1] x"), None);
        assert_eq!(parse(&"[".repeat(100)), None);
    }

    #[test]
    fn writes_objects_in_order_with_escapes() {
        let mut o = Json::Obj(Vec::new());
        o.set("b", Json::Bool(true));
        o.set("a", Json::Str("q\"\\\n\u{1}é".into()));
        o.set("b", Json::Int(-3));
        o.object("n").set("x", Json::number(0.1));
        o.object("n").set("y", Json::number(f64::NAN));
        assert_eq!(o.text(), r#"{"b":-3,"a":"q\"\\\n\u0001é","n":{"x":0.1,"y":"NaN"}}"#);
    }

    #[test]
    fn durations_are_exact_strings() {
        assert_eq!(Json::duration(Duration::from_millis(250)).text(), r#""250ms""#);
        assert_eq!(Json::duration(Duration::from_secs(5)).text(), r#""5s""#);
        assert_eq!(Json::duration(Duration::from_micros(1500)).text(), r#""1500us""#);
        assert_eq!(Json::duration(Duration::new(1, 5)).text(), r#""1000000005ns""#);
        assert_eq!(Json::duration(Duration::ZERO).text(), r#""0s""#);
    }

    #[test]
    fn a_string_member_is_read_unescaped() {
        let text = r#"{"timeout": "5s", "base_url" : "http://a\/b\u0041\"", "x": 1}"#;
        assert_eq!(string_member(text, "base_url").as_deref(), Some("http://a/bA\""));
        assert_eq!(string_member(text, "x"), None);
        assert_eq!(string_member(text, "nope"), None);
    }
}
