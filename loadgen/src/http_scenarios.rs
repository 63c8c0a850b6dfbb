//! The HTTP/1.1 tables: requests per second and the server's CPU time per request, on four
//! scenarios, for the HTTP floor (`floor-server http`), sansrpc (`sansrpc_tokio::http::serve`,
//! what users run by default), axum's floor (`rpc-axum-floor-server`: axum answering each
//! body as the floor does), sansrpc's `RpcService` in axum, and jsonrpsee. All five are
//! single-threaded.
//!
//! - Sequential: 1 keep-alive connection, 1 request in flight.
//! - 64 keep-alive connections, 1 in flight each.
//! - M keep-alive connections (`--connections`, default 1,000), 1 in flight each.
//! - A burst of B connections (10,000; 1,000 with `--quick`), each: connect, one POST, the
//!   answer read and checked, close (the client closes); 100 at a time.
//!
//! The keep-alive connections are opened before a run's clock and CPU reading start; the
//! burst's are the run. A run's CPU time is the server's user + system time over it: its
//! threads' run time in nanoseconds (`/proc/<pid>/task/*/schedstat`; `utime + stime` of
//! `/proc/<pid>/stat`, in 10 ms ticks, where there is none), read as the newHeads
//! workload reads it.
//! The servers start together, each warms up, then take turns: a run of each, `runs` times
//! over. Each column shows the median run; a ratio is the median of the ratios of the runs
//! made in the same turn (each pair saw the same machine).

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::{join_all, try_join_all};

use crate::client::{self, Transport};
use crate::heads::cpu_time;
use crate::{fmt_value, Options, Server, DEPTH, WORKLOAD_LIMIT};

/// The servers of the HTTP tables: the name in the table, the binary, its arguments.
const SERVERS: [(&str, &str, &[&str]); 5] = [
    ("floor", "floor-server", &["http"]),
    ("sansrpc", "sansrpc-server", &["http"]),
    ("axum-floor", "rpc-axum-floor-server", &[]),
    ("sansrpc-axum", "sansrpc-axum-server", &["http"]),
    ("jsonrpsee", "jsonrpsee-server", &[]),
];
const BASELINE: &str = "jsonrpsee";
/// The hand-written server the targets are set against (issue 64: the standalone server
/// at most 1.15 times its CPU per request).
const FLOOR: &str = "floor";
/// Connections of the burst open at once: fewer than the servers' listen backlog (128:
/// tokio's `TcpListener::bind`), which a burst past it overflows (a dropped SYN is sent
/// again a second later, and the run measures that second).
const BURST_AT_ONCE: usize = 100;

#[derive(Clone, Copy)]
enum Shape {
    /// Keep-alive connections, opened before the run, one request in flight each.
    KeepAlive(usize),
    /// A connection per request, this many at once.
    Burst(usize),
}

/// One measured run.
struct Run {
    answered: u64,
    errors: u64,
    elapsed: Duration,
    cpu: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64()
    }

    fn cpu_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.answered.max(1) as f64
    }
}

/// Opens `count` connections, 50 handshakes at a time (well within any listen backlog).
async fn open(addr: SocketAddr, count: usize) -> Result<Vec<tokio::net::TcpStream>, String> {
    let mut streams = Vec::with_capacity(count);
    while streams.len() < count {
        let chunk = (count - streams.len()).min(50);
        streams.extend(try_join_all((0..chunk).map(|_| client::connect(addr))).await?);
    }
    Ok(streams)
}

/// One run of `n` requests in `shape` against the server `pid` at `addr`.
async fn run(addr: SocketAddr, pid: u32, shape: Shape, n: u64) -> Result<Run, String> {
    let next = Rc::new(Cell::new(0));
    let results: Vec<Result<(u64, u64), String>>;
    let (cpu, start);
    match shape {
        Shape::KeepAlive(connections) => {
            let mut streams = open(addr, connections).await?;
            (cpu, start) = (cpu_time(pid)?, Instant::now());
            let each = streams
                .iter_mut()
                .map(|stream| client::http_requests(stream, n, &next));
            results = join_all(each).await;
        }
        Shape::Burst(at_once) => {
            (cpu, start) = (cpu_time(pid)?, Instant::now());
            let worker = |next: Rc<Cell<u64>>| async move {
                let (mut answered, mut errors) = (0, 0);
                loop {
                    let id = next.get();
                    if id >= n {
                        return Ok((answered, errors));
                    }
                    next.set(id + 1);
                    let (connection, right) = client::hold_one(addr, Transport::Http, id).await?;
                    drop(connection);
                    answered += 1;
                    errors += u64::from(!right);
                }
            };
            results = join_all((0..at_once).map(|_| worker(next.clone()))).await;
        }
    }
    let (elapsed, cpu) = (start.elapsed(), cpu_time(pid)?.saturating_sub(cpu));
    let (mut answered, mut errors) = (0, 0);
    for result in results {
        let (a, e) = result?;
        (answered, errors) = (answered + a, errors + e);
    }
    Ok(Run {
        answered,
        errors,
        elapsed,
        cpu,
    })
}

/// A server's runs, or why it failed.
pub struct Row {
    name: &'static str,
    server: Option<Server>,
    runs: Vec<Run>,
    errors: u64,
    failed: Option<String>,
}

/// Measures one scenario: every server started and warmed up, then a run of each, `runs`
/// times over.
async fn scenario(opts: &Options, shape: Shape, n: u64) -> Vec<Row> {
    let bounded = |addr, pid, n| async move {
        tokio::time::timeout(WORKLOAD_LIMIT, run(addr, pid, shape, n))
            .await
            .map_err(|_| format!("no end within {WORKLOAD_LIMIT:?}"))?
    };
    let mut rows = Vec::new();
    for (name, bin, args) in SERVERS {
        let mut row = Row {
            name,
            server: None,
            runs: Vec::new(),
            errors: 0,
            failed: None,
        };
        match Server::start(bin, args) {
            Ok(server) => {
                let warmup = (n / 10).clamp(100, 2_000);
                match bounded(server.addr, server.child.id(), warmup).await {
                    Ok(run) => {
                        row.errors = run.errors;
                        row.server = Some(server);
                    }
                    Err(why) => row.failed = Some(why),
                }
            }
            Err(why) => row.failed = Some(why),
        }
        rows.push(row);
    }
    for _ in 0..opts.runs {
        for row in &mut rows {
            let Some((addr, pid)) = row.server.as_ref().map(|s| (s.addr, s.child.id())) else {
                continue;
            };
            match bounded(addr, pid, n).await {
                Ok(run) => {
                    row.errors += run.errors;
                    row.runs.push(run);
                }
                Err(why) => {
                    row.failed = Some(why);
                    row.server = None;
                }
            }
        }
    }
    rows
}

/// The median of `values`, and their lowest and highest.
fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

/// The median of the ratios of `value` between each run of `runs` and the run of `base`
/// made in the same turn.
fn paired(runs: &[Run], base: &[Run], value: impl Fn(&Run) -> f64) -> String {
    if runs.len() != base.len() || runs.is_empty() {
        return "n/a".into();
    }
    let ratios = runs.iter().zip(base).map(|(r, b)| value(r) / value(b));
    format!("{:.2}", median(ratios.collect()).0)
}

/// Prints a scenario's table; its errors (wrong answers, failed servers).
fn print(title: &str, rows: &[Row]) -> u64 {
    println!("\n### {title}\n");
    println!(
        "| server | requests/s | runs (lowest-highest) | ratio to {BASELINE} | server CPU µs per \
         request | runs (lowest-highest) | CPU ratio to {BASELINE} | CPU ratio to the floor | \
         errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let runs_of = |name: &str| {
        rows.iter()
            .find(|r| r.name == name && r.failed.is_none())
            .map_or(&[][..], |r| &r.runs[..])
    };
    let (base, floor) = (runs_of(BASELINE), runs_of(FLOOR));
    let mut errors = 0;
    for row in rows {
        errors += row.errors;
        if let Some(why) = &row.failed {
            errors += 1;
            println!("| {} | failed: {why} | | | | | | | 1 |", row.name);
            continue;
        }
        let (rate, rate_low, rate_high) = median(row.runs.iter().map(Run::per_second).collect());
        let (cpu, cpu_low, cpu_high) = median(row.runs.iter().map(Run::cpu_us).collect());
        println!(
            "| {} | {} | {}-{} | {} | {cpu:.1} | {cpu_low:.1}-{cpu_high:.1} | {} | {} | {} |",
            row.name,
            fmt_value(rate, "requests"),
            fmt_value(rate_low, "requests"),
            fmt_value(rate_high, "requests"),
            paired(&row.runs, base, Run::per_second),
            paired(&row.runs, base, Run::cpu_us),
            paired(&row.runs, floor, Run::cpu_us),
            row.errors,
        );
    }
    errors
}

/// The measured HTTP tables, printed with the others.
pub struct Tables(Vec<(String, Vec<Row>)>);

impl Tables {
    /// Prints the tables: their errors.
    pub fn print(&self) -> u64 {
        self.0.iter().map(|(title, rows)| print(title, rows)).sum()
    }
}

/// Measures the HTTP scenarios `opts` asks for (`--only`).
pub async fn run_all(opts: &Options) -> Tables {
    let burst: u64 = if opts.quick { 1_000 } else { 10_000 };
    let m = opts.connections;
    let scenarios = [
        (
            "HTTP, sequential: 1 keep-alive connection, 1 in flight".to_string(),
            Shape::KeepAlive(1),
            opts.requests,
        ),
        (
            format!("HTTP: {DEPTH} keep-alive connections, 1 in flight each"),
            Shape::KeepAlive(DEPTH),
            opts.requests,
        ),
        (
            format!("HTTP: {m} keep-alive connections, 1 in flight each"),
            Shape::KeepAlive(m),
            opts.requests.max(m as u64),
        ),
        (
            format!(
                "HTTP, burst: {} connections, each connect, one POST, close; {BURST_AT_ONCE} at a \
                 time",
                fmt_value(burst as f64, "requests")
            ),
            Shape::Burst(BURST_AT_ONCE),
            burst,
        ),
    ];
    let mut tables = Vec::new();
    for (title, shape, n) in scenarios {
        if opts.wants(&title) {
            let rows = scenario(opts, shape, n).await;
            tables.push((title, rows));
        }
    }
    Tables(tables)
}
