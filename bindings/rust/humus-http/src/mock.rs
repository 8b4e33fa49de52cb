//! The mock transport (docs/testing-kit.md §16.2): a closure answers every attempt without sockets — status, headers,
//! body, a transport error, a delay or a hang — so code can be tested against a failing dependency, fast and
//! deterministically (with a virtual clock, a 2 s Retry-After costs no real time).
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::time::Duration;

use humus_http_sys as sys;

use crate::error::{Error, ErrorKind};
use crate::ffi;
use crate::panic::{self, Report};
use crate::runtime::Runtime;

/// A request as the mock transport sees it; borrowed for the closure's call, on its thread.
pub struct MockRequest<'a> {
    raw: *const sys::humus_mock_request,
    runtime: *mut sys::humus_runtime,
    _borrow: PhantomData<&'a sys::humus_mock_request>,
}

impl<'a> MockRequest<'a> {
    /// The method, e.g. `"GET"`.
    pub fn method(&self) -> &'a str {
        // SAFETY: the request is live for 'a; the string lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_mock_request_method(self.raw)) }.unwrap_or("")
    }

    /// The absolute URL.
    pub fn url(&self) -> &'a str {
        // SAFETY: the request is live for 'a; the string lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_mock_request_url(self.raw)) }.unwrap_or("")
    }

    /// The first value of a request header (case-insensitive name); `None` if absent or not UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        let name = ffi::c_string(name, "name").ok()?;
        // SAFETY: the request is live for 'a; the value lives as long as it.
        unsafe { ffi::borrowed_str(sys::humus_mock_request_header(self.raw, name.as_ptr())) }
    }

    /// The body; empty when there is none.
    pub fn body(&self) -> &'a [u8] {
        let mut data: *const c_void = ptr::null();
        let mut len: usize = 0;
        // SAFETY: the request is live for 'a; the bytes live as long as it.
        unsafe {
            sys::humus_mock_request_body(self.raw, &mut data, &mut len);
            if data.is_null() || len == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), len)
            }
        }
    }

    /// The runtime's clock when this request reached the mock ([`Runtime::elapsed_ms`]): the virtual time
    /// of an attempt, without the closure holding the runtime (which would keep it alive forever).
    pub fn elapsed_ms(&self) -> i64 {
        // SAFETY: the runtime owns the mock transport, so it is live while the mock runs; any thread.
        unsafe { sys::humus_runtime_elapsed_ms(self.runtime) }
    }
}

impl std::fmt::Debug for MockRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockRequest").field("method", &self.method()).field("url", &self.url()).finish()
    }
}

/// What the mock answers: 200 with no headers and an empty body unless changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MockReply {
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    error: Option<(ErrorKind, String)>,
    delay: Option<Duration>,
    hang: bool,
    body_error: Option<(usize, ErrorKind)>,
}

impl MockReply {
    /// A 200 with no headers and an empty body.
    pub fn new() -> MockReply {
        MockReply::default()
    }

    /// The response status.
    pub fn status(mut self, status: u16) -> MockReply {
        self.status = Some(status);
        self
    }

    /// Adds a response header (repeatable, in order).
    pub fn header(mut self, name: &str, value: &str) -> MockReply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The response body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> MockReply {
        self.body = Some(body.into());
        self
    }

    /// No response: the attempt fails with this transport error ([`ErrorKind::Connect`],
    /// [`ErrorKind::ConnectionLost`], ...) and message.
    pub fn error(mut self, kind: ErrorKind, message: &str) -> MockReply {
        self.error = Some((kind, message.to_string()));
        self
    }

    /// Answers this much later, on the runtime's clock (whole milliseconds, rounded up); bounded by the
    /// attempt's timeout.
    pub fn delay(mut self, delay: Duration) -> MockReply {
        self.delay = Some(delay);
        self
    }

    /// Never answers: the attempt times out (or is cancelled).
    pub fn hang(mut self) -> MockReply {
        self.hang = true;
        self
    }

    /// The body breaks off after `after` bytes with this error ([`ErrorKind::ConnectionLost`], ...), as a
    /// reset mid-body would: [`Client::stream`](crate::Client::stream)'s reads get those bytes, then the error;
    /// a buffered call fails with it.
    pub fn body_error(mut self, after: usize, kind: ErrorKind) -> MockReply {
        self.body_error = Some((after, kind));
        self
    }

    /// Writes the reply into the library's; a string with a NUL byte is refused, naming it.
    fn apply(&self, reply: *mut sys::humus_mock_reply) -> Result<(), Error> {
        // Every call below writes into `reply`, the library's, writable for the callback's duration; the
        // strings and bytes passed are valid during each call (the library copies them).
        if let Some(status) = self.status {
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_set_status(reply, i32::from(status)) };
        }
        for (name, value) in &self.headers {
            let (n, v) = (ffi::c_string(name, name)?, ffi::c_string(value, name)?);
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_add_header(reply, n.as_ptr(), v.as_ptr()) };
        }
        if let Some(body) = &self.body {
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_set_body(reply, body.as_ptr().cast(), body.len()) };
        }
        if let Some(delay) = self.delay {
            let ms = i64::try_from(delay.as_nanos().div_ceil(1_000_000)).unwrap_or(i64::MAX);
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_set_delay_ms(reply, ms) };
        }
        if self.hang {
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_set_hang(reply) };
        }
        if let Some((kind, message)) = &self.error {
            let message = ffi::c_string(message, "message")?;
            // SAFETY: as above.
            unsafe { sys::humus_mock_reply_set_error(reply, kind.status(), message.as_ptr()) };
        }
        if let Some((after, kind)) = self.body_error {
            // SAFETY: as above; a NULL message is the library's default.
            unsafe { sys::humus_mock_reply_set_body_error(reply, after, kind.status(), ptr::null()) };
        }
        Ok(())
    }
}

/// The closure and the runtime it answers for, owned by the library as `user_data`.
struct Mock<F> {
    respond: F,
    runtime: *mut sys::humus_runtime,
}

impl Runtime {
    /// Answers every attempt of the clients built afterwards from this runtime with `respond` (docs/testing-kit.md §16.2);
    /// required by a virtual clock. It runs on the thread that drives the attempt, possibly several at once,
    /// hence `Send + Sync`. A closure that panics (or a reply with a NUL byte in a string) fails the attempt
    /// with [`ErrorKind::Callback`]. Replaces an earlier mock for clients built afterwards.
    pub fn set_mock_transport<F>(&self, respond: F) -> Result<(), Error>
    where
        F: Fn(&MockRequest<'_>) -> MockReply + Send + Sync + 'static,
    {
        let user_data = Box::into_raw(Box::new(Mock { respond, runtime: self.raw() }));
        let table = sys::humus_mock_transport {
            respond: Some(respond_trampoline::<F>),
            user_data: user_data.cast(),
            destroy: Some(panic::destroy_box::<Mock<F>>),
            ..sys::HUMUS_MOCK_TRANSPORT_INIT
        };
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; the table is copied; any thread.
        let status = unsafe { sys::humus_runtime_set_mock_transport(self.raw(), &table, &mut err) };
        if status != sys::HUMUS_OK {
            // SAFETY: on failure the library took nothing: the closure is still ours to drop.
            drop(unsafe { Box::from_raw(user_data) });
        }
        ffi::check(status, err)
    }

    /// Removes the mock transport: clients built afterwards use the network again.
    pub fn clear_mock_transport(&self) -> Result<(), Error> {
        let mut err: *mut sys::humus_error = ptr::null_mut();
        // SAFETY: the runtime is live; NULL removes the mock; any thread.
        let status = unsafe { sys::humus_runtime_set_mock_transport(self.raw(), ptr::null(), &mut err) };
        ffi::check(status, err)
    }
}

// SAFETY: the raw runtime pointer is only used for humus_runtime_elapsed_ms ("Any thread"), while the
// runtime that owns this mock is alive; the closure itself is Send + Sync.
unsafe impl<F: Send> Send for Mock<F> {}
// SAFETY: as above.
unsafe impl<F: Sync> Sync for Mock<F> {}

/// # Safety
/// Called by the library with the `user_data` of `set_mock_transport`, a live request and a writable reply.
unsafe extern "C" fn respond_trampoline<F>(
    user_data: *mut c_void,
    request: *const sys::humus_mock_request,
    reply: *mut sys::humus_mock_reply,
) -> sys::humus_status
where
    F: Fn(&MockRequest<'_>) -> MockReply + Send + Sync + 'static,
{
    // SAFETY: user_data is the boxed `Mock<F>`, alive until destroy; shared use is fine (Sync).
    let mock = unsafe { &*user_data.cast::<Mock<F>>() };
    let request = MockRequest { raw: request, runtime: mock.runtime, _borrow: PhantomData };
    let applied = panic::catch("mock transport", Report::ToCall, || (mock.respond)(&request).apply(reply));
    match applied {
        Some(Ok(())) => sys::HUMUS_OK,
        Some(Err(e)) => {
            // Reported like a panic: the attempt fails with HUMUS_E_CALLBACK, and this says why.
            panic::remember(format!("mock transport: {e}"));
            sys::HUMUS_E_CALLBACK
        }
        None => sys::HUMUS_E_CALLBACK,
    }
}
