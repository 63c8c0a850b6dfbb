//! `McpClient::listen` (2026-07-28): the typed client opens `subscriptions/listen` on a real
//! sansrpc-mcp `Server` over a loopback TCP connection (the futures driver on smol), as on
//! stdio where every subscription shares one channel. Each subscription gets the part of its
//! filter the server honours and then only its own notifications, in order (two side by
//! side; `on_notification` still sees them); a subscription dropped or cancelled, or a
//! `listen` dropped before its acknowledgement, is forgotten by the server; a reader that
//! falls behind is told how many it lost; `Server::end_subscriptions` ends `next()` with
//! `None`; a session (2025-11-25) refuses `listen` without sending anything.
//!
//! Nothing here waits on time: each step waits for the notification (or the server-side
//! count) it expects, bounded by `run`'s 20 s. Where a test shows that something did *not*
//! come, it sends a later notification on the same connection and checks that this one
//! comes next (one connection keeps its order).
#![cfg(not(target_arch = "wasm32"))]

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

mod support;
use support::run;

use futures::channel::mpsc;
use futures::task::AtomicWaker;
use futures::{FutureExt, StreamExt};
use sansrpc::connection::{Config, Profile};
use sansrpc::ext::interceptors::{Interceptor, Interceptors, Outgoing};
use sansrpc::ErrorObject;
use sansrpc_futures::{transport, AsyncIoTimer, Builder, Client};
use sansrpc_mcp::client::{
    ClientBuilder, ClientError, ListenNotification, McpClient, Subscription,
    MAX_QUEUED_NOTIFICATIONS,
};
use sansrpc_mcp::server::{Context, ListKind, McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{Resource, SubscriptionFilter};
use serde_json::{json, Value};

fn server() -> Server {
    let resource: Resource =
        serde_json::from_value(json!({"uri": "test://a", "name": "a"})).unwrap();
    ServerBuilder::new("client-listen-test", "1")
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Resources)
        .resource_subscriptions()
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .resource(resource, |_, _| async { Err(McpError::internal("unread")) })
        .build()
}

fn filter(value: Value) -> SubscriptionFilter {
    serde_json::from_value(value).unwrap()
}

/// Records the method of every call and notification the client sends.
struct Sent(Arc<Mutex<Vec<String>>>);

impl Interceptor for Sent {
    fn before(&self, call: &mut Outgoing<'_>) -> Result<(), ErrorObject<'static>> {
        self.0.lock().unwrap().push(call.method.to_owned());
        Ok(())
    }
}

/// The connection's client end, with every method it sends recorded.
async fn connect(
    server: &Server,
    mcp: &ClientBuilder,
) -> (
    Client,
    Arc<Mutex<Vec<String>>>,
    mpsc::UnboundedReceiver<(String, Value)>,
) {
    let (tx, seen) = mpsc::unbounded();
    let mcp = mcp.clone().on_notification(move |method, params| {
        let _ = tx.unbounded_send((method.to_owned(), params.clone()));
    });
    let client = support::loopback(server.router(), mcp.router()).await;
    let sent = Arc::new(Mutex::new(Vec::new()));
    let client = client.with_interceptors(Interceptors::new().with(Sent(Arc::clone(&sent))));
    (client, sent, seen)
}

/// A stateless client of `server`; every notification `on_notification` got.
async fn stateless(server: &Server) -> (McpClient, mpsc::UnboundedReceiver<(String, Value)>) {
    let mcp = ClientBuilder::new("client-listen-test", "1");
    let (client, _, seen) = connect(server, &mcp).await;
    // A clone of this builder made the router: its subscriptions reach this client.
    (mcp.discover(client).await.unwrap(), seen)
}

/// Waits (bounded by `run`'s limit) until `cond` holds: for the server's side, which has no
/// event to wait on.
async fn until(cond: impl Fn() -> bool) {
    while !cond() {
        async_io::Timer::after(Duration::from_millis(2)).await;
    }
}

/// Holds a driver (its future answers `Pending`) while told to.
#[derive(Default)]
struct Gate {
    held: AtomicBool,
    waker: AtomicWaker,
}

impl Gate {
    fn hold(&self, held: bool) {
        self.held.store(held, Ordering::SeqCst);
        self.waker.wake();
    }

    async fn run<F: Future>(self: Arc<Self>, f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        std::future::poll_fn(move |cx| {
            self.waker.register(cx.waker());
            if self.held.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
            f.as_mut().poll(cx)
        })
        .await
    }
}

/// A connection like `support::loopback`'s whose client driver can be held, and whose
/// server end stops when told.
struct Pair {
    client: Client,
    gate: Arc<Gate>,
    stop: mpsc::UnboundedSender<()>,
}

async fn pair(server: &Server, mcp: &ClientBuilder) -> Pair {
    let config = || Config::for_profile(Profile::Mcp);
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = server.router();
    let (stop, mut stopped) = mpsc::unbounded::<()>();
    smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let builder = Builder::new().config(config()).router(router);
        let (_, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
        // Told to stop: the driver is dropped, and the socket closed.
        futures::future::select(driver, stopped.next()).await;
    })
    .detach();
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let builder = Builder::new().config(config()).router(mcp.router());
    let (client, driver) = builder.connect(transport::tcp(stream), AsyncIoTimer);
    let gate = Arc::new(Gate::default());
    smol::spawn(Arc::clone(&gate).run(driver)).detach();
    Pair { client, gate, stop }
}

/// The next notification of `sub` (bounded by `run`'s limit).
async fn next(sub: &mut Subscription) -> ListenNotification {
    sub.next().await.expect("the subscription is open")
}

fn subscription_id(params: &Value) -> &Value {
    &params["_meta"]["io.modelcontextprotocol/subscriptionId"]
}

#[test]
fn each_subscription_gets_what_it_asked_for_and_nothing_else() {
    run(async {
        let server = server();
        let (client, mut seen) = stateless(&server).await;
        assert!(client.is_stateless());
        // Tools and prompts asked for; this server does not announce prompts (it has none, and did not declare that they change): only tools is honoured.
        let mut tools = client
            .listen(filter(
                json!({"toolsListChanged": true, "promptsListChanged": true}),
            ))
            .await
            .unwrap();
        assert_eq!(tools.filter(), &filter(json!({"toolsListChanged": true})));
        let mut resources = client
            .listen(filter(
                json!({"resourceSubscriptions": ["test://a"], "resourcesListChanged": true}),
            ))
            .await
            .unwrap();
        assert_eq!(
            resources.filter(),
            &filter(json!({"resourceSubscriptions": ["test://a"], "resourcesListChanged": true}))
        );
        assert_ne!(tools.id(), resources.id());
        until(|| server.open_subscriptions() == 2).await;

        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(next(&mut tools).await, ListenNotification::ToolsListChanged);
        assert_eq!(server.resource_updated("test://a"), 1);
        match next(&mut resources).await {
            ListenNotification::ResourceUpdated(updated) => {
                assert_eq!(updated.uri, "test://a");
                let tag = updated.meta.and_then(|m| m.subscription_id);
                assert_eq!(tag.as_ref(), Some(resources.id()));
            }
            other => panic!("{other:?}"),
        }

        // Not asked for: nobody has prompts, nobody has test://other. Then a change each
        // asked for: it is the next thing each gets (the others were never sent).
        assert_eq!(server.list_changed(ListKind::Prompts), 0);
        assert_eq!(server.resource_updated("test://other"), 0);
        // The tools change goes to `tools` only, the resource-list change to `resources`.
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(server.list_changed(ListKind::Resources), 1);
        assert_eq!(
            next(&mut resources).await,
            ListenNotification::ResourcesListChanged
        );
        assert_eq!(next(&mut tools).await, ListenNotification::ToolsListChanged);
        // Both came after everything else above: nothing more is held for either.
        assert_eq!(tools.next().now_or_never(), None, "tools holds no more");
        assert_eq!(
            resources.next().now_or_never(),
            None,
            "resources holds no more"
        );
        assert!(!tools.is_ended() && tools.lagged() == 0);

        // `on_notification` saw the same four, tagged, in order, and not the
        // acknowledgements.
        let mut methods = Vec::new();
        for _ in 0..4 {
            let (method, params) = seen.next().await.unwrap();
            let expected = if method.starts_with("notifications/tools/") {
                tools.id()
            } else {
                resources.id()
            };
            assert_eq!(
                subscription_id(&params),
                &serde_json::to_value(expected).unwrap(),
                "{method}"
            );
            methods.push(method);
        }
        assert_eq!(
            methods,
            [
                "notifications/tools/list_changed",
                "notifications/resources/updated",
                "notifications/tools/list_changed",
                "notifications/resources/list_changed",
            ]
        );
        assert!(
            seen.try_recv().is_err(),
            "nothing else reached on_notification"
        );
    });
}

#[test]
fn a_dropped_or_cancelled_subscription_is_forgotten_by_the_server() {
    run(async {
        let server = server();
        let (client, _seen) = stateless(&server).await;
        let tools = client
            .listen(filter(json!({"toolsListChanged": true})))
            .await
            .unwrap();
        let mut resources = client
            .listen(filter(json!({"resourcesListChanged": true})))
            .await
            .unwrap();
        // The future and the subscription go to other tasks (and threads).
        fn send<T: Send>(t: T) -> T {
            t
        }
        let mut again = send(
            send(client.listen(filter(json!({"toolsListChanged": true}))))
                .await
                .unwrap(),
        );
        until(|| server.open_subscriptions() == 3).await;
        drop(tools);
        until(|| server.open_subscriptions() == 2).await;
        // Only the other tools subscription is left to reach.
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(next(&mut again).await, ListenNotification::ToolsListChanged);
        again.cancel();
        until(|| server.open_subscriptions() == 1).await;
        assert_eq!(server.list_changed(ListKind::Tools), 0);
        // The one left still works.
        assert_eq!(server.list_changed(ListKind::Resources), 1);
        assert_eq!(
            next(&mut resources).await,
            ListenNotification::ResourcesListChanged
        );
    });
}

#[test]
fn a_listen_dropped_before_its_acknowledgement_is_cancelled_and_the_next_gets_its_own() {
    run(async {
        let server = server();
        let mcp = ClientBuilder::new("client-listen-test", "1");
        let pair = pair(&server, &mcp).await;
        let sent = Arc::new(Mutex::new(Vec::new()));
        let conn =
            (pair.client).with_interceptors(Interceptors::new().with(Sent(Arc::clone(&sent))));
        let client = mcp.discover(conn).await.unwrap();
        let listens = || {
            let sent = sent.lock().unwrap();
            sent.iter().filter(|m| *m == "subscriptions/listen").count()
        };
        // Polled once while the client's driver is held: the request is queued, its
        // acknowledgement cannot be in. Dropped.
        pair.gate.hold(true);
        let abandoned = client.listen(filter(json!({"resourcesListChanged": true})));
        assert!(abandoned.now_or_never().is_none(), "acknowledged at once?");
        assert_eq!(listens(), 1);
        // The next listen waits for the abandoned one's acknowledgement before it sends
        // (so it gets its own: the filter it asked for, not the abandoned one's).
        let mut second = Box::pin(client.listen(filter(json!({"toolsListChanged": true}))));
        assert!((&mut second).now_or_never().is_none());
        assert_eq!(
            listens(),
            1,
            "the second listen was sent before the first was settled"
        );
        pair.gate.hold(false);
        let mut tools = second.await.unwrap();
        assert_eq!(listens(), 2);
        assert_eq!(tools.filter(), &filter(json!({"toolsListChanged": true})));
        // The abandoned request was cancelled: the server holds only `tools`.
        until(|| server.open_subscriptions() == 1 && server.list_changed(ListKind::Resources) == 0)
            .await;
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(next(&mut tools).await, ListenNotification::ToolsListChanged);
    });
}

#[test]
fn a_reader_that_falls_behind_loses_the_oldest_and_is_told_how_many() {
    run(async {
        let server = server();
        let (client, _seen) = stateless(&server).await;
        let mut tools = client
            .listen(filter(json!({"toolsListChanged": true})))
            .await
            .unwrap();
        let mut resources = client
            .listen(filter(json!({"resourceSubscriptions": ["test://a"]})))
            .await
            .unwrap();
        until(|| server.open_subscriptions() == 2).await;
        let extra = 5;
        for _ in 0..MAX_QUEUED_NOTIFICATIONS + extra {
            assert_eq!(server.list_changed(ListKind::Tools), 1);
        }
        // Sent after all of them: once it is in, so are they.
        assert_eq!(server.resource_updated("test://a"), 1);
        assert!(matches!(
            next(&mut resources).await,
            ListenNotification::ResourceUpdated(_)
        ));
        assert_eq!(
            next(&mut tools).await,
            ListenNotification::Lagged(extra as u64)
        );
        assert_eq!(tools.lagged(), extra as u64);
        for n in 0..MAX_QUEUED_NOTIFICATIONS {
            let got = tools.next().now_or_never().flatten();
            assert_eq!(got, Some(ListenNotification::ToolsListChanged), "{n}");
        }
        assert_eq!(tools.next().now_or_never(), None, "no more than the bound");
    });
}

#[test]
fn ending_the_subscriptions_ends_next_with_none_after_what_was_sent() {
    run(async {
        let server = server();
        let (client, _seen) = stateless(&server).await;
        let mut tools = client
            .listen(filter(json!({"toolsListChanged": true})))
            .await
            .unwrap();
        until(|| server.open_subscriptions() == 1).await;
        assert_eq!(server.list_changed(ListKind::Tools), 1);
        assert_eq!(server.end_subscriptions(), 1);
        // What came before the answer first, then the end.
        assert_eq!(next(&mut tools).await, ListenNotification::ToolsListChanged);
        assert_eq!(tools.next().await, None);
        assert!(tools.is_ended());
        assert!(tools.error().is_none(), "{:?}", tools.error());
        assert_eq!(tools.next().await, None, "and stays ended");
        until(|| server.open_subscriptions() == 0).await;
    });
}

#[test]
fn the_subscription_ends_when_the_connection_does() {
    run(async {
        let server = server();
        let mcp = ClientBuilder::new("client-listen-test", "1");
        let pair = pair(&server, &mcp).await;
        let client = mcp.discover(pair.client.clone()).await.unwrap();
        let mut tools = client
            .listen(filter(json!({"toolsListChanged": true})))
            .await
            .unwrap();
        pair.stop.unbounded_send(()).unwrap();
        assert_eq!(tools.next().await, None);
        assert!(
            matches!(tools.error(), Some(ClientError::Call(e)) if e.is_closed()),
            "{:?}",
            tools.error()
        );
    });
}

#[test]
fn a_session_refuses_listen_and_sends_nothing() {
    run(async {
        let server = server();
        let mcp = ClientBuilder::new("client-listen-test", "1");
        let (client, sent, _seen) = connect(&server, &mcp).await;
        let session = mcp.initialize(client).await.unwrap();
        assert!(!session.is_stateless());
        let before = sent.lock().unwrap().clone();
        assert_eq!(before, ["initialize", "notifications/initialized"]);
        match session
            .listen(filter(json!({"toolsListChanged": true})))
            .await
        {
            Err(e @ ClientError::StatelessOnly("subscriptions/listen")) => {
                assert!(e.to_string().contains("stateless"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(*sent.lock().unwrap(), before, "nothing was sent");
        // The session still works, and the server opened nothing.
        assert_eq!(session.all_tools().await.unwrap().len(), 1);
        assert_eq!(server.open_subscriptions(), 0);
    });
}
