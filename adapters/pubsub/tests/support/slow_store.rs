//! A store that takes its time: the in-memory store sleeping `delay` in every operation, as
//! a disk or a remote store's round trip would. It says it waits (the default of
//! [`Store::waits`]), so `PubSub` performs its operations on the store worker. Shared by the
//! TCP tests and the contention bench.

use std::time::Duration;

use sansrpc::RawValue;
use sansrpc_pubsub::store::{MemoryStore, Store, StoredMessage, SubscriptionState};

pub struct Slow {
    pub inner: MemoryStore,
    pub delay: Duration,
}

impl Slow {
    fn wait(&self) {
        std::thread::sleep(self.delay);
    }
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl Store for Slow {
    type Error = String;
    fn append(&mut self, topic: &str, ts: u64, data: &RawValue) -> Result<u64, String> {
        self.wait();
        self.inner.append(topic, ts, data).map_err(text)
    }
    fn last_sequence(&mut self, topic: &str) -> Result<u64, String> {
        self.wait();
        self.inner.last_sequence(topic).map_err(text)
    }
    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), String> {
        self.wait();
        self.inner.read(topic, after, max, out).map_err(text)
    }
    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, String> {
        self.wait();
        self.inner.load_subscription(id).map_err(text)
    }
    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), String> {
        self.wait();
        self.inner.save_subscription(id, state).map_err(text)
    }
    fn delete_subscription(&mut self, id: &str) -> Result<(), String> {
        self.wait();
        self.inner.delete_subscription(id).map_err(text)
    }
    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), String> {
        self.inner.subscriptions(out).map_err(text)
    }
    fn expire(&mut self, now_ms: u64) -> Result<(), String> {
        self.inner.expire(now_ms).map_err(text)
    }
}
