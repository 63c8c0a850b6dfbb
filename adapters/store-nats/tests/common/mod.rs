//! A real nats-server with JetStream, started on a free port of 127.0.0.1 for one test and
//! killed when dropped. A missing binary fails the test: it never skips.

#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    child: Child,
    pub url: String,
    dir: tempfile::TempDir,
}

fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return path.into();
    }
    for dir in std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/bin")])
    {
        let candidate = dir.join("nats-server");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "nats-server not found ($NATS_SERVER, PATH, /usr/sbin, /usr/local/bin): run the \
         tests with scripts/test, which installs one, or install the Debian package \
         nats-server; these tests need a real server"
    );
}

impl NatsServer {
    /// Starts a server on a port it picks itself (`-p -1`) and reads back from its ports file,
    /// so no other process can take the port between a probe and the bind.
    pub fn start() -> NatsServer {
        let binary = binary();
        let dir = tempfile::tempdir().unwrap();
        let ports = dir.path().join("ports");
        std::fs::create_dir(&ports).unwrap();
        let child = Command::new(&binary)
            .args(["-js", "-a", "127.0.0.1", "-p", "-1", "-sd"])
            .arg(dir.path().join("store"))
            .arg("--ports_file_dir")
            .arg(&ports)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut server = NatsServer {
            child,
            url: String::new(),
            dir,
        };
        let limit = Duration::from_secs(30);
        let mut url = None;
        wait_until(limit, "nats-server writes its ports file", || {
            if let Some(status) = server.child.try_wait().unwrap() {
                panic!("nats-server exited at start: {status}");
            }
            url = client_url(&ports);
            url.is_some()
        });
        let url = url.unwrap();
        let address = url.trim_start_matches("nats://").to_owned();
        wait_until(limit, "nats-server listens", || {
            TcpStream::connect(&address).is_ok()
        });
        server.url = url;
        server
    }
}

/// Polls `done` every 20 ms until it holds; fails the test, saying `what` never
/// happened, once `limit` has passed. The one poll of these tests: every wait for
/// something the server does on its own schedule goes through it.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The client URL from the ports file in `dir`, once it is written whole.
fn client_url(dir: &Path) -> Option<String> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let text = std::fs::read_to_string(entry.path()).ok()?;
        let ports: serde_json::Value = serde_json::from_str(&text).ok()?;
        if let Some(url) = ports["nats"][0].as_str() {
            return Some(url.to_owned());
        }
    }
    None
}

impl NatsServer {
    /// Kills the server (SIGKILL) and waits for it to exit: its clients see the
    /// connection drop.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port (and store), after [`kill`](Self::kill);
    /// returns once it listens.
    pub fn restart(&mut self) {
        let address = self.url.trim_start_matches("nats://").to_owned();
        let port = address.rsplit(':').next().unwrap().to_owned();
        self.child = Command::new(binary())
            .args(["-js", "-a", "127.0.0.1", "-p", &port, "-sd"])
            .arg(self.dir.path().join("store"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts again");
        wait_until(Duration::from_secs(30), "nats-server listens again", || {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("nats-server exited at restart: {status}");
            }
            TcpStream::connect(&address).is_ok()
        });
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
