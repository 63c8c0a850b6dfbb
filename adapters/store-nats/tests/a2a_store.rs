//! `NatsTaskStore` and `A2aFanout` on a real nats-server with JetStream (feature `a2a`): two
//! stores of one agent share its tasks (and not another agent's); an agent process whose
//! NATS went away counts the changes it could not publish, and resyncs once NATS is back,
//! its streams on a task running elsewhere then brought up to date from the bucket.

mod common;

use std::time::Duration;

use common::{wait_until, NatsServer};
use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::store::TaskStore;
use sansrpc_a2a::tokio::{Client, Options, Peers};
use sansrpc_a2a::types::{
    Message, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, Task,
    TaskState, TaskStatus, Timestamp,
};
use sansrpc_store_nats::{bucket_name, A2aFanout, NatsTaskStore, TaskBucket};

fn task(id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: "c-1".into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Timestamp::from_unix_millis(1_700_000_000_000),
        },
        ..Default::default()
    }
}

#[test]
fn two_stores_of_one_agent_share_its_tasks_once_flushed() {
    let nats = NatsServer::start();
    let mut a = NatsTaskStore::connect(&nats.url, "echo agent").unwrap();
    let mut b = NatsTaskStore::connect(&nats.url, "echo agent").unwrap();
    let mut other = NatsTaskStore::connect(&nats.url, "another").unwrap();
    assert_eq!(
        bucket_name("echo agent").unwrap(),
        "SANSRPC_A2A_echo_20agent"
    );

    let id = "task/1 é";
    a.save(1, &task(id, TaskState::Working)).unwrap();
    // Seen here at once, elsewhere after the flush.
    assert_eq!(a.load(id).unwrap(), Some((1, task(id, TaskState::Working))));
    assert_eq!(b.load(id).unwrap(), None);
    a.flush().unwrap();
    assert_eq!(b.load(id).unwrap(), Some((1, task(id, TaskState::Working))));
    b.save(2, &task(id, TaskState::Completed)).unwrap();
    b.save(1, &task("t-2", TaskState::Submitted)).unwrap();
    b.flush().unwrap();
    assert_eq!(
        a.load(id).unwrap(),
        Some((2, task(id, TaskState::Completed)))
    );
    let mut listed = Vec::new();
    a.list(&mut |t| listed.push((t.id, t.status.state)))
        .unwrap();
    listed.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        listed,
        [
            ("t-2".to_owned(), TaskState::Submitted),
            (id.to_owned(), TaskState::Completed)
        ]
    );
    // Another agent's bucket is another.
    assert_eq!(other.load(id).unwrap(), None);
    let mut none = 0;
    other.list(&mut |_| none += 1).unwrap();
    assert_eq!(none, 0);
    assert_eq!(a.load("").unwrap(), None);
}

#[test]
fn a_dead_nats_is_an_error_in_bounded_time() {
    let mut nats = NatsServer::start();
    let mut bucket = TaskBucket::default();
    bucket.timeout = Duration::from_secs(2);
    let mut store = NatsTaskStore::connect_with(&nats.url, "echo", bucket).unwrap();
    nats.kill();
    store.save(1, &task("t-1", TaskState::Working)).unwrap();
    assert!(store.flush().is_err());
    assert!(store.load("t-2").is_err());
}

/// One agent process in this test: served on tokio with the shared store and the fan-out.
struct Process {
    client: Client,
    fanout: A2aFanout,
}

async fn process(nats: &str) -> Process {
    let peers = Peers::new();
    let fanout = A2aFanout::connect(nats, "echo", &peers).unwrap();
    let store = NatsTaskStore::connect(nats, "echo").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = agent_card(&format!("{base}/a2a"));
    let options = Options::default().task_store(store).peers(peers);
    tokio::spawn(sansrpc_a2a::tokio::serve_with(
        listener,
        EchoAgent::with_step_delay(Duration::from_millis(200)),
        card,
        Default::default(),
        options,
        std::future::pending(),
    ));
    Process {
        client: Client::resolve(&base).await.unwrap(),
        fanout,
    }
}

fn send(text: &str, immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::text(Role::User, format!("m-{text}"), text),
        configuration: Some(SendMessageConfiguration {
            return_immediately: immediately,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_counted_and_a_resync_brings_the_streams_up_to_date() {
    let mut nats = NatsServer::start();
    let (a, b) = (process(&nats.url).await, process(&nats.url).await);

    // A task on A with a stream through B.
    let SendMessageResponse::Task(slow) =
        a.client.send_message(&send("slow 40", true)).await.unwrap()
    else {
        panic!()
    };
    let mut stream = b.client.subscribe(&slow.id).await.unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(sansrpc_a2a::types::StreamResponse::Task(_)))
    ));
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(
        first,
        sansrpc_a2a::types::StreamResponse::StatusUpdate(_)
    ));

    // NATS goes: A's changes are not published (counted), and B hears nothing.
    tokio::task::block_in_place(|| {
        nats.kill();
        wait_until(Duration::from_secs(10), "both saw NATS go", || {
            !a.fanout.is_connected() && !b.fanout.is_connected()
        });
        wait_until(Duration::from_secs(20), "A dropped changes", || {
            a.fanout.dropped() >= 2
        });
        nats.restart();
        wait_until(Duration::from_secs(20), "B resynced", || {
            b.fanout.resyncs() >= 1
        });
    });
    // A's run may have ended during the outage; B's stream still gets to the end: the
    // resync loaded the task, or A's changes after the reconnection continued it.
    let mut last = None;
    let all = async {
        while let Some(event) = stream.next().await {
            last = Some(event.unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("B's stream ends");
    let state = match last {
        Some(sansrpc_a2a::types::StreamResponse::StatusUpdate(s)) => s.status.state,
        other => panic!("{other:?}"),
    };
    assert_eq!(state, TaskState::Completed);
}
