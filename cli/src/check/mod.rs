//! `sansrpc check`: the compliance suite.
//!
//! The checker speaks raw bytes (it has to send malformed input), framed by the core's
//! codec, and judges every answer itself with serde_json by the rules of JSON-RPC 2.0
//! sections 4 to 6 (see [`sansrpc_compliance::judge`]); `--fuzz` generates its messages
//! with [`sansrpc_compliance::Gen`]. After every case it sends a probe request and waits
//! for its answer: a server that closed the connection or died is reported, then
//! restarted (stdio) or reconnected to (sockets); a server that stopped answering is
//! reported once, and the cases after it as not run (each would only wait its timeout).
//!
//! A section of cases is a [`cases::Section`] and a list of [`Case`]s; the runner and the
//! report take any list, so a new section is a new variant and a function returning its
//! cases, added to the list in `suite`.

mod cases;
mod conn;
mod report;
mod robust;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use sansrpc::codec::Framing;
use sansrpc_compliance::{self as compliance, Expect};

use crate::target::{Kind, Target};
use crate::{Fallible, FramingArg, ProfileArg};
use cases::{Case, Section};
use conn::{Conn, Recv};

#[derive(Args, Debug)]
#[command(after_help = "\
With no target, check starts its own demo server (sansrpc serve --stdio) and checks it.

Exit status: 0 when every required case passes, 1 when one fails (or the server stopped
answering for good), 2 when the target cannot be reached at all or the arguments are wrong.

Examples:
  sansrpc check                                    our own server, over stdio
  sansrpc check --spec-methods --fuzz 500 --seed 7
  sansrpc check --stdio \"node server.js --stdio\"
  sansrpc check --tcp 127.0.0.1:7878 --framing newline --json > report.json
  sansrpc check --unix /tmp/sansrpc.sock --timeout 5
  sansrpc check --ws ws://127.0.0.1:7879/ --spec-methods
  sansrpc check --http http://127.0.0.1:7880/ --spec-methods")]
pub struct CheckArgs {
    #[command(flatten)]
    target: Target,
    /// How messages are framed on the byte stream (ignored for WebSocket and HTTP);
    /// default: newline with --profile mcp, else content-length.
    #[arg(long, value_enum)]
    framing: Option<FramingArg>,
    /// Also run the specification's examples (section 7); the server must implement
    /// subtract, sum, update, get_data, notify_hello and notify_sum as the specification does.
    /// On by itself when no target is given (the built-in server has them).
    #[arg(long)]
    spec_methods: bool,
    /// Also send this many generated messages, valid and invalid.
    #[arg(long, value_name = "N", default_value_t = 0)]
    fuzz: u32,
    /// The seed of the generated messages (default: from the clock; the report shows it).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Seconds to wait for each answer before the case fails as timed out.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    timeout: f64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print every case, passed ones included (by default: one line per section, and
    /// every failure and advice in full).
    #[arg(short, long)]
    verbose: bool,
    /// What the protocol on top allows: `mcp` does not require null ids, fractional ids
    /// or batches (MCP forbids them); `lsp` frames with Content-Length unless --framing
    /// says otherwise; `plain` is JSON-RPC 2.0 as specified.
    #[arg(long, value_enum, default_value_t = ProfileArg::Plain)]
    profile: ProfileArg,
    /// Make the robustness cases (abusive connections beside a measuring one) required;
    /// without it they are advisory.
    #[arg(long)]
    strict: bool,
    /// Seconds an abusive connection may stay open after its abuse before its robustness
    /// case fails (default: the network defaults of the partial-frame and write-stall
    /// timeouts, 30 s, and 5 s for the close to arrive). A server with shorter timeouts is
    /// checked as well with a shorter wait.
    #[arg(long, value_name = "SECS")]
    close_wait: Option<f64>,
}

/// How a case failed; shrinking keeps an input only while it fails the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A wrong answer.
    Wrong,
    /// An answer where none is allowed, or one too many.
    Answered,
    /// No answer in time.
    TimedOut,
    /// The server stopped answering, closed the connection or died.
    Dead,
    /// Not run: the server had stopped answering, or the run was cut short, before it.
    NotRun,
}

/// The outcome of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name.
    pub id: String,
    /// Where its rule is.
    pub section: Section,
    /// What it checks.
    pub title: String,
    /// Whether a failure fails the run.
    pub required: bool,
    /// What was required.
    pub expected: String,
    /// `None` when it passed.
    pub failure: Option<Failure>,
    /// Why it failed, or a note on how it passed.
    pub why: String,
    /// The body sent.
    pub sent: Vec<u8>,
    /// The frames received for it (the probe's answer excluded).
    pub received: Vec<Vec<u8>>,
}

impl CaseResult {
    /// True when it passed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// What became of a server that stopped the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The process exited (stdio), or nothing accepts connections at its address any more.
    Gone,
    /// It closed the connection, and could not be brought back on a new one.
    Closed,
    /// It keeps the connection and answers nothing.
    Silent,
    /// It was restarted or reconnected to too many times.
    Restarts,
}

impl Fate {
    /// The short name the JSON report uses.
    pub fn key(self) -> &'static str {
        match self {
            Fate::Gone => "gone",
            Fate::Closed => "closed",
            Fate::Silent => "silent",
            Fate::Restarts => "restarts",
        }
    }
}

/// Why a run ended early: after which case, what became of the server, and how it showed.
#[derive(Debug, Clone)]
pub struct Abort {
    /// The last case run (`None`: before the first).
    pub after: Option<String>,
    /// What became of the server.
    pub fate: Fate,
    /// What was seen, in words.
    pub why: String,
}

impl std::fmt::Display for Abort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.fate {
            Fate::Gone => "the server is gone",
            Fate::Closed => "the server closed the connection and could not be reached again",
            Fate::Silent => "the server stopped answering",
            Fate::Restarts => "the server failed too often",
        };
        match &self.after {
            Some(case) => write!(f, "{what} after case {case}: {}", self.why),
            None => write!(f, "{what}: {}", self.why),
        }
    }
}

/// Runs cases against one target, keeping a connection and restoring it when needed.
pub struct Runner {
    kind: Kind,
    framing: Framing,
    timeout: Duration,
    conn: Option<Conn>,
    probes: u64,
    restarts: u32,
    /// Set when the run cannot go on.
    pub aborted: Option<Abort>,
}

/// Restarts (or reconnections) allowed in one run.
const MAX_RESTARTS: u32 = 25;

impl Runner {
    fn new(kind: Kind, framing: Framing, timeout: Duration) -> Runner {
        Runner {
            kind,
            framing,
            timeout,
            conn: None,
            probes: 0,
            restarts: 0,
            aborted: None,
        }
    }

    fn probe_body(&mut self) -> (Vec<u8>, String) {
        self.probes += 1;
        let id = format!("\"probe-{}\"", self.probes);
        let body = format!(r#"{{"jsonrpc":"2.0","method":"sansrpc.check.probe","id":{id}}}"#);
        (body.into_bytes(), id)
    }

    /// Connects (or starts the server) and checks that it answers a plain request.
    fn connect(&mut self) -> Result<(), String> {
        self.conn = None;
        let mut conn = Conn::open(&self.kind, self.framing)?;
        let (body, id) = self.probe_body();
        conn.send(&body);
        let deadline = Instant::now() + self.timeout.max(Duration::from_secs(5));
        loop {
            match conn.recv(deadline) {
                Recv::Frame(f) if compliance::single_id(&f).as_deref() == Some(&id) => break,
                Recv::Frame(_) | Recv::FramingError(_) => {}
                Recv::NoAnswer => {
                    return Err(format!(
                        "the server had no response (HTTP 204) to a plain request ({})",
                        String::from_utf8_lossy(&body)
                    ))
                }
                Recv::Refused(why) => {
                    return Err(format!(
                        "the server refused a plain request ({}): {why}",
                        String::from_utf8_lossy(&body)
                    ))
                }
                Recv::TimedOut => {
                    return Err(format!(
                        "the server did not answer a plain request ({}) within {} s",
                        String::from_utf8_lossy(&body),
                        deadline_secs(self.timeout.max(Duration::from_secs(5)))
                    ))
                }
                Recv::Closed => {
                    let why = conn
                        .exit_status()
                        .unwrap_or_else(|| "the server closed the connection".into());
                    return Err(format!("{why}, before answering a plain request"));
                }
            }
        }
        self.conn = Some(conn);
        Ok(())
    }

    /// After a server died or closed the connection in case `after`: start it again, or
    /// reconnect. A socket nothing accepts any more is a server gone.
    fn recover(&mut self, after: &str) {
        self.conn = None;
        let after = Some(after.to_owned());
        if self.restarts >= MAX_RESTARTS {
            self.aborted = Some(Abort {
                after,
                fate: Fate::Restarts,
                why: format!(
                    "stopped after {MAX_RESTARTS} restarts of the server or reconnections"
                ),
            });
            return;
        }
        self.restarts += 1;
        if let Err(why) = self.connect() {
            let (fate, why) = match refused(&self.kind) {
                Some(refusal) => (Fate::Gone, refusal),
                None => (Fate::Closed, why),
            };
            self.aborted = Some(Abort { after, fate, why });
        }
    }

    /// How a connection that ended shows the server's fate: its exit (stdio), nothing
    /// accepting connections at its address (a socket: the process is gone), or only the
    /// connection closed.
    fn ended(&self, conn: &mut Conn) -> (Fate, String) {
        if let Some(status) = conn.exit_status() {
            return (Fate::Gone, status);
        }
        if let Some(refusal) = refused(&self.kind) {
            return (Fate::Gone, format!("the server is gone: {refusal}"));
        }
        let how = match self.is_socket() {
            true => "the server closed the connection (it accepts new ones: the process lives)",
            false => "the server closed the connection",
        };
        (Fate::Closed, how.into())
    }

    fn is_socket(&self) -> bool {
        !matches!(self.kind, Kind::Stdio(_))
    }

    /// Runs one case; also returns frames that arrived before it was sent (late answers to
    /// the previous case).
    pub fn run(&mut self, case: &Case) -> (CaseResult, Vec<Vec<u8>>) {
        let mut result = CaseResult {
            id: case.id.clone(),
            section: case.section,
            title: case.title.clone(),
            required: case.required,
            expected: case.expect.to_string(),
            failure: None,
            why: String::new(),
            sent: case.body.clone(),
            received: Vec::new(),
        };
        if self.conn.is_none() && self.aborted.is_none() {
            self.recover("(the connection was lost)");
        }
        if let Some(abort) = &self.aborted {
            result.failure = Some(Failure::NotRun);
            result.why = format!("not run: {abort}");
            return (result, Vec::new());
        }
        let (probe, probe_id) = self.probe_body();
        let socket = self.is_socket();
        // Hostile and large input may take a server longer.
        let timeout = match case.expect {
            Expect::Tolerated { .. } => self.timeout * 3,
            _ if case.body.len() > 64 * 1024 => self.timeout * 3,
            _ => self.timeout,
        };
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connected above")
        };
        let strays = conn
            .drain()
            .into_iter()
            .filter_map(|r| match r {
                Recv::Frame(f) => Some(f),
                _ => None,
            })
            .collect();
        conn.send(&case.body);
        let fail = |result: &mut CaseResult, failure, why: String| {
            // A failure replaces advice given before it.
            if result.failure.is_none() || (!result.required && case.required) {
                result.failure = Some(failure);
                result.why = why;
                result.required = case.required;
            }
        };
        // Passed, with advice (an id echoed as the same value, written differently): a
        // failure that does not fail the run.
        let advise = |result: &mut CaseResult, advice: Option<String>| {
            if let (Some(advice), None) = (advice, result.failure) {
                result.failure = Some(Failure::Wrong);
                result.why = advice;
                result.required = false;
            }
        };
        let secs = deadline_secs(timeout);
        let mut closed_first = false;
        // The answer itself, when one is required.
        if matches!(
            case.expect,
            Expect::Single(_) | Expect::Batch(_) | Expect::Deep { .. } | Expect::Any { .. }
        ) {
            match conn.recv(Instant::now() + timeout) {
                Recv::Frame(f) => {
                    match compliance::judge(&case.expect, &f) {
                        Ok(advice) => advise(&mut result, advice),
                        Err(why) => fail(&mut result, Failure::Wrong, why),
                    }
                    result.received.push(f);
                }
                Recv::FramingError(e) => {
                    fail(
                        &mut result,
                        Failure::Wrong,
                        format!("the answer broke the framing: {e}"),
                    );
                }
                Recv::NoAnswer => fail(
                    &mut result,
                    Failure::Wrong,
                    "no response (HTTP 204 No Content), but one is required".into(),
                ),
                Recv::Refused(why) => fail(
                    &mut result,
                    Failure::Wrong,
                    format!("refused instead of answering: {why}"),
                ),
                Recv::TimedOut => fail(
                    &mut result,
                    Failure::TimedOut,
                    format!("timed out: no answer within {secs} s"),
                ),
                Recv::Closed => closed_first = true,
            }
        }
        if closed_first {
            let Some(mut conn) = self.conn.take() else {
                unreachable!("connected above")
            };
            let (_, why) = self.ended(&mut conn);
            fail(
                &mut result,
                Failure::Dead,
                format!("{why}, instead of answering"),
            );
            self.recover(&case.id);
            return (result, strays);
        }
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connected above")
        };
        // The probe: the server must still answer, and say nothing else first.
        conn.send(&probe);
        let deadline = Instant::now() + timeout;
        let (mut lost, mut silent, mut closed) = (false, false, None);
        loop {
            match conn.recv(deadline) {
                Recv::Frame(f) if compliance::single_id(&f).as_deref() == Some(&probe_id) => break,
                Recv::Frame(f) => {
                    match &case.expect {
                        Expect::Nothing => fail(
                            &mut result,
                            Failure::Answered,
                            "answered, but nothing may be answered".into(),
                        ),
                        Expect::Tolerated { .. } => {
                            if let Err(why) = compliance::judge(&case.expect, &f) {
                                fail(&mut result, Failure::Wrong, why);
                            }
                        }
                        _ => fail(
                            &mut result,
                            Failure::Answered,
                            "a second response arrived for one input".into(),
                        ),
                    }
                    result.received.push(f);
                }
                Recv::FramingError(e) => {
                    fail(
                        &mut result,
                        Failure::Wrong,
                        format!("the server's output broke the framing: {e}"),
                    );
                }
                // HTTP: the input had no response, as the case may require.
                Recv::NoAnswer => {}
                // HTTP: the input was refused with a status; a fair refusal of hostile
                // input, as closing the connection is.
                Recv::Refused(why) => {
                    if matches!(case.expect, Expect::Tolerated { .. }) {
                        if result.failure.is_none() {
                            result.why = format!("refused (allowed for hostile input): {why}");
                        }
                    } else {
                        fail(&mut result, Failure::Wrong, format!("refused: {why}"));
                    }
                }
                Recv::TimedOut => {
                    let why = if matches!(case.expect, Expect::Tolerated { .. } | Expect::Nothing) {
                        format!("timed out: the server did not answer a probe request sent after this input within {secs} s")
                    } else {
                        format!("the server stopped answering: no answer to a probe request sent after this input within {secs} s")
                    };
                    fail(&mut result, Failure::Dead, why);
                    silent = true;
                    break;
                }
                Recv::Closed => {
                    closed = Some(conn.exit_status());
                    break;
                }
            }
        }
        // A socket closed: the process may be gone (nothing accepts connections any more).
        if let (Some(None), true) = (&closed, socket) {
            if let Some(refusal) = refused(&self.kind) {
                closed = Some(Some(format!("the server is gone: {refusal}")));
            }
        }
        match closed {
            Some(Some(status)) => {
                fail(&mut result, Failure::Dead, status);
                lost = true;
            }
            // Closing the connection is a fair refusal of hostile input; the server must
            // live on.
            Some(None) if socket && matches!(case.expect, Expect::Tolerated { .. }) => {
                match self.connect() {
                    Ok(()) if result.failure.is_none() => {
                        result.why = "closed the connection (allowed for hostile input); a new connection is answered".into();
                    }
                    Ok(()) => {}
                    Err(why) => {
                        fail(
                            &mut result,
                            Failure::Dead,
                            format!("closed the connection, and then: {why}"),
                        );
                        lost = true;
                    }
                }
            }
            Some(None) => {
                let why = match socket {
                    true => {
                        "the server closed the connection (it accepts new ones: the process lives)"
                    }
                    false => "the server closed the connection",
                };
                fail(&mut result, Failure::Dead, why.into());
                lost = true;
            }
            None => {}
        }
        if silent {
            // A server that is alive but silent would make every case after this one
            // wait its timeout: the rest is reported as not run instead.
            self.conn = None;
            self.aborted = Some(Abort {
                after: Some(case.id.clone()),
                fate: Fate::Silent,
                why: format!("no answer to a probe request within {secs} s"),
            });
        } else if lost {
            self.recover(&case.id);
        }
        (result, strays)
    }
}

/// Why `kind`'s address accepts no connection, when it does not (the server's process is
/// gone, or never listened); `None` when it accepts one, or for stdio. A moment is given
/// first to a process that is still exiting.
fn refused(kind: &Kind) -> Option<String> {
    let attempt = || -> std::io::Result<()> {
        match kind {
            Kind::Tcp(addr) => reach(addr),
            Kind::Ws(url) | Kind::Http(url) => reach(robust::authority(url)),
            #[cfg(unix)]
            Kind::Unix(path) => std::os::unix::net::UnixStream::connect(path).map(drop),
            _ => Ok(()),
        }
    };
    std::thread::sleep(Duration::from_millis(100));
    let e = attempt().err()?;
    let place = match kind {
        Kind::Unix(path) => path.display().to_string(),
        Kind::Ws(url) | Kind::Http(url) => robust::authority(url).to_owned(),
        Kind::Tcp(addr) => addr.clone(),
        Kind::Stdio(_) => String::new(),
    };
    Some(format!(
        "nothing accepts connections at {place} any more ({e})"
    ))
}

/// Connects to `addr` (any of its addresses) within 2 s.
fn reach(addr: &str) -> std::io::Result<()> {
    use std::net::ToSocketAddrs;
    let mut last = std::io::Error::from(std::io::ErrorKind::AddrNotAvailable);
    for at in addr.to_socket_addrs()? {
        match std::net::TcpStream::connect_timeout(&at, Duration::from_secs(2)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn deadline_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// A generated message that got a wrong answer, with the smallest input that still does.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The generated message's result.
    pub original: CaseResult,
    /// The smallest input found that fails the same way, with its result.
    pub minimal: CaseResult,
    /// How many inputs shrinking ran.
    pub shrink_runs: u32,
    /// The number of an earlier violation with the same minimal input.
    pub same_as: Option<usize>,
}

/// Everything a run found.
pub struct Outcome {
    /// Fixed cases, in order.
    pub results: Vec<CaseResult>,
    /// Fuzz: seed, messages run, messages passed.
    pub fuzz: Option<(u64, u32, u32)>,
    /// Fuzz violations.
    pub violations: Vec<Violation>,
    /// Why the run ended early, if it did.
    pub aborted: Option<Abort>,
}

/// A progress bar on stderr, when stderr is a terminal.
struct Progress {
    on: bool,
    total: usize,
    done: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            total,
            done: 0,
        }
    }

    fn tick(&mut self, label: &str) {
        self.done += 1;
        if !self.on {
            return;
        }
        let width = 30;
        let filled = width * self.done / self.total.max(1);
        let label: String = label.chars().take(40).collect();
        eprint!(
            "\r\x1b[2K[{}{}] {}/{} {label}",
            "#".repeat(filled),
            " ".repeat(width - filled),
            self.done,
            self.total
        );
    }

    fn finish(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Shrink budget per violation, and for the whole run.
const SHRINK_RUNS: u32 = 300;
const SHRINK_TOTAL: u32 = 4000;

fn fuzz_case(n: u32, msg: &compliance::Msg) -> Case {
    Case {
        id: format!("fuzz.{n}"),
        section: Section::Fuzz,
        title: format!("generated message {n}"),
        body: msg.body(),
        expect: msg.expect(),
        required: true,
    }
}

/// Records a case's result, charging late answers to the case before it.
fn record(results: &mut Vec<CaseResult>, (result, strays): (CaseResult, Vec<Vec<u8>>)) {
    if let (false, Some(last)) = (strays.is_empty(), results.last_mut()) {
        if last.failure.is_none() {
            last.failure = Some(Failure::Answered);
            last.why = "an answer arrived after the case ended (late, or one too many)".into();
        }
        last.received.extend(strays);
    }
    results.push(result);
}

fn suite(runner: &mut Runner, args: &CheckArgs, seed: u64) -> Outcome {
    let mut cases = cases::basic();
    if args.spec_methods {
        cases.extend(cases::spec_examples());
    }
    cases::apply_profile(&mut cases, args.profile);
    let mut progress = Progress::new(cases.len() + args.fuzz as usize);
    let mut results = Vec::new();
    for case in &cases {
        progress.tick(&case.id);
        record(&mut results, runner.run(case));
    }
    results.extend(robust::run(
        &runner.kind,
        runner.framing,
        runner.timeout,
        args.strict,
        args.close_wait.map(Duration::from_secs_f64),
        runner.aborted.as_ref().map(ToString::to_string),
    ));
    let mut violations: Vec<Violation> = Vec::new();
    let mut fuzz = None;
    if args.fuzz > 0 {
        let mut gen = compliance::Gen::new(seed, runner.framing);
        let (mut passed, mut budget) = (0u32, SHRINK_TOTAL);
        let mut fuzz_results = Vec::new();
        for n in 1..=args.fuzz {
            if runner.aborted.is_some() {
                break;
            }
            let mut msg = gen.message();
            // Generated messages stay inside what the profile's protocol allows.
            while args.profile == ProfileArg::Mcp && cases::outside_mcp(&msg.body()) {
                msg = gen.message();
            }
            let case = fuzz_case(n, &msg);
            progress.tick(&case.id);
            let (result, strays) = runner.run(&case);
            record(&mut fuzz_results, (result.clone(), strays));
            let Some(failure) = result.failure else {
                passed += 1;
                continue;
            };
            if runner.aborted.is_some() {
                break;
            }
            let (minimal, runs) = shrink(runner, msg, result.clone(), failure, &mut budget);
            let same_as = violations
                .iter()
                .position(|v| v.minimal.sent == minimal.sent)
                .map(|i| i + 1);
            violations.push(Violation {
                original: result,
                minimal,
                shrink_runs: runs,
                same_as,
            });
        }
        // Late answers charged to a generated message that had passed.
        for r in fuzz_results.iter().filter(|r| !r.passed()) {
            if !violations.iter().any(|v| v.original.id == r.id) {
                passed = passed.saturating_sub(1);
                violations.push(Violation {
                    original: r.clone(),
                    minimal: r.clone(),
                    shrink_runs: 0,
                    same_as: None,
                });
            }
        }
        fuzz = Some((seed, fuzz_results.len() as u32, passed));
    }
    progress.finish();
    Outcome {
        results,
        fuzz,
        violations,
        aborted: runner.aborted.clone(),
    }
}

/// Greedy shrinking: take the first smaller input that fails the same way, until none
/// does or the budget is spent.
fn shrink(
    runner: &mut Runner,
    msg: compliance::Msg,
    result: CaseResult,
    failure: Failure,
    budget: &mut u32,
) -> (CaseResult, u32) {
    let (mut best, mut best_result, mut runs) = (msg, result, 0);
    'outer: loop {
        for candidate in best.shrink(runner.framing) {
            if runs >= SHRINK_RUNS || *budget == 0 || runner.aborted.is_some() {
                break 'outer;
            }
            runs += 1;
            *budget -= 1;
            let case = fuzz_case(0, &candidate);
            let (r, _) = runner.run(&case);
            if r.failure == Some(failure) {
                best = candidate;
                best_result = r;
                continue 'outer;
            }
        }
        break;
    }
    best_result.id = format!("{} (shrunk)", best_result.id);
    (best_result, runs)
}

/// Runs the verb.
pub fn run(mut args: CheckArgs) -> Fallible<ExitCode> {
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".into());
    }
    if args
        .close_wait
        .is_some_and(|secs| !(secs.is_finite() && secs >= 0.0))
    {
        return Err("--close-wait must be a number of seconds".into());
    }
    let framing_arg = args.profile.framing(args.framing);
    let kind = match args.target.kind()? {
        // The checker writes its own frames on a plain socket, to send what a library would
        // refuse to; TLS is not among what it speaks.
        Some(Kind::Ws(url) | Kind::Http(url))
            if url
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("wss://"))
                || url
                    .get(..8)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https://")) =>
        {
            return Err(format!(
                "{url}: `sansrpc check` speaks ws:// and http:// only (it writes raw frames); \
                 check the server behind its TLS, or with `sansrpc call`"
            )
            .into());
        }
        Some(kind) => kind,
        None => {
            // Our own server implements the specification's example methods.
            args.spec_methods = true;
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this program to start its server: {e}"))?;
            Kind::Stdio(vec![
                exe.to_string_lossy().into_owned(),
                "serve".into(),
                "--stdio".into(),
                "--framing".into(),
                framing_arg.name().into(),
            ])
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs())
    });
    let timeout = Duration::from_secs_f64(args.timeout);
    // WebSocket and HTTP carry whole messages: no framing, nothing for it to change.
    let (framing, framing_name) = match kind {
        Kind::Ws(_) => (Framing::ContentLength, "none (one message per text frame)"),
        Kind::Http(_) => (Framing::ContentLength, "none (one message per POST body)"),
        _ => (framing_arg.framing(), framing_arg.name()),
    };
    let mut runner = Runner::new(kind.clone(), framing, timeout);
    if let Err(why) = runner.connect() {
        return Err(format!("cannot check {}: {why}", report::describe(&kind)).into());
    }
    let started = Instant::now();
    let outcome = suite(&mut runner, &args, seed);
    let header = report::Header {
        target: report::describe(&kind),
        framing: framing_name,
        timeout: args.timeout,
        elapsed: started.elapsed(),
        restarts: runner.restarts,
    };
    drop(runner);
    let ok = report::ok(&outcome);
    if args.json {
        println!("{}", report::json(&header, &outcome));
    } else {
        print!("{}", report::text(&header, &outcome, args.verbose));
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
