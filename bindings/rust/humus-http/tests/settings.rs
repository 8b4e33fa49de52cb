//! Settings (docs/settings.md §3): the JSON form, the typed setters, and errors naming every bad key.
use std::time::Duration;

use humus_http::{
    BulkheadAlgorithm, BulkheadMode, ClassifierPreset, Client, ErrorKind, HttpVersion, RetryBudget, Runtime, Settings,
    SettingsBuilder, Tls, TlsVersion,
};
use serde_json::{json, Value};

fn effective(settings: &Settings) -> Value {
    serde_json::from_str(&settings.to_json().unwrap()).unwrap()
}

#[test]
fn json_settings_take_defaults_for_what_is_left_out() {
    let settings = Settings::from_json(r#"{"base_url": "http://payments:8080", "timeout": "3s"}"#).unwrap();
    let json = effective(&settings);
    assert_eq!(json["base_url"], "http://payments:8080");
    assert_eq!(json["timeout"], "3s");
    assert_eq!(json["max_attempts"], 3);
    assert_eq!(json["breaker"]["window"], 20);
    assert_eq!(json["bulkhead"]["wait"], "500ms");
    assert!(format!("{settings:?}").contains("http://payments:8080"));
}

#[test]
fn every_bad_key_is_named_at_once() {
    let error = Settings::from_json(
        r#"{"base_url": "http://payments:8080", "timout": "1s", "max_attempts": 0, "breaker": {"window": -1}}"#,
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    let mut fields = error.fields().to_vec();
    fields.sort();
    assert_eq!(fields, ["breaker.window", "max_attempts", "timout"]);
    assert!(error.message().contains(r#"did you mean "timeout""#), "{error}");
    assert!(error.to_string().starts_with("HUMUS_E_CONFIG: "), "{error}");
}

#[test]
fn rules_across_fields_name_both_fields() {
    let error = Settings::builder("http://payments:8080")
        .timeout(Duration::from_secs(1))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.fields().iter().any(|f| f == "attempt_timeout"), "{error}");

    let error = Settings::builder("http://payments:8080").tls(&Tls::new()).build().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "tls on a plain-text base_url");
    let mut fields = error.fields().to_vec();
    fields.sort();
    assert_eq!(fields, ["base_url", "tls"], "{error}");
    // An https base_url without tls is valid: the system roots are trusted (docs/transport.md §10.3).
    Settings::builder("https://payments:8443").build().unwrap();
}

#[test]
fn the_typed_setters_write_the_spec_json() {
    let builder = Settings::builder("https://payments:8443")
        .timeout(Duration::from_millis(2500))
        .attempt_timeout(Duration::from_secs(1))
        .connect_timeout(Duration::from_micros(500_500))
        .max_attempts(4)
        .backoff_base(Duration::from_millis(20))
        .backoff_max(Duration::from_millis(400))
        .retry_budget(RetryBudget::Ratio { ratio: 0.25, min_per_second: 2, window: Duration::from_secs(5) })
        .breaker_window(7)
        .breaker_open_for(Duration::from_secs(30))
        .breaker_probes(2)
        .breaker_probe_timeout(Duration::from_secs(4))
        .trip_consecutive_failures(6)
        .trip_failure_rate(0.75)
        .trip_min_results(12)
        .probe_successes_to_close(2)
        .bulkhead_max_concurrent(8)
        .bulkhead_wait(Duration::ZERO)
        .max_retry_after(Duration::from_secs(3))
        .max_idle_connections(4)
        .idle_timeout(Duration::from_secs(60))
        .tls(&Tls::new().ca_file("/etc/ca.pem").min_version(TlsVersion::V1_3))
        .http_version(HttpVersion::Http2)
        .header("X-Service", "checkout")
        .forward_authorization(true)
        .forward_scenario(true)
        .classify(ClassifierPreset::Strict);
    let written: Value = serde_json::from_str(&builder.to_json()).unwrap();
    assert_eq!(
        written,
        json!({
            "base_url": "https://payments:8443", "timeout": "2500ms", "attempt_timeout": "1s",
            "connect_timeout": "500500us", "max_attempts": 4, "backoff_base": "20ms", "backoff_max": "400ms",
            "retry_budget": {"policy": "ratio", "ratio": 0.25, "min_per_second": 2, "window": "5s"},
            "breaker": {"window": 7, "open_for": "30s", "probes": 2, "probe_timeout": "4s"},
            "trip": {"consecutive_failures": 6, "failure_rate": 0.75, "min_results": 12},
            "probe": {"successes_to_close": 2},
            "bulkhead": {"max_concurrent": 8, "wait": "0s"},
            "max_retry_after": "3s", "max_idle_connections": 4, "idle_timeout": "60s",
            "tls": {"ca_file": "/etc/ca.pem", "min_version": "1.3"},
            "http_version": "2", "headers": {"X-Service": "checkout"},
            "forward_authorization": true, "forward_scenario": true, "classify": "strict"
        })
    );
    // The library accepts all of it (a CA file is read only when a client is built).
    let json = effective(&builder.build().unwrap());
    assert_eq!(json["retry_budget"]["min_per_second"], 2);
    assert_eq!(json["trip"]["failure_rate"], 0.75);
    assert_eq!(json["classify"], "strict");
    assert_eq!(json["headers"]["X-Service"], "checkout");
}

#[test]
fn the_token_bucket_and_the_other_choices_are_written_too() {
    let builder = Settings::builder("http://payments:8080")
        .retry_budget(RetryBudget::TokenBucket { tokens: 4.0, ratio: 0.5 })
        .http_version(HttpVersion::Http11)
        .classify(ClassifierPreset::Jfast)
        .tls(&Tls::new().ca_pem("A").cert_pem("B").key_pem("C").cert_file("/c").key_file("/k").ca_file("/a"));
    let written: Value = serde_json::from_str(&builder.to_json()).unwrap();
    assert_eq!(written["retry_budget"], json!({"policy": "token_bucket", "tokens": 4.0, "ratio": 0.5}));
    assert_eq!(written["http_version"], "1.1");
    assert_eq!(written["classify"], "jfast");
    assert_eq!(
        written["tls"],
        json!({"ca_pem": "A", "cert_pem": "B", "key_pem": "C", "cert_file": "/c", "key_file": "/k", "ca_file": "/a"})
    );
    let auto: Value =
        serde_json::from_str(&Settings::builder("http://a").http_version(HttpVersion::Auto).to_json()).unwrap();
    assert_eq!(auto["http_version"], "auto");
    assert_eq!(ClassifierPreset::Humus.as_str(), "humus");
}

#[test]
fn bad_typed_values_come_back_by_their_json_keys() {
    let error = Settings::builder("http://payments:8080")
        .max_attempts(0)
        .breaker_window(0)
        .trip_failure_rate(f64::NAN)
        .retry_budget(RetryBudget::TokenBucket { tokens: 0.0, ratio: 2.0 })
        .header("Bad Name", "x")
        .build()
        .unwrap_err();
    let mut fields = error.fields().to_vec();
    fields.sort();
    assert_eq!(
        fields,
        [
            "breaker.window",
            "headers.Bad Name",
            "max_attempts",
            "retry_budget.ratio",
            "retry_budget.tokens",
            "trip.failure_rate"
        ],
        "{error}"
    );
}

#[test]
fn one_value_is_checked_before_building() {
    Settings::check("timeout", r#""5s""#).unwrap();
    Settings::check("breaker.window", "20").unwrap();
    let error = Settings::check("breaker.window", "0").unwrap_err();
    assert_eq!((error.kind(), error.fields()), (ErrorKind::Config, &["breaker.window".to_string()][..]));
    let error = Settings::check("timout", r#""5s""#).unwrap_err();
    assert!(error.message().contains("timeout"), "{error}");
    assert_eq!(Settings::check("ti\0meout", "1").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_clone_is_independent_and_shares_the_classifier() {
    let mut original = SettingsBuilder::new("http://payments:8080").max_attempts(2).build().unwrap();
    let copy = original.try_clone().unwrap();
    original.set_classifier(|attempt| attempt.classify_default().unwrap()).unwrap();
    assert_eq!(effective(&copy)["max_attempts"], 2);
    drop(original);
    assert_eq!(effective(&copy)["base_url"], "http://payments:8080");
}

#[test]
fn an_unreadable_ca_file_is_a_config_error_when_the_client_is_built() {
    let settings =
        Settings::builder("https://payments:8443").tls(&Tls::new().ca_file("/nonexistent/ca.pem")).build().unwrap();
    let error = Client::new(&Runtime::new().unwrap(), &settings).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    assert_eq!(error.fields(), ["tls.ca_file"]);
}

#[test]
fn settings_can_be_built_on_one_thread_and_used_on_another() {
    let settings = Settings::builder("http://payments:8080").build().unwrap();
    let json = std::thread::spawn(move || settings.to_json().unwrap()).join().unwrap();
    assert!(json.contains("payments"));
}

#[test]
fn connection_and_response_limits_are_written_and_checked() {
    let builder = Settings::builder("http://payments:8080")
        .max_connection_lifetime(Duration::from_secs(1800))
        .max_response_headers(8192)
        .max_response_body(1 << 30)
        .decompress(false);
    let json = effective(&builder.build().unwrap());
    assert_eq!(json["max_connection_lifetime"], "30m");
    assert_eq!(json["max_response_headers"], 8192);
    assert_eq!(json["max_response_body"], 1u64 << 30);
    assert_eq!(json["decompress"], false);
    let defaults = effective(&Settings::builder("http://payments:8080").build().unwrap());
    assert_eq!(defaults["max_connection_lifetime"], "10m");
    assert_eq!(defaults["max_response_headers"], 65536);
    assert_eq!(defaults["max_response_body"], 64u64 << 20);
    assert_eq!(defaults["decompress"], true);
    let error = Settings::builder("http://payments:8080")
        .max_connection_lifetime(Duration::from_millis(10))
        .max_response_headers(100)
        .max_response_body((1 << 40) + 1)
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert_eq!(error.fields(), ["max_connection_lifetime", "max_response_headers", "max_response_body"]);
}

#[test]
fn values_set_are_checked_against_each_other_even_when_equal_to_a_default() {
    let error = Settings::builder("http://payments:8080")
        .timeout(Duration::from_secs(1))
        .attempt_timeout(Duration::from_secs(5))
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert!(error.fields().iter().any(|f| f == "attempt_timeout"), "{error}");
    assert!(error.fields().iter().any(|f| f == "timeout"), "{error}");
    let capped = effective(&Settings::builder("http://payments:8080").timeout(Duration::from_secs(1)).build().unwrap());
    assert_eq!(capped["attempt_timeout"], "1s");
}

/// One choice of an enumeration and the builder call that makes it.
type Choice = (&'static str, fn(SettingsBuilder) -> SettingsBuilder);

/// How the builder sets one schema key, typed by the key's kind.
#[derive(Clone, Copy)]
enum Setter {
    Duration(fn(SettingsBuilder, Duration) -> SettingsBuilder),
    Count(fn(SettingsBuilder, u32) -> SettingsBuilder),
    Bytes(fn(SettingsBuilder, u64) -> SettingsBuilder),
    Number(fn(SettingsBuilder, f64) -> SettingsBuilder),
    Share(fn(SettingsBuilder, f64) -> SettingsBuilder),
    Bool(fn(SettingsBuilder, bool) -> SettingsBuilder),
    Text(fn(SettingsBuilder, &str) -> SettingsBuilder, &'static str),
    Enum(&'static [Choice]),
    Map(fn(SettingsBuilder, &str, &str) -> SettingsBuilder),
    Object,
    BaseUrl,
}

impl Setter {
    fn kind(self) -> &'static str {
        match self {
            Setter::Duration(_) => "duration",
            Setter::Count(_) => "count",
            Setter::Bytes(_) => "bytes",
            Setter::Number(_) => "number",
            Setter::Share(_) => "share",
            Setter::Bool(_) => "bool",
            Setter::Text(..) | Setter::BaseUrl => "string",
            Setter::Enum(_) => "enum",
            Setter::Map(_) => "map",
            Setter::Object => "object",
        }
    }
}

const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

// The rows of the setters generated from the schema: `generated_setters()`.
include!("generated/settings_setters.rs");

/// The coverage table: the rows of the setters typed by hand (an enum of the crate's, the retry budget's
/// policies, the Tls value), then the generated ones.
fn setters() -> Vec<(&'static str, Setter)> {
    use Setter::*;
    fn ratio(b: SettingsBuilder, ratio: f64) -> SettingsBuilder {
        b.retry_budget(RetryBudget::TokenBucket { tokens: 10.0, ratio })
    }
    let mut rows = vec![
        ("base_url", BaseUrl),
        ("retry_budget", Object),
        (
            "retry_budget.policy",
            Enum(&[
                ("token_bucket", |b| b.retry_budget(RetryBudget::TokenBucket { tokens: 10.0, ratio: 0.1 })),
                ("ratio", |b| {
                    b.retry_budget(RetryBudget::Ratio {
                        ratio: 0.2,
                        min_per_second: 1,
                        window: std::time::Duration::from_secs(10),
                    })
                }),
            ]),
        ),
        ("retry_budget.tokens", Number(|b, tokens| b.retry_budget(RetryBudget::TokenBucket { tokens, ratio: 0.1 }))),
        ("retry_budget.ratio", Share(ratio)),
        (
            "retry_budget.min_per_second",
            Count(|b, min_per_second| {
                b.retry_budget(RetryBudget::Ratio {
                    ratio: 0.2,
                    min_per_second,
                    window: std::time::Duration::from_secs(10),
                })
            }),
        ),
        (
            "retry_budget.window",
            Duration(|b, window| b.retry_budget(RetryBudget::Ratio { ratio: 0.2, min_per_second: 1, window })),
        ),
        ("tls", Object),
        (
            "tls.min_version",
            Enum(&[
                ("1.2", |b| b.tls(&Tls::new().min_version(TlsVersion::V1_2))),
                ("1.3", |b| b.tls(&Tls::new().min_version(TlsVersion::V1_3))),
            ]),
        ),
        (
            "bulkhead.mode",
            Enum(&[
                ("fixed", |b| b.bulkhead_mode(BulkheadMode::Fixed)),
                ("adaptive", |b| b.bulkhead_mode(BulkheadMode::Adaptive)),
            ]),
        ),
        (
            "bulkhead.algorithm",
            Enum(&[
                ("gradient2", |b| b.bulkhead_algorithm(BulkheadAlgorithm::Gradient2)),
                ("aimd", |b| b.bulkhead_algorithm(BulkheadAlgorithm::Aimd)),
            ]),
        ),
        (
            "http_version",
            Enum(&[
                ("auto", |b| b.http_version(HttpVersion::Auto)),
                ("1.1", |b| b.http_version(HttpVersion::Http11)),
                ("2", |b| b.http_version(HttpVersion::Http2)),
            ]),
        ),
        (
            "classify",
            Enum(&[
                ("humus", |b| b.classify(ClassifierPreset::Humus)),
                ("jfast", |b| b.classify(ClassifierPreset::Jfast)),
                ("strict", |b| b.classify(ClassifierPreset::Strict)),
            ]),
        ),
    ];
    rows.extend(generated_setters());
    rows
}

/// The value the builder wrote at a key path ("breaker.window"), or null.
fn written_at(builder: &SettingsBuilder, key: &str) -> Value {
    let mut at: Value = serde_json::from_str(&builder.to_json()).unwrap();
    for part in key.split('.') {
        at = at.get(part).cloned().unwrap_or(Value::Null);
    }
    at
}

// Every key of the library's schema has a builder method of the same kind that writes that very key with a
// value the library accepts for it; and the builder knows no key the schema lacks.
#[test]
fn the_builder_covers_every_key_of_the_library_schema() {
    let schema: Value = serde_json::from_str(&Settings::schema_json().unwrap()).unwrap();
    let keys = schema["keys"].as_array().unwrap();
    assert!(keys.len() > 40, "{schema}");
    let setters = setters();
    for entry in keys {
        let key = entry["key"].as_str().unwrap();
        let kind = entry["kind"].as_str().unwrap();
        if kind == "plugin" {
            continue; // a plugin (breaker_policy) is named through Settings::from_json: tests/plugin.rs
        }
        let Some(&(_, setter)) = setters.iter().find(|(k, _)| *k == key) else {
            panic!("schema key {key} ({kind}) has no builder method");
        };
        assert_eq!(setter.kind(), kind, "{key}");
        let b = || Settings::builder("https://payments");
        let min = entry["min"].as_u64().unwrap_or(0);
        let min = if entry["min_exclusive"] == true { min + 1 } else { min };
        let written: Vec<(SettingsBuilder, Value)> = match setter {
            Setter::Duration(set) => vec![(set(b(), Duration::from_secs(1)), json!("1s"))],
            Setter::Count(set) => vec![(set(b(), min.try_into().unwrap()), json!(min))],
            Setter::Bytes(set) => vec![(set(b(), min), json!(min))],
            Setter::Number(set) | Setter::Share(set) => vec![(set(b(), 0.5), json!(0.5))],
            Setter::Bool(set) => vec![(set(b(), false), json!(false)), (set(b(), true), json!(true))],
            Setter::Text(set, sample) => vec![(set(b(), sample), json!(sample))],
            Setter::Enum(choices) => {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                assert_eq!(json!(names), entry["choices"], "{key}");
                choices.iter().map(|(name, set)| (set(b()), json!(name))).collect()
            }
            Setter::Map(set) => vec![(set(b(), "X-A", "1"), json!({"X-A": "1"}))],
            Setter::Object | Setter::BaseUrl => vec![],
        };
        for (builder, value) in written {
            assert_eq!(written_at(&builder, key), value, "{key}: {}", builder.to_json());
            Settings::check(key, &value.to_string()).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
    }
    for (key, _) in &setters {
        assert!(keys.iter().any(|e| e["key"] == *key), "the builder sets {key}, which the schema lacks");
    }
}
