//! Hostile clients against the `everything_server` example (MCP's Streamable HTTP, the core's
//! `sansrpc_mcp::streamable::Endpoint` deciding): many sessions (past `max_sessions`, 1024),
//! never-read SSE streams, huge and garbage `Last-Event-ID` values, header floods and
//! stalled heads and bodies, all from raw `std::net::TcpStream` clients, while a
//! well-behaved client does a full initialize + `tools/call add` every 200 ms. The server
//! must answer every hostile request with what its bounds say (503, 431, 413, 4xx), serve
//! the good client every time, keep its peak RSS (VmHWM) under a stated bound, and be alive
//! at the end. While the hostile sessions (initialized, active) fill the table, a new
//! session is 503 for the good client too (that is what `max_sessions` means): it backs off
//! and retries then, and only then; the session it holds from the start is served on every
//! tick. Sessions that never finish their handshake do not hold the table (the last test).
//!
//! The tests at the end pin three server bugs these clients found (all fixed in the
//! adapter: bytes sent ahead while a response streams are bounded; a stream resumed while
//! its old response is still attached takes it over and the old response ends; the late
//! close of the old response no longer detaches the resumed one).
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/common.rs"]
mod common;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long any one read or write of these clients may wait: a server that hangs fails.
const TIMEOUT: Duration = Duration::from_secs(10);

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn add(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":3}}}}}}"#
    )
}

/// The `slow` tool, reporting progress (it has a progress token).
fn slow(id: u64, seconds: f64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{"seconds":{seconds}}},"_meta":{{"progressToken":{id}}}}}}}"#
    )
}

/// The `slow` tool on the stateless 2026-07-28 revision (no session).
fn slow_stateless(id: u64, seconds: f64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{"seconds":{seconds}}},"_meta":{{"progressToken":{id},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

const STATELESS_HEADERS: &[(&str, &str)] = &[
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "slow"),
];

// ----- the server -----

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start() -> Server {
        Server::start_example("everything_server")
    }

    /// The example `name` (`everything_server`, or `axum_app` with the same application
    /// mounted as a tower service).
    fn start_example(name: &str) -> Server {
        let exe = support::built_example("sansrpc-mcp", name);
        let child = Command::new(exe)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start the {name} example: {e}"));
        // Killed when dropped, also when it never says where it listens.
        let mut server = Server { child, port: 0 };
        // Its stdout is drained, and held open, by the reading thread.
        let stdout = server.child.stdout.take().unwrap();
        let line = common::first_line(stdout, TIMEOUT, "the everything_server listens");
        server.port = line
            .trim()
            .strip_prefix("listening on http://127.0.0.1:")
            .map(|rest| rest.strip_suffix("/mcp").unwrap_or(rest))
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("{line:?}"));
        server
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// A `kB` figure of `/proc/<pid>/status` (`VmHWM`, `VmRSS`), in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status (Linux)");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {status}"))
    }
}

// ----- a small HTTP/1.1 client -----

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn connect(port: u16) -> io::Result<TcpStream> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// One request's bytes: `Host`, and for a POST the MCP `Content-Type` and `Accept`.
fn request(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    match method {
        "POST" => {
            out.push_str("Content-Type: application/json\r\n");
            out.push_str("Accept: application/json, text/event-stream\r\n");
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        "GET" => out.push_str("Accept: text/event-stream\r\n"),
        _ => {}
    }
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// A keep-alive connection.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    port: u16,
}

impl Conn {
    fn open(port: u16) -> io::Result<Conn> {
        Ok(Conn {
            s: connect(port)?,
            buf: Vec::new(),
            port,
        })
    }

    fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &str) -> io::Result<()> {
        self.s.write_all(&request(self.port, method, headers, body))
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        match self.s.read(&mut chunk)? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }

    /// A response's status line and header fields.
    fn head(&mut self) -> io::Result<Reply> {
        let end = loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                break at;
            }
            self.fill()?;
        };
        let text = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end + 4);
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, text.clone()))?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        Ok(Reply {
            status,
            headers,
            body: Vec::new(),
        })
    }

    /// The next chunk of a chunked body; `None` after the last.
    fn chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let line = loop {
            if let Some(at) = find(&self.buf, b"\r\n") {
                break at;
            }
            self.fill()?;
        };
        let size = String::from_utf8_lossy(&self.buf[..line]);
        let size = usize::from_str_radix(size.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        while self.buf.len() < line + 2 + size + 2 {
            self.fill()?;
        }
        let data = self.buf[line + 2..line + 2 + size].to_vec();
        self.buf.drain(..line + 2 + size + 2);
        Ok((size > 0).then_some(data))
    }

    /// The rest of a response whose head was read.
    fn body(&mut self, reply: &mut Reply) -> io::Result<()> {
        if reply.chunked() {
            while let Some(data) = self.chunk()? {
                reply.body.extend_from_slice(&data);
            }
        } else {
            let len: usize = reply
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while self.buf.len() < len {
                self.fill()?;
            }
            reply.body = self.buf.drain(..len).collect();
        }
        Ok(())
    }

    fn call(&mut self, method: &str, headers: &[(&str, &str)], body: &str) -> io::Result<Reply> {
        self.send(method, headers, body)?;
        let mut reply = self.head()?;
        self.body(&mut reply)?;
        Ok(reply)
    }
}

fn session_headers(id: &str) -> [(&str, &str); 2] {
    [
        ("mcp-session-id", id),
        ("mcp-protocol-version", "2025-11-25"),
    ]
}

fn fail(what: impl std::fmt::Display) -> io::Error {
    io::Error::other(what.to_string())
}

/// `initialize` (and `notifications/initialized`) on `conn`: the session id, or the reply
/// that refused it: to `initialize` (503 when the table is full), or 404 to
/// `notifications/initialized` (a full table gave its place to a newer `initialize` while it
/// was in its handshake: a client starts again).
fn initialize(conn: &mut Conn) -> io::Result<Result<String, Reply>> {
    let reply = conn.call("POST", &[], INIT)?;
    let Some(id) = reply.header("mcp-session-id").map(str::to_owned) else {
        return Ok(Err(reply));
    };
    if reply.status != 200 || !reply.text().contains("\"protocolVersion\"") {
        return Ok(Err(reply));
    }
    let done = conn.call("POST", &session_headers(&id), INITIALIZED)?;
    if done.status == 404 {
        return Ok(Err(done));
    }
    if done.status != 202 {
        return Err(fail(format!("notifications/initialized: {done:?}")));
    }
    Ok(Ok(id))
}

/// A new session on a new connection.
fn session(port: u16) -> io::Result<(Conn, String)> {
    let mut conn = Conn::open(port)?;
    match initialize(&mut conn)? {
        Ok(id) => Ok((conn, id)),
        Err(reply) => Err(fail(format!(
            "initialize: {} {}",
            reply.status,
            reply.text()
        ))),
    }
}

/// `tools/call add` 2 + 3 in session `id`: must answer 5.
fn call_add(conn: &mut Conn, id: &str, n: u64) -> io::Result<()> {
    let reply = conn.call("POST", &session_headers(id), &add(n))?;
    if reply.status != 200 || !reply.text().contains(r#""text":"5""#) {
        return Err(fail(format!(
            "tools/call add: {} {}",
            reply.status,
            reply.text()
        )));
    }
    Ok(())
}

fn delete(conn: &mut Conn, id: &str) -> io::Result<u16> {
    Ok(conn.call("DELETE", &session_headers(id), "")?.status)
}

// ----- the well-behaved client -----

#[derive(Debug, Default)]
struct Good {
    /// Full cycles (initialize, initialized, add, DELETE) that succeeded.
    cycles: usize,
    /// `add` calls on the session it holds from the start that succeeded.
    held_calls: usize,
    /// 503s to its `initialize` while the hostile sessions filled the table (retried).
    retried_503: usize,
    failures: Vec<String>,
    slowest: Duration,
}

/// `flood`: while it is set, the session table may be full of hostile sessions: an
/// `initialize` answered 503 is retried (a well-behaved client backs off); at any other time
/// a 503 is a failure. One flag per server: the two tests run side by side in one process
/// (`cargo test`), and one's flood ending must not end the other's.
fn good_cycle(port: u16, n: u64, retried: &mut usize, flood: &AtomicBool) -> io::Result<()> {
    let mut conn = Conn::open(port)?;
    let started = Instant::now();
    let id = loop {
        // The flag is read before the answer: a 503 counts as the flood's only when the
        // flood was already on when it was asked.
        let flooding = flood.load(Ordering::SeqCst);
        match initialize(&mut conn)? {
            Ok(id) => break id,
            Err(reply)
                if matches!(reply.status, 503 | 404)
                    && (flooding || flood.load(Ordering::SeqCst)) =>
            {
                *retried += 1;
                if started.elapsed() > Duration::from_secs(20) {
                    return Err(fail("503 for 20 s"));
                }
                thread::sleep(Duration::from_millis(20));
            }
            Err(reply) => {
                return Err(fail(format!(
                    "initialize: {} {}",
                    reply.status,
                    reply.text()
                )))
            }
        }
    };
    call_add(&mut conn, &id, n)?;
    match delete(&mut conn, &id)? {
        200 => Ok(()),
        status => Err(fail(format!("DELETE: {status}"))),
    }
}

/// Sends on `ready` once it holds its session (and drops it unsent if it cannot get one).
fn good_client(
    port: u16,
    stop: Arc<AtomicBool>,
    flood: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
) -> Good {
    let mut good = Good::default();
    let (mut held, held_id) = match session(port) {
        Ok(session) => session,
        Err(e) => {
            good.failures.push(format!("first session: {e}"));
            return good;
        }
    };
    let _ = ready.send(());
    let mut next = Instant::now();
    let mut n = 10;
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        n += 1;
        match good_cycle(port, n, &mut good.retried_503, &flood) {
            Ok(()) => good.cycles += 1,
            Err(e) => good.failures.push(format!("cycle {n}: {e}")),
        }
        match call_add(&mut held, &held_id, n) {
            Ok(()) => good.held_calls += 1,
            Err(e) => good.failures.push(format!("held session, call {n}: {e}")),
        }
        good.slowest = good.slowest.max(started.elapsed());
        next += Duration::from_millis(200);
        let now = Instant::now();
        if next > now {
            thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    if let Err(e) = delete(&mut held, &held_id) {
        good.failures.push(format!("held session, DELETE: {e}"));
    }
    good
}

// ----- the hostile clients -----

/// Counts of what the server answered, by what was asked.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<String, usize>>);

impl Tally {
    fn add(&self, what: &str, answer: impl std::fmt::Display) {
        *self
            .0
            .lock()
            .unwrap()
            .entry(format!("{what}: {answer}"))
            .or_default() += 1;
    }

    fn get(&self, what: &str, answer: impl std::fmt::Display) -> usize {
        let key = format!("{what}: {answer}");
        self.0.lock().unwrap().get(&key).copied().unwrap_or(0)
    }
}

/// Sends `raw` (ignoring a write the server cut short) and reads the answer's status:
/// `"closed"` when the connection ended (or was reset) without one.
fn refused(port: u16, raw: &[u8]) -> String {
    let mut conn = Conn::open(port).expect("connect");
    let _ = conn.s.write_all(raw);
    match conn.head() {
        Ok(reply) => reply.status.to_string(),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            ) =>
        {
            "closed".to_owned()
        }
        Err(e) => panic!("no answer and no close: {e}"),
    }
}

/// Opens `n` sessions' worth of `initialize` over `threads` keep-alive connections: the
/// ids of those made and the statuses of the others.
fn flood_sessions(port: u16, n: usize, threads: usize, tally: &Tally) -> Vec<String> {
    let made = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for t in 0..threads {
            let (made, tally) = (&made, tally);
            scope.spawn(move || {
                let mut conn = Conn::open(port).expect("connect");
                for _ in (t..n).step_by(threads) {
                    match initialize(&mut conn).expect("an answer to initialize") {
                        Ok(id) => {
                            tally.add("flood initialize", 200);
                            made.lock().unwrap().push(id);
                        }
                        Err(reply) => tally.add("flood initialize", reply.status),
                    }
                }
            });
        }
    });
    made.into_inner().unwrap()
}

fn delete_all(port: u16, ids: &[String], threads: usize, tally: &Tally) {
    thread::scope(|scope| {
        for part in ids.chunks(ids.len().div_ceil(threads).max(1)) {
            scope.spawn(move || {
                let mut conn = Conn::open(port).expect("connect");
                for id in part {
                    let status = delete(&mut conn, id).expect("an answer to DELETE");
                    tally.add("flood DELETE", status);
                }
            });
        }
    });
}

/// A GET of session `id` with `Last-Event-ID: value`: the status, and for a stream its
/// first event (the priming one), read before the connection is dropped.
fn get_with_last_event_id(port: u16, id: &str, value: &[u8]) -> (u16, String) {
    let mut raw = request(port, "GET", &session_headers(id), "");
    raw.truncate(raw.len() - 2);
    raw.extend_from_slice(b"Last-Event-ID: ");
    raw.extend_from_slice(value);
    raw.extend_from_slice(b"\r\n\r\n");
    let mut conn = Conn::open(port).expect("connect");
    conn.s.write_all(&raw).expect("send the GET");
    let mut reply = conn.head().expect("an answer to the GET");
    if reply.status == 200 {
        assert_eq!(
            reply.header("content-type"),
            Some("text/event-stream"),
            "{reply:?}"
        );
        let first = conn.chunk().expect("the priming event").unwrap_or_default();
        return (200, String::from_utf8_lossy(&first).into_owned());
    }
    conn.body(&mut reply).expect("the refusal's body");
    (reply.status, reply.text())
}

/// The ids (`stream.seq`) of the SSE events in `text`.
fn event_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .collect()
}

/// A `slow` call of `seconds` in session `id`, read up to its first progress event: the
/// connection, the stream's number and what was read.
fn live_slow_stream(port: u16, id: &str, n: u64, seconds: f64) -> (Conn, String, String) {
    let mut conn = Conn::open(port).unwrap();
    conn.send("POST", &session_headers(id), &slow(n, seconds))
        .unwrap();
    let head = conn.head().unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    assert!(head.chunked(), "an SSE response: {head:?}");
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        seen.push_str(&String::from_utf8_lossy(&conn.chunk().unwrap().unwrap()));
    }
    let first = event_ids(&seen)
        .first()
        .cloned()
        .expect("a priming event id");
    let stream = first.split('.').next().unwrap().to_owned();
    (conn, stream, seen)
}

/// A GET of session `id` resuming after `last` (`Last-Event-ID`), sent on a new connection.
fn resume(port: u16, id: &str, last: &str) -> Conn {
    let mut raw = request(port, "GET", &session_headers(id), "");
    raw.truncate(raw.len() - 2);
    raw.extend_from_slice(format!("Last-Event-ID: {last}\r\n\r\n").as_bytes());
    let mut conn = Conn::open(port).unwrap();
    conn.s.write_all(&raw).unwrap();
    conn
}

/// How a response read with `conn` goes on: `"ended"` (its last chunk), `"closed"`, or
/// `"hangs"` (nothing for `wait`); what it carried is appended to `text`.
fn rest_of(conn: &mut Conn, wait: Duration, text: &mut String) -> &'static str {
    conn.s.set_read_timeout(Some(wait)).unwrap();
    loop {
        match conn.chunk() {
            Ok(Some(data)) => text.push_str(&String::from_utf8_lossy(&data)),
            Ok(None) => return "ended",
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return "hangs"
            }
            Err(_) => return "closed",
        }
    }
}

#[test]
fn hostile_clients_neither_starve_a_good_one_nor_grow_the_server() {
    hostile_clients_against(Server::start());
}

#[test]
fn hostile_clients_neither_starve_a_good_one_nor_grow_the_mounted_service() {
    hostile_clients_against(Server::start_example("axum_app"));
}

fn hostile_clients_against(mut server: Server) {
    let test_started = Instant::now();
    let port = server.port;
    let baseline_kib = server.status_kib("VmRSS");
    let tally = Tally::default();

    let stop = Arc::new(AtomicBool::new(false));
    let flood = Arc::new(AtomicBool::new(false));
    let (ready, has_session) = mpsc::channel();
    let good = {
        let (stop, flood) = (Arc::clone(&stop), Arc::clone(&flood));
        thread::spawn(move || good_client(port, stop, flood, ready))
    };
    match has_session.recv_timeout(TIMEOUT) {
        // Disconnected: it got no session; its report says why, and fails the test below.
        Ok(()) | Err(RecvTimeoutError::Disconnected) => {}
        Err(RecvTimeoutError::Timeout) => panic!("the good client has no session in {TIMEOUT:?}"),
    }
    // Sockets the hostile clients hold, unread, to the end.
    let mut held: Vec<TcpStream> = Vec::new();

    // 1. Never-read SSE streams: 50 `slow` calls of 5 s in one session, each on its own
    // connection, and the session's GET stream; 10 stateless ones; none ever read.
    let (_hostile, hostile_id) = session(port).expect("the hostile session");
    for i in 0..50 {
        let mut conn = Conn::open(port).expect("connect");
        conn.send("POST", &session_headers(&hostile_id), &slow(100 + i, 5.0))
            .expect("send slow");
        held.push(conn.s);
    }
    let mut get = Conn::open(port).expect("connect");
    get.send("GET", &session_headers(&hostile_id), "")
        .expect("send GET");
    let get_stream = held.len();
    held.push(get.s);
    for i in 0..10 {
        let mut conn = Conn::open(port).expect("connect");
        conn.send("POST", STATELESS_HEADERS, &slow_stateless(200 + i, 5.0))
            .expect("send stateless slow");
        held.push(conn.s);
    }
    // The same calls, read: they are what the unread ones are (SSE with progress).
    let (mut reader, reader_id) = session(port).expect("a session");
    let read = reader
        .call("POST", &session_headers(&reader_id), &slow(300, 0.5))
        .expect("slow, read");
    assert_eq!(read.status, 200, "{read:?}");
    assert!(read.text().contains("notifications/progress"), "{read:?}");
    assert!(read.text().contains("slept 0.5 s"), "{read:?}");
    let read = Conn::open(port)
        .unwrap()
        .call("POST", STATELESS_HEADERS, &slow_stateless(301, 0.5))
        .expect("stateless slow, read");
    assert_eq!(read.status, 200, "{read:?}");
    assert!(read.text().contains("notifications/progress"), "{read:?}");
    let never_read = held.len();

    // 2. Huge and garbage `Last-Event-ID`s. First a live stream to resume: a `slow` call
    // of 3 s read up to its first progress event, then dropped.
    let (mut cut, live_stream, seen) = live_slow_stream(port, &reader_id, 400, 3.0);
    // Closed, and the server done with it before going on: it closes its side only after
    // it detached the stream. (Resuming before that loses the stream: the bug shown by
    // `a_resumed_stream_survives_the_close_of_its_old_response` below.)
    cut.s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut ignored = String::new();
    assert_ne!(rest_of(&mut cut, TIMEOUT, &mut ignored), "hangs");
    drop(cut);
    // Another session naming it must not get it.
    let (other, other_id) = session(port).expect("a session");
    let (status, first) =
        get_with_last_event_id(port, &other_id, format!("{live_stream}.0").as_bytes());
    tally.add("GET Last-Event-ID of another session's stream", status);
    assert_eq!(status, 200, "{first}");
    assert!(
        event_ids(&first)
            .iter()
            .all(|id| !id.starts_with(&format!("{live_stream}."))),
        "another session's stream was resumed: {first}"
    );
    // The live stream resumed from a sequence number past its end: nothing replayed
    // twice, and the call's answer still arrives.
    let mut resumed = resume(
        port,
        &reader_id,
        &format!("{live_stream}.18446744073709551615"),
    );
    let mut rest = resumed.head().unwrap();
    tally.add("GET Last-Event-ID live stream.u64::MAX", rest.status);
    assert_eq!(rest.status, 200, "{rest:?}");
    resumed.body(&mut rest).expect("the resumed stream ends");
    assert!(rest.text().contains("slept 3 s"), "{}", rest.text());
    let replayed = event_ids(&rest.text());
    assert!(
        event_ids(&seen)[1..]
            .iter()
            .all(|id| !replayed.contains(id)),
        "replayed what was seen: {seen} then {}",
        rest.text()
    );

    let garbage: Vec<(&str, Vec<u8>)> = vec![
        (
            "30 KiB",
            format!("{}.{}", "9".repeat(15 * 1024), "9".repeat(15 * 1024)).into_bytes(),
        ),
        ("30 KiB no dot", "7".repeat(30 * 1024).into_bytes()),
        (
            "999999999999999999999.1",
            b"999999999999999999999.1".to_vec(),
        ),
        (
            "u64::MAX.u64::MAX",
            b"18446744073709551615.18446744073709551615".to_vec(),
        ),
        ("u64::MAX+1.0", b"18446744073709551616.0".to_vec()),
        ("non-numeric", b"banana".to_vec()),
        ("dots", b"...".to_vec()),
        ("negative", b"-1.-1".to_vec()),
        ("empty", Vec::new()),
        ("not UTF-8", b"\xff\xfe.\x80".to_vec()),
        ("spaces", b"   1 . 1   ".to_vec()),
    ];
    for round in 0..5 {
        for (label, value) in &garbage {
            for id in [&reader_id, &other_id] {
                let (status, text) = get_with_last_event_id(port, id, value);
                tally.add(&format!("GET Last-Event-ID {label}"), status);
                assert!(
                    status == 200 || (400..500).contains(&status),
                    "round {round}, {label}: {status} {text}"
                );
            }
        }
    }

    // 3. Header floods, stalled heads and bodies.
    let big_value = request(port, "POST", &[("X-Flood", &"a".repeat(60 * 1024))], INIT);
    let fields: Vec<(String, String)> = (0..60)
        .map(|i| (format!("X-Flood-{i}"), "b".repeat(1024)))
        .collect();
    let fields: Vec<(&str, &str)> = fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let many_big = request(port, "POST", &fields, INIT);
    let names: Vec<String> = (0..100).map(|i| format!("X-Field-{i}")).collect();
    let hundred: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "c")).collect();
    let hundred = request(port, "POST", &hundred, INIT);
    for round in 0..20 {
        for (label, raw) in [
            ("60 KiB header value", &big_value),
            ("60 header fields of 1 KiB", &many_big),
            ("100 header fields", &hundred),
        ] {
            let answer = refused(port, raw);
            tally.add(label, &answer);
            assert!(
                answer == "431" || answer == "closed",
                "round {round}, {label}: {answer}"
            );
        }
    }
    let too_long = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        5 << 20
    );
    let answer = refused(port, too_long.as_bytes());
    tally.add("Content-Length 5 MiB", &answer);
    assert_eq!(answer, "413");
    // Fields within the bounds are served: 50 extra ones.
    let fifty: Vec<(&str, &str)> = names[..50].iter().map(|n| (n.as_str(), "d")).collect();
    let mut conn = Conn::open(port).unwrap();
    let reply = conn.call("POST", &fifty, INIT).unwrap();
    tally.add("initialize with 50 extra header fields", reply.status);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        delete(&mut conn, reply.header("mcp-session-id").unwrap()).unwrap(),
        200
    );
    // Heads never finished, and bodies stalled one byte short (each costs the server its
    // buffer: 32 KiB of head, up to 4 MiB of body).
    for i in 0..20 {
        let mut s = connect(port).unwrap();
        let partial = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow-{i}: ");
        s.write_all(partial.as_bytes()).unwrap();
        s.write_all(&[b'e'; 30 * 1024]).unwrap();
        held.push(s);
    }
    for _ in 0..4 {
        let mut s = connect(port).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            4 << 20
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&vec![b' '; (4 << 20) - 1]).unwrap();
        held.push(s);
    }

    // 4. Many sessions: 1,500 initializes over 6 keep-alive connections; past 1024
    // sessions (the good client's and the hostile ones above included) they are 503.
    flood.store(true, Ordering::SeqCst);
    let flood_started = Instant::now();
    let made = flood_sessions(port, 1500, 6, &tally);
    let flood_time = flood_started.elapsed();
    let mut probe = Conn::open(port).unwrap();
    let full = initialize(&mut probe).unwrap();
    let full_status = full.as_ref().map_or_else(|r| r.status, |_| 200);
    tally.add("initialize with the table full", full_status);
    // 503, or 404 to its `notifications/initialized` when the good client's own cycle,
    // running beside it, took the place the probe had in its handshake: full either way.
    assert!(
        matches!(full_status, 503 | 404),
        "the table is full: {full:?}"
    );
    delete_all(port, &made, 6, &tally);
    flood.store(false, Ordering::SeqCst);
    let ok = tally.get("flood initialize", 200);
    let unavailable = tally.get("flood initialize", 503);
    // Displaced in their handshake by a concurrent `initialize` when the table was full
    // (at most one per flooding connection at a time; each gave its place to another).
    let displaced = tally.get("flood initialize", 404);
    assert_eq!(ok, made.len());
    assert_eq!(
        ok + unavailable + displaced,
        1500,
        "only 200s, 503s and 404s"
    );
    // The table held the hostile, reader and other sessions and the good client's one
    // (and maybe the one of its cycle).
    assert!((1019..=1020).contains(&ok), "{ok} sessions made");
    assert!(
        unavailable + displaced >= 1500 - 1024,
        "{unavailable} 503s, {displaced} 404s"
    );
    assert_eq!(tally.get("flood DELETE", 200), ok);
    // The table has room again.
    let (mut again, again_id) = session(port).expect("a session after the flood");
    call_add(&mut again, &again_id, 7).expect("add after the flood");
    assert_eq!(delete(&mut again, &again_id).unwrap(), 200);

    // 5. The never-read calls run their course (each ends with its answer, "slept 5 s");
    // their responses wait unread: looked at in the socket's buffer, never taken from it.
    let ran_its_course = |s: &TcpStream| {
        let mut buffered = vec![0u8; 64 << 10];
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        s.peek(&mut buffered)
            .is_ok_and(|n| find(&buffered[..n], b"slept 5 s").is_some())
    };
    common::wait_until(
        Duration::from_secs(30),
        "every never-read `slow` call answered",
        || {
            held[..never_read]
                .iter()
                .enumerate()
                .all(|(i, s)| i == get_stream || ran_its_course(s))
        },
    );
    let mut answered = 0;
    for s in &held[..never_read] {
        let mut peeked = [0u8; 16];
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        if s.peek(&mut peeked)
            .is_ok_and(|n| peeked[..n].starts_with(b"HTTP/1.1 200"))
        {
            answered += 1;
        }
    }
    assert_eq!(
        answered, never_read,
        "every never-read stream was answered 200"
    );

    assert!(server.alive(), "the server died");
    let peak_kib = server.status_kib("VmHWM");
    let rss_kib = server.status_kib("VmRSS");
    stop.store(true, Ordering::SeqCst);
    let good = good.join().expect("the good client");
    drop(held);
    drop(other);
    drop(reader);
    assert!(server.alive(), "the server died");

    let elapsed = test_started.elapsed();
    eprintln!(
        "hostile: {elapsed:.1?} in all; flood of 1500 initializes {flood_time:.1?}; RSS {baseline_kib} KiB at start, {rss_kib} KiB at the end, peak {peak_kib} KiB"
    );
    for (what, count) in tally.0.lock().unwrap().iter() {
        eprintln!("  {what} x{count}");
    }
    eprintln!("  good client: {good:?}");
    assert!(
        good.failures.is_empty(),
        "the good client failed: {good:#?}"
    );
    assert!(good.cycles >= 20, "too few good cycles: {good:?}");
    assert_eq!(good.held_calls, good.cycles);
    // Measured (debug build, Linux x86-64, 2 CPUs): a peak of 35.7 MiB (35,724 to 35,908
    // KiB over five runs), from 5 to 6 MiB at start; 16 MiB of it are the four stalled
    // 4 MiB bodies. The bound is about twice that.
    const PEAK_BOUND_KIB: u64 = 72 << 10;
    assert!(
        peak_kib < PEAK_BOUND_KIB,
        "peak RSS {peak_kib} KiB over {PEAK_BOUND_KIB} KiB"
    );
}

// ----- server bugs these clients found (fixed; these keep them fixed) -----

/// Was a bug: an SSE answer to an HTTP/1.0 request (what nginx sends upstream by default,
/// `proxy_http_version 1.0`) was sent with `Transfer-Encoding: chunked`, which HTTP/1.0 does
/// not have (RFC 9112 §6.1): the client read the chunk-size lines as event data. Fixed: the
/// events go out unframed and the connection's close ends them.
#[test]
fn an_sse_answer_to_http_1_0_ends_with_the_close() {
    let server = Server::start();
    let port = server.port;
    let (_conn, id) = session(port).expect("a session");
    let mut raw = request(port, "POST", &session_headers(&id), &slow(7, 1.5));
    raw.splice(
        ..b"POST /mcp HTTP/1.1".len(),
        b"POST /mcp HTTP/1.0".iter().copied(),
    );
    // Asks to be kept alive, as HTTP/1.0 clients may: still closed after the answer.
    let at = find(&raw, b"\r\n\r\n").unwrap();
    raw.splice(at..at, b"\r\nConnection: keep-alive".iter().copied());
    let mut s = connect(port).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&raw).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all)
        .expect("the answer, ended by the close");
    let text = String::from_utf8_lossy(&all);
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    // Only events: the progress, then the answer, with no chunk framing between.
    let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(
        events.iter().all(|e| e.lines().all(|l| l.starts_with("id:")
            || l.starts_with("event:")
            || l.starts_with("data:")
            || l.starts_with("retry:")
            || l.starts_with(':'))),
        "{body}"
    );
    assert!(body.contains("notifications/progress"), "{body}");
    assert!(body.contains(r#"slept 1.5 s"}]},"id":7}"#), "{body}");
}

/// Was a bug: a request refused from its head (413 for a body over the limit) was answered
/// and the socket closed at once with the body still arriving: closing with unread input
/// resets the connection, so a client that writes its whole body before reading (as most
/// HTTP libraries do without `Expect: 100-continue`) had its write fail (a broken pipe or a
/// reset) and reported that instead of the 413. Fixed: the server closes its side, then
/// reads and drops what the client still sends, for a second at most (RFC 9112 §9.6).
#[test]
fn a_refused_body_is_read_so_its_refusal_arrives() {
    let server = Server::start();
    let port = server.port;
    for round in 0..3 {
        let mut conn = Conn::open(port).unwrap();
        // More than the sockets' buffers hold between them (4 MiB and 6 MiB at most).
        let body = vec![b' '; 16 << 20];
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        // As a simple client does: the whole request written, then the answer read.
        conn.s.write_all(head.as_bytes()).unwrap();
        let sent = conn.s.write_all(&body);
        assert!(
            sent.is_ok(),
            "round {round}: the body's write failed: {sent:?}"
        );
        match conn.head() {
            Ok(reply) => assert_eq!(reply.status, 413, "round {round}: {reply:?}"),
            Err(e) => panic!("round {round}: no 413 but {e} (the body's write: {sent:?})"),
        }
    }
}

/// Was a bug: the bytes a client sends on a connection whose SSE response is open (a GET stream,
/// a POST answered with SSE) are appended to the connection's input without bound while
/// the response lasts ("a pipelined next request: kept for after this response", in
/// `write_stream` of adapters/tokio/src/mcp.rs); a GET stream lasts as long as the client
/// likes. Measured: 512 MiB sent behind one GET stream in 1.9 s took the server from 7 MiB
/// to 519 MiB of RSS. Fixed: past 64 KiB sent ahead the client is cut off.
#[test]
fn bytes_sent_behind_an_open_sse_response_are_bounded() {
    let mut server = Server::start();
    let port = server.port;
    let (mut conn, id) = session(port).expect("a session");
    let mut get = Conn::open(port).unwrap();
    get.send("GET", &session_headers(&id), "").unwrap();
    let head = get.head().unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    let before = server.status_kib("VmRSS");
    let junk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    for _ in 0..256 {
        // A server that stops reading (its buffer full) or closes is what is wanted.
        if get.s.write_all(&junk).is_err() {
            break;
        }
        sent += 1;
    }
    // No wait for the server to take in what was sent: a write returns once the server
    // has read all but what the socket buffers hold, so 256 MiB read is already in its
    // peak. The session is still served: a round trip on its own connection.
    call_add(&mut conn, &id, 2).expect("the session is served after the junk");
    assert!(server.alive(), "the server died");
    let grown = server.status_kib("VmHWM").saturating_sub(before);
    assert!(
        grown < 32 << 10,
        "{sent} MiB sent behind one GET stream grew the server by {grown} KiB"
    );
}

/// Was a bug: `GET` with `Last-Event-ID` naming a stream of the session that another response is
/// still writing takes the stream over (src/streamable/mod.rs: `Server::get` then `resume`
/// check the stream's session but not that it is attached, where a plain GET of an attached
/// GET stream is 409), and the first response never gets another byte nor its end: its
/// writer waits on a wake-up the adapter no longer sends (adapters/tokio/src/mcp.rs: the
/// `waiting` entry of the stream now names the new response's writer). It hangs until its
/// client gives up. Fixed: the newer response takes the stream over and the first one ends
/// (the adapter knows which response writes each stream).
#[test]
fn resuming_an_attached_stream_does_not_orphan_its_first_response() {
    let mut server = Server::start();
    let port = server.port;
    let (_conn, id) = session(port).expect("a session");
    let (mut first, stream, mut seen) = live_slow_stream(port, &id, 5, 2.0);
    let mut second = resume(port, &id, &format!("{stream}.0"));
    let mut reply = second.head().unwrap();
    second.body(&mut reply).unwrap();
    assert!(
        reply.status == 409 || reply.status == 200,
        "{} {}",
        reply.status,
        reply.text()
    );
    // The first response ends: with the call's answer (the resumption was refused), or cut
    // (it was taken over); either way within the call's 2 s and some.
    let first_goes = rest_of(&mut first, Duration::from_secs(5), &mut seen);
    assert!(server.alive(), "the server died");
    assert_ne!(
        first_goes, "hangs",
        "the first response of stream {stream} got nothing more and no end after a \
         resumption answered {}",
        reply.status
    );
}

/// Was a bug: a client that lost its response and resumes the stream (`Last-Event-ID`) before
/// the server has seen the old connection close (a dropped network path: the close may
/// come much later, or the client is just quick) loses the stream again when that close
/// comes: the old response's close detaches the stream from the new response (adapters/
/// tokio/src/mcp.rs `closed` → src/streamable/mod.rs `Server::handle_stream_closed`, which
/// cannot tell which response of the stream closed) and removes the new writer's wake-up
/// (`write_stream`'s `waiting.remove(&stream)`). The resumed response then gets nothing
/// more, not the call's answer, no keep-alive, no end: it hangs. Seen at random in the
/// hostile test above before it waited for the server to close the old connection. Fixed:
/// only the response that writes a stream now may close it.
#[test]
fn a_resumed_stream_survives_the_close_of_its_old_response() {
    let mut server = Server::start();
    let port = server.port;
    let (_conn, id) = session(port).expect("a session");
    let (old, stream, seen) = live_slow_stream(port, &id, 5, 3.0);
    let last = event_ids(&seen).last().cloned().unwrap();
    let mut new = resume(port, &id, &last);
    let head = new.head().unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    // The resumption is in (its head came) and its response writes (a first event came
    // through it): the old connection's close reaches the server after that.
    let first = new
        .chunk()
        .unwrap()
        .expect("an event on the resumed stream");
    let mut text = String::from_utf8_lossy(&first).into_owned();
    drop(old);
    let goes = rest_of(&mut new, Duration::from_secs(5), &mut text);
    assert!(server.alive(), "the server died");
    assert!(
        goes == "ended" && text.contains("slept 3 s"),
        "stream {stream} resumed after {last}: the response {goes} without the answer: {text}"
    );
}

/// Was the lockout of issue 48: `initialize` requests that never finish the handshake filled
/// the session table (1,024), and every new client got 503 until the idle timeout (10
/// min). Now a full table evicts the oldest session still in its handshake: 5,000 of them
/// from one address, over 4 keep-alive connections, are each answered 200 (each evicting
/// the oldest once the table is full), and a well-behaved client is then served at once.
#[test]
fn half_open_sessions_do_not_lock_a_good_client_out() {
    let mut server = Server::start();
    let port = server.port;
    let baseline_kib = server.status_kib("VmRSS");
    let started = Instant::now();
    let tally = Tally::default();
    thread::scope(|scope| {
        for t in 0..4 {
            let tally = &tally;
            scope.spawn(move || {
                let mut conn = Conn::open(port).expect("connect");
                for _ in (t..5000).step_by(4) {
                    let reply = conn.call("POST", &[], INIT).expect("an answer");
                    // A 200 counts only with the new session's id.
                    let named = reply.header("mcp-session-id").is_some();
                    let status = if named { reply.status } else { 0 };
                    tally.add("half-open initialize", status);
                }
            });
        }
    });
    let flood = started.elapsed();
    assert_eq!(
        tally.get("half-open initialize", 200),
        5000,
        "every half-open initialize was served: {:?}",
        tally.0.lock().unwrap()
    );
    // The good client, at once: no 503, no retry.
    let good_started = Instant::now();
    let (mut conn, id) = session(port).expect("a session right after the flood");
    call_add(&mut conn, &id, 2).expect("add right after the flood");
    let good = good_started.elapsed();
    assert_eq!(delete(&mut conn, &id).unwrap(), 200);
    assert!(server.alive(), "the server died");
    let peak_kib = server.status_kib("VmHWM");
    let rss_kib = server.status_kib("VmRSS");
    eprintln!(
        "half-open flood: 5000 initializes in {flood:.1?}; then the good client's initialize + add in {good:.1?}; RSS {baseline_kib} KiB at start, {rss_kib} KiB at the end, peak {peak_kib} KiB"
    );
}
