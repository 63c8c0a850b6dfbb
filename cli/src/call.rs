//! `sansrpc call`: requests and notifications in the order given on one connection, each
//! answer awaited before the next step (or all of them as one batch), through the blocking
//! adapter's client (stdio, TCP, Unix sockets) or sansrpc-tokio's (WebSocket, HTTP).

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{ArgAction, ArgMatches, Args};
use sansrpc::codec::{Decoder, Framing};
use sansrpc::connection::EndReason;
use sansrpc::method::CallError;
use sansrpc::Timeout;
use sansrpc::{ErrorObject, Limits, RawValue};
use sansrpc_blocking::{Client, Direction, Options, RawResult, StreamOptions, Tap};
use sansrpc_tokio::{http, Spawned};
use serde::Deserialize;

use crate::target::{self, Kind, Target};
use crate::{Fallible, FramingArg, ProfileArg};

#[derive(Args, Debug)]
#[command(after_help = "\
Steps (METHOD, each --call and each --notify) run in the order given, on one connection,
each answer awaited before the next step is sent: a stateful server (MCP, LSP) can be
initialized first. With --batch they go as one batch instead. Params are optional; with
none given, the message has no params member. One call prints its answer; several print
an array of {\"method\": ..., \"result\" | \"error\": ...}.

Exit status: 0 when every call has a result, 1 when the server answered an error object,
2 when there was no answer (timeout, connection failure) or the arguments are wrong.

Examples:
  sansrpc call --stdio \"sansrpc serve\" subtract '[42, 23]'
  sansrpc call --tcp 127.0.0.1:7878 subtract '{\"minuend\": 42, \"subtrahend\": 23}'
  sansrpc call --unix /tmp/sansrpc.sock --notify sink '[\"hello\"]'
  sansrpc call --tcp 127.0.0.1:7878 --call sum '[1, 2, 4]' --call get_data
  sansrpc call --stdio \"python3 server.py\" --profile mcp --call initialize '{...}' \\
      --notify notifications/initialized --call tools/list
  sansrpc call --tcp 127.0.0.1:7878 --call sum '[1, 2]' --notify sink --batch
  sansrpc call --tcp 127.0.0.1:7878 --batch calls.json --raw
  sansrpc call --ws 127.0.0.1:7879 subtract '[42, 23]'
  sansrpc call --http http://127.0.0.1:7880/ --call sum '[1, 2]' --call get_data '[]'
  sansrpc call --tcp 127.0.0.1:7878 count '{\"to\": 5}' --stream
  sansrpc call --ws 127.0.0.1:7879 rpc.subscribe '{\"topic\": \"chat.*\"}' --follow

A batch file holds a JSON array of {\"method\": ..., \"params\": ..., \"notification\": bool};
params and notification are optional.")]
pub struct CallArgs {
    #[command(flatten)]
    target: Target,
    /// The method to call (the first step).
    #[arg(value_name = "METHOD", required_unless_present_any = ["batch", "calls", "notifies"])]
    method: Option<String>,
    /// The params, a JSON array or object.
    #[arg(value_name = "PARAMS_JSON")]
    params: Option<String>,
    /// Call METHOD with PARAMS_JSON, if given (repeatable; a step, in order with --notify).
    #[arg(
        long = "call",
        id = "calls",
        num_args = 1..=2,
        value_names = ["METHOD", "PARAMS_JSON"],
        action = ArgAction::Append
    )]
    calls: Vec<String>,
    /// Send the notification METHOD with PARAMS_JSON, if given (repeatable; a step, in
    /// order with --call): nothing is answered, nothing printed.
    #[arg(
        long = "notify",
        id = "notifies",
        num_args = 1..=2,
        value_names = ["METHOD", "PARAMS_JSON"],
        action = ArgAction::Append
    )]
    notifies: Vec<String>,
    /// Send the steps as one batch instead of one after the other; with FILE, the calls in
    /// that JSON file (then put --batch FILE after METHOD).
    #[arg(long, value_name = "FILE")]
    batch: Option<Option<PathBuf>>,
    /// Show the frames sent and received, on stderr (stdio, TCP and Unix sockets).
    #[arg(long)]
    raw: bool,
    /// METHOD returns a stream: print its items one per line as they arrive (stdio, TCP
    /// and Unix sockets). --timeout applies to each pull.
    #[arg(long, requires = "method", conflicts_with_all = ["notifies", "calls", "batch"])]
    stream: bool,
    /// With --stream: pulls in flight at once.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "stream")]
    window: usize,
    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// How messages are framed on the byte stream (ignored for WebSocket and HTTP, which
    /// carry one message per frame or body); default: newline with --profile mcp, else
    /// content-length.
    #[arg(long, value_enum)]
    framing: Option<FramingArg>,
    /// The protocol on top: how a request that timed out is cancelled (`plain`, `lsp`:
    /// `$/cancelRequest {id}`; `mcp`: `notifications/cancelled {requestId, reason}`), and
    /// the default framing.
    #[arg(long, value_enum, default_value_t = ProfileArg::Plain)]
    profile: ProfileArg,
    /// `wss://` and `https://`: trust the certificates in this PEM file (a private CA, a
    /// self-signed server) instead of the Mozilla roots.
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<std::path::PathBuf>,
    /// Keep the connection open after sending and print every message the server sends
    /// (answers and notifications, e.g. pub/sub), one JSON line each, for SECS seconds
    /// (no value: until the server closes; then put it after METHOD and PARAMS). Over
    /// stdio, TCP, Unix sockets and WebSocket; the steps go one after the other, each
    /// answer awaited (and printed) before the next.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "0",
          conflicts_with_all = ["batch", "raw", "stream"])]
    follow: Option<f64>,
}

/// One entry of a batch file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    method: String,
    #[serde(default)]
    params: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    notification: bool,
}

fn params(text: Option<&str>) -> Fallible<Option<Box<RawValue>>> {
    let Some(text) = text else { return Ok(None) };
    let raw = RawValue::from_string(text.to_owned()).map_err(|e| {
        format!(
            "params are not valid JSON ({e}): {text} (a METHOD right after --call M or \
                 --notify M is read as M's params: give it as --call METHOD)"
        )
    })?;
    match raw.get().trim_start().as_bytes().first() {
        Some(b'[' | b'{') => Ok(Some(raw)),
        _ => Err(format!("params must be a JSON array or object, not {text}").into()),
    }
}

/// What the tap saw of a connection.
#[derive(Default)]
struct Seen {
    /// Bytes read from the server, framed or not.
    received: usize,
    /// The id token of the last single request sent.
    last_id: Option<String>,
}

/// A tap watching the connection: it counts the bytes the server sends, remembers the id
/// of the last request sent (to cancel it), and with `raw` prints whole frames, per
/// direction, to stderr.
fn tap(framing: Framing, raw: bool, seen: Arc<Mutex<Seen>>) -> Tap {
    let mut limits = Limits::default();
    limits.max_frame_bytes = usize::MAX / 4;
    let decoders = Arc::new(Mutex::new((
        Decoder::new(framing, &limits),
        Decoder::new(framing, &limits),
    )));
    Tap::new(move |direction, mut bytes| {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        if direction == Direction::Received {
            seen.received += bytes.len();
        }
        let mut decoders = decoders.lock().unwrap_or_else(|e| e.into_inner());
        let (decoder, arrow) = match direction {
            Direction::Sent => (&mut decoders.0, "-->"),
            Direction::Received => (&mut decoders.1, "<--"),
        };
        while !bytes.is_empty() {
            let n = decoder.feed(bytes);
            bytes = &bytes[n..];
            while let Some(frame) = decoder.next_frame() {
                match frame {
                    Ok(body) => {
                        if direction == Direction::Sent {
                            if let Some(id) = request_id(body) {
                                seen.last_id = Some(id);
                            }
                        }
                        if raw {
                            let shown = target::show_bytes(body, usize::MAX);
                            trace_line(format_args!("{arrow} {shown}"));
                        }
                    }
                    Err(e) if raw => trace_line(format_args!("{arrow} (framing error: {e})")),
                    Err(_) => {}
                }
            }
        }
    })
}

/// Writes `line` and its newline to stderr in one write: a stdio server started by `call`
/// shares that stderr, and `eprintln!` writes a line in pieces, between which the server's
/// own log lines could land (seen as `-->` and the frame split by a server's log line).
fn trace_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let mut text = line.to_string();
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The id token of a request (an object with a method and an id).
fn request_id(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        method: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let request: Request<'_> = serde_json::from_slice(body).ok()?;
    request.method?;
    request.id.map(|id| id.get().to_owned())
}

fn connect(kind: &Kind, config: Options) -> Fallible<Client> {
    let client = match kind {
        Kind::Ws(_) | Kind::Http(_) => unreachable!("served by sansrpc-tokio"),
        Kind::Stdio(words) => {
            let mut command = target::command(words);
            command.stderr(Stdio::inherit());
            sansrpc_blocking::spawn_child(&mut command, config)
                .map_err(|e| format!("cannot start {}: {e}", words[0]))?
        }
        Kind::Tcp(addr) => sansrpc_blocking::connect_tcp(&**addr, config)
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?,
        Kind::Unix(path) => connect_unix(path, config)?,
    };
    Ok(client)
}

#[cfg(unix)]
fn connect_unix(path: &std::path::Path, config: Options) -> Fallible<Client> {
    sansrpc_blocking::connect_unix(path, config)
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()).into())
}

#[cfg(not(unix))]
fn connect_unix(_: &std::path::Path, _: Options) -> Fallible<Client> {
    Err("Unix sockets are not available on this platform".into())
}

/// An error object as JSON, its tokens as the server wrote them.
fn error_json(e: &ErrorObject<'_>) -> String {
    let message = serde_json::to_string(&*e.message).unwrap_or_else(|_| "\"\"".into());
    match &e.data {
        Some(data) => format!(
            r#"{{"code":{},"message":{message},"data":{}}}"#,
            e.code,
            data.get()
        ),
        None => format!(r#"{{"code":{},"message":{message}}}"#, e.code),
    }
}

/// What one call came to: the JSON to print, and whether it was an error object.
type Answer = Fallible<(String, bool)>;

/// A call's answer, from either client.
fn call_outcome(answer: RawResult, timeout: Duration) -> Answer {
    match answer {
        Ok(raw) => Ok((raw.get().to_owned(), false)),
        Err(CallError::Rpc(e)) => Ok((error_json(&e), true)),
        Err(CallError::Ended(EndReason::TimedOut)) => {
            Err(format!("no answer within {} s", timeout.as_secs_f64()).into())
        }
        Err(e) => Err(format!("no answer: {e}").into()),
    }
}

/// One step: a request (`call`) or a notification, with params only when given.
pub struct Step {
    /// The method.
    pub method: String,
    /// The params, exactly as given; `None` sends no params member.
    pub params: Option<Box<RawValue>>,
    /// A request (else a notification).
    pub call: bool,
}

/// What `call` needs of a client, whatever the transport.
trait Rpc {
    /// One request.
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer;
    /// One notification.
    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()>;
    /// One batch; an answer per call, in order.
    fn batch(&self, steps: &[Step]) -> Fallible<Vec<Answer>>;
}

/// The blocking adapter's client (stdio, TCP, Unix sockets).
struct Blocking {
    client: Client,
    timeout: Duration,
    profile: ProfileArg,
    framing: FramingArg,
    seen: Arc<Mutex<Seen>>,
}

impl Blocking {
    /// The answer, after a timeout: cancels the request the way the profile does, and
    /// when the server sent nothing at all, names the other framing.
    fn answer(&self, answer: RawResult) -> Answer {
        if !matches!(answer, Err(CallError::Ended(EndReason::TimedOut))) {
            return call_outcome(answer, self.timeout);
        }
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let (received, last_id) = (seen.received, seen.last_id.clone());
        drop(seen);
        if let (ProfileArg::Mcp, Some(id)) = (self.profile, last_id) {
            // MCP cancels with its own notification (the core sends `$/cancelRequest`).
            let params = format!(r#"{{"requestId":{id},"reason":"timed out"}}"#);
            let params = RawValue::from_string(params)?;
            let _ = self
                .client
                .notify_raw("notifications/cancelled", Some(&params));
        }
        let mut why = format!("no answer within {} s", self.timeout.as_secs_f64());
        if received == 0 {
            let other = match self.framing {
                FramingArg::ContentLength => FramingArg::Newline,
                FramingArg::Newline => FramingArg::ContentLength,
            };
            why.push_str(&format!(
                "; not a byte came back with --framing {}: does the server use --framing {}?",
                self.framing.name(),
                other.name()
            ));
        }
        Err(why.into())
    }
}

impl Rpc for Blocking {
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer {
        self.answer(self.client.call_raw(method, params))
    }

    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()> {
        self.client
            .notify_raw(method, params)
            .map_err(|e| format!("not sent: {e}").into())
    }

    fn batch(&self, steps: &[Step]) -> Fallible<Vec<Answer>> {
        let mut batch = self.client.batch();
        for step in steps {
            if step.call {
                batch.call_raw(&step.method, step.params.as_deref());
            } else {
                batch.notify_raw(&step.method, step.params.as_deref());
            }
        }
        let results = batch.send().map_err(|e| format!("batch not sent: {e}"))?;
        Ok(results.into_iter().map(|r| self.answer(r)).collect())
    }
}

/// sansrpc-tokio's client (WebSocket, HTTP), on a runtime of its own.
struct Tokio {
    runtime: tokio::runtime::Runtime,
    connection: Spawned,
    timeout: Duration,
}

impl Tokio {
    fn connect(
        kind: &Kind,
        timeout: Duration,
        profile: ProfileArg,
        tls_ca: Option<&std::path::Path>,
    ) -> Fallible<Tokio> {
        let tls = tls_ca.map(trusting).transpose()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
        let mut config = sansrpc::connection::Config::default();
        config.default_timeout = Some(timeout);
        // The core cancels with `$/cancelRequest`, which is not MCP's.
        config.cancel_on_timeout = profile != ProfileArg::Mcp;
        let builder = sansrpc_tokio::Builder::new().config(config);
        let connection = match kind {
            Kind::Ws(url) => {
                let connect = async {
                    match tls {
                        Some(tls) => {
                            sansrpc_tokio::ws::connect_tls(url.as_str(), builder, tls).await
                        }
                        None => sansrpc_tokio::ws::connect(url.as_str(), builder).await,
                    }
                };
                runtime
                    .block_on(async { tokio::time::timeout(timeout, connect).await })
                    .map_err(|_| format!("cannot connect to {url}: timed out"))?
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?
            }
            Kind::Http(url) => {
                // Connects (and spawns the connection's driver) on this runtime, as above.
                let connect = async {
                    match tls {
                        Some(tls) => http::connect_tls(url, builder, tls).await,
                        None => http::connect(url, builder).await,
                    }
                };
                runtime
                    .block_on(async { tokio::time::timeout(timeout, connect).await })
                    .map_err(|_| format!("cannot connect to {url}: timed out"))?
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?
            }
            _ => unreachable!("served by the blocking adapter"),
        };
        Ok(Tokio {
            runtime,
            connection,
            timeout,
        })
    }

    /// Closes gracefully (what was queued goes out first).
    fn close(self) {
        let closed = self.connection.client.close();
        let done = async { tokio::time::timeout(Duration::from_secs(2), closed).await };
        let _ = self.runtime.block_on(done);
    }
}

impl Rpc for Tokio {
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer {
        let call = self.connection.client.call_raw(method, params);
        call_outcome(self.runtime.block_on(call), self.timeout)
    }

    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()> {
        let notify = self.connection.client.notify_raw(method, params);
        self.runtime
            .block_on(notify)
            .map_err(|e| format!("not sent: {e}").into())
    }

    fn batch(&self, steps: &[Step]) -> Fallible<Vec<Answer>> {
        let mut batch = self.connection.client.batch();
        for step in steps {
            if step.call {
                batch.call_raw(&step.method, step.params.as_deref());
            } else {
                batch.notify_raw(&step.method, step.params.as_deref());
            }
        }
        let results = self
            .runtime
            .block_on(batch.send())
            .map_err(|e| format!("batch not sent: {e}"))?;
        Ok(results
            .into_iter()
            .map(|r| call_outcome(r, self.timeout))
            .collect())
    }
}

/// The steps in the order they were given on the command line.
fn steps(args: &CallArgs, matches: Option<&ArgMatches>) -> Fallible<Vec<Step>> {
    let index = |id: &str| -> Vec<usize> {
        matches
            .and_then(|m| m.indices_of(id))
            .map(Iterator::collect)
            .unwrap_or_default()
    };
    let mut ordered = Vec::new();
    if let Some(method) = &args.method {
        let at = index("method").first().copied().unwrap_or(0);
        let params = params(args.params.as_deref())?;
        ordered.push((
            at,
            Step {
                method: method.clone(),
                params,
                call: true,
            },
        ));
    }
    for (id, call) in [("calls", true), ("notifies", false)] {
        let Some(occurrences) = matches.and_then(|m| m.get_occurrences::<String>(id)) else {
            continue;
        };
        let flat = index(id);
        let mut first = 0;
        for values in occurrences {
            let values: Vec<&String> = values.collect();
            let at = flat.get(first).copied().unwrap_or(usize::MAX);
            first += values.len();
            let params = params(values.get(1).map(|p| p.as_str()))?;
            ordered.push((
                at,
                Step {
                    method: values[0].clone(),
                    params,
                    call,
                },
            ));
        }
    }
    ordered.sort_by_key(|(at, _)| *at);
    Ok(ordered.into_iter().map(|(_, step)| step).collect())
}

/// Runs the verb; `matches` gives the order of the steps.
pub fn run(args: CallArgs, matches: Option<&ArgMatches>) -> Fallible<ExitCode> {
    let kind = args
        .target
        .kind()?
        .ok_or("give a target: --stdio CMD, --tcp ADDR, --unix PATH, --ws URL or --http URL")?;
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".into());
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let framing = args.profile.framing(args.framing);
    let mut steps_given = Vec::new();
    if let Some(Some(file)) = &args.batch {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let parsed: Vec<Entry> = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a batch of calls: {e}", file.display()))?;
        for entry in parsed {
            steps_given.push(Step {
                method: entry.method,
                params: params(entry.params.as_deref().map(|p| p.get()))?,
                call: !entry.notification,
            });
        }
    }
    steps_given.extend(steps(&args, matches)?);
    let steps = steps_given;
    if steps.is_empty() {
        return Err("nothing to send: give METHOD, --call, --notify or --batch FILE".into());
    }
    let batch = args.batch.is_some();

    if let Some(secs) = args.follow {
        if !(secs.is_finite() && secs >= 0.0) {
            return Err("--follow takes a number of seconds".into());
        }
        let follow = Duration::from_secs_f64(secs);
        return crate::follow::run(&kind, framing.framing(), &steps, follow, timeout);
    }
    let result = if let Kind::Ws(_) | Kind::Http(_) = kind {
        if args.raw {
            return Err("--raw shows frames on stdio, TCP and Unix sockets only".into());
        }
        if args.stream {
            return Err("--stream reads streams on stdio, TCP and Unix sockets only".into());
        }
        let client = Tokio::connect(&kind, timeout, args.profile, args.tls_ca.as_deref())?;
        let result = send(&client, &steps, batch);
        client.close();
        result
    } else {
        let mut config = Options::default();
        config.connection.framing = Some(framing.framing());
        config.connection.default_timeout = Some(timeout);
        // The core cancels with `$/cancelRequest`; MCP's cancel is sent here instead.
        config.connection.cancel_on_timeout = args.profile != ProfileArg::Mcp;
        let seen = Arc::new(Mutex::new(Seen::default()));
        config.tap = Some(tap(framing.framing(), args.raw, seen.clone()));
        let client = Blocking {
            client: connect(&kind, config)?,
            timeout,
            profile: args.profile,
            framing,
            seen,
        };
        if args.stream {
            let step = steps.first().ok_or("--stream needs a METHOD")?;
            let result = print_stream(&client, &step.method, step.params.as_deref(), args.window);
            client.client.close();
            return result;
        }
        let result = send(&client, &steps, batch);
        client.client.close();
        result
    };
    let (printed, failed) = result?;
    if let Some(text) = printed {
        println!("{}", target::pretty(&text));
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Calls a stream method and prints each item on a line of its own as it arrives; an
/// error ends the stream (printed, exit status 1).
fn print_stream(
    client: &Blocking,
    method: &str,
    params: Option<&RawValue>,
    window: usize,
) -> Fallible<ExitCode> {
    use std::io::Write;
    let options = StreamOptions::new(window.max(1), 64).timeout(Timeout::After(client.timeout));
    let items = match client.client.stream_raw(method, params, options) {
        Ok(items) => items,
        Err(e) => {
            let (json, failed) = call_outcome(Err(e), client.timeout)?;
            println!("{}", target::pretty(&json));
            return Ok(ExitCode::from(if failed { 1 } else { 2 }));
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for item in items {
        match item {
            Ok(raw) => {
                writeln!(out, "{}", raw.get())?;
                out.flush()?;
            }
            Err(e) => {
                let (json, _) = call_outcome(Err(e), client.timeout)?;
                writeln!(out, "{}", target::pretty(&json))?;
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends the steps, one after the other (each answer awaited before the next step) or as
/// one batch; returns what to print and whether an error object came back. One call
/// prints its answer; several an array of `{"method", "result" | "error"}`.
fn send(client: &impl Rpc, steps: &[Step], batch: bool) -> Fallible<(Option<String>, bool)> {
    let calls: Vec<&Step> = steps.iter().filter(|s| s.call).collect();
    let mut answers = Vec::new();
    if batch {
        for answer in client.batch(steps)? {
            answers.push(answer?);
        }
    } else {
        for step in steps {
            if !step.call {
                client.notify(&step.method, step.params.as_deref())?;
                continue;
            }
            match client.call(&step.method, step.params.as_deref()) {
                Ok(answer) => answers.push(answer),
                Err(e) if calls.len() == 1 => return Err(e),
                Err(e) => {
                    // What was answered before is printed; the step that failed is named.
                    if let Some(done) = items(&calls, &answers)? {
                        println!("{}", target::pretty(&done));
                    }
                    let n = answers.len() + 1;
                    return Err(format!("call {n} ({}): {e}", step.method).into());
                }
            }
        }
    }
    let failed = answers.iter().any(|(_, error)| *error);
    if let ([_], [(json, _)], false) = (calls.as_slice(), answers.as_slice(), batch) {
        return Ok((Some(json.clone()), failed));
    }
    Ok((items(&calls, &answers)?, failed))
}

/// The answers so far as an array of `{"method", "result" | "error"}`.
fn items(calls: &[&Step], answers: &[(String, bool)]) -> Fallible<Option<String>> {
    if answers.is_empty() {
        return Ok(None);
    }
    let mut items = Vec::new();
    for (step, (json, error)) in calls.iter().zip(answers) {
        let method = serde_json::to_string(&step.method)?;
        let key = if *error { "error" } else { "result" };
        items.push(format!(r#"{{"method":{method},"{key}":{json}}}"#));
    }
    Ok(Some(format!("[{}]", items.join(","))))
}

/// A TLS client config that trusts the certificates in the PEM file `path`.
fn trusting(
    path: &std::path::Path,
) -> Fallible<std::sync::Arc<sansrpc_tokio::tls::rustls::ClientConfig>> {
    use sansrpc_tokio::tls::rustls::pki_types::pem::PemObject;
    use sansrpc_tokio::tls::rustls::pki_types::CertificateDer;
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", path.display()).into());
    }
    sansrpc_tokio::tls::client_config_with_roots(certs)
        .map_err(|e| format!("{}: {e}", path.display()).into())
}
