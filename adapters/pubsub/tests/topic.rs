//! The token trie against the reference matcher, on arbitrary subscribe/unsubscribe
//! sequences over a small alphabet (so that patterns and topics collide often).

use std::collections::BTreeSet;

use proptest::prelude::*;
use sansrpc_pubsub::topic::{matches, validate_pattern, validate_topic, TopicLimits, Trie};

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from),
        1 => Just("*".to_string()),
    ]
}

fn pattern() -> impl Strategy<Value = String> {
    (prop::collection::vec(token(), 1..5), any::<bool>()).prop_map(|(mut tokens, tail)| {
        if tail {
            tokens.push(">".into());
        }
        tokens.join(".")
    })
}

fn topic() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..6).prop_map(|t| t.join("."))
}

#[derive(Debug, Clone)]
enum Op {
    Insert(String, u8),
    Remove(String, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (pattern(), 0..4u8).prop_map(|(p, k)| Op::Insert(p, k)),
        1 => (pattern(), 0..4u8).prop_map(|(p, k)| Op::Remove(p, k)),
    ]
}

proptest! {
    #[test]
    fn trie_agrees_with_the_reference(ops in prop::collection::vec(op(), 0..40), topics in prop::collection::vec(topic(), 1..10)) {
        let limits = TopicLimits::default();
        let mut trie = Trie::new();
        let mut model: BTreeSet<(String, u8)> = BTreeSet::new();
        for op in ops {
            match op {
                Op::Insert(p, k) => {
                    prop_assert!(validate_pattern(&p, &limits).is_ok());
                    prop_assert_eq!(trie.insert(&p, k), model.insert((p, k)));
                }
                Op::Remove(p, k) => {
                    prop_assert_eq!(trie.remove(&p, k), model.remove(&(p, k)));
                }
            }
            prop_assert_eq!(trie.len(), model.len());
        }
        for t in topics {
            prop_assert!(validate_topic(&t, &limits).is_ok());
            let mut got = Vec::new();
            trie.for_each_match(&t, |k| got.push(k));
            got.sort();
            let mut want: Vec<u8> = model.iter().filter(|(p, _)| matches(p, &t)).map(|(_, k)| *k).collect();
            want.sort();
            prop_assert_eq!(got, want, "topic {}", t);
        }
    }
}
