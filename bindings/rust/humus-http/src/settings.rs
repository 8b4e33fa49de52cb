//! `Settings` of one dependency (docs/settings.md §3): from JSON text, or from typed setters named after §3's fields that
//! write that same JSON. The C core checks every field and reports every bad one at once, by its key.
//! Code-supplied parts (classifier, breaker policy) are set in `classify.rs` and `breaker.rs`.
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

use humus_http_sys as sys;

use crate::classify::ClassifierPreset;
use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::json::Json;

/// The settings of one dependency (docs/settings.md §3), checked by the library. Build a [`Client`](crate::Client)
/// from them; the client copies them, so they can be changed or dropped afterwards.
pub struct Settings {
    raw: NonNull<sys::humus_settings>,
}

// SAFETY: settings are not bound to a thread ("build them on one thread, then hand them over").
unsafe impl Send for Settings {}
// SAFETY: through `&Settings` only humus_settings_clone, humus_settings_to_json and humus_client_new (which
// copies) are reached, each documented "any thread, with no thread changing `s`"; every change takes
// `&mut self`, which Rust makes exclusive of those shared references.
unsafe impl Sync for Settings {}

impl Drop for Settings {
    fn drop(&mut self) {
        // SAFETY: we own the settings; callbacks' destroy runs once their last holder (a client) is freed.
        unsafe { sys::humus_settings_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_json() {
            Ok(json) => f.debug_tuple("Settings").field(&json).finish(),
            Err(e) => f.debug_tuple("Settings").field(&e).finish(),
        }
    }
}

impl Settings {
    /// Parses docs/settings.md §3's JSON form (durations as strings: `"250ms"`, `"5s"`); fields left out take their
    /// defaults. [`ErrorKind::Config`] with one [`Error::fields`] entry per bad key (misspelt keys are
    /// named with the nearest valid one), rules across fields included.
    pub fn from_json(json: &str) -> Result<Settings, Error> {
        let mut raw: *mut sys::humus_settings = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: `json` is valid for `len` bytes during the call; out-parameters are ours.
        let status = unsafe { sys::humus_settings_from_json(json.as_ptr().cast(), json.len(), &mut raw, &mut err) };
        ffi::check(status, err)?;
        Settings::wrap(raw, "humus_settings_from_json")
    }

    /// Typed setters for docs/settings.md §3's fields, starting from the required `base_url`.
    pub fn builder(base_url: &str) -> SettingsBuilder {
        SettingsBuilder::new(base_url)
    }

    /// Checks one value before building settings (docs/settings.md §3.1): `key` is a JSON key path such as `"timeout"`
    /// or `"breaker.window"`, `value_json` the JSON value (`"\"5s\""`, `"20"`). [`ErrorKind::Config`] naming
    /// the key, or for an unknown key the nearest valid one.
    pub fn check(key: &str, value_json: &str) -> Result<(), Error> {
        let key = ffi::c_string(key, "key")?;
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: both strings are valid during the call; any thread.
        let status = unsafe {
            sys::humus_settings_check_field(key.as_ptr(), value_json.as_ptr().cast(), value_json.len(), &mut err)
        };
        ffi::check(status, err)
    }

    /// The library's settings schema as JSON (`{"version": 1, "keys": [...]}`): every key path
    /// (`"breaker.window"`) with its kind, default, bounds and a line of documentation.
    pub fn schema_json() -> Result<String, Error> {
        // SAFETY: the closure passes our out-parameters through; any thread.
        ffi::library_string(|out, len, err| unsafe { sys::humus_settings_schema_json(out, len, err) })
    }

    /// A copy; callbacks (classifier, breaker policy) are shared with the copy.
    pub fn try_clone(&self) -> Result<Settings, Error> {
        let mut raw: *mut sys::humus_settings = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: `self` is live and, borrowed shared, changed by no thread.
        let status = unsafe { sys::humus_settings_clone(self.raw.as_ptr(), &mut raw, &mut err) };
        ffi::check(status, err)?;
        Settings::wrap(raw, "humus_settings_clone")
    }

    /// The effective settings as JSON, defaults filled in, durations as strings.
    pub fn to_json(&self) -> Result<String, Error> {
        // SAFETY: `self` is live and, borrowed shared, changed by no thread; the closure passes our
        // out-parameters through.
        ffi::library_string(|out, len, err| unsafe { sys::humus_settings_to_json(self.raw.as_ptr(), out, len, err) })
    }

    /// The base_url, read from the library's JSON form of the settings; `None` when it has none.
    pub(crate) fn base_url(&self) -> Result<Option<String>, Error> {
        Ok(crate::json::string_member(&self.to_json()?, "base_url"))
    }

    fn wrap(raw: *mut sys::humus_settings, function: &str) -> Result<Settings, Error> {
        NonNull::new(raw)
            .map(|raw| Settings { raw })
            .ok_or_else(|| Error::new(ErrorKind::Internal, format!("{function}: returned no settings"), Vec::new()))
    }

    pub(crate) fn raw(&self) -> *const sys::humus_settings {
        self.raw.as_ptr()
    }

    pub(crate) fn raw_mut(&mut self) -> *mut sys::humus_settings {
        self.raw.as_ptr()
    }
}

/// The retry budget shared by every call of a client (docs/retries.md §6.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryBudget {
    /// The gRPC-style token bucket: starts full at `tokens`; each retry takes one, each success adds
    /// `ratio`; retries stop at half. Defaults 10 and 0.1.
    TokenBucket {
        /// The bucket's size (> 0).
        tokens: f64,
        /// Tokens added back per success, in (0, 1].
        ratio: f64,
    },
    /// Retries up to `ratio` of the requests of the last `window`, plus `min_per_second`.
    Ratio {
        /// The share of recent requests that may be retried, in (0, 1].
        ratio: f64,
        /// Retries allowed per second whatever the traffic (the floor of a quiet client).
        min_per_second: u32,
        /// How far back requests count.
        window: Duration,
    },
}

/// Which HTTP version a client speaks (docs/transport.md §10.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/2 then HTTP/1.1 by ALPN for https; HTTP/1.1 for http (the default).
    Auto,
    /// HTTP/1.1 only.
    Http11,
    /// HTTP/2 only.
    Http2,
}

impl HttpVersion {
    fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Auto => "auto",
            HttpVersion::Http11 => "1.1",
            HttpVersion::Http2 => "2",
        }
    }
}

/// The lowest TLS version a client accepts (docs/transport.md §10.3: nothing below 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 or later.
    V1_2,
    /// TLS 1.3 only.
    V1_3,
}

/// TLS for an https dependency (docs/transport.md §10.3): the trust roots (the given CA and nothing ambient; the system
/// roots when none is given), a client certificate and key for mTLS, the lowest version. Verification is
/// always on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tls {
    fields: Vec<(&'static str, String)>,
}

impl Tls {
    /// No CA given (the system roots), no client certificate.
    pub fn new() -> Tls {
        Tls::default()
    }

    fn with(mut self, key: &'static str, value: String) -> Tls {
        self.fields.retain(|(k, _)| *k != key);
        self.fields.push((key, value));
        self
    }

    /// Trusts the CA certificates of this PEM file, and nothing else (`tls.ca_file`).
    pub fn ca_file(self, path: impl AsRef<Path>) -> Tls {
        self.with("ca_file", path.as_ref().to_string_lossy().into_owned())
    }

    /// Trusts these PEM CA certificates, and nothing else (`tls.ca_pem`).
    pub fn ca_pem(self, pem: &str) -> Tls {
        self.with("ca_pem", pem.to_string())
    }

    /// The client certificate for mTLS, from a PEM file (`tls.cert_file`).
    pub fn cert_file(self, path: impl AsRef<Path>) -> Tls {
        self.with("cert_file", path.as_ref().to_string_lossy().into_owned())
    }

    /// The client certificate for mTLS, as PEM text (`tls.cert_pem`).
    pub fn cert_pem(self, pem: &str) -> Tls {
        self.with("cert_pem", pem.to_string())
    }

    /// The client certificate's private key, from a PEM file (`tls.key_file`).
    pub fn key_file(self, path: impl AsRef<Path>) -> Tls {
        self.with("key_file", path.as_ref().to_string_lossy().into_owned())
    }

    /// The client certificate's private key, as PEM text (`tls.key_pem`).
    pub fn key_pem(self, pem: &str) -> Tls {
        self.with("key_pem", pem.to_string())
    }

    /// The lowest TLS version accepted (`tls.min_version`).
    pub fn min_version(self, version: TlsVersion) -> Tls {
        let text = match version {
            TlsVersion::V1_2 => "1.2",
            TlsVersion::V1_3 => "1.3",
        };
        self.with("min_version", text.to_string())
    }

    fn to_json(&self) -> Json {
        Json::Obj(self.fields.iter().map(|(k, v)| (k.to_string(), Json::Str(v.clone()))).collect())
    }
}

/// Typed setters for docs/settings.md §3's fields, named after them (`breaker.window` is
/// [`breaker_window`](SettingsBuilder::breaker_window)). They write §3's JSON form, which
/// [`build`](SettingsBuilder::build) hands to the library: every bad value comes back at once, as an
/// [`ErrorKind::Config`] error naming each JSON key. Fields not set take the library's defaults.
#[derive(Clone, Debug)]
pub struct SettingsBuilder {
    json: Json,
}

impl SettingsBuilder {
    /// Settings for the dependency at `base_url` (absolute http/https, no user-info).
    pub fn new(base_url: &str) -> SettingsBuilder {
        let mut json = Json::Obj(Vec::new());
        json.set("base_url", Json::Str(base_url.to_string()));
        SettingsBuilder { json }
    }

    fn top(mut self, key: &str, value: Json) -> SettingsBuilder {
        self.json.set(key, value);
        self
    }

    fn nested(mut self, object: &str, key: &str, value: Json) -> SettingsBuilder {
        self.json.object(object).set(key, value);
        self
    }

    /// `timeout`: bounds the whole call, attempts and waits included (default 10 s; > 0 and ≤ 1 h).
    pub fn timeout(self, d: Duration) -> SettingsBuilder {
        self.top("timeout", Json::duration(d))
    }

    /// `attempt_timeout`: one attempt, from dial to response headers (default 5 s; ≤ `timeout`).
    pub fn attempt_timeout(self, d: Duration) -> SettingsBuilder {
        self.top("attempt_timeout", Json::duration(d))
    }

    /// `connect_timeout` (default 2 s; ≤ `attempt_timeout`).
    pub fn connect_timeout(self, d: Duration) -> SettingsBuilder {
        self.top("connect_timeout", Json::duration(d))
    }

    /// `max_attempts` per request, 1..10 (default 3; 1 turns retries off).
    pub fn max_attempts(self, n: u32) -> SettingsBuilder {
        self.top("max_attempts", Json::Int(n.into()))
    }

    /// `backoff_base`: the first retry's jitter cap (default 100 ms).
    pub fn backoff_base(self, d: Duration) -> SettingsBuilder {
        self.top("backoff_base", Json::duration(d))
    }

    /// `backoff_max`: the largest jitter cap (default 2 s; ≥ `backoff_base`).
    pub fn backoff_max(self, d: Duration) -> SettingsBuilder {
        self.top("backoff_max", Json::duration(d))
    }

    /// `retry_budget`: the token bucket (default) or the ratio policy (docs/retries.md §6.4).
    pub fn retry_budget(mut self, budget: RetryBudget) -> SettingsBuilder {
        let mut o = Json::Obj(Vec::new());
        match budget {
            RetryBudget::TokenBucket { tokens, ratio } => {
                o.set("policy", Json::Str("token_bucket".into()));
                o.set("tokens", Json::number(tokens));
                o.set("ratio", Json::number(ratio));
            }
            RetryBudget::Ratio { ratio, min_per_second, window } => {
                o.set("policy", Json::Str("ratio".into()));
                o.set("ratio", Json::number(ratio));
                o.set("min_per_second", Json::Int(min_per_second.into()));
                o.set("window", Json::duration(window));
            }
        }
        self.json.set("retry_budget", o);
        self
    }

    /// `breaker.window`: how many recent results the breaker remembers, 1..10 000 (default 20).
    pub fn breaker_window(self, n: u32) -> SettingsBuilder {
        self.nested("breaker", "window", Json::Int(n.into()))
    }

    /// `breaker.open_for`: how long an open breaker rejects calls (default 10 s).
    pub fn breaker_open_for(self, d: Duration) -> SettingsBuilder {
        self.nested("breaker", "open_for", Json::duration(d))
    }

    /// `breaker.probes`: probes in flight at once in half-open (default 1).
    pub fn breaker_probes(self, n: u32) -> SettingsBuilder {
        self.nested("breaker", "probes", Json::Int(n.into()))
    }

    /// `breaker.probe_timeout`: a probe whose result never comes frees its slot after this (default 10 s).
    pub fn breaker_probe_timeout(self, d: Duration) -> SettingsBuilder {
        self.nested("breaker", "probe_timeout", Json::duration(d))
    }

    /// `trip.consecutive_failures`: the built-in policy opens after this many failures in a row (default 5).
    pub fn trip_consecutive_failures(self, n: u32) -> SettingsBuilder {
        self.nested("trip", "consecutive_failures", Json::Int(n.into()))
    }

    /// `trip.failure_rate`: ... or when at least this share of the window failed (default 0.5).
    pub fn trip_failure_rate(self, rate: f64) -> SettingsBuilder {
        self.nested("trip", "failure_rate", Json::number(rate))
    }

    /// `trip.min_results`: ... counted once the window holds this many results (default 20).
    pub fn trip_min_results(self, n: u32) -> SettingsBuilder {
        self.nested("trip", "min_results", Json::Int(n.into()))
    }

    /// `probe.successes_to_close`: successful probes that close a half-open breaker (default 3).
    pub fn probe_successes_to_close(self, n: u32) -> SettingsBuilder {
        self.nested("probe", "successes_to_close", Json::Int(n.into()))
    }

    /// `bulkhead.max_concurrent`: calls in flight at once (default 50).
    pub fn bulkhead_max_concurrent(self, n: u32) -> SettingsBuilder {
        self.nested("bulkhead", "max_concurrent", Json::Int(n.into()))
    }

    /// `bulkhead.wait`: how long a call waits for a slot (default 500 ms; zero turns it away at once).
    pub fn bulkhead_wait(self, d: Duration) -> SettingsBuilder {
        self.nested("bulkhead", "wait", Json::duration(d))
    }

    /// `max_retry_after`: a longer Retry-After is not waited, the response is returned (default
    /// `backoff_max`).
    pub fn max_retry_after(self, d: Duration) -> SettingsBuilder {
        self.top("max_retry_after", Json::duration(d))
    }

    /// `max_idle_connections` kept per client (default 100).
    pub fn max_idle_connections(self, n: u32) -> SettingsBuilder {
        self.top("max_idle_connections", Json::Int(n.into()))
    }

    /// `idle_timeout`: how long an idle connection is kept (default 90 s).
    pub fn idle_timeout(self, d: Duration) -> SettingsBuilder {
        self.top("idle_timeout", Json::duration(d))
    }

    /// `max_connection_lifetime`: an older connection takes no new request (default 10 min; 1 s to 24 h).
    pub fn max_connection_lifetime(self, d: Duration) -> SettingsBuilder {
        self.top("max_connection_lifetime", Json::duration(d))
    }

    /// `max_response_headers`: the bytes of a response's header section (default 64 KiB; 4 KiB to 1 MiB).
    pub fn max_response_headers(self, bytes: u32) -> SettingsBuilder {
        self.top("max_response_headers", Json::Int(bytes.into()))
    }

    /// `max_response_body`: the decoded bytes of a buffered body (default 64 MiB; 1 KiB to 1 TiB).
    pub fn max_response_body(self, bytes: u64) -> SettingsBuilder {
        self.top("max_response_body", Json::Int(bytes.into()))
    }

    /// `decompress`: ask for compressed bodies and decode them (default true).
    pub fn decompress(self, decompress: bool) -> SettingsBuilder {
        self.top("decompress", Json::Bool(decompress))
    }

    /// `tls`: for an https `base_url` (without it the system roots are trusted); refused for an http one.
    pub fn tls(mut self, tls: &Tls) -> SettingsBuilder {
        self.json.set("tls", tls.to_json());
        self
    }

    /// `http_version` (default auto).
    pub fn http_version(self, version: HttpVersion) -> SettingsBuilder {
        self.top("http_version", Json::Str(version.as_str().to_string()))
    }

    /// `headers`: a header sent with every call (the call's own headers win). Repeatable; names are
    /// case-insensitive and may be given once.
    pub fn header(self, name: &str, value: &str) -> SettingsBuilder {
        self.nested("headers", name, Json::Str(value.to_string()))
    }

    /// `forward_authorization`: send the call context's Bearer token to the dependency (default false).
    pub fn forward_authorization(self, forward: bool) -> SettingsBuilder {
        self.top("forward_authorization", Json::Bool(forward))
    }

    /// `forward_scenario`: keep the fault scenario in the baggage sent on (default false).
    pub fn forward_scenario(self, forward: bool) -> SettingsBuilder {
        self.top("forward_scenario", Json::Bool(forward))
    }

    /// `classify`: a named classifier preset (docs/retries.md §5.5). A closure replaces it through
    /// [`Settings::set_classifier`].
    pub fn classify(self, preset: ClassifierPreset) -> SettingsBuilder {
        self.top("classify", Json::Str(preset.as_str().to_string()))
    }

    /// The JSON text [`build`](SettingsBuilder::build) hands to the library.
    pub fn to_json(&self) -> String {
        self.json.text()
    }

    /// Checks every field and builds the settings: [`ErrorKind::Config`] naming every bad key at once.
    pub fn build(&self) -> Result<Settings, Error> {
        Settings::from_json(&self.to_json())
    }
}
