//! The HTTP client: a message transport under the ordinary [`Client`](crate::Client). Each
//! frame the connection sends is one POST; the response body is handed back to the same
//! connection. The exchanges are hyper's (`hyper::client::conn::http1`) over the connections
//! [`Target::connect`] makes, as the MCP and A2A clients' are (through hyper-util's pool);
//! this transport keeps its connections itself, for the rules below.
//!
//! HTTP/1.1 carries one exchange at a time per TCP connection, so the transport keeps a few
//! (at most [`MAX_CONNECTIONS`]), each kept alive for the next POST: a slow call does not
//! hold up the others, and an idle connection is reused instead of connecting again. A POST
//! of notifications is the exception: the frames after it wait for its answer, so a
//! notification reaches the server before the calls and notifications sent after it. An
//! idle connection the server closed is noticed and dropped; a POST that meets the close
//! of a reused connection before any byte of its answer is sent again once, on a new one.
//! A response body is read whole, at most the builder config's
//! [`max_frame_bytes`](sansrpc::Limits::max_frame_bytes): a longer one fails its POST.
//!
//! An exchange that ends without answering its calls ends them through the core
//! ([`Connection::end_unanswered`]) with [`EndReason::Unanswered`]: with the HTTP status
//! the server answered instead (after any JSON-RPC error body it sent was handed to the
//! connection, as the answer), or `None` when the POST could not be sent or its response
//! read. The connection itself stays up: the next call connects again.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use futures::FutureExt;
use http_body_util::Full;
use hyper::body::{Body, Buf, Bytes, Incoming};
use hyper::client::conn::http1;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, Uri};
use hyper_util::rt::TokioIo;
use sansrpc::connection::EndReason;
use sansrpc::{Connection, Instant};
use tokio::net::TcpStream;
use tokio_util::io::InspectReader;

use crate::{BoxFuture, Builder, Received, Spawned, Transport};

/// Most TCP connections (exchanges at once) one client keeps; frames beyond wait for one.
pub const MAX_CONNECTIONS: usize = 8;

/// Frames taken from the connection and not yet on an exchange: beyond it the connection's
/// own output bound pushes back on its callers.
const MAX_WAITING: usize = 64;

/// The `Content-Type` and `Accept` of every POST.
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Connects to the JSON-RPC server at `url` (`http://`, or `https://` with the `tls` feature,
/// trusting the Mozilla roots) and spawns the connection's driver on the current tokio
/// runtime: calls, notifications and batches on its [`client`](Spawned::client) are POSTed
/// (each one, or each batch, a POST). Like [`ws::connect`](crate::ws::connect), it connects
/// before it returns (TCP, and TLS for `https://`): a server that is not there, or a
/// certificate not trusted, fails here, not at the first call. The first POST goes on that
/// connection; later ones connect again as they need.
/// `builder`'s config bounds each call (its default deadline) and each response body (its
/// [`max_frame_bytes`](sansrpc::Limits::max_frame_bytes)).
///
/// The connection sends no cancellations (`$/cancelRequest` could reach no exchange): a call
/// dropped or past its deadline is forgotten, and its POST's answer dropped when it comes.
///
/// A call the server answers with an HTTP status and no JSON-RPC answer fails with
/// [`EndReason::Unanswered`]`{ status: Some(status) }` (a JSON-RPC error body on a 4xx or 5xx
/// is the call's error, [`CallError::Rpc`](crate::CallError::Rpc)); one whose POST fails
/// (connection refused, reset) with `status: None`, and the next call tries again.
pub async fn connect(url: &str, builder: Builder) -> io::Result<Spawned> {
    #[cfg(feature = "tls")]
    return open(url, builder, None).await;
    #[cfg(not(feature = "tls"))]
    open(url, builder).await
}

/// [`connect`] to an `https://` URL trusting what `tls` trusts (a private CA, a
/// self-signed certificate: see
/// [`tls::client_config_with_roots`](crate::tls::client_config_with_roots)).
#[cfg(feature = "tls")]
pub async fn connect_tls(
    url: &str,
    builder: Builder,
    tls: Arc<crate::tls::rustls::ClientConfig>,
) -> io::Result<Spawned> {
    open(url, builder, Some(tls)).await
}

async fn open(
    url: &str,
    builder: Builder,
    #[cfg(feature = "tls")] tls: Option<Arc<crate::tls::rustls::ClientConfig>>,
) -> io::Result<Spawned> {
    let target = Arc::new(Target::of(
        url,
        #[cfg(feature = "tls")]
        tls,
    )?);
    let first = Conn::over(target.connect().await?).await?;
    // A cancellation could reach no exchange: HTTP/1.1 answers one request at a time per
    // connection, and a server's connection machine knows only its own connections' ids.
    // A call given up on (dropped, or past its deadline) is forgotten here instead.
    let builder = builder.configure(|c| c.cancellation = false);
    let max_body = builder.connection_config().limits.max_frame_bytes;
    // Idle since it was made: a server that closed it meanwhile gets the POST again once.
    let kept = Exchange {
        conn: Some(first),
        reused: true,
        ..Exchange::default()
    };
    let nudge = Arc::new(Nudge::default());
    let transport = HttpClient {
        max_body,
        target,
        waiting: VecDeque::new(),
        exchanges: vec![kept],
        done: VecDeque::new(),
        frame: Vec::new(),
        stale: true,
        waker: Waker::from(Arc::clone(&nudge)),
        nudge,
    };
    Ok(crate::spawn(builder, transport))
}

impl Target {
    /// Where the POSTs to `url` go (`http://`, or `https://` trusting `tls`, by default the
    /// Mozilla roots); the MCP client's connections are made the same way.
    pub fn of(
        url: &str,
        #[cfg(feature = "tls")] tls: Option<Arc<crate::tls::rustls::ClientConfig>>,
    ) -> io::Result<Target> {
        let invalid = |e: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {e}"));
        let uri: Uri = url.parse().map_err(|_| invalid("not a URL"))?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(invalid("not an http:// or https:// URL")),
        };
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        let host = authority.host().to_owned();
        let port = authority
            .port_u16()
            .unwrap_or(if secure { 443 } else { 80 });
        let path = Uri::from(
            uri.path_and_query()
                .cloned()
                .unwrap_or_else(|| "/".parse().unwrap()),
        );
        #[cfg(feature = "tls")]
        let tls = match secure {
            true => {
                use tokio_rustls::rustls::pki_types::ServerName;
                let name = host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned();
                let name = ServerName::try_from(name).map_err(|_| invalid("not a TLS name"))?;
                let config = tls.unwrap_or_else(crate::tls::client_config);
                Some((tokio_rustls::TlsConnector::from(config), name))
            }
            false => None,
        };
        #[cfg(not(feature = "tls"))]
        if secure {
            return Err(invalid("https:// needs the `tls` feature"));
        }
        Ok(Target {
            addr: format!("{host}:{port}"),
            host: HeaderValue::from_str(authority.as_str()).map_err(|_| invalid("not a host"))?,
            path,
            #[cfg(feature = "tls")]
            tls,
        })
    }
}

/// Where an HTTP client's requests go: the address to connect to, the `Host`, the request
/// target, and TLS for `https://`.
pub struct Target {
    /// `host:port`, to connect to.
    addr: String,
    /// The `Host` header.
    host: HeaderValue,
    /// The request target (its path and query).
    path: Uri,
    #[cfg(feature = "tls")]
    tls: Option<(
        tokio_rustls::TlsConnector,
        tokio_rustls::rustls::pki_types::ServerName<'static>,
    )>,
}

impl Target {
    /// A new TCP connection (and TLS over it, for `https://`). An error names what failed
    /// and where, its kind kept and the original error as its source: `connecting to
    /// 127.0.0.1:9: Connection refused (os error 111)`, `TLS with localhost: invalid peer
    /// certificate: UnknownIssuer` (rustls' reason, its [`rustls::Error`](crate::tls::rustls::Error)
    /// the source's source).
    pub fn connect(self: &Arc<Self>) -> BoxFuture<io::Result<Stream>> {
        let target = Arc::clone(self);
        async move {
            let tcp = TcpStream::connect(&target.addr)
                .await
                .map_err(|e| failed(format!("connecting to {}", target.addr), e))?;
            crate::tune(&tcp);
            #[cfg(feature = "tls")]
            if let Some((connector, name)) = &target.tls {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| failed(format!("TLS with {}", name.to_str()), e))?;
                return Ok(Stream::Tls(Box::new(tls)));
            }
            Ok(Stream::Plain(tcp))
        }
        .boxed()
    }
}

/// Makes a hyper-util client's connections to one [`Target`]: TCP to its host, and TLS
/// over it for `https://` (whatever URI the client asks for, the connection is to the
/// target's host: a client of one endpoint).
#[derive(Clone)]
pub struct Dial(pub Arc<Target>);

impl tower_service::Service<Uri> for Dial {
    type Response = hyper_util::rt::TokioIo<Stream>;
    type Error = io::Error;
    type Future = BoxFuture<io::Result<hyper_util::rt::TokioIo<Stream>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let connecting = self.0.connect();
        Box::pin(async move { connecting.await.map(hyper_util::rt::TokioIo::new) })
    }
}

/// `error` of the same kind, said with what was being done (`doing`), and kept as the source.
fn failed(doing: String, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), Failed { doing, error })
}

/// What [`Target::connect`] was doing when `error` came.
#[derive(Debug)]
struct Failed {
    doing: String,
    error: io::Error,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.error)
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The rustls error inside a TLS failure, else the io error itself.
        self.error.get_ref().map_or(
            Some(&self.error as &(dyn std::error::Error + 'static)),
            |inner| Some(inner as &(dyn std::error::Error + 'static)),
        )
    }
}

/// One TCP connection, plain (`http://`) or TLS (`https://`).
pub type Stream = crate::tcp::PlainOrTls<ClientTls>;

/// rustls's client stream, what an `https://` connection is.
#[cfg(feature = "tls")]
type ClientTls = tokio_rustls::client::TlsStream<TcpStream>;
/// Without TLS no `https://` connection is made: the TLS variant is never built.
#[cfg(not(feature = "tls"))]
type ClientTls = TcpStream;

/// What hyper-util's pooled client asks of a connection it did not make itself (the MCP
/// client dials with [`Target::connect`]).
impl hyper_util::client::legacy::connect::Connection for Stream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

/// Why a body was not read whole ([`read_whole`]).
#[derive(Debug)]
pub enum BodyError<E> {
    /// It is longer than the bytes allowed (the limit).
    Over(usize),
    /// Its stream failed (the connection broke under it).
    Failed(E),
}

impl<E: std::fmt::Display> std::fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Over(max) => write!(f, "the body is over {max} bytes"),
            BodyError::Failed(e) => write!(f, "the body was cut: {e}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for BodyError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Over(_) => None,
            BodyError::Failed(e) => Some(e),
        }
    }
}

/// Reads `body` whole, at most `max` bytes (a longer one is refused by its announced length
/// before it is read, else once it passes `max`): the bodies a client reads (the JSON-RPC
/// client's answers, A2A's) and a tower service's requests (`service::read_body`).
pub async fn read_whole<B: Body>(body: B, max: usize) -> Result<Vec<u8>, BodyError<B::Error>> {
    let hint = body.size_hint();
    if hint.lower() > max as u64 {
        return Err(BodyError::Over(max));
    }
    let mut out = Vec::with_capacity(hint.exact().map_or(0, |n| n.min(max as u64) as usize));
    let mut body = std::pin::pin!(body);
    std::future::poll_fn(|cx| poll_whole(body.as_mut(), cx, &mut out, max)).await?;
    Ok(out)
}

/// [`read_whole`] as a poll: appends what `body` has to `out` until it ends.
fn poll_whole<B: Body>(
    mut body: Pin<&mut B>,
    cx: &mut Context<'_>,
    out: &mut Vec<u8>,
    max: usize,
) -> Poll<Result<(), BodyError<B::Error>>> {
    loop {
        let hint = body.size_hint();
        if out.len() as u64 + hint.lower() > max as u64 {
            return Poll::Ready(Err(BodyError::Over(max)));
        }
        if out.is_empty() {
            out.reserve(hint.exact().map_or(0, |n| n as usize));
        }
        let Some(frame) = ready!(body.as_mut().poll_frame(cx)) else {
            return Poll::Ready(Ok(()));
        };
        let Ok(mut data) = frame.map_err(BodyError::Failed)?.into_data() else {
            continue; // Trailers.
        };
        if out.len() + data.remaining() > max {
            return Poll::Ready(Err(BodyError::Over(max)));
        }
        while data.has_remaining() {
            let chunk = data.chunk();
            out.extend_from_slice(chunk);
            let n = chunk.len();
            data.advance(n);
        }
    }
}

/// A connection's stream, telling whether any byte came since its flag was cleared.
type Watched = InspectReader<Stream, Box<dyn FnMut(&[u8]) + Send>>;

/// One HTTP/1.1 connection: hyper's handle to send on it, and the future that runs it
/// (polled by the transport, on the connection's task).
struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    driver: http1::Connection<TokioIo<Watched>, Full<Bytes>>,
    /// The driver ended: the connection is closed (what it read may still be taken).
    ended: bool,
    /// Some byte came since the last POST was sent.
    read: Arc<AtomicBool>,
}

/// A POST's response, its head to come.
type Responding = Pin<Box<dyn Future<Output = hyper::Result<Response<Incoming>>> + Send>>;

/// Where a POST is.
enum Phase {
    /// Waiting for its connection to take it.
    Unsent,
    /// Taken: its response's head to come.
    Sent(Responding),
    /// Its response's status, and its body read so far.
    Body(u16, Incoming, Vec<u8>),
}

impl Conn {
    /// hyper's HTTP/1.1 over `stream`.
    async fn over(stream: Stream) -> io::Result<Conn> {
        let read = Arc::new(AtomicBool::new(false));
        let came = Arc::clone(&read);
        let watch = move |bytes: &[u8]| {
            if !bytes.is_empty() {
                came.store(true, Ordering::Relaxed);
            }
        };
        let watched: Watched = InspectReader::new(stream, Box::new(watch));
        let (sender, driver) = http1::handshake(TokioIo::new(watched))
            .await
            .map_err(io::Error::other)?;
        Ok(Conn {
            sender,
            driver,
            ended: false,
            read,
        })
    }

    /// Runs the connection (while it lasts).
    fn drive(&mut self, cx: &mut Context<'_>) {
        if !self.ended && Pin::new(&mut self.driver).poll(cx).is_ready() {
            self.ended = true;
        }
    }

    /// Moves `job` on: `Ready(Ok)` with the status and body of its response, `Err(sent)`
    /// when the connection failed it (`sent`: after the connection took it).
    fn poll_job(
        &mut self,
        cx: &mut Context<'_>,
        job: &mut Job,
        target: &Target,
        max_body: usize,
    ) -> Poll<Result<(u16, Vec<u8>), bool>> {
        // Only the driver moves what the job waits for, and the job is looked at after each
        // of its polls: the job's channels need not wake the task (a wake from inside its
        // own poll would only have it polled again, for nothing).
        let quiet = &mut Context::from_waker(futures::task::noop_waker_ref());
        loop {
            self.drive(cx);
            let step = match &mut job.phase {
                Phase::Unsent => match self.sender.poll_ready(quiet) {
                    Poll::Ready(Ok(())) => {
                        self.read.store(false, Ordering::Relaxed);
                        let request = post(target, job.frame.clone());
                        job.phase = Phase::Sent(Box::pin(self.sender.send_request(request)));
                        continue; // The driver writes it.
                    }
                    Poll::Ready(Err(_)) => return Poll::Ready(Err(false)),
                    Poll::Pending => Poll::Pending,
                },
                Phase::Sent(responding) => match responding.as_mut().poll(quiet) {
                    Poll::Ready(Ok(response)) => {
                        let status = response.status().as_u16();
                        job.phase = Phase::Body(status, response.into_body(), Vec::new());
                        continue;
                    }
                    Poll::Ready(Err(_)) => return Poll::Ready(Err(true)),
                    Poll::Pending => Poll::Pending,
                },
                Phase::Body(status, body, out) => {
                    match poll_whole(Pin::new(body), quiet, out, max_body) {
                        Poll::Ready(Ok(())) => {
                            return Poll::Ready(Ok((*status, std::mem::take(out))))
                        }
                        Poll::Ready(Err(_)) => return Poll::Ready(Err(true)),
                        Poll::Pending => Poll::Pending,
                    }
                }
            };
            // A connection over gives nothing more.
            return match self.ended {
                true => Poll::Ready(Err(!matches!(job.phase, Phase::Unsent))),
                false => step,
            };
        }
    }
}

/// The POST of `frame` to `target`.
fn post(target: &Target, frame: Bytes) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(frame));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = target.path.clone();
    let headers = request.headers_mut();
    headers.insert(HOST, target.host.clone());
    headers.insert(CONTENT_TYPE, JSON);
    headers.insert(ACCEPT, JSON);
    request
}

/// How one POST ended.
struct Done {
    /// The frame it carried.
    frame: Bytes,
    /// The status and the body, when a response came.
    response: Option<(u16, Vec<u8>)>,
}

/// One POST being made.
struct Job {
    /// The frame: the request's body.
    frame: Bytes,
    phase: Phase,
    /// Sent again already, after the close of a reused connection.
    retried: bool,
    /// Notifications only: the frames after it wait until it is answered.
    ordered: bool,
}

/// One connection and the POST on it, if any.
#[derive(Default)]
struct Exchange {
    conn: Option<Conn>,
    connecting: Option<BoxFuture<io::Result<Conn>>>,
    /// The connection carried a POST before this one (the server may have closed it while
    /// it was idle).
    reused: bool,
    job: Option<Job>,
}

impl Exchange {
    /// Starts the POST of `frame`.
    fn start(&mut self, frame: Bytes) {
        self.job = Some(Job {
            ordered: Connection::requests_in(&frame) == 0,
            frame,
            phase: Phase::Unsent,
            retried: false,
        });
    }

    /// Drives the connection and its POST: `Ready` with how the POST ended.
    fn poll(&mut self, cx: &mut Context<'_>, target: &Arc<Target>, max_body: usize) -> Poll<Done> {
        loop {
            let Some(job) = &mut self.job else {
                // Idle: dropped once the server closes it (or sends what nobody asked for).
                if let Some(conn) = &mut self.conn {
                    conn.drive(cx);
                    if conn.ended {
                        self.conn = None;
                    }
                }
                return Poll::Pending;
            };
            let conn = match &mut self.conn {
                Some(conn) => conn,
                None => {
                    let connecting = self.connecting.get_or_insert_with(|| {
                        let target = Arc::clone(target);
                        async move { Conn::over(target.connect().await?).await }.boxed()
                    });
                    let connected = ready!(connecting.poll_unpin(cx));
                    self.connecting = None;
                    self.reused = false;
                    match connected {
                        Ok(conn) => self.conn.insert(conn),
                        Err(_) => return Poll::Ready(self.failed()),
                    }
                }
            };
            match ready!(conn.poll_job(cx, job, target, max_body)) {
                Ok(response) => {
                    let frame = std::mem::take(&mut job.frame);
                    self.job = None;
                    if conn.ended {
                        self.conn = None;
                    }
                    self.reused = self.conn.is_some();
                    let response = Some(response);
                    return Poll::Ready(Done { frame, response });
                }
                // Not taken by a kept connection the server closed: on a new one.
                Err(false) if self.reused => {}
                // The close of a kept connection met before any byte of the answer (the
                // server closed it while it was idle): sent again once, on a new one.
                Err(true) if self.reused && !conn.read.load(Ordering::Relaxed) && !job.retried => {
                    job.retried = true;
                }
                Err(_) => return Poll::Ready(self.failed()),
            }
            job.phase = Phase::Unsent;
            self.conn = None;
        }
    }

    /// The POST failed: no response.
    fn failed(&mut self) -> Done {
        self.conn = None;
        let frame = self.job.take().map_or_else(Bytes::new, |j| j.frame);
        Done {
            frame,
            response: None,
        }
    }
}

/// The client side of JSON-RPC over HTTP, as a message [`Transport`].
struct HttpClient {
    target: Arc<Target>,
    max_body: usize,
    /// Frames taken from the connection, waiting for an exchange.
    waiting: VecDeque<Bytes>,
    exchanges: Vec<Exchange>,
    /// POSTs over, to hand to the connection.
    done: VecDeque<Done>,
    /// Where the connection writes its frames.
    frame: Vec<u8>,
    /// The exchanges have not been polled since the task was woken or a frame came: what
    /// they wait for may have come. (Polled, they wake the task when it does.)
    stale: bool,
    /// The waker the exchanges are polled with ([`Nudge`]).
    nudge: Arc<Nudge>,
    waker: Waker,
}

/// The task's waker as the exchanges see it: a wake while the transport polls them (hyper
/// wakes its connection's task when a request is queued, or a body wants more) has them
/// polled again at once, not the whole task.
#[derive(Default)]
struct Nudge {
    task: futures::task::AtomicWaker,
    /// [`IDLE`], [`POLLING`], or [`WOKEN`] while polling.
    state: AtomicU8,
}

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

impl std::task::Wake for Nudge {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let woken =
            self.state
                .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire);
        if let Ok(_) | Err(WOKEN) = woken {
            return;
        }
        self.task.wake();
    }
}
impl HttpClient {
    /// Starts the POSTs waiting on free exchanges and drives every exchange; true when a
    /// POST ended.
    fn poll_io(&mut self, cx: &mut Context<'_>) -> bool {
        self.stale = false;
        while let Some(frame) = self.waiting.pop_front() {
            // A POST of notifications is answered (the server has taken them) before the
            // next frame goes: `notify(..).await` then `call(..)` reach the server in order.
            if self
                .exchanges
                .iter()
                .any(|e| e.job.as_ref().is_some_and(|j| j.ordered))
            {
                self.waiting.push_front(frame);
                break;
            }
            // A free connection kept alive first, then any free one, then a new one.
            let free = self
                .exchanges
                .iter()
                .position(|e| e.job.is_none() && e.conn.is_some())
                .or_else(|| self.exchanges.iter().position(|e| e.job.is_none()));
            let at = match free {
                Some(at) => at,
                None if self.exchanges.len() < MAX_CONNECTIONS => {
                    self.exchanges.push(Exchange::default());
                    self.exchanges.len() - 1
                }
                None => {
                    self.waiting.push_front(frame);
                    break;
                }
            };
            self.exchanges[at].start(frame);
        }
        self.nudge.task.register(cx.waker());
        let inner = &mut Context::from_waker(&self.waker);
        let mut ended = false;
        for round in 0..4 {
            self.nudge.state.store(POLLING, Ordering::Release);
            for exchange in &mut self.exchanges {
                if let Poll::Ready(done) = exchange.poll(inner, &self.target, self.max_body) {
                    self.done.push_back(done);
                    ended = true;
                }
            }
            let state = self.nudge.state.swap(IDLE, Ordering::AcqRel);
            if state == POLLING {
                break;
            }
            if round == 3 {
                // Woken while polled, again and again: by the task, after the others.
                cx.waker().wake_by_ref();
            }
        }
        if ended && !self.waiting.is_empty() {
            // An exchange came free: the next POST goes on it this turn.
            cx.waker().wake_by_ref();
        }
        ended
    }
}

impl Transport for HttpClient {
    fn is_message_based(&self) -> bool {
        true
    }

    /// One answer per POST: nothing reaches the peer unasked, so no subscription.
    fn can_push(&self) -> bool {
        false
    }

    fn poll_receive(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        if self.done.is_empty() && self.stale {
            self.poll_io(cx);
        }
        let Some(done) = self.done.pop_front() else {
            return Poll::Pending;
        };
        let status = match &done.response {
            Some((status, body)) => {
                // The answer, and on an error status a JSON-RPC error body; not an HTML page.
                let json = body.iter().find(|b| !b.is_ascii_whitespace());
                let answer = (200..300).contains(status) || matches!(json, Some(b'{' | b'['));
                if answer && json.is_some() && conn.handle_message(body, now).is_err() {
                    self.done.push_front(done);
                    return Poll::Ready(Ok(Received::Stalled));
                }
                Some(*status)
            }
            None => None,
        };
        conn.end_unanswered(&done.frame, EndReason::Unanswered { status }, now);
        Poll::Ready(Ok(Received::Data))
    }

    fn poll_transmit(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        while self.waiting.len() < MAX_WAITING {
            self.frame.clear();
            if conn.poll_transmit(&mut self.frame).is_none() {
                break;
            }
            self.waiting
                .push_back(Bytes::from(std::mem::take(&mut self.frame)));
            self.stale = true;
        }
        if self.stale && self.poll_io(cx) {
            // A POST ended here: the driver hands it to the connection on its next pass.
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn start_turn(&mut self) {
        self.stale = true;
    }
}
