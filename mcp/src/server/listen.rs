//! `subscriptions/listen` (2026-07-28): the open listen requests, each with the filter the
//! server agreed to, and the delivery of change notifications to the ones that asked for
//! them, tagged with the subscription id.
//!
//! A listen request stays pending while its stream is open: its notifications go out on
//! behalf of the request (on its own response stream over Streamable HTTP, tagged on
//! stdio). It ends when the client cancels it (closes the stream, or
//! `notifications/cancelled`), or when the server ends every subscription
//! ([`Server::end_subscriptions`](super::Server::end_subscriptions)), which answers it
//! with a `complete` result.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Waker};

use serde_json::{json, Map, Value};

use super::context::Peer;
use crate::types::{RequestId, SubscriptionFilter};

/// One open `subscriptions/listen` request.
pub(crate) struct Listener {
    key: u64,
    /// The listen request's id: every notification on the stream carries it.
    pub id: RequestId,
    /// What the server agreed to send.
    pub filter: SubscriptionFilter,
    host: Arc<dyn Peer>,
    end: Mutex<End>,
}

#[derive(Default)]
struct End {
    ended: bool,
    waker: Option<Waker>,
}

impl Listener {
    fn end(&self) -> MutexGuard<'_, End> {
        self.end.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `method` with `params` (an object) on the stream, tagged with the
    /// subscription id. The notification is queued at once; nobody waits for it.
    pub fn send(&self, method: &str, mut params: Map<String, Value>) -> bool {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                "io.modelcontextprotocol/subscriptionId".into(),
                json!(self.id),
            );
        }
        let host = Arc::clone(&self.host);
        // The adapters queue a notification when its future is made.
        drop(host.notify(method, crate::raw_json(&Value::Object(params))));
        !host.is_cancelled()
    }

    /// Resolves when the server ends the subscription.
    pub fn ended(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let listener = Arc::clone(self);
        std::future::poll_fn(move |cx: &mut TaskContext<'_>| {
            let mut end = listener.end();
            if end.ended {
                Poll::Ready(())
            } else {
                end.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

/// The open listen requests of one server.
#[derive(Default)]
pub(crate) struct Listeners {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: Vec<Arc<Listener>>,
}

/// Takes its listener out of the server's list when dropped: on every way the listen
/// request ends (answered, cancelled, or its future dropped by the driver).
pub(crate) struct Registered<'a> {
    listeners: &'a Listeners,
    pub listener: Arc<Listener>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let key = self.listener.key;
        self.listeners.lock().open.retain(|l| l.key != key);
    }
}

impl Listeners {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a listener; it stays until the returned guard is dropped.
    pub fn register(
        &self,
        id: RequestId,
        filter: SubscriptionFilter,
        host: Arc<dyn Peer>,
    ) -> Registered<'_> {
        let mut inner = self.lock();
        inner.next += 1;
        let listener = Arc::new(Listener {
            key: inner.next,
            id,
            filter,
            host,
            end: Mutex::new(End::default()),
        });
        inner.open.push(Arc::clone(&listener));
        Registered {
            listeners: self,
            listener,
        }
    }

    /// Sends `method` with `params` to every listener `want` accepts; how many it reached.
    pub fn deliver(
        &self,
        method: &str,
        params: &Map<String, Value>,
        want: impl Fn(&SubscriptionFilter) -> bool,
    ) -> usize {
        // From a snapshot, not under the lock: sending may run application code.
        let open: Vec<Arc<Listener>> = self.lock().open.clone();
        open.iter()
            .filter(|l| want(&l.filter))
            .filter(|l| l.send(method, params.clone()))
            .count()
    }

    /// Calls `f` with every open listener; the sum of what it returns.
    pub fn each(&self, f: impl Fn(&Listener) -> usize) -> usize {
        let open: Vec<Arc<Listener>> = self.lock().open.clone();
        open.iter().map(|l| f(l)).sum()
    }

    /// Ends every open subscription (each listen request is then answered); how many.
    pub fn end_all(&self) -> usize {
        let open: Vec<Arc<Listener>> = self.lock().open.clone();
        for listener in &open {
            let mut end = listener.end();
            end.ended = true;
            if let Some(waker) = end.waker.take() {
                waker.wake();
            }
        }
        open.len()
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }
}

/// Waits for the first of two futures; true when `a` finished first.
pub(crate) async fn first_of(
    a: impl Future<Output = ()> + Send,
    b: impl Future<Output = ()> + Send,
) -> bool {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    std::future::poll_fn(move |cx| {
        if a.as_mut().poll(cx).is_ready() {
            Poll::Ready(true)
        } else if b.as_mut().poll(cx).is_ready() {
            Poll::Ready(false)
        } else {
            Poll::Pending
        }
    })
    .await
}
