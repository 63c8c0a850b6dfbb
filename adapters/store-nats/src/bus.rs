//! [`NatsBus`]: ephemeral pub/sub between server nodes over core NATS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use futures::StreamExt;
use sansrpc::RawValue;

use crate::runtime::Runtime;
use crate::{check_topic, nats, Error, DEFAULT_TIMEOUT, LOG_PREFIX, PUB_PREFIX};

/// Something another node (or this node's store) did, for the local pub/sub hub: the core's
/// [`NodeEvent`](sansrpc_pubsub::hub::NodeEvent), which `sansrpc_pubsub::PubSub::join_cluster`
/// applies.
pub use sansrpc_pubsub::hub::NodeEvent as BusEvent;

/// A connection to NATS that carries ephemeral publishes between nodes and tells of
/// persistent appends made by any node.
///
/// Events arrive on the bounded receiver returned by [`connect`](Self::connect); when it is
/// full, further events are dropped and counted ([`dropped`](Self::dropped)), as core NATS
/// pub/sub is at most once anyway. Dropping the bus ends the receiver.
pub struct NatsBus {
    runtime: Runtime,
    client: async_nats::Client,
    dropped: Arc<AtomicU64>,
}

impl std::fmt::Debug for NatsBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBus")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl NatsBus {
    /// Connects to the NATS server at `url` and subscribes to every node's publishes and
    /// appends; at most `capacity` events wait in the receiver.
    pub fn connect(url: &str, capacity: usize) -> Result<(Self, mpsc::Receiver<BusEvent>), Error> {
        let runtime = Runtime::start("sansrpc-nats-bus", DEFAULT_TIMEOUT)?;
        let url = url.to_owned();
        let (client, published, appended) = runtime.run(async move {
            // no_echo: our own publishes are delivered locally by the caller, not twice.
            let client = async_nats::ConnectOptions::new()
                .name("sansrpc bus")
                .no_echo()
                .connect(url)
                .await
                .map_err(nats("connect"))?;
            let published = client
                .subscribe(format!("{PUB_PREFIX}>"))
                .await
                .map_err(nats("subscribe"))?;
            let appended = client
                .subscribe(format!("{LOG_PREFIX}>"))
                .await
                .map_err(nats("subscribe"))?;
            // The subscriptions are registered at the server once a round trip returned.
            round_trip(&client).await?;
            Ok((client, published, appended))
        })?;
        let (tx, rx) = mpsc::sync_channel(capacity.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx2, dropped2) = (tx.clone(), dropped.clone());
        runtime.spawn(forward(published, tx, dropped.clone(), |topic, payload| {
            let data = String::from_utf8(payload).ok()?;
            Some(BusEvent::Published {
                topic,
                data: RawValue::from_string(data).ok()?,
            })
        }));
        runtime.spawn(forward(appended, tx2, dropped2, |topic, _| {
            Some(BusEvent::Appended { topic })
        }));
        Ok((
            NatsBus {
                runtime,
                client,
                dropped,
            },
            rx,
        ))
    }

    /// Publishes `data` to `topic` for the subscribers on every other node. Returns once the
    /// message is handed to the connection (core NATS: at most once, no acknowledgement).
    pub fn publish(&self, topic: &str, data: &RawValue) -> Result<(), Error> {
        check_topic(topic)?;
        let client = self.client.clone();
        let subject = format!("{PUB_PREFIX}{topic}");
        let payload = data.get().to_owned();
        self.runtime.run(async move {
            client
                .publish(subject, payload.into())
                .await
                .map_err(nats("publish"))
        })
    }

    /// Waits until the NATS server processed everything published so far (and so passed it
    /// on to every subscribed node).
    pub fn flush(&self) -> Result<(), Error> {
        let client = self.client.clone();
        self.runtime.run(async move { round_trip(&client).await })
    }

    /// How many events were dropped because the receiver was full or they did not decode.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A round trip to the server: it handles a connection's operations in order, so when the
/// answer comes back it has processed everything this client sent before. (The client's own
/// `flush` only writes the socket.) A request to a fresh inbox nobody listens on is
/// answered by the server itself with "no responders".
pub(crate) async fn round_trip(client: &async_nats::Client) -> Result<(), Error> {
    match client.request(client.new_inbox(), Vec::new().into()).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == async_nats::RequestErrorKind::NoResponders => Ok(()),
        Err(e) => Err(nats("round trip")(e)),
    }
}

async fn forward(
    mut subscriber: async_nats::Subscriber,
    tx: mpsc::SyncSender<BusEvent>,
    dropped: Arc<AtomicU64>,
    event: impl Fn(String, Vec<u8>) -> Option<BusEvent>,
) {
    while let Some(message) = subscriber.next().await {
        let prefix_len = if message.subject.starts_with(PUB_PREFIX) {
            PUB_PREFIX.len()
        } else {
            LOG_PREFIX.len()
        };
        let topic = message.subject[prefix_len..].to_owned();
        match event(topic, message.payload.to_vec()) {
            Some(event) => match tx.try_send(event) {
                Ok(()) => {}
                Err(mpsc::TrySendError::Full(_)) => {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(mpsc::TrySendError::Disconnected(_)) => return,
            },
            None => {
                dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
