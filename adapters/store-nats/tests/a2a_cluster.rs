//! Two processes of one A2A agent (the `a2a_cluster` example: the echo agent, its tasks in
//! a `NatsTaskStore`, their events carried by an `A2aFanout`) behind a real HAProxy
//! (Debian's `haproxy`, started with the config the repo ships, `deploy/haproxy/a2a.cfg`)
//! and a real `nats-server` with JetStream, on loopback; driven by the A2A client
//! (`sansrpc_a2a::tokio::Client`) through the balancer only.
//!
//! The balancer sends each request to the next process, round-robin; `whoami` (a task
//! whose artifact names the port of the process that ran it) tells the test where the next
//! request goes, so each step below lands on the process it names:
//! - a task created through process A (`slow 20`): its status and artifact events reach a
//!   `SubscribeToTask` stream opened through process B, to the end;
//! - `GetTask` and `ListTasks` through A and through B answer the same task;
//! - a `CancelTask` through B stops the run on A (A prints that its run was stopped), and
//!   ends a stream A serves on the task.

mod common;
#[path = "../../../a2a/tests/support/events.rs"]
mod events;
#[path = "../../../tests/support/processes.rs"]
mod processes;

use std::path::PathBuf;
use std::time::Duration;

use events::describe;
use processes::{free_port, start_haproxy, Example, Running};
use sansrpc_a2a::tokio::{Client, EventStream};
use sansrpc_a2a::types::{
    AgentCard, GetTaskRequest, ListTasksRequest, Message, Role, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task, TaskState,
};

/// Two example processes behind HAProxy, on one NATS.
struct Cluster {
    processes: Vec<Example>,
    ports: Vec<u16>,
    _haproxy: Running,
    _nats: common::NatsServer,
    /// The balancer's JSON-RPC URL.
    url: String,
}

impl Cluster {
    fn start() -> Cluster {
        let nats = common::NatsServer::start();
        let lb = free_port();
        let url = format!("http://127.0.0.1:{lb}/a2a");
        let mut processes = Vec::new();
        let mut ports: Vec<u16> = Vec::new();
        for _ in 0..2 {
            let env = [
                ("PORT", "0"),
                ("NATS_URL", nats.url.as_str()),
                ("A2A_PUBLIC_URL", url.as_str()),
            ];
            let mut process = Example::start_with_env("sansrpc-store-nats", "a2a_cluster", &env);
            let line = process.line();
            let port = line
                .strip_prefix("a2a_cluster listening on http://127.0.0.1:")
                .and_then(|rest| rest.strip_suffix("/a2a"))
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| process.fail(&format!("printed {line:?} first")));
            processes.push(process);
            ports.push(port);
        }
        let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/haproxy/a2a.cfg");
        let env = [
            ("A2A_LB_PORT".to_owned(), lb.to_string()),
            ("A2A_PORT_1".to_owned(), ports[0].to_string()),
            ("A2A_PORT_2".to_owned(), ports[1].to_string()),
        ];
        let haproxy = start_haproxy(&config, &env, lb);
        Cluster {
            processes,
            ports,
            _haproxy: haproxy,
            _nats: nats,
            url,
        }
    }

    /// The balancer's client: the card every process serves names the balancer's URL.
    async fn client(&self) -> Client {
        let base = self.url.trim_end_matches("/a2a");
        let client = Client::resolve(base).await.unwrap();
        assert_eq!(client.url(), self.url);
        let card: AgentCard = client.card().clone();
        Client::from_card(card, None).unwrap()
    }

    /// The next line process `i` prints (waiting at most the example timeout).
    fn line(&mut self, i: usize) -> String {
        tokio::task::block_in_place(|| self.processes[i].line())
    }
}

fn send(text: &str) -> SendMessageRequest {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let id = format!("m-{}", N.fetch_add(1, Ordering::Relaxed));
    SendMessageRequest {
        message: Message::text(Role::User, id, text),
        configuration: Some(SendMessageConfiguration {
            return_immediately: text != "whoami",
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn task(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(task) => task,
        other => panic!("not a task: {other:?}"),
    }
}

/// The text of artifact `id` of `task`.
fn artifact<'t>(task: &'t Task, id: &str) -> Option<&'t str> {
    let artifact = task.artifacts.iter().find(|a| a.artifact_id == id)?;
    artifact.parts.first()?.as_text()
}

/// The port of the process that answers `whoami`.
async fn whoami(client: &Client) -> u16 {
    let answer = task(client.send_message(&send("whoami")).await.unwrap());
    let text = answer.artifacts[0].parts[0].as_text().unwrap();
    text.strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{text:?}"))
}

/// Makes the next request through the balancer go to the process on `port`: asks
/// `whoami` until the other process answers (round-robin: the next one is `port`'s).
async fn next_to(client: &Client, cluster: &Cluster, port: u16) {
    for _ in 0..3 {
        let answered = whoami(client).await;
        assert!(cluster.ports.contains(&answered), "{answered}");
        if answered != port {
            return;
        }
    }
    panic!("the balancer sent three requests in a row to port {port}");
}

/// Every event of `stream` to its end (20 s at most: a stream whose events do not come
/// fails here, saying which).
async fn collect(stream: &mut EventStream, which: &str) -> Vec<String> {
    let mut events = Vec::new();
    let all = async {
        while let Some(event) = stream.next().await {
            events.push(describe(&event.unwrap()));
        }
    };
    if tokio::time::timeout(Duration::from_secs(20), all)
        .await
        .is_err()
    {
        panic!("{which} did not end within 20 s; it got {events:?}");
    }
    events
}

fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_behind_haproxy_share_tasks_and_their_events() {
    let mut cluster = Cluster::start();
    let (a, b) = (cluster.ports[0], cluster.ports[1]);
    tokio::time::timeout(Duration::from_secs(90), async {
        let client = cluster.client().await;

        // A task created through A runs on A...
        next_to(&client, &cluster, a).await;
        let slow = task(client.send_message(&send("slow 20")).await.unwrap());
        // ...and a stream on it opened through B gets its events, to the end.
        next_to(&client, &cluster, b).await;
        let mut stream = client.subscribe(&slow.id).await.unwrap();
        let events = collect(&mut stream, "the stream through B on A's task").await;
        assert!(events[0].starts_with("task "), "{events:?}");
        let steps = events
            .iter()
            .filter(|e| e.starts_with("status TASK_STATE_WORKING step "))
            .count();
        assert!(steps >= 1, "B's stream got A's steps: {events:?}");
        let tail = &events[events.len() - 3..];
        assert_eq!(
            tail,
            [
                "status TASK_STATE_WORKING step 20",
                "artifact done",
                "status TASK_STATE_COMPLETED "
            ],
            "{events:?}"
        );

        // GetTask and ListTasks through A and through B: the same task.
        next_to(&client, &cluster, a).await;
        let on_a = client.get_task(&get(&slow.id)).await.unwrap();
        next_to(&client, &cluster, b).await;
        let on_b = client.get_task(&get(&slow.id)).await.unwrap();
        assert_eq!(on_a, on_b);
        assert_eq!(on_a.status.state, TaskState::Completed);
        assert_eq!(artifact(&on_a, "where"), Some(format!("port {a}").as_str()));
        assert_eq!(on_a.artifacts.len(), 2, "{on_a:?}");
        assert_eq!(
            on_a.history.first().and_then(|m| m.first_text()),
            Some("slow 20")
        );
        assert_eq!(on_a.history.len(), 21, "the message and 20 steps");
        let list = ListTasksRequest {
            include_artifacts: Some(true),
            ..Default::default()
        };
        let mut listed = Vec::new();
        for port in [a, b] {
            next_to(&client, &cluster, port).await;
            let page = client.list_tasks(&list).await.unwrap();
            let found = page.tasks.into_iter().find(|t| t.id == slow.id);
            listed.push(found.unwrap_or_else(|| panic!("ListTasks through {port} has the task")));
        }
        assert_eq!(listed, [on_a.clone(), on_a.clone()]);

        // A task waiting on A, watched through A, canceled through B.
        next_to(&client, &cluster, a).await;
        let waiting = task(client.send_message(&send("wait")).await.unwrap());
        next_to(&client, &cluster, a).await;
        let mut watch = client.subscribe(&waiting.id).await.unwrap();
        next_to(&client, &cluster, b).await;
        let canceled = client.cancel_task(&waiting.id).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled);
        let events = collect(
            &mut watch,
            "the stream through A on the task canceled through B",
        )
        .await;
        assert_eq!(
            events.last().map(String::as_str),
            Some("status TASK_STATE_CANCELED "),
            "{events:?}"
        );
        let stopped = format!("run {} stopped", waiting.id);
        assert_eq!(cluster.line(0), stopped, "A's run stopped");
        for port in [a, b] {
            next_to(&client, &cluster, port).await;
            let now = client.get_task(&get(&waiting.id)).await.unwrap();
            assert_eq!(now.status.state, TaskState::Canceled, "through {port}");
            assert_eq!(artifact(&now, "where"), Some(format!("port {a}").as_str()));
        }
    })
    .await
    .expect("done within 90 s");
}

/// The snippets of `docs/a2a.md` after its link to this example are in the example as they
/// are (indentation aside).
#[test]
fn the_guide_shows_the_cluster_example_as_it_is() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
    let doc = std::fs::read_to_string(format!("{root}docs/a2a.md")).unwrap();
    let source =
        std::fs::read_to_string(format!("{root}adapters/store-nats/examples/a2a_cluster.rs"))
            .unwrap();
    let lines = |text: &str| text.lines().map(str::trim).collect::<Vec<_>>().join("\n");
    let source = lines(&source);
    let after = doc
        .split_once("examples/a2a_cluster.rs)")
        .expect("the guide links the example")
        .1;
    let block = after
        .split_once("```rust,ignore\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("a snippet follows the link")
        .0;
    assert!(
        source.contains(&lines(block)),
        "not in a2a_cluster.rs:\n{block}"
    );
}
