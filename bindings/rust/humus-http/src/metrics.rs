//! Metrics and readiness (docs/telemetry.md §13.2, docs/upstreams.md §15.2): the runtime's instruments as Prometheus text, as JSON, or
//! point by point to a closure (pull: no background thread), and a readiness report of every client's
//! breaker.
use std::ffi::{c_char, c_void};
use std::ops::ControlFlow;

use humus_http_sys as sys;

use crate::error::Error;
use crate::ffi;
use crate::panic::{self, Report};
use crate::runtime::Runtime;

/// The kind of instrument a [`MetricPoint`] belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Samples in buckets: `count`, `sum`, `bounds`, `bucket_counts`.
    Histogram,
    /// A value read at collection.
    Gauge,
    /// A monotonic count.
    Counter,
}

/// One data point of a collection, borrowed for the closure's call.
#[derive(Clone, Copy, Debug)]
pub struct MetricPoint<'a> {
    /// The OpenTelemetry name, e.g. `"humus.circuit.calls"`.
    pub name: &'a str,
    /// `"s"`, `"By"`, `"{breaker}"`, `"{transition}"`, `"{call}"`, `"{decision}"`.
    pub unit: &'a str,
    /// The instrument's kind.
    pub kind: MetricKind,
    /// The origin's host.
    pub server_address: &'a str,
    /// The origin's port.
    pub server_port: u16,
    /// Gauges and counters: the third attribute, e.g. `("humus.circuit.state", "open")`; `None` for
    /// histograms, whose attributes are in [`attributes`](Self::attributes).
    pub attribute: Option<(&'a str, &'a str)>,
    /// Gauges and counters: the value.
    pub value: u64,
    /// Histograms: the number of samples.
    pub count: u64,
    /// Histograms: the sum of the samples.
    pub sum: f64,
    /// Histograms: the bucket bounds; empty otherwise.
    pub bounds: &'a [f64],
    /// Histograms: `bounds.len() + 1` counts, per bucket (not cumulative); empty otherwise.
    pub bucket_counts: &'a [u64],
    attribute_names: &'a [*const c_char],
    attribute_values: &'a [*const c_char],
}

impl<'a> MetricPoint<'a> {
    /// Every attribute besides `server.address` and `server.port`, as text. Histograms have one point per
    /// attribute set of the attempts: `http.request.method`, and those the attempt had of
    /// `http.response.status_code`, `error.type` and `network.protocol.version` (or only
    /// `otel.metric.overflow` = `"true"` past the client's limit of attribute sets, docs/telemetry.md
    /// §13.2); gauges and counters have their [`attribute`](Self::attribute).
    pub fn attributes(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let (names, values) = (self.attribute_names, self.attribute_values);
        // SAFETY: the strings of a point borrowed for 'a (see `borrow`).
        names
            .iter()
            .zip(values)
            .filter_map(|(&name, &value)| unsafe { Some((ffi::borrowed_str(name)?, ffi::borrowed_str(value)?)) })
    }

    /// # Safety
    /// `p` points to a live point whose strings and arrays live for 'a.
    unsafe fn borrow(p: *const sys::humus_metric_point) -> Option<MetricPoint<'a>> {
        // SAFETY: the caller's contract.
        let p = unsafe { &*p };
        let kind = match p.kind {
            sys::HUMUS_METRIC_HISTOGRAM => MetricKind::Histogram,
            sys::HUMUS_METRIC_GAUGE => MetricKind::Gauge,
            sys::HUMUS_METRIC_COUNTER => MetricKind::Counter,
            _ => return None,
        };
        let n = p.bound_count;
        // SAFETY: strings and arrays of a live point; histograms carry n bounds and n + 1 counts.
        unsafe {
            let attribute = match (ffi::borrowed_str(p.attribute_name), ffi::borrowed_str(p.attribute_value)) {
                (Some(name), Some(value)) => Some((name, value)),
                _ => None,
            };
            let (bounds, bucket_counts) = if n == 0 || p.bounds.is_null() || p.bucket_counts.is_null() {
                (&[][..], &[][..])
            } else {
                (std::slice::from_raw_parts(p.bounds, n), std::slice::from_raw_parts(p.bucket_counts, n + 1))
            };
            // Version 2's members: `attribute_count` names and values.
            let m = p.attribute_count;
            let (attribute_names, attribute_values) = if p.version < 2
                || m == 0
                || p.attribute_names.is_null()
                || p.attribute_values.is_null()
            {
                (&[][..], &[][..])
            } else {
                (std::slice::from_raw_parts(p.attribute_names, m), std::slice::from_raw_parts(p.attribute_values, m))
            };
            Some(MetricPoint {
                name: ffi::borrowed_str(p.name).unwrap_or(""),
                unit: ffi::borrowed_str(p.unit).unwrap_or(""),
                kind,
                server_address: ffi::borrowed_str(p.server_address).unwrap_or(""),
                server_port: u16::try_from(p.server_port).unwrap_or(0),
                attribute,
                value: p.value,
                count: p.count,
                sum: p.sum,
                bounds,
                bucket_counts,
                attribute_names,
                attribute_values,
            })
        }
    }
}

impl Runtime {
    /// The metrics of every client of the runtime (freed ones included), summed by origin, in the
    /// Prometheus text exposition format 0.0.4 (`humus_circuit_state{humus_circuit_state="open"}`, ...).
    pub fn metrics_prometheus(&self) -> Result<String, Error> {
        // SAFETY: the runtime is live; the closure passes our out-parameters through; any thread.
        ffi::library_string(|out, len, err| unsafe { sys::humus_runtime_metrics_prometheus(self.raw(), out, len, err) })
    }

    /// The same metrics as JSON: `{"metrics": [{"name", "unit", "type", "bounds", "points": [...]}]}`.
    pub fn metrics_json(&self) -> Result<String, Error> {
        // SAFETY: as metrics_prometheus.
        ffi::library_string(|out, len, err| unsafe { sys::humus_runtime_metrics_json(self.raw(), out, len, err) })
    }

    /// A readiness report (docs/upstreams.md §15.2) of every live client, as JSON: `{"status": "ok" | "degraded",
    /// "clients": [{"origin", "state", "retry_after_ms", "counts"}]}`. Never "unavailable": a dependency
    /// down does not make this service unready. Reading advances a due open → half-open.
    pub fn readiness_json(&self) -> Result<String, Error> {
        // SAFETY: as metrics_prometheus.
        ffi::library_string(|out, len, err| unsafe { sys::humus_runtime_readiness_json(self.raw(), out, len, err) })
    }

    /// Collects the metrics now and hands each data point to `sink`, on this thread (like an OpenTelemetry
    /// observable callback or a Prometheus collector). `ControlFlow::Break` stops the collection early
    /// (still `Ok`); a panic in `sink` stops it with [`ErrorKind::Callback`](crate::ErrorKind::Callback).
    pub fn collect_metrics<F>(&self, mut sink: F) -> Result<(), Error>
    where
        F: FnMut(&MetricPoint<'_>) -> ControlFlow<()>,
    {
        let mut state = Collect { sink: &mut sink, stopped: false };
        let _ = panic::take();
        let mut err: *mut sys::humus_error = std::ptr::null_mut();
        // SAFETY: the runtime is live; `state` outlives the call, which runs the sink only on this thread.
        let status = unsafe {
            sys::humus_runtime_metrics_collect(
                self.raw(),
                Some(collect_trampoline::<F>),
                (&mut state as *mut Collect<'_, F>).cast(),
                &mut err,
            )
        };
        let panicked = panic::take();
        if status == sys::HUMUS_E_CALLBACK && state.stopped && panicked.is_none() {
            // SAFETY: the error is ours; the stop was the closure's choice, not a failure.
            unsafe { sys::humus_error_free(err) };
            return Ok(());
        }
        ffi::check(status, err).map_err(|e| e.with_panic(panicked))
    }
}

/// What the collecting trampoline reaches through `user_data`.
struct Collect<'s, F> {
    sink: &'s mut F,
    /// The closure returned `Break`.
    stopped: bool,
}

/// # Safety
/// Called by the library, on the thread of `collect_metrics`, with its `user_data` and a live point.
unsafe extern "C" fn collect_trampoline<F>(
    user_data: *mut c_void,
    point: *const sys::humus_metric_point,
) -> sys::humus_status
where
    F: FnMut(&MetricPoint<'_>) -> ControlFlow<()>,
{
    // SAFETY: user_data is the `Collect` of collect_metrics, exclusively ours while the collection runs.
    let state = unsafe { &mut *user_data.cast::<Collect<'_, F>>() };
    // SAFETY: the point is live for this call.
    let Some(point) = (unsafe { MetricPoint::borrow(point) }) else {
        // A kind this binding does not know (a newer library): skipped rather than misread.
        return sys::HUMUS_OK;
    };
    match panic::catch("metric sink", Report::ToCall, || (state.sink)(&point)) {
        Some(ControlFlow::Continue(())) => sys::HUMUS_OK,
        Some(ControlFlow::Break(())) => {
            state.stopped = true;
            sys::HUMUS_E_CALLBACK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}
