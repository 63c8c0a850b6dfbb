//! The HTTP client: a message transport under the ordinary [`Client`](crate::Client). Each
//! frame the connection sends is one POST; the response body is handed back to the same
//! connection. Requests and responses are the core's HTTP/1.1 codec
//! ([`write_request_head`], [`ResponseDecoder`]), as the server's are.
//!
//! HTTP/1.1 carries one exchange at a time per TCP connection, so the transport keeps a few
//! (at most [`MAX_CONNECTIONS`]), each kept alive for the next POST: a slow call does not
//! hold up the others, and an idle connection is reused instead of connecting again. A POST
//! of notifications is the exception: the frames after it wait for its answer, so a
//! notification reaches the server before the calls and notifications sent after it. An
//! idle connection the server closed is noticed and dropped; a POST that meets the close
//! of a reused connection before any byte of its answer is sent again once, on a new one.
//!
//! An exchange that ends without answering its calls ends them through the core
//! ([`Connection::end_unanswered`]) with [`EndReason::Unanswered`]: with the HTTP status
//! the server answered instead (after any JSON-RPC error body it sent was handed to the
//! connection, as the answer), or `None` when the POST could not be sent or its response
//! read. The connection itself stays up: the next call connects again.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures::FutureExt;
use hyper::Uri;
use sansrpc::codec::http::{write_request_head, BodyKind, ResponseDecoder, ResponseStep};
use sansrpc::connection::EndReason;
use sansrpc::{Connection, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::{BoxFuture, Builder, Received, Spawned, Transport};

/// Most TCP connections (exchanges at once) one client keeps; frames beyond wait for one.
pub const MAX_CONNECTIONS: usize = 8;

/// Frames taken from the connection and not yet on an exchange: beyond it the connection's
/// own output bound pushes back on its callers.
const MAX_WAITING: usize = 64;

/// Bytes read at a time.
const READ: usize = 16 * 1024;

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
    let first = target.connect().await?;
    // A cancellation could reach no exchange: HTTP/1.1 answers one request at a time per
    // connection, and a server's connection machine knows only its own connection's ids.
    // A call given up on (dropped, or past its deadline) is forgotten here instead.
    let builder = builder.configure(|c| c.cancellation = false);
    let max_body = builder.connection_config().limits.max_frame_bytes;
    let mut kept = Exchange::new(max_body);
    // Idle since it was made: a server that closed it meanwhile gets the POST again once.
    (kept.stream, kept.reused) = (Some(first), true);
    let transport = HttpClient {
        max_body,
        target,
        waiting: VecDeque::new(),
        exchanges: vec![kept],
        done: VecDeque::new(),
        frame: Vec::new(),
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
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
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
            host: authority.as_str().to_owned(),
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
    host: String,
    /// The request target.
    path: String,
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

/// One TCP connection, plain or TLS.
pub enum Stream {
    /// Plain TCP (`http://`).
    Plain(TcpStream),
    /// TLS over TCP (`https://`).
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// What hyper-util's pooled client asks of a connection it did not make itself (the MCP
/// client dials with [`Target::connect`]).
impl hyper_util::client::legacy::connect::Connection for Stream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

impl Stream {
    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Stream::poll_read(self.get_mut(), cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Stream::poll_write(self.get_mut(), cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Stream::poll_flush(self.get_mut(), cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// How one POST ended.
struct Done {
    /// The frame it carried.
    frame: Vec<u8>,
    /// The status and the body, when a response came.
    response: Option<(u16, Vec<u8>)>,
}

/// One POST being made.
struct Job {
    /// The frame: the request's body.
    frame: Vec<u8>,
    /// The request's head.
    head: Vec<u8>,
    /// Bytes of head and body written.
    written: usize,
    flushed: bool,
    /// The response's status and whether the server keeps the connection, once its head
    /// came.
    status: Option<(u16, bool)>,
    /// Some byte of the response came.
    answered: bool,
    /// Sent again already, after the close of a reused connection.
    retried: bool,
    /// Notifications only: the frames after it wait until it is answered.
    ordered: bool,
}

/// One TCP connection and the POST on it, if any.
struct Exchange {
    stream: Option<Stream>,
    connecting: Option<BoxFuture<io::Result<Stream>>>,
    /// The stream carried a POST before this one (the server may have closed it while it
    /// was idle).
    reused: bool,
    job: Option<Job>,
    buf: Vec<u8>,
    /// Bytes of `buf` read.
    len: usize,
    decoder: ResponseDecoder,
    max_body: usize,
}

impl Exchange {
    fn new(max_body: usize) -> Self {
        Exchange {
            stream: None,
            connecting: None,
            reused: false,
            job: None,
            buf: Vec::new(),
            len: 0,
            decoder: ResponseDecoder::new(max_body),
            max_body,
        }
    }

    /// Starts the POST of `frame`.
    fn start(&mut self, target: &Target, frame: Vec<u8>) {
        let ordered = Connection::requests_in(&frame) == 0;
        let mut head = Vec::new();
        let accept: &[u8] = b"application/json";
        write_request_head(
            &mut head,
            &target.path,
            &target.host,
            frame.len(),
            &[("accept", accept)],
        );
        self.job = Some(Job {
            frame,
            head,
            written: 0,
            flushed: false,
            status: None,
            answered: false,
            retried: false,
            ordered,
        });
    }

    /// Drives the connection and its POST: `Ready` with how the POST ended.
    fn poll(&mut self, cx: &mut Context<'_>, target: &Arc<Target>) -> Poll<Done> {
        loop {
            if self.job.is_none() {
                self.watch_idle(cx);
                return Poll::Pending;
            }
            if self.stream.is_none() {
                let connecting = self.connecting.get_or_insert_with(|| target.connect());
                let connected = ready!(connecting.poll_unpin(cx));
                self.connecting = None;
                match connected {
                    Ok(stream) => (self.stream, self.reused) = (Some(stream), false),
                    Err(_) => return Poll::Ready(self.failed()),
                }
            }
            if let Err(()) = ready!(self.poll_send(cx)) {
                match self.broken() {
                    Some(done) => return Poll::Ready(done),
                    None => continue,
                }
            }
            // `None`: the connection broke and the POST goes again on a new one.
            if let Some(done) = ready!(self.poll_response(cx)) {
                return Poll::Ready(done);
            }
        }
    }

    /// Writes the request: head, then body, then a flush.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
        let (Some(stream), Some(job)) = (&mut self.stream, &mut self.job) else {
            return Poll::Ready(Err(()));
        };
        while job.written < job.head.len() + job.frame.len() {
            let out = match job.head.get(job.written..) {
                Some(head) if !head.is_empty() => head,
                _ => &job.frame[job.written - job.head.len()..],
            };
            match ready!(stream.poll_write(cx, out)) {
                Ok(0) | Err(_) => return Poll::Ready(Err(())),
                Ok(n) => job.written += n,
            }
        }
        if !job.flushed {
            ready!(stream.poll_flush(cx)).map_err(|_| ())?;
            job.flushed = true;
        }
        Poll::Ready(Ok(()))
    }

    /// Reads the response: `Some` once the POST is over, `None` when it is to be sent again.
    fn poll_response(&mut self, cx: &mut Context<'_>) -> Poll<Option<Done>> {
        loop {
            match self.decode() {
                Ok(Some(done)) => return Poll::Ready(Some(done)),
                Ok(None) => {}
                Err(()) => return Poll::Ready(Some(self.failed())),
            }
            if self.len == self.buf.len() {
                self.buf.resize(self.len + READ, 0);
            }
            let (Some(stream), Some(job)) = (&mut self.stream, &mut self.job) else {
                return Poll::Ready(self.broken());
            };
            let mut read = ReadBuf::new(&mut self.buf[self.len..]);
            let result = ready!(stream.poll_read(cx, &mut read));
            let n = read.filled().len();
            match result {
                Ok(()) if n > 0 => {
                    self.len += n;
                    job.answered = true;
                }
                // The end of the connection: of a body read until it, or of the exchange.
                Ok(()) => {
                    let body = self.decoder.finish(&self.buf[..self.len]);
                    if let (Some((status, _)), Some(body)) = (job.status, body) {
                        let response = Some((status, body.to_vec()));
                        let frame = std::mem::take(&mut job.frame);
                        self.reset(false);
                        return Poll::Ready(Some(Done { frame, response }));
                    }
                    return Poll::Ready(self.broken());
                }
                Err(_) => return Poll::Ready(self.broken()),
            }
        }
    }

    /// Decodes what was read: the POST's end once its response is whole; `Err` for a
    /// response that cannot be read.
    fn decode(&mut self) -> Result<Option<Done>, ()> {
        loop {
            let Some(job) = &mut self.job else {
                return Ok(None);
            };
            match self
                .decoder
                .decode(&mut self.buf[..self.len])
                .map_err(|_| ())?
            {
                ResponseStep::Incomplete(_) => {
                    self.len = self.decoder.reclaim(&mut self.buf[..self.len]);
                    return Ok(None);
                }
                ResponseStep::Head(used, head) => {
                    self.buf.copy_within(used..self.len, 0);
                    self.len -= used;
                    if head.status < 200 {
                        continue; // 100 Continue, and the like.
                    }
                    job.status = Some((head.status, head.keep_alive));
                    if head.body == BodyKind::None {
                        let frame = std::mem::take(&mut job.frame);
                        self.reset(head.keep_alive);
                        let response = Some((head.status, Vec::new()));
                        return Ok(Some(Done { frame, response }));
                    }
                }
                ResponseStep::Body(used, body) => {
                    let (status, keep) = job.status.unwrap_or((200, false));
                    let response = Some((status, body.to_vec()));
                    let frame = std::mem::take(&mut job.frame);
                    self.len -= used.min(self.len);
                    self.reset(keep);
                    return Ok(Some(Done { frame, response }));
                }
            }
        }
    }

    /// The POST is over: the connection is kept for the next one when `keep` (and nothing
    /// more was read from it), else dropped.
    fn reset(&mut self, keep: bool) {
        self.job = None;
        if !keep || self.len > 0 {
            self.stream = None;
        }
        self.reused = self.stream.is_some();
        self.len = 0;
        self.buf = Vec::new();
    }

    /// The connection broke under the POST: sent again once on a new connection when it was
    /// a reused one that gave nothing back (the server closed it while it was idle), else
    /// the POST failed.
    fn broken(&mut self) -> Option<Done> {
        self.stream = None;
        let job = self.job.as_mut()?;
        if self.reused && !job.answered && !job.retried {
            job.retried = true;
            (job.written, job.flushed, job.status) = (0, false, None);
            self.len = 0;
            self.decoder = ResponseDecoder::new(self.max_body);
            return None;
        }
        Some(self.failed())
    }

    /// The POST failed: no response.
    fn failed(&mut self) -> Done {
        let frame = self.job.take().map(|j| j.frame).unwrap_or_default();
        self.stream = None;
        self.decoder = ResponseDecoder::new(self.max_body);
        self.len = 0;
        self.buf = Vec::new();
        Done {
            frame,
            response: None,
        }
    }

    /// An idle connection: dropped once the server closes it (or sends what nobody asked
    /// for).
    fn watch_idle(&mut self, cx: &mut Context<'_>) {
        let Some(stream) = &mut self.stream else {
            return;
        };
        let mut byte = [0u8; 1];
        let mut read = ReadBuf::new(&mut byte);
        if stream.poll_read(cx, &mut read).is_ready() {
            self.stream = None;
        }
    }
}

/// The client side of JSON-RPC over HTTP, as a message [`Transport`].
struct HttpClient {
    target: Arc<Target>,
    max_body: usize,
    /// Frames taken from the connection, waiting for an exchange.
    waiting: VecDeque<Vec<u8>>,
    exchanges: Vec<Exchange>,
    /// POSTs over, to hand to the connection.
    done: VecDeque<Done>,
    /// Where the connection writes its frames.
    frame: Vec<u8>,
}

impl HttpClient {
    /// Starts the POSTs waiting on free exchanges and drives every exchange; true when a
    /// POST ended.
    fn poll_io(&mut self, cx: &mut Context<'_>) -> bool {
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
                .position(|e| e.job.is_none() && e.stream.is_some())
                .or_else(|| self.exchanges.iter().position(|e| e.job.is_none()));
            let at = match free {
                Some(at) => at,
                None if self.exchanges.len() < MAX_CONNECTIONS => {
                    self.exchanges.push(Exchange::new(self.max_body));
                    self.exchanges.len() - 1
                }
                None => {
                    self.waiting.push_front(frame);
                    break;
                }
            };
            self.exchanges[at].start(&self.target, frame);
        }
        let mut ended = false;
        for exchange in &mut self.exchanges {
            if let Poll::Ready(done) = exchange.poll(cx, &self.target) {
                self.done.push_back(done);
                ended = true;
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
        if self.done.is_empty() {
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
            self.waiting.push_back(std::mem::take(&mut self.frame));
        }
        if self.poll_io(cx) {
            // A POST ended here: the driver hands it to the connection on its next pass.
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
