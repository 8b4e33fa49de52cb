//! A classifier compiled in C as a plugin (docs/retries.md §5.4a), named in the settings JSON:
//! bindings/c/examples/retry_409_plugin.c, from HUMUS_TEST_PLUGIN when set, else built here with `cc`. The
//! rule runs in C inside the library: no Rust closure is called per attempt.
mod support;

use std::path::PathBuf;
use std::process::Command;

use humus_http::{Client, ErrorKind, Settings};
use serde_json::json;
use support::{runtime, unique_path, TestServer};

fn example_plugin() -> String {
    if let Ok(path) = std::env::var("HUMUS_TEST_PLUGIN") {
        return path;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libretry_409_plugin.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-std=c99", "-shared", "-fPIC", "-Wall", "-Werror"])
        .arg(format!("-I{}", root.join("include").display()))
        .arg("-o")
        .arg(&out)
        .arg(root.join("bindings/c/examples/retry_409_plugin.c"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(status.success(), "building the example plugin failed");
    out.to_string_lossy().into_owned()
}

#[test]
fn a_classifier_plugin_retries_a_409_and_counts_it_a_success() {
    let server = TestServer::shared();
    let path = unique_path("plugin");
    server.script(&path, json!([{"status": 409}, {"status": 200, "body": "paid"}]));
    let settings = Settings::from_json(
        &json!({
            "base_url": server.url("http", ""),
            "backoff_base": "1ms",
            "backoff_max": "5ms",
            "classify": {"plugin": example_plugin(), "symbol": "retry_409_classifier", "config": {"status": 409}},
        })
        .to_string(),
    )
    .unwrap();
    let client = Client::new(&runtime(), &settings).unwrap();
    let response = client.get(&server.url("http", &path)).unwrap();
    assert_eq!((response.status(), response.attempts()), (200, 2));
    assert_eq!(response.text().unwrap(), "paid");
    let counts = client.breaker_counts().unwrap();
    assert_eq!((counts.successes, counts.failures), (2, 0));
}

#[test]
fn a_missing_plugin_file_is_a_config_error_naming_the_key() {
    let error = Settings::from_json(
        &json!({
            "base_url": "http://127.0.0.1:1",
            "breaker_policy": {"plugin": "/nonexistent/humus-plugin.so", "symbol": "consecutive_failures_policy"},
        })
        .to_string(),
    )
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Config);
    assert_eq!(error.fields(), ["breaker_policy.plugin"]);
}
