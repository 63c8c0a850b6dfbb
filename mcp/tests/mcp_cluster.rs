//! Three processes of one MCP server (the `mcp_cluster` example) behind a real HAProxy
//! (Debian's `haproxy`, started with the config the repo ships, `deploy/haproxy/mcp.cfg`) on
//! loopback, driven by the typed MCP client (`sansrpc_mcp::client` over
//! `sansrpc_mcp::tokio`), through the balancer only:
//! - 2026-07-28: requests go round-robin, one process after another; a call whose tool asks
//!   the client twice completes with each `input_required` round on another process (the
//!   processes share `STATE_KEY`), and fails when they do not share it; with a real
//!   `nats-server` (`NATS_URL`), listeners on all three processes hear a tool added on one.
//! - 2025-11-25: a session's requests all go to the process that answered its
//!   `initialize` (HAProxy learns the `Mcp-Session-Id`); a tool `add_tool` adds there is
//!   announced on the session's GET stream, and only that process has it. When the
//!   session's process is killed (SIGKILL), the client's next call succeeds on a new
//!   session, with no application code.
//! - Load: 32 clients call a tool (50 ms of work) for 20 s while one process is killed
//!   (SIGKILL) and started again: every call ends by its deadline, with a result or an
//!   error the client saw (a call cut by the kill: `ClientError::OutcomeUnknown`), and none
//!   runs twice (each call is tagged; the processes print the tags they ran). The counts
//!   are printed.
//!
//! `haproxy` is looked for in `$HAPROXY`, on `PATH` and in `/usr/sbin` (`scripts/test` and
//! `.ci/run` install Debian's package when it is missing).
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ClientError, ListenNotification, McpClient};
use sansrpc_mcp::types::{CallToolResult, ElicitRequestParams, ElicitResult, SubscriptionFilter};
use sansrpc_tokio::Builder;
use serde_json::json;
use support::{free_port, start_haproxy, Example, Running};

/// A real nats-server on a free loopback port (core NATS: the fan-out needs no JetStream),
/// killed when dropped. Found in `$NATS_SERVER`, on `PATH` or in `/usr/sbin`.
struct Nats {
    _process: Running,
    url: String,
}

impl Nats {
    fn start() -> Nats {
        let binary = std::env::var_os("NATS_SERVER")
            .map(PathBuf::from)
            .or_else(|| {
                let path = std::env::var_os("PATH").unwrap_or_default();
                std::env::split_paths(&path)
                    .chain([PathBuf::from("/usr/sbin")])
                    .map(|dir| dir.join("nats-server"))
                    .find(|p| p.is_file())
            })
            .expect("nats-server not found ($NATS_SERVER, PATH, /usr/sbin): run scripts/test");
        let port = free_port();
        let process = Running(
            Command::new(binary)
                .args(["-a", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start nats-server"),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server did not listen in 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Nats {
            _process: process,
            url: format!("nats://127.0.0.1:{port}"),
        }
    }
}

const KEY: &str = "8f1c2a7d5e3b90c4a6f2d8e1b7c3a9f05d4e6b2c8a1f3d7e9b5c0a2f4d6e8b1c";

/// Three example processes behind HAProxy.
struct Cluster {
    processes: Vec<Example>,
    ports: Vec<u16>,
    /// The keys the processes were started with, by index.
    keys: Vec<String>,
    /// The NATS URL the processes were given.
    nats: Option<String>,
    _haproxy: Running,
    url: String,
}

impl Cluster {
    /// Three processes sharing `STATE_KEY`.
    fn start() -> Cluster {
        Cluster::with_keys([KEY; 3].map(str::to_owned).to_vec())
    }

    fn with_keys(keys: Vec<String>) -> Cluster {
        Cluster::with(keys, None)
    }

    /// Three processes sharing `STATE_KEY`, hearing each other's changes through the NATS
    /// server at `nats`.
    fn with_nats(nats: &str) -> Cluster {
        Cluster::with([KEY; 3].map(str::to_owned).to_vec(), Some(nats.to_owned()))
    }

    fn with(keys: Vec<String>, nats: Option<String>) -> Cluster {
        let mut processes = Vec::new();
        let mut ports = Vec::new();
        for key in &keys {
            let (process, port) = process(0, key, nats.as_deref());
            processes.push(process);
            ports.push(port);
        }
        let lb = free_port();
        let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/haproxy/mcp.cfg");
        let env: Vec<(String, String)> = std::iter::once(("MCP_LB_PORT".into(), lb.to_string()))
            .chain(
                ports
                    .iter()
                    .enumerate()
                    .map(|(i, port)| (format!("MCP_PORT_{}", i + 1), port.to_string())),
            )
            .collect();
        let haproxy = start_haproxy(&config, &env, lb);
        Cluster {
            processes,
            ports,
            keys,
            nats,
            _haproxy: haproxy,
            url: format!("http://127.0.0.1:{lb}/mcp"),
        }
    }

    /// Kills process `i` with SIGKILL.
    fn kill(&mut self, i: usize) {
        self.processes[i].kill();
    }

    /// Starts process `i` again on its port; the lines the killed one printed are kept
    /// in `printed`.
    fn restart(&mut self, i: usize, printed: &mut Vec<String>) {
        printed.extend(self.processes[i].drain());
        let (process, _) = process(self.ports[i], &self.keys[i], self.nats.as_deref());
        self.processes[i] = process;
    }
}

/// The example on `port` (0: a free one) with `key` (and `NATS_URL`, when given); the
/// process and its port.
fn process(port: u16, key: &str, nats: Option<&str>) -> (Example, u16) {
    let port = port.to_string();
    let mut env = vec![("PORT", port.as_str()), ("STATE_KEY", key)];
    env.extend(nats.map(|url| ("NATS_URL", url)));
    let mut process = Example::start_with_env("sansrpc-mcp", "mcp_cluster", &env);
    let line = process.line();
    let port = line
        .strip_prefix("listening on http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| process.fail(&format!("printed {line:?} first")));
    (process, port)
}

/// The first text of a tool's result.
fn text(result: &CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {value}"))
        .to_owned()
}

/// The port in `port P`.
fn port_of(answer: &str) -> u16 {
    answer
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{answer:?}"))
}

/// What a client's handlers were given: the questions asked (elicitation), and the
/// methods of the notifications received.
#[derive(Default, Clone)]
struct Heard {
    asked: Arc<Mutex<Vec<String>>>,
    notified: Arc<Mutex<Vec<String>>>,
}

/// A client through the balancer whose elicitation handler answers a name and a colour;
/// what it hears is kept. Stateless (`discover`) or on a session (`initialize`).
async fn connect(url: &str, stateless: bool, timeout: Duration) -> (McpClient, Heard) {
    let heard = Heard::default();
    let seen = Arc::clone(&heard.asked);
    let notified = Arc::clone(&heard.notified);
    let mcp = ClientBuilder::new("cluster-test", "1")
        .on_notification(move |method, _| notified.lock().unwrap().push(method.to_owned()))
        .on_elicitation(move |params: ElicitRequestParams| {
            let message = params.message().to_owned();
            seen.lock().unwrap().push(message.clone());
            let content = if message.ends_with("your name?") {
                json!({"name": "Ada"})
            } else {
                json!({"colour": "teal"})
            };
            let result: ElicitResult =
                serde_json::from_value(json!({"action": "accept", "content": content})).unwrap();
            async move { Ok(result) }
        });
    let mut config = Config::for_profile(Profile::Mcp);
    config.default_timeout = Some(timeout);
    let builder = Builder::new().config(config).router(mcp.router());
    let conn = sansrpc_mcp::tokio::connect(url, builder).unwrap();
    let client = if stateless {
        mcp.discover(&conn).await
    } else {
        mcp.initialize(&conn).await
    };
    (
        client.expect("the client starts through the balancer"),
        heard,
    )
}

async fn whoami(client: &McpClient) -> u16 {
    let answer = client.call_tool("whoami", ()).await.unwrap();
    port_of(&text(&answer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_round_robin_and_rounds_land_on_different_processes() {
    let cluster = Cluster::start();
    tokio::time::timeout(Duration::from_secs(60), async {
        let (client, heard) = connect(&cluster.url, true, Duration::from_secs(10)).await;
        assert!(client.is_stateless());

        // One client, one request after another: each goes to the next process.
        let mut ports = Vec::new();
        for _ in 0..6 {
            ports.push(whoami(&client).await);
        }
        for pair in ports.windows(2) {
            assert_ne!(pair[0], pair[1], "round-robin: {ports:?}");
        }
        let mut seen = ports.clone();
        seen.sort();
        seen.dedup();
        let mut all = cluster.ports.clone();
        all.sort();
        assert_eq!(seen, all, "every process answered: {ports:?}");
        assert_eq!(ports[..3], ports[3..], "in turn: {ports:?}");

        // Two rounds of input_required, then the answer: three requests, three processes.
        let answer = client.call_tool("ask_twice", ()).await.unwrap();
        let answer = text(&answer);
        let asked = heard.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "{asked:?}");
        let asker = |question: &str| port_of(question.split(':').next().unwrap());
        let (first, second) = (asker(&asked[0]), asker(&asked[1]));
        assert!(asked[0].ends_with("your name?"), "{asked:?}");
        assert!(asked[1].ends_with("your colour?"), "{asked:?}");
        let last: u16 = answer
            .strip_prefix("Ada likes teal (answered on port ")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{answer:?}"));
        assert!(
            first != second && second != last && first != last,
            "each round on another process: asked on {first}, then {second}, answered on {last}"
        );
    })
    .await
    .expect("done within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_shared_state_key_a_round_on_another_process_is_refused() {
    let keys = ["1", "2", "3"].map(|digit| digit.repeat(64)).to_vec();
    let cluster = Cluster::with_keys(keys);
    tokio::time::timeout(Duration::from_secs(60), async {
        let (client, heard) = connect(&cluster.url, true, Duration::from_secs(10)).await;
        let refused = client.call_tool("ask_twice", ()).await.unwrap_err();
        let code = refused.rpc().map(|e| e.code);
        assert_eq!(code, Some(-32602), "{refused:?}");
        let asked = heard.asked.lock().unwrap().len();
        assert_eq!(asked, 1, "asked once, then refused");
    })
    .await
    .expect("done within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sticks_to_the_process_that_initialized_it() {
    let cluster = Cluster::start();
    tokio::time::timeout(Duration::from_secs(60), async {
        let (client, _) = connect(&cluster.url, false, Duration::from_secs(10)).await;
        assert!(!client.is_stateless());
        let first = whoami(&client).await;
        for _ in 0..5 {
            assert_eq!(whoami(&client).await, first, "the session's process");
        }
        // A second session may land elsewhere; it sticks too.
        let (other, _) = connect(&cluster.url, false, Duration::from_secs(10)).await;
        let second = whoami(&other).await;
        for _ in 0..5 {
            assert_eq!(whoami(&other).await, second);
            assert_eq!(whoami(&client).await, first);
        }
    })
    .await
    .expect("done within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_on_one_process_is_announced_to_its_session_and_callable_there() {
    let cluster = Cluster::start();
    tokio::time::timeout(Duration::from_secs(60), async {
        // On a session: add_tool lands on the session's process, which announces the
        // change on the session's GET stream.
        let (client, heard) = connect(&cluster.url, false, Duration::from_secs(10)).await;
        let home = whoami(&client).await;
        let added = client
            .call_tool("add_tool", json!({"name": "late"}))
            .await
            .unwrap();
        assert_eq!(text(&added), format!("added tool late on port {home}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        let announced = "notifications/tools/list_changed".to_owned();
        while !heard.notified.lock().unwrap().contains(&announced) {
            assert!(
                Instant::now() < deadline,
                "no tools/list_changed within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let names: Vec<String> = client
            .all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["whoami", "add_tool", "ask_twice", "late"]);
        let late = client.call_tool("late", ()).await.unwrap();
        assert_eq!(text(&late), "added late");
        // A bad name is the tool's error, and adds nothing.
        let bad = client
            .call_tool("add_tool", json!({"name": "no spaces"}))
            .await
            .unwrap();
        assert_eq!(bad.is_error, Some(true), "{bad:?}");

        // The tool lives in that process only: stateless calls go round the three, and
        // only one of them knows it.
        let (stateless, _) = connect(&cluster.url, true, Duration::from_secs(10)).await;
        let mut known = 0;
        for _ in 0..3 {
            match stateless.call_tool("late", ()).await {
                Ok(answer) => {
                    assert_eq!(text(&answer), "added late");
                    known += 1;
                }
                Err(e) => assert_eq!(e.rpc().map(|e| e.code), Some(-32602), "{e:?}"),
            }
        }
        assert_eq!(known, 1, "one process of three has the tool");
    })
    .await
    .expect("done within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_on_every_process_hear_a_tool_added_on_one() {
    let nats = Nats::start();
    let cluster = Cluster::with_nats(&nats.url);
    tokio::time::timeout(Duration::from_secs(60), async {
        let (client, _) = connect(&cluster.url, true, Duration::from_secs(10)).await;
        // Three listens one after another: round-robin puts one on each process, so two of
        // them are on processes that do not take the add_tool call.
        let filter: SubscriptionFilter =
            serde_json::from_value(json!({"toolsListChanged": true})).unwrap();
        let mut listeners = Vec::new();
        for _ in 0..3 {
            listeners.push(client.listen(filter.clone()).await.unwrap());
        }
        let added = client
            .call_tool("add_tool", json!({"name": "late"}))
            .await
            .unwrap();
        assert!(
            text(&added).starts_with("added tool late on port "),
            "{added:?}"
        );
        for (i, listener) in listeners.iter_mut().enumerate() {
            let heard = tokio::time::timeout(Duration::from_secs(10), listener.next())
                .await
                .unwrap_or_else(|_| panic!("listener {i} heard nothing in 10 s"));
            assert_eq!(
                heard,
                Some(ListenNotification::ToolsListChanged),
                "listener {i}"
            );
        }
    })
    .await
    .expect("done within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_process_is_killed_goes_on_on_a_new_session() {
    let mut cluster = Cluster::start();
    tokio::time::timeout(Duration::from_secs(60), async {
        let (client, _) = connect(&cluster.url, false, Duration::from_secs(10)).await;
        let home = whoami(&client).await;
        let i = cluster.ports.iter().position(|&p| p == home).unwrap();
        cluster.kill(i);
        // No application code: the balancer sends the session's next request elsewhere,
        // which answers 404; the client starts a new session and sends the call again.
        let next = whoami(&client).await;
        assert_ne!(next, home, "answered by a live process");
        assert_eq!(client.session_renewals(), 1);
        for _ in 0..3 {
            assert_eq!(whoami(&client).await, next, "the new session sticks");
        }
    })
    .await
    .expect("done within 60 s");
}

/// How one call of the load test ended.
fn outcome(result: &Result<CallToolResult, ClientError>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(ClientError::Call(e)) if e.is_timeout() => "timed out".into(),
        Err(ClientError::Call(sansrpc::method::CallError::Ended(
            sansrpc::connection::EndReason::Unanswered { status },
        ))) => match status {
            Some(status) => format!("unanswered: HTTP {status}"),
            None => "unanswered: connection cut".into(),
        },
        Err(ClientError::Call(sansrpc::method::CallError::Rpc(e))) => {
            format!("error {}: {}", e.code, e.message)
        }
        Err(ClientError::OutcomeUnknown(_)) => "outcome unknown (cut before its answer)".into(),
        Err(e) => format!("other: {e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_while_a_process_is_killed_and_restarted() {
    const CLIENTS: usize = 32;
    const LOAD: Duration = Duration::from_secs(20);
    // Each call's deadline (the client's request timeout); a call not ended within it and
    // a margin has hung.
    const DEADLINE: Duration = Duration::from_secs(5);
    // Each call works 50 ms: calls are in flight on the process when it is killed.
    const WORK: u64 = 50;
    let mut cluster = Cluster::start();
    let url = cluster.url.clone();
    let started = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let url = url.clone();
        clients.push(tokio::spawn(async move {
            let (client, _) = connect(&url, true, DEADLINE).await;
            let mut ended = Vec::new();
            let mut n = 0;
            while started.elapsed() < LOAD {
                let tag = format!("c{c}-{n}");
                n += 1;
                let call = client.call_tool("whoami", json!({"tag": tag, "millis": WORK}));
                let result = tokio::time::timeout(DEADLINE + Duration::from_secs(5), call)
                    .await
                    .unwrap_or_else(|_| panic!("call {tag} hung past its deadline"));
                let port = result.as_ref().ok().map(|r| port_of(&text(r)));
                ended.push((tag, outcome(&result), port));
            }
            ended
        }));
    }

    // Meanwhile: the second process killed at 6 s, started again at 12 s.
    let mut printed = Vec::new();
    tokio::time::sleep(Duration::from_secs(6)).await;
    cluster.kill(1);
    tokio::time::sleep(Duration::from_secs(6)).await;
    cluster.restart(1, &mut printed);

    let mut calls = Vec::new();
    for client in clients {
        calls.extend(client.await.expect("a client's task"));
    }

    // Every call ended once; count the outcomes.
    let mut counts = BTreeMap::<String, usize>::new();
    for (_, outcome, _) in &calls {
        *counts.entry(outcome.clone()).or_default() += 1;
    }
    println!("{} calls by {CLIENTS} clients in {LOAD:?}, process {} killed at 6 s and restarted at 12 s:", calls.len(), cluster.ports[1]);
    for (outcome, count) in &counts {
        println!("  {outcome}: {count}");
    }
    for outcome in counts.keys() {
        assert!(
            outcome == "ok" || outcome.starts_with("outcome unknown") || outcome == "timed out",
            "an error the client was not meant to see: {outcome} ({counts:?})"
        );
    }
    assert!(
        counts.get("ok").copied().unwrap_or(0) > calls.len() / 2,
        "{counts:?}"
    );

    // No call ran twice: each tag printed by at most one process, at most once; each call
    // answered was run by the process whose port it answered.
    let ran_by = |printed: &[String], port: u16, into: &mut HashMap<String, Vec<u16>>| {
        for line in printed {
            let tag = line
                .strip_prefix("whoami ")
                .unwrap_or_else(|| panic!("{line:?}"));
            into.entry(tag.to_owned()).or_default().push(port);
        }
    };
    let mut runs: HashMap<String, Vec<u16>> = HashMap::new();
    ran_by(&printed, cluster.ports[1], &mut runs);
    // The live processes' lines may still be on their way: until every answered call is seen.
    let answered: Vec<_> = calls.iter().filter(|(_, _, port)| port.is_some()).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for (i, process) in cluster.processes.iter_mut().enumerate() {
            let lines = process.drain();
            ran_by(&lines, cluster.ports[i], &mut runs);
        }
        if answered.iter().all(|(tag, _, _)| runs.contains_key(tag)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "an answered call was not printed by any process"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (tag, ports) in &runs {
        assert_eq!(
            ports.len(),
            1,
            "call {tag} ran {} times: on {ports:?}",
            ports.len()
        );
    }
    for (tag, _, port) in answered {
        assert_eq!(
            runs[tag],
            [port.unwrap()],
            "call {tag} answered by the process that ran it"
        );
    }
}

/// The HAProxy block of docs/mcp.md is lines of the config the tests run, in its order.
#[test]
fn the_docs_show_the_shipped_haproxy_config() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let config = std::fs::read_to_string(root.join("deploy/haproxy/mcp.cfg")).unwrap();
    let docs = std::fs::read_to_string(root.join("docs/mcp.md")).unwrap();
    let block = docs
        .split_once("```haproxy\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .expect("docs/mcp.md shows the config in a ```haproxy block");
    let mut lines = config.lines().map(str::trim);
    for shown in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            lines.any(|line| line == shown),
            "docs/mcp.md shows {shown:?}, not a line of deploy/haproxy/mcp.cfg (in order)"
        );
    }
}
