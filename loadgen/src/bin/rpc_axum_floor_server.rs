//! The floor under a JSON-RPC service mounted in axum, for the load generator's HTTP tables:
//! `axum::serve` (HTTP/1.1 and h2c, Nagle's algorithm off, as `sansrpc-axum-server`) with
//! one handler for every path that answers a POST body as `floor-server` does (the envelope
//! parsed borrowed by serde_json, `echo` and `add`, the answer written into a buffer of the
//! answer's own) with `200` and `Content-Type: application/json`. No method, header or size
//! checks, no batches, no notifications: what any JSON-RPC service in axum pays before its
//! own work (hyper, axum's routing, the request and response bodies, the kernel's loopback).
//!
//! `rpc-axum-floor-server`: the first line on stdout is the bound address (`127.0.0.1:0`);
//! it serves until killed.

#[path = "../axum_serve.rs"]
mod axum_serve;
#[path = "../backlog.rs"]
mod backlog;
#[path = "../respond.rs"]
mod respond;

use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;

async fn answer(body: Bytes) -> impl IntoResponse {
    let mut out = Vec::with_capacity(128);
    respond::respond(&body, &mut out);
    ([(header::CONTENT_TYPE, "application/json")], out)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let app = axum::Router::new().fallback(answer);
    axum_serve::serve(app).await
}
