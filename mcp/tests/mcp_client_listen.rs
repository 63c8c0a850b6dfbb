//! `McpClient::listen` (2026-07-28) over Streamable HTTP: the typed client on
//! `sansrpc_mcp::tokio::connect` against a sansrpc-mcp `Server` served by
//! `sansrpc_mcp::tokio::serve` on loopback. Each listen request's answer is an event stream
//! of its own: the acknowledgement, then only what that subscription asked for. Dropping a
//! subscription closes its stream (the transport aborts the POST: on this revision that is
//! how a client cancels over HTTP), and the server forgets it; `Server::end_subscriptions`
//! answers the other `complete`, which ends its `next()` with `None`.
//!
//! Each step waits for the notification (or the server-side count) it expects; the server's
//! count is polled, bounded by 10 s.
#![cfg(not(target_arch = "wasm32"))]

use std::time::{Duration, Instant};

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ListenNotification};
use sansrpc_mcp::server::{Context, ListKind, McpError, Server, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_mcp::types::{Resource, SubscriptionFilter};
use sansrpc_tokio::Builder;
use serde_json::json;

fn server() -> Server {
    let resource: Resource =
        serde_json::from_value(json!({"uri": "test://a", "name": "a"})).unwrap();
    ServerBuilder::new("client-listen-http-test", "1")
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Resources)
        .resource_subscriptions()
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .resource(resource, |_, _| async { Err(McpError::internal("unread")) })
        .build()
}

/// Serves `server` on a free loopback port, on the test's runtime; its URL.
async fn serve(server: &Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    tokio::spawn(async move {
        let never = std::future::pending::<()>();
        sansrpc_mcp::tokio::serve(listener, builder, streamable::Config::default(), never)
            .await
            .unwrap();
    });
    format!("http://127.0.0.1:{port}/mcp")
}

/// Waits until `cond` holds, 10 s at most: the server's side has no event to wait on.
async fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut poll = tokio::time::interval(Duration::from_millis(2));
    while !cond() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        poll.tick().await;
    }
}

fn filter(value: serde_json::Value) -> SubscriptionFilter {
    serde_json::from_value(value).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_over_streamable_http() {
    let bound = Duration::from_secs(20);
    tokio::time::timeout(bound, async {
        let server = server();
        let url = serve(&server).await;
        let mcp = ClientBuilder::new("client-listen-http-test", "1");
        let builder = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(mcp.router());
        let conn = sansrpc_mcp::tokio::connect(&url, builder).unwrap();
        let client = mcp.discover(conn.client.clone()).await.unwrap();
        assert!(client.is_stateless());

        let mut tools = client
            .listen(filter(
                json!({"toolsListChanged": true, "promptsListChanged": true}),
            ))
            .await
            .unwrap();
        assert_eq!(tools.filter(), &filter(json!({"toolsListChanged": true})));
        let mut resources = client
            .listen(filter(json!({"resourceSubscriptions": ["test://a"]})))
            .await
            .unwrap();
        assert_ne!(tools.id(), resources.id());
        until("both subscriptions are open", || {
            server.open_subscriptions() == 2
        })
        .await;

        // Each gets its own, and a change nobody asked for reaches nobody.
        assert_eq!(server.list_changed(ListKind::Prompts), 0);
        assert_eq!(server.resource_updated("test://other"), 0);
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(server.resource_updated("test://a"), 1);
        assert_eq!(
            tools.next().await,
            Some(ListenNotification::ToolsListChanged)
        );
        match resources.next().await {
            Some(ListenNotification::ResourceUpdated(updated)) => {
                assert_eq!(updated.uri, "test://a")
            }
            other => panic!("{other:?}"),
        }
        // On its own stream, in order: the next each gets is the next change it asked for.
        assert_eq!(server.list_changed(ListKind::Resources), 0);
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(
            tools.next().await,
            Some(ListenNotification::ToolsListChanged)
        );

        // Dropped: the transport closes its stream and the server forgets it.
        drop(tools);
        until("the dropped subscription is forgotten", || {
            server.open_subscriptions() == 1
        })
        .await;
        assert_eq!(server.list_changed(ListKind::Tools), 0);

        // The server ends the other: `complete`, then `None`.
        assert_eq!(server.resource_updated("test://a"), 1);
        assert_eq!(server.end_subscriptions(), 1);
        assert!(matches!(
            resources.next().await,
            Some(ListenNotification::ResourceUpdated(_))
        ));
        assert_eq!(resources.next().await, None);
        assert!(resources.error().is_none(), "{:?}", resources.error());
        until("the ended subscription leaves", || {
            server.open_subscriptions() == 0
        })
        .await;
        // The connection still works.
        assert_eq!(client.all_tools().await.unwrap().len(), 1);
    })
    .await
    .expect("done within 20 s");
}
