//! MCP change fan-out over a real nats-server: two `Server`s of one MCP server ("A" and
//! "B"), each served on its own 127.0.0.1 port by `sansrpc_mcp::tokio::serve` with its own
//! NATS connection (`McpFanout`), and real clients over Streamable HTTP: a
//! `subscriptions/listen` stream (2026-07-28) and 2025-11-25 sessions on A, through the
//! typed sansrpc MCP client. Every wait is bounded (30 s): a deadline for a hang, not a
//! timing target.
//!
//! The `mcp` feature is on in every test build of this crate (its dev-dependency on itself).
#![cfg(feature = "mcp")]

mod common;

use std::time::{Duration, Instant};

use common::NatsServer;
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ListenNotification, McpClient, Subscription};
use sansrpc_mcp::server::{Context, ListKind, McpError, Server, ServerBuilder, RESYNC_META};
use sansrpc_mcp::streamable;
use sansrpc_mcp::types::{GetPromptResult, Prompt, Resource, SubscriptionFilter};
use sansrpc_store_nats::McpFanout;
use sansrpc_tokio::{Builder, Spawned};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(30);

/// One process's server: tools, prompts and two resources, announcing changes of the tool
/// and prompt lists, and letting clients subscribe to resources.
fn server() -> Server {
    ServerBuilder::new("fanout-test", "1")
        .list_changed(ListKind::Tools)
        .list_changed(ListKind::Prompts)
        .resource_subscriptions()
        .tool("noop", "Does nothing", |_: Context, ()| async {
            Ok::<_, McpError>(String::new())
        })
        .prompt(Prompt::new("p"), |_, _| async {
            Ok(GetPromptResult::new(Vec::new()))
        })
        .resource(Resource::new("test://a", "a"), |_, _| async {
            Err(McpError::internal("unread"))
        })
        .resource(Resource::new("test://b.c", "b"), |_, _| async {
            Err(McpError::internal("unread"))
        })
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A process: its server, the URL it is served at, and its fan-out (`None`: off).
struct Process {
    server: Server,
    url: String,
    fanout: Option<McpFanout>,
}

fn process(rt: &tokio::runtime::Runtime, nats: Option<&str>) -> Process {
    let server = server();
    let fanout = nats.map(|url| McpFanout::connect(url, &server).unwrap());
    let url = rt.block_on(serve(&server));
    Process {
        server,
        url,
        fanout,
    }
}

impl Process {
    fn fanout(&self) -> &McpFanout {
        self.fanout.as_ref().unwrap()
    }
}

/// Serves `server` on a free loopback port; its URL.
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

/// Polls `cond` until it holds; fails the test past [`WAIT`].
fn until(what: &str, cond: impl Fn() -> bool) {
    common::wait_until(WAIT, what, cond)
}

/// A `subscriptions/listen` stream (2026-07-28) on the server at `url`.
struct Listener {
    subscription: Subscription,
    _client: McpClient,
    _conn: Spawned,
}

async fn listen(url: &str, filter: Value) -> Listener {
    let mcp = ClientBuilder::new("fanout-listener", "1");
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let conn = sansrpc_mcp::tokio::connect(url, builder).unwrap();
    let client = mcp.discover(conn.client.clone()).await.unwrap();
    assert!(client.is_stateless());
    let filter: SubscriptionFilter = serde_json::from_value(filter).unwrap();
    let subscription = client.listen(filter.clone()).await.unwrap();
    assert_eq!(
        subscription.filter(),
        &filter,
        "the whole filter is honoured"
    );
    Listener {
        subscription,
        _client: client,
        _conn: conn,
    }
}

impl Listener {
    async fn next(&mut self) -> ListenNotification {
        tokio::time::timeout(WAIT, self.subscription.next())
            .await
            .expect("a notification within 30 s")
            .expect("the subscription is open")
    }
}

/// A 2025-11-25 session on the server at `url`, with every notification it gets (on its
/// GET stream) as (method, params).
struct Session {
    client: McpClient,
    notes: mpsc::UnboundedReceiver<(String, Value)>,
    _conn: Spawned,
}

async fn session(url: &str) -> Session {
    let (tx, notes) = mpsc::unbounded_channel();
    let mcp = ClientBuilder::new("fanout-session", "1").on_notification(move |method, params| {
        let _ = tx.send((method.to_owned(), params.clone()));
    });
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let conn = sansrpc_mcp::tokio::connect(url, builder).unwrap();
    let client = mcp.initialize(conn.client.clone()).await.unwrap();
    assert_eq!(client.protocol_version(), "2025-11-25");
    Session {
        client,
        notes,
        _conn: conn,
    }
}

impl Session {
    async fn next(&mut self) -> (String, Value) {
        tokio::time::timeout(WAIT, self.notes.recv())
            .await
            .expect("a notification within 30 s")
            .expect("the session is open")
    }
}

fn updated(uri: &str) -> ListenNotification {
    ListenNotification::ResourceUpdated(serde_json::from_value(json!({ "uri": uri })).unwrap())
}

/// The notification with the subscription id taken out of its `_meta` (and `_meta` with
/// it when nothing else is left), to compare with [`updated`].
fn untagged(notification: ListenNotification) -> ListenNotification {
    match notification {
        ListenNotification::ResourceUpdated(mut params) => {
            if let Some(meta) = &mut params.meta {
                meta.subscription_id = None;
                if meta.extra.is_empty() {
                    params.meta = None;
                }
            }
            ListenNotification::ResourceUpdated(params)
        }
        other => other,
    }
}

fn is_resync(params: &Value) -> bool {
    params["_meta"][RESYNC_META] == json!(true)
}

/// What A's listener and sessions get when B announces a tool-list change and an update
/// of `test://a`, then A itself a prompt-list change (the marker: it is delivered in A's
/// process, after B's changes once A has applied them). With fan-out, A waits until it
/// applied B's two changes before it announces the marker; without, there is nothing to
/// wait for.
fn b_announces_and_a_marks(fanout: bool) -> (Vec<ListenNotification>, Vec<Vec<(String, Value)>>) {
    let nats = NatsServer::start();
    let rt = runtime();
    let url = fanout.then_some(nats.url.as_str());
    let (a, b) = (process(&rt, url), process(&rt, url));
    let (mut listener, mut subscribed, mut other) = rt.block_on(async {
        let listener = listen(
            &a.url,
            json!({
                "toolsListChanged": true,
                "promptsListChanged": true,
                "resourceSubscriptions": ["test://a"],
            }),
        )
        .await;
        let subscribed = session(&a.url).await;
        subscribed.client.subscribe("test://a").await.unwrap();
        let other = session(&a.url).await;
        (listener, subscribed, other)
    });
    until("A's listen stream is open", || {
        a.server.open_subscriptions() == 1
    });

    // B's own clients: none. Each announcement reaches no one in B.
    assert_eq!(b.server.list_changed(ListKind::Tools), 0);
    assert_eq!(b.server.resource_updated("test://a"), 0);
    if fanout {
        until("A applied B's two changes", || a.fanout().received() == 2);
    }
    // The marker, in A: the listener and both sessions.
    assert_eq!(a.server.list_changed(ListKind::Prompts), 3);

    rt.block_on(async {
        let mut heard = Vec::new();
        loop {
            let next = untagged(listener.next().await);
            let done = next == ListenNotification::PromptsListChanged;
            heard.push(next);
            if done {
                break;
            }
        }
        let mut sessions = Vec::new();
        for session in [&mut subscribed, &mut other] {
            let mut notes = Vec::new();
            loop {
                let (method, params) = session.next().await;
                let done = method == "notifications/prompts/list_changed";
                notes.push((method, params));
                if done {
                    break;
                }
            }
            sessions.push(notes);
        }
        (heard, sessions)
    })
}

/// The first test: a listener on A hears a tools list change announced on B; a
/// 2025-11-25 session on A subscribed to a resource gets `notifications/resources/updated`
/// when B announces that URI, a session not subscribed does not.
#[test]
fn a_change_announced_on_one_process_reaches_the_listeners_of_another() {
    let (heard, sessions) = b_announces_and_a_marks(true);
    assert_eq!(
        heard,
        [
            ListenNotification::ToolsListChanged,
            updated("test://a"),
            ListenNotification::PromptsListChanged
        ]
    );
    let methods = |notes: &[(String, Value)]| -> Vec<String> {
        notes.iter().map(|(m, _)| m.clone()).collect()
    };
    assert_eq!(
        methods(&sessions[0]),
        [
            "notifications/tools/list_changed",
            "notifications/resources/updated",
            "notifications/prompts/list_changed"
        ]
    );
    assert_eq!(sessions[0][1].1, json!({"uri": "test://a"}));
    assert_eq!(
        methods(&sessions[1]),
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed"
        ],
        "the session not subscribed to test://a does not get its update"
    );
    for (_, params) in sessions.iter().flatten() {
        assert!(!is_resync(params), "{params}");
    }
}

/// The same, fan-out off (no `McpFanout` in either process): A's listener and sessions miss
/// B's changes, they get only the marker. (This is what makes the test above fail when
/// fan-out does not work.)
#[test]
fn without_fanout_the_listeners_of_a_miss_what_b_announces() {
    let (heard, sessions) = b_announces_and_a_marks(false);
    assert_eq!(heard, [ListenNotification::PromptsListChanged]);
    for notes in sessions {
        let methods: Vec<&str> = notes.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(methods, ["notifications/prompts/list_changed"]);
    }
}

/// No loop, no duplicate: a change A announces reaches A's own listener exactly once (not
/// again through NATS), and B applies it once without handing it on.
#[test]
fn a_change_reaches_its_own_process_listener_exactly_once() {
    let nats = NatsServer::start();
    let rt = runtime();
    let (a, b) = (process(&rt, Some(&nats.url)), process(&rt, Some(&nats.url)));
    let mut listener = rt.block_on(listen(
        &a.url,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://b.c"]}),
    ));
    until("A's listen stream is open", || {
        a.server.open_subscriptions() == 1
    });

    assert_eq!(a.server.list_changed(ListKind::Tools), 1);
    // NATS has passed A's publish on (to B; an echo would now be on its way to A too).
    a.fanout().flush().unwrap();
    until("B applied A's change", || b.fanout().received() == 1);
    // B's marker goes after anything B would have handed on again, and reaches A after
    // any echo of A's own publish.
    assert_eq!(b.server.resource_updated("test://b.c"), 0);
    rt.block_on(async {
        assert_eq!(listener.next().await, ListenNotification::ToolsListChanged);
        assert_eq!(untagged(listener.next().await), updated("test://b.c"));
    });
    // Counted once applied: the listener can hear the marker before A's count moves. Any
    // echo of A's own change would have been applied (and counted) before the marker.
    until("A counted B's marker", || a.fanout().received() >= 1);
    assert_eq!(a.fanout().received(), 1, "A applied only B's marker");
    assert_eq!(b.fanout().received(), 1, "B did not hear its own marker");
    for p in [&a, &b] {
        assert_eq!((p.fanout().dropped(), p.fanout().resyncs()), (0, 0));
    }

    // Dropping the fan-out removes it from the server.
    assert!(a.server.has_fanout());
    drop(a.fanout);
    assert!(!a.server.has_fanout());
}

/// NATS killed and started again on the same port while A's listen stream and session
/// stay open. During the outage a change announced on B is not handed to NATS (counted as
/// dropped) and never arrives as such; a change announced on A still reaches A's own
/// listeners. After the restart, A's listeners get a resync (marked with `RESYNC_META`)
/// covering what they may have missed, and a change on B reaches them again.
#[test]
fn nats_restarted_while_listeners_stay_open() {
    let mut nats = NatsServer::start();
    let rt = runtime();
    let (a, b) = (process(&rt, Some(&nats.url)), process(&rt, Some(&nats.url)));
    let (mut listener, mut session) = rt.block_on(async {
        let listener = listen(
            &a.url,
            json!({
                "toolsListChanged": true,
                "promptsListChanged": true,
                "resourceSubscriptions": ["test://a"],
            }),
        )
        .await;
        let session = session(&a.url).await;
        session.client.subscribe("test://a").await.unwrap();
        (listener, session)
    });
    until("A's listen stream is open", || {
        a.server.open_subscriptions() == 1
    });

    // Before: B's change reaches A.
    b.server.resource_updated("test://a");
    rt.block_on(async {
        assert_eq!(untagged(listener.next().await), updated("test://a"));
        let (method, params) = session.next().await;
        assert_eq!(method, "notifications/resources/updated");
        assert!(!is_resync(&params));
    });

    nats.kill();
    until("both processes saw NATS go", || {
        !a.fanout().is_connected() && !b.fanout().is_connected()
    });
    // During the outage: B's changes are not handed to NATS.
    b.server.list_changed(ListKind::Tools);
    b.server.resource_updated("test://a");
    assert_eq!(b.fanout().dropped(), 2);
    // A's own change still reaches A's listeners (and is dropped for the others).
    assert_eq!(a.server.list_changed(ListKind::Prompts), 2);
    assert_eq!(a.fanout().dropped(), 1);
    rt.block_on(async {
        assert_eq!(
            listener.next().await,
            ListenNotification::PromptsListChanged
        );
        let (method, _) = session.next().await;
        assert_eq!(method, "notifications/prompts/list_changed");
    });

    let started = Instant::now();
    nats.restart();
    until("A reconnected and resynced", || a.fanout().resyncs() >= 1);
    until("B reconnected", || b.fanout().is_connected());
    println!(
        "reconnected and resynced {:?} after the restart",
        started.elapsed()
    );
    // After: B's change reaches A again.
    b.server.resource_updated("test://a");

    rt.block_on(async {
        // The listen stream: resync notifications (at least one round: every list it
        // listens to, its resource marked), then B's new update, unmarked. The two
        // changes B dropped never arrive as such.
        let mut lists = 0;
        let mut resyncs = 0;
        loop {
            match listener.next().await {
                ListenNotification::ToolsListChanged | ListenNotification::PromptsListChanged => {
                    lists += 1
                }
                ListenNotification::ResourceUpdated(params) => {
                    assert_eq!(params.uri, "test://a");
                    let meta = params.meta.unwrap_or_default();
                    if meta.extra.get(RESYNC_META) == Some(&json!(true)) {
                        resyncs += 1;
                    } else {
                        break;
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(resyncs >= 1 && lists >= 2 * resyncs, "{resyncs} {lists}");
        // The session: the same, on its GET stream.
        let mut seen = Vec::new();
        loop {
            let (method, params) = session.next().await;
            let resync = is_resync(&params);
            let done = method == "notifications/resources/updated" && !resync;
            seen.push((method, resync));
            if done {
                break;
            }
        }
        let (last, resynced) = seen.split_last().unwrap();
        assert!(resynced.iter().all(|(_, resync)| *resync), "{seen:?}");
        for method in [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/updated",
        ] {
            assert!(resynced.iter().any(|(m, _)| m == method), "{seen:?}");
        }
        assert_eq!(last.0, "notifications/resources/updated");
    });
    assert_eq!(b.fanout().dropped(), 2);
}
