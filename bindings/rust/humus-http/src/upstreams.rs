//! `Upstreams`: clients by name from one JSON document (docs/upstreams.md §15.1), with environment overrides of each
//! `base_url`, and their readiness report (docs/upstreams.md §15.2).
use std::ptr::{self, NonNull};

use humus_http_sys as sys;

use crate::client::Client;
use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::runtime::Runtime;

/// A registry of clients by name, built from `{"upstreams": {"billing": {"base_url": ..., ...}}}`. The
/// registry owns its clients: [`client`](Upstreams::client) lends them out for as long as it lives.
pub struct Upstreams {
    raw: NonNull<sys::humus_upstreams>,
    /// Borrowed views of the registry's clients, by name in sorted order; freed with the registry.
    clients: Vec<(String, Client)>,
    /// "The runtime must outlive the registry": dropped after it (fields drop after `Drop::drop`).
    _runtime: Runtime,
}

// SAFETY: the header: "Thread-safe once built", every function "Any thread"; humus_upstreams_free runs only
// in Drop, when no borrowed client is left (they borrow `self`).
unsafe impl Send for Upstreams {}
// SAFETY: as above.
unsafe impl Sync for Upstreams {}

impl Drop for Upstreams {
    fn drop(&mut self) {
        // SAFETY: ours; frees the clients too (as humus_client_free). The views in `clients` do not free
        // anything, and hold the runtime, which must outlive the registry, until after this.
        unsafe { sys::humus_upstreams_free(self.raw.as_ptr()) }
    }
}

impl Upstreams {
    /// Builds every upstream's client on `runtime`. Each upstream's keys are those of
    /// [`Settings::from_json`](crate::Settings::from_json). `HUMUS_HTTP_UPSTREAMS__<NAME>__BASE_URL` in the
    /// environment (NAME in uppercase, `-` written `_`) wins over the file's `base_url`, and a disagreement
    /// is logged once to the runtime's log sink. [`ErrorKind::Config`] naming every problem at once by its
    /// path (`upstreams.billing.timeout`); [`ErrorKind::Program`] for a rule across one upstream's fields.
    pub fn from_json(runtime: &Runtime, json: &str) -> Result<Upstreams, Error> {
        let mut raw: *mut sys::humus_upstreams = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; `json` is valid for `len` bytes; out-parameters are ours.
        let status = unsafe {
            sys::humus_upstreams_from_json(runtime.raw(), json.as_ptr().cast(), json.len(), &mut raw, &mut err)
        };
        ffi::check(status, err)?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::new(ErrorKind::Internal, "humus_upstreams_from_json: returned nothing", Vec::new())
        })?;
        let mut upstreams = Upstreams { raw, clients: Vec::new(), _runtime: runtime.clone() };
        // SAFETY: the registry is live; names are borrowed from it and copied.
        let count = unsafe { sys::humus_upstreams_count(raw.as_ptr()) };
        for i in 0..count {
            // SAFETY: i < count: a name of the live registry, copied.
            let Some(name) = (unsafe { ffi::copy_str(sys::humus_upstreams_name(raw.as_ptr(), i)) }) else { continue };
            let client = upstreams.lookup(&name)?;
            upstreams.clients.push((name, Client::borrowed(client, runtime.clone())));
        }
        Ok(upstreams)
    }

    fn lookup(&self, name: &str) -> Result<NonNull<sys::humus_client>, Error> {
        let c_name = ffi::c_string(name, "name")?;
        let mut client: *mut sys::humus_client = ptr::null_mut();
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the registry is live; `c_name` is valid during the call; out-parameters are ours.
        let status = unsafe { sys::humus_upstreams_client(self.raw.as_ptr(), c_name.as_ptr(), &mut client, &mut err) };
        ffi::check(status, err)?;
        NonNull::new(client)
            .ok_or_else(|| Error::new(ErrorKind::Internal, "humus_upstreams_client: returned no client", Vec::new()))
    }

    /// The client of upstream `name`, owned by the registry. [`ErrorKind::InvalidArgument`] for an unknown
    /// name, the message listing the configured ones.
    pub fn client(&self, name: &str) -> Result<&Client, Error> {
        match self.clients.iter().find(|(n, _)| n == name) {
            Some((_, client)) => Ok(client),
            // The library's refusal names the upstreams there are.
            None => Err(self.lookup(name).err().unwrap_or_else(|| {
                Error::new(ErrorKind::Internal, format!("upstream {name}: found late"), vec![name.to_string()])
            })),
        }
    }

    /// The upstreams' names, in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.clients.iter().map(|(n, _)| n.as_str())
    }

    /// How many upstreams the registry holds.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Whether the registry holds none.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The readiness report (docs/upstreams.md §15.2) of the registry's clients, each with its `"name"`, as
    /// [`Runtime::readiness_json`] writes it.
    pub fn readiness_json(&self) -> Result<String, Error> {
        // SAFETY: the registry is live; the closure passes our out-parameters through; any thread.
        ffi::library_string(|out, len, err| unsafe {
            sys::humus_upstreams_readiness_json(self.raw.as_ptr(), out, len, err)
        })
    }
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams").field("names", &self.names().collect::<Vec<_>>()).finish()
    }
}
