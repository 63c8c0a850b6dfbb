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

use bytes::Bytes;
use futures_util::future::{join_all, try_join_all};
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::client::Run;

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
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
const VERSION: (&str, &str) = ("mcp-protocol-version", "2025-06-18");

#[derive(Deserialize)]
struct CallAnswer<'a> {
    jsonrpc: &'a str,
    id: u64,
    #[serde(borrow)]
    result: CallResult<'a>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow)]
    content: Vec<Content<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    text: &'a str,
}

/// The JSON-RPC message of an answer: the JSON body, or the event stream's message (a
/// priming event has empty data); `None` for an empty body (202).
fn message(sse: bool, body: &[u8]) -> Result<Option<&str>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let text = std::str::from_utf8(body).map_err(io)?;
    if !sse {
        return Ok(Some(text));
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .map(Some)
        .ok_or_else(|| "an event stream without a message".into())
}

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
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "loadgen", "version": "0"}}});
        let (_, id, sse, body) = session.post(init.to_string().into_bytes()).await?;
        let answer: Value =
            serde_json::from_str(message(sse, &body)?.ok_or("no answer")?).map_err(io)?;
        if answer["result"]["protocolVersion"].is_null() {
            return Err("initialize: no result".into());
        }
        session.id = id;
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        session.post(initialized.as_bytes().to_vec()).await?;
        Ok(session)
    }

    /// Calls `add` with `a`, `b`; true when the answer is their sum, with the call's id.
    async fn add(&mut self, id: u64, a: i64, b: i64) -> Result<bool, String> {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{a},"b":{b}}}}}}}"#
        );
        let (_, _, sse, body) = self.post(call.into_bytes()).await?;
        let text = message(sse, &body)?.ok_or("no answer to tools/call")?;
        let answer: CallAnswer<'_> = serde_json::from_str(text).map_err(io)?;
        let sum = answer.result.content.first().map(|c| c.text);
        Ok(answer.jsonrpc == "2.0"
            && answer.id == id
            && sum.and_then(|t| t.parse::<i64>().ok()) == Some(a + b))
    }
}

/// `n` calls of `add` spread over `sessions` MCP sessions sharing one HTTP/2 connection
/// (opened and initialized first, not timed), one call in flight on each.
pub async fn mcp_calls(addr: SocketAddr, n: u64, sessions: usize) -> Result<Run, String> {
    let send = connect(addr).await?;
    let opened = try_join_all((0..sessions).map(|_| Session::open(send.clone(), addr))).await?;
    let per = n / sessions as u64;
    let start = Instant::now();
    let runs = join_all(
        opened
            .into_iter()
            .enumerate()
            .map(|(s, mut session)| async move {
                let (mut answered, mut errors) = (0u64, 0u64);
                for i in 0..per {
                    let id = s as u64 * per + i + 1;
                    match session.add(id, id as i64, 7).await {
                        Ok(right) => {
                            answered += 1;
                            errors += u64::from(!right);
                        }
                        Err(_) => errors += 1,
                    }
                }
                (answered, errors)
            }),
    )
    .await;
    let elapsed = start.elapsed();
    let (answered, errors) = runs
        .iter()
        .fold((0, 0), |(a, e), (ra, re)| (a + ra, e + re));
    Ok(Run {
        answered,
        errors,
        elapsed,
    })
}
