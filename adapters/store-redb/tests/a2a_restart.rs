//! An A2A agent (the echo agent, served by `sansrpc_a2a::tokio::serve_with` on loopback)
//! whose tasks are kept in a `RedbTaskStore`: stopped and served again on the same file, it
//! still answers `GetTask` and `ListTasks` with the tasks, their history and artifacts, and
//! goes on with a task that waits for input. Driven by the A2A client over HTTP.

use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::http::Config;
use sansrpc_a2a::tokio::{Client, Options};
use sansrpc_a2a::types::{
    GetTaskRequest, ListTasksRequest, Message, Role, SendMessageRequest, SendMessageResponse, Task,
    TaskState,
};
use sansrpc_store_redb::RedbTaskStore;
use tokio::sync::oneshot;

/// The echo agent on a free port, its tasks in the redb file at `path`; stopped when the
/// sender is dropped or fired (the join handle resolves once it stopped and released the
/// file).
async fn serve(
    path: &std::path::Path,
) -> (
    Client,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let store = RedbTaskStore::open(path, 1_000).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = agent_card(&format!("{base}/a2a"));
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(sansrpc_a2a::tokio::serve_with(
        listener,
        EchoAgent::new(),
        card,
        Config::default(),
        Options::default().task_store(store),
        async move {
            let _ = stopped.await;
        },
    ));
    (Client::resolve(&base).await.unwrap(), stop, server)
}

fn send(text: &str, id: &str, task: Option<&Task>) -> SendMessageRequest {
    let mut message = Message::text(Role::User, id, text);
    message.task_id = task.map(|t| t.id.clone());
    SendMessageRequest {
        message,
        ..Default::default()
    }
}

fn task(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(task) => task,
        other => panic!("not a task: {other:?}"),
    }
}

fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_survive_a_restart_with_their_history_and_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.redb");

    let (client, stop, server) = serve(&path).await;
    let echoed = task(
        client
            .send_message(&send("echo hello", "m-1", None))
            .await
            .unwrap(),
    );
    assert_eq!(echoed.status.state, TaskState::Completed);
    let asked = task(
        client
            .send_message(&send("ask", "m-2", None))
            .await
            .unwrap(),
    );
    assert_eq!(asked.status.state, TaskState::InputRequired);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    drop(client);

    let (client, stop, server) = serve(&path).await;
    let again = client.get_task(&get(&echoed.id)).await.unwrap();
    assert_eq!(again.status.state, TaskState::Completed);
    assert_eq!(again.context_id, echoed.context_id);
    assert_eq!(again.history.len(), 1, "{again:?}");
    assert_eq!(again.history[0].first_text(), Some("echo hello"));
    assert_eq!(again.artifacts.len(), 1);
    assert_eq!(again.artifacts[0].parts[0].as_text(), Some("hello"));
    assert_eq!(again, echoed);

    let listed = client
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    let mut ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![echoed.id.as_str(), asked.id.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);

    // The question asked before the restart is answered after it, in the same task.
    let answered = task(
        client
            .send_message(&send("blue", "m-3", Some(&asked)))
            .await
            .unwrap(),
    );
    assert_eq!(answered.id, asked.id);
    assert_eq!(answered.status.state, TaskState::Completed);
    assert_eq!(answered.artifacts[0].parts[0].as_text(), Some("blue"));
    let texts: Vec<_> = answered
        .history
        .iter()
        .filter_map(|m| m.first_text())
        .collect();
    assert_eq!(texts, ["ask", "what?", "blue"]);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();

    // What the second run did is in the file too.
    let (client, stop, server) = serve(&path).await;
    assert_eq!(client.get_task(&get(&asked.id)).await.unwrap(), answered);
    let unknown = client.get_task(&get("no-such-task")).await.unwrap_err();
    assert_eq!(
        unknown.a2a().map(|e| e.kind()),
        Some(sansrpc_a2a::ErrorKind::TaskNotFound)
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[test]
fn the_store_forgets_the_oldest_finished_tasks_past_its_bound() {
    use sansrpc_a2a::store::TaskStore;
    use sansrpc_a2a::types::{TaskStatus, Timestamp};

    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbTaskStore::open(dir.path().join("t.redb"), 2).unwrap();
    let at = |ms, state| TaskStatus {
        state,
        message: None,
        timestamp: Timestamp::from_unix_millis(ms),
    };
    let task = |id: &str, ms, state| Task {
        id: id.into(),
        context_id: "c".into(),
        status: at(ms, state),
        ..Default::default()
    };
    store
        .save(1, &task("running", 1, TaskState::Working))
        .unwrap();
    store
        .save(1, &task("old", 2, TaskState::Completed))
        .unwrap();
    store
        .save(1, &task("new", 3, TaskState::Completed))
        .unwrap();
    // Seen before the commit, and not forgotten yet.
    assert!(store.load("old").unwrap().is_some());
    store.flush().unwrap();
    assert_eq!(store.len().unwrap(), 2);
    assert!(store.load("old").unwrap().is_none());
    assert_eq!(store.load("running").unwrap().unwrap().0, 1);
    // A task saved again moves in the order: now "new" is the oldest finished.
    store
        .save(2, &task("running", 4, TaskState::Completed))
        .unwrap();
    store
        .save(1, &task("newest", 5, TaskState::Failed))
        .unwrap();
    store.flush().unwrap();
    let mut kept = Vec::new();
    store.list(&mut |t| kept.push(t.id)).unwrap();
    kept.sort();
    assert_eq!(kept, ["newest", "running"]);
    assert_eq!(store.load("running").unwrap().unwrap().0, 2);
}

/// An A2A server's SSE events kept in a `RedbEventStore`: after a restart on the same
/// file new streams are numbered above the old ones, so resuming a new stream replays its
/// own events only. (The numbers started again at 1, and a new stream's
/// replay gave the old stream of that number's later events: another task's.)
#[test]
fn a2a_streams_after_a_restart_never_replay_another_runs_events() {
    use std::time::Duration;

    use sansrpc::codec::http::{BodyStep, Head};
    use sansrpc::Instant;
    use sansrpc_a2a::http::{Authorized, Endpoint, Event, Now, Verdict};
    use sansrpc_a2a::machine::{SeededIds, Update};
    use sansrpc_a2a::types::{AgentCapabilities, Timestamp};
    use sansrpc_store_redb::RedbEventStore;

    let at = |ms: u64| Now {
        instant: Instant::ZERO + Duration::from_millis(ms),
        utc: Timestamp::from_unix_millis(1_700_000_000_000 + ms as i64).unwrap(),
    };
    let head = |last: Option<String>| {
        let mut fields = vec![("a2a-version".to_owned(), "1.0".to_owned())];
        fields.extend(last.map(|id| ("last-event-id".to_owned(), id)));
        let fields = fields.iter().map(|(n, v)| (n.as_str(), v.as_bytes()));
        Head::from_checked_parts("POST", "/a2a", fields, true).unwrap()
    };
    let call = |server: &mut Endpoint, method: &str, params: serde_json::Value, last, now| {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let body = serde_json::to_vec(&body).unwrap();
        match server.handle_request(&head(last), &body, Authorized::NotRequired, now) {
            Verdict::Stream(s) => s,
            other => panic!("{other:?}"),
        }
    };
    let stream_of = |server: &mut Endpoint, text: &str, now| {
        let message = serde_json::json!({"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}});
        let s = call(server, "SendStreamingMessage", message, None, now);
        let run = std::iter::from_fn(|| server.poll_event())
            .find_map(|e| match e {
                Event::Run(run) => Some(run.id),
                _ => None,
            })
            .unwrap();
        (s, run)
    };
    let drain = |server: &mut Endpoint, s| {
        let mut out = Vec::new();
        let step = server.poll_stream(s, &mut out);
        assert!(!matches!(step, BodyStep::End), "the stream goes on");
        String::from_utf8(out).unwrap()
    };
    let server = |path: &std::path::Path| {
        let store = RedbEventStore::open(path, 1 << 20, Duration::from_secs(600)).unwrap();
        let mut card = sansrpc_a2a::echo::agent_card("http://127.0.0.1:3000/a2a");
        card.capabilities = AgentCapabilities {
            streaming: Some(true),
            ..Default::default()
        };
        let mut config = sansrpc_a2a::http::Config::default();
        config.detached = Duration::from_secs(60);
        Endpoint::with_store(config, card, SeededIds::new(7), Box::new(store))
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.redb");

    // The first run: a stream with five events, the last four while nobody reads.
    let mut first = server(&path);
    let (old, run) = stream_of(&mut first, "old", at(0));
    drain(&mut first, old);
    first.handle_stream_closed(old, at(1));
    for ms in 2..6 {
        first
            .handle_update(at(ms), run, Update::status(TaskState::Working, None))
            .unwrap();
    }
    first.flush_store();
    drop(first);

    // After the restart: a new task's stream, numbered above the old one.
    let mut second = server(&path);
    let (new, _) = stream_of(&mut second, "new", at(10_000));
    assert!(new > old, "new stream {new}, old {old}");
    let task = second.tasks().task_ids().next().unwrap().to_owned();
    let first_events = drain(&mut second, new);
    assert!(
        first_events.contains(&format!("id: {new}.1")),
        "{first_events}"
    );
    second.handle_stream_closed(new, at(10_001));
    let resumed = call(
        &mut second,
        "SubscribeToTask",
        serde_json::json!({"id": task}),
        Some(format!("{new}.1")),
        at(10_002),
    );
    assert_eq!(resumed, new);
    let replayed = drain(&mut second, new);
    assert!(
        !replayed.contains(&format!("id: {new}.2")),
        "another run's events replayed: {replayed}"
    );
}
