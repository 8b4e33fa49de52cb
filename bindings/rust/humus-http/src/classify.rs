//! Classification (docs/retries.md §5): what an attempt's result means for retrying and for the breaker. A closure
//! replaces the default classifier through an `extern "C"` trampoline that catches panics.
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::time::Duration;

use humus_http_sys as sys;

use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::panic::{self, Report};
use crate::settings::Settings;

/// Whether the call should try again after this attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Stop: the attempt's result is the call's (`HUMUS_RETRY_DONE`).
    Done,
    /// Try again if the request may be sent twice and the budget, deadline and attempt limit allow
    /// (`HUMUS_RETRY_AGAIN`).
    Again,
}

/// How the breaker counts this attempt's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerOutcome {
    /// The dependency worked (`HUMUS_BREAKER_SUCCESS`).
    Success,
    /// The dependency failed (`HUMUS_BREAKER_FAILURE`).
    Failure,
    /// Not counted (`HUMUS_BREAKER_IGNORED`).
    Ignored,
}

/// What an attempt's result means (docs/retries.md §5): for retrying, for the breaker, and the dependency's
/// Retry-After.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classification {
    /// Retry or stop.
    pub retry: RetryDecision,
    /// How the breaker counts the result.
    pub breaker: BreakerOutcome,
    /// The dependency's Retry-After: the wait before the next attempt is at least this. Whole
    /// milliseconds, rounded up; `None` (or zero) for none.
    pub retry_after: Option<Duration>,
}

impl Classification {
    fn to_raw(self) -> sys::humus_classification {
        let retry = match self.retry {
            RetryDecision::Done => sys::HUMUS_RETRY_DONE,
            RetryDecision::Again => sys::HUMUS_RETRY_AGAIN,
        };
        let breaker = match self.breaker {
            BreakerOutcome::Success => sys::HUMUS_BREAKER_SUCCESS,
            BreakerOutcome::Failure => sys::HUMUS_BREAKER_FAILURE,
            BreakerOutcome::Ignored => sys::HUMUS_BREAKER_IGNORED,
        };
        let retry_after_ms = self.retry_after.map_or(0, |d| {
            let ms = d.as_nanos().div_ceil(1_000_000);
            i64::try_from(ms).unwrap_or(i64::MAX)
        });
        sys::humus_classification { retry, breaker, retry_after_ms }
    }

    fn from_raw(raw: sys::humus_classification) -> Result<Classification, Error> {
        let retry = match raw.retry {
            sys::HUMUS_RETRY_DONE => RetryDecision::Done,
            sys::HUMUS_RETRY_AGAIN => RetryDecision::Again,
            other => return Err(invalid("retry", other)),
        };
        let breaker = match raw.breaker {
            sys::HUMUS_BREAKER_SUCCESS => BreakerOutcome::Success,
            sys::HUMUS_BREAKER_FAILURE => BreakerOutcome::Failure,
            sys::HUMUS_BREAKER_IGNORED => BreakerOutcome::Ignored,
            other => return Err(invalid("breaker", other)),
        };
        let retry_after = u64::try_from(raw.retry_after_ms).ok().filter(|ms| *ms > 0).map(Duration::from_millis);
        Ok(Classification { retry, breaker, retry_after })
    }
}

fn invalid(field: &str, value: i32) -> Error {
    Error::new(
        ErrorKind::Internal,
        format!("classification: the library returned {field} = {value}"),
        vec![field.to_string()],
    )
}

/// The classifier presets the library ships (docs/retries.md §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassifierPreset {
    /// The default table of docs/retries.md §5.3.
    Humus,
    /// JFast's: 500 counts as success for the breaker; 429 is ignored.
    Jfast,
    /// Only 2xx is a success.
    Strict,
}

impl ClassifierPreset {
    /// The preset's name: `"humus"`, `"jfast"`, `"strict"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClassifierPreset::Humus => "humus",
            ClassifierPreset::Jfast => "jfast",
            ClassifierPreset::Strict => "strict",
        }
    }
}

/// One attempt as a classifier or an attempt hook's [`after`](crate::AttemptHooks::after) sees it: the request's method, and the response's status and headers, or
/// the error kind and message when no response came. Borrowed for the callback's call, on its thread.
pub struct Attempt<'a> {
    raw: *const sys::humus_attempt,
    _borrow: PhantomData<&'a sys::humus_attempt>,
}

impl<'a> Attempt<'a> {
    /// A view of an attempt the library lends for a callback's duration (`'a`).
    pub(crate) fn borrowed(raw: *const sys::humus_attempt) -> Attempt<'a> {
        Attempt { raw, _borrow: PhantomData }
    }

    /// The request's method, e.g. `"GET"`.
    pub fn method(&self) -> &'a str {
        // SAFETY: the attempt is live for 'a; the string lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_attempt_method(self.raw)) }.unwrap_or("")
    }

    /// The response status, or `None` when the attempt got no response.
    pub fn status(&self) -> Option<u16> {
        // SAFETY: the attempt is live.
        let status = unsafe { sys::humus_attempt_status(self.raw) };
        u16::try_from(status).ok().filter(|s| *s != 0)
    }

    /// A response header (case-insensitive name); `None` if absent, with no response, or not UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        let name = ffi::c_string(name, "name").ok()?;
        // SAFETY: the attempt is live for 'a; the returned value lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_attempt_header(self.raw, name.as_ptr())) }
    }

    /// The response's headers in order, repeated names included (empty when no response came). Copied;
    /// bytes that are not UTF-8 are replaced with U+FFFD.
    pub fn headers(&self) -> Vec<(String, String)> {
        // SAFETY: the attempt is live for 'a; the strings are copied.
        unsafe {
            (0..sys::humus_attempt_header_count(self.raw))
                .filter_map(|i| {
                    let name = ffi::copy_str(sys::humus_attempt_header_name(self.raw, i))?;
                    let value = ffi::copy_str(sys::humus_attempt_header_value(self.raw, i))?;
                    Some((name, value))
                })
                .collect()
        }
    }

    /// The error kind when no response came ([`ErrorKind::Connect`], [`ErrorKind::Timeout`], ...).
    pub fn error(&self) -> Option<ErrorKind> {
        // SAFETY: the attempt is live.
        ErrorKind::from_status(unsafe { sys::humus_attempt_error(self.raw) })
    }

    /// The error's message; `""` when there is none.
    pub fn error_message(&self) -> &'a str {
        // SAFETY: the attempt is live for 'a; the string lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_attempt_error_message(self.raw)) }.unwrap_or("")
    }

    /// 1 for the first attempt of a request.
    pub fn number(&self) -> u32 {
        // SAFETY: the attempt is live.
        u32::try_from(unsafe { sys::humus_attempt_number(self.raw) }).unwrap_or(0)
    }

    /// What the default classifier (docs/retries.md §5.3) says: for a closure to delegate to.
    pub fn classify_default(&self) -> Result<Classification, Error> {
        let mut out = sys::humus_classification::default();
        // SAFETY: the attempt is live; `out` is ours; any thread.
        let status = unsafe { sys::humus_classify_default(self.raw, &mut out) };
        ffi::check(status, ptr::null_mut())?;
        Classification::from_raw(out)
    }

    /// What a named preset (docs/retries.md §5.5) says.
    pub fn classify_preset(&self, preset: ClassifierPreset) -> Result<Classification, Error> {
        let name = ffi::c_string(preset.as_str(), "preset")?;
        let mut out = sys::humus_classification::default();
        // SAFETY: the attempt is live; `name` and `out` are valid during the call; any thread.
        let status = unsafe { sys::humus_classify_preset(name.as_ptr(), self.raw, &mut out) };
        ffi::check(status, ptr::null_mut())?;
        Classification::from_raw(out)
    }
}

impl std::fmt::Debug for Attempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attempt")
            .field("number", &self.number())
            .field("method", &self.method())
            .field("status", &self.status())
            .field("error", &self.error())
            .finish()
    }
}

impl Settings {
    /// Replaces the classifier with a closure (docs/retries.md §5.4). It runs on the thread that drives the attempt,
    /// possibly on several at once, hence `Send + Sync`; it may delegate to
    /// [`Attempt::classify_default`]. A closure that panics fails the call with [`ErrorKind::Callback`]
    /// (the panic's message in [`Error::panic_message`]), and the breaker counts a failure. It must not call
    /// the client, and it should not capture the client or runtime (that would keep them alive forever).
    pub fn set_classifier<F>(&mut self, classify: F) -> Result<(), Error>
    where
        F: Fn(&Attempt<'_>) -> Classification + Send + Sync + 'static,
    {
        let user_data = Box::into_raw(Box::new(classify));
        let table = sys::humus_classifier {
            classify: Some(classify_trampoline::<F>),
            user_data: user_data.cast(),
            destroy: Some(panic::destroy_box::<F>),
            ..sys::HUMUS_CLASSIFIER_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: we own the settings exclusively (&mut self); the table is copied by the call.
        let status = unsafe { sys::humus_settings_set_classifier(self.raw_mut(), &table, &mut err) };
        if status != sys::HUMUS_OK {
            // SAFETY: on failure destroy is not called and the closure is still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
        }
        ffi::check(status, err)
    }
}

/// # Safety
/// Called by the library with the `user_data` of `set_classifier` (a live `F`), a live attempt and a
/// writable classification.
unsafe extern "C" fn classify_trampoline<F>(
    user_data: *mut c_void,
    attempt: *const sys::humus_attempt,
    out: *mut sys::humus_classification,
) -> sys::humus_status
where
    F: Fn(&Attempt<'_>) -> Classification + Send + Sync + 'static,
{
    // SAFETY: user_data is the `F` boxed by set_classifier, alive until destroy; shared use is fine (Sync).
    let classify = unsafe { &*user_data.cast::<F>() };
    let attempt = Attempt::borrowed(attempt);
    match panic::catch("classifier", Report::ToCall, || classify(&attempt)) {
        Some(classification) => {
            // SAFETY: `out` is the library's, writable for this call.
            unsafe { out.write(classification.to_raw()) };
            sys::HUMUS_OK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}
