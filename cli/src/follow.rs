//! `sansrpc call --follow`: send the requests, then print every message the server sends
//! (answers and notifications: pub/sub) as one JSON line each, until the time is up or the
//! server closes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::{Limits, RawValue};
use serde_json::Value;

use crate::target::Kind;
use crate::Fallible;

/// How often a blocked read wakes to look at the clock.
const POLL: Duration = Duration::from_millis(200);

/// A connection that moves whole messages.
enum Link {
    Stream {
        stream: Box<dyn Stream>,
        framing: Framing,
        decoder: Decoder,
    },
    Ws(Box<tungstenite::WebSocket<TcpStream>>),
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

enum Got {
    Message(Vec<u8>),
    Nothing,
    End,
}

impl Link {
    fn open(kind: &Kind, framing: Framing) -> Fallible<Link> {
        let stream: Box<dyn Stream> = match kind {
            Kind::Tcp(addr) => {
                let s = TcpStream::connect(&**addr)
                    .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
                s.set_read_timeout(Some(POLL))?;
                Box::new(s)
            }
            #[cfg(unix)]
            Kind::Unix(path) => {
                let s = std::os::unix::net::UnixStream::connect(path)
                    .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
                s.set_read_timeout(Some(POLL))?;
                Box::new(s)
            }
            Kind::Ws(url) => {
                let authority = crate::serve::socket_addr(url, "ws")?;
                let s = TcpStream::connect(authority)
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?;
                s.set_read_timeout(Some(Duration::from_secs(10)))?;
                let (ws, _) = tungstenite::client::client(url.as_str(), s)
                    .map_err(|e| format!("cannot open a WebSocket to {url}: {e}"))?;
                ws.get_ref().set_read_timeout(Some(POLL))?;
                return Ok(Link::Ws(Box::new(ws)));
            }
            _ => return Err("--follow works over --tcp, --unix and --ws".into()),
        };
        Ok(Link::Stream {
            stream,
            framing,
            decoder: Decoder::new(framing, &Limits::default()),
        })
    }

    fn send(&mut self, body: &str) -> Fallible<()> {
        match self {
            Link::Stream {
                stream, framing, ..
            } => {
                let mut wire = Vec::new();
                encode_frame(*framing, body.as_bytes(), &mut wire);
                stream.write_all(&wire)?;
                stream.flush()?;
            }
            Link::Ws(ws) => ws
                .send(tungstenite::Message::text(body))
                .map_err(|e| format!("not sent: {e}"))?,
        }
        Ok(())
    }

    fn receive(&mut self) -> Fallible<Got> {
        let timed_out = |e: &io::Error| {
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        };
        match self {
            Link::Stream {
                stream, decoder, ..
            } => loop {
                if let Some(frame) = decoder.next_frame() {
                    return match frame {
                        Ok(body) => Ok(Got::Message(body.to_vec())),
                        Err(e) => Err(format!("framing error: {e}").into()),
                    };
                }
                let mut buf = [0u8; 16 * 1024];
                match stream.read(&mut buf) {
                    Ok(0) => return Ok(Got::End),
                    Ok(n) => {
                        let mut rest = &buf[..n];
                        while !rest.is_empty() {
                            let used = decoder.feed(rest);
                            rest = &rest[used..];
                            if used == 0 {
                                break;
                            }
                        }
                    }
                    Err(e) if timed_out(&e) => return Ok(Got::Nothing),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.into()),
                }
            },
            Link::Ws(ws) => match ws.read() {
                Ok(tungstenite::Message::Text(text)) => Ok(Got::Message(text.as_bytes().to_vec())),
                Ok(tungstenite::Message::Close(_)) => Ok(Got::End),
                Ok(_) => Ok(Got::Nothing),
                Err(tungstenite::Error::Io(e)) if timed_out(&e) => Ok(Got::Nothing),
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    Ok(Got::End)
                }
                Err(e) => Err(e.into()),
            },
        }
    }
}

/// Sends each call as a request (ids 1, 2, ...), then prints what arrives for `follow`
/// (zero: until the server closes). Exit status 1 when an answer was an error object.
pub fn run(
    kind: &Kind,
    framing: Framing,
    calls: &[(String, Option<Box<RawValue>>)],
    follow: Duration,
) -> Fallible<ExitCode> {
    let mut link = Link::open(kind, framing)?;
    for (id, (method, params)) in calls.iter().enumerate() {
        let mut request = serde_json::json!({"jsonrpc": "2.0", "method": method, "id": id + 1});
        if let Some(p) = params {
            request["params"] = serde_json::from_str(p.get())?;
        }
        link.send(&request.to_string())?;
    }
    let deadline = (!follow.is_zero()).then(|| Instant::now() + follow);
    let mut failed = false;
    let stdout = io::stdout();
    while deadline.is_none_or(|d| Instant::now() < d) {
        match link.receive()? {
            Got::Message(body) => {
                let text = String::from_utf8_lossy(&body);
                // As sent (members in the server's order), on one line when it was compact.
                let v = serde_json::from_str::<Value>(&text).ok();
                failed |= v.as_ref().is_some_and(|v| v.get("error").is_some());
                match v {
                    Some(v) if text.contains('\n') => writeln!(stdout.lock(), "{v}")?,
                    _ => writeln!(stdout.lock(), "{}", text.trim())?,
                }
            }
            Got::Nothing => {}
            Got::End => break,
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
