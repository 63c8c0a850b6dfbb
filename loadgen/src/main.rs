//! The load generator: sansrpc end to end over loopback sockets, against a hand-written
//! floor server (`floor-server`) and jsonrpsee (`jsonrpsee-server`).
//!
//! It starts each server binary itself (from its own directory: build them together with
//! `cargo build --release`), each on `127.0.0.1:0`, reads the bound address from the
//! server's first line of output, runs one workload against it and kills it; a fresh server
//! process per workload, so no workload warms the next one. The client is the same for
//! every server: raw sockets on one current-thread runtime (one core for the client, the
//! other for the single-threaded server), framing and HTTP written here by hand,
//! tokio-tungstenite for WebSocket. Every answer is checked: its id is one asked and not
//! yet answered, its result is right (`add`: `[i, 7]` -> `i + 7` for even ids; `echo`:
//! `["hello", i]` back for odd ids). Any error is counted, reported, and makes the exit
//! status 1.
//!
//! Workloads (N requests each, default 20,000; M connections, default 1,000):
//! - TCP pipelined: one connection, Content-Length framing, 64 requests in flight
//!   (floor, sansrpc; jsonrpsee serves no raw TCP).
//! - WebSocket sequential (1 in flight) and pipelined (64 in flight), one connection, text
//!   frames (sansrpc, jsonrpsee).
//! - HTTP/1.1, four scenarios (floor, sansrpc, axum-floor, sansrpc-axum, jsonrpsee; axum-floor
//!   is `rpc-axum-floor-server`, axum answering each body as the floor does): sequential (1
//!   keep-alive connection), 64 and M keep-alive connections, each POSTing one request at
//!   a time, and a burst of 10,000 connections (1,000 with `--quick`) of one POST each,
//!   100 at a time; requests per second and the server's CPU time per request (its
//!   threads' run time from `/proc/<pid>`), each with its ratio to jsonrpsee paired by
//!   turn. See `http_scenarios.rs`.
//! - Memory: M connections opened, one request answered on each, kept open; the growth of
//!   the server's resident set (`VmRSS`) over the idle server's (TCP: floor, sansrpc;
//!   WebSocket and HTTP: sansrpc, jsonrpsee).
//! - MCP over Streamable HTTP (`mcp-sansrpc-server` against `mcp-rmcp-server`, rmcp being
//!   the official Rust SDK, both single-threaded, one `add` tool): 64 sessions calling
//!   `tools/call` one at a time each, answered with JSON bodies and with event streams; and
//!   the RSS growth with M idle sessions (one call answered on each, connections closed).
//!   Beside them `sansrpc-axum` (the tower service in axum) and `axum-floor`
//!   (`mcp-axum-floor-server`: axum with a handler that answers what the client checks and
//!   does nothing of MCP, the cost any MCP server in axum starts from).
//! - HTTP/2 with prior knowledge (h2c), one connection, 64 streams in flight: JSON-RPC
//!   (`sansrpc-axum` against jsonrpsee) and MCP `tools/call` from 64 sessions sharing the
//!   connection, JSON and SSE answers (`sansrpc-axum` and `axum-floor` against rmcp in
//!   axum; for JSON-RPC, `axum-floor` is `rpc-axum-floor-server`); hyper's HTTP/2
//!   client. The standalone sansrpc servers speak HTTP/1.1 only. See `h2.rs`.
//! - Method subscriptions, Ethereum's `newHeads` (`heads-sansrpc-server` against
//!   `heads-jsonrpsee-server`, both single-threaded, a 1 KiB block every 100 ms; beside
//!   them the floor, `heads-floor-server`, and sansrpc's topic pub/sub fed by one
//!   publisher, `heads-pubsub-server`): S WebSocket subscribers (a table for 1,000 and one
//!   for 10,000, or `--subscribers S`; beyond 1,000 the block time grows with S, to 1 s
//!   for 10,000, so that the one client keeps up), each on its own connection; over a measured
//!   window (10 s, 3 s with `--quick`, after 1 s of warm-up) the notifications delivered per
//!   second (counted by the subscribers, each one checked), the server's CPU time per
//!   notification (`/proc/<pid>`), its RSS; blocks a subscriber missed are reported.
//!   Runs alternate between the servers (3 each, 1 with `--quick`); the median by CPU per
//!   notification is shown, and the ratios (CPU per notification to the floor's,
//!   notifications per CPU-second to jsonrpsee's) are each the median of the ratios of runs
//!   made in the same turn. See `heads.rs`.
//!
//! Throughput is the median of 5 runs (1 with `--quick`), after a short warm-up on a
//! connection of its own. The servers of a workload run at once and take turns: a run of
//! each, five times over, so that all see the same machine. A throughput ratio is the median
//! of the ratios of the runs made in the same turn; the lowest and highest run are shown.
//! Every workload is bounded in time (60 s).
//!
//! - Many connections open at once (TCP, WebSocket, HTTP/1.1; the floors, sansrpc, jsonrpsee;
//!   over HTTP/1.1 also sansrpc in axum and axum's floor):
//!   C connections (default 10,000) opened and kept open, then one request on each; the
//!   connections served per second, the server's CPU per connection, its RSS per
//!   connection. See `many.rs`.
//!
//! `loadgen [--quick] [--requests N] [--connections M] [--subscribers S] [--open C]
//! [--runs R] [--only TEXT]`; `--quick` (or `LOADGEN_QUICK=1`) is N = 2,000, M = 200,
//! C = 1,000 and one run; `--runs` sets the turns each server takes (5 by default, 3 for
//! the many-connections tables: more turns narrow a median on a noisy machine); `--only http` runs only the tables whose
//! title contains "http" (any case).

#[allow(dead_code)] // shared with the servers, which use the rest
mod chain;
mod client;
mod h2;
mod heads;
mod http_scenarios;
mod many;
mod mcp;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use client::{Run, Transport};

/// How long one workload may take before it is abandoned as failed.
const WORKLOAD_LIMIT: Duration = Duration::from_secs(60);
/// Requests in flight on a pipelined connection; keep-alive connections of the second HTTP
/// table, and sessions of the MCP tables.
const DEPTH: usize = 64;

struct Options {
    requests: u64,
    connections: usize,
    /// Subscribers of the newHeads workload: a table for each count.
    subscribers: Vec<usize>,
    /// Connections of the many-connections workload.
    open: usize,
    runs: usize,
    /// Turns of the many-connections workload (`--runs`; 3 by default).
    open_runs: usize,
    quick: bool,
    /// Only the tables whose title contains this (`--only`), case-insensitive.
    only: Option<String>,
}

fn options() -> Options {
    let mut quick = std::env::var("LOADGEN_QUICK").is_ok_and(|v| v == "1");
    let (mut requests, mut connections, mut only) = (None, None, None);
    let mut subscribers = None;
    let mut open = None;
    let mut runs = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = || {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match arg.as_str() {
            "--quick" => quick = true,
            "--requests" => requests = Some(number()),
            "--connections" => connections = Some(number()),
            "--subscribers" => subscribers = Some(number() as usize),
            "--open" => open = Some(number() as usize),
            "--runs" => runs = Some((number() as usize).max(1)),
            "--only" => only = Some(args.next().unwrap_or_else(|| usage()).to_lowercase()),
            _ => usage(),
        }
    }
    Options {
        requests: requests.unwrap_or(if quick { 2_000 } else { 20_000 }),
        connections: connections.unwrap_or(if quick { 200 } else { 1_000 }) as usize,
        subscribers: subscribers.map_or_else(|| vec![1_000, 10_000], |s| vec![s]),
        open: open.unwrap_or(if quick { 1_000 } else { 10_000 }),
        runs: runs.unwrap_or(if quick { 1 } else { 5 }),
        open_runs: runs.unwrap_or(if quick { 1 } else { 3 }),
        quick,
        only,
    }
}

impl Options {
    fn wants(&self, title: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| title.to_lowercase().contains(only.as_str()))
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: loadgen [--quick] [--requests N] [--connections M] [--subscribers S] [--open C] \
         [--runs R] [--only TEXT]"
    );
    std::process::exit(2)
}

/// A server process, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    /// Starts `bin` (a sibling of this executable) with `args`, and waits for the address
    /// it prints once bound.
    fn start(bin: &str, args: &[&str]) -> Result<Server, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let path = exe.with_file_name(bin);
        let mut child = Command::new(&path)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e} (build all binaries)", path.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let server = Server {
            addr: line
                .trim()
                .parse()
                .map_err(|_| format!("{bin}: no address ({line:?})"))?,
            child,
        };
        // The port accepts: the server printed its address after binding it.
        std::net::TcpStream::connect_timeout(&server.addr, Duration::from_secs(5))
            .map_err(|e| format!("{bin} at {}: {e}", server.addr))?;
        Ok(server)
    }

    /// The server's resident set size, in bytes.
    fn rss(&self) -> Result<u64, String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(|e| e.to_string())?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .ok_or_else(|| "no VmRSS".to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The servers, and how each serves a transport: its binary and arguments
/// (`sansrpc-axum`: sansrpc's tower services mounted in axum, for HTTP and MCP).
fn server_for(name: &str, transport: Transport) -> Option<(&'static str, Vec<&'static str>)> {
    let t = transport.arg();
    match (name, transport) {
        ("floor", Transport::Tcp) => Some(("floor-server", vec![])),
        ("sansrpc", Transport::McpJson | Transport::McpSse) => {
            Some(("mcp-sansrpc-server", vec![t]))
        }
        ("rmcp", Transport::McpJson | Transport::McpSse) => Some(("mcp-rmcp-server", vec![t])),
        (
            "axum-floor",
            Transport::McpJson | Transport::McpSse | Transport::H2McpJson | Transport::H2McpSse,
        ) => Some(("mcp-axum-floor-server", vec![t])),
        ("sansrpc-axum", Transport::McpJson | Transport::McpSse | Transport::Http) => {
            Some(("sansrpc-axum-server", vec![t]))
        }
        ("sansrpc-axum", Transport::H2Http | Transport::H2McpJson | Transport::H2McpSse) => {
            Some(("sansrpc-axum-server", vec![t]))
        }
        ("rmcp", Transport::H2McpJson | Transport::H2McpSse) => Some(("mcp-rmcp-server", vec![t])),
        ("jsonrpsee", Transport::H2Http) => Some(("jsonrpsee-server", vec![])),
        ("axum-floor", Transport::H2Http | Transport::Http) => {
            Some(("rpc-axum-floor-server", vec![]))
        }
        // The standalone servers speak HTTP/1.1 only.
        (_, Transport::H2Http | Transport::H2McpJson | Transport::H2McpSse) => None,
        ("sansrpc", _) => Some(("sansrpc-server", vec![t])),
        ("jsonrpsee", Transport::Ws | Transport::Http) => Some(("jsonrpsee-server", vec![])),
        _ => None,
    }
}

/// One row of a table: a measured value or why there is none.
enum Cell {
    /// The value (a median for throughput), the errors, for throughput each run's
    /// requests per second in the order of the turns and the server's CPU time per
    /// request (the median of the runs', in µs).
    Value(f64, u64, Vec<f64>, Option<f64>),
    NotApplicable,
    Failed(String),
}

struct Table {
    title: String,
    unit: &'static str,
    baseline: &'static str,
    rows: Vec<(&'static str, Cell)>,
    /// Memory tables: the connections held, for a per-connection column.
    connections: Option<usize>,
    /// Throughput tables: the load generator's own CPU time per request (µs, the median
    /// of all runs): near a server's, the client bounds the requests per second.
    client_cpu: Option<f64>,
}

impl Table {
    fn print(&self) {
        let base = self.rows.iter().find_map(|(name, cell)| match cell {
            Cell::Value(v, _, runs, cpu) if *name == self.baseline => Some((*v, runs, *cpu)),
            _ => None,
        });
        let paired = self
            .rows
            .iter()
            .any(|(_, c)| matches!(c, Cell::Value(_, _, runs, _) if !runs.is_empty()));
        println!("\n### {}\n", self.title);
        let (per_head, per_rule) = match (self.connections, paired) {
            (Some(_), _) => (" KiB per connection |", "---:|"),
            (None, true) => (" runs (lowest-highest) |", "---:|"),
            (None, false) => ("", ""),
        };
        let cpu_shown = self
            .rows
            .iter()
            .any(|(_, c)| matches!(c, Cell::Value(_, _, _, Some(_))));
        let (cpu_head, cpu_rule) = if cpu_shown {
            (
                format!(
                    " server CPU µs per request | CPU ratio to {} |",
                    self.baseline
                ),
                "---:|---:|",
            )
        } else {
            (String::new(), "")
        };
        println!(
            "| server | {} |{per_head} ratio to {} |{cpu_head} errors |",
            self.unit, self.baseline
        );
        println!("|---|---:|{per_rule}---:|{cpu_rule}---:|");
        for (name, cell) in &self.rows {
            let blank = if per_head.is_empty() { "" } else { " |" };
            let cpu_blank = if cpu_shown { " | |" } else { "" };
            match cell {
                Cell::Value(v, errors, runs, cpu) => {
                    // Throughput: the median of the ratios of runs made in the same turn
                    // (each pair saw the same machine); else the ratio of the values.
                    let ratio = base.map_or("n/a".into(), |(b, base_runs, _)| {
                        let mut pairs: Vec<f64> =
                            runs.iter().zip(base_runs).map(|(r, b)| r / b).collect();
                        pairs.sort_by(f64::total_cmp);
                        match pairs.get(pairs.len() / 2) {
                            Some(r) if pairs.len() == runs.len() => format!("{r:.2}"),
                            _ => format!("{:.2}", v / b),
                        }
                    });
                    let per = match (self.connections, paired) {
                        (Some(m), _) => format!(" {:.1} |", v * 1024.0 / m as f64),
                        (None, true) => {
                            let low = runs.iter().copied().fold(f64::MAX, f64::min);
                            let high = runs.iter().copied().fold(0.0, f64::max);
                            format!(
                                " {}-{} |",
                                fmt_value(low, self.unit),
                                fmt_value(high, self.unit)
                            )
                        }
                        (None, false) => String::new(),
                    };
                    let cpu_cells = match (cpu_shown, cpu, base.and_then(|b| b.2)) {
                        (false, ..) => String::new(),
                        (true, Some(c), Some(b)) => format!(" {c:.2} | {:.2} |", c / b),
                        (true, Some(c), None) => format!(" {c:.2} | n/a |"),
                        (true, None, _) => " n/a | n/a |".into(),
                    };
                    println!(
                        "| {name} | {} |{per} {ratio} |{cpu_cells} {errors} |",
                        fmt_value(*v, self.unit)
                    );
                }
                Cell::NotApplicable => println!("| {name} | n/a |{blank} n/a |{cpu_blank} |"),
                Cell::Failed(why) => println!("| {name} | failed: {why} |{blank} |{cpu_blank} 1 |"),
            }
        }
        if let Some(client) = self.client_cpu {
            println!(
                "\nThe load generator's CPU per request (median of all runs): {client:.2} µs."
            );
        }
    }

    fn errors(&self) -> u64 {
        self.rows
            .iter()
            .map(|(_, c)| match c {
                Cell::Value(_, e, _, _) => *e,
                Cell::NotApplicable => 0,
                Cell::Failed(_) => 1,
            })
            .sum()
    }
}

fn fmt_value(v: f64, unit: &str) -> String {
    if unit.starts_with("requests") {
        let n = v.round() as u64;
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{v:.1}")
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Raises this process's soft limit on open files to its hard limit (the memory workload
/// holds a socket per connection; the servers inherit the limit).
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The median of `values`, if any.
fn median_of(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.per_second().total_cmp(&b.per_second()));
    let errors = runs.iter().map(|r| r.errors).sum();
    let mut mid = runs.swap_remove(runs.len() / 2);
    mid.errors = errors;
    mid
}

/// Runs a throughput workload against every server that serves `transport`, in turns: all
/// of them started and warmed up, then a run of each, `runs` times over, so that each sees
/// the same machine (on a shared machine the speed drifts within seconds, and runs made one
/// server after the other measure the drift as much as the servers). Each server's median
/// run.
async fn throughput(
    opts: &Options,
    names: &[&'static str],
    transport: Transport,
    work: impl Fn(SocketAddr, u64) -> client::BoxRun,
) -> (Vec<(&'static str, Cell)>, Option<f64>) {
    let work = &work;
    let bounded = |addr, n| async move {
        tokio::time::timeout(WORKLOAD_LIMIT, work(addr, n))
            .await
            .map_err(|_| format!("no end within {WORKLOAD_LIMIT:?}"))?
    };
    // Per server: the process (while it still serves), its runs, its warm-up's errors, or
    // why it failed.
    struct Turn {
        server: Option<Server>,
        runs: Vec<Run>,
        /// The server's CPU time per request of each run, in µs.
        cpu: Vec<f64>,
        errors: u64,
        failed: Option<String>,
    }
    let mut turns: Vec<Option<Turn>> = Vec::new();
    // The load generator's own CPU time per request, every run of every server.
    let mut client_cpu = Vec::new();
    for &name in names {
        let Some((bin, args)) = server_for(name, transport) else {
            turns.push(None);
            continue;
        };
        let mut turn = Turn {
            server: None,
            runs: Vec::new(),
            cpu: Vec::new(),
            errors: 0,
            failed: None,
        };
        match Server::start(bin, &args) {
            Ok(server) => {
                match bounded(server.addr, (opts.requests / 10).clamp(100, 2_000)).await {
                    Ok(warmup) => {
                        turn.errors = warmup.errors;
                        turn.server = Some(server);
                    }
                    Err(why) => turn.failed = Some(why),
                }
            }
            Err(why) => turn.failed = Some(why),
        }
        turns.push(Some(turn));
    }
    for _ in 0..opts.runs {
        for turn in turns.iter_mut().flatten() {
            let Some((addr, pid)) = turn.server.as_ref().map(|s| (s.addr, s.child.id())) else {
                continue;
            };
            let before = heads::cpu_time(pid).ok();
            let client_before = heads::cpu_time(std::process::id()).ok();
            match bounded(addr, opts.requests).await {
                Ok(run) => {
                    let answered = run.answered.max(1) as f64;
                    let us = |before: Option<Duration>, after: Result<Duration, String>| {
                        let spent = after.ok()?.checked_sub(before?)?;
                        Some(spent.as_secs_f64() * 1e6 / answered)
                    };
                    turn.cpu.extend(us(before, heads::cpu_time(pid)));
                    let own = heads::cpu_time(std::process::id());
                    client_cpu.extend(us(client_before, own));
                    turn.runs.push(run)
                }
                Err(why) => {
                    turn.failed = Some(why);
                    turn.server = None;
                }
            }
        }
    }
    let rows = names
        .iter()
        .zip(turns)
        .map(|(&name, turn)| {
            let cell = match turn {
                None => Cell::NotApplicable,
                Some(Turn {
                    failed: Some(why), ..
                }) => Cell::Failed(why),
                Some(turn) => {
                    let each = turn.runs.iter().map(Run::per_second).collect();
                    let mut run = median(turn.runs);
                    run.errors += turn.errors;
                    Cell::Value(run.per_second(), run.errors, each, median_of(turn.cpu))
                }
            };
            (name, cell)
        })
        .collect();
    (rows, median_of(client_cpu))
}

/// Measures the server's resident set growth with `opts.connections` open connections.
async fn memory(opts: &Options, name: &str, transport: Transport) -> Cell {
    let Some((bin, args)) = server_for(name, transport) else {
        return Cell::NotApplicable;
    };
    let result = async {
        let server = Server::start(bin, &args)?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let idle = server.rss()?;
        let open = client::hold(server.addr, transport, opts.connections);
        let (held, errors) = tokio::time::timeout(WORKLOAD_LIMIT, open)
            .await
            .map_err(|_| format!("no end within {WORKLOAD_LIMIT:?}"))??;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let loaded = server.rss()?;
        drop(held);
        let growth = loaded.saturating_sub(idle) as f64 / (1024.0 * 1024.0);
        Ok::<_, String>((growth, errors))
    };
    match result.await {
        Ok((mib, errors)) => Cell::Value(mib, errors, Vec::new(), None),
        Err(why) => Cell::Failed(why),
    }
}

/// The newHeads workload's servers: the name in the table, the binary (`floor`: one
/// encoded frame written to every socket, see `heads_floor_server.rs`), how it is
/// subscribed to.
const HEADS_SERVERS: [(&str, &str, heads::Protocol); 4] = [
    ("floor", "heads-floor-server", heads::Protocol::Ethereum),
    ("sansrpc", "heads-sansrpc-server", heads::Protocol::Ethereum),
    (
        "sansrpc pub/sub (topic)",
        "heads-pubsub-server",
        heads::Protocol::Topic,
    ),
    (
        "jsonrpsee",
        "heads-jsonrpsee-server",
        heads::Protocol::Ethereum,
    ),
];

/// Runs the newHeads workload with `subscribers`: a fresh server process per run, the
/// servers taking turns. Each server's runs (or why one failed), in the order of the turns.
async fn new_heads(opts: &Options, subscribers: usize) -> Vec<Vec<Result<heads::Outcome, String>>> {
    // The servers (started from here) read the block time from the environment.
    std::env::set_var("LOADGEN_BLOCK_MS", heads_block_ms(subscribers).to_string());
    let window = Duration::from_secs(if opts.quick { 3 } else { 10 });
    let runs = if opts.quick { 1 } else { 3 };
    let mut rows: Vec<Vec<_>> = HEADS_SERVERS.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for ((_, bin, protocol), row) in HEADS_SERVERS.iter().zip(&mut rows) {
            let run = async {
                let server = Server::start(bin, &[])?;
                let pid = server.child.id();
                let work = heads::run(
                    server.addr,
                    pid,
                    || server.rss(),
                    *protocol,
                    subscribers,
                    Duration::from_secs(1),
                    window,
                );
                // Opening 10,000 connections alone takes a while.
                let limit = WORKLOAD_LIMIT * (1 + subscribers as u32 / 2_000);
                tokio::time::timeout(limit, work)
                    .await
                    .map_err(|_| format!("no end within {limit:?}"))?
            };
            row.push(run.await);
        }
    }
    rows
}

/// The newHeads block time for `subscribers`, in milliseconds: 100 ms up to 1,000
/// subscribers (10,000 notifications a second), then longer, so that the load generator's
/// one client, which checks every notification, keeps up (1 s for 10,000: as many
/// notifications a second).
fn heads_block_ms(subscribers: usize) -> u64 {
    (subscribers as u64 / 10).max(100)
}

/// Prints the newHeads table; the errors (wrong notifications or answers, failed runs).
fn print_heads(title: &str, rows: &[Vec<Result<heads::Outcome, String>>]) -> u64 {
    println!("\n### {title}\n");
    println!(
        "| server | notifications/s | server CPU µs per notification | ÷ floor (CPU per \
         notification) | notifications per CPU-second | ratio to jsonrpsee (per CPU-second) | \
         RSS MiB | missed | errors |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let at = |wanted: &str| {
        HEADS_SERVERS
            .iter()
            .position(|(name, ..)| *name == wanted)
            .expect("a server of the table")
    };
    let (base, floor) = (at("jsonrpsee"), at("floor"));
    let mut errors = 0;
    for ((name, ..), runs) in HEADS_SERVERS.iter().zip(rows) {
        let failed = runs.iter().find_map(|r| r.as_ref().err());
        let mut ok: Vec<&heads::Outcome> = runs.iter().filter_map(|r| r.as_ref().ok()).collect();
        if let Some(why) = failed {
            errors += 1;
            if ok.is_empty() {
                println!("| {name} | failed: {why} | | | | | | | 1 |");
                continue;
            }
            eprintln!("{name}: a run failed: {why}");
        }
        // Paired ratios: run i of this server against run i of jsonrpsee, and of the floor
        // (the same turn, the machine as it was then), their median.
        let paired = |other: usize, of: fn(&heads::Outcome) -> f64| {
            let mut ratios: Vec<f64> = runs
                .iter()
                .zip(&rows[other])
                .filter_map(|(r, b)| match (r, b) {
                    (Ok(r), Ok(b)) => Some(of(r) / of(b)),
                    _ => None,
                })
                .collect();
            ratios.sort_by(f64::total_cmp);
            ratios
                .get(ratios.len() / 2)
                .map_or("n/a".into(), |r| format!("{r:.2}"))
        };
        let ratio = paired(base, heads::Outcome::per_cpu_second);
        let over_floor = paired(floor, heads::Outcome::cpu_us);
        let run_errors: u64 = ok.iter().map(|o| o.errors).sum();
        let missed: u64 = ok.iter().map(|o| o.missed).sum();
        errors += run_errors;
        ok.sort_by(|a, b| a.cpu_us().total_cmp(&b.cpu_us()));
        let mid = ok[ok.len() / 2];
        let spread = if ok.len() > 1 {
            format!(" ({:.2}-{:.2})", ok[0].cpu_us(), ok[ok.len() - 1].cpu_us())
        } else {
            String::new()
        };
        println!(
            "| {name} | {} | {:.2}{spread} | {over_floor} | {} | {ratio} | {:.1} | {missed} | \
             {run_errors} |",
            fmt_value(mid.per_second(), "requests"),
            mid.cpu_us(),
            fmt_value(mid.per_cpu_second(), "requests"),
            mid.rss as f64 / (1024.0 * 1024.0),
        );
    }
    errors
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let opts = options();
    raise_fd_limit();
    let start_load = loadavg();
    let (n, m) = (opts.requests, opts.connections);
    println!(
        "# sansrpc load generator{}: loopback, {n} requests per run, median of {} run(s)",
        if opts.quick { " (quick)" } else { "" },
        opts.runs
    );
    println!("\nload average at start: {start_load}");

    let servers = ["floor", "sansrpc", "sansrpc-axum", "jsonrpsee"];
    let mut tables = Vec::new();
    let specs: [(String, Transport, &str, usize); 3] = [
        (
            format!("TCP, pipelined: 1 connection, {DEPTH} in flight, Content-Length framing"),
            Transport::Tcp,
            "floor",
            DEPTH,
        ),
        (
            "WebSocket, sequential: 1 connection, 1 in flight".into(),
            Transport::Ws,
            "jsonrpsee",
            1,
        ),
        (
            format!("WebSocket, pipelined: 1 connection, {DEPTH} in flight"),
            Transport::Ws,
            "jsonrpsee",
            DEPTH,
        ),
    ];
    for (title, transport, baseline, depth) in specs {
        if !opts.wants(&title) {
            continue;
        }
        let (rows, client_cpu) =
            throughput(&opts, &servers, transport, |addr, n| match transport {
                Transport::Tcp => Box::pin(client::tcp_pipelined(addr, n, depth)),
                Transport::Ws => Box::pin(client::ws(addr, n, depth)),
                Transport::Http => Box::pin(client::http(addr, n, depth)),
                Transport::McpJson | Transport::McpSse => Box::pin(mcp::calls(addr, n, depth)),
                Transport::H2Http => Box::pin(h2::rpc(addr, n, depth)),
                Transport::H2McpJson | Transport::H2McpSse => {
                    Box::pin(h2::mcp_calls(addr, n, depth))
                }
            })
            .await;
        tables.push(Table {
            title,
            unit: "requests/s",
            baseline,
            rows,
            connections: None,
            client_cpu,
        });
    }
    let http = http_scenarios::run_all(&opts).await;
    let many = many::run_all(&opts).await;
    for (transport, baseline) in [
        (Transport::Tcp, "floor"),
        (Transport::Ws, "jsonrpsee"),
        (Transport::Http, "jsonrpsee"),
    ] {
        let title = format!(
            "Memory: server RSS growth with {m} open {} connections (one request answered on each)",
            transport.label()
        );
        if !opts.wants(&title) {
            continue;
        }
        let mut rows = Vec::new();
        for name in servers {
            rows.push((name, memory(&opts, name, transport).await));
        }
        tables.push(Table {
            title,
            unit: "MiB",
            baseline,
            rows,
            connections: Some(m),
            client_cpu: None,
        });
    }

    // MCP over Streamable HTTP: sansrpc's MCP server against rmcp's, the same `add` tool.
    let mcp_servers = ["axum-floor", "sansrpc", "sansrpc-axum", "rmcp"];
    for (transport, title) in [
        (
            Transport::McpJson,
            format!(
                "MCP Streamable HTTP, JSON answers: {DEPTH} sessions, tools/call, 1 in flight each \
                 (rmcp answers JSON only without sessions: its stateless mode)"
            ),
        ),
        (
            Transport::McpSse,
            format!(
                "MCP Streamable HTTP, SSE answers: {DEPTH} sessions, tools/call, 1 in flight each"
            ),
        ),
    ] {
        if !opts.wants(&title) {
            continue;
        }
        let (rows, client_cpu) = throughput(&opts, &mcp_servers, transport, |addr, n| {
            Box::pin(mcp::calls(addr, n, DEPTH))
        })
        .await;
        tables.push(Table {
            title,
            unit: "requests/s",
            baseline: "rmcp",
            rows,
            connections: None,
            client_cpu,
        });
    }
    // HTTP/2 with prior knowledge: the servers that speak it, one connection each.
    for (transport, title, baseline, names) in [
        (
            Transport::H2Http,
            format!("HTTP/2 (h2c): 1 connection, {DEPTH} streams in flight"),
            "jsonrpsee",
            &["axum-floor", "sansrpc-axum", "jsonrpsee"][..],
        ),
        (
            Transport::H2McpJson,
            format!(
                "MCP over HTTP/2 (h2c), JSON answers: {DEPTH} sessions on 1 connection, \
                 tools/call, 1 in flight each (rmcp: its stateless mode)"
            ),
            "rmcp",
            &["axum-floor", "sansrpc-axum", "rmcp"][..],
        ),
        (
            Transport::H2McpSse,
            format!(
                "MCP over HTTP/2 (h2c), SSE answers: {DEPTH} sessions on 1 connection, \
                 tools/call, 1 in flight each"
            ),
            "rmcp",
            &["axum-floor", "sansrpc-axum", "rmcp"][..],
        ),
    ] {
        if !opts.wants(&title) {
            continue;
        }
        let (rows, client_cpu) = throughput(&opts, names, transport, |addr, n| match transport {
            Transport::H2Http => Box::pin(h2::rpc(addr, n, DEPTH)),
            _ => Box::pin(h2::mcp_calls(addr, n, DEPTH)),
        })
        .await;
        tables.push(Table {
            title,
            unit: "requests/s",
            baseline,
            rows,
            connections: None,
            client_cpu,
        });
    }
    let title =
        format!("Memory: MCP server RSS growth with {m} idle sessions (one call answered on each)");
    if opts.wants(&title) {
        let mut rows = Vec::new();
        for name in mcp_servers {
            rows.push((name, memory(&opts, name, Transport::McpSse).await));
        }
        tables.push(Table {
            title,
            unit: "MiB",
            baseline: "rmcp",
            rows,
            connections: Some(m),
            client_cpu: None,
        });
    }

    let mut heads_tables = Vec::new();
    for &subscribers in &opts.subscribers {
        let title = format!(
            "Method subscriptions: {subscribers} WebSocket subscribers to newHeads, a 1 KiB block every {} ms",
            heads_block_ms(subscribers)
        );
        if opts.wants(&title) {
            let rows = new_heads(&opts, subscribers).await;
            heads_tables.push((title, rows));
        }
    }

    let mut errors = 0;
    for table in &tables {
        table.print();
        errors += table.errors();
    }
    errors += http.print();
    errors += many.print();
    for (title, rows) in &heads_tables {
        errors += print_heads(title, rows);
    }
    println!("\nload average at end: {}", loadavg());
    if errors > 0 {
        println!("\nERRORS: {errors} (wrong, missing or failed answers): see the tables above");
        std::process::exit(1);
    }
    println!("\nall answers verified, no errors");
}
