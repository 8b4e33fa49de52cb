//! A resilient outbound HTTP client: the safe Rust binding of libhumus_http (docs/bindings.md §17.4).
//!
//! One [`Client`] per dependency holds its connections, retry budget, circuit breaker and bulkhead; every
//! call goes through them (docs/retries.md §4 to docs/bulkhead.md §11). Clients are built from a [`Runtime`] (the process-wide machinery:
//! event loop, clock, name overrides, mock transport) and [`Settings`] (docs/settings.md §3).
//!
//! ```no_run
//! use std::time::Duration;
//! use humus_http::{Client, Request, Runtime, Settings};
//!
//! # fn main() -> Result<(), humus_http::Error> {
//! let runtime = Runtime::new()?;
//! let settings = Settings::builder("https://payments.example:8443")
//!     .timeout(Duration::from_secs(2))
//!     .max_attempts(3)
//!     .build()?;
//! let client = Client::new(&runtime, &settings)?;
//! let response = client.execute(&Request::get("https://payments.example:8443/v1/balance"))?;
//! println!("{} after {} attempt(s)", response.status(), response.attempts());
//! # Ok(())
//! # }
//! ```
//!
//! A call that got a response returns it whatever its status (404, the last 503: docs/retries.md §6.6); only a call
//! that got none fails, with an [`Error`] whose [`ErrorKind`] is the C status (timeout, rejected by the open
//! breaker, connect, TLS, ...).
//!
//! Bodies stream when asked (docs/bodies.md §7): [`Client::stream`] returns a [`StreamingResponse`] at the
//! response's headers, read with [`std::io::Read`] in memory bounded by your buffer, its result counted by
//! the breaker when read to the end or dropped; [`Request::body_stream`] sends a [`Body`] from a reader
//! (replayed only when seekable). Asynchronously, [`Client::submit_stream`] resolves at the headers to an
//! [`AsyncStreamingResponse`], a [`futures_core::Stream`] of chunks read on the library's event loop.
//!
//! With the cargo feature `http`, the `http` crate's types convert both ways, as hyper, axum and tower code
//! holds them: `Request::try_from(http::Request<B>)` (method, URI, headers, body, and a [`CallContext`] or
//! [`RetryMode`] from its extensions) and `Response::into_http` (`TryFrom<Response>` for
//! `http::Response<Vec<u8>>`), each failing with an [`Error`] naming what cannot convert.
//!
//! With the cargo feature `tower`, `&Client` and the clonable [`ClientService`] implement
//! `tower::Service<http::Request<B>>`: each call is submitted to the event loop, its future ([`ResponseFuture`],
//! `Send`) resolving to an `http::Response<Vec<u8>>`.
//!
//! [`AttemptHooks`] run code around every attempt (each retry and redirect hop): a `before` that may set
//! the attempt's headers or end the call, an `after` that sees each attempt's response. Redirects can be
//! turned off per request ([`Request::follow_redirects`]); a response lists the hops it followed
//! ([`Response::redirects`]), each with its head, as curl `-L -i` prints them; [`Response::reason`] is the
//! status line's phrase as sent, and [`Request::remove_header`] leaves out a header the client would add
//! (curl's `-H 'Name:'`).
//!
//! Many dependencies can be configured at once as an [`Upstreams`] registry (docs/upstreams.md §15). Callbacks
//! (classifiers, breaker policies, the mock transport, the log, span and metric sinks) are Rust closures behind
//! `extern "C"` trampolines; a closure that panics is reported to the library as a failing callback
//! (docs/breaker.md §9.4: the breaker counts it as a failure), never unwound into C.
#![deny(missing_docs)]
#![warn(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod body_stream;
mod breaker;
mod call;
mod cancel;
mod classify;
mod client;
mod deadline;
mod error;
mod ffi;
mod hooks;
#[cfg(feature = "http")]
mod http_types;
mod json;
mod log;
mod metrics;
mod mock;
mod panic;
mod request;
mod response;
mod runtime;
mod settings;
mod span;
#[cfg(feature = "tower")]
mod tower_service;
mod trace;
mod upstreams;

pub use body_stream::{AsyncStreamingResponse, StreamCall};
pub use breaker::{BreakerCounts, CircuitState, ProbeDecision};
pub use call::{Call, CallHandle};
pub use cancel::CancelToken;
pub use classify::{Attempt, BreakerOutcome, Classification, ClassifierPreset, RetryDecision};
pub use client::Client;
#[cfg(feature = "http")]
pub use deadline::deadline_from_headers;
pub use deadline::parse_deadline;
pub use error::{Error, ErrorKind};
pub use hooks::{AttemptHooks, AttemptRequest, BoxError};
#[cfg(feature = "http")]
pub use http_types::{FollowRedirects, ReasonPhrase};
pub use log::LogRecord;
pub use metrics::{MetricKind, MetricPoint};
pub use mock::{MockReply, MockRequest};
pub use request::{Body, CallContext, Request, RetryMode};
pub use response::{Redirect, Response, StreamingResponse};
pub use runtime::{Runtime, RuntimeBuilder};
pub use settings::{
    BulkheadAlgorithm, BulkheadMode, HttpVersion, RetryBudget, Settings, SettingsBuilder, Tls, TlsVersion,
};
pub use span::{AttributeValue, Span};
#[cfg(feature = "tower")]
pub use tower_service::{ClientService, ResponseFuture};
pub use trace::{AttemptRecord, BreakerPosition};
pub use upstreams::Upstreams;

/// The `http` crate (cargo feature `http`) whose `Request` and `Response` this crate converts from and to,
/// re-exported so that a program names the same version.
#[cfg(feature = "http")]
pub use http;

/// The `tower` crate (cargo feature `tower`) whose `Service` the client implements, re-exported so that a
/// program names the same version.
#[cfg(feature = "tower")]
pub use tower;

/// The README's examples, compiled and run as doc tests so they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;

/// The version of the library loaded at run time, e.g. `"0.1.0"`.
pub fn version() -> &'static str {
    // SAFETY: humus_version takes nothing and returns a NUL-terminated string in static storage.
    unsafe { ffi::static_str(humus_http_sys::humus_version()) }
}

/// The loaded library's version as a number: MAJOR*10000 + MINOR*100 + PATCH.
pub fn version_number() -> i32 {
    // SAFETY: takes nothing, returns a number; any thread.
    unsafe { humus_http_sys::humus_version_number() }
}
