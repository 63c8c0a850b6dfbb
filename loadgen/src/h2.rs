//! HTTP/2 with prior knowledge (h2c): the HTTP and MCP workloads over one HTTP/2
//! connection, every request a stream, with hyper's HTTP/2 client (the same for every
//! server). The servers are the ones that speak HTTP/2: sansrpc's tower services in axum,
//! jsonrpsee's server and rmcp's service in axum (`axum::serve` takes HTTP/1.1 and h2c on
//! the same port); the standalone sansrpc servers speak HTTP/1.1 only.
//!
//! Every answer is checked as on HTTP/1.1: the JSON-RPC answer's id and result, the MCP
//! call's id and sum (from a JSON body or from the event stream's message).

use std::net::SocketAddr;
use std::time::Instant;

use crate::client::Run;
use crate::mcp::{self, Caller};
use bytes::Bytes;
use futures_util::future::try_join_all;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// An HTTP/2 connection to `addr`, its connection task spawned; a handle to send on it.
async fn connect(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let tcp = crate::client::connect(addr).await?;
    let (send, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(tcp))
        .await
        .map_err(io)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// POSTs `body` to `path` with `headers`; the status, the session id if any, whether the
/// answer is an event stream, and the whole body.
async fn post(
    send: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<(u16, Option<String>, bool, Bytes), String> {
    let mut request = hyper::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).map_err(io)?;
    send.ready().await.map_err(io)?;
    let response = send.send_request(request).await.map_err(io)?;
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = response.into_body().collect().await.map_err(io)?.to_bytes();
    Ok((status, session, sse, body))
}

/// `n` JSON-RPC requests over one HTTP/2 connection, `streams` in flight (each a stream of
/// its own), every answer checked.
pub async fn rpc(addr: SocketAddr, n: u64, streams: usize) -> Result<Run, String> {
    let send = connect(addr).await?;
    let per = n / streams as u64;
    let start = Instant::now();
    let each = (0..streams as u64).map(|s| {
        let mut send = send.clone();
        async move {
            let (mut answered, mut errors) = (0u64, 0u64);
            for i in 0..per {
                let id = s * per + i;
                let body = crate::client::request_string(id).into_bytes();
                let (status, _, _, body) = post(&mut send, addr, "/", &[], body).await?;
                answered += 1;
                if status != 200 || crate::client::verify(&body) != Some(id) {
                    errors += 1;
                }
            }
            Ok::<_, String>((answered, errors))
        }
    });
    let results = try_join_all(each).await?;
    let (answered, errors) = results.iter().fold((0, 0), |(a, e), (x, y)| (a + x, e + y));
    Ok(Run {
        answered,
        errors,
        elapsed: start.elapsed(),
    })
}

/// One MCP session on a shared HTTP/2 connection.
struct Session {
    send: SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    id: Option<String>,
    /// The next call's body.
    call: Vec<u8>,
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const VERSION: (&str, &str) = ("mcp-protocol-version", "2025-06-18");

impl Session {
    async fn post(&mut self, body: Vec<u8>) -> Result<(u16, Option<String>, bool, Bytes), String> {
        let session;
        let mut headers = vec![ACCEPT, VERSION];
        if let Some(id) = &self.id {
            session = id.clone();
            headers.push(("mcp-session-id", &session));
        }
        let answer = post(&mut self.send, self.addr, "/mcp", &headers, body).await?;
        if !(200..300).contains(&answer.0) {
            return Err(format!(
                "HTTP {}: {}",
                answer.0,
                String::from_utf8_lossy(&answer.3)
            ));
        }
        Ok(answer)
    }

    /// Initializes a session on `send`'s connection and sends `notifications/initialized`.
    async fn open(send: SendRequest<Full<Bytes>>, addr: SocketAddr) -> Result<Session, String> {
        let mut session = Session {
            send,
            addr,
            id: None,
            call: Vec::with_capacity(256),
        };
        let (_, id, sse, body) = session.post(mcp::initialize().into_bytes()).await?;
        mcp::initialized(mcp::message(sse, &body)?)?;
        session.id = id;
        session.post(mcp::INITIALIZED.as_bytes().to_vec()).await?;
        Ok(session)
    }
}

impl Caller for Session {
    async fn add(&mut self, id: u64, a: i64, b: i64) -> Result<bool, String> {
        mcp::add_call(&mut self.call, id, a, b);
        let (_, _, sse, body) = self.post(self.call.clone()).await?;
        mcp::added(mcp::message(sse, &body)?, id, a, b)
    }
}

/// `n` calls of `add` spread over `sessions` MCP sessions sharing one HTTP/2 connection
/// (opened and initialized first, not timed), one call in flight on each.
pub async fn mcp_calls(addr: SocketAddr, n: u64, sessions: usize) -> Result<Run, String> {
    let send = connect(addr).await?;
    let opened = try_join_all((0..sessions).map(|_| Session::open(send.clone(), addr))).await?;
    Ok(mcp::run_calls(opened, n).await)
}
