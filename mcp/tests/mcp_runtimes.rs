//! One MCP server definition (`sansrpc_mcp::server`) served by three drivers over real TCP
//! sockets on loopback: the tokio adapter, the futures driver on smol, and the blocking
//! adapter's threads (no async runtime). The same typed client (`sansrpc_mcp::client`, on
//! tokio) goes through the same calls against each: tools listed across pages, a tool that
//! asks the client (elicitation) and logs, a resource, a bad call, a call abandoned and
//! cancelled. What it sees must be the same on all three.
#![cfg(not(target_arch = "wasm32"))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::ClientBuilder;
use sansrpc_mcp::server::{Context, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{
    ContentBlock, ElicitRequestParams, ElicitResult, LoggingLevel, Resource, ResourceContents,
};
use sansrpc_tokio::{sansrpc, Builder};
use serde_json::{json, Value};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> Server {
    // How many `wait` calls saw their cancellation (a watch channel works on any executor).
    let (seen, cancellations) = tokio::sync::watch::channel(0u32);
    let seen = Arc::new(seen);
    ServerBuilder::new("runtimes", "1.0.0")
        .page_size(1)
        .tool("add", "Adds", |_: Context, Add { a, b }| async move {
            a.checked_add(b)
                .map(|s| s.to_string())
                .ok_or_else(|| McpError::tool("overflow"))
        })
        .tool(
            "greet",
            "Asks the user's name",
            |cx: Context, ()| async move {
                let form: ElicitRequestParams = serde_json::from_value(json!({
                    "message": "Name?",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string", "default": "Ada"}}}
                }))
                .unwrap();
                let answer = cx.elicit("name", form).await?;
                cx.log(LoggingLevel::Warning, "greeted").await;
                let name = serde_json::to_value(&answer.content).unwrap()["name"].clone();
                Ok::<_, McpError>(format!("hello {}", name.as_str().unwrap_or("?")))
            },
        )
        .tool("wait", "Waits until cancelled", move |cx: Context, ()| {
            let seen = seen.clone();
            async move {
                cx.cancelled().await;
                seen.send_modify(|n| *n += 1);
                Ok::<_, McpError>("cancelled")
            }
        })
        .tool(
            "cancellations",
            "Waits for a cancelled wait",
            move |_: Context, ()| {
                let mut cancellations = cancellations.clone();
                async move {
                    let n = *cancellations.wait_for(|n| *n > 0).await.unwrap();
                    Ok::<_, McpError>(n.to_string())
                }
            },
        )
        .resource(Resource::new("memo://one", "one"), |_, uri| async move {
            Ok(vec![ResourceContents::text(uri, None, "first memo")])
        })
        .build()
}

fn config() -> Config {
    Config::for_profile(Profile::Mcp)
}

/// Serves `server` on a tokio task; its address.
async fn on_tokio(server: &Server) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let builder = Builder::new().config(config()).router(server.router());
    tokio::spawn(async move {
        let forever = std::future::pending::<()>();
        sansrpc_tokio::serve_tcp(listener, builder, forever, Duration::from_secs(1)).await
    });
    addr
}

/// Serves one connection of `server` with the futures driver on a smol executor thread.
fn on_smol(server: &Server) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let router = server.router();
    std::thread::spawn(move || {
        smol::block_on(async move {
            let listener = async_net::TcpListener::try_from(listener).unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            let builder = Builder::new().config(config()).router(router);
            let (_, driver) = builder.connect(
                sansrpc_futures::transport::tcp(stream),
                sansrpc_futures::AsyncIoTimer,
            );
            let _ = driver.await;
        })
    });
    addr
}

/// Serves `server` on the blocking adapter's threads.
fn on_threads(server: &Server) -> sansrpc_blocking::Server {
    // The MCP profile and its framing (newline-delimited JSON), as the other two.
    let blocking = sansrpc_blocking::Options::for_profile(Profile::Mcp);
    sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(server.blocking_router()), blocking)
        .unwrap()
}

fn text(content: &[ContentBlock]) -> String {
    match content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => format!("{other:?}"),
    }
}

/// What the typed client sees of the server at `addr`.
async fn transcript(addr: std::net::SocketAddr) -> Value {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let seen = logs.clone();
    let mcp = ClientBuilder::new("runtimes-client", "1")
        .on_elicitation(|request| async move { Ok(ElicitResult::accept(request.defaults())) })
        .on_notification(move |method, params| {
            seen.lock()
                .unwrap()
                .push(json!({"method": method, "params": params}));
        });
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let builder = Builder::new().config(config()).router(mcp.router());
    let conn = sansrpc_tokio::spawn(builder, sansrpc_tokio::tcp(stream));
    let client = mcp.initialize(conn.client.clone()).await.unwrap();
    client.set_logging_level(LoggingLevel::Info).await.unwrap();
    let tools: Vec<String> = client
        .all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    let sum = client
        .call_tool("add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    let overflow = client
        .call_tool("add", json!({"a": i64::MAX, "b": 1}))
        .await
        .unwrap();
    let greeting = client.call_tool("greet", ()).await.unwrap();
    let memo = client.read_resource("memo://one").await.unwrap();
    // Abandoned: dropping the call sends notifications/cancelled, and the handler's
    // `cancelled()` ends its wait.
    let wait = client.call_tool("wait", ());
    let abandoned = tokio::time::timeout(Duration::from_millis(100), wait)
        .await
        .is_err();
    let cancellations = client.call_tool("cancellations", ()).await.unwrap();
    let unknown = client.call_tool("nope", ()).await.unwrap_err();
    // The log notification went out before the tool's answer, on the same connection.
    let logs = logs.lock().unwrap().clone();
    conn.shutdown.shutdown(Duration::from_millis(100));
    json!({
        "server": client.server_info().name,
        "version": client.protocol_version(),
        "tools": tools,
        "sum": text(&sum.content),
        "overflow": [text(&overflow.content), overflow.is_error],
        "greeting": text(&greeting.content),
        "memo": serde_json::to_value(&memo.contents[0]).unwrap()["text"],
        "unknown": unknown.rpc().map(|e| e.code),
        "abandoned": abandoned,
        "cancellations": text(&cancellations.content),
        "logs": logs,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_server_behaves_the_same_on_tokio_smol_and_threads() {
    // The same definition, built once per driver (each counts its own cancellations).
    let tokio_addr = on_tokio(&server()).await;
    let smol_addr = on_smol(&server());
    let threads = on_threads(&server());

    let limit = Duration::from_secs(30);
    let on_tokio = tokio::time::timeout(limit, transcript(tokio_addr))
        .await
        .unwrap();
    let on_smol = tokio::time::timeout(limit, transcript(smol_addr))
        .await
        .unwrap();
    let on_threads = tokio::time::timeout(limit, transcript(threads.local_addr()))
        .await
        .unwrap();
    threads.shutdown();

    let expected = json!({
        "server": "runtimes",
        "version": "2025-11-25",
        "tools": ["add", "greet", "wait", "cancellations"],
        "sum": "42",
        "overflow": ["overflow", true],
        "greeting": "hello Ada",
        "memo": "first memo",
        "unknown": -32602,
        "abandoned": true,
        "cancellations": "1",
        "logs": [{"method": "notifications/message",
            "params": {"level": "warning", "data": "greeted"}}],
    });
    assert_eq!(on_tokio, expected, "tokio");
    assert_eq!(on_smol, expected, "smol");
    assert_eq!(on_threads, expected, "threads");
}
