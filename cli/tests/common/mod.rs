//! Helpers for the tests of the `sansrpc` binary: real processes, every wait bounded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
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

/// Polls `done` every 10 ms until it holds; fails the test, saying `what` never happened,
/// once `limit` has passed. The one poll of these tests: every wait for something a
/// process does on its own schedule goes through it (a process under a [`Server`] guard is
/// killed by the failure).
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits at most `limit` for the process to exit; on failure the guard kills it.
pub fn wait_exit(server: &mut Server, limit: Duration, what: &str) -> ExitStatus {
    let mut status = None;
    wait_until(limit, what, || {
        status = server.0.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

/// Runs the binary with `args`; kills it and fails the test if it runs past `limit`.
pub fn run(args: &[&str], limit: Duration) -> Output {
    let what = format!("sansrpc {args:?} exits");
    run_command(Command::new(exe()).args(args), limit, &what)
}

/// Runs `command` (stdin closed); kills it and fails the test, saying `what` did not
/// happen, if it runs past `limit`.
pub fn run_command(command: &mut Command, limit: Duration, what: &str) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let mut child = Server(child);
    let out = read_all(child.0.stdout.take().unwrap());
    let err = read_all(child.0.stderr.take().unwrap());
    let status = wait_exit(&mut child, limit, what);
    Output {
        status: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Reads `r` to its end on a thread of its own: a pipe read never blocks the test.
pub fn read_all(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
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

/// Kills a process with SIGKILL if it is still there when `limit` has passed, unless
/// dropped first: the bound of a test that blocks on the process's pipes, which have no
/// timeouts of their own (the kill closes them, so the blocked read or write ends and the
/// test fails instead of hanging). Drop it before anything reaps the process (its
/// [`Server`] guard, [`wait_exit`], a `try_wait`): until then its id names no other process.
pub struct Watchdog {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Watchdog {
    pub fn new(server: &Server, limit: Duration) -> Watchdog {
        let pid = libc::pid_t::try_from(server.0.id()).unwrap();
        let (disarm, armed) = mpsc::channel::<()>();
        let thread = thread::spawn(move || {
            if armed.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                eprintln!("watchdog: process {pid} still running after {limit:?}: killed");
                // SAFETY: kill(2) with a plain pid and signal; the process is not reaped
                // yet (see above), so the pid is still the test's child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        Watchdog {
            disarm: Some(disarm),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.disarm.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The first line `r` gives (a process's `listening on ...`), read on a thread of its own
/// that then reads the rest to its end; fails the test if no line comes within `limit`.
pub fn first_line(r: impl Read + Send + 'static, limit: Duration, what: &str) -> String {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut lines = BufReader::new(r).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines.by_ref() {}
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("no line within {limit:?} ({e}): {what}"))
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
    wait_until(Duration::from_secs(10), "the Unix server listens", || {
        std::os::unix::net::UnixStream::connect(path).is_ok()
    });
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
