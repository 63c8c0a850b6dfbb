//! The robustness cases: a connection abuses the server (a request flood it never reads, a
//! WebSocket ping flood, slowloris) while a second connection calls and measures; each
//! reports whether the other client stayed served and whether the abusive connection was
//! closed. Needs nothing from the server but its sockets; each case lasts a few seconds.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use sansrpc::codec::{self, Framing};

use super::cases::{Section, UNKNOWN};
use super::{CaseResult, Failure};
use crate::target::Kind;

/// How long each abuse lasts.
const ABUSE: Duration = Duration::from_secs(3);
/// How long after the abuse the abusive connection may take to be closed: the network
/// defaults of the partial-frame and write-stall timeouts (30 s, what sansrpc's servers and
/// many others use), and 5 s for the kernel's buffers to fill and the close to arrive. A
/// server with shorter timeouts is done sooner: the case ends once the abuser is closed.
const CLOSE_WAIT: Duration = Duration::from_secs(
    max(
        sansrpc::connection::NETWORK_FRAME_TIMEOUT.as_secs(),
        sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT.as_secs(),
    ) + 5,
);

const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}
/// Time between the measuring client's calls.
const PACE: Duration = Duration::from_millis(100);

/// A socket of the target: TCP (also for WebSocket and HTTP) or Unix.
enum Sock {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Sock {
    fn timeouts(&self, read: Duration, write: Duration) {
        let _ = match self {
            Sock::Tcp(s) => s
                .set_read_timeout(Some(read))
                .and_then(|()| s.set_write_timeout(Some(write))),
            #[cfg(unix)]
            Sock::Unix(s) => s
                .set_read_timeout(Some(read))
                .and_then(|()| s.set_write_timeout(Some(write))),
        };
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `host:port` of a `ws://` or `http://` URL.
pub(super) fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

fn connect(kind: &Kind) -> std::io::Result<Sock> {
    match kind {
        Kind::Tcp(addr) => TcpStream::connect(addr).map(Sock::Tcp),
        Kind::Ws(url) | Kind::Http(url) => TcpStream::connect(authority(url)).map(Sock::Tcp),
        #[cfg(unix)]
        Kind::Unix(path) => std::os::unix::net::UnixStream::connect(path).map(Sock::Unix),
        _ => Err(ErrorKind::Unsupported.into()),
    }
}

/// A WebSocket connection by hand (the abuser writes raw frames).
fn ws_upgrade(url: &str) -> std::io::Result<Sock> {
    let mut sock = TcpStream::connect(authority(url)).map(Sock::Tcp)?;
    sock.timeouts(Duration::from_secs(2), Duration::from_secs(2));
    let head = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        authority(url)
    );
    sock.write_all(head.as_bytes())?;
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        sock.read_exact(&mut byte)?;
        seen.push(byte[0]);
    }
    if !seen.starts_with(b"HTTP/1.1 101") {
        return Err(std::io::Error::other("the upgrade was refused"));
    }
    Ok(sock)
}

/// A masked client frame.
fn ws_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let key = [0x5a, 0x17, 0xc3, 0x08];
    frame.extend_from_slice(&key);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    frame
}

fn request(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{UNKNOWN}"}}"#)
}

/// The measuring client: one connection kept (a new one per call over HTTP).
struct Meter {
    kind: Kind,
    framing: Framing,
    timeout: Duration,
    ws: Option<tungstenite::WebSocket<TcpStream>>,
    sock: Option<Sock>,
    next: u64,
    served: u32,
    failed: u32,
    slowest: Duration,
}

impl Meter {
    fn new(kind: &Kind, framing: Framing, timeout: Duration) -> Meter {
        Meter {
            kind: kind.clone(),
            framing,
            timeout,
            ws: None,
            sock: None,
            next: 1,
            served: 0,
            failed: 0,
            slowest: Duration::ZERO,
        }
    }

    /// One call; counts it served when its answer (any, with its id) came in time.
    fn call(&mut self) {
        let started = Instant::now();
        self.next += 1;
        let ok = self.try_call(self.next).is_ok();
        if ok {
            self.served += 1;
            self.slowest = self.slowest.max(started.elapsed());
        } else {
            self.failed += 1;
            self.ws = None;
            self.sock = None;
        }
    }

    fn try_call(&mut self, id: u64) -> std::io::Result<()> {
        let body = request(id);
        let marker = format!("\"id\":{id}");
        match &self.kind {
            Kind::Ws(url) => {
                if self.ws.is_none() {
                    let stream = TcpStream::connect(authority(url))?;
                    stream.set_read_timeout(Some(self.timeout))?;
                    let (ws, _) = tungstenite::client::client(url.as_str(), stream)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    self.ws = Some(ws);
                }
                let ws = self.ws.as_mut().expect("connected above");
                let other = |e: tungstenite::Error| std::io::Error::other(e.to_string());
                ws.send(tungstenite::Message::text(body)).map_err(other)?;
                loop {
                    if let tungstenite::Message::Text(t) = ws.read().map_err(other)? {
                        if t.replace(' ', "").contains(&marker) {
                            return Ok(());
                        }
                    }
                }
            }
            Kind::Http(url) => {
                let mut sock = connect(&self.kind)?;
                sock.timeouts(self.timeout, self.timeout);
                let post = format!(
                    "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    authority(url),
                    body.len()
                );
                sock.write_all(post.as_bytes())?;
                read_until(&mut sock, &marker)
            }
            _ => {
                if self.sock.is_none() {
                    let sock = connect(&self.kind)?;
                    sock.timeouts(self.timeout, self.timeout);
                    self.sock = Some(sock);
                }
                let sock = self.sock.as_mut().expect("connected above");
                let mut frame = Vec::new();
                codec::encode_frame(self.framing, body.as_bytes(), &mut frame);
                sock.write_all(&frame)?;
                read_until(sock, &marker)
            }
        }
    }
}

fn read_until(sock: &mut Sock, marker: &str) -> std::io::Result<()> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        seen.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&seen)
            .replace(' ', "")
            .contains(marker)
        {
            return Ok(());
        }
    }
}

/// What an abuser does each turn; true once the server closed its connection.
type Abuse = Box<dyn FnMut() -> bool>;

/// Runs `abuse` for [`ABUSE`] (then up to `close_wait` more until closed) while the meter
/// calls; the case passes when every call was served and, if `must_close`, the abuser was
/// closed.
fn measure(
    meter: &mut Meter,
    mut abuse: Abuse,
    must_close: bool,
    close_wait: Duration,
) -> (bool, String) {
    let started = Instant::now();
    let mut next_call = started;
    let mut closed = None;
    while started.elapsed() < ABUSE + close_wait {
        if closed.is_none() && abuse() {
            closed = Some(started.elapsed());
        }
        if (closed.is_some() || !must_close) && started.elapsed() >= ABUSE {
            break;
        }
        if Instant::now() >= next_call {
            meter.call();
            next_call = Instant::now() + PACE;
        }
    }
    let (served, failed, slowest) = (meter.served, meter.failed, meter.slowest);
    let closed_text = match closed {
        Some(at) => format!("the abusive connection was closed after {at:.1?}"),
        None => format!(
            "the abusive connection was still open after {:?}",
            ABUSE + close_wait
        ),
    };
    let why = format!(
        "the other client: {served} calls served, {failed} failed, slowest {slowest:.1?}; {closed_text}"
    );
    let ok = failed == 0 && served > 0 && (closed.is_some() || !must_close);
    (ok, why)
}

/// Writes `bytes` once (a short write timeout); true when the connection is gone.
fn write_gone(sock: &mut Sock, bytes: &[u8]) -> bool {
    match sock.write(bytes) {
        Ok(n) => n == 0,
        Err(e) => !matches!(
            e.kind(),
            ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
        ),
    }
}

/// True when `e` says nothing accepts connections at the address: the server is not
/// there (gone), which is no fault of the case that tried.
fn refused(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::NotFound | ErrorKind::AddrNotAvailable
    )
}

/// The robustness cases for `kind` (none over stdio: there is one connection), required
/// when `strict`; an abuser may stay open `close_wait` after its abuse ([`CLOSE_WAIT`] when
/// `None`). With `not_run` (why the run ended early), none is run: each is reported not
/// run, as one whose connection is refused.
pub fn run(
    kind: &Kind,
    framing: Framing,
    timeout: Duration,
    strict: bool,
    close_wait: Option<Duration>,
    not_run: Option<String>,
) -> Vec<CaseResult> {
    let close_wait = close_wait.unwrap_or(CLOSE_WAIT);
    let mut results = Vec::new();
    if matches!(kind, Kind::Stdio(_)) {
        return results;
    }
    let mut add = |id: &str,
                   title: &str,
                   expected: &str,
                   run: &mut dyn FnMut() -> std::io::Result<(bool, String)>| {
        let outcome = match &not_run {
            Some(why) => Err(std::io::Error::new(
                ErrorKind::ConnectionRefused,
                why.clone(),
            )),
            None => run(),
        };
        let (failure, why) = match outcome {
            Ok((true, why)) => (None, why),
            Ok((false, why)) => (Some(Failure::Dead), why),
            // Nothing accepts the connection: the server is not there, so the case could
            // not run; that is no advice about how the server treats an abuser.
            Err(e) if refused(&e) => (
                Some(Failure::NotRun),
                match &not_run {
                    Some(why) => format!("not run: {why}"),
                    None => format!("not run: the server refuses connections ({e})"),
                },
            ),
            Err(e) => (Some(Failure::Dead), format!("could not start: {e}")),
        };
        results.push(CaseResult {
            id: id.into(),
            section: Section::Robustness,
            title: title.into(),
            required: strict,
            expected: expected.into(),
            failure,
            why,
            sent: Vec::new(),
            received: Vec::new(),
        });
    };
    let meter = |k: &Kind| Meter::new(k, framing, timeout);
    let served = "every call of another client answered; the abusive connection closed";
    if !matches!(kind, Kind::Http(_)) {
        let mut outcome = || {
            let mut sock = match kind {
                Kind::Ws(url) => ws_upgrade(url)?,
                _ => connect(kind)?,
            };
            sock.timeouts(Duration::from_millis(50), Duration::from_millis(50));
            let mut burst = Vec::new();
            for id in 0..64 {
                let body = request(1_000_000 + id);
                match kind {
                    Kind::Ws(_) => burst.extend(ws_frame(0x1, body.as_bytes())),
                    _ => codec::encode_frame(framing, body.as_bytes(), &mut burst),
                }
            }
            let abuse: Abuse = Box::new(move || write_gone(&mut sock, &burst));
            Ok(measure(&mut meter(kind), abuse, true, close_wait))
        };
        add(
            "flood-without-reading",
            "a peer sending requests and never reading its answers",
            served,
            &mut outcome,
        );
    }
    if let Kind::Ws(url) = kind {
        let mut outcome = || {
            let mut sock = ws_upgrade(url)?;
            sock.timeouts(Duration::from_millis(50), Duration::from_millis(50));
            let pings: Vec<u8> = (0..64).flat_map(|_| ws_frame(0x9, &[b'p'; 125])).collect();
            let abuse: Abuse = Box::new(move || write_gone(&mut sock, &pings));
            Ok(measure(&mut meter(kind), abuse, false, close_wait))
        };
        add(
            "ping-flood",
            "a WebSocket peer sending pings and never reading the pongs",
            "every call of another client answered (closing the abuser is optional)",
            &mut outcome,
        );
    }
    let mut outcome = || {
        let mut sock = connect(kind)?;
        // A header value or a message body that never ends.
        let (start, trickle): (&[u8], &[u8]) = match kind {
            Kind::Ws(_) => (b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"a"),
            Kind::Http(_) => (b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"a"),
            _ if framing == Framing::ContentLength => (b"Content-Length: 100\r\n\r\n{", b" "),
            _ => (b"{\"jsonrpc\":", b" "),
        };
        sock.write_all(start)?;
        sock.timeouts(Duration::from_millis(20), Duration::from_millis(20));
        let mut last = Instant::now();
        let abuse: Abuse = Box::new(move || {
            let mut buf = [0u8; 1024];
            match sock.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => return true,
            }
            // One byte every 500 ms: never a whole message.
            if last.elapsed() >= Duration::from_millis(500) {
                last = Instant::now();
                return write_gone(&mut sock, trickle);
            }
            thread::sleep(Duration::from_millis(10));
            false
        });
        Ok(measure(&mut meter(kind), abuse, true, close_wait))
    };
    add(
        "slowloris",
        "a peer trickling one byte of a message every 500 ms",
        served,
        &mut outcome,
    );
    results
}
