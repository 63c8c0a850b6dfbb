//! The tower services mounted in an app: the `axum_app` example (its process, on a free
//! port) over HTTP/1.1 and over h2c with hyper's client (HTTP/2 only, prior knowledge, one
//! connection), and services with their options in a hyper server of the test's own.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use support::Running;

/// The example on a free port.
fn axum_app() -> (Running, u16) {
    example("axum_app")
}

/// The example `name` on a free port.
fn example(name: &str) -> (Running, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Built now unless the test run built every example already.
    support::built_example("sansrpc-mcp", name);
    let env = [("PORT", port.to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (server, line) = support::start_example("sansrpc-mcp", name, &env);
    let url = format!("listening on http://127.0.0.1:{port}");
    assert!(line == url || line == format!("{url}/mcp"), "{line:?}");
    (server, port)
}

/// One connection to `port`, HTTP/1.1 or HTTP/2 (prior knowledge).
#[derive(Clone)]
enum Conn {
    H1(Arc<tokio::sync::Mutex<http1::SendRequest<Full<Bytes>>>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Conn {
    async fn h1(port: u16) -> Conn {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        let (send, conn) = http1::handshake(TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(conn.with_upgrades());
        Conn::H1(Arc::new(tokio::sync::Mutex::new(send)))
    }

    async fn h2(port: u16) -> Conn {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        Conn::H2(send)
    }

    /// Sends `method` `path` with `headers` and `body`; the answer's status, header fields
    /// and whole body.
    async fn send(
        &self,
        port: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://127.0.0.1:{port}{path}"));
        if matches!(self, Conn::H1(_)) {
            request = request.header("host", format!("127.0.0.1:{port}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap();
        let response = match self {
            Conn::H1(send) => {
                let mut send = send.lock().await;
                send.ready().await.unwrap();
                send.send_request(request).await.unwrap()
            }
            Conn::H2(send) => {
                let mut send = send.clone();
                send.ready().await.unwrap();
                send.send_request(request).await.unwrap()
            }
        };
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Answer {
            version: parts.version,
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

#[derive(Debug)]
struct Answer {
    version: http::Version,
    status: u16,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or(""))
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

const JSON: (&str, &str) = ("content-type", "application/json");
const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// An MCP session of the 2025-11-25 revision on `conn`: initialized; its id.
async fn session(conn: &Conn, port: u16) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "tower-test", "version": "1"}}});
    let answer = conn
        .send(port, "POST", "/mcp", &[JSON, ACCEPT], &init.to_string())
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let id = answer.header("mcp-session-id").to_owned();
    assert!(!id.is_empty(), "{answer:?}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [
        JSON,
        ACCEPT,
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = conn
        .send(port, "POST", "/mcp", &headers, &initialized.to_string())
        .await;
    assert_eq!(answer.status, 202, "{answer:?}");
    id
}

/// `tools/call` of `tool` with `arguments` in session `id`.
async fn call_tool(conn: &Conn, port: u16, id: &str, tool: &str, arguments: Value) -> Answer {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": "p1"}}});
    let headers = [
        JSON,
        ACCEPT,
        ("mcp-session-id", id),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    conn.send(port, "POST", "/mcp", &headers, &call.to_string())
        .await
}

/// The text of a JSON `tools/call` answer's first content block.
fn tool_text(answer: &Answer) -> String {
    assert_eq!(answer.status, 200, "{answer:?}");
    let text = &answer.json()["result"]["content"][0]["text"];
    text.as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_app_answers_healthz_rpc_and_ws_beside_each_other_over_http1() {
    let (_app, port) = axum_app();
    let conn = Conn::h1(port).await;
    let health = conn.send(port, "GET", "/healthz", &[], "").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));

    // The specification's examples at /rpc.
    let cases = [
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
            json!({"jsonrpc":"2.0","result":19,"id":1}),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":3}"#,
            json!({"jsonrpc":"2.0","result":19,"id":3}),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"foobar","id":"1"}"#,
            json!({"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}),
        ),
    ];
    for (request, expected) in cases {
        let answer = conn.send(port, "POST", "/rpc", &[JSON], request).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.header("content-type"), "application/json");
        assert_eq!(answer.json(), expected);
    }
    let notification = r#"{"jsonrpc":"2.0","method":"notify_hello","params":[7]}"#;
    let answer = conn.send(port, "POST", "/rpc", &[JSON], notification).await;
    assert_eq!((answer.status, answer.body.as_str()), (204, ""));
    // The status table of the standalone server.
    let answer = conn.send(port, "GET", "/rpc", &[], "").await;
    assert_eq!((answer.status, answer.header("allow")), (405, "POST"));
    let text = [("content-type", "text/plain")];
    let answer = conn.send(port, "POST", "/rpc", &text, "{}").await;
    assert_eq!(answer.status, 415);
    let parse = conn.send(port, "POST", "/rpc", &[JSON], "{").await;
    assert_eq!(parse.json()["error"]["code"], -32700);

    // /ws: the same methods over WebSocket.
    let url = format!("ws://127.0.0.1:{port}/ws");
    let ws = sansrpc_tokio::ws::connect(url.as_str(), sansrpc_tokio::Builder::new())
        .await
        .unwrap();
    let params = sansrpc::RawValue::from_string("[10,4]".into()).unwrap();
    let result = ws.client.call_raw("subtract", Some(&params)).await.unwrap();
    assert_eq!(result.get(), "6");
    // Not a handshake: 400; a page of another site: 403 (the WebSocket `Origin` rule).
    let answer = conn.send(port, "GET", "/ws", &[], "").await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let handshake = [
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("origin", "https://evil.example.com"),
    ];
    let answer = conn.send(port, "GET", "/ws", &handshake, "").await;
    assert_eq!(answer.status, 403, "{answer:?}");
    // Another version: 426, naming 13 (RFC 6455 §4.4), as the standalone server answers.
    let mut old = handshake;
    old[2].1 = "8";
    let answer = conn.send(port, "GET", "/ws", &old[..4], "").await;
    assert_eq!(answer.status, 426, "{answer:?}");
    assert_eq!(answer.header("sec-websocket-version"), "13");
    assert_eq!(answer.body, "WebSocket version 13 only");
    // And the HTTP/1.1 connection still serves.
    let health = conn.send(port, "GET", "/healthz", &[], "").await;
    assert_eq!(health.body, "ok");
}

#[tokio::test]
async fn over_h2c_a_batch_and_an_mcp_call_answered_with_sse() {
    let (_app, port) = axum_app();
    let conn = Conn::h2(port).await;
    let batch = r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
        {"jsonrpc":"2.0","method":"notify_hello","params":[7]},
        {"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},
        {"foo":"boo"},
        {"jsonrpc":"2.0","method":"get_data","id":"9"}]"#;
    let answer = conn.send(port, "POST", "/rpc", &[JSON], batch).await;
    assert_eq!(answer.version, http::Version::HTTP_2);
    assert_eq!(answer.status, 200, "{answer:?}");
    let items = answer.json().as_array().cloned().unwrap();
    assert_eq!(items.len(), 4, "{items:?}");
    let by_id = |id: Value| items.iter().find(|i| i["id"] == id).cloned().unwrap();
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600);
    assert_eq!(
        by_id(json!("1")),
        json!({"jsonrpc":"2.0","result":7,"id":"1"})
    );
    assert_eq!(
        by_id(json!("2")),
        json!({"jsonrpc":"2.0","result":19,"id":"2"})
    );
    assert_eq!(
        by_id(json!("9")),
        json!({"jsonrpc":"2.0","result":["hello",5],"id":"9"})
    );

    // MCP: a call that reports progress is answered with Server-Sent Events.
    let id = session(&conn, port).await;
    let answer = call_tool(&conn, port, &id, "test_tool_with_progress", json!({})).await;
    assert_eq!(answer.version, http::Version::HTTP_2);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("content-type"), "text/event-stream");
    assert!(answer.body.contains("notifications/progress"), "{answer:?}");
    let last = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap();
    let last: Value = serde_json::from_str(last).unwrap();
    assert_eq!(last["id"], 2, "{last}");
    assert!(last["result"]["content"].is_array(), "{last}");
    // The session ends with DELETE.
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let answer = conn.send(port, "DELETE", "/mcp", &headers, "").await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let answer = call_tool(&conn, port, &id, "add", json!({"a": 1, "b": 2})).await;
    assert_eq!(answer.status, 404, "{answer:?}");
}

#[tokio::test]
async fn a_hundred_mcp_sessions_share_one_http2_connection() {
    let (_app, port) = axum_app();
    let conn = Conn::h2(port).await;
    let sessions = (0..100i64).map(|n| {
        let conn = conn.clone();
        tokio::spawn(async move {
            let id = session(&conn, port).await;
            let answer = call_tool(&conn, port, &id, "add", json!({"a": n, "b": 1000})).await;
            assert_eq!(answer.version, http::Version::HTTP_2);
            (id, tool_text(&answer))
        })
    });
    let mut ids = std::collections::BTreeSet::new();
    for (n, session) in sessions.enumerate() {
        let (id, sum) = session.await.unwrap();
        assert_eq!(sum, (n + 1000).to_string());
        ids.insert(id);
    }
    assert_eq!(ids.len(), 100, "every session has its own id");
}

#[tokio::test]
async fn the_request_id_the_app_layer_set_reaches_the_tool_as_header_and_extension() {
    let (_app, port) = axum_app();
    for conn in [Conn::h1(port).await, Conn::h2(port).await] {
        let id = session(&conn, port).await;
        let text = tool_text(&call_tool(&conn, port, &id, "request_id", json!({})).await);
        // "header req-N, extension req-N": the same id, from this request.
        let (header, extension) = text.split_once(", ").unwrap();
        let header = header.strip_prefix("header ").unwrap();
        let extension = extension.strip_prefix("extension ").unwrap();
        assert!(header.starts_with("req-"), "{text}");
        assert_eq!(header, extension, "{text}");
    }
}

#[tokio::test]
async fn the_bare_hyper_example_serves_mcp_over_http1_and_h2c() {
    let (_server, port) = example("hyper_mcp");
    for conn in [Conn::h1(port).await, Conn::h2(port).await] {
        let id = session(&conn, port).await;
        let answer = call_tool(&conn, port, &id, "echo", json!({"text": "hello"})).await;
        assert_eq!(tool_text(&answer), "hello");
    }
}

/// The `rust,ignore` snippets of `doc` (below `../`) that follow a link to `example`
/// (`mcp/examples/<example>.rs`) before the next link to another example: each is
/// in the example as it is, so the guide shows code that compiles.
fn snippets_are_in_example(doc: &str, example: &str) -> usize {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../");
    let text = std::fs::read_to_string(format!("{root}{doc}")).unwrap();
    let link = format!("examples/{example}.rs)");
    let source = std::fs::read_to_string(format!("{root}mcp/examples/{example}.rs")).unwrap();
    let mut current = false;
    let mut checked = 0;
    let mut rest = text.as_str();
    while let Some(at) = rest.find("```rust,ignore\n") {
        let before = &rest[..at];
        if let Some(last) = before.rfind("examples/") {
            current = before[last..].starts_with(&link);
        }
        let block = &rest[at + "```rust,ignore\n".len()..];
        let end = block.find("```").unwrap();
        let snippet = &block[..end];
        if current {
            assert!(
                source.contains(snippet),
                "{doc}: not in {example}.rs:\n{snippet}"
            );
            checked += 1;
        }
        rest = &block[end + 3..];
    }
    checked
}

#[test]
fn the_guides_show_the_examples_as_they_are() {
    assert_eq!(snippets_are_in_example("docs/transports.md", "axum_app"), 2);
    assert_eq!(
        snippets_are_in_example("docs/transports.md", "hyper_mcp"),
        1
    );
    assert_eq!(snippets_are_in_example("docs/mcp.md", "axum_app"), 3);
}

/// An MCP service with one `echo` tool.
fn echo_service() -> sansrpc_mcp::tokio::McpService {
    use sansrpc::connection::{Config, Profile};
    use sansrpc_mcp::server::{Context, McpError, ServerBuilder};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Echo {
        text: String,
    }
    let echo = |_: Context, echo: Echo| async move { Ok::<_, McpError>(echo.text) };
    let server = ServerBuilder::new("echo", "1")
        .tool("echo", "Echoes its text", echo)
        .build();
    let builder = sansrpc_tokio::Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    sansrpc_mcp::tokio::McpService::new(builder, server.streamable_config())
}

#[tokio::test]
async fn mcp_over_h2_with_tls_chosen_by_alpn() {
    use sansrpc_tokio::tls::{self, rustls};
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert: CertificateDer<'static> = generated.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    let mut server: rustls::ServerConfig =
        (*tls::server_config(vec![cert.clone()], key).unwrap()).clone();
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let mut client: rustls::ClientConfig =
        (*tls::client_config_with_roots([cert]).unwrap()).clone();
    client.alpn_protocols = vec![b"h2".to_vec()];

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let mcp = echo_service();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, mcp) = (acceptor.clone(), mcp.clone());
            tokio::spawn(async move {
                stream.set_nodelay(true).unwrap();
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(mcp);
                let server = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let _ = server.serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });

    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    tcp.set_nodelay(true).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let conn = Conn::H2(send);
    // The `Host` the machine checks comes from the URI's authority (`:authority`).
    let id = session(&conn, port).await;
    let answer = call_tool(&conn, port, &id, "echo", json!({"text": "over h2"})).await;
    assert_eq!(answer.version, http::Version::HTTP_2);
    assert_eq!(tool_text(&answer), "over h2");
}

/// A WebSocket client (tokio-tungstenite) on one stream of an HTTP/2 connection.
type H2Ws = tokio_tungstenite::WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// An HTTP/2 connection to `port` (prior knowledge) and its sender. (That the server
/// announced `SETTINGS_ENABLE_CONNECT_PROTOCOL` shows in a `200` to an extended CONNECT:
/// h2 resets a stream whose `:protocol` the server did not allow, PROTOCOL_ERROR.)
async fn h2_and_sender(port: u16) -> (Conn, http2::SendRequest<Full<Bytes>>) {
    let conn = Conn::h2(port).await;
    let Conn::H2(send) = &conn else {
        unreachable!()
    };
    let send = send.clone();
    (conn, send)
}

/// An extended CONNECT (RFC 8441) to `/ws` on `send` with `:protocol` `protocol` and
/// `headers`: the answer's status and header fields, and on a `200` the WebSocket on the
/// stream (tokio-tungstenite, as the client).
async fn connect_ws(
    send: &http2::SendRequest<Full<Bytes>>,
    port: u16,
    protocol: &'static str,
    headers: &[(&str, &str)],
) -> (u16, http::HeaderMap, Option<H2Ws>) {
    let mut request = http::Request::builder()
        .method("CONNECT")
        .version(http::Version::HTTP_2)
        .uri(format!("http://127.0.0.1:{port}/ws"))
        .extension(hyper::ext::Protocol::from_static(protocol));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::new())).unwrap();
    let mut send = send.clone();
    send.ready().await.unwrap();
    let response = send.send_request(request).await.unwrap();
    assert_eq!(response.version(), http::Version::HTTP_2);
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    if status != 200 {
        return (status, headers, None);
    }
    let upgraded = hyper::upgrade::on(response).await.unwrap();
    let role = tokio_tungstenite::tungstenite::protocol::Role::Client;
    let ws =
        tokio_tungstenite::WebSocketStream::from_raw_socket(TokioIo::new(upgraded), role, None)
            .await;
    (status, headers, Some(ws))
}

const WS_VERSION: (&str, &str) = ("sec-websocket-version", "13");

/// Sends `request` as a text message on `ws`; the next text message, as JSON.
async fn ws_call<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>, request: &str) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    ws.send(Message::text(request)).await.unwrap();
    loop {
        match ws.next().await.expect("an answer").unwrap() {
            Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("not an answer: {other:?}"),
        }
    }
}

#[tokio::test]
async fn websocket_over_http2_by_extended_connect_answers_json_rpc() {
    let (_app, port) = axum_app();
    let (conn, send) = h2_and_sender(port).await;

    let (status, headers, ws) = connect_ws(&send, port, "websocket", &[WS_VERSION]).await;
    assert_eq!(status, 200, "{headers:?}");
    // No key, no accept under HTTP/2 (RFC 8441 §5).
    assert!(headers.get("sec-websocket-accept").is_none(), "{headers:?}");
    let mut ws = ws.unwrap();
    let answer = ws_call(
        &mut ws,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
    )
    .await;
    assert_eq!(answer, json!({"jsonrpc":"2.0","result":19,"id":1}));
    let answer = ws_call(
        &mut ws,
        r#"{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":3}"#,
    )
    .await;
    assert_eq!(answer, json!({"jsonrpc":"2.0","result":19,"id":3}));
    let answer = ws_call(&mut ws, r#"{"jsonrpc":"2.0","method":"foobar","id":"1"}"#).await;
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // A batch with a notification in it: one answer, the notification's left out.
    let batch = r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
        {"jsonrpc":"2.0","method":"notify_hello","params":[7]},
        {"jsonrpc":"2.0","method":"get_data","id":"9"}]"#;
    let answer = ws_call(&mut ws, batch).await;
    let items = answer.as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2, "{answer}");
    assert!(items.contains(&json!({"jsonrpc":"2.0","result":7,"id":"1"})));
    assert!(items.contains(&json!({"jsonrpc":"2.0","result":["hello",5],"id":"9"})));

    // Refusals are HTTP answers on their stream, as over HTTP/1.1: another protocol and a
    // plain GET are no opening handshake (400); a wrong or missing version is answered
    // 426, naming 13 (RFC 6455 §4.4); a page of another site is refused by the `Origin`
    // rule (403).
    let (status, ..) = connect_ws(&send, port, "not-websocket", &[WS_VERSION]).await;
    assert_eq!(status, 400);
    let version_8 = [("sec-websocket-version", "8")];
    let (status, ..) = connect_ws(&send, port, "websocket", &version_8).await;
    assert_eq!(status, 426);
    let (status, ..) = connect_ws(&send, port, "websocket", &[]).await;
    assert_eq!(status, 426);
    let answer = conn.send(port, "GET", "/ws", &[WS_VERSION], "").await;
    assert_eq!(answer.status, 400, "{answer:?}");
    let evil = [WS_VERSION, ("origin", "https://evil.example.com")];
    let (status, ..) = connect_ws(&send, port, "websocket", &evil).await;
    assert_eq!(status, 403);

    // The WebSocket opened first still answers, and closes as WebSocket does.
    let answer = ws_call(
        &mut ws,
        r#"{"jsonrpc":"2.0","method":"sum","params":[5],"id":4}"#,
    )
    .await;
    assert_eq!(answer, json!({"jsonrpc":"2.0","result":5,"id":4}));
    ws.close(None).await.unwrap();
    {
        use futures::StreamExt;
        while let Some(message) = ws.next().await {
            if message.is_err() {
                break;
            }
        }
    }
    let health = conn.send(port, "GET", "/healthz", &[], "").await;
    assert_eq!(health.body, "ok");
}

#[tokio::test]
async fn two_websockets_and_an_mcp_session_share_one_http2_connection_at_once() {
    let (_app, port) = axum_app();
    let (conn, send) = h2_and_sender(port).await;
    let (status, _, first) = connect_ws(&send, port, "websocket", &[WS_VERSION]).await;
    assert_eq!(status, 200);
    let (status, _, second) = connect_ws(&send, port, "websocket", &[WS_VERSION]).await;
    assert_eq!(status, 200);
    let (mut first, mut second) = (first.unwrap(), second.unwrap());

    // Each WebSocket runs a hundred calls while an MCP session is made and calls a tool
    // answered with SSE, all on the one connection.
    let on = |mut ws: H2Ws, tag: &'static str, base: i64| async move {
        for n in 0..100 {
            let call = format!(
                r#"{{"jsonrpc":"2.0","method":"subtract","params":[{},{n}],"id":"{tag}-{n}"}}"#,
                base + n
            );
            let answer = ws_call(&mut ws, &call).await;
            assert_eq!(
                answer,
                json!({"jsonrpc":"2.0","result":base,"id":format!("{tag}-{n}")})
            );
        }
        ws
    };
    let mcp = async {
        let id = session(&conn, port).await;
        let answer = call_tool(&conn, port, &id, "test_tool_with_progress", json!({})).await;
        assert_eq!(answer.version, http::Version::HTTP_2);
        assert_eq!(answer.header("content-type"), "text/event-stream");
        assert!(answer.body.contains("notifications/progress"), "{answer:?}");
        let sum = call_tool(&conn, port, &id, "add", json!({"a": 40, "b": 2})).await;
        assert_eq!(tool_text(&sum), "42");
    };
    let (first_back, second_back, ()) =
        tokio::join!(on(first, "a", 1000), on(second, "b", -7), mcp);
    (first, second) = (first_back, second_back);

    // The first closes; the second goes on.
    {
        use futures::StreamExt;
        first.close(None).await.unwrap();
        while let Some(Ok(_)) = first.next().await {}
    }
    let answer = ws_call(
        &mut second,
        r#"{"jsonrpc":"2.0","method":"sum","params":[1,1],"id":5}"#,
    )
    .await;
    assert_eq!(answer, json!({"jsonrpc":"2.0","result":2,"id":5}));
}

#[tokio::test]
async fn the_bare_hyper_example_serves_websocket_over_http2_beside_mcp() {
    let (_server, port) = example("hyper_mcp");
    let (conn, send) = h2_and_sender(port).await;
    let (status, _, ws) = connect_ws(&send, port, "websocket", &[WS_VERSION]).await;
    assert_eq!(status, 200);
    let mut ws = ws.unwrap();
    // The same server's methods, one JSON-RPC message per WebSocket message.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "tower-test", "version": "1"}}});
    let answer = ws_call(&mut ws, &init.to_string()).await;
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "hyper-mcp",
        "{answer}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    {
        use futures::SinkExt;
        let message = tokio_tungstenite::tungstenite::Message::text(initialized.to_string());
        ws.send(message).await.unwrap();
    }
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "over a stream"}}});
    let answer = ws_call(&mut ws, &call.to_string()).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "over a stream",
        "{answer}"
    );
    // MCP over Streamable HTTP on the same connection, while the WebSocket is open.
    let id = session(&conn, port).await;
    let answer = call_tool(&conn, port, &id, "echo", json!({"text": "beside it"})).await;
    assert_eq!(tool_text(&answer), "beside it");
    // And the HTTP/1.1 upgrade (a real client, tungstenite's handshake).
    let url = format!("ws://127.0.0.1:{port}/ws");
    let (mut h1, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let answer = ws_call(&mut h1, &init.to_string()).await;
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "hyper-mcp",
        "{answer}"
    );
}

/// The mounted service's own refusals carry the JSON-RPC error body the standalone server's
/// do (issue 60): a body over the 4 MiB bound is 413 with an error of `null` id that names
/// it, not an empty body; a `Host` outside the allowed ones is 403 whose message names the
/// host and the setting that allows it.
#[tokio::test]
async fn the_mounted_service_refuses_with_a_json_rpc_error_that_says_why() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = axum::Router::new().route_service("/mcp", echo_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    // One request on a new connection: the answer's status and its body as JSON.
    let exchange = |host: String, body: Vec<u8>| async move {
        let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        // The server may answer (and close) before it read the whole body.
        let _ = tcp.write_all(&body).await;
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer).await;
        let text = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("{text}"));
        let status: u16 = head[9..12].parse().unwrap();
        let body: Value =
            serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
        (status, body)
    };
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    let mut large = init.to_vec();
    large.resize(4 * 1024 * 1024 + 1, b' ');
    let (status, body) = exchange(format!("127.0.0.1:{port}"), large).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Payload Too Large"), "{message}");

    let (status, body) = exchange("mcp.example.com".into(), init.to_vec()).await;
    assert_eq!(status, 403, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(r#""mcp.example.com""#), "{message}");
    assert!(message.contains("streamable::Config::hosts"), "{message}");
    assert!(message.contains("Hosts::List"), "{message}");
}

/// A browser page of an allowed origin (a dev server on another loopback port) reaches the
/// mounted MCP service: its preflight is answered, and it may read the session's id.
#[tokio::test]
async fn a_page_of_a_loopback_origin_gets_cors_from_the_mounted_service() {
    let (_app, port) = axum_app();
    let conn = Conn::h1(port).await;
    let page = ("origin", "http://localhost:5173");
    let preflight = [
        page,
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "content-type, mcp-session-id",
        ),
    ];
    let answer = conn.send(port, "OPTIONS", "/mcp", &preflight, "").await;
    assert_eq!(answer.status, 204, "{answer:?}");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        "http://localhost:5173"
    );
    assert_eq!(
        answer.header("access-control-allow-headers"),
        "content-type, mcp-session-id"
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}});
    let answer = conn
        .send(
            port,
            "POST",
            "/mcp",
            &[JSON, ACCEPT, page],
            &init.to_string(),
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(!answer.header("mcp-session-id").is_empty(), "{answer:?}");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        "http://localhost:5173"
    );
    assert!(answer
        .header("access-control-expose-headers")
        .contains("mcp-session-id"));
}
