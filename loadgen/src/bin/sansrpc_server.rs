//! sansrpc on tokio (`sansrpc-tokio`), serving the load generator's two methods over one
//! transport chosen on the command line, with the adapter's default options (the network
//! protection timeouts on) but for the connection cap, raised from 1,024 to 20,000 as
//! jsonrpsee's is (the many-connections workload holds 10,000 at once).
//!
//! Methods: `echo` (returns its params, unparsed: a raw method on the core router) and
//! `add` (`[a, b]` -> `a + b`, integers: a typed method on the core router).
//!
//! `sansrpc-server tcp|ws|http [ADDR]` (default `127.0.0.1:0`): TCP uses Content-Length
//! framing, WebSocket text frames, HTTP one message per POST. The first line on stdout is
//! the bound address; it serves until killed.

use std::io::Write as _;
use std::time::Duration;

#[path = "../backlog.rs"]
mod backlog;

use sansrpc::method::Method;
use sansrpc_tokio::{AsyncRouter, Builder, ServeOptions};

enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = (i64, i64);
    type Result = i64;
}

fn router() -> AsyncRouter {
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.raw_method("echo", |params, out| {
        out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
        Ok(())
    })
    .expect("echo registers");
    sync.method::<Add, _>(|(a, b)| Ok(a.wrapping_add(b)))
        .expect("add registers");
    router
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let transport = args.next().unwrap_or_else(|| "tcp".into());
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    backlog::raise(&listener)?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let builder = Builder::new().router(router());
    let shutdown = std::future::pending::<()>();
    let grace = Duration::from_secs(1);
    let mut options = ServeOptions::default();
    options.max_connections = 20_000;
    match transport.as_str() {
        "tcp" => sansrpc_tokio::serve_tcp_with(listener, builder, options, shutdown, grace).await,
        "ws" => sansrpc_tokio::ws::serve_with(listener, builder, options, shutdown, grace).await,
        "http" => {
            sansrpc_tokio::http::serve_with(listener, builder, options, shutdown, grace).await
        }
        other => Err(std::io::Error::other(format!(
            "unknown transport {other:?}: tcp, ws or http"
        ))),
    }
}
