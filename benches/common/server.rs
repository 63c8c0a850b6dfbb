//! The server path's workloads, shared by the criterion bench (`server_path`) and the
//! interleaved runner (`interleaved`): the framed serde_json floor, the sansrpc server
//! (one `Connection`, a typed `Router`, Content-Length framing) and the frames. The bench
//! that includes it includes `common/floor.rs` beside it, as `floor`.
#![allow(dead_code)]

use std::hint::black_box;

use sansrpc::codec::Framing;
use sansrpc::connection::{Connection, Event};
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

use super::floor::{Envelope, ResultResponse};

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

/// W1, W3, W4: one message; W3's handler takes the params as they are.
#[inline(never)]
pub fn floor_single(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
    floor_single_with(frame, body, out, false)
}

/// W3 as sansrpc's typed handler takes it: the params decoded as a `Box<RawValue>`, by the
/// same serde_json call.
#[inline(never)]
pub fn floor_single_typed(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
    floor_single_with(frame, body, out, true)
}

#[inline(always)]
fn floor_single_with(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>, typed: bool) {
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
            if typed {
                let params: Box<SerdeRaw> = serde_json::from_str(params).expect("params");
                black_box(params);
            } else {
                black_box(params);
            }
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
pub fn floor_batch(frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) {
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
pub enum Params {
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

pub struct Server {
    router: Router,
    conn: Connection,
    reply: Reply,
}

impl Server {
    pub fn new(params: Params) -> Self {
        let mut config = sansrpc::connection::Config::default();
        config.framing = Some(Framing::ContentLength);
        Server {
            router: router(params),
            conn: Connection::new(config, Instant::ZERO),
            reply: Reply::default(),
        }
    }

    /// Frames in, every request answered on this thread, frames out into `out`.
    #[inline(never)]
    pub fn serve(&mut self, frame: &[u8], out: &mut Vec<u8>) {
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

pub fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

pub fn add_request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{id}}}"#)
}

pub fn did_open(target: usize) -> String {
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

/// A floor: a function that answers a frame into `out` (`body` is its scratch).
pub type Floor = fn(&[u8], &mut Vec<u8>, &mut Vec<u8>);

/// A workload: its name, the frame, its floors (the first is `"framed floor"`), and the
/// ways of taking params sansrpc is measured with, each with the floor (an index into
/// `floors`) that does the same application work.
pub struct Workload {
    pub name: &'static str,
    pub frame: Vec<u8>,
    pub floors: Vec<(&'static str, Floor)>,
    pub ours: &'static [(&'static str, Params, usize)],
}

const TYPED: &[(&str, Params, usize)] = &[("connection + router", Params::Typed, 0)];

fn single() -> Vec<(&'static str, Floor)> {
    vec![("framed floor", floor_single as Floor)]
}

/// W1 to W4.
pub fn workloads() -> Vec<Workload> {
    let entries: Vec<String> = (1..=100).map(add_request).collect();
    let notify = r#"{"jsonrpc":"2.0","method":"notify","params":[1,2]}"#;
    vec![
        Workload {
            name: "server_W1_add",
            frame: framed(&add_request(1)),
            floors: single(),
            ours: TYPED,
        },
        Workload {
            name: "server_W2_batch_100",
            frame: framed(&format!("[{}]", entries.join(","))),
            floors: vec![("framed floor", floor_batch as Floor)],
            ours: TYPED,
        },
        Workload {
            name: "server_W3_did_open_64k",
            frame: framed(&did_open(64 * 1024)),
            floors: vec![
                ("framed floor", floor_single as Floor),
                ("framed floor, typed params", floor_single_typed as Floor),
            ],
            ours: &[
                ("connection + router", Params::Typed, 1),
                ("connection + router, raw params", Params::Raw, 0),
            ],
        },
        Workload {
            name: "server_W4_notification",
            frame: framed(notify),
            floors: single(),
            ours: TYPED,
        },
    ]
}

/// A server for `params`, checked to write byte for byte what `floor` writes for `w`.
pub fn checked_server(w: &Workload, label: &str, params: Params, floor: Floor) -> Server {
    let (mut body, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    floor(&w.frame, &mut body, &mut a);
    let mut server = Server::new(params);
    server.serve(&w.frame, &mut b);
    assert_eq!(
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b),
        "{}: the floor and sansrpc ({label}) write the same frames",
        w.name
    );
    server
}

/// One call of a floor, in a function of its own that a profiler can count calls of
/// (`scripts/instructions` does).
#[inline(never)]
pub fn floor_once(floor: Floor, frame: &[u8], body: &mut Vec<u8>, out: &mut Vec<u8>) -> usize {
    floor(frame, body, out);
    black_box(out.len())
}

/// One call of the sansrpc server, in a function of its own that a profiler can count.
#[inline(never)]
pub fn serve_once(server: &mut Server, frame: &[u8], out: &mut Vec<u8>) -> usize {
    server.serve(frame, out);
    black_box(out.len())
}
