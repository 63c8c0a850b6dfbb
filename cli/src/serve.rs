//! `sansrpc serve`: the demo service over stdio, TCP, a Unix socket (the blocking adapter),
//! WebSocket or HTTP (the tokio adapter, on a runtime of its own).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::RateLimit;
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::router::{MethodDoc, Router};
use sansrpc::ErrorObject;
use sansrpc_blocking::Options;
use sansrpc_tokio::Origins;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::pubsub::{self, PubSubArgs};
use crate::{Fallible, FramingArg};

/// A number that stays an integer while it can: `7`, not `7.0`, for integer operands.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Num {
    /// An integer that fits an `i64`.
    Int(i64),
    /// Anything else.
    Float(f64),
}

impl Num {
    fn float(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Integer arithmetic when both are integers and it does not overflow, else float.
    fn combine(
        self,
        other: Num,
        int: fn(i64, i64) -> Option<i64>,
        float: fn(f64, f64) -> f64,
    ) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => {
                int(a, b).map_or_else(|| Num::Float(float(a as f64, b as f64)), Num::Int)
            }
            (a, b) => Num::Float(float(a.float(), b.float())),
        }
    }
}

/// `add`: `{a, b}` or `[a, b]`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Pair {
    a: Num,
    b: Num,
}

enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = Pair;
    type Result = Num;
}

/// `subtract`, as the specification's example names its params.
#[derive(Debug, Serialize, Deserialize)]
pub struct Difference {
    minuend: Num,
    subtrahend: Num,
}

enum Subtract {}
impl Method for Subtract {
    const NAME: &'static str = "subtract";
    type Params = Difference;
    type Result = Num;
}

/// `divide`: `{dividend, divisor}` or `[dividend, divisor]`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Quotient {
    dividend: Num,
    divisor: Num,
}

enum Divide {}
impl Method for Divide {
    const NAME: &'static str = "divide";
    type Params = Quotient;
    type Result = Num;
}

/// `count`'s params: `{"to": n}` or `[n]`.
#[derive(Debug, Deserialize)]
pub struct CountTo {
    to: u64,
}

/// The application error code of a division by zero (outside the reserved range).
pub const DIVISION_BY_ZERO: i64 = 1;

enum Sum {}
impl Method for Sum {
    const NAME: &'static str = "sum";
    type Params = Vec<Num>;
    type Result = Num;
}

enum GetData {}
impl Method for GetData {
    const NAME: &'static str = "get_data";
    type Params = ();
    type Result = (String, i64);
}

enum SinkCount {}
impl Method for SinkCount {
    const NAME: &'static str = "sink_count";
    type Params = ();
    type Result = u64;
}

enum Update {}
impl NotificationMethod for Update {
    const NAME: &'static str = "update";
    type Params = Value;
}

enum NotifyHello {}
impl NotificationMethod for NotifyHello {
    const NAME: &'static str = "notify_hello";
    type Params = Value;
}

enum NotifySum {}
impl NotificationMethod for NotifySum {
    const NAME: &'static str = "notify_sum";
    type Params = Vec<Num>;
}

enum Sink {}
impl NotificationMethod for Sink {
    const NAME: &'static str = "sink";
    type Params = Value;
}

fn sum(numbers: &[Num]) -> Num {
    numbers.iter().fold(Num::Int(0), |acc, &n| {
        acc.combine(n, i64::checked_add, |a, b| a + b)
    })
}

/// The demo service's router.
pub fn router() -> Router {
    let mut router = Router::new();
    router.info("sansrpc demo", env!("CARGO_PKG_VERSION"));
    let sinks = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&sinks);
    let registered = [
        router.method::<Add, _>(|p| Ok(p.a.combine(p.b, i64::checked_add, |a, b| a + b))),
        router.method::<Subtract, _>(|p| {
            Ok(p.minuend
                .combine(p.subtrahend, i64::checked_sub, |a, b| a - b))
        }),
        router.method::<Divide, _>(|p| {
            if p.divisor.float() == 0.0 {
                return Err(ErrorObject::new(DIVISION_BY_ZERO, "division by zero"));
            }
            // An exact integer quotient stays an integer.
            let exact = |a: i64, b: i64| match a.checked_rem(b) {
                Some(0) => a.checked_div(b),
                _ => None,
            };
            Ok(p.dividend.combine(p.divisor, exact, |a, b| a / b))
        }),
        router.method::<Sum, _>(|numbers| Ok(sum(&numbers))),
        router.method::<GetData, _>(|()| Ok(("hello".to_owned(), 5))),
        router.method::<SinkCount, _>(move |()| Ok(counted.load(Ordering::SeqCst))),
        router.notification::<Update, _>(|p| tracing::info!(params = %p, "update")),
        router.notification::<NotifyHello, _>(|p| tracing::info!(params = %p, "notify_hello")),
        router.notification::<NotifySum, _>(|numbers| {
            let total = serde_json::to_string(&sum(&numbers)).unwrap_or_default();
            tracing::info!(sum = %total, "notify_sum");
        }),
        router.notification::<Sink, _>(move |p| {
            sinks.fetch_add(1, Ordering::SeqCst);
            tracing::info!(params = %p, "sink");
        }),
    ];
    for result in registered {
        // Distinct, unreserved names: registration cannot fail.
        result.expect("the demo methods register");
    }
    // A stream method: answers {"stream": id}; pull 1, 2, …, to with rpc.stream.next.
    router
        .stream_method("count", |p: CountTo| Ok((1..=p.to).map(Ok)))
        .expect("the demo stream registers");
    let docs = [
        ("add", "a + b"),
        ("subtract", "minuend - subtrahend"),
        (
            "divide",
            "dividend / divisor; error 1 when the divisor is 0",
        ),
        ("sum", "the sum of all params"),
        ("get_data", "[\"hello\", 5]"),
        ("sink_count", "how many sink notifications arrived"),
    ];
    for (name, summary) in docs {
        let _ = router.document(name, MethodDoc::summary(summary));
    }
    router
}

/// Protection for a server facing clients it does not trust (`sansrpc serve` flags).
#[derive(clap::Args, Debug, Clone)]
pub struct ProtectArgs {
    /// Most connections served at once (TCP, Unix, WebSocket, HTTP); one beyond it gets a
    /// -32002 error (WebSocket and HTTP: 503) and is closed. Default: 1024, or fewer when
    /// the open-file limit (raised to its hard limit at start) cannot serve that many.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// WebSocket and HTTP: serve over TLS (`wss://`, `https://`) with the certificate chain
    /// in this PEM file (leaf first); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, a PEM file.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Per-connection rate limit: requests (and notifications) a second, with an optional
    /// burst (default: the rate); requests over it are answered -32002, notifications
    /// dropped. Example: 50 or 50:200.
    #[arg(long, value_name = "RATE[:BURST]", value_parser = parse_rate)]
    rate_limit: Option<RateLimit>,
    /// Close a connection that sent nothing for this long while nothing was in flight
    /// (e.g. 30s, 500ms, 5m; a bare number is seconds; 0: never). Default on network
    /// transports: 5m; stdio: never.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// Close a connection whose message stays partly received for this long (slowloris);
    /// HTTP: a request head or body, WebSocket: the handshake. 0: never. Default on
    /// network transports: 30s; stdio: never.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    frame_timeout: Option<Duration>,
    /// Close a connection whose answers waited this long with no byte written (a peer that
    /// sends but does not read). 0: never. Default on network transports: 30s; stdio: never.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    write_stall_timeout: Option<Duration>,
    /// WebSocket: accept handshakes from this Origin (repeatable; `*` for any; others get
    /// 403). Without it, only pages of a loopback host (http://localhost:3000). Clients
    /// sending no Origin are accepted.
    #[arg(long, value_name = "ORIGIN|*")]
    allow_origin: Vec<String>,
    /// HTTP: answer CORS for this origin (repeatable; `*` for any); preflights from other
    /// origins get 403.
    #[arg(long, value_name = "ORIGIN|*")]
    cors_origin: Vec<String>,
}

impl ProtectArgs {
    /// The connection's share: the rate limit and the timeouts, with the network defaults
    /// when `network` (every transport but stdio).
    fn connection(&self, config: &mut sansrpc::Config, network: bool) {
        let default = |given: Option<Duration>, default: Duration| {
            given
                .or(network.then_some(default))
                .filter(|d| !d.is_zero())
        };
        config.rate_limit = self.rate_limit;
        config.idle_timeout = default(self.idle_timeout, DEFAULT_IDLE);
        config.frame_timeout = default(self.frame_timeout, DEFAULT_FRAME);
        config.write_stall_timeout = default(self.write_stall_timeout, DEFAULT_WRITE_STALL);
    }

    /// The TLS server config of --tls-cert and --tls-key, when given.
    fn tls(&self) -> Fallible<Option<Arc<sansrpc_tokio::tls::rustls::ServerConfig>>> {
        use sansrpc_tokio::tls::rustls::pki_types::pem::PemObject;
        use sansrpc_tokio::tls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("cannot read certificates from {}: {e}", cert.display()))?;
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("cannot read the private key in {}: {e}", key.display()))?;
        let config = sansrpc_tokio::tls::server_config(chain, key)
            .map_err(|e| format!("TLS certificate and key: {e}"))?;
        Ok(Some(config))
    }

    /// The connection limit: the flag, else 1024 within the descriptor budget.
    fn max_connections(&self) -> usize {
        self.max_connections
            .unwrap_or_else(|| DEFAULT_MAX_CONNECTIONS.min(descriptor_budget()))
    }

    /// The tokio servers' share: the limit, the origins, CORS.
    fn serve_options(&self) -> sansrpc_tokio::ServeOptions {
        let mut options = sansrpc_tokio::ServeOptions::default();
        options.max_connections = self.max_connections();
        // The endpoint config already holds the flags' timeouts (0 meaning never).
        options.network_defaults = false;
        if let Some(origins) = origins(&self.allow_origin) {
            options.allowed_origins = origins;
        }
        options.cors = origins(&self.cors_origin);
        options
    }
}

/// Network transports: the core's network defaults (idle 5 min, partial frame 30 s, write
/// stall 30 s), which the library servers apply too.
const DEFAULT_IDLE: Duration = sansrpc::connection::NETWORK_IDLE_TIMEOUT;
const DEFAULT_FRAME: Duration = sansrpc::connection::NETWORK_FRAME_TIMEOUT;
const DEFAULT_WRITE_STALL: Duration = sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT;
/// Most connections at once unless the descriptor budget is smaller.
/// The origins a repeatable flag names: `*` for any; `None` when it is not given.
fn origins(flag: &[String]) -> Option<Origins> {
    if flag.iter().any(|o| o == "*") {
        Some(Origins::Any)
    } else if flag.is_empty() {
        None
    } else {
        Some(Origins::List(flag.to_vec()))
    }
}

const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Descriptors kept for the listener, the store, logs and accept retries (a quarter of
/// the limit when that is less).
const RESERVED_DESCRIPTORS: u64 = 64;

/// Raises the soft open-file limit to the hard one (many hosts start processes with a
/// soft 1,024); quietly keeps the old one where that is refused.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                tracing::warn!(soft = limit.rlim_cur, "cannot raise the open-file limit");
            }
        }
    }
}

/// Connections the soft open-file limit can serve: one descriptor each, beside the
/// reserved ones.
fn descriptor_budget() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed in.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return DEFAULT_MAX_CONNECTIONS;
    }
    let reserved = RESERVED_DESCRIPTORS.min(limit.rlim_cur / 4);
    let budget = limit.rlim_cur.saturating_sub(reserved).max(1);
    usize::try_from(budget).unwrap_or(usize::MAX)
}

/// `RATE` or `RATE:BURST`.
fn parse_rate(text: &str) -> Result<RateLimit, String> {
    let number = |n: &str| {
        n.trim()
            .parse::<u32>()
            .map_err(|_| format!("{n:?} is not a whole number"))
    };
    let (rate, burst) = match text.split_once(':') {
        Some((rate, burst)) => (number(rate)?, number(burst)?),
        None => {
            let rate = number(text)?;
            (rate, rate)
        }
    };
    if burst == 0 {
        return Err("the burst must be at least 1".into());
    }
    Ok(RateLimit::new(rate, burst))
}

/// `500ms`, `30s`, `5m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a duration like 30s or 500ms"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("{text:?}: the unit must be ms, s or m")),
    }
}

/// Where to serve.
#[derive(Debug)]
pub enum Listen {
    /// This process's stdin and stdout.
    Stdio,
    /// A TCP address.
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
    /// WebSocket on a TCP address (or a `ws://` URL).
    Ws(String),
    /// HTTP on a TCP address (or an `http://` URL).
    Http(String),
}

/// The `host:port` of `addr`, which may be a URL of `scheme` (its path ignored).
pub fn socket_addr<'a>(addr: &'a str, scheme: &str) -> Fallible<&'a str> {
    let Some((given, rest)) = addr.split_once("://") else {
        return Ok(addr);
    };
    if !given.eq_ignore_ascii_case(scheme) {
        return Err(format!("{addr}: only {scheme}:// is supported here").into());
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("{addr}: no host:port in the URL").into());
    }
    Ok(host)
}

/// Runs the service until stdin ends (stdio) or forever (sockets).
pub fn run(
    listen: Listen,
    framing: FramingArg,
    protect: &ProtectArgs,
    pubsub: &PubSubArgs,
) -> Fallible<()> {
    raise_descriptor_limit();
    let hub = pubsub.start()?;
    let (tcp, unix) = match listen {
        Listen::Ws(addr) => return serve_tokio(&addr, true, protect, &hub),
        Listen::Http(addr) => return serve_tokio(&addr, false, protect, &hub),
        Listen::Tcp(addr) => (Some(addr), None),
        Listen::Unix(path) => (None, Some(path)),
        Listen::Stdio => (None, None),
    };
    let mut router = router();
    pubsub::register(&mut router, &hub, true);
    let router = Arc::new(router);
    let mut config = Options::default();
    config.extension = Some(sansrpc_blocking::Extension::new(hub.clone()));
    config.connection.framing = Some(framing.framing());
    config.max_connections = protect.max_connections();
    // The endpoint config holds the flags' timeouts already (0 meaning never).
    config.network_defaults = false;
    protect.connection(&mut config.connection, tcp.is_some() || unix.is_some());
    let framing = framing.name();
    if let Some(addr) = tcp {
        let server = sansrpc_blocking::serve_tcp(&*addr, router, config)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        tracing::info!(addr = %server.local_addr(), framing, "listening on TCP");
        park_forever()
    } else if let Some(path) = unix {
        remove_stale_socket(&path);
        let server = serve_unix(&path, router, config)?;
        tracing::info!(path = %server.display(), framing, "listening on a Unix socket");
        park_forever()
    } else {
        tracing::info!(framing, "serving on stdio");
        sansrpc_blocking::serve_stdio(router, config)?;
        tracing::info!("stdin ended");
        Ok(())
    }
}

/// WebSocket (`ws`) or HTTP on a tokio runtime of this branch's own, forever.
fn serve_tokio(addr: &str, ws: bool, protect: &ProtectArgs, hub: &pubsub::Hub) -> Fallible<()> {
    let (scheme, name) = if ws {
        ("ws", "WebSocket")
    } else {
        ("http", "HTTP")
    };
    let bind = socket_addr(addr, scheme)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        let local = listener.local_addr()?;
        let scheme = match (protect.tls_cert.is_some(), ws) {
            (false, _) => scheme,
            (true, true) => "wss",
            (true, false) => "https",
        };
        tracing::info!(addr = %local, url = %format!("{scheme}://{local}/"), "listening on {name}");
        let mut config = sansrpc::connection::Config::default();
        protect.connection(&mut config, true);
        let mut router = sansrpc_tokio::AsyncRouter::from_router(router());
        pubsub::register_async(&mut router, hub, ws);
        let mut builder = sansrpc_tokio::Builder::new().config(config).router(router);
        if ws {
            builder = builder.extension(sansrpc_tokio::Extension::new(hub.clone()));
        }
        let forever = std::future::pending::<()>();
        let grace = std::time::Duration::from_secs(5);
        let mut options = protect.serve_options();
        options.tls = protect.tls()?;
        if ws {
            sansrpc_tokio::ws::serve_with(listener, builder, options, forever, grace).await?;
        } else {
            sansrpc_tokio::http::serve_with(listener, builder, options, forever, grace).await?;
        }
        Ok(())
    })
}

#[cfg(unix)]
fn serve_unix(path: &std::path::Path, router: Arc<Router>, config: Options) -> Fallible<PathBuf> {
    let server = sansrpc_blocking::serve_unix(path, router, config)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let path = server.path().to_path_buf();
    // Serves until the process ends.
    std::mem::forget(server);
    Ok(path)
}

#[cfg(not(unix))]
fn serve_unix(_: &std::path::Path, _: Arc<Router>, _: Options) -> Fallible<PathBuf> {
    Err("Unix sockets are not available on this platform".into())
}

/// A socket file left by a server that is gone (nothing accepts on it) is removed.
fn remove_stale_socket(path: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let is_socket = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket());
        if is_socket && std::os::unix::net::UnixStream::connect(path).is_err() {
            tracing::info!(path = %path.display(), "removing a stale socket file");
            let _ = std::fs::remove_file(path);
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}
