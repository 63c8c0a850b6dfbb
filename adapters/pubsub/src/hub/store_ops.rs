//! The hub's store operations as values: what [`Hub::poll_store`](super::Hub::poll_store)
//! hands out, how any [`Store`] performs one ([`StoreTask::perform`]), and what goes back
//! into [`Hub::handle_store`](super::Hub::handle_store); plus [`InlineHub`], which performs
//! them at once for callers that may block (tests, an in-memory store, a single thread).

use core::ops::{Deref, DerefMut};
use std::boxed::Box;
use std::collections::BTreeSet;
use std::string::{String, ToString};
use std::vec::Vec;

use super::{Handled, Hub, HubConfig, PublishError, Published, SessionId};
use crate::store::{Store, StoredMessage, SubscriptionState};
use sansrpc::error::ErrorObject;
use sansrpc::router::Outcome;
use sansrpc::Instant;
use sansrpc::RawValue;

/// Names one [`StoreTask`]; its result goes back with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreToken(pub(super) u64);

/// One store operation the hub needs; give it back to the hub with its result. Perform
/// tasks in the order [`Hub::poll_store`](super::Hub::poll_store) gives them (one at a time,
/// or at least never reordered), off any lock that connections need; results may come back
/// later, in any order.
#[derive(Debug)]
pub struct StoreTask {
    pub(super) token: StoreToken,
    pub(super) op: StoreOp,
}

impl StoreTask {
    /// The token to give [`Hub::handle_store`](super::Hub::handle_store) with the result.
    pub fn token(&self) -> StoreToken {
        self.token
    }

    /// The operation.
    pub fn op(&self) -> &StoreOp {
        &self.op
    }

    /// Performs the operation on `store`. Blocks as long as the store does: call it where
    /// blocking is allowed (a thread of the store's own, `spawn_blocking`).
    pub fn perform<S: Store + ?Sized>(&self, store: &mut S) -> StoreDone {
        self.op
            .perform(store)
            .unwrap_or_else(|e| StoreDone::Failed(e.to_string()))
    }
}

/// A store operation. Several are composites of [`Store`] calls that the hub needs together
/// (a subscribe loads every id of a batch at once), so that one round trip answers one step.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreOp {
    /// [`Store::append`]: answered with [`StoreDone::Appended`].
    Append {
        /// The exact topic.
        topic: String,
        /// Wall clock, ms since the Unix epoch.
        timestamp_ms: u64,
        /// The message.
        data: Box<RawValue>,
    },
    /// [`Store::read`]: answered with [`StoreDone::Read`].
    Read {
        /// The exact topic.
        topic: String,
        /// Messages with a greater sequence id.
        after: u64,
        /// At most this many.
        max: usize,
    },
    /// For each `(subscription id, topic)`: its stored record, or a fresh one starting at
    /// the topic's last sequence; with `count`, how many records the store holds. Answered
    /// with [`StoreDone::Prepared`].
    Prepare {
        /// Subscription ids and the topics they ask for.
        subscriptions: Vec<(String, String)>,
        /// Also count the records ([`Store::subscriptions`]).
        count: bool,
    },
    /// [`Store::save_subscription`] of each: answered with [`StoreDone::Saved`].
    Save {
        /// Ids and their whole state.
        states: Vec<(String, SubscriptionState)>,
    },
    /// Loads and deletes each id: answered with [`StoreDone::Removed`] (which existed).
    Remove {
        /// Subscription ids.
        ids: Vec<String>,
    },
    /// [`Store::expire`]: answered with [`StoreDone::Saved`].
    Expire {
        /// Wall clock, ms since the Unix epoch.
        now_ms: u64,
    },
    /// Deletes every record not in `keep` last seen `idle_ms` or longer before `now_ms`;
    /// a record without a last-seen time gets `now_ms` as one. Answered with
    /// [`StoreDone::Swept`] (how many records are left).
    Sweep {
        /// Ids this hub has (or is attaching) now.
        keep: BTreeSet<String>,
        /// Wall clock, ms since the Unix epoch.
        now_ms: u64,
        /// The idle timeout in ms.
        idle_ms: u64,
    },
}

/// What performing a [`StoreOp`] gave.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreDone {
    /// The appended message's sequence id.
    Appended(u64),
    /// The messages read, ascending.
    Read(Vec<StoredMessage>),
    /// Per subscription of the [`StoreOp::Prepare`]: the state, and `true` when it is fresh
    /// (no record existed); the record count when asked.
    Prepared {
        /// In the order asked.
        states: Vec<(SubscriptionState, bool)>,
        /// How many records the store holds, when asked.
        count: Option<usize>,
    },
    /// Saved, or expired.
    Saved,
    /// Per id of [`StoreOp::Remove`]: whether a record existed.
    Removed(Vec<bool>),
    /// Records left after a [`StoreOp::Sweep`].
    Swept(usize),
    /// The store failed (reported by the hub; a peer waiting on it gets `-32603`).
    Failed(String),
}

impl StoreOp {
    fn perform<S: Store + ?Sized>(&self, store: &mut S) -> Result<StoreDone, S::Error> {
        Ok(match self {
            StoreOp::Append {
                topic,
                timestamp_ms,
                data,
            } => StoreDone::Appended(store.append(topic, *timestamp_ms, data)?),
            StoreOp::Read { topic, after, max } => {
                let mut out = Vec::new();
                store.read(topic, *after, *max, &mut out)?;
                StoreDone::Read(out)
            }
            StoreOp::Prepare {
                subscriptions,
                count,
            } => {
                let mut states = Vec::with_capacity(subscriptions.len());
                for (id, topic) in subscriptions {
                    states.push(match store.load_subscription(id)? {
                        Some(state) => (state, false),
                        None => (
                            SubscriptionState::new(topic.clone(), store.last_sequence(topic)?),
                            true,
                        ),
                    });
                }
                let count = if *count {
                    let mut ids = Vec::new();
                    store.subscriptions(&mut ids)?;
                    Some(ids.len())
                } else {
                    None
                };
                StoreDone::Prepared { states, count }
            }
            StoreOp::Save { states } => {
                for (id, state) in states {
                    store.save_subscription(id, state)?;
                }
                StoreDone::Saved
            }
            StoreOp::Remove { ids } => {
                let mut existed = Vec::with_capacity(ids.len());
                for id in ids {
                    let stored = store.load_subscription(id)?.is_some();
                    if stored {
                        store.delete_subscription(id)?;
                    }
                    existed.push(stored);
                }
                StoreDone::Removed(existed)
            }
            StoreOp::Expire { now_ms } => {
                store.expire(*now_ms)?;
                StoreDone::Saved
            }
            StoreOp::Sweep {
                keep,
                now_ms,
                idle_ms,
            } => {
                let mut ids = Vec::new();
                store.subscriptions(&mut ids)?;
                let mut kept = ids.len();
                for (id, seen) in ids {
                    if keep.contains(&id) {
                        continue;
                    }
                    if seen == 0 {
                        // Written before last-seen times were stored: idle from now on.
                        match store.load_subscription(&id)? {
                            Some(mut state) => {
                                state.last_seen_ms = *now_ms;
                                store.save_subscription(&id, &state)?;
                            }
                            None => kept -= 1,
                        }
                    } else if seen.saturating_add(*idle_ms) <= *now_ms {
                        store.delete_subscription(&id)?;
                        kept -= 1;
                    }
                }
                StoreDone::Swept(kept)
            }
        })
    }
}

/// A [`Hub`] and its store in one value, every store operation performed at once: the
/// synchronous calling style, for callers that may block on the store (tests, an in-memory
/// store, a program of one thread). Everything of the [`Hub`] is reachable through it;
/// its own methods replace the hub's that need the store.
///
/// ```
/// use sansrpc_pubsub::hub::{HubConfig, InlineHub};
/// use sansrpc_pubsub::store::{MemoryStore, RetentionPolicy};
/// use sansrpc::{Instant, RawValue};
///
/// let mut hub = InlineHub::new(MemoryStore::new(RetentionPolicy::default()), HubConfig::default());
/// let session = hub.connect();
/// let mut out = Vec::new();
/// let params = RawValue::from_json(r#"{"subscription_id":"w","topic":"jobs"}"#).unwrap();
/// let answer = hub.handle(session, "rpc.subscribe.persistent", Some(params), Instant::ZERO, &mut out);
/// assert!(matches!(answer, Some(Ok(()))));
/// let published = hub.publish("jobs", RawValue::from_json("1").unwrap(), Instant::ZERO, 0).unwrap();
/// assert_eq!(published.sequence, Some(1));
/// assert_eq!(hub.pop_outgoing(session).unwrap().method(), "rpc.notification.persistent");
/// ```
#[derive(Debug)]
pub struct InlineHub<S: Store> {
    hub: Hub,
    store: S,
}

impl<S: Store> InlineHub<S> {
    /// A hub over `store`.
    pub fn new(store: S, config: HubConfig) -> Self {
        InlineHub {
            hub: Hub::new(config),
            store,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, mutably.
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// The hub.
    pub fn hub(&mut self) -> &mut Hub {
        &mut self.hub
    }

    /// Performs every store task the hub has queued, feeding the results back.
    pub fn settle(&mut self, now: Instant) {
        while let Some(task) = self.hub.poll_store() {
            let done = task.perform(&mut self.store);
            self.hub.handle_store(task, done, now);
        }
    }

    /// [`Hub::handle`], answered at once.
    pub fn handle(
        &mut self,
        session: SessionId,
        method: &str,
        params: Option<&RawValue>,
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Option<Outcome> {
        let ticket = match self.hub.handle(session, method, params, now, out)? {
            Handled::Answered(outcome) => return Some(outcome),
            Handled::Later(ticket) => ticket,
        };
        self.settle(now);
        Some(match self.hub.take_answer(session, ticket) {
            Some(Ok(json)) => {
                out.extend_from_slice(json.as_bytes());
                Ok(())
            }
            Some(Err(e)) => Err(e),
            None => Err(ErrorObject::internal_error()),
        })
    }

    /// [`Hub::publish`], with the message appended when it returns.
    pub fn publish(
        &mut self,
        topic: &str,
        data: &RawValue,
        now: Instant,
        wall_ms: u64,
    ) -> Result<Published, PublishError> {
        let publishing = self.hub.publish(topic, data, now, wall_ms)?;
        self.settle(now);
        let mut sequence = None;
        if let Some(append) = publishing.append {
            while let Some((id, result)) = self.hub.poll_appended() {
                if id == append {
                    sequence = Some(result?);
                }
            }
        }
        Ok(Published {
            delivered: publishing.delivered,
            sequence,
        })
    }

    /// [`Hub::on_appended`], with the reads done.
    pub fn on_appended(&mut self, topic: &str, now: Instant) {
        self.hub.on_appended(topic, now);
        self.settle(now);
    }

    /// [`Hub::handle_timeout`], with the store work done.
    pub fn handle_timeout(&mut self, now: Instant, wall_ms: u64) {
        self.hub.handle_timeout(now, wall_ms);
        self.settle(now);
    }

    /// [`Hub::disconnect`], with the saves done.
    pub fn disconnect(&mut self, session: SessionId) {
        self.hub.disconnect(session);
        self.settle(Instant::ZERO);
    }
}

impl<S: Store> Deref for InlineHub<S> {
    type Target = Hub;
    fn deref(&self) -> &Hub {
        &self.hub
    }
}

impl<S: Store> DerefMut for InlineHub<S> {
    fn deref_mut(&mut self) -> &mut Hub {
        &mut self.hub
    }
}
