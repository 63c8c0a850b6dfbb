//! JSON-RPC over HTTP (hyper 1): one message per POST body, on the shared driver.
//!
//! The server keeps one connection machine per HTTP connection, driven beside hyper in
//! the connection's task: each POST body is handed to it as one message (it classifies it:
//! parse errors, batches, notifications), and the frame it sends back is the answer, `204`
//! when the body held no request (notifications only: answered once their handlers are
//! dispatched, not when they finish). HTTP/1.1 answers one request at a time per
//! connection, so ids from different exchanges never meet, and nothing is built or timed
//! per request: the machine arms no timer; the head and write-stall timeouts are one timer
//! per connection, moved only when it fires; a body's time limit is armed only when the
//! body did not come with its head, and a handler's only when the driver has taken the
//! body and not answered (an asynchronous handler), not for a handler that answers at
//! once. The client
//! sends one call, notification or batch per POST and feeds the response body back to its
//! endpoint.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use bytes::BytesMut;
use futures::FutureExt;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Bytes, Incoming};
use hyper::header::{
    HeaderValue, ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS,
    ACCESS_CONTROL_REQUEST_METHOD, ALLOW, CONNECTION, CONTENT_TYPE, ORIGIN, VARY,
};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use sansrpc::connection::Connection;
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::{Instant, RawValue};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::{BatchSlot, BoxFuture, Builder, CallError, Driver, Received};
use crate::{Origins, ServeOptions, TokioTimer, Transport};

pub use hyper;

type Answer = Response<Full<Bytes>>;

fn reply(status: StatusCode, body: Option<Bytes>) -> Answer {
    let mut response = Response::new(Full::new(body.unwrap_or_default()));
    *response.status_mut() = status;
    response
}

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// `application/json`, with no charset or a UTF-8 one.
fn is_json(value: Option<&HeaderValue>) -> bool {
    let Some(value) = value.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut parts = value.split(';').map(str::trim);
    let media = parts.next().unwrap_or_default();
    media.eq_ignore_ascii_case("application/json")
        && parts.all(|param| match param.split_once('=') {
            Some((name, charset)) if name.trim().eq_ignore_ascii_case("charset") => {
                let charset = charset.trim().trim_matches('"');
                charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("utf8")
            }
            _ => true,
        })
}

/// One HTTP connection's JSON-RPC state, shared by its exchanges and its driver: HTTP/1.1
/// answers one request at a time, so at most one body is on its way in and one answer
/// awaited.
#[derive(Default)]
struct Pipe {
    /// The body of the exchange under way, until the connection takes it.
    body: Option<Bytes>,
    /// The connection took the body: an answer (or none, for notifications) follows.
    taken: bool,
    /// An exchange waits for its answer (until it is given, or the exchange gives up).
    waiting: bool,
    /// The answer given to the waiting exchange: a frame, or none (`204`).
    answer: Option<Option<Bytes>>,
    /// The waiting exchange's waker, to hand it its answer.
    exchange: Option<Waker>,
    /// The driver's waker, to hand it a body.
    driver: Option<Waker>,
    /// The driver ended (it failed): exchanges are answered 500.
    gone: bool,
    /// A request's head has come and its answer is not yet given back to hyper.
    in_exchange: bool,
    /// When the last exchange ended (or the connection opened): the next request's head
    /// is due within the head timeout from then.
    idle_since: Option<tokio::time::Instant>,
    /// Since when an answer has waited to be written with no byte taken by the peer.
    write_blocked_since: Option<tokio::time::Instant>,
}

impl Pipe {
    /// Gives the waiting exchange its answer.
    fn give(&mut self, answer: Option<Bytes>) {
        self.waiting = false;
        self.taken = false;
        self.answer = Some(answer);
        if let Some(exchange) = self.exchange.take() {
            exchange.wake();
        }
    }

    /// The driver is gone: the waiting exchange is answered `500`.
    fn end(&mut self) {
        self.gone = true;
        self.waiting = false;
        if let Some(exchange) = self.exchange.take() {
            exchange.wake();
        }
    }
}

/// The message transport of one HTTP connection: each POST body is one message in, and
/// the one frame it causes (a response, a batch's array, a parse error) the HTTP answer.
/// Frames with no exchange waiting for them (an answer that came after its exchange gave
/// up) are dropped.
struct HttpPipe {
    pipe: Shared,
    /// Where the connection writes each frame.
    frame: Vec<u8>,
    /// Where an answer is copied to be handed to hyper: once hyper has written and dropped
    /// the last one, the same allocation takes the next (small answers cost no allocation).
    answers: BytesMut,
}

/// An answer at least this long is handed to hyper as it is, not copied (so the buffer
/// kept for answers stays within a few KiB per connection).
const MOVED_ANSWER: usize = 1024;

/// The [`Pipe`] of one HTTP connection.
type Shared = Arc<Mutex<Pipe>>;

fn lock(pipe: &Shared) -> std::sync::MutexGuard<'_, Pipe> {
    pipe.lock().unwrap_or_else(|e| e.into_inner())
}

impl Transport for HttpPipe {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let mut pipe = lock(&self.pipe);
        let Some(body) = pipe.body.take() else {
            pipe.driver = Some(cx.waker().clone());
            return Poll::Pending;
        };
        if conn.handle_message(&body, now).is_err() {
            pipe.body = Some(body);
            return Poll::Ready(Ok(Received::Stalled));
        }
        pipe.taken = true;
        // One body per exchange: the next comes with a wake.
        pipe.driver = Some(cx.waker().clone());
        Poll::Ready(Ok(Received::Drained))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let HttpPipe {
            pipe,
            frame,
            answers,
        } = self;
        let mut pipe = lock(pipe);
        while conn.poll_transmit(frame).is_some() {
            if pipe.waiting {
                let answer = if frame.len() >= MOVED_ANSWER {
                    Bytes::from(std::mem::take(frame))
                } else {
                    answers.extend_from_slice(frame);
                    answers.split().freeze()
                };
                pipe.give(Some(answer));
            }
            frame.clear();
        }
        // The body is handled, its events routed, and no request of it is left to answer:
        // notifications only, which get no answer.
        if pipe.taken && conn.endpoint().requests_in_flight() == 0 && pipe.waiting {
            pipe.give(None);
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Awaits `future`, arming a timer for `limit` only if it is not ready at once (a body
/// that came with its head, an answer from a synchronous handler): `None` when it ran out.
async fn within<F: Future>(limit: Option<Duration>, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let first = std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    if let Poll::Ready(out) = first {
        return Some(out);
    }
    match limit {
        Some(limit) => tokio::time::timeout(limit, future).await.ok(),
        None => Some(future.await),
    }
}

/// An exchange under way on a connection (from its head to its answer): while one is,
/// the head timeout does not apply; when it ends, the next head is due within the timeout.
struct InExchange(Shared);

impl InExchange {
    fn begin(conn: &Shared) -> Self {
        lock(conn).in_exchange = true;
        InExchange(conn.clone())
    }
}

impl Drop for InExchange {
    fn drop(&mut self) {
        let mut pipe = lock(&self.0);
        pipe.in_exchange = false;
        pipe.idle_since = Some(tokio::time::Instant::now());
    }
}

/// The connection's own time limits, outside the connection machine (which does not see
/// the socket): `head` for the next request head, counted from the end of the last exchange
/// (or the opening), so a slowloris sending a head a byte at a time and a kept-alive
/// connection left idle are closed; `stall` for an answer no byte of which the peer takes
/// (a peer that sends and never reads). Resolves when the connection is to be closed. One
/// timer per connection, moved only when it fires (at most once per limit while requests
/// flow), instead of one armed for every head.
async fn limits(conn: &Shared, head: Option<Duration>, stall: Option<Duration>) {
    let Some(period) = head.into_iter().chain(stall).min() else {
        return std::future::pending().await;
    };
    let opened = tokio::time::Instant::now();
    let sleep = tokio::time::sleep_until(opened + period);
    let mut sleep = std::pin::pin!(sleep);
    loop {
        sleep.as_mut().await;
        let now = tokio::time::Instant::now();
        let due = {
            let pipe = lock(conn);
            match (pipe.write_blocked_since, stall, head) {
                (Some(since), Some(stall), _) => since + stall,
                (Some(_), None, _) => now + period,
                (None, _, _) if pipe.in_exchange => now + period,
                (None, _, Some(head)) => pipe.idle_since.unwrap_or(opened) + head,
                (None, _, None) => now + period,
            }
        };
        if due <= now {
            return;
        }
        sleep.as_mut().reset(due);
    }
}

/// The connection's socket, telling the [`Pipe`] when a write waits for the peer to read
/// and when it goes on (the lock is taken only on those changes, not on every write).
struct Watched<S> {
    io: S,
    conn: Shared,
    blocked: bool,
}

impl<S> Watched<S> {
    fn note<T>(&mut self, result: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match (&result, self.blocked) {
            (Poll::Pending, false) => {
                self.blocked = true;
                lock(&self.conn).write_blocked_since = Some(tokio::time::Instant::now());
            }
            (Poll::Ready(_), true) => {
                self.blocked = false;
                let mut pipe = lock(&self.conn);
                pipe.write_blocked_since = None;
                // The last answer is still on its way: the next head is due from now.
                if !pipe.in_exchange {
                    pipe.idle_since = Some(tokio::time::Instant::now());
                }
            }
            _ => {}
        }
        result
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = std::pin::Pin::new(&mut self.io).poll_write(cx, buf);
        self.note(result)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.note(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let result = std::pin::Pin::new(&mut self.io).poll_flush(cx);
        self.note(result)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The driver ended before it answered.
struct Gone;

/// The answer to the exchange under way, once given (`Ok`); while it is not, the exchange's
/// waker is kept for it, and `Err` tells whether the driver has taken the body yet.
fn poll_answer(pipe: &Shared, cx: &Context<'_>) -> Result<Result<Option<Bytes>, Gone>, bool> {
    let mut pipe = lock(pipe);
    if let Some(answer) = pipe.answer.take() {
        return Ok(Ok(answer));
    }
    if pipe.gone {
        return Ok(Err(Gone));
    }
    if !pipe
        .exchange
        .as_ref()
        .is_some_and(|w| w.will_wake(cx.waker()))
    {
        pipe.exchange = Some(cx.waker().clone());
    }
    Err(pipe.body.is_none())
}

/// Awaits the answer to the exchange under way, arming a timer for `limit` only when the
/// handlers may take long: the connection's driver, beside hyper in the same task, runs
/// in a turn or two of the task, and a synchronous handler has answered by the time the
/// driver has taken the body. So the timer is armed once the body is taken and the answer
/// is not there, or when the driver has not taken the body after a few turns (a full
/// in-flight table): not for every request. `None` when the limit passed; a late answer is
/// then dropped.
async fn answer_within(limit: Duration, pipe: &Shared) -> Option<Result<Option<Bytes>, Gone>> {
    const TURNS: usize = 3;
    let mut turns = 0;
    let early = std::future::poll_fn(|cx| {
        let taken = match poll_answer(pipe, cx) {
            Ok(answer) => return Poll::Ready(Some(answer)),
            Err(taken) => taken,
        };
        turns += 1;
        if turns > TURNS || taken {
            return Poll::Ready(None);
        }
        // The driver is woken and has yet to run: look again after it has.
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
    if let Some(answer) = early {
        return Some(answer);
    }
    let answer = std::future::poll_fn(|cx| match poll_answer(pipe, cx) {
        Ok(answer) => Poll::Ready(answer),
        Err(_) => Poll::Pending,
    });
    let answer = tokio::time::timeout(limit, answer).await.ok();
    if answer.is_none() {
        let mut pipe = lock(pipe);
        pipe.waiting = false;
        pipe.exchange = None;
    }
    answer
}

/// What one HTTP connection needs to answer its requests.
struct Serving {
    builder: Builder,
    /// The builder of each connection's machine: the builder's, with the timeouts hyper
    /// keeps instead (idle, partial head and body) left out, so it arms no timer.
    machine: Builder,
    handler_timeout: Duration,
    cors: Option<Origins>,
    cors_max_age: HeaderValue,
}

/// Answers one HTTP request, with CORS when configured.
async fn answer(request: Request<Incoming>, serving: Arc<Serving>, conn: Shared) -> Answer {
    let _exchange = InExchange::begin(&conn);
    let Some(origins) = &serving.cors else {
        return exchange(request, &serving, &conn).await;
    };
    let origin = request.headers().get(ORIGIN).cloned();
    let allowed = origin
        .as_ref()
        .filter(|o| o.to_str().is_ok_and(|o| origins.allows(o)))
        .map(|o| match origins {
            Origins::Any => HeaderValue::from_static("*"),
            Origins::List(_) => o.clone(),
        });
    let preflight = request.method() == hyper::Method::OPTIONS
        && request
            .headers()
            .contains_key(ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let Some(_) = &allowed else {
            let mut refused = reply(StatusCode::FORBIDDEN, None);
            refused
                .headers_mut()
                .insert(VARY, HeaderValue::from_static("Origin"));
            return refused;
        };
        let headers = request
            .headers()
            .get(ACCESS_CONTROL_REQUEST_HEADERS)
            .cloned()
            .unwrap_or(HeaderValue::from_static("Content-Type"));
        let mut response = reply(StatusCode::NO_CONTENT, None);
        let h = response.headers_mut();
        h.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST"),
        );
        h.insert(ACCESS_CONTROL_ALLOW_HEADERS, headers);
        h.insert(ACCESS_CONTROL_MAX_AGE, serving.cors_max_age.clone());
        response
    } else {
        exchange(request, &serving, &conn).await
    };
    let h = response.headers_mut();
    h.insert(VARY, HeaderValue::from_static("Origin"));
    if let Some(allowed) = allowed {
        h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    }
    response
}

/// Answers one HTTP request's JSON-RPC exchange.
async fn exchange(request: Request<Incoming>, serving: &Serving, conn: &Shared) -> Answer {
    let config = serving.builder.endpoint_config();
    if request.method() != hyper::Method::POST {
        let mut response = reply(StatusCode::METHOD_NOT_ALLOWED, None);
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if !is_json(request.headers().get(CONTENT_TYPE)) {
        return reply(StatusCode::UNSUPPORTED_MEDIA_TYPE, None);
    }
    let limit = config.limits.max_frame_bytes;
    // A declared Content-Length over the limit is refused before reading any of the body.
    if request.body().size_hint().lower() > limit as u64 {
        return reply(StatusCode::PAYLOAD_TOO_LARGE, None);
    }
    let collect = read_body(request.into_body(), limit);
    let Some(collected) = within(config.frame_timeout, collect).await else {
        // A body trickling in (slowloris): refused, and the connection closed.
        return closing(StatusCode::REQUEST_TIMEOUT);
    };
    let body = match collected {
        Ok(body) => body,
        Err(status) => return reply(status, None),
    };
    {
        let mut pipe = lock(conn);
        if pipe.gone {
            return closing(StatusCode::INTERNAL_SERVER_ERROR);
        }
        pipe.body = Some(body);
        pipe.taken = false;
        pipe.waiting = true;
        pipe.answer = None;
        if let Some(driver) = pipe.driver.take() {
            driver.wake();
        }
    }
    match answer_within(serving.handler_timeout, conn).await {
        Some(Ok(Some(frame))) => {
            let mut response = reply(StatusCode::OK, Some(frame));
            response.headers_mut().insert(CONTENT_TYPE, JSON);
            response
        }
        Some(Ok(None)) => reply(StatusCode::NO_CONTENT, None),
        // The connection's driver is gone (it failed): nothing more is answered here.
        Some(Err(Gone)) => closing(StatusCode::INTERNAL_SERVER_ERROR),
        // Handlers past their time go unanswered; the connection closes, and its handlers
        // with it, so a late answer cannot meet a later exchange.
        None => closing(StatusCode::NO_CONTENT),
    }
}

/// Reads a request body of at most `limit` bytes: `413` past it, `400` when the body
/// breaks off. A body that comes in one piece (the usual case) is taken as it is, with no
/// copy and no allocation; one in several pieces is joined.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Bytes, StatusCode> {
    let mut first = Bytes::new();
    let mut joined = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| StatusCode::BAD_REQUEST)?.into_data() else {
            continue; // Trailers.
        };
        if first.len() + joined.len() + data.len() > limit {
            return Err(StatusCode::PAYLOAD_TOO_LARGE);
        }
        if first.is_empty() && joined.is_empty() {
            first = data;
        } else {
            if joined.is_empty() {
                joined.extend_from_slice(&std::mem::take(&mut first));
            }
            joined.extend_from_slice(&data);
        }
    }
    Ok(if joined.is_empty() {
        first
    } else {
        Bytes::from(joined)
    })
}

/// An answer after which the HTTP connection closes.
fn closing(status: StatusCode) -> Answer {
    let mut response = reply(status, None);
    let close = HeaderValue::from_static("close");
    response.headers_mut().insert(CONNECTION, close);
    response
}

/// Serves JSON-RPC over HTTP/1.1 on `listener` with `builder` (give it a router) until
/// `shutdown` completes; then stops accepting, lets requests in flight finish for up to
/// `grace`, and returns. Each request's handlers may run for up to 60 seconds: past that
/// the request is answered `204` with `Connection: close`, and the connection's handlers
/// are dropped with it.
///
/// POST only (405 with `Allow: POST` otherwise); `Content-Type: application/json`
/// (charset UTF-8 allowed) or 415; a body over the endpoint's
/// [`max_frame_bytes`](sansrpc::Limits::max_frame_bytes) gets 413, read no further than the
/// limit; the endpoint's answer with 200, or 204 when there is none (notifications).
pub async fn serve(
    listener: tokio::net::TcpListener,
    builder: Builder,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let handler_timeout = Duration::from_secs(60);
    serve_with(listener, builder, handler_timeout, shutdown, grace).await
}

/// [`serve`], with how long each request's handlers may run before they are dropped (their
/// requests then go unanswered in the response).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    builder: Builder,
    handler_timeout: Duration,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let options = ServeOptions {
        handler_timeout,
        ..ServeOptions::default()
    };
    serve_with_options(listener, builder, options, shutdown, grace).await
}

/// [`serve`] with its [`ServeOptions`]: the connection limit (a connection beyond it is
/// answered `503` and closed), the handlers' time, and CORS.
///
/// With [`ServeOptions::cors`] set, a preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from an allowed origin is answered `204` with
/// `Access-Control-Allow-Origin` (the origin, or `*` for [`Origins::Any`]),
/// `-Allow-Methods: POST`, `-Allow-Headers` (those requested, else `Content-Type`) and
/// `-Max-Age`; from any other origin `403`. Every answer carries `Vary: Origin`, and
/// `Access-Control-Allow-Origin` when the origin is allowed; a disallowed origin gets no
/// CORS header (the browser then hides the answer).
///
/// The endpoint config's timeouts bound slow clients: a request head must arrive within
/// the shorter of [`frame_timeout`](sansrpc::endpoint::Config::frame_timeout) and
/// [`idle_timeout`](sansrpc::endpoint::Config::idle_timeout), counted from the end of the
/// connection's last exchange (or its opening), so a keep-alive connection waiting that long
/// for its next request is closed as well; a body within `frame_timeout` (else `408` and the
/// connection is closed). A connection whose answer the peer takes no byte of for
/// [`write_stall_timeout`](sansrpc::endpoint::Config::write_stall_timeout) (a peer that
/// sends and never reads) is closed.
pub async fn serve_with_options(
    listener: tokio::net::TcpListener,
    builder: Builder,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> io::Result<()> {
    let builder = options.builder(builder);
    let config = builder.endpoint_config();
    let head_timeout = match (config.frame_timeout, config.idle_timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let write_stall = config.write_stall_timeout;
    let max_age = options.cors_max_age.as_secs().to_string();
    let mut quiet = builder.endpoint_config().clone();
    (
        quiet.idle_timeout,
        quiet.frame_timeout,
        quiet.write_stall_timeout,
    ) = (None, None, None);
    let serving = Arc::new(Serving {
        machine: builder.clone().config(quiet),
        builder,
        handler_timeout: options.handler_timeout,
        cors: options.cors.clone(),
        cors_max_age: HeaderValue::from_str(&max_age).unwrap_or(HeaderValue::from_static("0")),
    });
    let busy: Arc<[u8]> = crate::HTTP_BUSY.into();
    let mut refusing = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if connections.len() >= options.max_connections => {
                    crate::refuse_on(&mut refusing, stream, &busy);
                }
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let serving = serving.clone();
                    let mut stopping = stopping.clone();
                    #[cfg(feature = "tls")]
                    let tls = options.tls.clone();
                    connections.spawn(async move {
                        // The TLS handshake (when configured), within the head's limit.
                        #[cfg(feature = "tls")]
                        let stream = {
                            let handshake = crate::tls::accept(tls.as_ref(), stream);
                            let done = match head_timeout {
                                Some(limit) => match tokio::time::timeout(limit, handshake).await {
                                    Ok(done) => done,
                                    Err(_) => return,
                                },
                                None => handshake.await,
                            };
                            match done {
                                Ok(stream) => stream,
                                Err(_) => return,
                            }
                        };
                        // One connection machine for all of this connection's exchanges,
                        // driven beside hyper in this task.
                        let pipe = Shared::default();
                        let transport = HttpPipe {
                            pipe: pipe.clone(),
                            frame: Vec::new(),
                            answers: BytesMut::new(),
                        };
                        let (_client, driver) = serving.machine.clone().connect(transport, TokioTimer);
                        let exchanges = pipe.clone();
                        let service = hyper::service::service_fn(move |request| {
                            answer(request, serving.clone(), exchanges.clone())
                                .map(Ok::<_, Infallible>)
                        });
                        // No timer for hyper: it would arm one for every request head.
                        let http = hyper::server::conn::http1::Builder::new();
                        let stream = Watched {
                            io: stream,
                            conn: pipe.clone(),
                            blocked: false,
                        };
                        let connection = http.serve_connection(TokioIo::new(stream), service);
                        let mut connection = std::pin::pin!(connection);
                        let mut driver = std::pin::pin!(driver);
                        let late = limits(&pipe, head_timeout, write_stall);
                        let mut late = std::pin::pin!(late);
                        let (mut driving, mut draining) = (true, false);
                        loop {
                            tokio::select! {
                                _ = connection.as_mut() => return,
                                () = late.as_mut() => return,
                                _ = driver.as_mut(), if driving => {
                                    driving = false;
                                    let mut pipe = lock(&pipe);
                                    pipe.end();
                                }
                                _ = stopping.wait_for(|s| *s), if !draining => {
                                    draining = true;
                                    connection.as_mut().graceful_shutdown();
                                }
                            }
                        }
                    });
                }
                Err(e) if crate::is_connection_error(&e) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            Some(_) = refusing.join_next(), if !refusing.is_empty() => {}
        }
    }
    refusing.shutdown().await;
    let _ = stop.send(true);
    let all_done = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(grace + Duration::from_secs(1), all_done).await;
    connections.shutdown().await;
    Ok(())
}

/// Why an HTTP call produced no result.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The exchange went through and the call failed (an error object, a result that does
    /// not decode, a timeout, params that do not serialize).
    Call(CallError),
    /// The server answered with a non-success HTTP status (the start of its body kept).
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// Up to 512 bytes of the response body, lossily decoded.
        body: String,
    },
    /// The server's response held no answer to a call.
    NoAnswer,
    /// The request could not be sent or its response read (connection refused, a response
    /// body over the limit).
    Transport(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// The JSON-RPC error code, when the server answered with an error object.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Call(e) => e.code(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Call(e) => e.fmt(f),
            Error::Status { status, body } => write!(f, "HTTP status {status}: {body}"),
            Error::NoAnswer => f.write_str("the response held no answer to the call"),
            Error::Transport(e) => write!(f, "HTTP transport error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(not(feature = "tls"))]
type Hyper = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;
#[cfg(feature = "tls")]
type Hyper =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Plain TCP for the HTTP client, with Nagle's algorithm off (as the server's sockets);
/// `http_only` refuses other schemes (no TLS layer above it).
fn http_connector(http_only: bool) -> HttpConnector {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(http_only);
    http
}

/// The pooled HTTP client: `http://`, and `https://` trusting `tls` with the `tls` feature.
#[cfg(feature = "tls")]
fn hyper_client(tls: Arc<crate::tls::rustls::ClientConfig>) -> Hyper {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls).clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(http_connector(false));
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// POSTs `body`; the response body, `None` when empty (204, 202).
async fn post(http: Hyper, uri: Uri, body: Vec<u8>, limit: usize) -> Result<Option<Bytes>, Error> {
    let transport = |e| Error::Transport(e);
    let request = Request::post(uri)
        .header(CONTENT_TYPE, JSON)
        .header(ACCEPT, JSON)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| transport(e.into()))?;
    let response = http
        .request(request)
        .await
        .map_err(|e| transport(e.into()))?;
    let status = response.status();
    let body = Limited::new(response.into_body(), limit).collect().await;
    let body = body.map_err(transport)?.to_bytes();
    if !status.is_success() {
        let start = &body[..body.len().min(512)];
        let body = String::from_utf8_lossy(start).into_owned();
        return Err(Error::Status { status, body });
    }
    Ok(Some(body).filter(|b| !b.is_empty()))
}

/// The client side of one exchange: the endpoint's first frame POSTed, the response body
/// handed back, then end of input. Later frames (a cancellation after a timeout) are
/// dropped: the exchange is over by then.
struct ClientExchange {
    http: Hyper,
    uri: Uri,
    limit: usize,
    posted: bool,
    request: Option<BoxFuture<Result<Option<Bytes>, Error>>>,
    failure: Arc<Mutex<Option<Error>>>,
    done: Option<futures::channel::oneshot::Sender<()>>,
}

impl Transport for ClientExchange {
    fn is_message_based(&self) -> bool {
        true
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let Some(request) = self.request.as_mut() else {
            return Poll::Pending;
        };
        let outcome = ready!(request.poll_unpin(cx));
        self.request = None;
        let failure = match outcome {
            Ok(Some(body)) => conn
                .handle_message(&body, now)
                .err()
                .map(|_| Error::NoAnswer),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        let failure =
            failure.or((conn.endpoint().pending_requests() > 0).then_some(Error::NoAnswer));
        *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = failure;
        conn.handle_end_of_input(now);
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        Poll::Ready(Ok(Received::End))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let mut frame = Vec::new();
        while conn.poll_transmit(&mut frame).is_some() {
            if !self.posted {
                self.posted = true;
                let body = std::mem::take(&mut frame);
                let post = post(self.http.clone(), self.uri.clone(), body, self.limit);
                self.request = Some(post.boxed());
            }
            frame.clear();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// One exchange's driver and the handle to queue its message with.
struct Exchange {
    client: crate::Client,
    driver: Driver<ClientExchange, TokioTimer>,
    failure: Arc<Mutex<Option<Error>>>,
    done: futures::channel::oneshot::Receiver<()>,
}

impl Exchange {
    /// Runs the driver until `work` (which queued one message) is done and, when it
    /// succeeded, its POST has completed.
    async fn run<T>(self, work: impl Future<Output = Result<T, CallError>>) -> Result<T, Error> {
        let Exchange {
            client,
            driver,
            failure,
            done,
        } = self;
        let work = async move {
            let result = work.await;
            if result.is_ok() {
                let _ = done.await; // A notification is queued before it is POSTed.
            }
            drop(client); // The driver then stops.
            result
        };
        let (result, _) = tokio::join!(work, driver);
        let failure = failure.lock().unwrap_or_else(|e| e.into_inner()).take();
        match (result, failure) {
            (Err(e), _) if !e.is_closed() => Err(Error::Call(e)),
            (Err(e), failure) => Err(failure.unwrap_or(Error::Call(e))),
            (Ok(_), Some(failure)) => Err(failure),
            (Ok(value), None) => Ok(value),
        }
    }
}

/// A JSON-RPC client over HTTP: each call, notification or batch is one POST. Cheap to
/// clone; connections are pooled.
#[derive(Clone, Debug)]
pub struct Client {
    http: Hyper,
    uri: Uri,
    builder: Builder,
}

impl Client {
    /// A client POSTing to `url` (`http://`, or `https://` with the `tls` feature, trusting
    /// the Mozilla roots), with the default endpoint config.
    pub fn new(url: &str) -> Result<Self, hyper::http::uri::InvalidUri> {
        #[cfg(not(feature = "tls"))]
        let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build(http_connector(true));
        #[cfg(feature = "tls")]
        let http = hyper_client(crate::tls::client_config());
        Ok(Client {
            http,
            uri: url.parse()?,
            builder: Builder::new(),
        })
    }

    /// Trusts what `tls` trusts for `https://` (a private CA, a self-signed certificate:
    /// see [`tls::client_config_with_roots`](crate::tls::client_config_with_roots)).
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: Arc<crate::tls::rustls::ClientConfig>) -> Self {
        self.http = hyper_client(tls);
        self
    }

    /// Uses `builder`'s endpoint config: its default deadline bounds each call, its
    /// `max_frame_bytes` each response body.
    pub fn with_builder(mut self, builder: Builder) -> Self {
        self.builder = builder;
        self
    }

    fn open(&self) -> Exchange {
        let failure = Arc::new(Mutex::new(None));
        let (done_tx, done) = futures::channel::oneshot::channel();
        let transport = ClientExchange {
            http: self.http.clone(),
            uri: self.uri.clone(),
            limit: self.builder.endpoint_config().limits.max_frame_bytes,
            posted: false,
            request: None,
            failure: failure.clone(),
            done: Some(done_tx),
        };
        let (client, driver) = self.builder.clone().connect(transport, TokioTimer);
        Exchange {
            client,
            driver,
            failure,
            done,
        }
    }

    /// Calls `M`.
    pub async fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &self,
        params: &M::Params,
    ) -> Result<M::Result, Error> {
        let exchange = self.open();
        let call = exchange.client.call::<M>(params);
        exchange.run(call).await
    }

    /// Calls `method` with raw params; the raw result.
    pub async fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, Error> {
        let exchange = self.open();
        let call = exchange.client.call_raw(method, params);
        exchange.run(call).await
    }

    /// Sends notification `N`; resolves once the server has accepted it.
    pub async fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &self,
        params: &N::Params,
    ) -> Result<(), Error> {
        let exchange = self.open();
        let notify = exchange.client.notify::<N>(params);
        exchange.run(notify).await
    }

    /// Sends a notification with raw params; resolves once the server has accepted it.
    pub async fn notify_raw(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        let exchange = self.open();
        let notify = exchange.client.notify_raw(method, params);
        exchange.run(notify).await
    }

    /// Starts a batch: calls and notifications POSTed as one array.
    pub fn batch(&self) -> Batch {
        let exchange = self.open();
        let batch = exchange.client.batch();
        Batch { exchange, batch }
    }
}

/// An HTTP batch, from [`Client::batch`]; its results come back as with
/// [`crate::Batch`].
pub struct Batch {
    exchange: Exchange,
    batch: crate::Batch,
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch").field("batch", &self.batch).finish()
    }
}

impl Batch {
    /// Adds a call to `M`; its result is at the returned slot.
    pub fn call<M: Method<Params: serde::Serialize, Result: serde::de::DeserializeOwned>>(
        &mut self,
        params: &M::Params,
    ) -> BatchSlot<M> {
        self.batch.call::<M>(params)
    }

    /// Adds a raw call; returns the index of its result.
    pub fn call_raw(&mut self, method: &str, params: Option<&RawValue>) -> usize {
        self.batch.call_raw(method, params)
    }

    /// Adds notification `N`.
    pub fn notify<N: NotificationMethod<Params: serde::Serialize>>(
        &mut self,
        params: &N::Params,
    ) -> &mut Self {
        self.batch.notify::<N>(params);
        self
    }

    /// Adds a raw notification.
    pub fn notify_raw(&mut self, method: &str, params: Option<&RawValue>) -> &mut Self {
        self.batch.notify_raw(method, params);
        self
    }

    /// POSTs the batch; one result per call, in the order the calls were added.
    pub async fn send(self) -> Result<Vec<crate::RawResult>, Error> {
        let Batch { exchange, batch } = self;
        exchange.run(batch.send()).await
    }
}
