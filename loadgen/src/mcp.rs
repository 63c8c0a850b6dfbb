//! MCP over Streamable HTTP: sessions that initialize and then call the `add` tool, one
//! call at a time each, over HTTP/1.1 keep-alive connections. The client is written here
//! by hand, as for the other HTTP workloads, and is the same for both servers: each POST's
//! head is formatted once per session, a call's body is written into a reused buffer, and
//! the answer is read with `httparse` (a `Content-Length` body or a chunked one) and
//! checked through a borrowed typed parse, so that the client's cost per call stays well
//! under either server's. Every answer is checked: a JSON body or an event stream whose
//! message is the call's result, `a + b` as text, with the call's id. A server that gives
//! no `Mcp-Session-Id` (rmcp's stateless mode) is called without one.

use std::any::Any;
use std::io::Write as _;
use std::net::SocketAddr;
use std::ops::Range;
use std::time::Instant;

use futures_util::future::{join_all, try_join_all};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::client::Run;

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// One session: its HTTP connection, its id (none on a stateless server), and the head
/// every POST of it starts with, up to the `Content-Length` value.
pub struct Session {
    stream: TcpStream,
    id: Option<String>,
    head: Vec<u8>,
    /// What was read and not yet consumed.
    buf: Vec<u8>,
    /// The next POST's bytes.
    out: Vec<u8>,
    /// The next call's body.
    call: Vec<u8>,
    /// The body of the last answer (chunks joined).
    body: Vec<u8>,
}

/// What a POST got: its status, the session id it carried, and whether it was an event
/// stream; the body is in `Session::body`.
struct Response {
    status: u16,
    session: Option<String>,
    sse: bool,
}

/// The `tools/call` answer, as far as it is checked.
#[derive(Deserialize)]
struct CallAnswer<'a> {
    jsonrpc: &'a str,
    id: u64,
    #[serde(borrow)]
    result: CallResult<'a>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow)]
    content: Vec<Content<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    text: &'a str,
}

impl Session {
    /// Connects, initializes and sends `notifications/initialized`.
    pub async fn open(addr: SocketAddr) -> Result<Session, String> {
        let stream = crate::client::connect(addr).await?;
        let mut session = Session {
            stream,
            id: None,
            head: Vec::new(),
            buf: Vec::with_capacity(16 * 1024),
            out: Vec::with_capacity(1024),
            call: Vec::with_capacity(256),
            body: Vec::with_capacity(1024),
        };
        session.set_head(addr);
        let response = session.post(initialize().as_bytes()).await?;
        initialized(message(response.sse, &session.body)?)?;
        session.id = response.session;
        session.set_head(addr);
        session.post(INITIALIZED.as_bytes()).await?;
        Ok(session)
    }

    fn set_head(&mut self, addr: SocketAddr) {
        self.head.clear();
        let _ = write!(
            self.head,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-06-18\r\n"
        );
        if let Some(id) = &self.id {
            let _ = write!(self.head, "Mcp-Session-Id: {id}\r\n");
        }
        self.head.extend_from_slice(b"Content-Length: ");
    }

    /// POSTs `body` and reads the whole response (its body into `self.body`).
    async fn post(&mut self, body: &[u8]) -> Result<Response, String> {
        self.out.clear();
        self.out.extend_from_slice(&self.head);
        let _ = write!(self.out, "{}\r\n\r\n", body.len());
        self.out.extend_from_slice(body);
        self.stream.write_all(&self.out).await.map_err(io)?;
        let response = self.read_response().await?;
        if !(200..300).contains(&response.status) {
            return Err(format!(
                "HTTP {}: {}",
                response.status,
                String::from_utf8_lossy(&self.body)
            ));
        }
        Ok(response)
    }

    /// Reads one response: its head, then its body by `Content-Length` or chunked.
    async fn read_response(&mut self) -> Result<Response, String> {
        let (response, head_len, framing) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 24];
            let mut parsed = httparse::Response::new(&mut headers);
            match parsed.parse(&self.buf).map_err(io)? {
                httparse::Status::Complete(len) => {
                    let mut response = Response {
                        status: parsed.code.unwrap_or(0),
                        session: None,
                        sse: false,
                    };
                    let mut framing = Framing::Length(0);
                    for h in parsed.headers.iter() {
                        if h.name.eq_ignore_ascii_case("content-length") {
                            let text = std::str::from_utf8(h.value).map_err(io)?;
                            framing = Framing::Length(text.trim().parse().map_err(io)?);
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            if h.value.eq_ignore_ascii_case(b"chunked") {
                                framing = Framing::Chunked;
                            } else {
                                return Err("unsupported Transfer-Encoding".into());
                            }
                        } else if h.name.eq_ignore_ascii_case("mcp-session-id") {
                            let id = std::str::from_utf8(h.value).map_err(io)?;
                            response.session = Some(id.to_owned());
                        } else if h.name.eq_ignore_ascii_case("content-type") {
                            response.sse = h.value.starts_with(b"text/event-stream");
                        }
                    }
                    break (response, len, framing);
                }
                httparse::Status::Partial => self.fill().await?,
            }
        };
        self.buf.drain(..head_len);
        self.body.clear();
        match framing {
            Framing::Length(n) => {
                while self.buf.len() < n {
                    self.fill().await?;
                }
                self.body.extend_from_slice(&self.buf[..n]);
                self.buf.drain(..n);
            }
            Framing::Chunked => loop {
                let Some(line) = find_crlf(&self.buf) else {
                    self.fill().await?;
                    continue;
                };
                let size = std::str::from_utf8(&self.buf[..line]).map_err(io)?;
                let size = size.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size, 16).map_err(io)?;
                // The chunk, then its CRLF (after the last, empty chunk: no trailers here).
                while self.buf.len() < line + 2 + size + 2 {
                    self.fill().await?;
                }
                let data: Range<usize> = line + 2..line + 2 + size;
                self.body.extend_from_slice(&self.buf[data]);
                self.buf.drain(..line + 2 + size + 2);
                if size == 0 {
                    break;
                }
            },
        }
        Ok(response)
    }

    async fn fill(&mut self) -> Result<(), String> {
        self.buf.reserve(16 * 1024);
        match self.stream.read_buf(&mut self.buf).await.map_err(io)? {
            0 => Err("connection closed by the server".into()),
            _ => Ok(()),
        }
    }
}

impl Caller for Session {
    async fn add(&mut self, id: u64, a: i64, b: i64) -> Result<bool, String> {
        let mut call = std::mem::take(&mut self.call);
        add_call(&mut call, id, a, b);
        let response = self.post(&call).await;
        self.call = call;
        let response = response?;
        added(message(response.sse, &self.body)?, id, a, b)
    }
}

/// The JSON-RPC message text of an answer's `body`: the JSON body, or the event stream's
/// message (a priming event has empty data); `None` for an empty body (202).
pub fn message(sse: bool, body: &[u8]) -> Result<Option<&str>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let text = std::str::from_utf8(body).map_err(io)?;
    if !sse {
        return Ok(Some(text));
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .map(Some)
        .ok_or_else(|| "an event stream without a message".into())
}

/// The `initialize` request every session starts with.
pub fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "loadgen", "version": "0"}}})
    .to_string()
}

/// Checks the answer to `initialize` (its message text).
pub fn initialized(text: Option<&str>) -> Result<(), String> {
    let answer: Value = serde_json::from_str(text.ok_or("initialize: no answer")?).map_err(io)?;
    if answer["result"]["protocolVersion"].is_null() {
        return Err("initialize: no result".into());
    }
    Ok(())
}

/// The notification that follows `initialize`.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `tools/call` of `add` with `a`, `b`, written over `out`.
pub fn add_call(out: &mut Vec<u8>, id: u64, a: i64, b: i64) {
    out.clear();
    let _ = write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{a},"b":{b}}}}}}}"#
    );
}

/// True when `text`, the answer to call `id` of `add` with `a`, `b`, is their sum.
pub fn added(text: Option<&str>, id: u64, a: i64, b: i64) -> Result<bool, String> {
    let answer: CallAnswer<'_> =
        serde_json::from_str(text.ok_or("no answer to tools/call")?).map_err(io)?;
    let sum = answer.result.content.first().map(|c| c.text);
    Ok(answer.jsonrpc == "2.0"
        && answer.id == id
        && sum.and_then(|t| t.parse::<i64>().ok()) == Some(a + b))
}

/// A session that calls `add` (over HTTP/1.1 here, over HTTP/2 in `h2.rs`).
pub trait Caller {
    /// Calls `add` with `a`, `b`; true when the answer is their sum, with the call's id.
    async fn add(&mut self, id: u64, a: i64, b: i64) -> Result<bool, String>;
}

enum Framing {
    Length(usize),
    Chunked,
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// `n` calls of `add` spread over `sessions` sessions (opened and initialized first, not
/// timed), one call in flight on each.
pub async fn calls(addr: SocketAddr, n: u64, sessions: usize) -> Result<Run, String> {
    let opened = try_join_all((0..sessions).map(|_| Session::open(addr))).await?;
    Ok(run_calls(opened, n).await)
}

/// `n` calls of `add` spread over the `opened` sessions, one call in flight on each,
/// timed from the first.
pub async fn run_calls<S: Caller>(opened: Vec<S>, n: u64) -> Run {
    let per = n / opened.len().max(1) as u64;
    let start = Instant::now();
    let runs = join_all(
        opened
            .into_iter()
            .enumerate()
            .map(|(s, mut session)| async move {
                let (mut answered, mut errors) = (0u64, 0u64);
                for i in 0..per {
                    let id = s as u64 * per + i + 1;
                    match session.add(id, id as i64, 7).await {
                        Ok(right) => {
                            answered += 1;
                            errors += u64::from(!right);
                        }
                        Err(_) => errors += 1,
                    }
                }
                (answered, errors)
            }),
    )
    .await;
    let elapsed = start.elapsed();
    let (answered, errors) = runs
        .iter()
        .fold((0, 0), |(a, e), (ra, re)| (a + ra, e + re));
    Run {
        answered,
        errors,
        elapsed,
    }
}

/// Opens `count` sessions, each with one call answered; the sessions' ids (the sessions
/// stay open on the server, which keeps them for their idle timeout; their connections
/// are closed before this returns), and how many calls were answered wrong.
pub async fn hold(addr: SocketAddr, count: usize) -> Result<(Vec<Box<dyn Any>>, u64), String> {
    let (mut held, mut errors) = (Vec::with_capacity(count), 0);
    // 50 handshakes at a time, well within any listen backlog.
    for chunk in (0..count as u64).collect::<Vec<_>>().chunks(50) {
        let opened = join_all(chunk.iter().map(|&id| async move {
            let mut session = Session::open(addr).await?;
            let right = session.add(id + 1, id as i64, 7).await?;
            Ok::<_, String>((session.id.take(), right))
        }))
        .await;
        for result in opened {
            let (id, right) = result?;
            held.push(Box::new(id) as Box<dyn Any>);
            errors += u64::from(!right);
        }
    }
    Ok((held, errors))
}
