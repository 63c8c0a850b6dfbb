//! `sansrpc call`: one request, one notification or one batch, through the blocking
//! adapter's client.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use sansrpc::codec::{Decoder, Framing};
use sansrpc::endpoint::EndReason;
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Limits, RawValue};
use sansrpc_blocking::{Client, Config, Direction, Error, Tap};
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
    /// Show the frames sent and received, on stderr.
    #[arg(long)]
    raw: bool,
    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// How messages are framed on the byte stream.
    #[arg(long, value_enum, default_value_t = FramingArg::ContentLength)]
    framing: FramingArg,
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
fn outcome(answer: Result<Box<RawValue>, Error>, timeout: Duration) -> Fallible<(String, bool)> {
    match answer {
        Ok(raw) => Ok((raw.get().to_owned(), false)),
        Err(Error::Call(CallError::Rpc(e))) => Ok((error_json(&e), true)),
        Err(Error::Call(CallError::Ended(EndReason::TimedOut))) => {
            Err(format!("no answer within {} s", timeout.as_secs_f64()).into())
        }
        Err(e) => Err(format!("no answer: {e}").into()),
    }
}

/// Runs the verb.
pub fn run(args: CallArgs) -> Fallible<ExitCode> {
    let kind = args
        .target
        .kind()?
        .ok_or("give a target: --stdio CMD, --tcp ADDR or --unix PATH")?;
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

    let mut config = Config::default();
    config.framing = args.framing.framing();
    config.endpoint.default_timeout = Some(timeout);
    if args.raw {
        config.tap = Some(raw_tap(config.framing));
    }
    let client = connect(&kind, config)?;
    let result = send(&client, single, entries, args.notify, timeout);
    client.close();
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

type Call = (String, Option<Box<RawValue>>);

/// Sends what was asked; returns what to print and whether an error object came back.
fn send(
    client: &Client,
    single: Option<Call>,
    entries: Vec<(String, Option<Box<RawValue>>, bool)>,
    notify: bool,
    timeout: Duration,
) -> Fallible<(Option<String>, bool)> {
    if let Some((method, params)) = single {
        if notify {
            client
                .notify_raw(&method, params.as_deref())
                .map_err(|e| format!("not sent: {e}"))?;
            return Ok((None, false));
        }
        let answer = client.call_raw(&method, params.as_deref(), Some(timeout));
        let (json, failed) = outcome(answer, timeout)?;
        return Ok((Some(json), failed));
    }
    let mut batch = client.batch();
    let mut methods = Vec::new();
    for (method, params, call) in &entries {
        if *call {
            batch.call_raw(method, params.as_deref());
            methods.push(method.clone());
        } else {
            batch.notify_raw(method, params.as_deref());
        }
    }
    let pending = batch
        .send(Some(timeout))
        .map_err(|e| format!("batch not sent: {e}"))?;
    let mut failed = false;
    let mut items = Vec::new();
    for (method, pending) in methods.iter().zip(pending) {
        let (json, error) = outcome(pending.wait(), timeout)?;
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
