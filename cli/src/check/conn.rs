//! A raw connection to the server under test: bytes out, frames in, every wait bounded.
//!
//! Writing and reading each happen on a thread of their own, so a server that stops
//! reading (a full pipe) or never answers cannot block the checker: it waits on a channel
//! with a deadline, and closing the connection (killing the child, shutting the socket)
//! unblocks both threads. Threads are never joined.

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
}

/// How much of the child's stderr is kept, to show when it dies.
const STDERR_TAIL: usize = 2048;

/// The raw connection.
pub struct Conn {
    framing: Framing,
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
            Kind::Ws(_) | Kind::Http(_) => {
                return Err("checking over WebSocket or HTTP is not supported yet".into())
            }
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
        let mut limits = Limits::default();
        limits.max_frame_bytes = 64 * 1024 * 1024;
        limits.max_header_bytes = 64 * 1024;
        Ok(Conn {
            framing,
            writes: Some(writes),
            inputs,
            decoder: Decoder::new(framing, &limits),
            ready: VecDeque::new(),
            ended: false,
            child,
            stderr,
            shutdown,
        })
    }

    /// Queues one message, framed; the writer thread sends it.
    pub fn send(&mut self, body: &[u8]) {
        let mut frame = Vec::with_capacity(body.len() + 32);
        encode_frame(self.framing, body, &mut frame);
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
