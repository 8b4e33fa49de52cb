//! The runtime's span sink (docs/telemetry.md §13.1): one span of kind CLIENT per attempt, with OpenTelemetry's HTTP
//! attributes, delivered to a closure as it ends. The attempt sends a traceparent carrying exactly the span's
//! trace and span ids.
use std::ffi::c_void;
use std::ptr;

use humus_http_sys as sys;

use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::runtime::Runtime;

/// The value of a span attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeValue {
    /// A string, e.g. `url.full`.
    String(String),
    /// An integer, e.g. `http.response.status_code`.
    Int(i64),
}

/// One attempt's span, copied out of the library's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The method, e.g. `"GET"`.
    pub name: String,
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id (the call context's traceparent); `None` for a root span.
    pub parent_span_id: Option<String>,
    /// The caller's tracestate passed on, or `""`.
    pub tracestate: String,
    /// The caller's trace flags, or 01 (sampled) for a new trace.
    pub trace_flags: u8,
    /// When the attempt started, in nanoseconds since the Unix epoch on the runtime's clock.
    pub start_unix_ns: i64,
    /// When it ended.
    pub end_unix_ns: i64,
    /// OpenTelemetry status Error: a 4xx/5xx answer, or none.
    pub is_error: bool,
    /// In the library's order: `url.full`, `server.address`, `server.port`, `http.request.method`,
    /// `http.response.status_code`, `network.protocol.version`, `http.request.resend_count`, `error.type`
    /// (each when it applies).
    pub attributes: Vec<(String, AttributeValue)>,
}

impl Span {
    /// The value of the attribute `key`, if the span has it.
    pub fn attribute(&self, key: &str) -> Option<&AttributeValue> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// # Safety
    /// `s` points to a live span whose strings and attributes live for this call.
    unsafe fn copy(s: *const sys::humus_span) -> Span {
        // SAFETY: the caller's contract; every string is copied.
        let s = unsafe { &*s };
        let attributes = if s.attributes.is_null() || s.attribute_count == 0 {
            &[][..]
        } else {
            // SAFETY: the library gives `attribute_count` attributes at `attributes`, live for this call.
            unsafe { std::slice::from_raw_parts(s.attributes, s.attribute_count) }
        };
        let text = |p: *const std::ffi::c_char| {
            // SAFETY: every string of a live span lives for this call.
            unsafe { ffi::copy_str(p) }.unwrap_or_default()
        };
        Span {
            name: text(s.name),
            trace_id: text(s.trace_id),
            span_id: text(s.span_id),
            parent_span_id: Some(text(s.parent_span_id)).filter(|p| !p.is_empty()),
            tracestate: text(s.tracestate),
            trace_flags: s.trace_flags,
            start_unix_ns: s.start_unix_ns,
            end_unix_ns: s.end_unix_ns,
            is_error: s.status == sys::HUMUS_SPAN_STATUS_ERROR,
            attributes: attributes
                .iter()
                .filter_map(|a| {
                    let value = match a.type_ {
                        sys::HUMUS_ATTRIBUTE_STRING => AttributeValue::String(text(a.string_value)),
                        sys::HUMUS_ATTRIBUTE_INT => AttributeValue::Int(a.int_value),
                        _ => return None, // a type this binding does not know (a newer library): skipped
                    };
                    Some((text(a.key), value))
                })
                .collect(),
        }
    }
}

impl Runtime {
    /// Sends every attempt's span to `span` when it ends, for the calls that start afterwards (replacing an
    /// earlier sink). Without a sink no span or trace id is made and the caller's traceparent passes through.
    /// It runs on the thread that ended the attempt (a caller's or the event loop's), possibly several at
    /// once: it must be fast, and must not drop a client or the runtime. A panic in it is caught and dropped.
    pub fn set_span_sink<F>(&self, span: F) -> Result<(), Error>
    where
        F: Fn(Span) + Send + Sync + 'static,
    {
        let user_data = Box::into_raw(Box::new(span));
        let table = sys::humus_span_sink {
            span: Some(span_trampoline::<F>),
            user_data: user_data.cast(),
            destroy: Some(panic::destroy_box::<F>),
            ..sys::HUMUS_SPAN_SINK_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; the table is copied; any thread.
        let status = unsafe { sys::humus_runtime_set_span_sink(self.raw(), &table, &mut err) };
        if status != sys::HUMUS_OK {
            // SAFETY: on failure destroy is not called: the closure is still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
        }
        ffi::check(status, err)
    }

    /// Removes the span sink, for the calls that start afterwards.
    pub fn clear_span_sink(&self) -> Result<(), Error> {
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; NULL removes the sink; any thread.
        ffi::check(unsafe { sys::humus_runtime_set_span_sink(self.raw(), ptr::null(), &mut err) }, err)
    }
}

/// # Safety
/// Called by the library with the `user_data` of `set_span_sink` and a live span.
unsafe extern "C" fn span_trampoline<F>(user_data: *mut c_void, span: *const sys::humus_span)
where
    F: Fn(Span) + Send + Sync + 'static,
{
    // SAFETY: user_data is the boxed `F`, alive until destroy; the span is live for this call.
    let (sink, span) = unsafe { (&*user_data.cast::<F>(), Span::copy(span)) };
    let _ = panic::catch("span sink", Report::Drop, || sink(span));
}
