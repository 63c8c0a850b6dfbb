//! MCP over Streamable HTTP: sessions that initialize and then call the `add` tool, one
//! call at a time each, over HTTP/1.1 keep-alive connections (hyper's client, the same for
//! both servers). Every answer is checked: a JSON body or an event stream whose message is
//! the call's result, `a + b` as text. A server that gives no `Mcp-Session-Id` (rmcp's
//! stateless mode) is called without one.

use std::any::Any;
use std::net::SocketAddr;
use std::time::Instant;

use futures_util::future::{join_all, try_join_all};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use serde_json::{json, Value};

use crate::client::Run;

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// One session: its HTTP connection and its id (none on a stateless server).
pub struct Session {
    send: SendRequest<Full<Bytes>>,
    id: Option<String>,
    addr: SocketAddr,
}

impl Session {
    /// Connects, initializes and sends `notifications/initialized`.
    pub async fn open(addr: SocketAddr) -> Result<Session, String> {
        let stream = tokio::net::TcpStream::connect(addr).await.map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let (send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(io)?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        let mut session = Session {
            send,
            id: None,
            addr,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "loadgen", "version": "0"}}});
        let (answer, id) = session.post(&init).await?;
        if answer.is_none_or(|a| a["result"]["protocolVersion"].is_null()) {
            return Err("initialize: no result".into());
        }
        session.id = id;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session.post(&initialized).await?;
        Ok(session)
    }

    /// POSTs `message`; the JSON-RPC message answering it (from a JSON body or an event
    /// stream; none for a 202) and the session id the answer carried.
    async fn post(&mut self, message: &Value) -> Result<(Option<Value>, Option<String>), String> {
        let mut request = hyper::Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(id) = &self.id {
            request = request.header("mcp-session-id", id.as_str());
        }
        let body = Full::new(Bytes::from(message.to_string()));
        self.send.ready().await.map_err(io)?;
        let response = self
            .send
            .send_request(request.body(body).map_err(io)?)
            .await
            .map_err(io)?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = response.into_body().collect().await.map_err(io)?.to_bytes();
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok((None, session));
        }
        let text = std::str::from_utf8(&body).map_err(io)?;
        let json = if sse {
            // The stream's message event (a priming event has empty data).
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .find(|d| !d.is_empty())
                .ok_or("an event stream without a message")?
        } else {
            text
        };
        Ok((Some(serde_json::from_str(json).map_err(io)?), session))
    }

    /// Calls `add` with `a`, `b`; true when the answer is their sum.
    async fn add(&mut self, id: u64, a: i64, b: i64) -> Result<bool, String> {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": a, "b": b}}});
        let (answer, _) = self.post(&call).await?;
        let answer = answer.ok_or("no answer to tools/call")?;
        let text = &answer["result"]["content"][0]["text"];
        Ok(answer["id"] == id && text.as_str() == Some(&(a + b).to_string()))
    }
}

/// `n` calls of `add` spread over `sessions` sessions (opened and initialized first, not
/// timed), one call in flight on each.
pub async fn calls(addr: SocketAddr, n: u64, sessions: usize) -> Result<Run, String> {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let opened = try_join_all((0..sessions).map(|_| Session::open(addr))).await?;
            let per = n / sessions as u64;
            let start = Instant::now();
            let runs = join_all(opened.into_iter().enumerate().map(
                |(s, mut session)| async move {
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
                },
            ))
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
        })
        .await
}

/// Opens `count` sessions, each with one call answered; the sessions (open on the server,
/// their connections closed once this returns), and how many calls were answered wrong.
pub async fn hold(addr: SocketAddr, count: usize) -> Result<(Vec<Box<dyn Any>>, u64), String> {
    let local = tokio::task::LocalSet::new();
    let (held, errors) = local
        .run_until(async move {
            let (mut held, mut errors) = (Vec::with_capacity(count), 0);
            // 50 handshakes at a time, well within any listen backlog.
            for chunk in (0..count as u64).collect::<Vec<_>>().chunks(50) {
                let opened = join_all(chunk.iter().map(|&id| async move {
                    let mut session = Session::open(addr).await?;
                    let right = session.add(id + 1, id as i64, 7).await?;
                    Ok::<_, String>((session, right))
                }))
                .await;
                for result in opened {
                    let (session, right) = result?;
                    held.push(Box::new(session) as Box<dyn Any>);
                    errors += u64::from(!right);
                }
            }
            Ok::<_, String>((held, errors))
        })
        .await?;
    // The connections' tasks live on the LocalSet just dropped: the sessions stay on the
    // server (it keeps them for their idle timeout), their connections close.
    Ok((held, errors))
}
