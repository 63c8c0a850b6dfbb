//! An LSP editing step on the server path: a `textDocument/didChange` notification and a
//! `textDocument/hover` request, Content-Length framed, in one input (as an editor writes
//! them), through one `Connection` under `Profile::Lsp` (the lifecycle, ordered
//! notifications) and a `Router` with trivial raw handlers, beside a framed serde_json
//! floor in the same group.
//!
//! The floor splits both frames by hand, parses each into the borrowed envelope, ignores
//! the change and answers the hover with the same fixed result; it keeps no lifecycle and
//! no order. Before measuring, both sides are checked to write byte-identical frames.
//! `scripts/instructions` counts `lsp_floor_once` and `lsp_serve_once` (one pair each).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::router::{Reply, Router};
use sansrpc::Instant;
use sansrpc::Profile;
use serde_json::value::RawValue as SerdeRaw;

#[path = "common/floor.rs"]
mod floor;

use floor::{Envelope, ResultResponse};

const DID_CHANGE: &str = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///src/lib.rs","version":2},"contentChanges":[{"text":"fn main() {\n    println!(\"hello\");\n}\n"}]}}"#;
const HOVER: &str = r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///src/lib.rs"},"position":{"line":1,"character":6}}}"#;
/// The hover's answer, from both sides.
const HOVER_RESULT: &str = r#"{"contents":"println!"}"#;

fn framed(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{body}", body.len())
}

/// The two frames, as one input.
fn pair() -> Vec<u8> {
    format!("{}{}", framed(DID_CHANGE), framed(HOVER)).into_bytes()
}

// ---------------------------------------------------------------------------------------
// The floor.

/// The first frame of `input`: its body and the rest of the input.
fn floor_frame(input: &[u8]) -> (&[u8], &[u8]) {
    let end = memchr::memmem::find(input, b"\r\n\r\n").expect("a header block");
    let header = std::str::from_utf8(&input[..end]).expect("an ASCII header");
    let len: usize = header
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length:"))
        .expect("a length")
        .trim()
        .parse()
        .expect("a number");
    let body = end + 4;
    (&input[body..body + len], &input[body + len..])
}

/// Answers the pair: the change parsed and dropped, the hover answered into `out`.
#[inline(never)]
fn floor(input: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
    out.clear();
    let mut rest = input;
    while !rest.is_empty() {
        let (frame, after) = floor_frame(rest);
        rest = after;
        let env: Envelope<'_> = serde_json::from_slice(frame).expect("parse");
        assert!(env.jsonrpc == "2.0");
        match (env.method, env.id) {
            ("textDocument/didChange", None) => {
                black_box(env.params);
            }
            ("textDocument/hover", Some(id)) => {
                black_box(env.params);
                let result: &SerdeRaw = serde_json::from_str(HOVER_RESULT).expect("result");
                body.clear();
                let response = ResultResponse {
                    jsonrpc: "2.0",
                    result,
                    id,
                };
                serde_json::to_writer(&mut *body, &response).expect("write");
                out.extend_from_slice(b"Content-Length: ");
                out.extend_from_slice(body.len().to_string().as_bytes());
                out.extend_from_slice(b"\r\n\r\n");
                out.extend_from_slice(body);
            }
            _ => unreachable!(),
        }
    }
}

/// One pair through the floor, in a function of its own that a profiler counts calls of.
#[inline(never)]
fn lsp_floor_once(input: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) -> usize {
    floor(input, body, out);
    black_box(out.len())
}

// ---------------------------------------------------------------------------------------
// Ours.

struct Server {
    router: Router,
    conn: Connection,
    reply: Reply,
}

impl Server {
    /// An initialized LSP server connection (`initialize` answered, `initialized` taken).
    fn new() -> Self {
        let mut router = Router::new();
        router
            .raw_method("initialize", |_, out| {
                out.extend_from_slice(br#"{"capabilities":{"hoverProvider":true}}"#);
                Ok(())
            })
            .unwrap();
        router.raw_notification("initialized", |_| {}).unwrap();
        router
            .raw_notification("textDocument/didChange", |params| {
                black_box(params);
            })
            .unwrap();
        router
            .raw_method("textDocument/hover", |params, out| {
                black_box(params);
                out.extend_from_slice(HOVER_RESULT.as_bytes());
                Ok(())
            })
            .unwrap();
        let config = Config::for_profile(Profile::Lsp);
        let mut server = Server {
            router,
            conn: Connection::new(config, Instant::ZERO),
            reply: Reply::default(),
        };
        let start = format!(
            "{}{}",
            framed(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#
            ),
            framed(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#)
        );
        let mut out = Vec::new();
        server.serve(start.as_bytes(), &mut out);
        assert!(
            String::from_utf8_lossy(&out).contains("hoverProvider"),
            "initialize answered"
        );
        server
    }

    /// Frames in, every call handled on this thread (each notification reported done, as
    /// a driver does, so the calls behind it go on), frames out into `out`.
    #[inline(never)]
    fn serve(&mut self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        self.conn.handle_input(input, Instant::ZERO).expect("input");
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::Request { handle, request } => {
                    self.router.dispatch(&request, &mut self.reply);
                    drop(request);
                    self.reply.answer(&mut self.conn, handle);
                }
                Event::Notification(n) => {
                    self.router.notify(&n);
                    drop(n);
                    self.conn.notification_done();
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        while self.conn.poll_transmit(out).is_some() {}
        self.conn
            .handle_write(!out.is_empty(), false, Instant::ZERO);
    }
}

/// One pair through sansrpc, in a function of its own that a profiler counts calls of.
#[inline(never)]
fn lsp_serve_once(server: &mut Server, input: &[u8], out: &mut Vec<u8>) -> usize {
    server.serve(input, out);
    black_box(out.len())
}

fn lsp(c: &mut Criterion) {
    let input = pair();
    let (mut body, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    let mut server = Server::new();
    floor(&input, &mut body, &mut a);
    server.serve(&input, &mut b);
    assert_eq!(
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b),
        "the floor and sansrpc write the same frames"
    );
    let mut group = c.benchmark_group("lsp_did_change_hover");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("framed floor", |bn| {
        bn.iter(|| lsp_floor_once(black_box(&input), &mut body, &mut a))
    });
    group.bench_function("connection + router", |bn| {
        bn.iter(|| lsp_serve_once(&mut server, black_box(&input), &mut b))
    });
    group.finish();
}

criterion_group!(benches, lsp);
criterion_main!(benches);
