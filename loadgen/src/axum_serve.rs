//! How the load generator's axum servers serve (`mcp-rmcp-server`, `sansrpc-axum-server`,
//! `mcp-axum-floor-server`): the same listener and settings for each, so that only the
//! app differs between the rows of a table.

use std::io::Write as _;

use axum::serve::ListenerExt as _;

/// Binds `127.0.0.1:0`, writes the bound address as the first line on stdout, and serves
/// `app` with `axum::serve` (HTTP/1.1 and h2c) until killed. TCP_NODELAY on every
/// connection, as sansrpc's adapter sets: rmcp writes an event stream in several small
/// writes, which Nagle's algorithm would hold for the client's delayed ACK.
pub async fn serve(app: axum::Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    crate::backlog::raise(&listener)?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", listener.local_addr()?)?;
    out.flush()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
