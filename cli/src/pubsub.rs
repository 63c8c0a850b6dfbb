//! Pub/sub for `sansrpc serve`: the hub (sansrpc-pubsub), its flags, and the `publish`
//! method.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sansrpc::router::{MethodDoc, Router};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_pubsub::hub::HubConfig;
use sansrpc_pubsub::store::{self, MemoryStore, Retention, RetentionPolicy};
use sansrpc_pubsub::PubSub;
use sansrpc_store_nats::{NatsBus, NatsStore};
use sansrpc_store_redb::RedbStore;
use serde::Deserialize;

use crate::Fallible;

/// The pub/sub flags of `serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct PubSubArgs {
    /// Keep persistent subscriptions and their messages in this file (embedded store).
    /// Without it they live in memory and end with the process.
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
    /// Keep them in NATS JetStream at this URL (for several servers sharing subscribers).
    #[arg(long, value_name = "URL", conflicts_with = "store")]
    nats: Option<String>,
    /// Drop persisted messages older than this: seconds, or a number with s, m, h or d
    /// (default 1d; 0 keeps them regardless of age).
    #[arg(long, value_name = "AGE")]
    retention_max_age: Option<String>,
    /// Keep at most this many messages per topic (default 10000; 0: no bound).
    #[arg(long, value_name = "N")]
    retention_max_count: Option<u64>,
    /// Keep at most this many bytes of message data per topic (default 10485760; 0: no
    /// bound).
    #[arg(long, value_name = "BYTES")]
    retention_max_bytes: Option<u64>,
    /// In memory or with --store: keep at most this many bytes of messages across all
    /// topics together, least recently published topics forgotten first (default 268435456,
    /// 256 MiB, in memory; 1073741824, 1 GiB, on disk with --store; per-topic retention
    /// alone multiplies out to 10,000 topics × 10 MiB). With --nats the NATS cluster's
    /// JetStream limits bound it.
    #[arg(
        long,
        value_name = "BYTES",
        alias = "memory-max-bytes",
        conflicts_with = "nats"
    )]
    max_total_bytes: Option<u64>,
    /// In memory or with --store: keep at most this many topics, least recently published
    /// forgotten first (default 10000).
    #[arg(long, value_name = "N", conflicts_with = "nats")]
    max_topics: Option<usize>,
    /// Keep at most this many persistent subscription ids (default 10000; 0: no bound);
    /// subscribing with a new id beyond it is refused with -32012, a known id is always
    /// served.
    #[arg(long, value_name = "N")]
    max_persistent_ids: Option<usize>,
    /// Delete a persistent subscription id that no connection has had for this long, with
    /// its acknowledged state: seconds, or a number with s, m, h or d (default 1d; 0 keeps
    /// ids until unsubscribed).
    #[arg(long, value_name = "AGE")]
    persistent_idle_timeout: Option<String>,
}

/// The hub `serve` runs (with `--nats`, joined to the other servers through the bus).
pub type Hub = Arc<PubSub>;

/// A duration such as `90`, `90s`, `15m`, `12h` or `7d`, given to `flag`.
fn parse_age(flag: &str, text: &str) -> Fallible<Duration> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{flag} {text:?}: expected e.g. 3600, 90m or 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{flag} {text:?}: the unit is s, m, h or d").into()),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

impl PubSubArgs {
    /// The retention the flags ask for.
    fn retention(&self) -> Fallible<Retention> {
        let mut r = Retention::default();
        let nonzero = |n: u64| (n > 0).then_some(n);
        if let Some(age) = &self.retention_max_age {
            r.max_age = Some(parse_age("--retention-max-age", age)?).filter(|d| !d.is_zero());
        }
        if let Some(n) = self.retention_max_count {
            r.max_count = nonzero(n);
        }
        if let Some(n) = self.retention_max_bytes {
            r.max_bytes = nonzero(n);
        }
        Ok(r)
    }

    /// The hub config the flags ask for.
    fn hub_config(&self) -> Fallible<HubConfig> {
        let mut config = HubConfig::default();
        if let Some(n) = self.max_persistent_ids {
            config.max_persistent_ids = if n == 0 { usize::MAX } else { n };
        }
        if let Some(age) = &self.persistent_idle_timeout {
            config.persistent_idle_timeout =
                Some(parse_age("--persistent-idle-timeout", age)?).filter(|d| !d.is_zero());
        }
        Ok(config)
    }

    /// Starts the hub over the chosen store, or says why not.
    pub fn start(&self) -> Fallible<Hub> {
        let config = self.hub_config()?;
        let policy = RetentionPolicy {
            default: self.retention()?,
            ..RetentionPolicy::default()
        };
        let (store, bus) = if let Some(path) = &self.store {
            let store = RedbStore::open(path, policy)
                .map_err(|e| format!("--store {}: {e}", path.display()))?
                .with_max_topics(self.max_topics.unwrap_or(RedbStore::DEFAULT_MAX_TOPICS))
                .with_max_total_bytes(
                    self.max_total_bytes
                        .unwrap_or(RedbStore::DEFAULT_MAX_TOTAL_BYTES),
                );
            tracing::info!(path = %path.display(), "persistent subscriptions in the embedded store");
            (store::boxed(store), None)
        } else if let Some(url) = &self.nats {
            let store =
                NatsStore::connect(url, policy).map_err(|e| format!("--nats {url}: {e}"))?;
            let bus = NatsBus::connect(url, 4096).map_err(|e| format!("--nats {url}: {e}"))?;
            tracing::info!(
                url,
                "persistent subscriptions and publishes through NATS JetStream"
            );
            (store::boxed(store), Some(bus))
        } else {
            let store = MemoryStore::new(policy)
                .with_max_topics(self.max_topics.unwrap_or(MemoryStore::DEFAULT_MAX_TOPICS))
                .with_max_total_bytes(
                    self.max_total_bytes
                        .unwrap_or(MemoryStore::DEFAULT_MAX_TOTAL_BYTES),
                );
            (store::boxed(store), None)
        };
        let reporter = Box::new(|r: &sansrpc_pubsub::hub::Report| tracing::warn!("{r}"));
        let pubsub = Arc::new(PubSub::with_reporter(store, config, reporter));
        if let Some((bus, events)) = bus {
            let forward = Box::new(move |topic: &str, data: &RawValue| {
                bus.publish(topic, data).map_err(|e| e.to_string())
            });
            pubsub
                .join_cluster(events, forward)
                .map_err(|e| format!("no thread for the NATS bus: {e}"))?;
        }
        Ok(pubsub)
    }
}

#[derive(Deserialize)]
struct PublishParams {
    topic: String,
    data: Box<serde_json::value::RawValue>,
}

/// Publishes the `publish` method's params: the fan-out happens now; the returned receipt
/// tells when the store has the message.
fn publish(
    hub: &PubSub,
    decoder: &sansrpc::method::ParamsDecoder<PublishParams>,
    params: Option<&RawValue>,
) -> Result<sansrpc_pubsub::Receipt, ErrorObject<'static>> {
    let p = decoder.decode(params)?;
    let data = RawValue::from_json(p.data.get()).map_err(|_| ErrorObject::invalid_params())?;
    hub.publish(&p.topic, data).map_err(|e| e.to_error_object())
}

/// The `publish` answer once the store has the message.
fn published(
    delivered: usize,
    appended: Result<Option<u64>, sansrpc_pubsub::hub::PublishError>,
) -> String {
    let sequence = match appended {
        Ok(Some(s)) => s.to_string(),
        // Failures are the hub's reports already; the fan-out happened.
        Ok(None) | Err(_) => "null".to_owned(),
    };
    format!(r#"{{"delivered":{delivered},"sequence_id":{sequence}}}"#)
}

const PUBLISH_DOC: &str = "{topic, data}: rpc.notification to every matching subscriber, and \
    appended for persistent subscribers; answers {delivered, sequence_id}";

/// Registers `publish` (`{"topic": .., "data": ..}` → `{"delivered": n, "sequence_id": s}`)
/// for a driver that runs handlers where they may block (the blocking adapter's pool): the
/// handler waits for the store. With `persistent_connections` false (HTTP: no server push),
/// the subscription methods answer that they need a connection that stays open.
pub fn register(router: &mut Router, hub: &Hub, persistent_connections: bool) {
    let hub = Arc::clone(hub);
    let decoder = sansrpc::method::ParamsDecoder::<PublishParams>::new();
    let registered = router.raw_method("publish", move |params, out| {
        let receipt = publish(&hub, &decoder, params)?;
        let delivered = receipt.delivered();
        out.extend_from_slice(published(delivered, receipt.wait()).as_bytes());
        Ok(())
    });
    registered.expect("publish registers once");
    let _ = router.document("publish", MethodDoc::summary(PUBLISH_DOC));
    if !persistent_connections {
        sansrpc_pubsub::hub::refuse_subscriptions(router).expect("the pub/sub names register once");
    }
}

/// [`register`] for an async router (tokio): the handler awaits the store instead of
/// blocking a runtime worker.
pub fn register_async(
    router: &mut sansrpc_tokio::AsyncRouter,
    hub: &Hub,
    persistent_connections: bool,
) {
    let hub = Arc::clone(hub);
    let decoder = Arc::new(sansrpc::method::ParamsDecoder::<PublishParams>::new());
    let registered = router.raw_method("publish", move |params| {
        let receipt = publish(&hub, &decoder, params.as_deref());
        async move {
            let receipt = receipt?;
            let delivered = receipt.delivered();
            let answer = published(delivered, receipt.appended().await);
            RawValue::from_string(answer).map_err(|_| ErrorObject::internal_error())
        }
    });
    registered.expect("publish registers once");
    let _ = router
        .sync()
        .document("publish", MethodDoc::summary(PUBLISH_DOC));
    if !persistent_connections {
        sansrpc_pubsub::hub::refuse_subscriptions(router.sync())
            .expect("the pub/sub names register once");
    }
}
