//! A raw connection to the server under test: bytes out, frames in, every wait bounded.
//!
//! Writing and reading each happen on a thread of their own, so a server that stops
//! reading (a full pipe) or never answers cannot block the checker: it waits on a channel
//! with a deadline, and closing the connection (killing the child, shutting the socket)
//! unblocks both threads. Threads are never joined.
//!
//! WebSocket and HTTP carry whole messages, unframed: one thread per connection writes
//! each message (a text frame; a POST body) and reports each message received (a text
//! frame; a 200 response's body), a 204 response as no answer and any other HTTP status as
//! a refusal.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Instant;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::Limits;

use crate::target::{self, Kind};

/// What the reader thread reports.
enum Input {
    Bytes(Vec<u8>),
    /// A whole message (WebSocket, HTTP).
    Message(Vec<u8>),
    /// The server said there is no answer (HTTP 204).
    NoAnswer,
    /// The server refused the message (HTTP: any status but 200 and 204).
    Refused(String),
    /// Something that is not a message (a binary WebSocket frame, an unreadable response).
    Bad(String),
    /// The stream ended, or a read failed.
    End,
}

/// One thing received, or why nothing was.
#[derive(Debug)]
pub enum Recv {
    /// A whole frame body.
    Frame(Vec<u8>),
    /// The server's bytes broke the framing.
    FramingError(String),
    /// Nothing within the deadline.
    TimedOut,
    /// The connection ended (for stdio: the server's stdout closed).
    Closed,
    /// The server said, for the last message, that there is no answer (HTTP 204).
    NoAnswer,
    /// The server refused the last message with this HTTP status (and body, shown).
    Refused(String),
}

/// How much of the child's stderr is kept, to show when it dies.
const STDERR_TAIL: usize = 2048;

/// The largest message (frame body, WebSocket message, HTTP body) taken from the server.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// How long a WebSocket handshake may take.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long the WebSocket thread waits for a frame before looking for messages to send.
const WS_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// The raw connection.
pub struct Conn {
    framing: Framing,
    /// WebSocket or HTTP: messages go out unframed.
    message_based: bool,
    writes: Option<Sender<Vec<u8>>>,
    inputs: Receiver<Input>,
    decoder: Decoder,
    ready: VecDeque<Recv>,
    ended: bool,
    child: Option<Child>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    shutdown: Option<Box<dyn Fn() + Send>>,
}

impl Conn {
    /// Connects to `kind` (spawning the command for stdio).
    pub fn open(kind: &Kind, framing: Framing) -> Result<Conn, String> {
        if let Kind::Ws(url) | Kind::Http(url) = kind {
            return Conn::open_messages(kind, url, framing);
        }
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (reader, writer, child, shutdown): Parts = match kind {
            Kind::Stdio(words) => {
                let mut child = target::command(words)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start {}: {e}", words[0]))?;
                let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
                let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
                    return Err("the child has no piped stdio".into());
                };
                if let Some(mut err) = child.stderr.take() {
                    let tail = Arc::clone(&stderr);
                    let _ = thread::Builder::new()
                        .name("check-stderr".into())
                        .spawn(move || keep_tail(&mut err, &tail));
                }
                (Box::new(stdout), Box::new(stdin), Some(child), None)
            }
            Kind::Tcp(addr) => {
                let stream = TcpStream::connect(&**addr)
                    .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
                let _ = stream.set_nodelay(true);
                let (r, w, s) = clones(&stream)?;
                let shut = Box::new(move || drop(s.shutdown(Shutdown::Both)));
                (
                    Box::new(r),
                    Box::new(w),
                    None,
                    Some(shut as Box<dyn Fn() + Send>),
                )
            }
            Kind::Unix(path) => unix(path)?,
            Kind::Ws(_) | Kind::Http(_) => unreachable!("opened above"),
        };
        let (writes, to_write) = mpsc::channel::<Vec<u8>>();
        let (input, inputs) = mpsc::channel();
        let spawned = thread::Builder::new()
            .name("check-writer".into())
            .spawn(move || write_all(writer, &to_write))
            .and_then(|_| {
                thread::Builder::new()
                    .name("check-reader".into())
                    .spawn(move || read_all(reader, &input))
            });
        if let Err(e) = spawned {
            return Err(format!("cannot start a thread: {e}"));
        }
        Ok(Conn::new(
            framing, false, writes, inputs, child, stderr, shutdown,
        ))
    }

    fn new(
        framing: Framing,
        message_based: bool,
        writes: Sender<Vec<u8>>,
        inputs: Receiver<Input>,
        child: Option<Child>,
        stderr: Arc<Mutex<VecDeque<u8>>>,
        shutdown: Option<Box<dyn Fn() + Send>>,
    ) -> Conn {
        let mut limits = Limits::default();
        limits.max_frame_bytes = MAX_MESSAGE;
        limits.max_header_bytes = 64 * 1024;
        Conn {
            framing,
            message_based,
            writes: Some(writes),
            inputs,
            decoder: Decoder::new(framing, &limits),
            ready: VecDeque::new(),
            ended: false,
            child,
            stderr,
            shutdown,
        }
    }

    /// A WebSocket or HTTP connection: one thread sends each message and reports what
    /// comes back.
    fn open_messages(kind: &Kind, url: &str, framing: Framing) -> Result<Conn, String> {
        let (writes, to_write) = mpsc::channel::<Vec<u8>>();
        let (input, inputs) = mpsc::channel();
        let target = Url::parse(url)?;
        let stream = TcpStream::connect(&*target.authority)
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (shut, shutdown) = shutdown_slot(&stream)?;
        let spawned = if let Kind::Ws(_) = kind {
            let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
            let (ws, _) = tungstenite::client::client(url, stream)
                .map_err(|e| format!("cannot open a WebSocket to {url}: {e}"))?;
            let _ = ws.get_ref().set_read_timeout(Some(WS_POLL));
            thread::Builder::new()
                .name("check-ws".into())
                .spawn(move || ws_exchange(ws, &to_write, &input))
        } else {
            thread::Builder::new()
                .name("check-http".into())
                .spawn(move || http_exchange(&target, stream, &shut, &to_write, &input))
        };
        if let Err(e) = spawned {
            return Err(format!("cannot start a thread: {e}"));
        }
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        Ok(Conn::new(
            framing,
            true,
            writes,
            inputs,
            None,
            stderr,
            Some(shutdown),
        ))
    }

    /// Queues one message, framed (unframed on WebSocket and HTTP); a thread sends it.
    pub fn send(&mut self, body: &[u8]) {
        let frame = if self.message_based {
            body.to_vec()
        } else {
            let mut frame = Vec::with_capacity(body.len() + 32);
            encode_frame(self.framing, body, &mut frame);
            frame
        };
        if let Some(writes) = &self.writes {
            // A writer that is gone means the connection is gone: reading will tell.
            let _ = writes.send(frame);
        }
    }

    /// The next frame, framing error or end, waiting until `deadline` at most.
    pub fn recv(&mut self, deadline: Instant) -> Recv {
        loop {
            if let Some(next) = self.ready.pop_front() {
                return next;
            }
            if self.ended {
                return Recv::Closed;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.inputs.recv_timeout(wait) {
                Ok(Input::Bytes(bytes)) => self.decode(&bytes),
                Ok(Input::Message(body)) => self.ready.push_back(Recv::Frame(body)),
                Ok(Input::NoAnswer) => self.ready.push_back(Recv::NoAnswer),
                Ok(Input::Refused(why)) => self.ready.push_back(Recv::Refused(why)),
                Ok(Input::Bad(why)) => self.ready.push_back(Recv::FramingError(why)),
                Ok(Input::End) | Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    if let Some(e) = self.decoder.finish() {
                        self.ready.push_back(Recv::FramingError(e.to_string()));
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Recv::TimedOut,
            }
        }
    }

    /// Whatever has already arrived, without waiting.
    pub fn drain(&mut self) -> Vec<Recv> {
        let mut out = Vec::new();
        loop {
            match self.recv(Instant::now()) {
                Recv::TimedOut | Recv::Closed => return out,
                other => out.push(other),
            }
        }
    }

    fn decode(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = self.decoder.feed(bytes);
            bytes = &bytes[n..];
            while let Some(frame) = self.decoder.next_frame() {
                self.ready.push_back(match frame {
                    Ok(body) => Recv::Frame(body.to_vec()),
                    Err(e) => Recv::FramingError(e.to_string()),
                });
            }
        }
    }

    /// How the server process ended, if it is a child that has; with its last stderr.
    pub fn exit_status(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        // Give a dying process a moment to be reaped.
        let until = Instant::now() + std::time::Duration::from_millis(200);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < until => {
                    thread::sleep(std::time::Duration::from_millis(5));
                }
                _ => return None,
            }
        };
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let tail: Vec<u8> = tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        // Its last few lines, on one line of the report.
        let lines: Vec<&str> = tail
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        Some(if tail.is_empty() {
            format!("the server exited ({status})")
        } else {
            format!("the server exited ({status}); its stderr ended with: {tail}")
        })
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.writes = None;
        if let Some(shutdown) = &self.shutdown {
            shutdown();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn clones<S>(stream: &S) -> Result<(S, S, S), String>
where
    S: TryCloneStream,
{
    let clone = || {
        stream
            .clone_stream()
            .map_err(|e| format!("cannot clone a socket: {e}"))
    };
    Ok((clone()?, clone()?, clone()?))
}

trait TryCloneStream: Sized {
    fn clone_stream(&self) -> std::io::Result<Self>;
}

impl TryCloneStream for TcpStream {
    fn clone_stream(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
}

type Parts = (
    Box<dyn Read + Send>,
    Box<dyn Write + Send>,
    Option<Child>,
    Option<Box<dyn Fn() + Send>>,
);

#[cfg(unix)]
impl TryCloneStream for std::os::unix::net::UnixStream {
    fn clone_stream(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
}

#[cfg(unix)]
fn unix(path: &std::path::Path) -> Result<Parts, String> {
    let stream = std::os::unix::net::UnixStream::connect(path)
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
    let (r, w, s) = clones(&stream)?;
    let shut = Box::new(move || drop(s.shutdown(Shutdown::Both)));
    Ok((Box::new(r), Box::new(w), None, Some(shut)))
}

#[cfg(not(unix))]
fn unix(_: &std::path::Path) -> Result<Parts, String> {
    Err("Unix sockets are not available on this platform".into())
}

fn write_all(mut writer: Box<dyn Write + Send>, frames: &Receiver<Vec<u8>>) {
    while let Ok(frame) = frames.recv() {
        if writer
            .write_all(&frame)
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
    }
}

fn read_all(mut reader: Box<dyn Read + Send>, input: &Sender<Input>) {
    let mut buf = vec![0; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if input.send(Input::Bytes(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
    let _ = input.send(Input::End);
}

fn keep_tail(stderr: &mut impl Read, tail: &Mutex<VecDeque<u8>>) {
    let mut buf = [0; 4096];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            return;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(&buf[..n]);
        let excess = tail.len().saturating_sub(STDERR_TAIL);
        tail.drain(..excess);
    }
}

/// A clone of `stream` to shut down when the connection is dropped, replaceable (HTTP
/// opens a new connection when the server closes one); and the closure that does it.
type Slot = Arc<Mutex<Option<TcpStream>>>;

/// Shuts a connection down.
type ShutdownFn = Box<dyn Fn() + Send>;

fn shutdown_slot(stream: &TcpStream) -> Result<(Slot, ShutdownFn), String> {
    let clone = stream
        .try_clone()
        .map_err(|e| format!("cannot clone a socket: {e}"))?;
    let slot = Arc::new(Mutex::new(Some(clone)));
    let shut = Arc::clone(&slot);
    let shutdown = Box::new(move || {
        let mut slot = shut.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stream) = slot.take() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    });
    Ok((slot, shutdown))
}

/// An `http://` or `ws://` URL, as far as the raw connections need it.
struct Url {
    /// `host:port` (port 80 when the URL has none).
    authority: String,
    /// The `Host` header.
    host: String,
    /// The path and query, at least `/`.
    path: String,
}

impl Url {
    fn parse(url: &str) -> Result<Url, String> {
        let rest = url
            .split_once("://")
            .map(|(_, rest)| rest)
            .ok_or_else(|| format!("not a URL: {url}"))?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (host, path) = rest.split_at(end);
        let host = host.rsplit('@').next().unwrap_or_default();
        if host.is_empty() {
            return Err(format!("no host in {url}"));
        }
        let path = path.split('#').next().unwrap_or_default();
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_owned(),
        };
        // A port, unless the host ends with one (an IPv6 literal ends with `]`).
        let has_port = host
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
        let authority = if has_port {
            host.to_owned()
        } else {
            format!("{host}:80")
        };
        Ok(Url {
            authority,
            host: host.to_owned(),
            path,
        })
    }
}

/// The WebSocket thread: each message out as a text frame (a binary one when it is not
/// UTF-8, which a text frame cannot carry), each text frame in as a message.
fn ws_exchange(
    mut ws: tungstenite::WebSocket<TcpStream>,
    bodies: &Receiver<Vec<u8>>,
    input: &Sender<Input>,
) {
    use tungstenite::{Error, Message};
    loop {
        loop {
            match bodies.try_recv() {
                Ok(body) => {
                    let message = match String::from_utf8(body) {
                        Ok(text) => Message::text(text),
                        Err(e) => Message::binary(e.into_bytes()),
                    };
                    if ws.send(message).is_err() {
                        let _ = input.send(Input::End);
                        return;
                    }
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return;
                }
            }
        }
        let got = match ws.read() {
            Ok(Message::Text(text)) => Input::Message(text.as_bytes().to_vec()),
            Ok(Message::Binary(bytes)) => Input::Bad(format!(
                "a binary frame ({} bytes); JSON-RPC over WebSocket uses text frames",
                bytes.len()
            )),
            Ok(Message::Close(_)) => Input::End,
            Ok(_) => continue,
            Err(Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => Input::End,
        };
        let end = matches!(got, Input::End);
        if input.send(got).is_err() || end {
            if end {
                let _ = input.send(Input::End);
            }
            return;
        }
    }
}

/// One HTTP response, as read.
struct Response {
    status: u16,
    /// The status line's reason phrase.
    reason: String,
    body: Vec<u8>,
    /// The server closes the connection after it.
    close: bool,
}

/// The HTTP thread: each message POSTed in turn on one keep-alive connection (a new one
/// when the server closes it); a 200 body is the answer, 204 no answer, anything else a
/// refusal. A connection dropped before a whole response is the end.
fn http_exchange(
    url: &Url,
    stream: TcpStream,
    slot: &Slot,
    bodies: &Receiver<Vec<u8>>,
    input: &Sender<Input>,
) {
    let mut stream = Some(stream);
    while let Ok(body) = bodies.recv() {
        // A kept-alive connection the server closed while idle (its keep-alive or head
        // timeout) is not reused: the request goes on a new one, as HTTP clients do.
        if stream.as_ref().is_some_and(closed_by_peer) {
            stream = None;
        }
        let conn = match stream.take() {
            Some(conn) => conn,
            None => {
                let Ok(conn) = TcpStream::connect(&*url.authority) else {
                    break;
                };
                let _ = conn.set_nodelay(true);
                let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
                // Dropped meanwhile: stay closed.
                if slot.is_none() {
                    break;
                }
                *slot = conn.try_clone().ok();
                conn
            }
        };
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n",
            url.path,
            url.host,
            body.len()
        );
        // A server may answer (413) and close before reading it all: read the answer
        // anyway.
        let _ = (&conn)
            .write_all(head.as_bytes())
            .and_then(|()| (&conn).write_all(&body));
        let response = match read_response(&mut std::io::BufReader::new(&conn)) {
            Ok(response) => response,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let _ = input.send(Input::Bad(format!("an unreadable HTTP response: {e}")));
                break;
            }
            Err(_) => break,
        };
        let got = match response.status {
            200 => Input::Message(response.body),
            204 => Input::NoAnswer,
            status => Input::Refused(format!(
                "HTTP {status} {}: {}",
                response.reason,
                target::show_bytes(&response.body, 512)
            )),
        };
        if input.send(got).is_err() {
            return;
        }
        if !response.close {
            stream = Some(conn);
        }
    }
    let _ = input.send(Input::End);
}

/// True when the peer has closed `conn` (a read would see the end at once).
fn closed_by_peer(conn: &TcpStream) -> bool {
    if conn.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let closed = matches!(conn.peek(&mut byte), Ok(0));
    let _ = conn.set_nonblocking(false);
    closed
}

fn bad(why: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.into())
}

fn read_line(reader: &mut impl std::io::BufRead) -> std::io::Result<String> {
    use std::io::BufRead as _;
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(64 * 1024)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if line.last() != Some(&b'\n') {
        return Err(bad("a header line over 64 KiB, or cut short"));
    }
    let line = String::from_utf8_lossy(&line);
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// Reads one HTTP/1.x response (Content-Length, chunked, or to the end of the stream).
fn read_response(reader: &mut impl std::io::BufRead) -> std::io::Result<Response> {
    let status_line = read_line(reader)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(bad(format!("not an HTTP/1 status line: {status_line}")));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("no status in {status_line}")))?;
    let reason = parts.next().unwrap_or_default().to_owned();
    let (mut length, mut chunked, mut close) = (None, false, version == "HTTP/1.0");
    for _ in 0..1000 {
        let line = read_line(reader)?;
        if line.is_empty() {
            if (100..200).contains(&status) {
                return read_response(reader);
            }
            let body = if status == 204 || status == 304 {
                Vec::new()
            } else if chunked {
                read_chunked(reader)?
            } else if let Some(n) = length {
                if n > MAX_MESSAGE {
                    return Err(bad(format!("a body of {n} bytes")));
                }
                let mut body = vec![0; n];
                reader.read_exact(&mut body)?;
                body
            } else {
                close = true;
                let mut body = Vec::new();
                reader.take(MAX_MESSAGE as u64).read_to_end(&mut body)?;
                body
            };
            return Ok(Response {
                status,
                reason,
                body,
                close,
            });
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!("a header without a colon: {line}")));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                let n = value
                    .parse()
                    .map_err(|_| bad(format!("Content-Length: {value}")))?;
                length = Some(n);
            }
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => {
                let value = value.to_ascii_lowercase();
                if value.contains("close") {
                    close = true;
                } else if value.contains("keep-alive") {
                    close = false;
                }
            }
            _ => {}
        }
    }
    Err(bad("over 1000 header lines"))
}

fn read_chunked(reader: &mut impl std::io::BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| bad(format!("a chunk size of {size:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(reader)?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_MESSAGE {
            return Err(bad("a chunked body over 64 MiB"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        read_line(reader)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(text: &str) -> Response {
        read_response(&mut std::io::BufReader::new(text.as_bytes())).unwrap()
    }

    #[test]
    fn responses() {
        let r = response("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra");
        assert_eq!((r.status, &r.body[..], r.close), (200, &b"{}"[..], false));
        let r = response("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        assert_eq!((r.status, r.body.len(), r.close), (204, 0, true));
        let r = response(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Payload Too Large\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n1\r\nd\r\n0\r\n\r\n",
        );
        assert_eq!((r.status, r.reason.as_str()), (413, "Payload Too Large"));
        assert_eq!(r.body, b"abcd");
        let r = response("HTTP/1.0 500 Oops\r\n\r\nto the end");
        assert_eq!(
            (r.status, &r.body[..], r.close),
            (500, &b"to the end"[..], true)
        );
        let cut = read_response(&mut std::io::BufReader::new(&b"HTTP/1.1 200 OK\r\n"[..]));
        assert!(cut.is_err());
        let junk = read_response(&mut std::io::BufReader::new(&b"SSH-2.0\r\n\r\n"[..]));
        assert_eq!(
            junk.err().map(|e| e.kind()),
            Some(std::io::ErrorKind::InvalidData)
        );
    }

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:7880").unwrap();
        assert_eq!(
            (&*u.authority, &*u.host, &*u.path),
            ("127.0.0.1:7880", "127.0.0.1:7880", "/")
        );
        let u = Url::parse("ws://example.org/rpc?x=1#frag").unwrap();
        assert_eq!((&*u.authority, &*u.path), ("example.org:80", "/rpc?x=1"));
        let u = Url::parse("http://[::1]:9/").unwrap();
        assert_eq!(u.authority, "[::1]:9");
        assert!(Url::parse("http:///x").is_err());
    }
}
