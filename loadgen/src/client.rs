//! The client side: requests, answer checks, and one loop per workload, on raw sockets so
//! that every server is driven by the same code.

use std::any::Any;
use std::cell::Cell;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::ops::Range;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::{join_all, try_join_all};
use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Ws,
    Http,
    /// MCP over Streamable HTTP, calls answered with JSON bodies.
    McpJson,
    /// MCP over Streamable HTTP, calls answered on event streams.
    McpSse,
    /// JSON-RPC over HTTP/2 with prior knowledge (h2c), one connection.
    H2Http,
    /// MCP over h2c, JSON answers, the sessions sharing one connection.
    H2McpJson,
    /// MCP over h2c, SSE answers, the sessions sharing one connection.
    H2McpSse,
}

impl Transport {
    /// The transport's name on `sansrpc-server`'s command line.
    pub fn arg(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Ws => "ws",
            Transport::Http | Transport::H2Http => "http",
            Transport::McpJson | Transport::H2McpJson => "json",
            Transport::McpSse | Transport::H2McpSse => "sse",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP",
            Transport::Ws => "WebSocket",
            Transport::Http => "HTTP keep-alive",
            Transport::H2Http => "HTTP/2",
            Transport::McpJson | Transport::McpSse => "MCP session",
            Transport::H2McpJson | Transport::H2McpSse => "MCP session over HTTP/2",
        }
    }
}

/// One measured run: answers received (right or wrong), wrong ones, time taken.
pub struct Run {
    pub answered: u64,
    pub errors: u64,
    pub elapsed: Duration,
}

impl Run {
    pub fn per_second(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64()
    }
}

pub type BoxRun = Pin<Box<dyn Future<Output = Result<Run, String>>>>;

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Request `id`: `add` `[id, 7]` for even ids, `echo` `["hello", id]` for odd ones.
fn request(out: &mut Vec<u8>, id: u64) {
    if id.is_multiple_of(2) {
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[{id},7]}}"#
        );
    } else {
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":["hello",{id}]}}"#
        );
    }
}

pub fn request_string(id: u64) -> String {
    let mut out = Vec::with_capacity(80);
    request(&mut out, id);
    String::from_utf8(out).expect("ASCII")
}

/// Request `id` in Content-Length framing, appended to `out`.
fn framed(out: &mut Vec<u8>, id: u64) {
    let body = request_string(id);
    let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
}

/// Request `id` as an HTTP/1.1 POST, appended to `out`.
fn post(out: &mut Vec<u8>, id: u64) {
    let body = request_string(id);
    let _ = write!(
        out,
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
}

#[derive(Deserialize)]
struct Answer<'a> {
    jsonrpc: &'a str,
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The id of a right answer; `None` for anything else (an error, a wrong result, no id).
pub fn verify(body: &[u8]) -> Option<u64> {
    let answer: Answer = serde_json::from_slice(body).ok()?;
    let id = answer.id?;
    if answer.jsonrpc != "2.0" || answer.error.is_some() {
        return None;
    }
    let result = answer.result?.get();
    let right = if id.is_multiple_of(2) {
        serde_json::from_str::<u64>(result).ok() == Some(id + 7)
    } else {
        serde_json::from_str::<(String, u64)>(result).ok() == Some(("hello".into(), id))
    };
    right.then_some(id)
}

/// Checks the answers of one pipelined connection: each right, each id asked and not yet
/// answered.
struct Tracker {
    answered: Vec<bool>,
    errors: u64,
}

impl Tracker {
    fn new(n: u64) -> Self {
        Tracker {
            answered: vec![false; n as usize],
            errors: 0,
        }
    }

    fn check(&mut self, body: &[u8], sent: u64) {
        match verify(body) {
            Some(id) if id < sent && !self.answered[id as usize] => {
                self.answered[id as usize] = true
            }
            _ => {
                self.errors += 1;
                if self.errors <= 3 {
                    eprintln!("wrong answer: {}", String::from_utf8_lossy(body));
                }
            }
        }
    }
}

/// Messages read off a byte stream: Content-Length frames, or HTTP/1.1 responses with a
/// `Content-Length` body (anything but `200 OK` is an error).
struct Frames {
    buf: Vec<u8>,
    start: usize,
    http: bool,
    /// Room made before each read.
    chunk: usize,
}

impl Frames {
    fn new(http: bool) -> Self {
        Frames {
            buf: Vec::with_capacity(64 * 1024),
            start: 0,
            http,
            chunk: 16 * 1024,
        }
    }

    /// For one small answer (10,000 connections waiting for theirs at once).
    fn small(http: bool) -> Self {
        Frames {
            buf: Vec::new(),
            start: 0,
            http,
            chunk: 1024,
        }
    }

    /// The body of the next complete message in the buffer, consumed.
    fn next(&mut self) -> Result<Option<Range<usize>>, String> {
        let data = &self.buf[self.start..];
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            return Ok(None);
        };
        let head = std::str::from_utf8(&data[..end]).map_err(io)?;
        let mut lines = head.split("\r\n");
        if self.http {
            let status = lines.next().unwrap_or("");
            if !status.starts_with("HTTP/1.1 200") {
                return Err(format!("HTTP status {status:?}"));
            }
        }
        let mut length = None;
        for line in lines {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(format!("unsupported Transfer-Encoding: {}", value.trim()));
            }
        }
        let length = length.ok_or("a message without Content-Length")?;
        let body = self.start + end + 4;
        if self.buf.len() < body + length {
            return Ok(None);
        }
        self.start = body + length;
        Ok(Some(body..body + length))
    }

    /// Reads more bytes (invalidates ranges handed out before).
    async fn fill(&mut self, read: &mut (impl AsyncRead + Unpin)) -> Result<(), String> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(self.chunk);
        match read.read_buf(&mut self.buf).await.map_err(io)? {
            0 => Err("connection closed by the server".into()),
            _ => Ok(()),
        }
    }
}

/// A connection to `addr` with `TCP_NODELAY` set.
pub async fn connect(addr: SocketAddr) -> Result<TcpStream, String> {
    let stream = TcpStream::connect(addr).await.map_err(io)?;
    stream.set_nodelay(true).map_err(io)?;
    Ok(stream)
}

/// `n` requests on one TCP connection, Content-Length framing, `depth` in flight.
pub async fn tcp_pipelined(addr: SocketAddr, n: u64, depth: usize) -> Result<Run, String> {
    let mut stream = connect(addr).await?;
    let (mut read, mut write) = stream.split();
    let (mut frames, mut tracker, mut out) = (Frames::new(false), Tracker::new(n), Vec::new());
    let (mut sent, mut answered) = (0, 0);
    let start = Instant::now();
    while answered < n {
        while sent < n && sent - answered < depth as u64 {
            framed(&mut out, sent);
            sent += 1;
        }
        if !out.is_empty() {
            write.write_all(&out).await.map_err(io)?;
            out.clear();
        }
        // At least one answer, then every one already read.
        let mut got = false;
        loop {
            if let Some(body) = frames.next()? {
                tracker.check(&frames.buf[body], sent);
                answered += 1;
                got = true;
            } else if got {
                break;
            } else {
                frames.fill(&mut read).await?;
            }
        }
    }
    Ok(Run {
        answered,
        errors: tracker.errors,
        elapsed: start.elapsed(),
    })
}

/// `n` requests on one WebSocket connection, text frames, `depth` in flight.
pub async fn ws(addr: SocketAddr, n: u64, depth: usize) -> Result<Run, String> {
    let stream = connect(addr).await?;
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
        .await
        .map_err(io)?;
    let mut tracker = Tracker::new(n);
    let (mut sent, mut answered) = (0, 0);
    let start = Instant::now();
    while answered < n {
        while sent < n && sent - answered < depth as u64 {
            ws.feed(Message::text(request_string(sent)))
                .await
                .map_err(io)?;
            sent += 1;
        }
        ws.flush().await.map_err(io)?;
        // At least one answer, then every one ready without waiting.
        let mut message = ws.next().await;
        loop {
            match message {
                Some(Ok(Message::Text(text))) => {
                    tracker.check(text.as_bytes(), sent);
                    answered += 1;
                }
                Some(Ok(Message::Binary(bytes))) => {
                    tracker.check(&bytes, sent);
                    answered += 1;
                }
                Some(Ok(Message::Close(_))) | None => return Err("closed by the server".into()),
                Some(Ok(_)) => {} // ping, pong
                Some(Err(e)) => return Err(io(e)),
            }
            match ws.next().now_or_never() {
                Some(next) => message = next,
                None => break,
            }
        }
    }
    Ok(Run {
        answered,
        errors: tracker.errors,
        elapsed: start.elapsed(),
    })
}

/// `n` requests over `connections` HTTP/1.1 keep-alive connections, one POST at a time each.
pub async fn http(addr: SocketAddr, n: u64, connections: usize) -> Result<Run, String> {
    let next = Rc::new(Cell::new(0));
    let start = Instant::now();
    let each = (0..connections).map(|_| http_connection(addr, n, next.clone()));
    let results = try_join_all(each).await?;
    let (answered, errors) = results.iter().fold((0, 0), |(a, e), (x, y)| (a + x, e + y));
    Ok(Run {
        answered,
        errors,
        elapsed: start.elapsed(),
    })
}

async fn http_connection(
    addr: SocketAddr,
    n: u64,
    next: Rc<Cell<u64>>,
) -> Result<(u64, u64), String> {
    http_requests(&mut connect(addr).await?, n, &next).await
}

/// POSTs on `stream`, one at a time, until `next` (the id of the next request, shared by
/// the connections of a run) reaches `n`: the answers received and the wrong ones.
pub async fn http_requests(
    stream: &mut TcpStream,
    n: u64,
    next: &Cell<u64>,
) -> Result<(u64, u64), String> {
    let (mut frames, mut out) = (Frames::new(true), Vec::new());
    let (mut answered, mut errors) = (0, 0);
    loop {
        let id = next.get();
        if id >= n {
            return Ok((answered, errors));
        }
        next.set(id + 1);
        out.clear();
        post(&mut out, id);
        stream.write_all(&out).await.map_err(io)?;
        let body = loop {
            match frames.next()? {
                Some(body) => break body,
                None => frames.fill(stream).await?,
            }
        };
        answered += 1;
        if verify(&frames.buf[body]) != Some(id) {
            errors += 1;
        }
    }
}

/// Opens `count` connections, asks and checks one request on each, and hands them back
/// open, with the number of wrong answers.
pub async fn hold(
    addr: SocketAddr,
    transport: Transport,
    count: usize,
) -> Result<(Vec<Box<dyn Any>>, u64), String> {
    if matches!(transport, Transport::McpJson | Transport::McpSse) {
        return crate::mcp::hold(addr, count).await;
    }
    let (mut held, mut errors) = (Vec::with_capacity(count), 0);
    // 50 handshakes at a time, well within any listen backlog.
    for chunk in (0..count as u64).collect::<Vec<_>>().chunks(50) {
        for result in join_all(chunk.iter().map(|&id| hold_one(addr, transport, id))).await {
            let (connection, right) = result?;
            held.push(connection);
            errors += u64::from(!right);
        }
    }
    Ok((held, errors))
}

/// Opens a connection, asks request `id` on it and checks the answer: the connection, still
/// open, and whether the answer was right.
pub async fn hold_one(
    addr: SocketAddr,
    transport: Transport,
    id: u64,
) -> Result<(Box<dyn Any>, bool), String> {
    match open_one(addr, transport).await? {
        Open::Stream(mut stream) => {
            let right = ask(&mut stream, transport == Transport::Http, id).await?;
            Ok((Box::new(stream), right))
        }
        Open::Ws(mut ws) => {
            let right = ask_ws(&mut ws, id).await?;
            Ok((Box::new(ws), right))
        }
    }
}

/// A connection opened and ready for requests: a byte stream (TCP, HTTP), or a WebSocket
/// whose handshake is done.
pub enum Open {
    Stream(TcpStream),
    Ws(Box<tokio_tungstenite::WebSocketStream<TcpStream>>),
}

/// Opens a connection to `addr` for `transport` (with its WebSocket handshake).
pub async fn open_one(addr: SocketAddr, transport: Transport) -> Result<Open, String> {
    let stream = connect(addr).await?;
    if transport != Transport::Ws {
        return Ok(Open::Stream(stream));
    }
    let (ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
        .await
        .map_err(io)?;
    Ok(Open::Ws(Box::new(ws)))
}

/// Asks request `id` on `ws` (a text message) and checks its answer.
async fn ask_ws(
    ws: &mut tokio_tungstenite::WebSocketStream<TcpStream>,
    id: u64,
) -> Result<bool, String> {
    ws.send(Message::text(request_string(id)))
        .await
        .map_err(io)?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => return Ok(verify(text.as_bytes()) == Some(id)),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            Some(Ok(other)) => return Err(format!("unexpected message {other:?}")),
            Some(Err(e)) => return Err(io(e)),
            None => return Err("closed by the server".into()),
        }
    }
}

/// Asks request `id` on `stream` (an HTTP POST when `http`, else Content-Length framing)
/// and checks its answer.
async fn ask(stream: &mut TcpStream, http: bool, id: u64) -> Result<bool, String> {
    send(stream, http, id).await?;
    answer(stream, http, id).await
}

/// Sends request `id` on `stream` (an HTTP POST when `http`, else Content-Length framing).
pub async fn send(stream: &mut TcpStream, http: bool, id: u64) -> Result<(), String> {
    let mut out = Vec::with_capacity(256);
    if http {
        post(&mut out, id)
    } else {
        framed(&mut out, id)
    }
    stream.write_all(&out).await.map_err(io)
}

/// Reads the answer to request `id` on `stream` and checks it.
pub async fn answer(stream: &mut TcpStream, http: bool, id: u64) -> Result<bool, String> {
    let mut frames = Frames::small(http);
    let body = loop {
        match frames.next()? {
            Some(body) => break body,
            None => frames.fill(stream).await?,
        }
    };
    Ok(verify(&frames.buf[body]) == Some(id))
}
