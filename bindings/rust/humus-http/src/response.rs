//! `Response`: what the dependency answered, copied out of the C response, which is freed at once — that
//! closes it, so its result is counted by the breaker and its probe slot freed without waiting for the
//! caller (docs/bodies.md §7; the core has already buffered the whole body).
use std::ptr;

use humus_http_sys as sys;

use crate::error::{Error, ErrorKind};
use crate::ffi;

/// The response a call returned: whatever its status (404, 500, the last 503 — the caller decides what it
/// means, docs/retries.md §6.6). Plain data: `Send`, `Sync`, no tie to the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    status: u16,
    attempts: u32,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    http_version: String,
    url: String,
}

impl Response {
    /// Copies a library response and frees it.
    ///
    /// # Safety
    /// `resp` is NULL or a response the library handed over, not used after this call.
    pub(crate) unsafe fn from_raw(resp: *mut sys::humus_response) -> Result<Response, Error> {
        if resp.is_null() {
            return Err(Error::new(ErrorKind::Internal, "the library reported success with no response", Vec::new()));
        }
        // SAFETY: `resp` is live until the free below; every accessor reads it, strings are copied.
        let copied = unsafe { Response::copy(resp) };
        // SAFETY: ours, freed once.
        unsafe { sys::humus_response_free(resp) };
        copied
    }

    /// # Safety
    /// `resp` is a live response.
    unsafe fn copy(resp: *mut sys::humus_response) -> Result<Response, Error> {
        // SAFETY: accessors of a live response; borrowed strings and bytes are copied before
        // the response is freed.
        unsafe {
            let count = sys::humus_response_header_count(resp);
            let mut headers = Vec::with_capacity(count);
            for i in 0..count {
                let mut name: *const std::ffi::c_char = ptr::null();
                let mut value: *const std::ffi::c_char = ptr::null();
                if sys::humus_response_header_at(resp, i, &mut name, &mut value) == sys::HUMUS_OK {
                    headers.push((ffi::copy_str(name).unwrap_or_default(), ffi::copy_str(value).unwrap_or_default()));
                }
            }
            let mut data: *const std::ffi::c_void = ptr::null();
            let mut len: usize = 0;
            let mut err: *mut sys::humus_error = ptr::null_mut();
            ffi::check(sys::humus_response_body(resp, &mut data, &mut len, &mut err), err)?;
            let body = if data.is_null() || len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec()
            };
            Ok(Response {
                status: u16::try_from(sys::humus_response_status(resp)).unwrap_or(0),
                attempts: u32::try_from(sys::humus_response_attempts(resp)).unwrap_or(0),
                headers,
                body,
                http_version: ffi::copy_str(sys::humus_response_http_version(resp)).unwrap_or_default(),
                url: ffi::copy_str(sys::humus_response_url(resp)).unwrap_or_default(),
            })
        }
    }

    /// The HTTP status, e.g. 200.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Attempts the call made, redirects' requests included (`humus_response_attempts`).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The first value of a header, by case-insensitive name; `None` if absent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every header in the order received, repeated names included. Bytes that are not UTF-8 are
    /// replaced with U+FFFD.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The whole body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.body)
    }

    /// The body, moved out.
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// `"1.1"` or `"2"`.
    pub fn http_version(&self) -> &str {
        &self.http_version
    }

    /// The URL of the last request, after redirects within the origin.
    pub fn url(&self) -> &str {
        &self.url
    }
}
