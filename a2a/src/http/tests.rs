//! The machine by hand, on virtual time: every bound and the error past it, keep-alives,
//! a stream kept for its client and forgotten after its wait, resumption with and without
//! the events.

use std::time::Duration;

use sansrpc::codec::http::{BodyStep, Head};
use sansrpc::Instant;
use serde_json::Value;

use super::*;
use crate::machine::SeededIds;
use crate::types::{AgentCapabilities, TaskState};

fn card() -> AgentCard {
    let mut card = crate::echo::agent_card("http://127.0.0.1:3000/a2a");
    card.capabilities = AgentCapabilities {
        streaming: Some(true),
        push_notifications: Some(true),
        ..Default::default()
    };
    card
}

fn at(ms: u64) -> Now {
    Now {
        instant: Instant::ZERO + Duration::from_millis(ms),
        utc: Timestamp::from_unix_millis(1_700_000_000_000 + ms as i64).unwrap(),
    }
}

fn head(fields: &[(&str, &str)]) -> Head {
    let mut all = vec![("a2a-version", "1.0")];
    all.extend_from_slice(fields);
    let fields = all.iter().map(|(n, v)| (*n, v.as_bytes()));
    Head::from_checked_parts("POST", "/a2a", fields, true).unwrap()
}

fn call(server: &mut Endpoint, method: &str, params: Value, now: Now) -> Verdict {
    call_with(server, &[], method, params, now)
}

fn call_with(
    server: &mut Endpoint,
    fields: &[(&str, &str)],
    method: &str,
    params: Value,
    now: Now,
) -> Verdict {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let body = serde_json::to_vec(&body).unwrap();
    server.handle_request(&head(fields), &body, Authorized::NotRequired, now)
}

fn send(text: &str) -> Value {
    serde_json::json!({"message": {"messageId": text, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn error_code(verdict: &Verdict) -> i64 {
    let Verdict::Respond(r) = verdict else {
        panic!("{verdict:?}")
    };
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("{v}"))
}

fn stream(verdict: Verdict) -> u64 {
    let Verdict::Stream(s) = verdict else {
        panic!("{verdict:?}")
    };
    s
}

/// Everything `stream` has now, as HTTP/1.1.
fn drain(server: &mut Endpoint, stream: u64) -> (String, BodyStep) {
    let mut out = Vec::new();
    let step = server.poll_stream(stream, &mut out);
    (String::from_utf8(out).unwrap(), step)
}

fn runs(server: &mut Endpoint) -> Vec<RunId> {
    std::iter::from_fn(|| server.poll_event())
        .filter_map(|e| match e {
            Event::Run(run) => Some(run.id),
            _ => None,
        })
        .collect()
}

#[test]
fn streams_and_waiting_requests_are_bounded_with_an_internal_error_past_them() {
    let config = Config {
        max_streams: 2,
        max_waiting: 1,
        ..Config::default()
    };
    let mut server = Endpoint::new(config, card(), SeededIds::new(1));
    stream(call(&mut server, "SendStreamingMessage", send("a"), at(0)));
    stream(call(&mut server, "SendStreamingMessage", send("b"), at(0)));
    assert_eq!(
        error_code(&call(&mut server, "SendStreamingMessage", send("c"), at(0))),
        -32603
    );
    stream(call(&mut server, "SendMessage", send("d"), at(0)));
    assert_eq!(
        error_code(&call(&mut server, "SendMessage", send("e"), at(0))),
        -32603
    );
    // Refused requests kept nothing: three tasks.
    assert_eq!(server.tasks().len(), 3);
    let body = vec![b' '; server.config().max_body + 1];
    let Verdict::Respond(r) =
        server.handle_request(&head(&[]), &body, Authorized::NotRequired, at(0))
    else {
        panic!()
    };
    assert_eq!(r.status, 413);
}

#[test]
fn an_idle_stream_gets_keep_alives_and_a_waiting_answer_comes_whole() {
    let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(2));
    let s = stream(call(
        &mut server,
        "SendStreamingMessage",
        send("slow"),
        at(0),
    ));
    let (first, step) = drain(&mut server, s);
    assert_eq!(step, BodyStep::Data);
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
    assert!(first.contains("transfer-encoding: chunked"), "{first}");
    assert!(
        first.contains("retry: 1000") && first.contains("TASK_STATE_SUBMITTED"),
        "{first}"
    );
    assert_eq!(drain(&mut server, s), (String::new(), BodyStep::Wait));
    assert_eq!(server.poll_timeout(), Some(at(15_000).instant));
    server.handle_timeout(at(15_000));
    assert_eq!(server.poll_ready(), Some(s));
    let (ping, _) = drain(&mut server, s);
    assert!(ping.contains(": keep-alive"), "{ping}");

    // A blocking SendMessage: nothing until the task is interrupted, then one JSON body.
    let w = stream(call(&mut server, "SendMessage", send("ask"), at(20_000)));
    let run = runs(&mut server).pop().unwrap();
    assert_eq!(drain(&mut server, w), (String::new(), BodyStep::Wait));
    let update = Update::status(TaskState::InputRequired, None);
    server.handle_update(at(20_001), run, update).unwrap();
    let (answer, step) = drain(&mut server, w);
    assert_eq!(step, BodyStep::End);
    assert!(
        answer.contains("content-length:") && answer.contains("TASK_STATE_INPUT_REQUIRED"),
        "{answer}"
    );
}

/// A card that declares security requirements: every request needs credentials the
/// validator takes (A2A §3.3.2), answered 401 with a challenge otherwise (403 naming the
/// scope for a token without it). They were served to anyone: the validator guarded only the
/// extended card. A card that declares none is a public agent.
#[test]
fn a_card_with_security_requirements_refuses_requests_without_credentials() {
    let mut card = card();
    let requirement: crate::types::SecurityRequirement =
        serde_json::from_value(serde_json::json!({"schemes": {"bearer": {"list": []}}}))
            .unwrap_or_default();
    card.security_requirements = vec![requirement];
    let mut server = Endpoint::new(Config::default(), card, SeededIds::new(2));
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let body = serde_json::to_vec(&body).unwrap();
    let cases = [
        (Authorized::Missing, 401, "Bearer"),
        (Authorized::Invalid, 401, "Bearer error=\"invalid_token\""),
        (
            Authorized::InsufficientScope("tasks".into()),
            403,
            "Bearer error=\"insufficient_scope\", scope=\"tasks\"",
        ),
    ];
    for (authorized, status, challenge) in cases {
        let Verdict::Respond(refused) = server.handle_request(&head(&[]), &body, authorized, at(0))
        else {
            panic!("a refusal")
        };
        assert_eq!(refused.status, status);
        let header = refused
            .headers
            .iter()
            .find(|(n, _)| *n == "www-authenticate");
        assert_eq!(header.map(|(_, v)| v.as_str()), Some(challenge));
    }
    let Verdict::Respond(served) =
        server.handle_request(&head(&[]), &body, Authorized::Valid, at(0))
    else {
        panic!("an answer")
    };
    assert_eq!(served.status, 200);
    assert!(String::from_utf8_lossy(&served.body).contains("\"tasks\""));
    // A public agent (no requirement): served without credentials.
    let mut public = Endpoint::new(Config::default(), self::card(), SeededIds::new(2));
    let Verdict::Respond(served) =
        public.handle_request(&head(&[]), &body, Authorized::Missing, at(0))
    else {
        panic!("an answer")
    };
    assert_eq!(served.status, 200);
}

/// HTTP/1.0 has no chunked coding (RFC 9112 §6.1): a stream answering it sends its events
/// unframed and ends with the connection's close (as nginx asks upstream by default).
#[test]
fn a_stream_answering_http_1_0_is_not_chunked() {
    let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(2));
    let mut old = head(&[]);
    old.http10 = true;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": send("ask")});
    let body = serde_json::to_vec(&body).unwrap();
    let verdict = server.handle_request(&old, &body, Authorized::NotRequired, at(0));
    let s = stream(verdict);
    let run = runs(&mut server).pop().unwrap();
    let (first, step) = drain(&mut server, s);
    assert_eq!(step, BodyStep::Data);
    assert!(first.contains("connection: close\r\n"), "{first}");
    assert!(!first.contains("transfer-encoding"), "{first}");
    let body = first.split_once("\r\n\r\n").unwrap().1;
    assert!(
        body.starts_with("retry: ") || body.starts_with("id: "),
        "{body:?}"
    );
    let update = Update::status(TaskState::InputRequired, None);
    server.handle_update(at(1), run, update).unwrap();
    let (rest, step) = drain(&mut server, s);
    assert_eq!(step, BodyStep::End);
    assert!(
        rest.starts_with("id: ") && rest.ends_with("\n\n"),
        "{rest:?}"
    );
    assert!(rest.contains("TASK_STATE_INPUT_REQUIRED"), "{rest}");

    // The same request as HTTP/1.1: chunked.
    let s = stream(call(
        &mut server,
        "SendStreamingMessage",
        send("ask"),
        at(2),
    ));
    let (first, _) = drain(&mut server, s);
    assert!(first.contains("transfer-encoding: chunked"), "{first}");
}

#[test]
fn a_broken_stream_is_kept_for_its_client_then_forgotten() {
    let config = Config {
        detached: Duration::from_secs(10),
        ..Config::default()
    };
    let mut server = Endpoint::new(config, card(), SeededIds::new(3));
    let s = stream(call(
        &mut server,
        "SendStreamingMessage",
        send("slow"),
        at(0),
    ));
    let run = runs(&mut server)[0];
    let task_id = server.tasks().task_ids().next().unwrap().to_owned();
    drain(&mut server, s);
    server.handle_stream_closed(s, at(1));
    // Events go on into the store while nobody reads.
    server
        .handle_update(at(2), run, Update::status(TaskState::Working, None))
        .unwrap();
    let resumed = call_with(
        &mut server,
        &[("last-event-id", &format!("{s}.1"))],
        "SubscribeToTask",
        serde_json::json!({"id": task_id}),
        at(3),
    );
    assert_eq!(stream(resumed), s, "the same stream, resumed");
    let (replayed, _) = drain(&mut server, s);
    assert!(
        replayed.contains("TASK_STATE_WORKING") && !replayed.contains("TASK_STATE_SUBMITTED"),
        "{replayed}"
    );
    assert!(replayed.contains(&format!("id: {s}.2")), "{replayed}");

    // Broken again and not resumed within its wait: forgotten, and a Last-Event-ID that
    // names it starts a fresh subscription (the task first).
    server.handle_stream_closed(s, at(4));
    assert_eq!(server.streams(), 1);
    server.handle_timeout(at(10_004));
    assert_eq!(server.streams(), 0);
    let fresh = call_with(
        &mut server,
        &[("last-event-id", &format!("{s}.2"))],
        "SubscribeToTask",
        serde_json::json!({"id": task_id}),
        at(10_005),
    );
    let fresh = stream(fresh);
    assert_ne!(fresh, s);
    let (first, _) = drain(&mut server, fresh);
    assert!(first.contains("\"task\":{"), "{first}");
}

#[test]
fn push_configs_are_bounded_per_task_and_checked() {
    let config = Config {
        push: PushLimits {
            max_per_task: 1,
            ..PushLimits::default()
        },
        ..Config::default()
    };
    let mut server = Endpoint::new(config, card(), SeededIds::new(4));
    stream(call(&mut server, "SendMessage", send("wait"), at(0)));
    let run = runs(&mut server)[0];
    let task_id = server.tasks().task_ids().next().unwrap().to_owned();
    let create = |url: &str| serde_json::json!({"taskId": task_id, "url": url});
    let Verdict::Respond(ok) = call(
        &mut server,
        "CreateTaskPushNotificationConfig",
        create("http://h/1"),
        at(1),
    ) else {
        panic!()
    };
    assert!(String::from_utf8_lossy(&ok.body).contains("\"id\":\"push-1\""));
    assert_eq!(
        error_code(&call(
            &mut server,
            "CreateTaskPushNotificationConfig",
            create("http://h/2"),
            at(1)
        )),
        -32602
    );
    assert_eq!(
        error_code(&call(
            &mut server,
            "CreateTaskPushNotificationConfig",
            create("file:///x"),
            at(1)
        )),
        -32602
    );
    let unknown = serde_json::json!({"taskId": "nope", "url": "http://h/1"});
    assert_eq!(
        error_code(&call(
            &mut server,
            "CreateTaskPushNotificationConfig",
            unknown,
            at(1)
        )),
        -32001
    );
    // The task's next event goes to the config's URL.
    server
        .handle_update(at(2), run, Update::status(TaskState::Working, None))
        .unwrap();
    let pushes: Vec<Delivery> = std::iter::from_fn(|| server.poll_event())
        .filter_map(|e| match e {
            Event::Push(d) => Some(*d),
            _ => None,
        })
        .collect();
    assert_eq!(
        pushes.len(),
        2,
        "the task as it was, then the update: {pushes:?}"
    );
    assert_eq!(pushes[1].url, "http://h/1");
    assert!(String::from_utf8_lossy(&pushes[1].body).contains("statusUpdate"));
}

/// A task the machine evicts takes its push configs with it: the configs of tasks long
/// gone counted against `max_configs`, so a long-running agent refused every new config
/// with `-32603` once that many had been made over its life.
#[test]
fn an_evicted_task_frees_its_push_configs() {
    let mut tasks = crate::machine::TaskConfig::default();
    tasks.limits.max_tasks = 1;
    let config = Config {
        tasks,
        push: PushLimits {
            max_configs: 1,
            ..PushLimits::default()
        },
        ..Config::default()
    };
    let mut server = Endpoint::new(config, card(), SeededIds::new(5));
    let task_with_config = |server: &mut Endpoint, text: &str, t: u64| {
        stream(call(server, "SendStreamingMessage", send(text), at(t)));
        let run = runs(server)[0];
        let task_id = server.tasks().task_ids().next().unwrap().to_owned();
        let create = serde_json::json!({"taskId": task_id, "url": "http://h/1"});
        let verdict = call(server, "CreateTaskPushNotificationConfig", create, at(t));
        let Verdict::Respond(ok) = verdict else {
            panic!("{verdict:?}")
        };
        let body = String::from_utf8_lossy(&ok.body).into_owned();
        assert!(body.contains("\"url\":\"http://h/1\""), "{body}");
        server
            .handle_update(at(t + 1), run, Update::status(TaskState::Completed, None))
            .unwrap();
        while server.poll_event().is_some() {}
        task_id
    };
    let first = task_with_config(&mut server, "a", 0);
    // The next task evicts the first (finished, and one task is kept): its config goes too.
    let second = task_with_config(&mut server, "b", 10);
    assert_ne!(first, second);
    assert_eq!(
        server.tasks().task_ids().collect::<Vec<_>>(),
        [second.as_str()]
    );
}

/// The pushes of a task go on after it asks for input and the client answers: the config's
/// watcher was a task stream, which ends at input required like every stream, so nothing
/// after it was ever posted.
#[test]
fn pushes_go_on_after_input_required() {
    let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(7));
    let pushes = |server: &mut Endpoint| -> Vec<String> {
        std::iter::from_fn(|| server.poll_event())
            .filter_map(|e| match e {
                Event::Push(d) => Some(String::from_utf8_lossy(&d.body).into_owned()),
                _ => None,
            })
            .collect()
    };
    stream(call(&mut server, "SendMessage", send("ask"), at(0)));
    let run = runs(&mut server)[0];
    let task_id = server.tasks().task_ids().next().unwrap().to_owned();
    let create = serde_json::json!({"taskId": task_id, "url": "http://h/1"});
    call(
        &mut server,
        "CreateTaskPushNotificationConfig",
        create,
        at(1),
    );
    pushes(&mut server);
    let update = Update::status(TaskState::InputRequired, None);
    server.handle_update(at(2), run, update).unwrap();
    server.handle_run_end(at(2), run);
    let asked = pushes(&mut server);
    assert!(
        asked.len() == 1 && asked[0].contains("TASK_STATE_INPUT_REQUIRED"),
        "{asked:?}"
    );
    // The client answers: the task runs again, and its updates are posted.
    let answer = serde_json::json!({"message": {"messageId": "m2", "taskId": task_id,
        "role": "ROLE_USER", "parts": [{"text": "yes"}]}});
    call(&mut server, "SendMessage", answer, at(3));
    let run = runs(&mut server).pop().expect("the task runs again");
    let update = Update::status(TaskState::Completed, None);
    server.handle_update(at(4), run, update).unwrap();
    let after = pushes(&mut server);
    assert!(
        after.iter().any(|p| p.contains("TASK_STATE_COMPLETED")),
        "the end is posted: {after:?}"
    );
    assert!(
        !after
            .iter()
            .any(|p| p.contains("TASK_STATE_INPUT_REQUIRED")),
        "nothing posted twice: {after:?}"
    );
}

/// A task store two servers share, in memory (a test's stand-in for one bucket); `fail`
/// makes every call fail.
#[derive(Clone, Default)]
struct SharedStore {
    tasks: std::sync::Arc<std::sync::Mutex<BTreeMap<String, Vec<u8>>>>,
    fail: bool,
}

impl TaskStore for SharedStore {
    fn save(
        &mut self,
        version: u64,
        task: &crate::types::Task,
    ) -> Result<(), crate::store::StoreError> {
        if self.fail {
            return Err("the disk is gone".into());
        }
        let record = crate::store::encode_task(version, task);
        self.tasks.lock().unwrap().insert(task.id.clone(), record);
        Ok(())
    }

    fn load(
        &mut self,
        id: &str,
    ) -> Result<Option<(u64, crate::types::Task)>, crate::store::StoreError> {
        if self.fail {
            return Err("the disk is gone".into());
        }
        let tasks = self.tasks.lock().unwrap();
        tasks
            .get(id)
            .map(|r| crate::store::decode_task(r))
            .transpose()
    }

    fn list(
        &mut self,
        each: &mut dyn FnMut(crate::types::Task),
    ) -> Result<(), crate::store::StoreError> {
        if self.fail {
            return Err("the disk is gone".into());
        }
        for record in self.tasks.lock().unwrap().values() {
            each(crate::store::decode_task(record)?.1);
        }
        Ok(())
    }
}

/// The result of a JSON answer.
fn result(verdict: &Verdict) -> Value {
    let Verdict::Respond(r) = verdict else {
        panic!("{verdict:?}")
    };
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v.get("result").cloned().unwrap_or_else(|| panic!("{v}"))
}

/// What `from` announced, handed to `to` as the fan-out would; the rest of `from`'s events.
fn carry(from: &mut Endpoint, to: &mut Endpoint, now: Now) -> Vec<Event> {
    let mut rest = Vec::new();
    while let Some(event) = from.poll_event() {
        match event {
            Event::Announce(change) => to.handle_remote(now, &change),
            other => rest.push(other),
        }
    }
    rest
}

fn pair() -> (Endpoint, Endpoint) {
    let store = SharedStore::default();
    let [a, b] = [1, 2].map(|seed| {
        let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(seed));
        server.set_task_store(Box::new(store.clone()));
        server.announce_changes(true);
        server
    });
    (a, b)
}

fn run_of(events: &[Event]) -> RunId {
    events
        .iter()
        .find_map(|e| match e {
            Event::Run(run) => Some(run.id),
            _ => None,
        })
        .expect("a run")
}

/// Two servers on one store, the changes carried between them by hand: a task created on
/// A is read and listed on B, a stream on B gets A's events, and B's cancel stops A's run.
#[test]
fn two_servers_on_one_store_share_tasks_events_and_cancels() {
    let (mut a, mut b) = pair();
    let immediately = serde_json::json!({
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "work"}]},
        "configuration": {"returnImmediately": true},
    });
    let created = result(&call(&mut a, "SendMessage", immediately, at(0)));
    let id = created["task"]["id"].as_str().unwrap().to_owned();
    let run = run_of(&carry(&mut a, &mut b, at(0)));
    a.handle_update(at(1), run, Update::status(TaskState::Working, None))
        .unwrap();
    carry(&mut a, &mut b, at(1));

    let got = result(&call(
        &mut b,
        "GetTask",
        serde_json::json!({"id": id}),
        at(2),
    ));
    assert_eq!(got["status"]["state"], "TASK_STATE_WORKING");
    let listed = result(&call(&mut b, "ListTasks", serde_json::json!({}), at(2)));
    assert_eq!(listed["tasks"][0]["id"], id.as_str());

    let on_b = stream(call(
        &mut b,
        "SubscribeToTask",
        serde_json::json!({"id": id}),
        at(3),
    ));
    let artifact = crate::types::Artifact::text("a-1", "half");
    a.handle_update(at(4), run, Update::artifact(artifact))
        .unwrap();
    carry(&mut a, &mut b, at(4));
    let (text, _) = drain(&mut b, on_b);
    assert!(text.contains("\"half\""), "{text}");

    let canceled = result(&call(
        &mut b,
        "CancelTask",
        serde_json::json!({"id": id}),
        at(5),
    ));
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (text, step) = drain(&mut b, on_b);
    assert!(text.contains("TASK_STATE_CANCELED"), "{text}");
    assert_eq!(step, BodyStep::End);
    let on_a = carry(&mut b, &mut a, at(5));
    assert!(on_a.is_empty(), "B runs nothing: {on_a:?}");
    let stopped = carry(&mut a, &mut b, at(5));
    assert!(
        stopped
            .iter()
            .any(|e| matches!(e, Event::Stop(r) if *r == run)),
        "{stopped:?}"
    );
    assert!(a
        .handle_update(at(6), run, Update::status(TaskState::Completed, None))
        .is_err());
    let got = result(&call(
        &mut a,
        "GetTask",
        serde_json::json!({"id": id}),
        at(7),
    ));
    assert_eq!(got["status"]["state"], "TASK_STATE_CANCELED");
    assert_eq!(got["artifacts"][0]["artifactId"], "a-1");
    assert_eq!((a.store_errors(), b.store_errors()), (0, 0));
}

/// A store that fails: reads answer an internal error that says so, and are counted.
#[test]
fn a_failing_store_is_an_internal_error_not_a_panic() {
    let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(1));
    server.set_task_store(Box::new(SharedStore {
        fail: true,
        ..Default::default()
    }));
    let verdict = call(
        &mut server,
        "GetTask",
        serde_json::json!({"id": "t-1"}),
        at(0),
    );
    assert_eq!(error_code(&verdict), -32603);
    let verdict = call(&mut server, "ListTasks", serde_json::json!({}), at(0));
    assert_eq!(error_code(&verdict), -32603);
    // A new task is still taken (kept in memory); its saves fail and are counted.
    let created = result(&call(
        &mut server,
        "SendMessage",
        serde_json::json!({
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"returnImmediately": true},
        }),
        at(1),
    ));
    assert_eq!(created["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    assert!(server.store_errors() >= 3, "{}", server.store_errors());
}

/// Two servers of one agent behind a balancer, each numbering its streams from its own
/// base: a `Last-Event-ID` of one server's stream that reaches the other starts a fresh
/// subscription there (the task first), not a resume of the other's stream of the same
/// number, which another subscriber of the task reads. With both numbering from the same
/// base it took that stream over.
#[test]
fn a_resume_that_reaches_another_server_starts_fresh() {
    let (mut a, mut b) = pair();
    a.number_streams_from(1 << 20);
    b.number_streams_from(2 << 20);
    let s = stream(call(&mut a, "SendStreamingMessage", send("slow"), at(0)));
    assert!(s > 1 << 20, "{s}");
    // The task created on a, announced to b.
    carry(&mut a, &mut b, at(1));
    let task_id = a.tasks().task_ids().next().unwrap().to_owned();
    // Another subscriber of the task on b, its stream open.
    let theirs = stream(call(
        &mut b,
        "SubscribeToTask",
        serde_json::json!({"id": task_id}),
        at(2),
    ));
    assert!(theirs > 2 << 20, "{theirs}");
    // a's subscriber reconnects through b with the id of its stream on a.
    let resumed = stream(call_with(
        &mut b,
        &[("last-event-id", &format!("{s}.1"))],
        "SubscribeToTask",
        serde_json::json!({"id": task_id}),
        at(3),
    ));
    assert_ne!(
        resumed, theirs,
        "the other subscriber's stream was taken over"
    );
    let (first, _) = drain(&mut b, resumed);
    assert!(
        first.contains("\"task\":{"),
        "a fresh subscription, the task first: {first}"
    );
}

/// A push config created without an id gets one its task's configs do not use: a client
/// that named its own `push-1` keeps it. (The new config replaced it.)
#[test]
fn a_push_config_given_no_id_never_takes_one_in_use() {
    let mut server = Endpoint::new(Config::default(), card(), SeededIds::new(4));
    stream(call(&mut server, "SendMessage", send("wait"), at(0)));
    let task_id = server.tasks().task_ids().next().unwrap().to_owned();
    let created = |server: &mut Endpoint, params: Value| match call(
        server,
        "CreateTaskPushNotificationConfig",
        params,
        at(1),
    ) {
        Verdict::Respond(ok) => {
            serde_json::from_slice::<Value>(&ok.body).unwrap()["result"].clone()
        }
        other => panic!("{other:?}"),
    };
    let named = serde_json::json!({"taskId": task_id, "id": "push-1", "url": "http://h/1"});
    assert_eq!(created(&mut server, named)["id"], "push-1");
    let unnamed = serde_json::json!({"taskId": task_id, "url": "http://h/2"});
    assert_eq!(created(&mut server, unnamed)["id"], "push-2");
    let list = serde_json::json!({"taskId": task_id});
    let Verdict::Respond(listed) =
        call(&mut server, "ListTaskPushNotificationConfigs", list, at(2))
    else {
        panic!()
    };
    let listed: Value = serde_json::from_slice(&listed.body).unwrap();
    let urls: Vec<_> = listed["result"]["configs"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|c| c["url"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(urls, ["http://h/1", "http://h/2"]);
}
