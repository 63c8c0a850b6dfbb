//! `sansrpc call --follow`: send the steps one after the other (each answer awaited), then
//! print every message the server sends (answers and notifications: pub/sub) as one JSON
//! line each, until the time is up or the server closes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::Limits;
use serde_json::Value;

use crate::call::Step;
use crate::target::{self, Kind};
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

/// A child process's stdin and stdout as one stream whose reads time out after [`POLL`]
/// (a thread moves what the child writes into a channel). Killed when dropped.
struct ChildIo {
    child: Child,
    stdin: ChildStdin,
    output: mpsc::Receiver<Vec<u8>>,
    rest: Vec<u8>,
}

impl ChildIo {
    fn spawn(words: &[String]) -> Fallible<ChildIo> {
        let mut child = target::command(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", words[0]))?;
        let (stdin, mut stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => (stdin, stdout),
            _ => return Err("the child's stdin and stdout are not piped".into()),
        };
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Ok(ChildIo {
            child,
            stdin,
            output,
            rest: Vec::new(),
        })
    }
}

impl Read for ChildIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.rest.is_empty() {
            match self.output.recv_timeout(POLL) {
                Ok(bytes) => self.rest = bytes,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(io::ErrorKind::WouldBlock.into())
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
            }
        }
        let n = buf.len().min(self.rest.len());
        buf[..n].copy_from_slice(&self.rest[..n]);
        self.rest.drain(..n);
        Ok(n)
    }
}

impl Write for ChildIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stdin.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdin.flush()
    }
}

impl Drop for ChildIo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Got {
    Message(Vec<u8>),
    Nothing,
    End,
}

impl Link {
    fn open(kind: &Kind, framing: Framing) -> Fallible<Link> {
        let stream: Box<dyn Stream> = match kind {
            Kind::Stdio(words) => Box::new(ChildIo::spawn(words)?),
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
            _ => return Err("--follow works over --stdio, --tcp, --unix and --ws".into()),
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

/// Prints one message the server sent, as sent (members in the server's order), on one
/// line; returns the message and whether it was an error response.
fn print(body: &[u8]) -> Fallible<(Option<Value>, bool)> {
    let text = String::from_utf8_lossy(body);
    let v = serde_json::from_str::<Value>(&text).ok();
    let failed = v.as_ref().is_some_and(|v| v.get("error").is_some());
    match &v {
        Some(v) if text.contains('\n') => writeln!(io::stdout().lock(), "{v}")?,
        _ => writeln!(io::stdout().lock(), "{}", text.trim())?,
    }
    Ok((v, failed))
}

/// Sends the steps one after the other (requests get ids 1, 2, ...; each answer is awaited
/// for `timeout`, printing whatever arrives meanwhile), then prints what arrives for
/// `follow` (zero: until the server closes). Exit status 1 when an answer was an error
/// object.
pub fn run(
    kind: &Kind,
    framing: Framing,
    steps: &[Step],
    follow: Duration,
    timeout: Duration,
) -> Fallible<ExitCode> {
    let mut link = Link::open(kind, framing)?;
    let mut failed = false;
    let mut id = 0u64;
    for step in steps {
        let mut message = serde_json::json!({"jsonrpc": "2.0", "method": step.method});
        if let Some(p) = &step.params {
            message["params"] = serde_json::from_str(p.get())?;
        }
        if step.call {
            id += 1;
            message["id"] = id.into();
        }
        link.send(&message.to_string())?;
        if !step.call {
            continue;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if Instant::now() >= deadline {
                return Err(format!(
                    "call {id} ({}): no answer within {} s",
                    step.method,
                    timeout.as_secs_f64()
                )
                .into());
            }
            match link.receive()? {
                Got::Message(body) => {
                    let (v, error) = print(&body)?;
                    failed |= error;
                    let answered = v.as_ref().is_some_and(|v| {
                        v.get("id") == Some(&id.into())
                            && (v.get("result").is_some() || v.get("error").is_some())
                    });
                    if answered {
                        break;
                    }
                }
                Got::Nothing => {}
                Got::End => {
                    return Err(format!(
                        "call {id} ({}): the server closed the connection before answering",
                        step.method
                    )
                    .into())
                }
            }
        }
    }
    let deadline = (!follow.is_zero()).then(|| Instant::now() + follow);
    while deadline.is_none_or(|d| Instant::now() < d) {
        match link.receive()? {
            Got::Message(body) => failed |= print(&body)?.1,
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
