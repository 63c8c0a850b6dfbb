//! One behaviour suite for every driver, written once against the wire: a peer written
//! with `std::net` speaks Content-Length-framed JSON-RPC to a server on 127.0.0.1 that
//! serves the same core `Router`, whatever runtime drives it. Each adapter includes this
//! file and expands [`behaviour_suite!`] with a function that serves a router.
//!
//! The rules it checks (correlation, batches, early cancels, streams, heartbeat, parse
//! errors, end of input, shutdown) live in the core's connection machine; the suite proves
//! every driver hands them through unchanged.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sansrpc::router::Router;
use sansrpc::ErrorObject;
use serde_json::{json, Value};

/// A server under test.
pub struct Served {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Shuts it down (gracefully, a short grace).
    pub stop: Box<dyn FnOnce() + Send>,
}

/// What a case needs from the server besides the router.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Answer the peer's `ping` with `pong` (heartbeat, answer only).
    pub heartbeat: bool,
    /// The endpoint's `max_inflight_incoming`, when not the default.
    pub max_inflight: Option<usize>,
}

/// The router every case serves: `add`, `echo`, a `count` stream, and a `note`
/// notification counted in `notes`.
pub fn router(notes: Arc<AtomicUsize>) -> Router {
    let mut router = Router::new();
    router
        .raw_method("add", |params, out| {
            let (a, b): (i64, i64) = params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .ok_or_else(|| ErrorObject::fixed(-32602, "Invalid params"))?;
            out.extend_from_slice((a + b).to_string().as_bytes());
            Ok(())
        })
        .unwrap();
    router
        .raw_method("echo", |params, out| {
            out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
            Ok(())
        })
        .unwrap();
    router
        .stream_method("count", |(n,): (u64,)| {
            Ok((0..n).map(Ok::<u64, ErrorObject<'static>>))
        })
        .unwrap();
    router
        .raw_notification("note", move |_| {
            notes.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    router
}

/// The peer: a blocking TCP socket with Content-Length framing.
pub struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
}

const WAIT: Duration = Duration::from_secs(10);

impl Peer {
    pub fn connect(addr: SocketAddr) -> Peer {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(WAIT)).unwrap();
        Peer {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, text: &str) {
        self.stream
            .write_all(framed(text).as_bytes())
            .expect("write");
    }

    /// A second handle on the socket, to write from another thread.
    pub fn writer(&self) -> TcpStream {
        self.stream.try_clone().expect("clone the socket")
    }

    pub fn send_json(&mut self, value: &Value) {
        self.send(&value.to_string());
    }

    /// The next message, or `None` at end of stream.
    pub fn recv(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.take_frame() {
                return Some(message);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("no message within {WAIT:?}: {e}"),
            }
        }
    }

    pub fn expect(&mut self) -> Value {
        self.recv().expect("a message, not the end of the stream")
    }

    /// Asserts nothing arrives within `ms` milliseconds.
    pub fn expect_nothing(&mut self, ms: u64) {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(ms)))
            .unwrap();
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => panic!("the server closed"),
            Ok(n) => panic!("unexpected: {}", String::from_utf8_lossy(&chunk[..n])),
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ),
                "{e}"
            ),
        }
        self.stream.set_read_timeout(Some(WAIT)).unwrap();
    }

    pub fn half_close(&mut self) {
        self.stream.shutdown(Shutdown::Write).unwrap();
    }

    fn take_frame(&mut self) -> Option<Value> {
        let text = std::str::from_utf8(&self.buf).ok()?;
        let head_end = text.find("\r\n\r\n")?;
        let length: usize = text[..head_end]
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))?
            .trim()
            .parse()
            .ok()?;
        let start = head_end + 4;
        if self.buf.len() < start + length {
            return None;
        }
        let body = self.buf[start..start + length].to_vec();
        self.buf.drain(..start + length);
        Some(serde_json::from_slice(&body).expect("valid JSON from the server"))
    }
}

fn by_id(answers: &[Value], id: &Value) -> Value {
    answers
        .iter()
        .find(|a| &a["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no answer with id {id} in {answers:?}"))
}

pub fn answers_match_their_requests_by_id(serve: &dyn Fn(Router, Options) -> Served) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#);
    peer.send(r#"{"jsonrpc":"2.0","method":"echo","params":{"x":"y"},"id":"x"}"#);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[5,5],"id":1.5}"#);
    let answers: Vec<Value> = (0..3).map(|_| peer.expect()).collect();
    assert_eq!(by_id(&answers, &json!(1))["result"], 3);
    assert_eq!(by_id(&answers, &json!("x"))["result"], json!({"x": "y"}));
    assert_eq!(by_id(&answers, &json!(1.5))["result"], 10);
    (served.stop)();
}

pub fn batches_answer_their_calls_only(serve: &dyn Fn(Router, Options) -> Served) {
    let notes = Arc::new(AtomicUsize::new(0));
    let served = serve(router(notes.clone()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(
        r#"[{"jsonrpc":"2.0","method":"add","params":[1,1],"id":1},
            {"jsonrpc":"2.0","method":"note"},
            {"jsonrpc":"2.0","method":"add","params":[2,2],"id":2}]"#,
    );
    let batch = peer.expect();
    let batch = batch.as_array().expect("one array for the batch");
    assert_eq!(batch.len(), 2);
    assert_eq!(by_id(batch, &json!(1))["result"], 2);
    assert_eq!(by_id(batch, &json!(2))["result"], 4);
    peer.send("[]");
    assert_eq!(peer.expect()["error"]["code"], -32600);
    peer.send(r#"[{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","method":"note"}]"#);
    peer.expect_nothing(300);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[3,3],"id":3}"#);
    assert_eq!(peer.expect()["result"], 6);
    assert_eq!(notes.load(Ordering::Relaxed), 3);
    (served.stop)();
}

pub fn a_cancel_before_its_request_answers_it_cancelled(serve: &dyn Fn(Router, Options) -> Served) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":9}}"#);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":9}"#);
    let answer = peer.expect();
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    // A cancel for nothing changes nothing.
    peer.send(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":77}}"#);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":10}"#);
    assert_eq!(peer.expect()["result"], 3);
    (served.stop)();
}

pub fn streams_are_pulled_to_their_end(serve: &dyn Fn(Router, Options) -> Served) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"count","params":[3],"id":1}"#);
    let stream = peer.expect()["result"]["stream"]
        .as_u64()
        .expect("a stream id");
    let pull = |id: u64| json!({"jsonrpc":"2.0","method":"rpc.stream.next","params":{"stream": stream, "max": 2},"id": id});
    peer.send_json(&pull(2));
    assert_eq!(
        peer.expect()["result"],
        json!({"items": [0, 1], "done": false})
    );
    peer.send_json(&pull(3));
    assert_eq!(peer.expect()["result"], json!({"items": [2], "done": true}));
    peer.send_json(&pull(4));
    assert_eq!(peer.expect()["error"]["code"], -32020, "the stream is gone");
    (served.stop)();
}

pub fn ping_is_answered_with_pong(serve: &dyn Fn(Router, Options) -> Served) {
    let served = serve(
        router(Arc::default()),
        Options {
            heartbeat: true,
            ..Options::default()
        },
    );
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"ping"}"#);
    assert_eq!(peer.expect(), json!({"jsonrpc": "2.0", "method": "pong"}));
    (served.stop)();
}

pub fn a_parse_error_is_answered_and_the_connection_goes_on(
    serve: &dyn Fn(Router, Options) -> Served,
) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","#);
    let answer = peer.expect();
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[2,2],"id":1}"#);
    assert_eq!(peer.expect()["result"], 4);
    (served.stop)();
}

pub fn requests_sent_before_the_end_of_input_are_answered(
    serve: &dyn Fn(Router, Options) -> Served,
) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    for id in 1..=3 {
        peer.send_json(&json!({"jsonrpc":"2.0","method":"add","params":[id, id],"id": id}));
    }
    peer.half_close();
    let answers: Vec<Value> = (0..3).map(|_| peer.expect()).collect();
    for id in 1..=3 {
        assert_eq!(by_id(&answers, &json!(id))["result"], 2 * id);
    }
    assert!(peer.recv().is_none(), "then the server closes");
    (served.stop)();
}

pub fn shutdown_closes_the_connection(serve: &dyn Fn(Router, Options) -> Served) {
    let served = serve(router(Arc::default()), Options::default());
    let mut peer = Peer::connect(served.addr);
    peer.send(r#"{"jsonrpc":"2.0","method":"add","params":[1,1],"id":1}"#);
    assert_eq!(peer.expect()["result"], 2);
    let started = Instant::now();
    (served.stop)();
    assert!(peer.recv().is_none(), "the server closed the connection");
    assert!(started.elapsed() < WAIT);
}

/// `n` messages framed with Content-Length one after another, message `i` being `body(i)`:
/// a burst to write in one go.
pub fn framed_burst(n: usize, body: impl Fn(usize) -> String) -> String {
    (0..n).map(|i| framed(&body(i))).collect()
}

/// `text` behind its Content-Length header.
fn framed(text: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{text}", text.len())
}

/// A burst of 10,000 pipelined requests, written by a thread of its own while this one
/// reads, is answered in full with results: a full in-flight table holds the input back
/// (TCP back-pressure) instead of answering `-32002` Server busy.
pub fn a_burst_of_ten_thousand_requests_is_answered_in_full(
    serve: &dyn Fn(Router, Options) -> Served,
) {
    const BURST: usize = 10_000;
    // A small in-flight table, so that a driver with a handler pool fills it.
    let options = Options {
        max_inflight: Some(8),
        ..Options::default()
    };
    let served = serve(router(Arc::default()), options);
    let mut peer = Peer::connect(served.addr);
    let mut writer = peer.writer();
    let burst = framed_burst(BURST, |i| {
        format!(r#"{{"jsonrpc":"2.0","method":"add","params":[{i},1],"id":{i}}}"#)
    });
    let written = std::thread::spawn(move || writer.write_all(burst.as_bytes()));
    let mut seen = vec![false; BURST];
    for _ in 0..BURST {
        let answer = peer.expect();
        let id = answer["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an answer to a request: {answer}"))
            as usize;
        assert_eq!(answer["result"], id + 1, "{answer}");
        assert!(
            !std::mem::replace(&mut seen[id], true),
            "{id} answered twice"
        );
    }
    written.join().unwrap().expect("the burst is written");
    (served.stop)();
}

/// Expands into one `#[test]` per case, each serving with `$serve`
/// (`fn(Router, Options) -> Served`).
#[macro_export]
macro_rules! behaviour_suite {
    ($serve:expr) => {
        $crate::behaviour_suite!(@cases $serve;
            answers_match_their_requests_by_id,
            batches_answer_their_calls_only,
            a_cancel_before_its_request_answers_it_cancelled,
            streams_are_pulled_to_their_end,
            ping_is_answered_with_pong,
            a_parse_error_is_answered_and_the_connection_goes_on,
            requests_sent_before_the_end_of_input_are_answered,
            shutdown_closes_the_connection,
            a_burst_of_ten_thousand_requests_is_answered_in_full,
        );
    };
    (@cases $serve:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                suite::$case(&$serve);
            }
        )*
    };
}
