//! The typed MCP client's lifecycle over Streamable HTTP, against a server written with the
//! official MCP Python SDK 2.3.0 (`interop/mcp-python/http_server.py`, which logs every
//! HTTP exchange): `McpClient::close().await` ends the session with a `DELETE` before it
//! returns, and dropping the last `McpClient` does the same in the background. Either way
//! the server forgot the session: a request naming it afterwards is answered 404. The
//! client is made from a borrowed connection (`initialize(&conn)`), no clone. And against
//! a server that refuses the `DELETE` while its GET stream stays open: closing ends it.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/common.rs"]
mod common;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::ClientBuilder;
use sansrpc_tokio::Builder;
use serde_json::{json, Value};
use support::Running;

/// The Python SDK's server on a free port, logging to `log`; its port.
fn python_server(log: &Path) -> (Running, u16) {
    let _ = std::fs::remove_file(log);
    let sdk = support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python");
    let script = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-python").join("http_server.py");
    let mut server = Running(
        Command::new("python3")
            .arg(script)
            .args(["0", "--log"])
            .arg(log)
            .env("PYTHONPATH", sdk)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the SDK's server"),
    );
    let stdout = server.0.stdout.take().unwrap();
    let line = common::first_line(
        stdout,
        Duration::from_secs(60),
        "the Python SDK's server listens",
    );
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line:?}"));
    (server, port)
}

fn log_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-client-close-{name}.jsonl"))
}

/// The logged exchanges, one JSON object each.
fn entries(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The session id the server gave (the header of its answer to `initialize`).
fn session_id(log: &Path) -> String {
    entries(log)
        .iter()
        .find_map(|e| {
            (e["dir"] == "response")
                .then(|| e["headers"]["mcp-session-id"].as_str())
                .flatten()
                .map(str::to_owned)
        })
        .expect("the server named a session")
}

/// The status the server answered the `DELETE` naming `session` with, once logged.
fn delete_status(log: &Path, session: &str) -> Option<u64> {
    let all = entries(log);
    let n = all.iter().find_map(|e| {
        (e["dir"] == "request"
            && e["method"] == "DELETE"
            && e["headers"]["mcp-session-id"] == session)
            .then(|| e["n"].clone())
    })?;
    all.iter()
        .find(|e| e["dir"] == "response" && e["n"] == n)
        .and_then(|e| e["status"].as_u64())
}

/// The status of a `tools/list` POST naming `session`, sent by hand.
fn status_of_a_request_in(port: u16, session: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

/// A typed client on a new HTTP connection to `port`: initialized, one call made.
async fn session(port: u16) -> (sansrpc_tokio::Spawned, sansrpc_mcp::client::McpClient) {
    let mcp = ClientBuilder::new("close-test", "1");
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let url = format!("http://127.0.0.1:{port}/mcp");
    let conn = sansrpc_mcp::tokio::connect(&url, builder).unwrap();
    let client = mcp.initialize(&conn).await.unwrap();
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(format!("{sum:?}").contains('5'), "{sum:?}");
    (conn, client)
}

#[tokio::test]
async fn close_ends_the_session_with_a_delete_before_it_returns() {
    let log = log_path("close");
    let (_server, port) = python_server(&log);
    let (conn, client) = session(port).await;
    let id = session_id(&log);
    assert_eq!(status_of_a_request_in(port, &id), 200, "the session serves");
    tokio::time::timeout(Duration::from_secs(10), client.close())
        .await
        .expect("close is bounded");
    // Answered before `close` returned.
    assert_eq!(delete_status(&log, &id), Some(200), "the DELETE arrived");
    assert_eq!(
        status_of_a_request_in(port, &id),
        404,
        "the session is gone"
    );
    // The connection is closed: its driver ended, every handle fails.
    tokio::time::timeout(Duration::from_secs(5), conn.driver)
        .await
        .expect("the driver ended")
        .unwrap()
        .unwrap();
    assert!(conn.client.is_closed());
}

#[tokio::test]
async fn dropping_the_last_client_ends_the_session_in_the_background() {
    let log = log_path("drop");
    let (_server, port) = python_server(&log);
    let (conn, client) = session(port).await;
    let id = session_id(&log);
    let clone = client.clone();
    drop(client);
    assert!(!conn.client.is_closed(), "a clone still holds the session");
    assert_eq!(status_of_a_request_in(port, &id), 200);
    drop(clone);
    // The driver ends the session by itself (no one awaits it).
    tokio::time::timeout(Duration::from_secs(10), conn.driver)
        .await
        .expect("the driver ended")
        .unwrap()
        .unwrap();
    let logged = tokio::task::spawn_blocking({
        let (log, id) = (log.clone(), id.clone());
        move || {
            common::wait_until(Duration::from_secs(10), "the DELETE is logged", || {
                delete_status(&log, &id).is_some()
            });
            delete_status(&log, &id)
        }
    })
    .await
    .unwrap();
    assert_eq!(logged, Some(200), "the DELETE arrived");
    assert_eq!(
        status_of_a_request_in(port, &id),
        404,
        "the session is gone"
    );
}

/// A child process's connection is not closed by the drop of the last `McpClient`: its own
/// `shutdown` ends it (closing the child's stdin and reading its output to the end), so
/// the child exits by itself, status 0.
#[tokio::test]
async fn dropping_the_last_client_leaves_a_child_process_to_its_own_shutdown() {
    let server = support::built_example("sansrpc-mcp", "notes_server");
    let mcp = ClientBuilder::new("close-test", "1");
    let child =
        sansrpc_tokio::spawn_child(builder(&mcp), &mut tokio::process::Command::new(server))
            .unwrap();
    let client = mcp.initialize(&child).await.unwrap();
    drop(client);
    // The connection still serves its other handles.
    let tools = child.client.call_raw("tools/list", None).await.unwrap();
    assert!(tools.get().contains("\"add\""), "{}", tools.get());
    assert!(!child.client.is_closed());
    let status = child.shutdown(Duration::from_secs(5)).await.unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
}

fn builder(mcp: &ClientBuilder) -> Builder {
    Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router())
}

/// Was a bug: the client's exchanges outlived its connection. A server that answers the
/// session's `DELETE` 405 (the specification allows it) while its GET stream stays open
/// kept that GET (its socket, its task, the client's shared state) for ever after
/// `close()`. The server here is a few lines over a real socket, as such a server behaves:
/// `initialize` answered with a session, the GET stream opened and never ended, `DELETE`
/// refused. Once the client closed, the GET connection ends.
#[tokio::test]
async fn closing_ends_the_get_stream_of_a_server_that_refuses_delete() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (opened, mut get_opened) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (ended, mut get_ended) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let (opened, ended) = (opened.clone(), ended.clone());
            tokio::spawn(async move {
                let mut socket = BufReader::new(socket);
                let mut line = String::new();
                socket.read_line(&mut line).await.unwrap();
                let method = line.split(' ').next().unwrap_or_default().to_owned();
                let mut length = 0;
                loop {
                    let mut field = String::new();
                    socket.read_line(&mut field).await.unwrap();
                    if field.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = field.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0; length];
                socket.read_exact(&mut body).await.unwrap();
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = match (method.as_str(), message["method"].as_str()) {
                    ("POST", Some("initialize")) => {
                        let result = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                            "protocolVersion": "2025-06-18", "capabilities": {},
                            "serverInfo": {"name": "raw", "version": "1"}}});
                        let text = result.to_string();
                        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: raw-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}", text.len())
                    }
                    ("POST", _) => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                    ("GET", _) => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                        socket.get_mut().write_all(head.as_bytes()).await.unwrap();
                        let _ = opened.send(());
                        // Open until the client goes: its end is what the test waits for.
                        let mut rest = Vec::new();
                        let _ = socket.read_to_end(&mut rest).await;
                        let _ = ended.send(());
                        return;
                    }
                    _ => "HTTP/1.1 405 Method Not Allowed\r\nallow: GET, POST\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                };
                let _ = socket.get_mut().write_all(answer.as_bytes()).await;
            });
        }
    });
    let client = ClientBuilder::new("close-client", "1");
    let conn = sansrpc_mcp::tokio::Connect::new(format!("http://127.0.0.1:{port}/mcp"))
        .connect(builder(&client))
        .unwrap();
    let session = client.initialize(&conn).await.unwrap();
    let limit = Duration::from_secs(10);
    tokio::time::timeout(limit, get_opened.recv())
        .await
        .expect("the GET stream opens");
    session.close().await;
    drop(conn);
    tokio::time::timeout(limit, get_ended.recv())
        .await
        .expect("the GET stream ends once the client closed");
}
