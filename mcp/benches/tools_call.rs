//! MCP `tools/call` in process: the sansrpc-mcp server (one tool, `add`, as the load
//! generator's MCP server has) mounted on the futures driver's `AsyncRouter`, its
//! `Connection` under `Profile::Mcp` (newline framing, as over stdio), fed by an in-memory
//! byte stream and polled by hand on this thread. No socket, no executor, no clock but the
//! driver's own.
//!
//! The session is initialized once; each iteration writes one `tools/call` of `add` and
//! polls the driver once, which reads it, runs the tool's handler, and writes the JSON
//! answer. `scripts/instructions` counts `mcp_call_once` (one call each).

use std::future::Future;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sansrpc::connection::Connection;
use sansrpc::Instant;
use sansrpc::{Config, Profile};
use sansrpc_futures::{Builder, Client, Driver, Received, Timer, Transport};
use sansrpc_mcp::server::{Context as ToolContext, McpError, ServerBuilder};

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
    fn sleep_until(&self, _: std::time::Instant) -> impl Future<Output = ()> + Send + 'static {
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
        let server = ServerBuilder::new("sansrpc-bench", "0.0.0")
            .tool(
                "add",
                "Adds two integers",
                |_: ToolContext, Add { a, b }| async move {
                    Ok::<_, McpError>(a.wrapping_add(b).to_string())
                },
            )
            .build();
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
    group.finish();
}

criterion_group!(benches, tools_call);
criterion_main!(benches);
