//! jsonrpsee's server, serving the load generator's two methods: it answers WebSocket and
//! HTTP on one port. Default options except the connection limit, raised from 100 to
//! 20,000 so that the memory and many-connections workloads' connections are all served.
//!
//! Methods: `echo` (returns its params, as a `Box<RawValue>`: not parsed into a tree) and
//! `add` (`[a, b]` -> `a + b`, integers).
//!
//! `jsonrpsee-server [ADDR]` (default `127.0.0.1:0`): the first line on stdout is the bound
//! address; it serves until killed.

#[path = "../backlog.rs"]
mod backlog;

use std::io::Write as _;

use jsonrpsee::server::{RpcModule, Server, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let config = ServerConfig::builder().max_connections(20_000).build();
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    backlog::raise(&listener)?;
    let server = Server::builder()
        .set_config(config)
        .build_from_tcp(listener)?;
    println!("{}", server.local_addr()?);
    std::io::stdout().flush()?;

    let mut module = RpcModule::new(());
    module.register_method("echo", |params, _, _| {
        params.parse::<Box<RawValue>>().or_else(|_| {
            Ok::<_, ErrorObjectOwned>(RawValue::from_string("null".into()).expect("null"))
        })
    })?;
    module.register_method("add", |params, _, _| {
        params.parse::<(i64, i64)>().map(|(a, b)| a.wrapping_add(b))
    })?;
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}
