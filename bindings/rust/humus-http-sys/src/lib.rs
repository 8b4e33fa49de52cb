//! Raw declarations of libhumus_http's C ABI, written by hand to match `include/humus_http.h` section by
//! section (no bindgen, so no libclang at build time). Every item keeps its C name (but the field `type`
//! of `humus_span_attribute`, a Rust keyword: `type_`); the header's comments are the documentation of record. `tests/layout.rs` checks the constants and struct layouts here against
//! the header with a C compiler, and that every function the header declares is declared here.
//!
//! Use the `humus-http` crate for a safe API; this one is for bindings and for code that needs the C ABI.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};
use core::marker::{PhantomData, PhantomPinned};

/// Declares an opaque C handle: never built, moved or inspected from Rust, only pointed at (the Rustonomicon's
/// pattern: not Send, Sync or Unpin, since nothing is known of what the library does with it).
macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

// ==== Version ==================================================================================

pub const HUMUS_VERSION_MAJOR: i32 = 0;
pub const HUMUS_VERSION_MINOR: i32 = 1;
pub const HUMUS_VERSION_PATCH: i32 = 0;
pub const HUMUS_VERSION_NUMBER: i32 = HUMUS_VERSION_MAJOR * 10000 + HUMUS_VERSION_MINOR * 100 + HUMUS_VERSION_PATCH;
pub const HUMUS_VERSION_STRING: &str = "0.1.0";
/// The ABI major: the SONAME's number (`libhumus_http.so.1`).
pub const HUMUS_ABI_VERSION: i32 = 1;

extern "C" {
    pub fn humus_version_number() -> i32;
    pub fn humus_version() -> *const c_char;
    pub fn humus_abi_version() -> i32;
    /// The linked libraries as JSON (`{"humus_http": ..., "libcurl": ..., "features": [...]}`); `*out` is freed
    /// with `humus_string_free`.
    pub fn humus_version_info(out: *mut *mut c_char, len: *mut usize, err: *mut *mut humus_error) -> humus_status;
}

// ==== Status codes =============================================================================

pub type humus_status = i32;

pub const HUMUS_OK: humus_status = 0;
// 1–99: usage.
pub const HUMUS_E_INVALID_ARGUMENT: humus_status = 1;
pub const HUMUS_E_MISUSE: humus_status = 2;
pub const HUMUS_E_PROGRAM: humus_status = 3;
pub const HUMUS_E_CROSS_ORIGIN: humus_status = 4;
pub const HUMUS_E_NO_MEMORY: humus_status = 5;
pub const HUMUS_E_INTERNAL: humus_status = 6;
pub const HUMUS_E_CALLBACK: humus_status = 7;
// 100–199: configuration.
pub const HUMUS_E_CONFIG: humus_status = 100;
// 200–299: resilience verdicts.
pub const HUMUS_E_REJECTED: humus_status = 200;
pub const HUMUS_E_BULKHEAD_FULL: humus_status = 201;
pub const HUMUS_E_TIMEOUT: humus_status = 202;
pub const HUMUS_E_CANCELLED: humus_status = 203;
// 300–399: transport.
pub const HUMUS_E_CONNECT: humus_status = 300;
pub const HUMUS_E_RESOLVE: humus_status = 301;
pub const HUMUS_E_CONNECTION_LOST: humus_status = 302;
pub const HUMUS_E_PROTOCOL: humus_status = 303;
pub const HUMUS_E_STREAM_REFUSED: humus_status = 304;
pub const HUMUS_E_TOO_LARGE: humus_status = 305;
pub const HUMUS_E_RESOURCE: humus_status = 306;
// 400–499: TLS.
pub const HUMUS_E_TLS: humus_status = 400;
pub const HUMUS_E_TLS_CLIENT_CERT: humus_status = 401;

extern "C" {
    pub fn humus_status_name(s: humus_status) -> *const c_char;
}

// ==== Errors ===================================================================================

opaque! {
    humus_error;
}

extern "C" {
    pub fn humus_error_status(e: *const humus_error) -> humus_status;
    pub fn humus_error_message(e: *const humus_error) -> *const c_char;
    pub fn humus_error_attempts(e: *const humus_error) -> i32;
    pub fn humus_error_field_count(e: *const humus_error) -> usize;
    pub fn humus_error_field(e: *const humus_error, i: usize) -> *const c_char;
    pub fn humus_error_retry_after_ms(e: *const humus_error) -> i64;
    pub fn humus_error_trace(e: *const humus_error, json: *mut *mut c_char, len: *mut usize) -> humus_status;
    pub fn humus_error_free(e: *mut humus_error);
    pub fn humus_error_new(
        status: humus_status,
        message: *const c_char,
        field: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_last_error() -> *const humus_error;
}

// ==== Settings =================================================================================

opaque! {
    humus_settings;
}

extern "C" {
    pub fn humus_settings_from_json(
        json: *const c_char,
        len: usize,
        out: *mut *mut humus_settings,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_settings_clone(
        s: *const humus_settings,
        out: *mut *mut humus_settings,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_settings_free(s: *mut humus_settings);
    pub fn humus_settings_check_field(
        key: *const c_char,
        value_json: *const c_char,
        len: usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_settings_check(
        key: *const c_char,
        value_json: *const c_char,
        len: usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_settings_schema_json(
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_settings_to_json(
        s: *const humus_settings,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_string_free(str: *mut c_char);
}

// ==== Callbacks: classifier ====================================================================

pub const HUMUS_RETRY_DONE: i32 = 1;
pub const HUMUS_RETRY_AGAIN: i32 = 2;
pub const HUMUS_BREAKER_SUCCESS: i32 = 1;
pub const HUMUS_BREAKER_FAILURE: i32 = 2;
pub const HUMUS_BREAKER_IGNORED: i32 = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct humus_classification {
    pub retry: i32,
    pub breaker: i32,
    pub retry_after_ms: i64,
}

opaque! {
    humus_attempt;
}

extern "C" {
    pub fn humus_attempt_method(a: *const humus_attempt) -> *const c_char;
    pub fn humus_attempt_status(a: *const humus_attempt) -> i32;
    pub fn humus_attempt_header(a: *const humus_attempt, name: *const c_char) -> *const c_char;
    pub fn humus_attempt_header_count(a: *const humus_attempt) -> usize;
    pub fn humus_attempt_header_name(a: *const humus_attempt, i: usize) -> *const c_char;
    pub fn humus_attempt_header_value(a: *const humus_attempt, i: usize) -> *const c_char;
    pub fn humus_attempt_error(a: *const humus_attempt) -> humus_status;
    pub fn humus_attempt_error_message(a: *const humus_attempt) -> *const c_char;
    pub fn humus_attempt_number(a: *const humus_attempt) -> i32;
    pub fn humus_classify_default(a: *const humus_attempt, out: *mut humus_classification) -> humus_status;
    pub fn humus_classify_preset(
        preset: *const c_char,
        a: *const humus_attempt,
        out: *mut humus_classification,
    ) -> humus_status;
}

pub const HUMUS_CLASSIFIER_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_classifier {
    pub version: u32,
    pub classify: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            attempt: *const humus_attempt,
            out: *mut humus_classification,
        ) -> humus_status,
    >,
    pub user_data: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_CLASSIFIER_INIT`.
pub const HUMUS_CLASSIFIER_INIT: humus_classifier = humus_classifier {
    version: HUMUS_CLASSIFIER_VERSION,
    classify: None,
    user_data: core::ptr::null_mut(),
    destroy: None,
};

extern "C" {
    pub fn humus_settings_set_classifier(
        s: *mut humus_settings,
        classifier: *const humus_classifier,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Callbacks: attempt hooks =================================================================

opaque! {
    humus_attempt_request;
}

extern "C" {
    pub fn humus_attempt_request_method(r: *const humus_attempt_request) -> *const c_char;
    pub fn humus_attempt_request_url(r: *const humus_attempt_request) -> *const c_char;
    pub fn humus_attempt_request_number(r: *const humus_attempt_request) -> i32;
    pub fn humus_attempt_request_header_count(r: *const humus_attempt_request) -> usize;
    pub fn humus_attempt_request_header_name(r: *const humus_attempt_request, i: usize) -> *const c_char;
    pub fn humus_attempt_request_header_value(r: *const humus_attempt_request, i: usize) -> *const c_char;
    pub fn humus_attempt_request_set_header(
        r: *mut humus_attempt_request,
        name: *const c_char,
        value: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

pub const HUMUS_ATTEMPT_HOOKS_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_attempt_hooks {
    pub version: u32,
    pub user_data: *mut c_void,
    pub before:
        Option<unsafe extern "C" fn(user_data: *mut c_void, request: *mut humus_attempt_request) -> humus_status>,
    pub after: Option<unsafe extern "C" fn(user_data: *mut c_void, attempt: *const humus_attempt)>,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_ATTEMPT_HOOKS_INIT`.
pub const HUMUS_ATTEMPT_HOOKS_INIT: humus_attempt_hooks = humus_attempt_hooks {
    version: HUMUS_ATTEMPT_HOOKS_VERSION,
    user_data: core::ptr::null_mut(),
    before: None,
    after: None,
    destroy: None,
};

extern "C" {
    pub fn humus_settings_set_attempt_hooks(
        s: *mut humus_settings,
        hooks: *const humus_attempt_hooks,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_attempt_hooks(
        r: *mut humus_request,
        hooks: *const humus_attempt_hooks,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Callbacks: breaker policy ================================================================

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct humus_breaker_counts {
    pub version: u32,
    pub state: i32,
    pub successes: u64,
    pub failures: u64,
    pub consecutive_successes: u64,
    pub consecutive_failures: u64,
    pub timed_out_probes: u64,
    pub window_results: u32,
    pub window_failures: u32,
    // Version 2:
    pub slow_results: u64,
    pub window_slow: u32,
}

pub const HUMUS_BREAKER_COUNTS_VERSION: u32 = 2;
/// `HUMUS_BREAKER_COUNTS_INIT`: the version set, as humus_client_breaker_counts wants it.
pub const HUMUS_BREAKER_COUNTS_INIT: humus_breaker_counts = humus_breaker_counts {
    version: HUMUS_BREAKER_COUNTS_VERSION,
    state: 0,
    successes: 0,
    failures: 0,
    consecutive_successes: 0,
    consecutive_failures: 0,
    timed_out_probes: 0,
    window_results: 0,
    window_failures: 0,
    slow_results: 0,
    window_slow: 0,
};

pub const HUMUS_CIRCUIT_CLOSED: i32 = 0;
pub const HUMUS_CIRCUIT_OPEN: i32 = 1;
pub const HUMUS_CIRCUIT_HALF_OPEN: i32 = 2;

pub const HUMUS_PROBE_CONTINUE: i32 = 0;
pub const HUMUS_PROBE_CLOSE: i32 = 1;
pub const HUMUS_PROBE_REOPEN: i32 = 2;

pub const HUMUS_BREAKER_POLICY_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_breaker_policy {
    pub version: u32,
    pub trip: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            counts: *const humus_breaker_counts,
            open: *mut i32,
        ) -> humus_status,
    >,
    pub probe: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            counts: *const humus_breaker_counts,
            decision: *mut i32,
        ) -> humus_status,
    >,
    pub user_data: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_BREAKER_POLICY_INIT`.
pub const HUMUS_BREAKER_POLICY_INIT: humus_breaker_policy = humus_breaker_policy {
    version: HUMUS_BREAKER_POLICY_VERSION,
    trip: None,
    probe: None,
    user_data: core::ptr::null_mut(),
    destroy: None,
};

extern "C" {
    pub fn humus_settings_set_breaker_policy(
        s: *mut humus_settings,
        policy: *const humus_breaker_policy,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Runtime ==================================================================================

opaque! {
    humus_runtime;
}

extern "C" {
    pub fn humus_runtime_new(
        options_json: *const c_char,
        len: usize,
        out: *mut *mut humus_runtime,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_runtime_free(rt: *mut humus_runtime);
    pub fn humus_runtime_advance_ms(rt: *mut humus_runtime, ms: i64, err: *mut *mut humus_error) -> humus_status;
    pub fn humus_runtime_elapsed_ms(rt: *mut humus_runtime) -> i64;
    /// The descriptor that is readable while a caller-driven runtime (`"loop":"caller"`) has work.
    pub fn humus_runtime_loop_fd(rt: *mut humus_runtime, fd: *mut c_int, err: *mut *mut humus_error) -> humus_status;
    /// Runs what is ready on a caller-driven runtime's loop; `*next_us` is when to call again.
    pub fn humus_runtime_loop_run(
        rt: *mut humus_runtime,
        next_us: *mut i64,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Client ===================================================================================

opaque! {
    humus_client;
}

extern "C" {
    pub fn humus_client_new(
        rt: *mut humus_runtime,
        s: *const humus_settings,
        out: *mut *mut humus_client,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_client_free(c: *mut humus_client);
    pub fn humus_client_breaker_state(c: *mut humus_client, state: *mut i32) -> humus_status;
    pub fn humus_client_breaker_counts(c: *mut humus_client, counts: *mut humus_breaker_counts) -> humus_status;
    pub fn humus_client_budget_tokens(c: *mut humus_client, tokens: *mut f64) -> humus_status;
    pub fn humus_client_bulkhead_limit(c: *mut humus_client, limit: *mut u32) -> humus_status;
}

// ==== Request ==================================================================================

opaque! {
    humus_request;
}

pub const HUMUS_RETRY_MODE_DEFAULT: i32 = 0;
pub const HUMUS_RETRY_MODE_FORBID: i32 = 1;
pub const HUMUS_RETRY_MODE_FORCE: i32 = 2;

pub const HUMUS_BODY_READER_VERSION: u32 = 1;

/// A request body the caller streams (`humus_request_set_body_reader`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_body_reader {
    pub version: u32,
    pub user_data: *mut c_void,
    pub length: i64,
    pub read: Option<
        unsafe extern "C" fn(user_data: *mut c_void, buf: *mut c_void, cap: usize, n: *mut usize) -> humus_status,
    >,
    pub rewind: Option<unsafe extern "C" fn(user_data: *mut c_void) -> humus_status>,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_BODY_READER_INIT`.
pub const HUMUS_BODY_READER_INIT: humus_body_reader = humus_body_reader {
    version: HUMUS_BODY_READER_VERSION,
    user_data: core::ptr::null_mut(),
    length: -1,
    read: None,
    rewind: None,
    destroy: None,
};

extern "C" {
    pub fn humus_request_new(
        method: *const c_char,
        url: *const c_char,
        out: *mut *mut humus_request,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_header(
        r: *mut humus_request,
        name: *const c_char,
        value: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
    /// Sends no header `name` but one set after this call: the client's and libcurl's own left out too.
    pub fn humus_request_remove_header(
        r: *mut humus_request,
        name: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_body(r: *mut humus_request, data: *const c_void, len: usize) -> humus_status;
    pub fn humus_request_set_body_reader(
        r: *mut humus_request,
        reader: *const humus_body_reader,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_idempotency_key(
        r: *mut humus_request,
        key: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_retry(r: *mut humus_request, mode: i32, err: *mut *mut humus_error) -> humus_status;
    pub fn humus_request_set_timeout_ms(r: *mut humus_request, ms: i64, err: *mut *mut humus_error) -> humus_status;
    pub fn humus_request_set_follow_redirects(
        r: *mut humus_request,
        follow: i32,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_set_context(
        r: *mut humus_request,
        traceparent: *const c_char,
        tracestate: *const c_char,
        baggage: *const c_char,
        request_id: *const c_char,
        authorization: *const c_char,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_request_free(r: *mut humus_request);
}

// ==== Cancel tokens ============================================================================

opaque! {
    humus_cancel;
}

extern "C" {
    pub fn humus_request_set_cancel(r: *mut humus_request, c: *mut humus_cancel) -> humus_status;
    pub fn humus_cancel_new(out: *mut *mut humus_cancel) -> humus_status;
    pub fn humus_cancel_trigger(c: *mut humus_cancel);
    pub fn humus_cancel_free(c: *mut humus_cancel);
}

// ==== Calls and responses ======================================================================

opaque! {
    humus_response;
}

extern "C" {
    pub fn humus_client_do(
        c: *mut humus_client,
        r: *const humus_request,
        out: *mut *mut humus_response,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_client_open(
        c: *mut humus_client,
        r: *const humus_request,
        out: *mut *mut humus_response,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_response_read(
        resp: *mut humus_response,
        buf: *mut c_void,
        cap: usize,
        n: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    /// As `humus_response_read`, never waiting for the network: with nothing yet, `*n == 0` and the socket
    /// to wait on in `*wait_fd` (lent), for at most `*wait_ms`.
    pub fn humus_response_read_ready(
        resp: *mut humus_response,
        buf: *mut c_void,
        cap: usize,
        n: *mut usize,
        wait_fd: *mut c_int,
        wait_ms: *mut i64,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_response_status(resp: *const humus_response) -> i32;
    pub fn humus_response_attempts(resp: *const humus_response) -> i32;
    pub fn humus_response_trace(
        r: *const humus_response,
        json: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_response_header(resp: *const humus_response, name: *const c_char) -> *const c_char;
    pub fn humus_response_header_count(resp: *const humus_response) -> usize;
    pub fn humus_response_header_at(
        resp: *const humus_response,
        i: usize,
        name: *mut *const c_char,
        value: *mut *const c_char,
    ) -> humus_status;
    pub fn humus_response_body(
        resp: *mut humus_response,
        data: *mut *const c_void,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_response_http_version(resp: *const humus_response) -> *const c_char;
    pub fn humus_response_url(resp: *const humus_response) -> *const c_char;
    /// The status line's reason phrase as sent ("" over HTTP/2), at most 256 bytes, not necessarily UTF-8.
    pub fn humus_response_reason(resp: *const humus_response) -> *const c_char;
    pub fn humus_response_redirect_count(resp: *const humus_response) -> usize;
    pub fn humus_response_redirect_at(
        resp: *const humus_response,
        i: usize,
        status: *mut i32,
        url: *mut *const c_char,
    ) -> humus_status;
    /// The rest of redirect `i`'s head: its reason phrase, HTTP version and headers.
    pub fn humus_response_redirect_reason(resp: *const humus_response, i: usize) -> *const c_char;
    pub fn humus_response_redirect_http_version(resp: *const humus_response, i: usize) -> *const c_char;
    pub fn humus_response_redirect_header_count(resp: *const humus_response, i: usize) -> usize;
    pub fn humus_response_redirect_header_at(
        resp: *const humus_response,
        i: usize,
        j: usize,
        name: *mut *const c_char,
        value: *mut *const c_char,
    ) -> humus_status;
    pub fn humus_response_free(resp: *mut humus_response);
    /// `humus_response_free` that returns once the body is closed and its result counted.
    pub fn humus_response_close(resp: *mut humus_response);
}

// ==== Stepped calls ============================================================================

opaque! {
    humus_step;
}

/// What a step waits for (`humus_step_advance`'s `*wait_events`): the descriptor polls readable.
pub const HUMUS_WAIT_READ: c_int = 1;
/// The descriptor polls writable (with `HUMUS_WAIT_READ` too: either will do).
pub const HUMUS_WAIT_WRITE: c_int = 2;

extern "C" {
    /// Starts a call of `humus_client_open`'s that the caller drives with `humus_step_advance`; `r` must
    /// outlive the step, the step its client.
    pub fn humus_client_step_start(
        c: *mut humus_client,
        r: *const humus_request,
        out: *mut *mut humus_step,
        err: *mut *mut humus_error,
    ) -> humus_status;
    /// Runs the call on as far as it goes without waiting: the response (`*out`), an error, or what to wait
    /// for before the next advance (`*wait_fd` for `*wait_events`, at most `*wait_ms`).
    pub fn humus_step_advance(
        s: *mut humus_step,
        out: *mut *mut humus_response,
        wait_fd: *mut c_int,
        wait_events: *mut c_int,
        wait_ms: *mut i64,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_step_free(s: *mut humus_step);
}

// ==== Asynchronous calls =======================================================================

opaque! {
    humus_call;
}

/// The outcome of one `humus_response_read_async`, on the event-loop thread.
pub type humus_read_done =
    Option<unsafe extern "C" fn(user_data: *mut c_void, status: humus_status, n: usize, err: *mut humus_error)>;
pub type humus_call_done = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        status: humus_status,
        resp: *mut humus_response,
        err: *mut humus_error,
    ),
>;

extern "C" {
    pub fn humus_client_submit(
        c: *mut humus_client,
        r: *const humus_request,
        on_done: humus_call_done,
        user_data: *mut c_void,
        call: *mut *mut humus_call,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_client_submit_open(
        c: *mut humus_client,
        r: *const humus_request,
        on_headers: humus_call_done,
        user_data: *mut c_void,
        call: *mut *mut humus_call,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_response_read_async(
        resp: *mut humus_response,
        buf: *mut c_void,
        cap: usize,
        on_read: humus_read_done,
        user_data: *mut c_void,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_call_cancel(call: *mut humus_call);
    pub fn humus_call_free(call: *mut humus_call);
}

// ==== Read ahead ===============================================================================

/// Runs on the event-loop thread (or inside `humus_response_hurry`, on its caller's): a take of `resp` may
/// now find something. It must not block; it may call `humus_response_take`, not `humus_response_free`.
pub type humus_body_ready = Option<unsafe extern "C" fn(user_data: *mut c_void, resp: *mut humus_response)>;

/// A body whose Content-Length is under this many bytes is held whole by `humus_response_read_ahead`.
pub const HUMUS_READ_AHEAD_WHOLE: usize = 256 * 1024;
/// What `humus_response_take` found: `*n > 0` bytes copied.
pub const HUMUS_TOOK_BYTES: i32 = 0;
/// `*n > 0` bytes copied, the last of a body that ended well: no take needed for the end.
pub const HUMUS_TOOK_LAST: i32 = 1;
/// Nothing copied: the body ended well (its result is counted).
pub const HUMUS_TOOK_END: i32 = 2;
/// Nothing copied yet: `ready` runs exactly once when a take may find something.
pub const HUMUS_TOOK_WAIT: i32 = 3;
/// `humus_response_take`'s flag: first discard what was read ahead (the caller cancelled: the next take says so).
pub const HUMUS_TAKE_DROP: u32 = 1;

extern "C" {
    /// Starts reading `resp`'s body (of `humus_client_submit_open`) ahead into the library's ring of
    /// `ring_bytes` (0: 64 KiB, 256 KiB for a Content-Length of 1 MiB or more; never more than the body and
    /// one byte). With `whole` not NULL, a body under `HUMUS_READ_AHEAD_WHOLE` is held whole and `*whole`
    /// set: its first `ready` comes once all of it is in; with NULL, bytes are told as they come. From here
    /// the body is read with `humus_response_take` only; `ready` never runs once `humus_response_close` returned.
    pub fn humus_response_read_ahead(
        resp: *mut humus_response,
        ring_bytes: usize,
        ready: humus_body_ready,
        user_data: *mut c_void,
        whole: *mut c_int,
        err: *mut *mut humus_error,
    ) -> humus_status;
    /// Copies up to `cap` bytes read ahead into `buf` and sets `*took` (`HUMUS_TOOK_*`); never waits, never
    /// runs `ready`. The body's failure is the status (`*took` `HUMUS_TOOK_END`), for every later take too.
    pub fn humus_response_take(
        resp: *mut humus_response,
        buf: *mut c_void,
        cap: usize,
        flags: u32,
        n: *mut usize,
        took: *mut i32,
        err: *mut *mut humus_error,
    ) -> humus_status;
    /// The reader waiting since `HUMUS_TOOK_WAIT` is done waiting for a batch: what the ring holds, or the
    /// next bytes, wake it now (its one `ready` still comes, perhaps inside this call).
    pub fn humus_response_hurry(resp: *mut humus_response);
}

// ==== Callbacks: log sink ======================================================================

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_log_record {
    pub version: u32,
    pub event: *const c_char,
    pub message: *const c_char,
    pub server_address: *const c_char,
    pub server_port: i32,
    pub previous_state: i32,
    pub new_state: i32,
    pub counts: *const humus_breaker_counts,
    pub time_unix_ms: i64,
    pub upstream: *const c_char,
}

pub const HUMUS_LOG_RECORD_VERSION: u32 = 2;
pub const HUMUS_LOG_SINK_VERSION: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_log_sink {
    pub version: u32,
    pub record: Option<unsafe extern "C" fn(user_data: *mut c_void, record: *const humus_log_record)>,
    pub user_data: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_LOG_SINK_INIT`.
pub const HUMUS_LOG_SINK_INIT: humus_log_sink =
    humus_log_sink { version: HUMUS_LOG_SINK_VERSION, record: None, user_data: core::ptr::null_mut(), destroy: None };

extern "C" {
    pub fn humus_runtime_set_log_sink(
        rt: *mut humus_runtime,
        sink: *const humus_log_sink,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Callbacks: span sink =====================================================================

pub const HUMUS_ATTRIBUTE_STRING: i32 = 1;
pub const HUMUS_ATTRIBUTE_INT: i32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_span_attribute {
    pub key: *const c_char,
    /// The header's `type` (a Rust keyword).
    pub type_: i32,
    pub string_value: *const c_char,
    pub int_value: i64,
}

pub const HUMUS_SPAN_STATUS_UNSET: i32 = 0;
pub const HUMUS_SPAN_STATUS_ERROR: i32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_span {
    pub version: u32,
    pub name: *const c_char,
    pub trace_id: *const c_char,
    pub span_id: *const c_char,
    pub parent_span_id: *const c_char,
    pub tracestate: *const c_char,
    pub trace_flags: u8,
    pub start_unix_ns: i64,
    pub end_unix_ns: i64,
    pub status: i32,
    pub attribute_count: usize,
    pub attributes: *const humus_span_attribute,
}

pub const HUMUS_SPAN_VERSION: u32 = 1;
pub const HUMUS_SPAN_SINK_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_span_sink {
    pub version: u32,
    pub span: Option<unsafe extern "C" fn(user_data: *mut c_void, span: *const humus_span)>,
    pub user_data: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_SPAN_SINK_INIT`.
pub const HUMUS_SPAN_SINK_INIT: humus_span_sink =
    humus_span_sink { version: HUMUS_SPAN_SINK_VERSION, span: None, user_data: core::ptr::null_mut(), destroy: None };

extern "C" {
    pub fn humus_runtime_set_span_sink(
        rt: *mut humus_runtime,
        sink: *const humus_span_sink,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Metrics ==================================================================================

pub const HUMUS_METRIC_HISTOGRAM: i32 = 1;
pub const HUMUS_METRIC_GAUGE: i32 = 2;
pub const HUMUS_METRIC_COUNTER: i32 = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_metric_point {
    pub version: u32,
    pub name: *const c_char,
    pub unit: *const c_char,
    pub kind: i32,
    pub server_address: *const c_char,
    pub server_port: i32,
    pub attribute_name: *const c_char,
    pub attribute_value: *const c_char,
    pub value: u64,
    pub count: u64,
    pub sum: f64,
    pub bound_count: usize,
    pub bounds: *const f64,
    pub bucket_counts: *const u64,
    // Version 2.
    pub attribute_count: usize,
    pub attribute_names: *const *const c_char,
    pub attribute_values: *const *const c_char,
}

pub const HUMUS_METRIC_POINT_VERSION: u32 = 2;

pub type humus_metric_sink =
    Option<unsafe extern "C" fn(user_data: *mut c_void, point: *const humus_metric_point) -> humus_status>;

extern "C" {
    pub fn humus_runtime_metrics_prometheus(
        rt: *mut humus_runtime,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_runtime_metrics_json(
        rt: *mut humus_runtime,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_runtime_metrics_collect(
        rt: *mut humus_runtime,
        sink: humus_metric_sink,
        user_data: *mut c_void,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Readiness ================================================================================

extern "C" {
    pub fn humus_runtime_readiness_json(
        rt: *mut humus_runtime,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Upstreams ================================================================================

opaque! {
    humus_upstreams;
}

extern "C" {
    pub fn humus_upstreams_from_json(
        rt: *mut humus_runtime,
        json: *const c_char,
        len: usize,
        out: *mut *mut humus_upstreams,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_upstreams_free(u: *mut humus_upstreams);
    pub fn humus_upstreams_client(
        u: *mut humus_upstreams,
        name: *const c_char,
        out: *mut *mut humus_client,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_upstreams_count(u: *const humus_upstreams) -> usize;
    pub fn humus_upstreams_name(u: *const humus_upstreams, i: usize) -> *const c_char;
    pub fn humus_upstreams_readiness_json(
        u: *mut humus_upstreams,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
}

// ==== Shared state ==============================================================================

extern "C" {
    pub fn humus_shared_list_json(out: *mut *mut c_char, len: *mut usize, err: *mut *mut humus_error) -> humus_status;
    pub fn humus_shared_show_json(
        name: *const c_char,
        out: *mut *mut c_char,
        len: *mut usize,
        err: *mut *mut humus_error,
    ) -> humus_status;
    pub fn humus_shared_remove(name: *const c_char, err: *mut *mut humus_error) -> humus_status;
}

// ==== Testing: mock transport ==================================================================

opaque! {
    humus_mock_request;
    humus_mock_reply;
}

extern "C" {
    pub fn humus_mock_request_method(r: *const humus_mock_request) -> *const c_char;
    pub fn humus_mock_request_url(r: *const humus_mock_request) -> *const c_char;
    pub fn humus_mock_request_header(r: *const humus_mock_request, name: *const c_char) -> *const c_char;
    pub fn humus_mock_request_body(r: *const humus_mock_request, data: *mut *const c_void, len: *mut usize);
    pub fn humus_mock_reply_set_status(reply: *mut humus_mock_reply, status: i32);
    pub fn humus_mock_reply_add_header(reply: *mut humus_mock_reply, name: *const c_char, value: *const c_char);
    pub fn humus_mock_reply_set_body(reply: *mut humus_mock_reply, data: *const c_void, len: usize);
    pub fn humus_mock_reply_set_error(reply: *mut humus_mock_reply, error: humus_status, message: *const c_char);
    pub fn humus_mock_reply_set_delay_ms(reply: *mut humus_mock_reply, ms: i64);
    pub fn humus_mock_reply_set_hang(reply: *mut humus_mock_reply);
    pub fn humus_mock_reply_set_body_error(
        reply: *mut humus_mock_reply,
        after_bytes: usize,
        error: humus_status,
        message: *const c_char,
    );
}

pub const HUMUS_MOCK_TRANSPORT_VERSION: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct humus_mock_transport {
    pub version: u32,
    pub respond: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            request: *const humus_mock_request,
            reply: *mut humus_mock_reply,
        ) -> humus_status,
    >,
    pub user_data: *mut c_void,
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// `HUMUS_MOCK_TRANSPORT_INIT`.
pub const HUMUS_MOCK_TRANSPORT_INIT: humus_mock_transport = humus_mock_transport {
    version: HUMUS_MOCK_TRANSPORT_VERSION,
    respond: None,
    user_data: core::ptr::null_mut(),
    destroy: None,
};

extern "C" {
    pub fn humus_runtime_set_mock_transport(
        rt: *mut humus_runtime,
        mock: *const humus_mock_transport,
        err: *mut *mut humus_error,
    ) -> humus_status;
}
