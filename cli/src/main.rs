//! `sansrpc`: serve a demo JSON-RPC 2.0 service, call any JSON-RPC server, and check any
//! server for protocol compliance. Logs go to stderr, never to stdout.

mod call;
mod check;
mod follow;
mod pubsub;
mod serve;
mod target;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use sansrpc::codec::Framing;

/// What every verb may fail with before it has a verdict of its own (exit status 2).
pub type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derive(Parser, Debug)]
#[command(
    name = "sansrpc",
    version,
    about = "Serve, call and check JSON-RPC 2.0 servers",
    after_help = "\
Examples:
  sansrpc check                                   check our own demo server (spawned over stdio)
  sansrpc check --stdio \"python3 server.py\" --framing newline
  sansrpc serve --tcp 127.0.0.1:7878
  sansrpc call --tcp 127.0.0.1:7878 subtract '[42, 23]'
  sansrpc serve --http 127.0.0.1:7880
  sansrpc check --http http://127.0.0.1:7880/ --spec-methods

Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=debug) for more."
)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand, Debug)]
enum Verb {
    /// Serve the demo service: a calculator, the specification's example methods, a
    /// notification sink and rpc.discover.
    Serve(ServeArgs),
    /// Send requests and notifications to a server, one after the other on one connection
    /// (or as one batch), and print the answers.
    Call(call::CallArgs),
    /// Check a server for JSON-RPC 2.0 compliance (our own demo server when no target is
    /// given).
    Check(check::CheckArgs),
}

/// How a byte stream is cut into messages.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramingArg {
    /// `Content-Length: N` headers, then N bytes (LSP).
    ContentLength,
    /// One JSON text per line (MCP stdio, JSON Lines).
    Newline,
}

impl FramingArg {
    /// The core's framing.
    pub fn framing(self) -> Framing {
        match self {
            FramingArg::ContentLength => Framing::ContentLength,
            FramingArg::Newline => Framing::Newline,
        }
    }

    /// The name the command line takes.
    pub fn name(self) -> &'static str {
        match self {
            FramingArg::ContentLength => "content-length",
            FramingArg::Newline => "newline",
        }
    }
}

/// The protocol on top of JSON-RPC 2.0, for what it allows and how it frames and cancels.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileArg {
    /// JSON-RPC 2.0 as specified; Content-Length framing; cancels with `$/cancelRequest`.
    Plain,
    /// Model Context Protocol: no null or fractional ids, no batches; newline framing
    /// (stdio); cancels with `notifications/cancelled`.
    Mcp,
    /// Language Server Protocol: Content-Length framing; cancels with `$/cancelRequest`.
    Lsp,
}

impl ProfileArg {
    /// The framing used when `--framing` is not given.
    pub fn framing(self, given: Option<FramingArg>) -> FramingArg {
        given.unwrap_or(match self {
            ProfileArg::Mcp => FramingArg::Newline,
            ProfileArg::Plain | ProfileArg::Lsp => FramingArg::ContentLength,
        })
    }
}

#[derive(Args, Debug)]
#[command(after_help = "\
Methods:
  add {a, b} | [a, b]                         a + b
  subtract {minuend, subtrahend} | [m, s]     m - s (the specification's example)
  divide {dividend, divisor} | [x, y]         x / y; error 1 \"division by zero\" when y is 0
  sum [x, ...]                                the sum of all params
  get_data                                    [\"hello\", 5]
  update, notify_hello, notify_sum            notifications from the specification (logged)
  sink                                        a notification taking any params (logged)
  sink_count                                  how many sink notifications arrived
  rpc.discover                                the OpenRPC document of the methods above

Examples:
  sansrpc serve                                   stdio, Content-Length framing
  sansrpc serve --framing newline                 stdio, one JSON text per line
  sansrpc serve --tcp 127.0.0.1:7878
  sansrpc serve --unix /tmp/sansrpc.sock
  sansrpc serve --ws 127.0.0.1:7879               WebSocket, one message per text frame
  sansrpc serve --http 127.0.0.1:7880             HTTP, one message per POST body

Every transport also serves pub/sub (WebSocket seed §10-11): `publish` {topic, data},
rpc.subscribe / rpc.unsubscribe (NATS wildcards * and >), the persistent subscription
methods, and their .batch forms. HTTP cannot push, so subscriptions need one of the others.")]
struct ServeArgs {
    /// Serve on this process's stdin and stdout (the default).
    #[arg(long, conflicts_with_all = ["tcp", "unix", "ws", "http"])]
    stdio: bool,
    /// Listen on a TCP address (port 0 picks one; the address is logged).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["unix", "ws", "http"])]
    tcp: Option<String>,
    /// Listen on a Unix socket at this path.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["ws", "http"])]
    unix: Option<PathBuf>,
    /// Serve WebSocket connections on a TCP address (`ws://` URLs accepted; the path is
    /// ignored, every path is served).
    #[arg(long, value_name = "ADDR|URL", conflicts_with = "http")]
    ws: Option<String>,
    /// Serve HTTP POSTs on a TCP address (`http://` URLs accepted; the path is ignored,
    /// every path is served).
    #[arg(long, value_name = "ADDR|URL")]
    http: Option<String>,
    /// How messages are framed on the byte stream (stdio, TCP, Unix; WebSocket and HTTP
    /// carry one message per frame or body).
    #[arg(long, value_enum, default_value_t = FramingArg::ContentLength)]
    framing: FramingArg,
    #[command(flatten)]
    protect: serve::ProtectArgs,
    #[command(flatten)]
    pubsub: pubsub::PubSubArgs,
}

/// Logs to stderr only: stdout may be a protocol stream. `RUST_LOG` overrides `default`.
fn init_logs(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn main() -> ExitCode {
    // The matches are kept: `call` runs its steps in the order they were given.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let outcome = match cli.verb {
        Verb::Serve(args) => {
            init_logs("info");
            let listen = if let Some(addr) = args.ws {
                serve::Listen::Ws(addr)
            } else if let Some(addr) = args.http {
                serve::Listen::Http(addr)
            } else if let Some(addr) = args.tcp {
                serve::Listen::Tcp(addr)
            } else if let Some(path) = args.unix {
                serve::Listen::Unix(path)
            } else {
                serve::Listen::Stdio
            };
            serve::run(listen, args.framing, &args.protect, &args.pubsub)
                .map(|()| ExitCode::SUCCESS)
        }
        Verb::Call(args) => {
            init_logs("warn");
            call::run(args, matches.subcommand_matches("call"))
        }
        Verb::Check(args) => {
            init_logs("warn");
            check::run(args)
        }
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("sansrpc: {e}");
        ExitCode::from(2)
    })
}
