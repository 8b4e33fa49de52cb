//! Conversions at the C boundary shared by every module: C strings in and out, the library's owned strings,
//! and the `humus_error **err` out-parameter.
use std::ffi::{c_char, CStr, CString};
use std::ptr;

use humus_http_sys as sys;

use crate::error::{Error, ErrorKind};

/// A `&str` view of a C string the library keeps in static storage (status names, the version).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives for the rest of the process.
pub(crate) unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    // SAFETY: the caller promises a NUL-terminated string in static storage.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
}

/// A copy of a borrowed C string; NULL is `None`. Bytes that are not UTF-8 are replaced (U+FFFD): header
/// values on the wire may carry any octets.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the duration of this call.
pub(crate) unsafe fn copy_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises a valid NUL-terminated string.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// A borrowed `&str` of a C string that lives as long as `'a` (an attempt's or a mock request's fields);
/// NULL is `None`, and so is text that is not UTF-8 (see the callers' docs).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn borrowed_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises a valid NUL-terminated string living for 'a.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// A C string of `value`, or an `InvalidArgument` error naming `field` when it holds a NUL byte (C would
/// silently cut it there).
pub(crate) fn c_string(value: &str, field: &str) -> Result<CString, Error> {
    CString::new(value).map_err(|_| {
        Error::new(ErrorKind::InvalidArgument, format!("{field}: contains a NUL byte"), vec![field.to_string()])
    })
}

/// Calls a library function that fills `char **out, size_t *len, humus_error **err` and returns the text
/// as a `String`, freeing the library's copy.
pub(crate) fn library_string(
    call: impl FnOnce(*mut *mut c_char, *mut usize, *mut *mut sys::humus_error) -> sys::humus_status,
) -> Result<String, Error> {
    let mut out: *mut c_char = ptr::null_mut();
    let mut len: usize = 0;
    let mut err: *mut sys::humus_error = ptr::null_mut();
    let status = call(&mut out, &mut len, &mut err);
    check(status, err)?;
    if out.is_null() {
        return Ok(String::new());
    }
    // SAFETY: on HUMUS_OK `out` holds `len` bytes (plus a NUL) that are ours until humus_string_free.
    let text = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), len) };
    let text = String::from_utf8_lossy(text).into_owned();
    // SAFETY: `out` came from the library and is freed once, here.
    unsafe { sys::humus_string_free(out) };
    Ok(text)
}

/// `Ok` for HUMUS_OK, otherwise the error (taking ownership of `err`, which may be NULL).
pub(crate) fn check(status: sys::humus_status, err: *mut sys::humus_error) -> Result<(), Error> {
    if status == sys::HUMUS_OK {
        // Outputs, errors included, are written only on failure; nothing to free.
        return Ok(());
    }
    // SAFETY: `err` is NULL or an error the library just handed to us.
    Err(unsafe { Error::from_raw(status, err) })
}
