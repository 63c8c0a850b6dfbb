//! RedbStore against real files in a temporary directory.

use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::store::{Retention, RetentionPolicy, Store, StoredMessage, SubscriptionState};
use sansrpc_store_redb::RedbStore;

fn raw(s: &str) -> &RawValue {
    RawValue::from_json(s).unwrap()
}

fn unbounded() -> RetentionPolicy {
    RetentionPolicy {
        default: Retention {
            max_age: None,
            max_count: None,
            max_bytes: None,
        },
        topics: Default::default(),
    }
}

fn read_all(store: &mut RedbStore, topic: &str) -> Vec<StoredMessage> {
    let mut out = Vec::new();
    store.read(topic, 0, usize::MAX, &mut out).unwrap();
    out
}

fn sequences(messages: &[StoredMessage]) -> Vec<u64> {
    messages.iter().map(|m| m.sequence).collect()
}

#[test]
fn sequences_and_messages_continue_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let mut store = RedbStore::open(&path, unbounded()).unwrap();
        assert_eq!(store.last_sequence("a").unwrap(), 0);
        for i in 1..=3u64 {
            let data = format!(r#"{{"n":{i}}}"#);
            assert_eq!(store.append("a", 100 + i, raw(&data)).unwrap(), i);
        }
        assert_eq!(store.append("b.c", 7, raw("\"x\"")).unwrap(), 1);
    }
    let mut store = RedbStore::open(&path, unbounded()).unwrap();
    assert_eq!(store.last_sequence("a").unwrap(), 3);
    assert_eq!(store.last_sequence("b.c").unwrap(), 1);
    assert_eq!(store.append("a", 200, raw("null")).unwrap(), 4);
    let messages = read_all(&mut store, "a");
    assert_eq!(sequences(&messages), [1, 2, 3, 4]);
    assert_eq!(messages[1].data.get(), r#"{"n":2}"#);
    assert_eq!(messages[1].timestamp_ms, 102);
    assert_eq!(messages[1].topic, "a");
    // Topics do not bleed into each other, even when one name prefixes another.
    assert_eq!(store.append("a.b", 1, raw("1")).unwrap(), 1);
    assert_eq!(sequences(&read_all(&mut store, "a")), [1, 2, 3, 4]);
    assert_eq!(read_all(&mut store, "b.c")[0].data.get(), "\"x\"");
    assert!(read_all(&mut store, "nothing").is_empty());
}

#[test]
fn read_pages_after_a_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = RedbStore::open(dir.path().join("s.redb"), unbounded()).unwrap();
    for i in 0..10 {
        store.append("t", i, raw("true")).unwrap();
    }
    let mut out = Vec::new();
    store.read("t", 3, 4, &mut out).unwrap();
    assert_eq!(sequences(&out), [4, 5, 6, 7]);
    store.read("t", 7, 100, &mut out).unwrap();
    assert_eq!(
        sequences(&out),
        [4, 5, 6, 7, 8, 9, 10],
        "read appends to out"
    );
    out.clear();
    store.read("t", 10, 5, &mut out).unwrap();
    store.read("t", u64::MAX, 5, &mut out).unwrap();
    store.read("t", 0, 0, &mut out).unwrap();
    assert!(out.is_empty());
}

#[test]
fn acked_state_survives_reopening_and_deletes_stick() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let mut state = SubscriptionState::new("orders", 2);
    state.ack(3);
    state.ack(5);
    state.ack(9);
    {
        let mut store = RedbStore::open(&path, unbounded()).unwrap();
        assert_eq!(store.load_subscription("w1").unwrap(), None);
        store.save_subscription("w1", &state).unwrap();
        store
            .save_subscription("w2", &SubscriptionState::new("other", 0))
            .unwrap();
        store
            .save_subscription("gone", &SubscriptionState::new("x", 1))
            .unwrap();
        store.delete_subscription("gone").unwrap();
        store.delete_subscription("never-existed").unwrap();
    }
    let mut store = RedbStore::open(&path, unbounded()).unwrap();
    let loaded = store.load_subscription("w1").unwrap().unwrap();
    assert_eq!(loaded, state);
    assert_eq!(
        (loaded.ack_floor, loaded.acked.as_slice()),
        (3, &[5, 9][..])
    );
    assert_eq!(
        store.load_subscription("w2").unwrap().unwrap().topic,
        "other"
    );
    assert_eq!(store.load_subscription("gone").unwrap(), None);
    // Saving replaces the whole record.
    state.ack(4);
    store.save_subscription("w1", &state).unwrap();
    drop(store);
    let mut store = RedbStore::open(&path, unbounded()).unwrap();
    let loaded = store.load_subscription("w1").unwrap().unwrap();
    assert_eq!((loaded.ack_floor, loaded.acked.as_slice()), (5, &[9][..]));
}

#[test]
fn retention_by_count_keeps_the_newest_and_sequences_continue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let mut policy = unbounded();
    policy.topics.insert(
        "small".into(),
        Retention {
            max_count: Some(3),
            ..policy.default
        },
    );
    {
        let mut store = RedbStore::open(&path, policy.clone()).unwrap();
        for i in 1..=10 {
            assert_eq!(store.append("small", i, raw("1")).unwrap(), i);
            store.append("big", i, raw("1")).unwrap();
        }
        assert_eq!(sequences(&read_all(&mut store, "small")), [8, 9, 10]);
        assert_eq!(
            read_all(&mut store, "big").len(),
            10,
            "the override is per topic"
        );
        assert_eq!(store.retained("small").unwrap(), (3, 3));
    }
    let mut store = RedbStore::open(&path, policy).unwrap();
    assert_eq!(store.last_sequence("small").unwrap(), 10);
    assert_eq!(store.append("small", 11, raw("2")).unwrap(), 11);
    assert_eq!(sequences(&read_all(&mut store, "small")), [9, 10, 11]);
}

#[test]
fn retention_by_bytes_drops_the_oldest_but_keeps_one_oversized_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = unbounded();
    policy.default.max_bytes = Some(10);
    let mut store = RedbStore::open(dir.path().join("s.redb"), policy).unwrap();
    store.append("t", 1, raw("\"1234\"")).unwrap(); // 6 bytes
    store.append("t", 2, raw("\"12\"")).unwrap(); // 4 bytes: 10 in all, kept
    assert_eq!(sequences(&read_all(&mut store, "t")), [1, 2]);
    store.append("t", 3, raw("1")).unwrap(); // 11: the oldest goes
    assert_eq!(sequences(&read_all(&mut store, "t")), [2, 3]);
    assert_eq!(store.retained("t").unwrap(), (2, 5));
    store
        .append("t", 4, raw("\"a long string, over ten\""))
        .unwrap();
    assert_eq!(
        sequences(&read_all(&mut store, "t")),
        [4],
        "alone, though too big"
    );
    assert_eq!(store.append("t", 5, raw("2")).unwrap(), 5);
    assert_eq!(sequences(&read_all(&mut store, "t")), [5]);
}

#[test]
fn retention_by_age_on_expire() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let mut policy = unbounded();
    policy.default.max_age = Some(Duration::from_secs(10));
    policy.topics.insert("forever".into(), unbounded().default);
    {
        let mut store = RedbStore::open(&path, policy.clone()).unwrap();
        for (i, ts) in [1_000u64, 5_000, 9_000, 12_000].into_iter().enumerate() {
            store.append("t", ts, raw(&i.to_string())).unwrap();
            store.append("forever", ts, raw("0")).unwrap();
        }
        store.expire(15_000).unwrap(); // cutoff 5_000: only 1_000 is older
        assert_eq!(sequences(&read_all(&mut store, "t")), [2, 3, 4]);
        store.expire(15_000).unwrap();
        assert_eq!(
            sequences(&read_all(&mut store, "t")),
            [2, 3, 4],
            "idempotent"
        );
    }
    let mut store = RedbStore::open(&path, policy).unwrap();
    store.expire(21_000).unwrap(); // cutoff 11_000
    assert_eq!(sequences(&read_all(&mut store, "t")), [4]);
    assert_eq!(store.retained("t").unwrap(), (1, 1));
    store.expire(u64::MAX).unwrap();
    assert!(read_all(&mut store, "t").is_empty());
    assert_eq!(store.retained("t").unwrap(), (0, 0));
    assert_eq!(read_all(&mut store, "forever").len(), 4);
    assert_eq!(store.append("t", 30_000, raw("9")).unwrap(), 5);
}

#[test]
fn a_second_open_of_the_same_file_is_refused_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let _store = RedbStore::open(&path, unbounded()).unwrap();
    let err = RedbStore::open(&path, unbounded()).unwrap_err();
    assert!(err.to_string().contains("redb store"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.redb");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    assert!(RedbStore::open(&path, unbounded()).is_err());
}

fn listed(store: &mut RedbStore) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    store.subscriptions(&mut out).unwrap();
    out.sort();
    out
}

#[test]
fn subscriptions_are_listed_with_their_last_seen_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let mut store = RedbStore::open(&path, unbounded()).unwrap();
        assert!(listed(&mut store).is_empty());
        let mut state = SubscriptionState::new("t", 0);
        state.last_seen_ms = 1_000;
        store.save_subscription("a", &state).unwrap();
        state.last_seen_ms = 2_000;
        store.save_subscription("b", &state).unwrap();
        store.save_subscription("c", &state).unwrap();
        store.delete_subscription("c").unwrap();
    }
    let mut store = RedbStore::open(&path, unbounded()).unwrap();
    assert_eq!(
        listed(&mut store),
        [("a".to_owned(), 1_000), ("b".to_owned(), 2_000)]
    );
    assert_eq!(
        store.load_subscription("b").unwrap().unwrap().last_seen_ms,
        2_000
    );
}

#[test]
fn a_file_from_before_last_seen_times_opens_and_its_records_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.redb");
    {
        // The layout of a file written before `subscription_seen` existed.
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let old: redb::TableDefinition<&str, (&str, u64, &[u8])> =
            redb::TableDefinition::new("subscriptions");
        let acked: Vec<u8> = 7u64.to_le_bytes().to_vec();
        txn.open_table(old)
            .unwrap()
            .insert("w", ("t", 5, acked.as_slice()))
            .unwrap();
        txn.commit().unwrap();
    }
    let mut store = RedbStore::open(&path, unbounded()).unwrap();
    let state = store.load_subscription("w").unwrap().unwrap();
    assert_eq!(
        (
            state.topic.as_str(),
            state.ack_floor,
            state.acked.as_slice(),
            state.last_seen_ms
        ),
        ("t", 5, &[7][..], 0)
    );
    assert_eq!(listed(&mut store), [("w".to_owned(), 0)]);
}

#[test]
fn topics_and_total_bytes_are_bounded_and_sequences_still_grow() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bounded.redb");
    // Each message: a 2-byte topic name and 100 bytes of data.
    let data = format!("\"{}\"", "x".repeat(98));
    {
        let mut store = RedbStore::open(&path, RetentionPolicy::default())
            .unwrap()
            .with_max_topics(3)
            .with_max_total_bytes(1_000);
        assert_eq!(store.append("t0", 0, raw(&data)).unwrap(), 1);
        assert_eq!(store.append("t0", 0, raw(&data)).unwrap(), 2);
        // Ever new topics: at most 3 kept, the least recently appended forgotten first.
        for i in 1..200 {
            store
                .append(&format!("t{}", i % 50), 0, raw(&data))
                .unwrap();
            assert!(store.topic_count() <= 3, "{} topics", store.topic_count());
            assert!(
                store.total_bytes() <= 1_000,
                "{} bytes",
                store.total_bytes()
            );
        }
        assert_eq!(store.topic_count(), 3);
        // Ten messages of one topic fill the total; the eleventh pushes out others.
        for _ in 0..12 {
            store.append("t9", 0, raw(&data)).unwrap();
            assert!(
                store.total_bytes() <= 1_000,
                "{} bytes",
                store.total_bytes()
            );
        }
        assert_eq!(store.topic_count(), 1, "the other topics went to make room");
        assert_eq!(
            read_all(&mut store, "t9").len(),
            9,
            "9 × 102 bytes fit in 1,000"
        );
    }
    // The bookkeeping survives reopening, and sequences continue above every forgotten one.
    let mut store = RedbStore::open(&path, RetentionPolicy::default())
        .unwrap()
        .with_max_topics(3)
        .with_max_total_bytes(1_000);
    assert_eq!((store.topic_count(), store.total_bytes()), (1, 9 * 102));
    let t9 = store.last_sequence("t9").unwrap();
    let forgotten = store.last_sequence("t0").unwrap();
    assert!(
        forgotten >= 4,
        "a forgotten topic reports the highest forgotten sequence"
    );
    assert!(read_all(&mut store, "t0").is_empty());
    assert_eq!(store.append("t0", 0, raw("1")).unwrap(), forgotten + 1);
    assert_eq!(store.append("t9", 0, raw("1")).unwrap(), t9 + 1);
    // A message larger than the total is kept, alone.
    let big = format!("\"{}\"", "y".repeat(5_000));
    store.append("big", 0, raw(&big)).unwrap();
    assert_eq!(store.topic_count(), 1);
    assert_eq!(read_all(&mut store, "big").len(), 1);
}

#[test]
fn expiry_keeps_the_total_right() {
    let dir = tempfile::tempdir().unwrap();
    let policy = RetentionPolicy {
        default: Retention {
            max_age: Some(Duration::from_millis(10)),
            ..Retention::default()
        },
        topics: Default::default(),
    };
    let mut store = RedbStore::open(dir.path().join("s.redb"), policy).unwrap();
    store.append("a", 0, raw("\"12345\"")).unwrap();
    store.append("bb", 100, raw("\"12345\"")).unwrap();
    assert_eq!(store.total_bytes(), 8 + 9);
    store.expire(50).unwrap();
    assert_eq!(store.total_bytes(), 9);
}
