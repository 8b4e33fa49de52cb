//! `Error`: what a failed call or setup step said — its kind (one per status of the header), message, the
//! fields it is about, the attempts made — copied out of the C error object, which is freed at once.
use std::fmt;
use std::time::Duration;

use humus_http_sys as sys;

use crate::ffi;
use crate::trace::{self, AttemptRecord};

/// The kind of an [`Error`]: one variant per `HUMUS_E_*` status of `humus_http.h`, grouped as the header
/// groups them (usage, configuration, resilience verdicts, transport, TLS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A bad argument: a bad header, a bad URL, a NUL byte in a string (`HUMUS_E_INVALID_ARGUMENT`).
    InvalidArgument,
    /// A call in the wrong state or thread, e.g. a blocking call from a completion callback
    /// (`HUMUS_E_MISUSE`).
    Misuse,
    /// A fault in code: settings rules across fields, an invalid classification (`HUMUS_E_PROGRAM`).
    Program,
    /// A request to another origin than the client's; nothing was sent (`HUMUS_E_CROSS_ORIGIN`).
    CrossOrigin,
    /// Allocation failed (`HUMUS_E_NO_MEMORY`).
    NoMemory,
    /// A bug in humus_http; the message says where (`HUMUS_E_INTERNAL`).
    Internal,
    /// A callback failed: a classifier or mock transport closure panicked (`HUMUS_E_CALLBACK`);
    /// [`Error::panic_message`] has what it said.
    Callback,
    /// An operator's mistake in configuration: every bad key is in [`Error::fields`] (`HUMUS_E_CONFIG`).
    Config,
    /// The circuit breaker is open: nothing was sent; [`Error::retry_after`] says for how much longer
    /// (`HUMUS_E_REJECTED`).
    Rejected,
    /// No bulkhead slot within `bulkhead.wait`: nothing was sent (`HUMUS_E_BULKHEAD_FULL`).
    BulkheadFull,
    /// The call's deadline or an attempt's timeout passed (`HUMUS_E_TIMEOUT`).
    Timeout,
    /// The caller cancelled the call (`HUMUS_E_CANCELLED`).
    Cancelled,
    /// The connection was refused or could not be made (`HUMUS_E_CONNECT`).
    Connect,
    /// The host name did not resolve (`HUMUS_E_RESOLVE`).
    Resolve,
    /// Reset or closed before a full response (`HUMUS_E_CONNECTION_LOST`).
    ConnectionLost,
    /// The peer broke HTTP (`HUMUS_E_PROTOCOL`).
    Protocol,
    /// An HTTP/2 stream refused or a GOAWAY before processing: safe to resend (`HUMUS_E_STREAM_REFUSED`).
    StreamRefused,
    /// The response's headers or buffered body passed the client's own limit: not retried, not the
    /// dependency's fault for the breaker (`HUMUS_E_TOO_LARGE`).
    TooLarge,
    /// A local shortage (file descriptors, ports, socket buffers): not retried, no breaker verdict, no budget
    /// charge (`HUMUS_E_RESOURCE`).
    Resource,
    /// The TLS handshake failed: untrusted certificate, host name mismatch, version (`HUMUS_E_TLS`).
    Tls,
    /// The server refused or required a client certificate (`HUMUS_E_TLS_CLIENT_CERT`).
    TlsClientCert,
    /// A status this binding does not know (a newer library); the number is the C status.
    Unknown(i32),
    /// Not a C status: a response whose HTTP status (the number) is 4xx or 5xx, made an error by
    /// [`Response::error_for_status`](crate::Response::error_for_status). Its [`status`](ErrorKind::status)
    /// is 0 and its [`name`](ErrorKind::name) `"HTTP_STATUS"`.
    HttpStatus(u16),
}

/// Every kind this binding knows, with its pinned C number.
const KINDS: [(ErrorKind, sys::humus_status); 21] = [
    (ErrorKind::InvalidArgument, sys::HUMUS_E_INVALID_ARGUMENT),
    (ErrorKind::Misuse, sys::HUMUS_E_MISUSE),
    (ErrorKind::Program, sys::HUMUS_E_PROGRAM),
    (ErrorKind::CrossOrigin, sys::HUMUS_E_CROSS_ORIGIN),
    (ErrorKind::NoMemory, sys::HUMUS_E_NO_MEMORY),
    (ErrorKind::Internal, sys::HUMUS_E_INTERNAL),
    (ErrorKind::Callback, sys::HUMUS_E_CALLBACK),
    (ErrorKind::Config, sys::HUMUS_E_CONFIG),
    (ErrorKind::Rejected, sys::HUMUS_E_REJECTED),
    (ErrorKind::BulkheadFull, sys::HUMUS_E_BULKHEAD_FULL),
    (ErrorKind::Timeout, sys::HUMUS_E_TIMEOUT),
    (ErrorKind::Cancelled, sys::HUMUS_E_CANCELLED),
    (ErrorKind::Connect, sys::HUMUS_E_CONNECT),
    (ErrorKind::Resolve, sys::HUMUS_E_RESOLVE),
    (ErrorKind::ConnectionLost, sys::HUMUS_E_CONNECTION_LOST),
    (ErrorKind::Protocol, sys::HUMUS_E_PROTOCOL),
    (ErrorKind::StreamRefused, sys::HUMUS_E_STREAM_REFUSED),
    (ErrorKind::TooLarge, sys::HUMUS_E_TOO_LARGE),
    (ErrorKind::Resource, sys::HUMUS_E_RESOURCE),
    (ErrorKind::Tls, sys::HUMUS_E_TLS),
    (ErrorKind::TlsClientCert, sys::HUMUS_E_TLS_CLIENT_CERT),
];

impl ErrorKind {
    /// The kind of a C status; `None` for `HUMUS_OK` (0), [`ErrorKind::Unknown`] for a number this binding
    /// does not know.
    pub fn from_status(status: i32) -> Option<ErrorKind> {
        if status == sys::HUMUS_OK {
            return None;
        }
        Some(KINDS.iter().find(|(_, s)| *s == status).map_or(ErrorKind::Unknown(status), |(k, _)| *k))
    }

    /// The C status number, e.g. 202 for [`ErrorKind::Timeout`].
    pub fn status(self) -> i32 {
        match self {
            ErrorKind::Unknown(status) => status,
            ErrorKind::HttpStatus(_) => 0,
            known => KINDS.iter().find(|(k, _)| *k == known).map_or(sys::HUMUS_E_INTERNAL, |(_, s)| *s),
        }
    }

    /// The C enumerator's name as the library gives it (`humus_status_name`), e.g. `"HUMUS_E_TIMEOUT"`;
    /// `"HUMUS_E_UNKNOWN"` for a number the library does not know either.
    pub fn name(self) -> &'static str {
        if let ErrorKind::HttpStatus(_) = self {
            return "HTTP_STATUS";
        }
        // SAFETY: humus_status_name accepts any number and returns static storage, never NULL.
        unsafe { ffi::static_str(sys::humus_status_name(self.status())) }
    }

    /// The kind whose [`name`](ErrorKind::name) is `name` (`"HUMUS_E_CONNECT"`), asking the library for the
    /// names of the numbers it knows; `None` for `"HUMUS_OK"` and for names no status has.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        if let Some((kind, _)) = KINDS.iter().find(|(k, _)| k.name() == name) {
            return Some(*kind);
        }
        // A newer library may know statuses this binding does not: the header's ranges end below 1000.
        (1..1000).map(ErrorKind::Unknown).find(|k| k.name() == name && name != "HUMUS_E_UNKNOWN")
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a call or a setup step failed: a copy of the library's error object (docs/bindings.md §17.2).
///
/// `Display` prints `HUMUS_E_<KIND>: <message>`, the message naming the setting, header or URL at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    fields: Vec<String>,
    attempts: u32,
    retry_after: Duration,
    panic: Option<String>,
    /// The decision trace's JSON, copied out; None for an error no call made. Boxed: an `Error` stays small
    /// enough to return by value (clippy's result_large_err).
    trace: Option<Box<str>>,
}

impl Error {
    /// An error made on the Rust side of the boundary (a NUL byte in a string, a bad conversion), worded
    /// like the library's.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>, fields: Vec<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            fields,
            attempts: 0,
            retry_after: Duration::ZERO,
            panic: None,
            trace: None,
        }
    }

    /// Copies a library error out and frees it. `err` is NULL only after the few functions without an err
    /// parameter, whose status says everything (the header gives the reason beside each); no thread-local
    /// last error is read.
    ///
    /// # Safety
    /// `err` is NULL or an error the library handed over, not used after this call.
    pub(crate) unsafe fn from_raw(status: sys::humus_status, err: *mut sys::humus_error) -> Error {
        let kind = ErrorKind::from_status(status).unwrap_or(ErrorKind::Internal);
        let error = if err.is_null() {
            Error::new(kind, kind.name().to_string(), Vec::new())
        } else {
            // SAFETY: `err` is a live error; its strings live as long as it, and are copied here.
            unsafe { Error::copy(kind, err) }
        };
        // SAFETY: `err` is ours (NULL is accepted).
        unsafe { sys::humus_error_free(err) };
        error
    }

    /// # Safety
    /// `e` is a live error.
    unsafe fn copy(kind: ErrorKind, e: *const sys::humus_error) -> Error {
        // SAFETY: the accessors accept a non-NULL error and never fail; strings are copied.
        unsafe {
            let fields = (0..sys::humus_error_field_count(e))
                .filter_map(|i| ffi::copy_str(sys::humus_error_field(e, i)))
                .collect();
            Error {
                kind,
                message: ffi::copy_str(sys::humus_error_message(e)).unwrap_or_default(),
                fields,
                attempts: u32::try_from(sys::humus_error_attempts(e)).unwrap_or(0),
                retry_after: Duration::from_millis(u64::try_from(sys::humus_error_retry_after_ms(e)).unwrap_or(0)),
                panic: None,
                trace: trace::error_text(e).map(String::into_boxed_str),
            }
        }
    }

    pub(crate) fn set_attempts(&mut self, attempts: u32) {
        self.attempts = attempts;
    }

    /// Attaches the message of the Rust callback that panicked and made the call fail.
    pub(crate) fn with_panic(mut self, panic: Option<String>) -> Error {
        if self.kind == ErrorKind::Callback {
            self.panic = panic;
        }
        self
    }

    /// The kind of failure: the C status.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The C status number (`humus_error_status`).
    pub fn status(&self) -> i32 {
        self.kind.status()
    }

    /// For [`ErrorKind::HttpStatus`] (from [`Response::error_for_status`](crate::Response::error_for_status)):
    /// the response's HTTP status, as reqwest's `Error::status`; otherwise `None`.
    pub fn http_status(&self) -> Option<u16> {
        match self.kind {
            ErrorKind::HttpStatus(status) => Some(status),
            _ => None,
        }
    }

    /// What was wrong, naming the setting, header or URL (`humus_error_message`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The names of the fields, keys or headers the error is about: every bad key of a settings load
    /// (`humus_error_field`).
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// Attempts the failed call made; 0 when it failed before any (`humus_error_attempts`).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// For [`ErrorKind::Rejected`]: how much longer the breaker stays open; otherwise zero
    /// (`humus_error_retry_after_ms`).
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// For [`ErrorKind::Callback`]: why the Rust callback failed the call — what the closure that panicked
    /// said (the call's first panic), or a reply the mock transport could not hand over — when it ran on the
    /// thread that reported the failure; otherwise `None`.
    pub fn panic_message(&self) -> Option<&str> {
        self.panic.as_deref()
    }

    /// The failed call's decision trace (docs/trace.md §20): one record per attempt, in order; empty for an
    /// error no call made (a refused setting or request, one made on the Rust side). Copied out with the
    /// error, parsed when asked for.
    pub fn trace(&self) -> Vec<AttemptRecord> {
        self.trace.as_deref().map(trace::parse).unwrap_or_default()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)?;
        if let Some(panic) = &self.panic {
            write!(f, " ({panic})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
