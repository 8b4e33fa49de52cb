//! `Runtime`: the process-wide machinery clients share (docs/README.md §1): the event loop, the clock (real or virtual,
//! docs/testing-kit.md §16.1), name overrides (docs/transport.md §10.6), the fault switch (docs/failure-injection.md §14). Its sinks, metrics and mock
//! transport live in `log.rs`, `metrics.rs` and `mock.rs`.
use std::ptr::{self, NonNull};
use std::sync::Arc;

use humus_http_sys as sys;

use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::json::Json;

/// The process-wide machinery clients are built from: event loop, clock, resolve overrides, mock transport,
/// sinks. Usually one per process.
///
/// A cheap handle: clones share one runtime, and every [`Client`](crate::Client) keeps its runtime alive,
/// so the runtime is freed after the last client (the C ABI's rule) whatever order values are dropped in.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Owned>,
}

/// Owns the C runtime; freed when the last `Runtime` handle (clients hold one each) goes.
struct Owned(NonNull<sys::humus_runtime>);

// SAFETY: every runtime function of the header is documented "Any thread" (concurrent calls on one
// runtime included); the one that is not, humus_runtime_free, runs only in Drop, when no handle is left.
unsafe impl Send for Owned {}
// SAFETY: as above: shared references only reach functions documented safe to call concurrently.
unsafe impl Sync for Owned {}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the last handle is gone, and every client holds one, so every client has been freed.
        unsafe { sys::humus_runtime_free(self.0.as_ptr()) }
    }
}

impl Runtime {
    /// A runtime with the defaults: the real clock, no resolve overrides, faults disabled.
    pub fn new() -> Result<Runtime, Error> {
        Runtime::builder().build()
    }

    /// Options for a runtime: resolve overrides, faults, a virtual clock and its seed.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    fn from_options(options: &str) -> Result<Runtime, Error> {
        check_library_version()?;
        let mut raw: *mut sys::humus_runtime = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: `options` is valid for `len` bytes during the call; out-parameters are ours.
        let status = unsafe { sys::humus_runtime_new(options.as_ptr().cast(), options.len(), &mut raw, &mut err) };
        ffi::check(status, err)?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "humus_runtime_new: returned no runtime", Vec::new()))?;
        Ok(Runtime { inner: Arc::new(Owned(raw)) })
    }

    /// Moves a virtual clock forward by `ms`, waking the waits that come due (`humus_runtime_advance_ms`).
    /// A virtual clock also advances on its own whenever every call in flight waits only on timers.
    /// [`ErrorKind::Misuse`] on a real clock.
    pub fn advance_ms(&self, ms: u64) -> Result<(), Error> {
        let ms = i64::try_from(ms).unwrap_or(i64::MAX);
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live (we hold a handle); any thread.
        let status = unsafe { sys::humus_runtime_advance_ms(self.raw(), ms, &mut err) };
        ffi::check(status, err)
    }

    /// Milliseconds the runtime's clock has advanced since the runtime was made (virtual or real).
    pub fn elapsed_ms(&self) -> i64 {
        // SAFETY: the runtime is live; any thread.
        unsafe { sys::humus_runtime_elapsed_ms(self.raw()) }
    }

    pub(crate) fn raw(&self) -> *mut sys::humus_runtime {
        self.inner.0.as_ptr()
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("elapsed_ms", &self.elapsed_ms()).finish()
    }
}

/// The loaded library must speak this binding's ABI: same ABI major (the SONAME's), at least the header's
/// version (STYLE: bindings check the version at load).
fn check_library_version() -> Result<(), Error> {
    // SAFETY: takes nothing, returns a number.
    let abi = unsafe { sys::humus_abi_version() };
    if abi != sys::HUMUS_ABI_VERSION || crate::version_number() < sys::HUMUS_VERSION_NUMBER {
        return Err(Error::new(
            ErrorKind::Misuse,
            format!(
                "libhumus_http {} (ABI {abi}) is loaded; this binding needs ABI {} at version {} or later",
                crate::version(),
                sys::HUMUS_ABI_VERSION,
                sys::HUMUS_VERSION_STRING
            ),
            vec!["version".to_string()],
        ));
    }
    Ok(())
}

/// Options of a [`Runtime`] (the JSON of `humus_runtime_new`), built up and checked by the library in
/// [`build`](RuntimeBuilder::build).
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    resolve: Vec<(String, String)>,
    faults: Option<bool>,
    virtual_clock: bool,
    seed: Option<u64>,
}

impl RuntimeBuilder {
    /// Sends connections for `host_port` (`"payments:8443"`) to `address_port` (`"127.0.0.1:41234"`) while
    /// TLS still verifies the host name, like curl's `--resolve` (docs/transport.md §10.6). Repeatable.
    pub fn resolve(mut self, host_port: &str, address_port: &str) -> RuntimeBuilder {
        self.resolve.push((host_port.to_string(), address_port.to_string()));
        self
    }

    /// Enables failure injection from the `humus.fault` baggage member (docs/failure-injection.md §14).
    pub fn faults(mut self, enabled: bool) -> RuntimeBuilder {
        self.faults = Some(enabled);
        self
    }

    /// A virtual clock (docs/testing-kit.md §16.1): every wait of the clients runs on it and it advances on its own when
    /// every call in flight waits only on timers. Clients then need a mock transport
    /// ([`Runtime::set_mock_transport`]).
    pub fn virtual_clock(mut self) -> RuntimeBuilder {
        self.virtual_clock = true;
        self
    }

    /// Fixes the random draws (backoff jitter) of a virtual-clock runtime.
    pub fn seed(mut self, seed: u64) -> RuntimeBuilder {
        self.seed = Some(seed);
        self
    }

    /// The options as the JSON text handed to `humus_runtime_new`.
    pub fn to_json(&self) -> String {
        let mut options = Json::Obj(Vec::new());
        if !self.resolve.is_empty() {
            let map = options.object("resolve");
            for (from, to) in &self.resolve {
                map.set(from, Json::Str(to.clone()));
            }
        }
        if let Some(faults) = self.faults {
            options.set("faults", Json::Bool(faults));
        }
        if self.virtual_clock {
            options.set("clock", Json::Str("virtual".to_string()));
        }
        if let Some(seed) = self.seed {
            options.set("seed", Json::Int(i128::from(seed)));
        }
        options.text()
    }

    /// Builds the runtime. [`ErrorKind::Config`] naming every bad option (e.g. `resolve.<entry>`).
    pub fn build(&self) -> Result<Runtime, Error> {
        Runtime::from_options(&self.to_json())
    }
}
