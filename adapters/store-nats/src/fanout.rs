//! What every fan-out over core NATS shares ([`McpFanout`](crate::McpFanout),
//! [`A2aFanout`](crate::A2aFanout)): one connection with `no_echo`, one subscription to
//! `<subject>.>`, a bounded queue of what to publish (past it: dropped, counted, and a
//! `resync` published), and the resyncs after an outage or a slow-consumer drop. The
//! protocol's side ([`Inbox`]) says what a message heard means and how to resync.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use async_nats::connection::State;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::bus::round_trip;
use crate::runtime::Runtime;
use crate::{nats, Error, DEFAULT_TIMEOUT};

/// The suffix of the subject that asks every process to resync.
const RESYNC: &str = "resync";

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) dropped: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    /// Something was dropped since the last `resync` publish.
    lost: AtomicBool,
}

/// Where this process's messages go: the publishing task's queue. Holds no runtime, so
/// whoever holds it does not keep the link alive.
pub(crate) struct Outbox {
    client: async_nats::Client,
    queue: mpsc::Sender<(&'static str, Vec<u8>)>,
    counters: Arc<Counters>,
}

impl Outbox {
    /// Queues `payload` for `<subject>.<suffix>`; never waits. Dropped (and counted) while
    /// disconnected or past the queue's bound.
    pub(crate) fn send(&self, suffix: &'static str, payload: Vec<u8>) {
        if self.client.connection_state() != State::Connected
            || self.queue.try_send((suffix, payload)).is_err()
        {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            self.counters.lost.store(true, Ordering::Relaxed);
        }
    }
}

/// The protocol's side of a link: what the others' messages do here.
pub(crate) trait Inbox: Send + Sync + 'static {
    /// A message heard on `<subject>.<suffix>` (not `resync`); true when it was delivered,
    /// false when it is not one this version understands (ignored).
    fn heard(&self, suffix: &str, payload: &[u8]) -> bool;

    /// This process may have missed messages: every local listener is told.
    fn resync(&self);
}

/// One fan-out's connection and tasks; dropping it stops them.
pub(crate) struct Link {
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) counters: Arc<Counters>,
    client: async_nats::Client,
    subject: String,
    // Last: dropping it stops the tasks (and their clones of the inbox).
    runtime: Runtime,
}

impl Link {
    /// Connects to `url` as `name`, subscribes to `<subject>.>` for `inbox`, and starts the
    /// publishing task (its queue `queue` long). Returns once the subscription is
    /// registered at the server.
    pub(crate) fn connect(
        url: &str,
        name: &'static str,
        subject: String,
        queue: usize,
        inbox: Arc<dyn Inbox>,
    ) -> Result<Link, Error> {
        let runtime = Runtime::start(name, DEFAULT_TIMEOUT)?;
        let url = url.to_owned();
        let (events_tx, events) = mpsc::unbounded_channel();
        let wildcard = format!("{subject}.>");
        let (client, heard) = runtime.run(async move {
            let client = async_nats::ConnectOptions::new()
                .name(name)
                .no_echo()
                .event_callback(move |event| {
                    let _ = events_tx.send(event);
                    async {}
                })
                .connect(url)
                .await
                .map_err(nats("connect"))?;
            let heard = client
                .subscribe(wildcard)
                .await
                .map_err(nats("subscribe"))?;
            round_trip(&client).await?;
            Ok((client, heard))
        })?;
        let counters = Arc::new(Counters::default());
        let (tx, queued) = mpsc::channel(queue.max(1));
        let outbox = Arc::new(Outbox {
            client: client.clone(),
            queue: tx,
            counters: counters.clone(),
        });
        let prefix = format!("{subject}.");
        runtime.spawn(publish(
            client.clone(),
            prefix.clone(),
            queued,
            counters.clone(),
        ));
        runtime.spawn(receive(
            heard,
            prefix.clone(),
            inbox.clone(),
            counters.clone(),
        ));
        runtime.spawn(watch(
            client.clone(),
            events,
            prefix,
            inbox,
            counters.clone(),
        ));
        Ok(Link {
            outbox,
            counters,
            client,
            subject,
            runtime,
        })
    }

    /// The subjects' common prefix.
    pub(crate) fn subject(&self) -> &str {
        &self.subject
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.client.connection_state() == State::Connected
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn received(&self) -> u64 {
        self.counters.received.load(Ordering::Relaxed)
    }

    pub(crate) fn resyncs(&self) -> u64 {
        self.counters.resyncs.load(Ordering::Relaxed)
    }

    /// Waits until the NATS server processed everything published so far.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        let client = self.client.clone();
        self.runtime.run(async move { round_trip(&client).await })
    }
}

/// Publishes the queued messages in order; after a loss, asks every process to resync.
async fn publish(
    client: async_nats::Client,
    prefix: String,
    mut queued: mpsc::Receiver<(&'static str, Vec<u8>)>,
    counters: Arc<Counters>,
) {
    while let Some((suffix, payload)) = queued.recv().await {
        if client
            .publish(format!("{prefix}{suffix}"), payload.into())
            .await
            .is_err()
        {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            counters.lost.store(true, Ordering::Relaxed);
        }
        // Dropped for a full queue: the others may have missed something.
        if client.connection_state() == State::Connected
            && counters.lost.swap(false, Ordering::Relaxed)
        {
            let _ = client
                .publish(format!("{prefix}{RESYNC}"), "{}".into())
                .await;
        }
    }
}

/// Delivers what the other processes publish to this process's inbox.
async fn receive(
    mut heard: async_nats::Subscriber,
    prefix: String,
    inbox: Arc<dyn Inbox>,
    counters: Arc<Counters>,
) {
    while let Some(message) = heard.next().await {
        let Some(suffix) = message.subject.strip_prefix(prefix.as_str()) else {
            continue;
        };
        if suffix == RESYNC {
            inbox.resync();
            counters.resyncs.fetch_add(1, Ordering::Relaxed);
        } else if inbox.heard(suffix, &message.payload) {
            counters.received.fetch_add(1, Ordering::Relaxed);
        }
        // Otherwise not ours to understand (another version's subject, a bad payload).
    }
}

/// Follows the connection: after a reconnection (subscription registered again), asks the
/// others to resync and resyncs locally; after NATS dropped messages for us, resyncs.
async fn watch(
    client: async_nats::Client,
    mut events: mpsc::UnboundedReceiver<async_nats::Event>,
    prefix: String,
    inbox: Arc<dyn Inbox>,
    counters: Arc<Counters>,
) {
    let mut was_down = false;
    while let Some(event) = events.recv().await {
        match event {
            async_nats::Event::Disconnected => was_down = true,
            async_nats::Event::Connected if was_down => {
                was_down = false;
                // The client re-subscribes before it takes further commands: once this
                // round trip returns, the server sends us every later publish.
                if round_trip(&client).await.is_err() {
                    continue;
                }
                // Whatever this process dropped while down: the others resync.
                counters.lost.store(false, Ordering::Relaxed);
                let _ = client
                    .publish(format!("{prefix}{RESYNC}"), "{}".into())
                    .await;
                // Whatever the others published while we were down: ours resync.
                inbox.resync();
                counters.resyncs.fetch_add(1, Ordering::Relaxed);
            }
            async_nats::Event::SlowConsumer(_) => {
                inbox.resync();
                counters.resyncs.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}
