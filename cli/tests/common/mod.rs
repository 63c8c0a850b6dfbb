//! Helpers for the tests of the `sansrpc` binary: real processes, every wait bounded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sansrpc")
}

/// What a finished run printed.
pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args`; kills it and fails the test if it runs past `limit`.
pub fn run(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sansrpc");
    let out = read_all(child.stdout.take().unwrap());
    let err = read_all(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sansrpc {args:?} ran longer than {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Output {
        status: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn read_all(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A server process, killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sansrpc serve --tcp 127.0.0.1:0`, and the address it logged.
pub fn serve_tcp(framing: &str) -> (Server, String) {
    serve_logging_addr(&["serve", "--tcp", "127.0.0.1:0", "--framing", framing])
}

/// `sansrpc serve --ws 127.0.0.1:0` (`transport` "ws") or `--http`, and the address it
/// logged.
pub fn serve_web(transport: &str) -> (Server, String) {
    serve_logging_addr(&["serve", &format!("--{transport}"), "127.0.0.1:0"])
}

/// Starts `sansrpc ARGS`, a server logging `addr=...` on stderr; returns that address.
pub fn serve_logging_addr(args: &[&str]) -> (Server, String) {
    start_logging_addr(Command::new(exe()).args(args))
}

/// Starts `command`, a server logging `addr=...` on stderr (at `RUST_LOG=info`); returns
/// that address.
pub fn start_logging_addr(command: &mut Command) -> (Server, String) {
    let mut child = command
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sansrpc serve");
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        while let Some(Ok(line)) = lines.next() {
            if let Some(at) = line.find("addr=") {
                let addr: String = line[at + 5..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .collect();
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server logs its address");
    (server, addr)
}

/// A fresh socket path under the temporary directory.
pub fn socket_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("sansrpc-cli-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// `sansrpc serve --unix PATH`, once the socket accepts connections.
pub fn serve_unix(path: &Path) -> Server {
    serve_unix_with(path, &[])
}

/// `sansrpc serve --unix PATH EXTRA..`, once the socket accepts connections.
pub fn serve_unix_with(path: &Path, extra: &[&str]) -> Server {
    let child = Command::new(exe())
        .args(["serve", "--unix"])
        .arg(path)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sansrpc serve");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(path).is_err() {
        assert!(Instant::now() < deadline, "the Unix server never listened");
        thread::sleep(Duration::from_millis(10));
    }
    server
}

/// The command line that starts our own server over stdio.
pub fn serve_stdio_command(framing: &str) -> String {
    format!("{} serve --stdio --framing {framing}", exe())
}

/// Where the stateful (MCP-like) test server lives: newline-framed, or Content-Length with
/// `--content-length`.
pub fn stateful_server() -> String {
    format!(
        "python3 {}/tests/stateful_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Where the broken test server lives.
pub fn broken_server() -> String {
    format!(
        "python3 {}/tests/broken_server.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

pub mod abuse;
