//! `sansrpc call`: one request, one notification or one batch, through the blocking
//! adapter's client (stdio, TCP, Unix sockets) or sansrpc-tokio's (WebSocket, HTTP).

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use sansrpc::codec::{Decoder, Framing};
use sansrpc::endpoint::EndReason;
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Limits, RawValue};
use sansrpc_blocking::{Client, Config, Direction, Error, StreamOptions, Tap};
use sansrpc_tokio::http;
use serde::Deserialize;

use crate::target::{self, Kind, Target};
use crate::{Fallible, FramingArg};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit status: 0 when every call has a result, 1 when the server answered an error object,
2 when there was no answer (timeout, connection failure) or the arguments are wrong.

Examples:
  sansrpc call --stdio \"sansrpc serve\" subtract '[42, 23]'
  sansrpc call --tcp 127.0.0.1:7878 subtract '{\"minuend\": 42, \"subtrahend\": 23}'
  sansrpc call --unix /tmp/sansrpc.sock --notify sink '[\"hello\"]'
  sansrpc call --tcp 127.0.0.1:7878 --call sum '[1, 2, 4]' --call get_data '[]'
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
    /// The method to call.
    #[arg(value_name = "METHOD", required_unless_present_any = ["batch", "calls"])]
    method: Option<String>,
    /// The params, a JSON array or object.
    #[arg(value_name = "PARAMS_JSON")]
    params: Option<String>,
    /// Send a notification instead of a request: nothing is answered, nothing printed.
    #[arg(long, requires = "method")]
    notify: bool,
    /// Send the calls in this JSON file as one batch.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "calls"])]
    batch: Option<PathBuf>,
    /// Add a call to a batch (repeatable): METHOD and PARAMS_JSON (`[]` for none).
    #[arg(
        long = "call",
        id = "calls",
        num_args = 2,
        value_names = ["METHOD", "PARAMS_JSON"],
        conflicts_with = "method"
    )]
    calls: Vec<String>,
    /// Show the frames sent and received, on stderr (stdio, TCP and Unix sockets).
    #[arg(long)]
    raw: bool,
    /// METHOD returns a stream: print its items one per line as they arrive (stdio, TCP
    /// and Unix sockets). --timeout applies to each pull.
    #[arg(long, requires = "method", conflicts_with = "notify")]
    stream: bool,
    /// With --stream: pulls in flight at once.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "stream")]
    window: usize,
    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// How messages are framed on the byte stream (ignored for WebSocket and HTTP, which
    /// carry one message per frame or body).
    #[arg(long, value_enum, default_value_t = FramingArg::ContentLength)]
    framing: FramingArg,
    /// Keep the connection open after sending and print every message the server sends
    /// (answers and notifications, e.g. pub/sub), one JSON line each, for SECS seconds
    /// (no value: until the server closes; then put it after METHOD and PARAMS). TCP, Unix
    /// sockets and WebSocket; each call is sent as its own request.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "0",
          conflicts_with_all = ["notify", "batch", "raw"])]
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
    let raw = RawValue::from_string(text.to_owned())
        .map_err(|e| format!("params are not valid JSON ({e}): {text}"))?;
    match raw.get().trim_start().as_bytes().first() {
        Some(b'[' | b'{') => Ok(Some(raw)),
        _ => Err(format!("params must be a JSON array or object, not {text}").into()),
    }
}

/// A tap printing whole frames, per direction, to stderr.
fn raw_tap(framing: Framing) -> Tap {
    let mut limits = Limits::default();
    limits.max_frame_bytes = usize::MAX / 4;
    let decoders = Arc::new(Mutex::new((
        Decoder::new(framing, &limits),
        Decoder::new(framing, &limits),
    )));
    Tap::new(move |direction, mut bytes| {
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
                    Ok(body) => eprintln!("{arrow} {}", target::show_bytes(body, usize::MAX)),
                    Err(e) => eprintln!("{arrow} (framing error: {e})"),
                }
            }
        }
    })
}

fn connect(kind: &Kind, config: Config) -> Fallible<Client> {
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
fn connect_unix(path: &std::path::Path, config: Config) -> Fallible<Client> {
    sansrpc_blocking::connect_unix(path, config)
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()).into())
}

#[cfg(not(unix))]
fn connect_unix(_: &std::path::Path, _: Config) -> Fallible<Client> {
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

/// A call's answer, from any client.
fn call_outcome(answer: Result<Box<RawValue>, CallError>, timeout: Duration) -> Answer {
    match answer {
        Ok(raw) => Ok((raw.get().to_owned(), false)),
        Err(CallError::Rpc(e)) => Ok((error_json(&e), true)),
        Err(CallError::Ended(EndReason::TimedOut)) => {
            Err(format!("no answer within {} s", timeout.as_secs_f64()).into())
        }
        Err(e) => Err(format!("no answer: {e}").into()),
    }
}

/// A call's answer, from the blocking client.
fn outcome(answer: Result<Box<RawValue>, Error>, timeout: Duration) -> Answer {
    match answer {
        Ok(raw) => call_outcome(Ok(raw), timeout),
        Err(Error::Call(e)) => call_outcome(Err(e), timeout),
        Err(e) => Err(format!("no answer: {e}").into()),
    }
}

/// A call's answer, from the HTTP client.
fn http_outcome(answer: Result<Box<RawValue>, http::Error>, timeout: Duration) -> Answer {
    match answer {
        Ok(raw) => call_outcome(Ok(raw), timeout),
        Err(http::Error::Call(e)) => call_outcome(Err(e), timeout),
        Err(e) => Err(format!("no answer: {e}").into()),
    }
}

/// One batch entry: method, params, and whether it is a call (else a notification).
type Entry3 = (String, Option<Box<RawValue>>, bool);

/// What `call` needs of a client, whatever the transport.
trait Rpc {
    /// One request.
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer;
    /// One notification.
    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()>;
    /// One batch; an answer per call, in order.
    fn batch(&self, entries: &[Entry3]) -> Fallible<Vec<Answer>>;
}

/// The blocking adapter's client (stdio, TCP, Unix sockets).
struct Blocking {
    client: Client,
    timeout: Duration,
}

impl Rpc for Blocking {
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer {
        let answer = self.client.call_raw(method, params, Some(self.timeout));
        outcome(answer, self.timeout)
    }

    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()> {
        self.client
            .notify_raw(method, params)
            .map_err(|e| format!("not sent: {e}").into())
    }

    fn batch(&self, entries: &[Entry3]) -> Fallible<Vec<Answer>> {
        let mut batch = self.client.batch();
        for (method, params, call) in entries {
            if *call {
                batch.call_raw(method, params.as_deref());
            } else {
                batch.notify_raw(method, params.as_deref());
            }
        }
        let pending = batch
            .send(Some(self.timeout))
            .map_err(|e| format!("batch not sent: {e}"))?;
        Ok(pending
            .into_iter()
            .map(|p| outcome(p.wait(), self.timeout))
            .collect())
    }
}

/// sansrpc-tokio's clients, on a runtime of their own.
struct Tokio {
    runtime: tokio::runtime::Runtime,
    client: TokioClient,
    timeout: Duration,
}

enum TokioClient {
    Ws(sansrpc_tokio::Connection),
    Http(Box<http::Client>),
}

impl Tokio {
    fn connect(kind: &Kind, timeout: Duration) -> Fallible<Tokio> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
        let mut config = sansrpc::endpoint::Config::default();
        config.default_timeout = Some(timeout);
        let builder = sansrpc_tokio::Builder::new().config(config);
        let client = match kind {
            Kind::Ws(url) => {
                let connect = sansrpc_tokio::ws::connect(url.as_str(), builder);
                let connection = runtime
                    .block_on(async { tokio::time::timeout(timeout, connect).await })
                    .map_err(|_| format!("cannot connect to {url}: timed out"))?
                    .map_err(|e| format!("cannot connect to {url}: {e}"))?;
                TokioClient::Ws(connection)
            }
            Kind::Http(url) => TokioClient::Http(Box::new(
                http::Client::new(url)
                    .map_err(|e| format!("not an HTTP URL: {url}: {e}"))?
                    .with_builder(builder),
            )),
            _ => unreachable!("served by the blocking adapter"),
        };
        Ok(Tokio {
            runtime,
            client,
            timeout,
        })
    }

    /// Closes a WebSocket gracefully (what was queued goes out first).
    fn close(self) {
        if let TokioClient::Ws(connection) = self.client {
            connection.shutdown.shutdown(Duration::from_secs(1));
            let done =
                async { tokio::time::timeout(Duration::from_secs(2), connection.driver).await };
            let _ = self.runtime.block_on(done);
        }
    }
}

impl Rpc for Tokio {
    fn call(&self, method: &str, params: Option<&RawValue>) -> Answer {
        match &self.client {
            TokioClient::Ws(c) => {
                let answer = self.runtime.block_on(c.client.call_raw(method, params));
                call_outcome(answer, self.timeout)
            }
            TokioClient::Http(c) => {
                let answer = self.runtime.block_on(c.call_raw(method, params));
                http_outcome(answer, self.timeout)
            }
        }
    }

    fn notify(&self, method: &str, params: Option<&RawValue>) -> Fallible<()> {
        let sent = match &self.client {
            TokioClient::Ws(c) => self
                .runtime
                .block_on(c.client.notify_raw(method, params))
                .map_err(|e| e.to_string()),
            TokioClient::Http(c) => self
                .runtime
                .block_on(c.notify_raw(method, params))
                .map_err(|e| e.to_string()),
        };
        sent.map_err(|e| format!("not sent: {e}").into())
    }

    fn batch(&self, entries: &[Entry3]) -> Fallible<Vec<Answer>> {
        let results = match &self.client {
            TokioClient::Ws(c) => {
                let mut batch = c.client.batch();
                for (method, params, call) in entries {
                    if *call {
                        batch.call_raw(method, params.as_deref());
                    } else {
                        batch.notify_raw(method, params.as_deref());
                    }
                }
                self.runtime
                    .block_on(batch.send())
                    .map_err(|e| format!("batch not sent: {e}"))?
            }
            TokioClient::Http(c) => {
                let mut batch = c.batch();
                for (method, params, call) in entries {
                    if *call {
                        batch.call_raw(method, params.as_deref());
                    } else {
                        batch.notify_raw(method, params.as_deref());
                    }
                }
                self.runtime
                    .block_on(batch.send())
                    .map_err(|e| format!("batch not sent: {e}"))?
            }
        };
        Ok(results
            .into_iter()
            .map(|r| call_outcome(r, self.timeout))
            .collect())
    }
}

/// Runs the verb.
pub fn run(args: CallArgs) -> Fallible<ExitCode> {
    let kind = args
        .target
        .kind()?
        .ok_or("give a target: --stdio CMD, --tcp ADDR, --unix PATH, --ws URL or --http URL")?;
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".into());
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let mut entries = Vec::new();
    if let Some(file) = &args.batch {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let parsed: Vec<Entry> = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a batch of calls: {e}", file.display()))?;
        for entry in parsed {
            let params = params(entry.params.as_deref().map(|p| p.get()))?;
            entries.push((entry.method, params, !entry.notification));
        }
    }
    for call in args.calls.chunks(2) {
        entries.push((
            call[0].clone(),
            params(call.get(1).map(String::as_str))?,
            true,
        ));
    }
    let single = match &args.method {
        Some(method) => Some((method.clone(), params(args.params.as_deref())?)),
        None => None,
    };

    if let Some(secs) = args.follow {
        if !(secs.is_finite() && secs >= 0.0) {
            return Err("--follow takes a number of seconds".into());
        }
        let calls: Vec<Call> = single
            .into_iter()
            .chain(entries.into_iter().map(|(m, p, _)| (m, p)))
            .collect();
        let follow = Duration::from_secs_f64(secs);
        return crate::follow::run(&kind, args.framing.framing(), &calls, follow);
    }
    let result = if let Kind::Ws(_) | Kind::Http(_) = kind {
        if args.raw {
            return Err("--raw shows frames on stdio, TCP and Unix sockets only".into());
        }
        if args.stream {
            return Err("--stream reads streams on stdio, TCP and Unix sockets only".into());
        }
        let client = Tokio::connect(&kind, timeout)?;
        let result = send(&client, single, entries, args.notify);
        client.close();
        result
    } else {
        let mut config = Config::default();
        config.framing = args.framing.framing();
        config.endpoint.default_timeout = Some(timeout);
        if args.raw {
            config.tap = Some(raw_tap(config.framing));
        }
        let client = Blocking {
            client: connect(&kind, config)?,
            timeout,
        };
        if args.stream {
            let (method, params) = single.ok_or("--stream needs a METHOD")?;
            let result = print_stream(&client, &method, params.as_deref(), args.window);
            client.client.close();
            return result;
        }
        let result = send(&client, single, entries, args.notify);
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
    let mut options = StreamOptions::new(window.max(1), 64);
    options.timeout = Some(client.timeout);
    let items = match client.client.stream_raw(method, params, options) {
        Ok(items) => items,
        Err(e) => {
            let (json, failed) = outcome(Err(e), client.timeout)?;
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
                let (json, _) = outcome(Err(e), client.timeout)?;
                writeln!(out, "{}", target::pretty(&json))?;
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

type Call = (String, Option<Box<RawValue>>);

/// Sends what was asked; returns what to print and whether an error object came back.
fn send(
    client: &impl Rpc,
    single: Option<Call>,
    entries: Vec<Entry3>,
    notify: bool,
) -> Fallible<(Option<String>, bool)> {
    if let Some((method, params)) = single {
        if notify {
            client.notify(&method, params.as_deref())?;
            return Ok((None, false));
        }
        let (json, failed) = client.call(&method, params.as_deref())?;
        return Ok((Some(json), failed));
    }
    let methods: Vec<&String> = entries
        .iter()
        .filter(|(_, _, call)| *call)
        .map(|(method, _, _)| method)
        .collect();
    let answers = client.batch(&entries)?;
    let mut failed = false;
    let mut items = Vec::new();
    for (method, answer) in methods.iter().zip(answers) {
        let (json, error) = answer?;
        failed |= error;
        let method = serde_json::to_string(method)?;
        let key = if error { "error" } else { "result" };
        items.push(format!(r#"{{"method":{method},"{key}":{json}}}"#));
    }
    if items.is_empty() {
        return Ok((None, false));
    }
    Ok((Some(format!("[{}]", items.join(","))), failed))
}
