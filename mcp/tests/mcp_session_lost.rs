//! The typed MCP client (`sansrpc_mcp::client::McpClient` on
//! `sansrpc_mcp::tokio::connect`) when the server loses what it had: its session
//! (HTTP 404, 2025-11-25) or the call in flight (the connection cut, the process killed).
//! The rules are `sansrpc_mcp::client::retry`'s.
//!
//! The servers are sansrpc-mcp servers on loopback. Where a process is killed, it is a
//! child process: this test binary started again on the one test, which then serves on a
//! listening socket the test holds and hands down (a restarted server accepts the very
//! connections that queued while none ran, as under socket activation), so that what the
//! client sends after the kill reaches the next process, however fast it comes: nothing
//! waits on a timer. Each tool run appends `TOOL TAG` to a file, where TAG names the
//! server that ran it: what ran, and where, is read there.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/common.rs"]
mod common;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{wait_until, within, LIMIT};
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ClientError, McpClient};
use sansrpc_mcp::server::{McpError, Server, ServerBuilder};
use sansrpc_mcp::types::{CallToolResult, ContentBlock, Resource, Tool, ToolAnnotations};
use sansrpc_tokio::{Builder, Spawned};
use serde_json::json;
use support::Running;

/// Set in a child process: the listening socket it serves on (a file descriptor).
const SERVE_FD: &str = "SANSRPC_TEST_SERVE_FD";

/// A server whose tools `once` (no annotations: not idempotent) and `again`
/// (`idempotentHint: true`) append `TOOL TAG` to `runs`, then answer `ran on TAG`, or with
/// `hold`, never answer. One resource, `test://a`, to subscribe to.
fn server(runs: &Path, tag: &str, hold: bool) -> Server {
    let tool = |name: &'static str| {
        let (runs, tag) = (runs.to_owned(), tag.to_owned());
        move |_, _| {
            let (runs, tag) = (runs.clone(), tag.clone());
            async move {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&runs)
                    .unwrap();
                file.write_all(format!("{name} {tag}\n").as_bytes())
                    .unwrap();
                drop(file);
                if hold {
                    std::future::pending::<()>().await;
                }
                Ok::<_, McpError>(CallToolResult::text(format!("ran on {tag}")))
            }
        }
    };
    let mut again = Tool::new("again", "Runs; idempotent", Tool::empty_input_schema());
    again.annotations = Some(ToolAnnotations {
        idempotent_hint: Some(true),
        ..Default::default()
    });
    let resource: Resource =
        serde_json::from_value(json!({"uri": "test://a", "name": "a"})).unwrap();
    ServerBuilder::new("session-lost-test", "1")
        .resource_subscriptions()
        .resource(resource, |_, _| async { Err(McpError::internal("unread")) })
        .tool_with(
            Tool::new("once", "Runs", Tool::empty_input_schema()),
            tool("once"),
        )
        .tool_with(again, tool("again"))
        .build()
}

/// Serves `server` on `listener` until `stop` completes.
async fn serve(
    listener: tokio::net::TcpListener,
    server: &Server,
    stop: impl std::future::Future<Output = ()>,
) {
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    sansrpc_mcp::tokio::serve(listener, builder, server.streamable_config(), stop)
        .await
        .unwrap();
}

/// In a child process this binary started ([`Port::start`]): serves on the socket handed
/// down until killed, and never returns. Returns at once anywhere else.
async fn serve_if_child() {
    let Ok(fd) = std::env::var(SERVE_FD) else {
        return;
    };
    // SAFETY: the parent handed this descriptor down for this alone (see `Port::start`).
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd.parse().unwrap()) };
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let runs = PathBuf::from(std::env::var("RUNS").unwrap());
    let tag = std::env::var("TAG").unwrap();
    let server = server(&runs, &tag, std::env::var("HOLD").is_ok());
    serve(listener, &server, std::future::pending()).await;
    unreachable!("served until killed");
}

/// A listening socket on loopback that the test holds for as long as it runs, whoever
/// serves on it: connections made while no server runs wait in its queue for the next.
struct Port {
    listener: std::net::TcpListener,
    url: String,
    runs: PathBuf,
}

impl Port {
    fn new(test: &str) -> Port {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let runs = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("mcp-session-lost-{test}-{}", std::process::id()));
        let _ = std::fs::remove_file(&runs);
        Port {
            listener,
            url,
            runs,
        }
    }

    /// Starts this test binary again on the test `test` alone, as a server tagged `tag` on
    /// this socket (its tools never answer with `hold`).
    fn start(&self, test: &str, tag: &str, hold: bool) -> Running {
        // Handed down to the child: not closed on exec.
        socket2::SockRef::from(&self.listener)
            .set_cloexec(false)
            .unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args([test, "--exact", "--nocapture"])
            .env(SERVE_FD, self.listener.as_raw_fd().to_string())
            .env("RUNS", &self.runs)
            .env("TAG", tag)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if hold {
            child.env("HOLD", "1");
        }
        Running(child.spawn().unwrap())
    }

    /// Every `TOOL TAG` run so far, in order.
    fn runs(&self) -> Vec<String> {
        runs(&self.runs)
    }

    /// Waits until `run` (`TOOL TAG`) is in the runs.
    async fn ran(&self, run: &str) {
        let (runs, run) = (self.runs.clone(), run.to_owned());
        tokio::task::spawn_blocking(move || {
            wait_until(LIMIT, &format!("{run} runs"), || {
                crate::runs(&runs).contains(&run)
            })
        })
        .await
        .unwrap();
    }
}

fn runs(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A typed client on a new connection to `url`: initialized (2025-11-25), or on the
/// stateless revision (2026-07-28); its tools listed (so it knows which are idempotent).
async fn client(url: &str, mcp: ClientBuilder, stateless: bool) -> (Spawned, McpClient) {
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let conn = sansrpc_mcp::tokio::connect(url, builder).unwrap();
    let client = if stateless {
        mcp.discover(&conn).await.unwrap()
    } else {
        mcp.initialize(&conn).await.unwrap()
    };
    let revision = if stateless {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    assert_eq!(client.protocol_version(), revision);
    let tools = client.all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    (conn, client)
}

fn text(result: &CallToolResult) -> &str {
    match result.content.as_slice() {
        [ContentBlock::Text(t)] => &t.text,
        other => panic!("{other:?}"),
    }
}

fn session(conn: &Spawned) -> String {
    sansrpc_mcp::tokio::session_id(&conn.client).expect("a session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_the_server_restarted_runs_on_a_new_session() {
    within(LIMIT, async {
        let port = Port::new("restarted");
        let first = server(&port.runs, "first", false);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = tokio::net::TcpListener::from_std({
            let l = port.listener.try_clone().unwrap();
            l.set_nonblocking(true).unwrap();
            l
        })
        .unwrap();
        let serving = tokio::spawn(async move {
            serve(listener, &first, async {
                let _ = stopped.await;
            })
            .await
        });

        let renewed = Arc::new(AtomicUsize::new(0));
        let (updated, mut updates) = tokio::sync::mpsc::unbounded_channel();
        let mcp = ClientBuilder::new("session-lost-test", "1")
            .on_session_renewed({
                let renewed = renewed.clone();
                move |init| {
                    assert_eq!(init.server_info.name, "session-lost-test");
                    renewed.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on_notification(move |method, params| {
                if method == "notifications/resources/updated" {
                    let _ = updated.send(params["uri"].as_str().unwrap_or("").to_owned());
                }
            });
        let (conn, client) = client(&port.url, mcp, false).await;
        client.subscribe("test://a").await.unwrap();
        assert_eq!(
            text(&client.call_tool("once", ()).await.unwrap()),
            "ran on first"
        );
        let old = session(&conn);

        // The server stops; another starts on the same port, knowing no session.
        stop.send(()).unwrap();
        serving.await.unwrap();
        let second = server(&port.runs, "second", false);
        let listener = tokio::net::TcpListener::from_std({
            let l = port.listener.try_clone().unwrap();
            l.set_nonblocking(true).unwrap();
            l
        })
        .unwrap();
        let served = second.clone();
        tokio::spawn(async move { serve(listener, &served, std::future::pending()).await });

        // The next call meets 404, and runs on a new session, once. It is the idempotent
        // tool: the client's idle keep-alive connections to the stopped server may not be
        // seen closed yet, and a POST on one is cut, not answered 404 (about one run in
        // eight with `once`, which then fails with `OutcomeUnknown`); the cut is retried for
        // this tool, and the resend meets the 404. The 404 alone is retried for any call:
        // `once` below, and after the renewal in the tests that kill a process.
        assert_eq!(
            text(&client.call_tool("again", ()).await.unwrap()),
            "ran on second"
        );
        assert_ne!(session(&conn), old);
        assert_eq!(client.session_renewals(), 1);
        assert_eq!(renewed.load(Ordering::SeqCst), 1);
        assert_eq!(port.runs(), ["once first", "again second"]);
        // The subscription was made again, and its notification comes on the new session's
        // GET stream.
        assert_eq!(second.resource_updated("test://a"), 1);
        assert_eq!(updates.recv().await.unwrap(), "test://a");
        // And the calls go on there.
        assert_eq!(
            text(&client.call_tool("once", ()).await.unwrap()),
            "ran on second"
        );
        assert_eq!(client.session_renewals(), 1);
        assert_eq!(port.runs(), ["once first", "again second", "once second"]);
        client.close().await;
    })
    .await
}

/// A call of `tool` in flight on a child server when it is killed; the next child started
/// on the same port. What the call gave, and the client.
async fn killed_mid_call(
    test: &str,
    tool: &'static str,
    stateless: bool,
) -> (
    Port,
    Result<CallToolResult, ClientError>,
    McpClient,
    Spawned,
    Running,
) {
    let port = Port::new(test);
    let first = port.start(test, "first", true);
    let mcp = ClientBuilder::new("session-lost-test", "1");
    let (conn, client) = client(&port.url, mcp, stateless).await;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool(tool, ()).await }
    });
    port.ran(&format!("{tool} first")).await;
    drop(first); // SIGKILL, and reaped.
    let second = port.start(test, "second", false);
    let result = call.await.unwrap();
    (port, result, client, conn, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_by_a_killed_server_is_not_sent_again() {
    serve_if_child().await;
    within(LIMIT, async {
        let test = "a_call_cut_by_a_killed_server_is_not_sent_again";
        let (port, result, client, _conn, _second) = killed_mid_call(test, "once", false).await;
        match result {
            Err(ClientError::OutcomeUnknown("tools/call")) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(port.runs(), ["once first"], "not sent again");
        // The client goes on, on a new session with the new process.
        assert_eq!(
            text(&client.call_tool("once", ()).await.unwrap()),
            "ran on second"
        );
        assert_eq!(client.session_renewals(), 1);
        assert_eq!(port.runs(), ["once first", "once second"]);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_call_cut_by_a_killed_server_is_sent_again_once() {
    serve_if_child().await;
    within(LIMIT, async {
        let test = "an_idempotent_call_cut_by_a_killed_server_is_sent_again_once";
        let (port, result, client, conn, _second) = killed_mid_call(test, "again", false).await;
        // Sent again; the new process knew no session (404): a new one, then the call.
        assert_eq!(text(&result.unwrap()), "ran on second");
        assert_eq!(client.session_renewals(), 1);
        assert_eq!(port.runs(), ["again first", "again second"]);
        assert!(sansrpc_mcp::tokio::session_id(&conn.client).is_some());
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_stateless_revision_only_the_idempotent_call_is_sent_again() {
    serve_if_child().await;
    within(LIMIT, async {
        let test = "on_the_stateless_revision_only_the_idempotent_call_is_sent_again";
        let (port, result, client, conn, _second) = killed_mid_call(test, "again", true).await;
        assert_eq!(text(&result.unwrap()), "ran on second");
        assert_eq!(port.runs(), ["again first", "again second"]);
        // No session to lose, none started.
        assert_eq!(client.session_renewals(), 0);
        assert_eq!(sansrpc_mcp::tokio::session_id(&conn.client), None);
    })
    .await;
    within(LIMIT, async {
        let test = "on_the_stateless_revision_only_the_idempotent_call_is_sent_again";
        let (port, result, client, _conn, _second) = killed_mid_call(test, "once", true).await;
        match result {
            Err(ClientError::OutcomeUnknown("tools/call")) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            text(&client.call_tool("once", ()).await.unwrap()),
            "ran on second"
        );
        assert_eq!(port.runs(), ["once first", "once second"]);
    })
    .await
}

/// Two servers behind one port, routed by a rule that loses every session: a request with no
/// session id (an `initialize`) goes to the first, every other to the second, which knows
/// none of them (a balancer without session affinity). The client starts one new session
/// for the call, meets 404 again, and fails the call with `SessionLost`: no loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_404_right_after_a_new_session_fails_the_call() {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::service::TowerToHyperService;
    use sansrpc_mcp::tokio::McpService;
    use tower::ServiceExt;

    within(LIMIT, async {
        let port = Port::new("second-404");
        let service = |server: &Server| {
            let builder = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(server.router());
            McpService::new(builder, server.streamable_config())
        };
        let (first, second) = (
            server(&port.runs, "first", false),
            server(&port.runs, "second", false),
        );
        let (first, second) = (service(&first), service(&second));
        let initializes = Arc::new(AtomicUsize::new(0));
        let routed = {
            let initializes = initializes.clone();
            tower::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let to = if request.headers().contains_key("mcp-session-id") {
                    second.clone()
                } else {
                    initializes.fetch_add(1, Ordering::SeqCst);
                    first.clone()
                };
                to.oneshot(request)
            })
        };
        let listener = port.listener.try_clone().unwrap();
        listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let service = TowerToHyperService::new(routed.clone());
                tokio::spawn(async move {
                    let server = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = server.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });

        let mcp = ClientBuilder::new("session-lost-test", "1");
        let builder = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(mcp.router());
        let conn = sansrpc_mcp::tokio::connect(&port.url, builder).unwrap();
        let client = mcp.initialize(&conn).await.unwrap();
        assert_eq!(initializes.load(Ordering::SeqCst), 1);
        match client.call_tool("once", ()).await {
            Err(ClientError::SessionLost {
                method: "tools/call",
                cause: None,
            }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(initializes.load(Ordering::SeqCst), 2, "one new session");
        assert_eq!(client.session_renewals(), 1);
        assert_eq!(port.runs(), Vec::<String>::new(), "never run");
    })
    .await
}
