//! MCP `tools/call` in process: the sansrpc-mcp server (one tool, `add`, as the load
//! generator's MCP server has) mounted on the futures driver's `AsyncRouter`, its
//! `Connection` under `Profile::Mcp` (newline framing, as over stdio), fed by an in-memory
//! byte stream and polled by hand on this thread. No socket, no executor, no clock but the
//! driver's own.
//!
//! The session is initialized once; each iteration writes one `tools/call` of `add` and
//! polls the driver once, which reads it, runs the tool's handler, and writes the JSON
//! answer. `scripts/instructions` counts `mcp_call_once` (one call each).
//!
//! The second workload is the same call over Streamable HTTP without the HTTP library: a
//! POST's head (the fields an MCP client sends, as `http`'s checked fields) and body go to
//! the Streamable HTTP machine (`sansrpc_mcp::streamable::Endpoint`), which hands the scanned
//! body to the session's connection tagged with its stream; the connection's answer goes
//! back to the machine, and the response is taken as parts (head, body), as a tower
//! service takes it. `scripts/instructions` counts `mcp_http_call_once`.

use std::future::Future;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sansrpc::codec::http::Head;
use sansrpc::connection::Connection;
use sansrpc::message::Scanned;
use sansrpc::Instant;
use sansrpc::{Config, Profile};
use sansrpc_futures::{Builder, Client, Driver, Received, Timer, Transport};
use sansrpc_mcp::server::{Context as ToolContext, McpError, ServerBuilder};
use sansrpc_mcp::streamable::{self, Authorized, Step, Verdict};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#;

/// What the client wrote and the server has not read, and what the server wrote.
#[derive(Default)]
struct Wire {
    input: Vec<u8>,
    output: Vec<u8>,
}

/// The server's end of the in-memory byte stream.
struct Pipe(Arc<Mutex<Wire>>);

impl Transport for Pipe {
    fn poll_receive(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let mut wire = self.0.lock().unwrap();
        if wire.input.is_empty() {
            // The bench polls the driver again after it writes more.
            return Poll::Pending;
        }
        let took = conn
            .handle_input(&wire.input, now)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        wire.input.drain(..took);
        Poll::Ready(Ok(match (took, wire.input.is_empty()) {
            (_, true) => Received::Drained,
            (0, false) => Received::Stalled,
            _ => Received::Data,
        }))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let mut wire = self.0.lock().unwrap();
        while conn.poll_transmit(&mut wire.output).is_some() {}
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A timer that never fires: nothing in the bench waits on a deadline.
struct Never;

impl Timer for Never {
    fn sleep_until(
        &self,
        _: sansrpc_runtime::time::Instant,
    ) -> impl Future<Output = ()> + Send + 'static {
        std::future::pending()
    }
}

struct Bench {
    wire: Arc<Mutex<Wire>>,
    driver: Driver<Pipe, Never>,
    _client: Client,
}

impl Bench {
    /// A server with an initialized session.
    fn new() -> Self {
        let server = add_server();
        let wire = Arc::new(Mutex::new(Wire::default()));
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(server.router())
            .connect(Pipe(wire.clone()), Never);
        let mut bench = Bench {
            wire,
            driver,
            _client: client,
        };
        let answer = bench.exchange(&[INITIALIZE, INITIALIZED]);
        assert!(
            answer.contains(r#""protocolVersion":"2025-11-25""#),
            "{answer}"
        );
        bench
    }

    /// Writes `messages` (newline-framed), polls the driver once, returns what it wrote.
    fn exchange(&mut self, messages: &[&str]) -> String {
        {
            let mut wire = self.wire.lock().unwrap();
            for m in messages {
                wire.input.extend_from_slice(m.as_bytes());
                wire.input.push(b'\n');
            }
        }
        self.poll();
        let mut wire = self.wire.lock().unwrap();
        String::from_utf8(std::mem::take(&mut wire.output)).unwrap()
    }

    fn poll(&mut self) {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let polled = Pin::new(&mut self.driver).poll(&mut cx);
        assert!(polled.is_pending(), "the driver ended: {polled:?}");
    }
}

/// One `tools/call` through the server, in a function of its own that a profiler counts
/// calls of: the request written, the driver polled once, the answer taken.
#[inline(never)]
fn mcp_call_once(bench: &mut Bench, call: &[u8]) -> usize {
    bench.wire.lock().unwrap().input.extend_from_slice(call);
    bench.poll();
    let mut wire = bench.wire.lock().unwrap();
    let written = wire.output.len();
    wire.output.clear();
    black_box(written)
}

/// The machine, and the sessions' side of it: one session's connection is fed what the
/// machine hands it and writes its answers back into the machine.
struct Http {
    machine: streamable::Endpoint,
    /// The body handed to the session, with its stream's tag, not yet read.
    inbox: Option<(Scanned, u64)>,
    session: u64,
    /// Where the connection's frames are written before the machine takes them.
    frames: Vec<u8>,
}

/// The session connection's transport: the machine's hand-offs in, its frames out.
struct Handed(Arc<Mutex<Http>>);

impl Transport for Handed {
    fn poll_receive(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
        now: Instant,
    ) -> Poll<io::Result<Received>> {
        let Some((mut scanned, tag)) = self.0.lock().unwrap().inbox.take() else {
            return Poll::Pending;
        };
        conn.handle_scanned_tagged(&mut scanned, tag, now)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        Poll::Ready(Ok(Received::Drained))
    }

    fn poll_transmit(
        &mut self,
        _: &mut Context<'_>,
        conn: &mut Connection,
    ) -> Poll<io::Result<()>> {
        let mut guard = self.0.lock().unwrap();
        let http = &mut *guard;
        while let Some((len, tag)) = conn.poll_transmit_tagged(&mut http.frames) {
            let frame = &http.frames[http.frames.len() - len..];
            http.machine
                .handle_outgoing(http.session, frame, tag, Instant::ZERO);
            http.frames.clear();
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

struct HttpBench {
    http: Arc<Mutex<Http>>,
    driver: Driver<Handed, Never>,
    _client: Client,
    session_id: String,
}

/// Session ids and event ids: the bench needs no secret.
fn entropy(bytes: &mut [u8]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = i as u8;
    }
}

impl HttpBench {
    /// A machine with one session, initialized over it.
    fn new() -> Self {
        let mut machine = streamable::Endpoint::new(streamable::Config::default());
        let head = http_head(None);
        let (verdict, scanned) = machine.handle_request_owned(
            &head,
            INITIALIZE.as_bytes().to_vec(),
            Authorized::NotRequired,
            None,
            Instant::ZERO,
            &mut entropy,
        );
        let Verdict::Open {
            session, stream, ..
        } = verdict
        else {
            panic!("a new session: {verdict:?}")
        };
        let http = Arc::new(Mutex::new(Http {
            machine,
            inbox: Some((scanned.expect("handed on"), stream)),
            session,
            frames: Vec::new(),
        }));
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(add_server().router())
            .connect(Handed(http.clone()), Never);
        let mut bench = HttpBench {
            http,
            driver,
            _client: client,
            session_id: String::new(),
        };
        bench.poll();
        let (head, body) = bench.take(stream);
        let head = head.expect("a head");
        bench.session_id = String::from_utf8(head.session_id.expect("a session id")).unwrap();
        assert!(body.contains(r#""protocolVersion":"2025-11-25""#), "{body}");
        let (verdict, _) = bench.post(INITIALIZED);
        assert!(matches!(verdict, Verdict::Deliver { .. }), "{verdict:?}");
        bench.poll();
        bench
    }

    /// Hands a POST of `body` in the session to the machine (and a body it hands on to the
    /// connection's inbox).
    fn post(&mut self, body: &str) -> (Verdict, Option<u64>) {
        let head = http_head(Some(&self.session_id));
        let mut http = self.http.lock().unwrap();
        let (verdict, scanned) = http.machine.handle_request_owned(
            &head,
            body.as_bytes().to_vec(),
            Authorized::NotRequired,
            None,
            Instant::ZERO,
            &mut entropy,
        );
        let stream = match verdict {
            Verdict::Open { stream, .. } => Some(stream),
            _ => None,
        };
        if let Some(scanned) = scanned {
            http.inbox = Some((scanned, stream.unwrap_or(0)));
        }
        (verdict, stream)
    }

    /// The response of `stream` so far, as parts.
    fn take(&mut self, stream: u64) -> (Option<streamable::StreamHead>, String) {
        let (mut head, mut body) = (None, Vec::new());
        let mut http = self.http.lock().unwrap();
        // The streams with something to write, as a driver wakes their writers.
        while http.machine.poll_ready().is_some() {}
        while http.machine.poll_stream_parts(stream, &mut head, &mut body) == Step::Data {}
        (head, String::from_utf8(body).unwrap())
    }

    fn poll(&mut self) {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let polled = Pin::new(&mut self.driver).poll(&mut cx);
        assert!(polled.is_pending(), "the driver ended: {polled:?}");
    }
}

/// A POST's head as an MCP client sends it (the Python SDK's fields), built from checked
/// fields as the tower service builds it from `http`'s.
fn http_head(session: Option<&str>) -> Head {
    let mut fields: Vec<(&str, &[u8])> = vec![
        ("host", b"127.0.0.1:3000"),
        ("accept-encoding", b"identity"),
        ("content-length", b"110"),
        ("content-type", b"application/json"),
        ("accept", b"application/json, text/event-stream"),
        ("mcp-protocol-version", b"2025-11-25"),
    ];
    if let Some(id) = session {
        fields.push(("mcp-session-id", id.as_bytes()));
    }
    Head::from_checked_parts("POST", "/mcp", fields, true).expect("a head")
}

/// One `tools/call` over Streamable HTTP, in a function of its own that a profiler counts
/// calls of: the head made and judged, the body handed through the machine to the
/// session's connection, the driver polled once, the answer taken as the response's body.
#[inline(never)]
fn mcp_http_call_once(bench: &mut HttpBench, call: &str) -> usize {
    let (_, stream) = bench.post(call);
    bench.poll();
    let (head, body) = bench.take(stream.expect("a stream"));
    black_box(head.map_or(0, |h| h.status as usize) + body.len())
}

/// The server of both workloads: one tool, `add`.
fn add_server() -> sansrpc_mcp::server::Server {
    ServerBuilder::new("sansrpc-bench", "0.0.0")
        .tool(
            "add",
            "Adds two integers",
            |_: ToolContext, Add { a, b }| async move {
                Ok::<_, McpError>(a.wrapping_add(b).to_string())
            },
        )
        .build()
}

fn tools_call(c: &mut Criterion) {
    let mut bench = Bench::new();
    let answer = bench.exchange(&[CALL]);
    let expected = concat!(
        r#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"3"}]},"id":2}"#,
        "\n"
    );
    assert_eq!(answer, expected);
    let call = format!("{CALL}\n").into_bytes();
    let mut group = c.benchmark_group("mcp_tools_call");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("server over connection", |b| {
        b.iter(|| assert_eq!(mcp_call_once(&mut bench, black_box(&call)), expected.len()))
    });
    let mut http = HttpBench::new();
    let (verdict, stream) = http.post(CALL);
    assert!(matches!(verdict, Verdict::Open { .. }), "{verdict:?}");
    http.poll();
    let (head, body) = http.take(stream.unwrap());
    let head = head.expect("a head");
    // The connection's frame as it wrote it (newline-framed): the body.
    assert_eq!(
        (head.status, head.sse, body.as_str()),
        (200, false, expected)
    );
    let once = 200 + expected.len();
    group.bench_function("server over Streamable HTTP", |b| {
        b.iter(|| assert_eq!(mcp_http_call_once(&mut http, black_box(CALL)), once))
    });
    group.finish();
}

criterion_group!(benches, tools_call);
criterion_main!(benches);
