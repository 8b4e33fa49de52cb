//! Checks the hand-written declarations against `humus_http.h` itself, so a header change that this crate
//! misses fails here instead of corrupting memory: constants and struct layouts through a C probe compiled
//! against the header (`layout_probe.c`), every function name the header declares, and the library loaded at
//! run time.
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use humus_http_sys::*;

/// The directory of the `humus_http.h` that build.rs found through pkg-config.
fn include_dir() -> PathBuf {
    PathBuf::from(env!("HUMUS_HTTP_INCLUDE_DIR"))
}

/// What the header says: runs `cc` (or `$CC`) on the probe and reads its "key value" lines.
fn header_facts() -> BTreeMap<String, String> {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let probe = out_dir.join("humus_layout_probe");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/layout_probe.c");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&compiler)
        .args(["-std=c11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I"])
        .arg(include_dir())
        .arg(&source)
        .arg("-o")
        .arg(&probe)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {compiler:?} (set CC): {e}"));
    assert!(status.success(), "{compiler} failed on {}", source.display());
    let output = Command::new(&probe).output().expect("the layout probe runs");
    assert!(output.status.success(), "the layout probe failed");
    String::from_utf8(output.stdout)
        .expect("the probe prints UTF-8")
        .lines()
        .map(|line| {
            let (key, value) = line.split_once(' ').expect("a line is \"key value\"");
            (key.to_string(), value.to_string())
        })
        .collect()
}

/// What this crate declares, in the probe's terms.
fn rust_facts() -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    macro_rules! constant {
        ($($name:ident),* $(,)?) => {$(
            facts.insert(stringify!($name).to_string(), ($name as i64).to_string());
        )*};
    }
    macro_rules! layout {
        ($type:ident { $($field:ident),* $(,)? }) => {
            facts.insert(format!("size_of({})", stringify!($type)), size_of::<$type>().to_string());
            facts.insert(format!("align_of({})", stringify!($type)), align_of::<$type>().to_string());
            $(
                facts.insert(
                    format!("offset_of({}.{})", stringify!($type), stringify!($field)),
                    offset_of!($type, $field).to_string(),
                );
            )*
        };
    }
    constant!(
        HUMUS_VERSION_MAJOR,
        HUMUS_VERSION_MINOR,
        HUMUS_VERSION_PATCH,
        HUMUS_VERSION_NUMBER,
        HUMUS_ABI_VERSION,
        HUMUS_OK,
        HUMUS_E_INVALID_ARGUMENT,
        HUMUS_E_MISUSE,
        HUMUS_E_PROGRAM,
        HUMUS_E_CROSS_ORIGIN,
        HUMUS_E_NO_MEMORY,
        HUMUS_E_INTERNAL,
        HUMUS_E_CALLBACK,
        HUMUS_E_CONFIG,
        HUMUS_E_REJECTED,
        HUMUS_E_BULKHEAD_FULL,
        HUMUS_E_TIMEOUT,
        HUMUS_E_CANCELLED,
        HUMUS_E_CONNECT,
        HUMUS_E_RESOLVE,
        HUMUS_E_CONNECTION_LOST,
        HUMUS_E_PROTOCOL,
        HUMUS_E_STREAM_REFUSED,
        HUMUS_E_TOO_LARGE,
        HUMUS_E_RESOURCE,
        HUMUS_E_TLS,
        HUMUS_E_TLS_CLIENT_CERT,
        HUMUS_RETRY_DONE,
        HUMUS_RETRY_AGAIN,
        HUMUS_BREAKER_SUCCESS,
        HUMUS_BREAKER_FAILURE,
        HUMUS_BREAKER_IGNORED,
        HUMUS_CLASSIFIER_VERSION,
        HUMUS_BREAKER_COUNTS_VERSION,
        HUMUS_CIRCUIT_CLOSED,
        HUMUS_CIRCUIT_OPEN,
        HUMUS_CIRCUIT_HALF_OPEN,
        HUMUS_PROBE_CONTINUE,
        HUMUS_PROBE_CLOSE,
        HUMUS_PROBE_REOPEN,
        HUMUS_BREAKER_POLICY_VERSION,
        HUMUS_RETRY_MODE_DEFAULT,
        HUMUS_RETRY_MODE_FORBID,
        HUMUS_RETRY_MODE_FORCE,
        HUMUS_LOG_RECORD_VERSION,
        HUMUS_LOG_SINK_VERSION,
        HUMUS_METRIC_HISTOGRAM,
        HUMUS_METRIC_GAUGE,
        HUMUS_METRIC_COUNTER,
        HUMUS_METRIC_POINT_VERSION,
        HUMUS_MOCK_TRANSPORT_VERSION,
        HUMUS_ATTRIBUTE_STRING,
        HUMUS_ATTRIBUTE_INT,
        HUMUS_SPAN_STATUS_UNSET,
        HUMUS_SPAN_STATUS_ERROR,
        HUMUS_SPAN_VERSION,
        HUMUS_SPAN_SINK_VERSION,
        HUMUS_BODY_READER_VERSION,
        HUMUS_ATTEMPT_HOOKS_VERSION,
        HUMUS_READ_AHEAD_WHOLE,
        HUMUS_TOOK_BYTES,
        HUMUS_TOOK_LAST,
        HUMUS_TOOK_END,
        HUMUS_TOOK_WAIT,
        HUMUS_TAKE_DROP,
        HUMUS_WAIT_READ,
        HUMUS_WAIT_WRITE,
    );
    facts.insert("HUMUS_VERSION_STRING".to_string(), HUMUS_VERSION_STRING.to_string());
    facts.insert("size_of(humus_status)".to_string(), size_of::<humus_status>().to_string());
    facts.insert("align_of(humus_status)".to_string(), align_of::<humus_status>().to_string());
    layout!(humus_classification { retry, breaker, retry_after_ms });
    layout!(humus_classifier { version, classify, user_data, destroy });
    layout!(humus_attempt_hooks { version, user_data, before, after, destroy });
    layout!(humus_breaker_counts {
        version,
        state,
        successes,
        failures,
        consecutive_successes,
        consecutive_failures,
        timed_out_probes,
        window_results,
        window_failures,
        slow_results,
        window_slow,
    });
    layout!(humus_breaker_policy { version, trip, probe, user_data, destroy });
    layout!(humus_log_record {
        version,
        event,
        message,
        server_address,
        server_port,
        previous_state,
        new_state,
        counts,
        time_unix_ms,
        upstream,
    });
    layout!(humus_body_reader { version, user_data, length, read, rewind, destroy });
    layout!(humus_log_sink { version, record, user_data, destroy });
    layout!(humus_span_attribute { key, type_, string_value, int_value });
    layout!(humus_span {
        version,
        name,
        trace_id,
        span_id,
        parent_span_id,
        tracestate,
        trace_flags,
        start_unix_ns,
        end_unix_ns,
        status,
        attribute_count,
        attributes,
    });
    layout!(humus_span_sink { version, span, user_data, destroy });
    layout!(humus_metric_point {
        version,
        name,
        unit,
        kind,
        server_address,
        server_port,
        attribute_name,
        attribute_value,
        value,
        count,
        sum,
        bound_count,
        bounds,
        bucket_counts,
        attribute_count,
        attribute_names,
        attribute_values,
    });
    layout!(humus_mock_transport { version, respond, user_data, destroy });
    facts
}

#[test]
fn constants_and_layouts_match_the_header() {
    let header = header_facts();
    let rust = rust_facts();
    let mut problems = Vec::new();
    for (key, value) in &header {
        match rust.get(key) {
            None => problems.push(format!("{key}: in the header ({value}), not checked on the Rust side")),
            Some(v) if v != value => problems.push(format!("{key}: header {value}, Rust {v}")),
            Some(_) => {}
        }
    }
    for key in rust.keys().filter(|k| !header.contains_key(*k)) {
        problems.push(format!("{key}: declared in Rust, not printed by layout_probe.c"));
    }
    assert!(problems.is_empty(), "humus-http-sys disagrees with humus_http.h:\n{}", problems.join("\n"));
}

/// The names of the functions a C text declares with `HUMUS_API`.
fn header_functions(header: &str) -> Vec<String> {
    let mut names = Vec::new();
    for declaration in header.split("HUMUS_API").skip(1) {
        let Some(open) = declaration.find('(') else { continue };
        let name: String = declaration[..open]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<String>()
            .chars()
            .rev()
            .collect();
        if name.starts_with("humus_") {
            names.push(name);
        }
    }
    names
}

#[test]
fn every_function_of_the_header_is_declared() {
    let header = std::fs::read_to_string(include_dir().join("humus_http.h")).expect("the header is readable");
    let declared = include_str!("../src/lib.rs");
    let functions = header_functions(&header);
    assert!(functions.len() >= 77, "found only {} functions in the header", functions.len());
    let missing: Vec<&String> = functions.iter().filter(|f| !declared.contains(&format!("pub fn {f}("))).collect();
    assert!(missing.is_empty(), "declared in humus_http.h, missing from humus-http-sys: {missing:?}");
    let extra: Vec<&str> = declared
        .split("pub fn ")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .filter(|name| !functions.iter().any(|f| f == name))
        .collect();
    assert!(extra.is_empty(), "declared in humus-http-sys, not in humus_http.h: {extra:?}");
}

#[test]
fn the_loaded_library_has_this_abi() {
    // SAFETY: both functions take nothing and return static data (header: "static storage").
    let (number, version) = unsafe { (humus_version_number(), CStr::from_ptr(humus_version())) };
    // SAFETY: takes nothing, returns a number.
    assert_eq!(unsafe { humus_abi_version() }, HUMUS_ABI_VERSION, "the loaded library's ABI major");
    assert!(number >= HUMUS_VERSION_NUMBER, "the loaded library {number} is older than the header");
    assert_eq!(version.to_str().unwrap().split('.').count(), 3);
}

#[test]
fn status_names_are_the_constants_names() {
    let statuses = [
        (HUMUS_OK, "HUMUS_OK"),
        (HUMUS_E_INVALID_ARGUMENT, "HUMUS_E_INVALID_ARGUMENT"),
        (HUMUS_E_MISUSE, "HUMUS_E_MISUSE"),
        (HUMUS_E_PROGRAM, "HUMUS_E_PROGRAM"),
        (HUMUS_E_CROSS_ORIGIN, "HUMUS_E_CROSS_ORIGIN"),
        (HUMUS_E_NO_MEMORY, "HUMUS_E_NO_MEMORY"),
        (HUMUS_E_INTERNAL, "HUMUS_E_INTERNAL"),
        (HUMUS_E_CALLBACK, "HUMUS_E_CALLBACK"),
        (HUMUS_E_CONFIG, "HUMUS_E_CONFIG"),
        (HUMUS_E_REJECTED, "HUMUS_E_REJECTED"),
        (HUMUS_E_BULKHEAD_FULL, "HUMUS_E_BULKHEAD_FULL"),
        (HUMUS_E_TIMEOUT, "HUMUS_E_TIMEOUT"),
        (HUMUS_E_CANCELLED, "HUMUS_E_CANCELLED"),
        (HUMUS_E_CONNECT, "HUMUS_E_CONNECT"),
        (HUMUS_E_RESOLVE, "HUMUS_E_RESOLVE"),
        (HUMUS_E_CONNECTION_LOST, "HUMUS_E_CONNECTION_LOST"),
        (HUMUS_E_PROTOCOL, "HUMUS_E_PROTOCOL"),
        (HUMUS_E_STREAM_REFUSED, "HUMUS_E_STREAM_REFUSED"),
        (HUMUS_E_TOO_LARGE, "HUMUS_E_TOO_LARGE"),
        (HUMUS_E_RESOURCE, "HUMUS_E_RESOURCE"),
        (HUMUS_E_TLS, "HUMUS_E_TLS"),
        (HUMUS_E_TLS_CLIENT_CERT, "HUMUS_E_TLS_CLIENT_CERT"),
        (999, "HUMUS_E_UNKNOWN"),
    ];
    for (status, name) in statuses {
        // SAFETY: humus_status_name accepts any number and never returns NULL (static storage).
        let got = unsafe { CStr::from_ptr(humus_status_name(status)) };
        assert_eq!(got.to_str().unwrap(), name, "humus_status_name({status})");
    }
}

#[test]
fn init_tables_carry_their_versions() {
    assert_eq!(HUMUS_CLASSIFIER_INIT.version, HUMUS_CLASSIFIER_VERSION);
    assert!(HUMUS_CLASSIFIER_INIT.classify.is_none() && HUMUS_CLASSIFIER_INIT.user_data.is_null());
    assert_eq!(HUMUS_BREAKER_POLICY_INIT.version, HUMUS_BREAKER_POLICY_VERSION);
    assert!(HUMUS_BREAKER_POLICY_INIT.trip.is_none() && HUMUS_BREAKER_POLICY_INIT.probe.is_none());
    assert_eq!(HUMUS_LOG_SINK_INIT.version, HUMUS_LOG_SINK_VERSION);
    assert!(HUMUS_LOG_SINK_INIT.record.is_none());
    assert_eq!(HUMUS_MOCK_TRANSPORT_INIT.version, HUMUS_MOCK_TRANSPORT_VERSION);
    assert!(HUMUS_MOCK_TRANSPORT_INIT.respond.is_none() && HUMUS_MOCK_TRANSPORT_INIT.destroy.is_none());
    assert_eq!(HUMUS_SPAN_SINK_INIT.version, HUMUS_SPAN_SINK_VERSION);
    assert!(HUMUS_SPAN_SINK_INIT.span.is_none());
    assert_eq!(HUMUS_BODY_READER_INIT.version, HUMUS_BODY_READER_VERSION);
    assert!(HUMUS_BODY_READER_INIT.read.is_none() && HUMUS_BODY_READER_INIT.length == -1);
    assert_eq!(HUMUS_ATTEMPT_HOOKS_INIT.version, HUMUS_ATTEMPT_HOOKS_VERSION);
    assert!(HUMUS_ATTEMPT_HOOKS_INIT.before.is_none() && HUMUS_ATTEMPT_HOOKS_INIT.after.is_none());
}
