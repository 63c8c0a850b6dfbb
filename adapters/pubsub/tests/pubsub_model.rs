//! The hub's ephemeral pub/sub against a reference model, on arbitrary sequences of
//! connects, disconnects, (un)subscribes and publishes: the same answers, the same
//! deliveries, the same drops, with a small subscription limit and a small queue.

use std::collections::{BTreeSet, VecDeque};

use proptest::prelude::*;
use sansrpc::{Instant, RawValue};
use sansrpc_pubsub::hub::{HubConfig, InlineHub, SessionId};
use sansrpc_pubsub::store::MemoryStore;
use sansrpc_pubsub::topic::matches;

const MAX_SUBS: usize = 3;
const MAX_QUEUED: usize = 4;

#[derive(Debug, Clone)]
enum Op {
    Connect,
    Disconnect(usize),
    Subscribe(usize, String),
    Unsubscribe(usize, String),
    Publish(String),
    Drain(usize),
}

fn pattern() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a", "a.b", "a.*", "a.>", "*.b", ">", "b", "a.b.c", "*",
    ])
    .prop_map(String::from)
}

fn topic() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "a.b", "a.c", "b.b", "a.b.c"]).prop_map(String::from)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Connect),
        1 => (0..4usize).prop_map(Op::Disconnect),
        4 => (0..4usize, pattern()).prop_map(|(s, p)| Op::Subscribe(s, p)),
        2 => (0..4usize, pattern()).prop_map(|(s, p)| Op::Unsubscribe(s, p)),
        4 => topic().prop_map(Op::Publish),
        2 => (0..4usize).prop_map(Op::Drain),
    ]
}

#[derive(Default)]
struct ModelSession {
    patterns: BTreeSet<String>,
    queue: VecDeque<String>,
    dropped: u64,
}

fn call(
    hub: &mut InlineHub<MemoryStore>,
    s: SessionId,
    method: &str,
    params: &str,
) -> Result<String, i64> {
    let mut out = Vec::new();
    let params = RawValue::from_json(params).unwrap();
    match hub
        .handle(s, method, Some(params), Instant::ZERO, &mut out)
        .unwrap()
    {
        Ok(()) => Ok(String::from_utf8(out).unwrap()),
        Err(e) => Err(e.code),
    }
}

proptest! {
    #[test]
    fn hub_agrees_with_the_model(ops in prop::collection::vec(op(), 1..80)) {
        let mut config = HubConfig::default();
        config.max_subscriptions = MAX_SUBS;
        config.max_queued = MAX_QUEUED;
        config.persist = false;
        let mut hub = InlineHub::new(MemoryStore::default(), config);
        // Open sessions, in connection order, with their model.
        let mut open: Vec<(SessionId, ModelSession)> = Vec::new();
        let mut message = 0u64;
        for op in ops {
            match op {
                Op::Connect => open.push((hub.connect(), ModelSession::default())),
                Op::Disconnect(i) if i < open.len() => {
                    let (s, _) = open.remove(i);
                    hub.disconnect(s);
                    prop_assert_eq!(hub.subscriptions(s), 0);
                }
                Op::Subscribe(i, p) if i < open.len() => {
                    let (s, m) = &mut open[i];
                    let got = call(&mut hub, *s, "rpc.subscribe", &format!("{{\"topic\":\"{p}\"}}"));
                    let want = if m.patterns.contains(&p) || m.patterns.len() < MAX_SUBS {
                        m.patterns.insert(p);
                        Ok(r#"{"subscribed":true}"#.to_string())
                    } else {
                        Err(-32010)
                    };
                    prop_assert_eq!(got, want);
                }
                Op::Unsubscribe(i, p) if i < open.len() => {
                    let (s, m) = &mut open[i];
                    let got = call(&mut hub, *s, "rpc.unsubscribe", &format!("{{\"topic\":\"{p}\"}}"));
                    let removed = m.patterns.remove(&p);
                    prop_assert_eq!(got, Ok(format!("{{\"unsubscribed\":{removed}}}")));
                }
                Op::Publish(t) => {
                    message += 1;
                    let data = RawValue::from_string(message.to_string()).unwrap();
                    let delivered = hub.publish(&t, &data, Instant::ZERO, 0).unwrap().delivered;
                    let mut want = 0;
                    for (_, m) in &mut open {
                        if m.patterns.iter().any(|p| matches(p, &t)) {
                            want += 1;
                            if m.queue.len() == MAX_QUEUED {
                                m.queue.pop_front();
                                m.dropped += 1;
                            }
                            m.queue.push_back(format!("{{\"topic\":\"{t}\",\"data\":{message}}}"));
                        }
                    }
                    prop_assert_eq!(delivered, want);
                }
                Op::Drain(i) if i < open.len() => {
                    let (s, m) = &mut open[i];
                    let got: Vec<String> = std::iter::from_fn(|| hub.pop_outgoing(*s))
                        .map(|o| o.params().get().to_string())
                        .collect();
                    let want: Vec<String> = m.queue.drain(..).collect();
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(hub.dropped(*s), m.dropped);
                }
                _ => {}
            }
            for (s, m) in &open {
                prop_assert_eq!(hub.subscriptions(*s), m.patterns.len());
                prop_assert_eq!(hub.queued(*s), m.queue.len());
            }
            prop_assert_eq!(hub.sessions(), open.len());
        }
    }
}
