//! The calculator the tokio and MCP tests serve and call, and a time bound for every test.
#![allow(dead_code)]

#[path = "../../adapters/futures/fixtures/calculator.rs"]
mod calc;
#[path = "../../adapters/futures/fixtures/exercise.rs"]
mod exercise;

use std::future::Future;
use std::time::Duration;

#[allow(unused_imports)]
pub use calc::*;
#[allow(unused_imports)]
pub use exercise::exercise;

/// Runs `f`, failing the test if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| panic!("not done within {limit:?}"))
}

pub const LIMIT: Duration = Duration::from_secs(20);

/// Polls `done` every 10 ms until it holds; fails the test, saying `what` never happened,
/// once `limit` has passed. The one poll of these tests, for what a peer does on its own
/// schedule and announces nowhere. It blocks: from async code, call it through
/// `tokio::task::spawn_blocking`.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "not within {limit:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first line `r` gives (a process's `listening on ...`), read on a thread of its own
/// that then reads the rest to its end (the pipe stays drained and open); fails the test
/// if no line comes within `limit`, so a process that never starts fails it instead of
/// hanging it (kill the process on that failure: keep it under a guard).
pub fn first_line(r: impl std::io::Read + Send + 'static, limit: Duration, what: &str) -> String {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(r).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines.by_ref() {}
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("no line within {limit:?} ({e}): {what}"))
}
