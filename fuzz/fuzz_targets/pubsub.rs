//! The pub/sub hub driven by arbitrary operations: any method name with any params text,
//! publishes to arbitrary topics, acknowledgements, clock jumps and disconnects. Nothing may
//! panic; every answer is valid JSON or an error; queues stay within their bounds; every
//! publish reaches exactly the sessions whose patterns match (checked against
//! `topic::matches`, the reference the trie is tested against); a disconnected session
//! keeps nothing. Store tasks are performed when the fuzzer says (`Settle`), so answers,
//! appends and saves arrive late, after disconnects and clock jumps, as they do on a worker.
#![no_main]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sansrpc_pubsub::hub::{Handled, Hub, HubConfig, SessionId, METHODS};
use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
use sansrpc_pubsub::topic::{matches, validate_topic};
use sansrpc::{Instant, RawValue};

#[derive(Arbitrary, Debug)]
enum Op {
    Connect,
    Disconnect(u8),
    /// One of the hub's methods (or any name) with params built from a topic.
    Call {
        session: u8,
        method: u8,
        topic: String,
        id: u8,
        seq: u8,
    },
    /// Any method name, any params text.
    Raw {
        session: u8,
        method: String,
        params: String,
    },
    Publish {
        topic: String,
        data: u8,
    },
    Drain(u8),
    Advance(u16),
    /// Perform up to this many queued store tasks and feed their results back.
    Settle(u8),
}

fuzz_target!(|ops: Vec<Op>| {
    let mut config = HubConfig::default();
    config.max_subscriptions = 8;
    config.max_queued = 16;
    config.max_in_flight = 4;
    config.ack_timeout = Duration::from_millis(500);
    let mut retention = RetentionPolicy::default();
    retention.default.max_count = Some(8);
    retention.default.max_age = Some(Duration::from_secs(5));
    let mut store = MemoryStore::new(retention);
    let mut hub = Hub::new(config);
    let mut pending = VecDeque::new();
    let mut sessions: Vec<SessionId> = Vec::new();
    // What each open session subscribed to (successful rpc.subscribe minus unsubscribes).
    let mut patterns: BTreeMap<SessionId, BTreeSet<String>> = BTreeMap::new();
    let mut now = Instant::ZERO;
    let mut wall = 1_700_000_000_000u64;
    let mut out = Vec::new();
    let pick =
        |sessions: &[SessionId], i: u8| sessions.get(i as usize % sessions.len().max(1)).copied();
    for op in ops.into_iter().take(256) {
        match op {
            Op::Connect => {
                let s = hub.connect();
                sessions.push(s);
                patterns.insert(s, BTreeSet::new());
            }
            Op::Disconnect(i) => {
                if let Some(s) = pick(&sessions, i) {
                    hub.disconnect(s);
                    sessions.retain(|&x| x != s);
                    patterns.remove(&s);
                    assert_eq!((hub.subscriptions(s), hub.queued(s)), (0, 0));
                }
            }
            Op::Call {
                session,
                method,
                topic,
                id,
                seq,
            } => {
                let Some(s) = pick(&sessions, session) else {
                    continue;
                };
                let name = METHODS[method as usize % METHODS.len()];
                let topic_json = serde_json::to_string(&topic).unwrap();
                let params = match name {
                    "rpc.subscribe" | "rpc.unsubscribe" => format!("{{\"topic\":{topic_json}}}"),
                    "rpc.subscribe.batch" | "rpc.unsubscribe.batch" => {
                        format!("{{\"topics\":[{topic_json},\"x.{id}\"]}}")
                    }
                    "rpc.subscribe.persistent" => {
                        format!("{{\"subscription_id\":\"s{id}\",\"topic\":{topic_json}}}")
                    }
                    "rpc.acknowledge.persistent" => {
                        format!("{{\"subscription_id\":\"s{id}\",\"sequence_id\":{seq}}}")
                    }
                    "rpc.unsubscribe.persistent" => format!("{{\"subscription_id\":\"s{id}\"}}"),
                    _ => format!("{{\"subscriptions\":[{{\"subscription_id\":\"s{id}\",\"topic\":{topic_json}}}],\"acknowledgments\":[],\"subscription_ids\":[\"s{seq}\"]}}"),
                };
                let raw = RawValue::from_string(params).unwrap();
                out.clear();
                let handled = hub
                    .handle(s, name, Some(&raw), now, &mut out)
                    .expect("a hub method");
                if let Handled::Answered(Ok(())) = handled {
                    let text = std::str::from_utf8(&out).unwrap();
                    RawValue::from_json(text).expect("results are JSON");
                    let set = patterns.get_mut(&s).unwrap();
                    match name {
                        "rpc.subscribe" => {
                            set.insert(topic);
                        }
                        "rpc.unsubscribe" => {
                            set.remove(&topic);
                        }
                        "rpc.subscribe.batch" => {
                            set.insert(topic);
                            set.insert(format!("x.{id}"));
                        }
                        "rpc.unsubscribe.batch" => {
                            set.remove(&topic);
                            set.remove(&format!("x.{id}"));
                        }
                        _ => {}
                    }
                }
            }
            Op::Raw {
                session,
                method,
                params,
            } => {
                let Some(s) = pick(&sessions, session) else {
                    continue;
                };
                let Ok(raw) = RawValue::from_string(params) else {
                    continue;
                };
                out.clear();
                let known = METHODS.contains(&method.as_str());
                let outcome = hub.handle(s, &method, Some(&raw), now, &mut out);
                assert_eq!(outcome.is_some(), known);
                if let Some(Handled::Answered(Ok(()))) = outcome {
                    RawValue::from_json(std::str::from_utf8(&out).unwrap()).expect("JSON");
                    // Subscriptions by raw params are not tracked: resynchronise from scratch.
                    if method.starts_with("rpc.subscribe") || method.starts_with("rpc.unsubscribe")
                    {
                        hub.disconnect(s);
                        sessions.retain(|&x| x != s);
                        patterns.remove(&s);
                    }
                }
            }
            Op::Publish { topic, data } => {
                let raw = RawValue::from_string(data.to_string()).unwrap();
                let valid = validate_topic(&topic, &hub.config().topics).is_ok();
                match hub.publish(&topic, &raw, now, wall) {
                    Ok(p) => {
                        assert!(valid);
                        let want = patterns
                            .values()
                            .filter(|set| set.iter().any(|pat| matches(pat, &topic)))
                            .count();
                        assert_eq!(p.delivered, want, "topic {topic:?}");
                    }
                    Err(_) => assert!(!valid),
                }
            }
            Op::Drain(i) => {
                if let Some(s) = pick(&sessions, i) {
                    while let Some(o) = hub.pop_outgoing(s) {
                        RawValue::from_json(o.params().get()).expect("params are JSON");
                    }
                    while let Some((_, answer)) = hub.pop_answer(s) {
                        if let Ok(json) = answer {
                            RawValue::from_json(&json).expect("late answers are JSON");
                        }
                    }
                }
            }
            Op::Settle(n) => {
                while let Some(task) = hub.poll_store() {
                    pending.push_back(task);
                }
                for _ in 0..n {
                    let Some(task) = pending.pop_front() else {
                        break;
                    };
                    let done = task.perform(&mut store);
                    hub.handle_store(task, done, now);
                }
            }
            Op::Advance(ms) => {
                now = now + Duration::from_millis(ms as u64);
                wall += ms as u64;
                if hub.poll_timeout().is_some_and(|t| t <= now) {
                    hub.handle_timeout(now, wall);
                }
            }
        }
        for &s in &sessions {
            assert!(hub.queued(s) <= 16);
            assert!(hub.subscriptions(s) <= 8);
        }
        while hub.poll_woken().is_some() {}
        while hub.poll_appended().is_some() {}
        while hub.poll_report().is_some() {}
    }
});
