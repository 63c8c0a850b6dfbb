//! Many connections open at once: C connections (`--open`, default 10,000; 1,000 with
//! `--quick`) opened to one server and all kept open; once every one is open, each sends one
//! request (all sent before any answer is read), and every answer is read and checked.
//! Connection setup is where a server that does work per open connection shows it (a list
//! of connections walked at each accept is quadratic), which the burst of the HTTP tables
//! (100 open at a time) cannot see.
//!
//! Per run: the connections served per second (C over the run, from the first connect to the
//! last answer), the time to open them and the time their requests took, the server's CPU
//! time per connection (its setup and one request; read from `/proc` as the other tables
//! read it) and its RSS growth per connection with all of them open. For TCP (the floor,
//! sansrpc), WebSocket (the floor, sansrpc, jsonrpsee) and HTTP/1.1 (the floor, sansrpc,
//! axum-floor, sansrpc-axum, jsonrpsee): the floors are `floor-server tcp|ws|http`, and
//! `rpc-axum-floor-server` (axum answering each body as the floor does) is what any
//! JSON-RPC service mounted in axum starts from. Connections are
//! opened 200 at a time, and every server listens with a backlog of 4,096 (`backlog.rs`),
//! so the kernel drops no handshake. Each server is started fresh, warmed up with 200
//! connections, then the servers take turns: a run of each, 3 times over (1 with
//! `--quick`, R with `--runs R`); each column shows the median run, each ratio the median
//! of the ratios of the runs made in the same turn. Between runs the connections are
//! closed and the server given time to end them (until its CPU time stops growing, 5 s at most). Every run is bounded
//! in time (60 s).

use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio_tungstenite::tungstenite::Message;

use crate::client::{self, Open, Transport};
use crate::heads::cpu_time;
use crate::{fmt_value, Options, Server, WORKLOAD_LIMIT};

/// Connections being opened at once.
const CONNECTING: usize = 200;
/// Connections of the warm-up run.
const WARM_UP: usize = 200;

/// One measured run.
struct Run {
    open: usize,
    /// Wrong answers.
    errors: u64,
    /// From the first connect to the last answer.
    elapsed: Duration,
    /// Opening every connection.
    opening: Duration,
    /// From the first request sent to the last answer read.
    asking: Duration,
    cpu: Duration,
    /// The server's RSS with every connection open over its RSS as it started, in bytes
    /// (the allocator keeps what a run freed, so a later run shows the peak of all).
    rss: u64,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.open as f64 / self.elapsed.as_secs_f64()
    }

    fn cpu_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.open.max(1) as f64
    }

    fn kib_per_connection(&self) -> f64 {
        self.rss as f64 / 1024.0 / self.open.max(1) as f64
    }
}

/// Waits until the server `pid` has done with what it was given: its CPU time stops growing
/// for 100 ms (5 s at most).
async fn settle(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = cpu_time(pid).ok();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = cpu_time(pid).ok();
        if now == last {
            return;
        }
        last = now;
    }
}

/// One run: `count` connections to `server` for `transport`, opened, then a request on
/// each; the server's RSS growth over `idle` (its RSS as it started) with all of them open.
async fn run(
    server: &Server,
    idle: u64,
    transport: Transport,
    count: usize,
) -> Result<Run, String> {
    let (addr, pid) = (server.addr, server.child.id());
    settle(pid).await;
    let (cpu, start) = (cpu_time(pid)?, Instant::now());
    let mut open = Vec::with_capacity(count);
    while open.len() < count {
        let chunk = (count - open.len()).min(CONNECTING);
        let opened = try_join_all((0..chunk).map(|_| client::open_one(addr, transport)));
        open.extend(opened.await?);
    }
    let opening = start.elapsed();
    let asked = Instant::now();
    let errors = ask_all(&mut open, transport).await?;
    let (asking, elapsed) = (asked.elapsed(), start.elapsed());
    let cpu = cpu_time(pid)?.saturating_sub(cpu);
    let rss = server.rss()?.saturating_sub(idle);
    drop(open);
    settle(pid).await;
    Ok(Run {
        open: count,
        errors,
        elapsed,
        opening,
        asking,
        cpu,
        rss,
    })
}

/// Sends one request on every connection of `open`, then reads and checks every answer:
/// the wrong ones.
async fn ask_all(open: &mut [Open], transport: Transport) -> Result<u64, String> {
    let http = transport == Transport::Http;
    for (id, connection) in open.iter_mut().enumerate() {
        let id = id as u64;
        match connection {
            Open::Stream(stream) => client::send(stream, http, id).await?,
            Open::Ws(ws) => ws
                .send(Message::text(client::request_string(id)))
                .await
                .map_err(|e| e.to_string())?,
        }
    }
    let mut errors = 0;
    for (id, connection) in open.iter_mut().enumerate() {
        let id = id as u64;
        let right = match connection {
            Open::Stream(stream) => client::answer(stream, http, id).await?,
            Open::Ws(ws) => loop {
                match ws.next().await {
                    Some(Ok(Message::Text(text))) => {
                        break client::verify(text.as_bytes()) == Some(id);
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(other)) => return Err(format!("unexpected message {other:?}")),
                    Some(Err(e)) => return Err(e.to_string()),
                    None => return Err("closed by the server".into()),
                }
            },
        };
        errors += u64::from(!right);
    }
    Ok(errors)
}

/// A server's runs, or why it failed.
struct Row {
    name: &'static str,
    /// The server, and its RSS as it started.
    server: Option<(Server, u64)>,
    runs: Vec<Run>,
    errors: u64,
    failed: Option<String>,
}

/// The servers of a transport: the name in the table, the binary, its arguments.
fn servers(
    transport: Transport,
) -> &'static [(&'static str, &'static str, &'static [&'static str])] {
    match transport {
        Transport::Tcp => &[
            ("floor", "floor-server", &["tcp"]),
            ("sansrpc", "sansrpc-server", &["tcp"]),
        ],
        Transport::Ws => &[
            ("floor", "floor-server", &["ws"]),
            ("sansrpc", "sansrpc-server", &["ws"]),
            ("jsonrpsee", "jsonrpsee-server", &[]),
        ],
        _ => &[
            ("floor", "floor-server", &["http"]),
            ("sansrpc", "sansrpc-server", &["http"]),
            ("axum-floor", "rpc-axum-floor-server", &[]),
            ("sansrpc-axum", "sansrpc-axum-server", &["http"]),
            ("jsonrpsee", "jsonrpsee-server", &[]),
        ],
    }
}

/// [`run`], within [`WORKLOAD_LIMIT`].
async fn bounded(
    (server, idle): &(Server, u64),
    transport: Transport,
    count: usize,
) -> Result<Run, String> {
    tokio::time::timeout(WORKLOAD_LIMIT, run(server, *idle, transport, count))
        .await
        .map_err(|_| format!("no end within {WORKLOAD_LIMIT:?}"))?
}

/// Measures one transport: every server started and warmed up, then a run of each, `runs`
/// times over.
async fn scenario(opts: &Options, transport: Transport, count: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(name, bin, args) in servers(transport) {
        let mut row = Row {
            name,
            server: None,
            runs: Vec::new(),
            errors: 0,
            failed: None,
        };
        let started = match Server::start(bin, args) {
            Ok(server) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                server.rss().map(|idle| (server, idle))
            }
            Err(why) => Err(why),
        };
        match started {
            Ok(server) => match bounded(&server, transport, WARM_UP.min(count)).await {
                Ok(warm) => {
                    row.errors = warm.errors;
                    row.server = Some(server);
                }
                Err(why) => row.failed = Some(why),
            },
            Err(why) => row.failed = Some(why),
        }
        rows.push(row);
    }
    let runs = opts.open_runs;
    for _ in 0..runs {
        for row in &mut rows {
            let Some(server) = &row.server else { continue };
            match bounded(server, transport, count).await {
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

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median of the ratios of `value` between each run of `runs` and the run of `base`
/// made in the same turn.
fn paired(runs: &[Run], base: &[Run], value: impl Fn(&Run) -> f64) -> String {
    if runs.len() != base.len() || runs.is_empty() {
        return "n/a".into();
    }
    let ratios = runs.iter().zip(base).map(|(r, b)| value(r) / value(b));
    format!("{:.2}", median(ratios.collect()))
}

/// Prints a transport's table: its errors (wrong answers, failed servers).
fn print(title: &str, baseline: &str, rows: &[Row]) -> u64 {
    println!("\n### {title}\n");
    println!(
        "| server | connections/s | ratio to {baseline} | opening, s | requests, s | server CPU \
         µs per connection | CPU ratio to {baseline} | CPU ratio to the floor | RSS KiB per \
         connection | errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let runs_of = |name: &str| {
        rows.iter()
            .find(|r| r.name == name && r.failed.is_none())
            .map_or(&[][..], |r| &r.runs[..])
    };
    let (base, floor) = (runs_of(baseline), runs_of("floor"));
    let mut errors = 0;
    for row in rows {
        errors += row.errors;
        if let Some(why) = &row.failed {
            errors += 1;
            println!("| {} | failed: {why} | | | | | | | | 1 |", row.name);
            continue;
        }
        let of = |value: fn(&Run) -> f64| median(row.runs.iter().map(value).collect());
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.1} | {} | {} | {:.1} | {} |",
            row.name,
            fmt_value(of(Run::per_second), "requests"),
            paired(&row.runs, base, Run::per_second),
            of(|r| r.opening.as_secs_f64()),
            of(|r| r.asking.as_secs_f64()),
            of(Run::cpu_us),
            paired(&row.runs, base, Run::cpu_us),
            paired(&row.runs, floor, Run::cpu_us),
            of(Run::kib_per_connection),
            row.errors,
        );
    }
    errors
}

/// The measured tables, printed with the others.
pub struct Tables(Vec<(String, &'static str, Vec<Row>)>);

impl Tables {
    /// Prints the tables: their errors.
    pub fn print(&self) -> u64 {
        self.0
            .iter()
            .map(|(title, baseline, rows)| print(title, baseline, rows))
            .sum()
    }
}

/// Measures the transports `opts` asks for (`--only`).
pub async fn run_all(opts: &Options) -> Tables {
    let count = opts.open;
    let mut tables = Vec::new();
    for (transport, baseline) in [
        (Transport::Tcp, "floor"),
        (Transport::Ws, "jsonrpsee"),
        (Transport::Http, "jsonrpsee"),
    ] {
        let label = match transport {
            Transport::Http => "HTTP/1.1",
            other => other.label(),
        };
        let title = format!(
            "{label}, {} connections open at once: all opened, then one request on each",
            fmt_value(count as f64, "requests")
        );
        if opts.wants(&title) {
            let rows = scenario(opts, transport, count).await;
            tables.push((title, baseline, rows));
        }
    }
    Tables(tables)
}
