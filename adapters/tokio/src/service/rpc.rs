//! JSON-RPC over HTTP POST as a tower service.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};
use sansrpc::codec::http::Exchange;
use sansrpc::connection::Connection;
use sansrpc::Instant;

use super::{read_body, Body, ResponseFuture};
use crate::{Builder, Origins, Received, ServeOptions, TokioTimer, Transport};

/// JSON-RPC over HTTP POST, one message (or batch) per request body, with the rules of
/// [`http::serve_with`](crate::http::serve_with): `405` with `Allow: POST`
/// for another method, `415` for a body not `application/json`, `413` past the endpoint's
/// [`max_frame_bytes`](sansrpc::Limits::max_frame_bytes) (read no further), `200` with the
/// answer, `204` when the body held no request (notifications, answered once dispatched;
/// what a handler sends the client besides its answer has no way over plain HTTP and is
/// dropped),
/// CORS as [`ServeOptions::cors`] says (from the core's [`Exchange`]). Each request's
/// handlers run on a connection machine that serves no other request meanwhile (so ids
/// from different requests never meet, on HTTP/2 streams as on HTTP/1.1 connections; the
/// machines are kept between requests, as a keep-alive connection of the standalone
/// server keeps its own) for up to [`ServeOptions::handler_timeout`]; past it the request
/// is answered `204` and its handlers are dropped with their machine. The request's own
/// future drives its machine (no task of its own, no hop between tasks); a machine whose
/// handlers still run after the answer (a notification's) finishes them on a task of
/// its own and is not kept.
///
/// Clone it freely: the clones share one configuration.
#[derive(Clone, Debug)]
pub struct RpcService(Arc<Rpc>);

#[derive(Debug)]
struct Rpc {
    builder: Builder,
    max_body: usize,
    handler_timeout: Duration,
    cors: Option<Origins>,
    cors_max_age: String,
    /// Connection machines between requests.
    idle: std::sync::Mutex<Vec<Machine>>,
}

impl RpcService {
    /// The service of `builder` (give it a router) with the default [`ServeOptions`].
    pub fn new(builder: Builder) -> Self {
        Self::with_options(builder, &ServeOptions::default())
    }

    /// The service of `builder` with `options`: the handlers' time, CORS, and the network
    /// defaults of the builder's config (the connection cap, TLS and the WebSocket fields
    /// are the app's server's, not the service's).
    pub fn with_options(builder: Builder, options: &ServeOptions) -> Self {
        let builder = options.builder(builder);
        let max_body = builder.connection_config().limits.max_frame_bytes;
        // The service keeps the handlers' time, the app's server the request's: a machine
        // idle in the pool is not timed out.
        let mut quiet = builder.connection_config().clone();
        (quiet.idle_timeout, quiet.frame_timeout) = (None, None);
        RpcService(Arc::new(Rpc {
            builder: builder.config(quiet),
            max_body,
            handler_timeout: options.handler_timeout,
            cors: options.cors.clone(),
            cors_max_age: options.cors_max_age.as_secs().to_string(),
            idle: std::sync::Mutex::new(Vec::new()),
        }))
    }
}

impl<B> tower_service::Service<http::Request<B>> for RpcService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        // The head is judged before the future is made: the future holds only what waits
        // (the exchange and the body), not the request's parts. A future of more than
        // about 1 KiB is an allocation past glibc's per-thread cache, one per request.
        let (parts, body) = request.into_parts();
        let exchange = match super::head_of(&parts, false) {
            Ok(head) => Exchange::of(head, self.0.cors.as_ref()),
            Err(fault) => return answered(super::status(fault.status())),
        };
        if let Some(refusal) = exchange.refused {
            return answered(self.0.reply(&exchange, refusal.status(), Vec::new()));
        }
        let rpc = Arc::clone(&self.0);
        Box::pin(async move { Ok(rpc.answer(exchange, body).await) })
    }
}

impl Rpc {
    async fn answer<B: http_body::Body>(
        &self,
        exchange: Exchange,
        body: B,
    ) -> http::Response<Body> {
        let body = match read_body(body, self.max_body).await {
            Ok(body) => body,
            Err(status) => return self.reply(&exchange, status, Vec::new()),
        };
        // Dropped with this future before the answer (the client went away): the machine
        // finishes its handlers on a task of its own.
        let mut taken = Taken(Some(self.take()));
        let machine = taken.0.as_mut().expect("a machine was just taken");
        let driver = &mut *machine.driver;
        // A machine at rest takes the body and answers within one call, without a poll's
        // turn: most requests are answered here.
        let mut stray = Vec::new();
        let answered = match driver.exchange(&body, |conn| take_answer(conn, &mut stray)) {
            Some(Some(answer)) => {
                if !driver.is_settled() {
                    // What the turn left (a handler that waits, a command one sent) is
                    // taken up as a poll's turn would go on to; the answer is already out.
                    let _ = std::future::poll_fn(|cx| {
                        Poll::Ready(std::pin::Pin::new(&mut *driver).poll(cx))
                    })
                    .await;
                }
                Ok(Some(answer))
            }
            quick => {
                match quick {
                    // Handed in and routed, its answer still to come: the polls take it.
                    Some(None) => driver.transport_mut().handed_in(),
                    // The body goes straight to the machine's transport, and the answer
                    // comes back the same way, within the driver's turn: no channel, no
                    // wakeup.
                    _ => driver.transport_mut().ask(body),
                }
                let mut driven = std::pin::pin!(std::future::poll_fn(|cx| {
                    let ended = std::pin::Pin::new(&mut *driver).poll(cx).is_ready();
                    match driver.transport_mut().answer.take() {
                        Some(answer) => Poll::Ready(Some(answer)),
                        // The connection ended before it answered.
                        None if ended => Poll::Ready(None),
                        None => Poll::Pending,
                    }
                }));
                // Most handlers answer within the first poll: the time limit's timer is set
                // only for the others.
                let first = std::future::poll_fn(|cx| Poll::Ready(driven.as_mut().poll(cx))).await;
                match first {
                    Poll::Ready(answered) => Ok(answered),
                    // Boxed: the timer's room is taken only by the requests that wait for it.
                    Poll::Pending => {
                        Box::pin(tokio::time::timeout(self.handler_timeout, driven)).await
                    }
                }
            }
        };
        match answered {
            Ok(Some(answer)) => {
                if let Some(machine) = taken.0.take() {
                    self.put_back(machine);
                }
                match answer {
                    Some(frame) => self.reply(&exchange, 200, frame),
                    None => self.reply(&exchange, 204, Vec::new()),
                }
            }
            // The connection ended before it answered.
            Ok(None) => {
                taken.0 = None;
                self.reply(&exchange, 500, Vec::new())
            }
            // Handlers past their time: dropped with their machine, as the standalone
            // server drops them.
            Err(_) => {
                taken.0 = None;
                self.reply(&exchange, 204, Vec::new())
            }
        }
    }

    /// An idle connection machine, or a new one.
    fn take(&self) -> Machine {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        idle.unwrap_or_else(|| {
            let transport = Exchanges {
                message: None,
                answer: None,
                delivered: false,
                stray: Vec::new(),
            };
            let (client, driver) = self.builder.clone().connect(transport, TokioTimer);
            Machine {
                driver: Box::new(driver),
                _client: client,
            }
        })
    }

    /// Keeps `machine` for a later request (at most [`MAX_IDLE`]; beyond them it ends).
    /// One whose handlers still run (a notification's, dispatched before the answer)
    /// finishes them on a task of its own, and is not kept.
    fn put_back(&self, machine: Machine) {
        if !machine.driver.is_quiet() {
            finish_elsewhere(machine);
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(machine);
        }
    }

    /// The answer with `status` and `body`, and the exchange's header fields.
    fn reply(&self, exchange: &Exchange, status: u16, body: Vec<u8>) -> http::Response<Body> {
        let mut response = http::Response::new(Body::full(body));
        *response.status_mut() =
            http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        let fields = response.headers_mut();
        let cors = self.cors.is_some();
        exchange.headers(status, cors, &self.cors_max_age, |name, value| {
            // The JSON type of every answer, made once.
            if name == "content-type" && value == JSON.as_bytes() {
                fields.append(http::header::CONTENT_TYPE, JSON);
            } else if let Ok(value) = HeaderValue::from_bytes(value) {
                fields.append(HeaderName::from_static(name), value);
            }
        });
        response
    }
}

/// The future of an answer given without waiting.
fn answered(response: http::Response<Body>) -> ResponseFuture {
    Box::pin(std::future::ready(Ok(response)))
}

/// `application/json`, as a header value.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A machine a request took. Dropped holding it (the request's future dropped before its
/// answer: the client went away), its handlers finish as they would have on a task of
/// the machine's own.
struct Taken(Option<Machine>);

impl Drop for Taken {
    fn drop(&mut self) {
        // Driven at least once more: a body sent in and not read yet is served too.
        if let Some(machine) = self.0.take() {
            finish_elsewhere(machine);
        }
    }
}

/// Drives `machine` on a task of its own until its handlers are done, then drops it (the
/// end of its input would drop them unfinished). Outside a runtime (one shutting down)
/// it is dropped at once.
fn finish_elsewhere(machine: Machine) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut machine = machine;
    runtime.spawn(std::future::poll_fn(move |cx| {
        // The whole machine moves in (its input open, its client kept), not only the
        // driver the closure names.
        let machine = &mut machine;
        match std::future::Future::poll(std::pin::Pin::new(&mut *machine.driver), cx) {
            Poll::Pending if !machine.driver.is_quiet() => Poll::Pending,
            _ => Poll::Ready(()),
        }
    }));
}

/// Idle connection machines kept for later requests.
const MAX_IDLE: usize = 256;

/// A connection machine serving one request at a time: idle in the pool, or taken (and
/// driven) by the request it serves, so ids of requests under way at once never meet.
/// Dropping it drops its handlers.
#[derive(Debug)]
struct Machine {
    driver: Box<crate::Driver<Exchanges, TokioTimer>>,
    /// The connection's client, kept while the machine is: the driver ends with its last
    /// handle.
    _client: crate::Client,
}

/// The transport of a pooled connection: the request body its owner hands in
/// ([`ask`](Exchanges::ask)), and the answer the owner takes after the driver's turn (the
/// first frame, or none once no request of it is left to answer: notifications only).
#[derive(Debug)]
struct Exchanges {
    /// The body not handed in yet (held back while the connection cannot take it).
    message: Option<Vec<u8>>,
    /// The answer to the body handed in, once there is one: `Some(None)` for none.
    answer: Option<Option<Vec<u8>>>,
    /// The body was handed in: its answer is due.
    delivered: bool,
    /// Frames nobody waits for, dropped.
    stray: Vec<u8>,
}

impl Exchanges {
    /// The next request's body.
    fn ask(&mut self, body: Vec<u8>) {
        self.message = Some(body);
        self.answer = None;
        self.delivered = false;
    }

    /// The next request's body was handed to the machine past the transport
    /// ([`Driver::exchange`](crate::Driver::exchange)), and its answer is due.
    fn handed_in(&mut self) {
        self.message = None;
        self.answer = None;
        self.delivered = true;
    }
}

/// The answer to the body handed in, once there is one: its first frame, or `Some(None)`
/// once no request of it is left to answer (notifications only); `None` while one is.
/// Frames past it, which nobody waits for, are dropped into `stray`.
fn take_answer(conn: &mut Connection, stray: &mut Vec<u8>) -> Option<Option<Vec<u8>>> {
    let mut out = Vec::new();
    // What a handler or a client of the machine sent before the answer (a notification)
    // is not it: plain HTTP has no way to send it.
    conn.skip_to_answer();
    let answer = if conn.poll_transmit(&mut out).is_some() {
        Some(Some(out))
    } else if conn.requests_in_flight() == 0 {
        Some(None)
    } else {
        None
    };
    while conn.poll_transmit(stray).is_some() {
        stray.clear();
    }
    answer
}

impl Transport for Exchanges {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        // The owner polls the driver after handing a body in: nothing to wait for here.
        if let Some(message) = self.message.take() {
            if conn.handle_message(&message, now).is_err() {
                self.message = Some(message);
                return Poll::Ready(Ok(Received::Stalled));
            }
            self.delivered = true;
            return Poll::Ready(Ok(Received::Data));
        }
        Poll::Pending
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        if self.delivered {
            self.answer = take_answer(conn, &mut self.stray);
            self.delivered = self.answer.is_none();
        }
        while conn.poll_transmit(&mut self.stray).is_some() {
            self.stray.clear();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service as _;

    /// A request's future holds what waits (the exchange, the body, the machine's turn) and
    /// not the request's parts or the rare time limit's timer: past about 1 KiB it is an
    /// allocation glibc's per-thread cache does not serve (1,088 bytes before, in a release
    /// build: each request went to the allocator's bins and consolidated them).
    #[tokio::test]
    async fn a_requests_future_fits_the_allocators_thread_cache() {
        let mut router = crate::AsyncRouter::new();
        let sync = router.sync();
        sync.raw_method("echo", |_, out| {
            out.extend_from_slice(b"1");
            Ok(())
        })
        .expect("echo registers");
        let mut service = RpcService::new(Builder::new().router(router));
        let request = http::Request::post("/")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"{}")))
            .expect("a request");
        let future = service.call(request);
        let size = std::mem::size_of_val(&*future);
        eprintln!("RpcService's future: {size} bytes");
        assert!(size <= 1016, "{size} bytes");
    }
}
