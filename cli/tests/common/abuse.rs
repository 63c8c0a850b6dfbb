//! Helpers for the hostile-peer tests: a server under a descriptor limit, its peak memory,
//! a well-behaved client calling `add` throughout, raw WebSocket frames.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::{exe, start_logging_addr, Server};

/// `sansrpc ARGS` (a server logging `addr=...`), with its open-file limit set to `nofile`
/// (soft and hard) when given; returns the server and its address.
pub fn serve(args: &[&str], nofile: Option<u64>) -> (Server, String) {
    let mut command = Command::new(exe());
    command.args(args);
    if let Some(n) = nofile {
        let limit = libc::rlimit {
            rlim_cur: n,
            rlim_max: n,
        };
        // SAFETY: setrlimit is async-signal-safe and only reads `limit`.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    start_logging_addr(&mut command)
}

/// The process's peak resident memory (VmHWM), in KiB.
pub fn peak_rss_kib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.0.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Fails unless the server process is still running.
pub fn assert_alive(server: &mut Server) {
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the server process died"
    );
}

const ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;

/// One `add` on a new connection of `transport` ("tcp": Content-Length, "ws", "http");
/// true when `3` came back within 5 s.
pub fn add_once(transport: &str, addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    match transport {
        "tcp" => {
            let frame = format!("Content-Length: {}\r\n\r\n{ADD}", ADD.len());
            stream.write_all(frame.as_bytes()).is_ok() && read_until_result(&mut stream)
        }
        "http" => {
            let request = format!(
                "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ADD}",
                ADD.len()
            );
            stream.write_all(request.as_bytes()).is_ok() && read_until_result(&mut stream)
        }
        "ws" => {
            let url = format!("ws://{addr}/");
            let Ok((mut ws, _)) = tungstenite::client::client(url.as_str(), stream) else {
                return false;
            };
            if ws.send(tungstenite::Message::text(ADD)).is_err() {
                return false;
            }
            matches!(ws.read(), Ok(tungstenite::Message::Text(t)) if t.contains("\"result\":3"))
        }
        other => panic!("unknown transport {other}"),
    }
}

fn read_until_result(stream: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"result\":3") {
        match stream.read(&mut buf) {
            Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
            _ => return false,
        }
    }
    true
}

/// A well-behaved client calling `add` on a new connection every 50 ms on its own thread.
pub struct Caller {
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    thread: Option<thread::JoinHandle<Duration>>,
}

impl Caller {
    /// Starts calling over `transport` at `addr`.
    pub fn start(transport: &'static str, addr: &str) -> Caller {
        let stop = Arc::new(AtomicBool::new(false));
        let (served, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (s, ok, ko, addr) = (
            stop.clone(),
            served.clone(),
            failed.clone(),
            addr.to_owned(),
        );
        let thread = thread::spawn(move || {
            let mut slowest = Duration::ZERO;
            while !s.load(Ordering::SeqCst) {
                let started = Instant::now();
                if add_once(transport, &addr) {
                    ok.fetch_add(1, Ordering::SeqCst);
                    slowest = slowest.max(started.elapsed());
                } else {
                    ko.fetch_add(1, Ordering::SeqCst);
                }
                thread::sleep(Duration::from_millis(50));
            }
            slowest
        });
        Caller {
            stop,
            served,
            failed,
            thread: Some(thread),
        }
    }

    /// The calls served so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// Stops; returns (calls served, calls failed, slowest call).
    pub fn finish(mut self) -> (u64, u64, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        let slowest = self.thread.take().unwrap().join().unwrap();
        (
            self.served.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
            slowest,
        )
    }
}

/// A raw WebSocket connection after a hand-written handshake.
pub fn ws_raw(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "no upgrade: {head:?}");
    stream
}

/// One WebSocket frame: `first` is the first byte (FIN, RSV bits, opcode); masked with a
/// fixed key when `masked`.
pub fn ws_frame(first: u8, masked: bool, payload: &[u8]) -> Vec<u8> {
    let mask_bit = if masked { 0x80 } else { 0 };
    let mut frame = vec![first];
    match payload.len() {
        n if n < 126 => frame.push(mask_bit | n as u8),
        n => {
            frame.push(mask_bit | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    let key = [0x12, 0x34, 0x56, 0x78];
    if masked {
        frame.extend_from_slice(&key);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        frame.extend_from_slice(payload);
    }
    frame
}

/// Reads server frames until a close frame; its code, or `None` when the connection ended
/// without one.
pub fn read_close_code(stream: &mut TcpStream) -> Option<u16> {
    loop {
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).ok()?;
        let mut len = u64::from(head[1] & 0x7f);
        if len == 126 {
            let mut ext = [0u8; 2];
            stream.read_exact(&mut ext).ok()?;
            len = u64::from(u16::from_be_bytes(ext));
        } else if len == 127 {
            let mut ext = [0u8; 8];
            stream.read_exact(&mut ext).ok()?;
            len = u64::from_be_bytes(ext);
        }
        let mut payload = vec![0u8; len as usize];
        stream.read_exact(&mut payload).ok()?;
        if head[0] & 0x0f == 0x8 {
            return (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]]));
        }
    }
}
