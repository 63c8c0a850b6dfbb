//! Change fan-out across server processes: the hook through which a [`Server`] hands each
//! change it announces to other processes, and what it does with a change heard from one.
//!
//! [`Server::list_changed`] and [`Server::resource_updated`] deliver to this process's
//! listeners (2025-11-25 sessions, `subscriptions/listen` streams), then hand the change to
//! the server's [`Fanout`], if one is set ([`Server::set_fanout`]). The fan-out carries it
//! to the other processes, where it calls [`Server::apply`]: local delivery only, never
//! handed out again, so a change cannot loop. This crate does no I/O; the NATS fan-out is
//! `sansrpc_store_nats::McpFanout` (feature `mcp`).
//!
//! A fan-out that may have lost changes (its connection was down, a queue overflowed) calls
//! [`Server::resync`]: every local listener is told that everything it listens to may have
//! changed, each notification marked with [`RESYNC_META`] in its `_meta`.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{ListKind, Server};

/// A change a server announces: what [`Fanout::announce`] carries to the other processes
/// and [`Server::apply`] delivers there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// [`Server::list_changed`] of this kind.
    ListChanged(ListKind),
    /// [`Server::resource_updated`] of this URI.
    ResourceUpdated(String),
}

/// Carries the changes one server announces to the same server's other processes.
///
/// [`announce`](Self::announce) is called from inside [`Server::list_changed`] and
/// [`Server::resource_updated`], possibly on an async runtime's worker thread: it must not
/// block (queue the change and return).
pub trait Fanout: Send + Sync + 'static {
    /// Hands out one change this process announced (and already delivered locally).
    fn announce(&self, change: &Change);
}

/// The `_meta` key (value `true`) on the notifications of a [`Server::resync`]: the
/// change may not have happened, the server could not tell (a client lists or reads again
/// either way).
pub const RESYNC_META: &str = "dev.sansrpc/resync";

impl ListKind {
    /// The three kinds.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];
}

impl Server {
    /// Sets (or with `None`, removes) where this server hands the changes it announces;
    /// returns the fan-out set before.
    pub fn set_fanout(&self, fanout: Option<Arc<dyn Fanout>>) -> Option<Arc<dyn Fanout>> {
        let mut slot = self.shared.fanout.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *slot, fanout)
    }

    /// Whether a fan-out is set.
    pub fn has_fanout(&self) -> bool {
        self.shared
            .fanout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Hands `change` to the fan-out, if one is set.
    pub(super) fn fan_out(&self, change: Change) {
        // Cloned out of the lock: the fan-out may take its time (it should not).
        let fanout = self
            .shared
            .fanout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(fanout) = fanout {
            fanout.announce(&change);
        }
    }

    /// Delivers a change heard from another process to this process's listeners only, as
    /// [`list_changed`](Self::list_changed) or [`resource_updated`](Self::resource_updated)
    /// would, without handing it to the fan-out again. Returns how many it reached.
    pub fn apply(&self, change: &Change) -> usize {
        match change {
            Change::ListChanged(kind) => self.deliver_list_changed(*kind, false),
            Change::ResourceUpdated(uri) => self.deliver_resource_updated(uri),
        }
    }

    /// Tells every local listener that everything it listens to may have changed: each
    /// session gets the list-changed notification of every list the server announces
    /// changes of and `notifications/resources/updated` for every URI it subscribed to;
    /// each `subscriptions/listen` stream, what its filter asked for. Each is marked with
    /// [`RESYNC_META`]. Local only (not handed to the fan-out). Returns how many
    /// notifications went out.
    ///
    /// A fan-out calls it when it may have missed changes from other processes.
    pub fn resync(&self) -> usize {
        let shared = &self.shared;
        let lists: usize = ListKind::ALL
            .into_iter()
            .map(|kind| self.deliver_list_changed(kind, true))
            .sum();
        if !shared.subscribable() {
            return lists;
        }
        let method = crate::types::notifications::RESOURCES_UPDATED;
        let sessions = shared.sessions.each(|session, notifier| {
            let uris: Vec<String> = session.lock().subscriptions.iter().cloned().collect();
            uris.iter()
                .filter(|uri| notifier.notify(method, Value::Object(resync_params(uri))))
                .count()
        });
        let streams = shared.listeners.each(|listener| {
            let uris = listener.filter.resource_subscriptions.iter().flatten();
            uris.filter(|uri| listener.send(method, resync_params(uri)))
                .count()
        });
        lists + sessions + streams
    }
}

/// `notifications/resources/updated` params for `uri`, marked as a resync.
fn resync_params(uri: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("uri".into(), uri.into());
    params.insert("_meta".into(), json!({ RESYNC_META: true }));
    params
}
