//! The path a server built from the README takes, beside a framed serde_json floor in the
//! same run and group: Content-Length frames in, through one [`Connection`] and a typed
//! [`Router`] handler, Content-Length frames out, all on one thread.
//!
//! The floor is a minimal hand-written server on serde_json: find the end of the header
//! block, parse the length, `serde_json::from_slice` into a borrowed envelope, run the same
//! application work, `serde_json::to_writer` the answer into a reused body buffer and copy
//! it behind a `Content-Length` header into a reused output buffer. It checks nothing a
//! JSON-RPC server must check (ids, versions, limits, duplicate ids, cancellation), so it is
//! a floor, not a peer.
//!
//! Before measuring, every workload checks that both sides write byte-identical frames.
//!
//! - W1: one `add` request;
//! - W2: a batch of 100 `add` requests;
//! - W3: a 64 KiB `textDocument/didOpen`-like request, answered `null`; measured twice: with
//!   a typed handler taking `Box<RawValue>` (serde scans and copies the params again), and
//!   with a raw handler that takes the params text as received, as the floor's does;
//! - W4: one notification, its params decoded, nothing written.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use sansrpc::codec::Framing;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::method::Method;
use sansrpc::router::{Reply, Router};
use sansrpc::Instant;
use serde::Serialize;
use serde_json::value::RawValue as SerdeRaw;

sansrpc::method!(Add = "add", (i64, i64) => i64);
sansrpc::method!(DidOpen = "textDocument/didOpen", Box<SerdeRaw> => ());
sansrpc::method!(Notify = "notify", (i64, i64));

// ---------------------------------------------------------------------------------------
// The floor.

#[path = "common/floor.rs"]
mod floor;

use floor::{Envelope, ResultResponse};

/// The body of a Content-Length frame: after the blank line, as long as the header says.
#[inline(never)]
fn floor_body(frame: &[u8]) -> &[u8] {
    let end = memchr::memmem::find(frame, b"\r\n\r\n").expect("a header block");
    let header = std::str::from_utf8(&frame[..end]).expect("an ASCII header");
    let len: usize = header
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length:"))
        .expect("a length")
        .trim()
        .parse()
        .expect("a number");
    &frame[end + 4..end + 4 + len]
}

/// Writes `body` behind its header into `out`.
fn floor_frame(body: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

fn floor_answer<T: Serialize>(id: &SerdeRaw, result: T, body: &mut Vec<u8>) {
    let response = ResultResponse {
        jsonrpc: "2.0",
        result,
        id,
    };
    serde_json::to_writer(&mut *body, &response).expect("write");
}

/// W1, W3, W4: one message.
#[inline(never)]
fn floor_single(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
    let env: Envelope<'_> = serde_json::from_slice(floor_body(frame)).expect("parse");
    assert!(env.jsonrpc == "2.0");
    body.clear();
    out.clear();
    let params = env.params.expect("params").get();
    match (env.method, env.id) {
        ("add", Some(id)) => {
            let (a, b): (i64, i64) = serde_json::from_str(params).expect("add params");
            floor_answer(id, a + b, body);
        }
        ("textDocument/didOpen", Some(id)) => {
            black_box(params);
            floor_answer(id, (), body);
        }
        ("notify", None) => {
            let (a, b): (i64, i64) = serde_json::from_str(params).expect("params");
            black_box(a + b);
            return;
        }
        _ => unreachable!(),
    }
    floor_frame(body, out);
}

/// W2: a batch of `add` requests answered with one array.
#[inline(never)]
fn floor_batch(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
    let envs: Vec<Envelope<'_>> = serde_json::from_slice(floor_body(frame)).expect("parse");
    body.clear();
    body.push(b'[');
    for (i, env) in envs.iter().enumerate() {
        assert!(env.jsonrpc == "2.0" && env.method == "add");
        let params = env.params.expect("params").get();
        let (a, b): (i64, i64) = serde_json::from_str(params).expect("add params");
        if i > 0 {
            body.push(b',');
        }
        floor_answer(env.id.expect("a request"), a + b, body);
    }
    body.push(b']');
    floor_frame(body, out);
}

// ---------------------------------------------------------------------------------------
// Ours.

/// How the `didOpen` handler takes its params.
#[derive(Clone, Copy)]
enum Params {
    /// Typed: `Box<RawValue>`, decoded by serde from the params text (a second scan and a
    /// copy of all 64 KiB).
    Typed,
    /// Raw: the params text as received, as the floor's handler takes it.
    Raw,
}

fn router(params: Params) -> Router {
    let mut router = Router::new();
    router.method::<Add, _>(|(a, b)| Ok(a + b)).unwrap();
    match params {
        Params::Typed => router
            .method::<DidOpen, _>(|params| {
                black_box(params);
                Ok(())
            })
            .unwrap(),
        Params::Raw => router
            .raw_method(DidOpen::NAME, |params, out| {
                black_box(params);
                out.extend_from_slice(b"null");
                Ok(())
            })
            .unwrap(),
    }
    router
        .notification::<Notify, _>(|(a, b)| {
            black_box(a + b);
        })
        .unwrap();
    router
}

struct Server {
    router: Router,
    conn: Connection,
    reply: Reply,
}

impl Server {
    fn new(params: Params) -> Self {
        let mut config = sansrpc::endpoint::Config::default();
        config.framing = Some(Framing::ContentLength);
        Server {
            router: router(params),
            conn: Connection::new(Config::new(config), Instant::ZERO),
            reply: Reply::default(),
        }
    }

    /// Frames in, every request answered on this thread, frames out into `out`.
    #[inline(never)]
    fn serve(&mut self, frame: &[u8], out: &mut Vec<u8>) {
        out.clear();
        self.conn.handle_input(frame, Instant::ZERO).expect("input");
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::Request { handle, request } => {
                    self.router.dispatch(&request, &mut self.reply);
                    drop(request);
                    self.reply.answer(&mut self.conn, handle);
                }
                Event::Notification(n) => self.router.notify(&n),
                other => panic!("unexpected {other:?}"),
            }
        }
        while self.conn.poll_transmit(out).is_some() {}
        self.conn
            .handle_write(!out.is_empty(), false, Instant::ZERO);
    }
}

// ---------------------------------------------------------------------------------------
// Frames and the runs.

fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn add_request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{id}}}"#)
}

fn did_open(target: usize) -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < target {
        text.push_str(&format!(
            "fn entry_{i}() -> &'static str {{ \"line {i}\\n\\t\u{e9}\" }}\n"
        ));
        i += 1;
    }
    let params = serde_json::json!({
        "textDocument": {"uri": "file:///src/lib.rs", "languageId": "rust", "version": 1, "text": text}
    });
    format!(r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{params},"id":7}}"#)
}

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: usize) {
    group.throughput(Throughput::Bytes(bytes as u64));
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
}

fn workload(c: &mut Criterion, name: &str, frame: Vec<u8>, batch: bool) {
    workload_with(
        c,
        name,
        frame,
        batch,
        &[("connection + router", Params::Typed)],
    );
}

/// One group: the floor, then sansrpc with each way of taking params.
fn workload_with(
    c: &mut Criterion,
    name: &str,
    frame: Vec<u8>,
    batch: bool,
    ours: &[(&str, Params)],
) {
    let floor = if batch { floor_batch } else { floor_single };
    let (mut body, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    floor(&frame, &mut body, &mut a);
    let mut servers = Vec::new();
    for &(label, params) in ours {
        let mut server = Server::new(params);
        server.serve(&frame, &mut b);
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{name}: the floor and sansrpc ({label}) write the same frames"
        );
        servers.push((label, server));
    }
    let mut group = c.benchmark_group(name);
    configure(&mut group, frame.len());
    group.bench_function("framed floor", |bn| {
        bn.iter(|| floor(black_box(&frame), &mut body, &mut a))
    });
    for (label, server) in &mut servers {
        group.bench_function(*label, |bn| {
            bn.iter(|| server.serve(black_box(&frame), &mut b))
        });
    }
    group.finish();
}

fn server_path(c: &mut Criterion) {
    workload(c, "server_W1_add", framed(&add_request(1)), false);
    let entries: Vec<String> = (1..=100).map(add_request).collect();
    let batch = format!("[{}]", entries.join(","));
    workload(c, "server_W2_batch_100", framed(&batch), true);
    workload_with(
        c,
        "server_W3_did_open_64k",
        framed(&did_open(64 * 1024)),
        false,
        &[
            ("connection + router", Params::Typed),
            ("connection + router, raw params", Params::Raw),
        ],
    );
    let notify = r#"{"jsonrpc":"2.0","method":"notify","params":[1,2]}"#;
    workload(c, "server_W4_notification", framed(notify), false);
}

criterion_group!(benches, server_path);
criterion_main!(benches);
