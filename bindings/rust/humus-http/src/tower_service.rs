//! `tower::Service<http::Request<B>>` for the client (cargo feature `tower`), so it plugs in wherever the
//! tower/hyper ecosystem takes a service: layers (`ServiceBuilder`), `ServiceExt::oneshot`, generated
//! clients. Each call is [`Client::submit`] of the converted request: the future is a [`Call`], `Send` and
//! `'static`, and dropping it cancels the native call (its bulkhead slot given back).
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::call::Call;
use crate::client::Client;
use crate::error::Error;
use crate::request::Request;
use crate::response::Response;

/// The future of a call made through the `tower` service: resolves to the response as an
/// `http::Response<Vec<u8>>` ([`Response::into_http`], its redirects in its extensions), or the
/// [`Error`] of a call that got no response — a request that did not convert (see
/// `TryFrom<http::Request<B>> for Request`), [`ErrorKind::Rejected`](crate::ErrorKind::Rejected),
/// [`ErrorKind::BulkheadFull`](crate::ErrorKind::BulkheadFull), a timeout, a transport error. `Send` and
/// `'static`; dropping it before it resolves cancels the call. One of a [`ClientService`] keeps its client
/// alive until it resolves.
#[must_use = "futures do nothing unless polled; dropping this one cancels its call"]
pub struct ResponseFuture {
    state: State,
    /// The shared client of a [`ClientService`] call, kept until the call is over: freeing a client cancels
    /// its calls, and a caller such as `ServiceExt::oneshot` drops the service once the call is made.
    /// Declared after `state`, so a call still running is cancelled before the client goes.
    _client: Option<Arc<Client>>,
}

enum State {
    /// The request did not convert, or the submit was refused: the error, taken by the first poll.
    Failed(Option<Error>),
    Running(Call),
}

impl Future for ResponseFuture {
    type Output = Result<http::Response<Vec<u8>>, Error>;

    /// # Panics
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is Unpin (a Call holds Arcs), so the future is too.
        match &mut self.get_mut().state {
            State::Failed(error) => {
                Poll::Ready(Err(error.take().expect("humus_http::ResponseFuture polled after it completed")))
            }
            State::Running(call) => Pin::new(call).poll(cx).map(|outcome| outcome.and_then(Response::into_http)),
        }
    }
}

impl std::fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let running = matches!(self.state, State::Running(_));
        f.debug_struct("ResponseFuture").field("running", &running).finish()
    }
}

impl Client {
    /// One call of the `tower` service: converts `request` and submits it.
    fn tower_call<B: AsRef<[u8]>>(&self, request: http::Request<B>) -> ResponseFuture {
        let state = match Request::try_from(request).and_then(|request| self.submit(&request)) {
            Ok(call) => State::Running(call),
            Err(e) => State::Failed(Some(e)),
        };
        ResponseFuture { state, _client: None }
    }
}

/// Always ready: the client admits or refuses each call itself, when it is made.
///
/// `poll_ready` cannot be honest about the bulkhead or the breaker through the C ABI: the library offers no
/// reservation to carry from `poll_ready` to `call` (a slot seen free could be gone by then), and no wake-up
/// when a slot frees or the breaker half-opens, so `Pending` could not be woken truthfully. The bulkhead
/// already queues a call for up to `bulkhead.wait` on the event loop (no thread waits), and a full
/// bulkhead or an open breaker is the call's own outcome, [`ErrorKind::BulkheadFull`](crate::ErrorKind::BulkheadFull)
/// or [`ErrorKind::Rejected`](crate::ErrorKind::Rejected) (with [`Error::retry_after`]), as tower's
/// load-shedding layers report an overload: per call, leaving the service usable. A `poll_ready` error, by
/// contrast, tells tower the service is broken for good.
///
/// The future does not borrow the client: freeing the client cancels the calls still running (use
/// [`ClientService`], whose futures hold a share of their client, where the service may go first, as with
/// `ServiceExt::oneshot` on an owned service).
///
/// The body type `B` is any `AsRef<[u8]>` (`Vec<u8>`, `String`, `&'static str`, `bytes::Bytes`), copied so
/// that every attempt can replay it; a streaming `http_body::Body` is not taken (use
/// [`Request::body_stream`]). The URI is absolute or origin-form (joined onto the client's base_url).
impl<B: AsRef<[u8]>> tower::Service<http::Request<B>> for &Client {
    type Response = http::Response<Vec<u8>>;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        self.tower_call(request)
    }
}

/// A shared [`Client`] as a `tower::Service` that is `Clone + Send + Sync + 'static`, as layers such as
/// `Buffer` and frameworks holding a service per connection need (cargo feature `tower`). Every clone
/// sends through the same client: one breaker, bulkhead, budget and connection pool.
#[derive(Clone, Debug)]
pub struct ClientService {
    client: Arc<Client>,
}

impl ClientService {
    /// A service over `client`.
    pub fn new(client: Arc<Client>) -> ClientService {
        ClientService { client }
    }

    /// The client it sends through.
    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }
}

impl From<Client> for ClientService {
    fn from(client: Client) -> ClientService {
        ClientService::new(Arc::new(client))
    }
}

impl From<Arc<Client>> for ClientService {
    fn from(client: Arc<Client>) -> ClientService {
        ClientService::new(client)
    }
}

/// As for `&Client` (see there): always ready, each call submitted.
impl<B: AsRef<[u8]>> tower::Service<http::Request<B>> for ClientService {
    type Response = http::Response<Vec<u8>>;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        ResponseFuture { _client: Some(Arc::clone(&self.client)), ..self.client.tower_call(request) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_static<T: Send + 'static>() {}

    #[test]
    fn the_future_is_send_and_static_and_the_shared_service_is_too() {
        assert_send_static::<ResponseFuture>();
        assert_send_static::<ClientService>();
        fn assert_clone_sync<T: Clone + Sync>() {}
        assert_clone_sync::<ClientService>();
    }
}
