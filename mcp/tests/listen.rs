//! `subscriptions/listen` (2026-07-28) on the futures driver (smol) over a real TCP socket
//! on loopback, as on stdio where every subscription shares one channel: the
//! acknowledgment first, with the subscription id (the listen request's id) and the part of
//! the filter the server honours; then only what was asked for, each tagged; two
//! subscriptions side by side; a cancelled one gets nothing more and leaves the server's
//! list; `Server::end_subscriptions` answers the rest with a `complete` result; a change
//! made while the acknowledgment is still on its way is not missed (a host of the test's). A session
//! (2025-11-25) has no `subscriptions/listen`. Over Streamable HTTP the conformance suite
//! checks the same (`mcp_conformance.rs`) and `mcp_listen_http.rs` that a closed stream
//! ends its subscription.
#![cfg(not(target_arch = "wasm32"))]

use std::time::Duration;

mod support;
use support::run;

use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::RawValue;
use sansrpc_futures::{AsyncRouter, CallError, Client};
use sansrpc_mcp::server::{Context, ListKind, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::Resource;
use serde_json::{json, Value};

fn server() -> Server {
    let resource: Resource =
        serde_json::from_value(json!({"uri": "test://a", "name": "a"})).unwrap();
    ServerBuilder::new("listen-test", "1")
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Resources)
        .resource_subscriptions()
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .resource(resource, |_, _| async { Err(McpError::internal("unread")) })
        .build()
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn listen_params(filter: Value) -> Box<RawValue> {
    let meta: Value = serde_json::from_str(META).unwrap();
    RawValue::from_string(json!({"_meta": meta, "notifications": filter}).to_string()).unwrap()
}

/// The server on one loopback connection; the client end, and every notification it gets
/// as `(method, params)`.
async fn connect(server: &Server) -> (Client, mpsc::UnboundedReceiver<(String, Value)>) {
    let (tx, rx) = mpsc::unbounded();
    let mut router = AsyncRouter::new();
    for method in [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ] {
        let tx = tx.clone();
        router
            .raw_notification(method, move |params| {
                let params: Value =
                    params.map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
                let _ = tx.unbounded_send((method.to_owned(), params));
                async {}
            })
            .unwrap();
    }
    (support::loopback(server.router(), router).await, rx)
}

/// Waits (bounded by `run`'s limit) until `cond` holds.
async fn until(cond: impl Fn() -> bool) {
    while !cond() {
        async_io::Timer::after(Duration::from_millis(5)).await;
    }
}

fn subscription(params: &Value) -> &Value {
    &params["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

#[test]
fn listen_streams_get_their_acknowledgment_then_only_what_they_asked_for() {
    run(async {
        let server = server();
        let (client, mut seen) = connect(&server).await;
        // Tools and prompts asked for; this server does not announce prompts (it has none, and did not declare that they change): only tools is honoured.
        let tools = client.call_raw(
            "subscriptions/listen",
            Some(&listen_params(
                json!({"toolsListChanged": true, "promptsListChanged": true}),
            )),
        );
        let (method, ack) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/subscriptions/acknowledged");
        let tools_id = subscription(&ack).clone();
        assert!(tools_id.is_number(), "the listen request's id: {ack}");
        assert_eq!(ack["notifications"], json!({"toolsListChanged": true}));
        // A second subscription, to one resource's updates and the resource list.
        let resources = client.call_raw(
            "subscriptions/listen",
            Some(&listen_params(
                json!({"resourceSubscriptions": ["test://a"], "resourcesListChanged": true}),
            )),
        );
        let (method, ack) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/subscriptions/acknowledged");
        let resources_id = subscription(&ack).clone();
        assert_ne!(resources_id, tools_id);
        assert_eq!(
            ack["notifications"],
            json!({"resourcesListChanged": true, "resourceSubscriptions": ["test://a"]})
        );
        until(|| server.open_subscriptions() == 2).await;

        // Each change reaches the subscription that asked, tagged with its id.
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        let (method, params) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/tools/list_changed");
        assert_eq!(subscription(&params), &tools_id);
        assert_eq!(
            server.list_changed(ListKind::Prompts),
            0,
            "nobody was given prompts"
        );
        assert_eq!(server.resource_updated("test://other"), 0);
        assert_eq!(server.resource_updated("test://a"), 1);
        let (method, params) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/resources/updated");
        assert_eq!(params["uri"], "test://a");
        assert_eq!(subscription(&params), &resources_id);

        // Dropping the call cancels it (notifications/cancelled): it leaves the list and
        // gets nothing more.
        drop(tools);
        until(|| server.open_subscriptions() == 1).await;
        assert_eq!(server.list_changed(ListKind::Tools), 0);

        // The server ends the rest: the listen request is answered `complete`, tagged.
        assert_eq!(server.end_subscriptions(), 1);
        let result = resources.await.unwrap();
        let result: Value = serde_json::from_str(result.get()).unwrap();
        assert_eq!(result["resultType"], "complete");
        assert_eq!(subscription(&result), &resources_id);
        until(|| server.open_subscriptions() == 0).await;
        // Nothing else came on the connection (the prompts change was never sent).
        assert!(seen.try_recv().is_err(), "no other notification");
    });
}

#[test]
fn listen_is_refused_on_a_session_and_when_its_filter_is_too_large() {
    run(async {
        let server = server();
        let (client, _seen) = connect(&server).await;
        // Without the 2026-07-28 `_meta`, a request belongs to a session: no listen there.
        let params = RawValue::from_string(json!({"notifications": {}}).to_string()).unwrap();
        match client.call_raw("subscriptions/listen", Some(&params)).await {
            Err(CallError::Rpc(e)) => assert_eq!(e.code, -32601, "{e:?}"),
            other => panic!("{other:?}"),
        }
        let uris: Vec<String> = (0..1025).map(|n| format!("test://{n}")).collect();
        let params = listen_params(json!({"resourceSubscriptions": uris}));
        match client.call_raw("subscriptions/listen", Some(&params)).await {
            Err(CallError::Rpc(e)) => assert_eq!(e.code, -32602, "{e:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(server.open_subscriptions(), 0);
    });
}

/// A peer that records what the server sends and holds the acknowledgment's future open
/// until the test lets it go: what happens between the acknowledgment and the listener's
/// registration is then in the test's hands.
struct Held {
    sent: std::sync::Mutex<Vec<String>>,
    gate: std::sync::Mutex<Option<futures::channel::oneshot::Receiver<()>>>,
    locals: std::sync::Arc<sansrpc_runtime::Locals>,
}

struct Nobody;

impl sansrpc_runtime::ConnectionNotifier for Nobody {
    fn notify(&self, _: &str, _: Box<RawValue>) -> bool {
        true
    }
    fn is_closed(&self) -> bool {
        false
    }
}

impl sansrpc_mcp::server::Peer for Held {
    fn call(
        &self,
        _: &str,
        _: Box<RawValue>,
    ) -> sansrpc_mcp::server::BoxFuture<Result<Box<RawValue>, sansrpc::ErrorObject<'static>>> {
        Box::pin(async { Err(sansrpc::ErrorObject::new(-32601, "no calls here")) })
    }
    fn notify(&self, method: &str, _: Box<RawValue>) -> sansrpc_mcp::server::BoxFuture<bool> {
        self.sent.lock().unwrap().push(method.to_owned());
        match self.gate.lock().unwrap().take() {
            Some(gate) => Box::pin(async move { gate.await.is_ok() }),
            None => Box::pin(async { true }),
        }
    }
    fn progress(&self, _: Box<RawValue>) -> sansrpc_mcp::server::BoxFuture<bool> {
        Box::pin(async { false })
    }
    fn progress_token(&self) -> Option<sansrpc::Id<'static>> {
        None
    }
    fn is_cancelled(&self) -> bool {
        false
    }
    fn cancelled(&self) -> sansrpc_mcp::server::BoxFuture<()> {
        Box::pin(futures::future::pending())
    }
    fn locals(&self) -> std::sync::Arc<sansrpc_runtime::Locals> {
        self.locals.clone()
    }
    fn notifier(&self) -> std::sync::Arc<dyn sansrpc_runtime::ConnectionNotifier> {
        std::sync::Arc::new(Nobody)
    }
    fn request_id(&self) -> Option<sansrpc::Id<'static>> {
        Some(sansrpc::Id::number(9))
    }
    fn http(&self) -> Option<std::sync::Arc<sansrpc::codec::http::HttpRequest>> {
        None
    }
    fn profile(&self) -> sansrpc::connection::Profile {
        sansrpc::connection::Profile::Mcp
    }
}

#[test]
fn a_change_right_after_the_acknowledgment_is_not_missed() {
    use futures::FutureExt;
    let server = server();
    let (open, gate) = futures::channel::oneshot::channel();
    let host = std::sync::Arc::new(Held {
        sent: Default::default(),
        gate: std::sync::Mutex::new(Some(gate)),
        locals: Default::default(),
    });
    let meta: Value = serde_json::from_str(META).unwrap();
    let params = json!({"_meta": meta, "notifications": {"toolsListChanged": true}});
    let mut listen = server.handle("subscriptions/listen", Some(params), host.clone());
    // The acknowledgment is on its way (its future not done yet)...
    assert!((&mut listen).now_or_never().is_none());
    assert_eq!(
        *host.sent.lock().unwrap(),
        ["notifications/subscriptions/acknowledged"]
    );
    // ...and a change now reaches the subscription, after the acknowledgment.
    assert_eq!(server.list_changed(ListKind::Tools), 1);
    open.send(()).unwrap();
    assert!((&mut listen).now_or_never().is_none(), "still listening");
    assert_eq!(
        *host.sent.lock().unwrap(),
        [
            "notifications/subscriptions/acknowledged",
            "notifications/tools/list_changed"
        ]
    );
    assert_eq!(server.end_subscriptions(), 1);
    let result = listen.now_or_never().expect("ended").unwrap();
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(9),
        "{result}"
    );
}

/// The fan-out hook (`Server::set_fanout`): each change the server announces is handed to
/// it once, after the local delivery, and only for what the server announces; a change
/// heard from another process (`Server::apply`) and a resync (`Server::resync`) are
/// delivered locally and never handed out again (no loop between processes).
#[test]
fn the_fanout_gets_what_is_announced_and_apply_and_resync_stay_local() {
    use sansrpc_mcp::server::{Change, Fanout, RESYNC_META};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Recorded(Mutex<Vec<Change>>);
    impl Fanout for Recorded {
        fn announce(&self, change: &Change) {
            self.0.lock().unwrap().push(change.clone());
        }
    }

    run(async {
        let server = server();
        let recorded = Arc::new(Recorded::default());
        assert!(server.set_fanout(Some(recorded.clone())).is_none());
        assert!(server.has_fanout());
        let handed = || recorded.0.lock().unwrap().clone();
        let (client, mut seen) = connect(&server).await;
        let _listen = client.call_raw(
            "subscriptions/listen",
            Some(&listen_params(
                json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]}),
            )),
        );
        let (method, _) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/subscriptions/acknowledged");
        until(|| server.open_subscriptions() == 1).await;

        // Announced: delivered here, then handed out; a kind the server does not announce
        // (prompts) is neither.
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(server.list_changed(ListKind::Prompts), 0);
        assert_eq!(server.resource_updated("test://b"), 0);
        assert_eq!(
            handed(),
            [
                Change::ListChanged(ListKind::Tools),
                Change::ResourceUpdated("test://b".into())
            ]
        );
        let (method, params) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/tools/list_changed");
        assert_eq!(params["_meta"].get(RESYNC_META), None);

        // Heard from elsewhere: delivered here only.
        assert_eq!(server.apply(&Change::ResourceUpdated("test://a".into())), 1);
        let (method, params) = seen.next().await.unwrap();
        assert_eq!(method, "notifications/resources/updated");
        assert_eq!(params["uri"], "test://a");
        // A resync: what the listen stream asked for, marked; nothing handed out.
        assert_eq!(server.resync(), 2);
        let mut resynced = Vec::new();
        for _ in 0..2 {
            let (method, params) = seen.next().await.unwrap();
            assert_eq!(params["_meta"][RESYNC_META], json!(true), "{params}");
            resynced.push((method, params["uri"].clone()));
        }
        resynced.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            resynced,
            [
                (
                    "notifications/resources/updated".to_owned(),
                    json!("test://a")
                ),
                ("notifications/tools/list_changed".to_owned(), Value::Null),
            ]
        );
        assert_eq!(handed().len(), 2, "apply and resync hand nothing out");

        assert!(server.set_fanout(None).is_some());
        assert!(!server.has_fanout());
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(handed().len(), 2);
    });
}
