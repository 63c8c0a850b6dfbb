//! Pub/sub for `sansrpc serve`: the hub (sansrpc-pubsub), its flags, and the `publish`
//! method.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sansrpc::error::code;
use sansrpc::ext::pubsub::{HubConfig, METHODS};
use sansrpc::ext::store::{MemoryStore, Retention, RetentionPolicy};
use sansrpc::router::{MethodDoc, Router};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_pubsub::PubSub;
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
}

/// The hub `serve` runs.
pub type Hub = Arc<PubSub<MemoryStore>>;

/// A duration such as `90`, `90s`, `15m`, `12h` or `7d`.
fn parse_age(text: &str) -> Fallible<Duration> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("--retention-max-age {text:?}: expected e.g. 3600, 90m or 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("--retention-max-age {text:?}: the unit is s, m, h or d").into()),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

impl PubSubArgs {
    /// The retention the flags ask for.
    fn retention(&self) -> Fallible<Retention> {
        let mut r = Retention::default();
        let nonzero = |n: u64| (n > 0).then_some(n);
        if let Some(age) = &self.retention_max_age {
            r.max_age = Some(parse_age(age)?).filter(|d| !d.is_zero());
        }
        if let Some(n) = self.retention_max_count {
            r.max_count = nonzero(n);
        }
        if let Some(n) = self.retention_max_bytes {
            r.max_bytes = nonzero(n);
        }
        Ok(r)
    }

    /// Starts the hub, or says why not.
    pub fn start(&self) -> Fallible<Hub> {
        if let Some(path) = &self.store {
            return Err(format!(
                "--store {}: the embedded durable store is not built into this sansrpc yet; \
                 leave --store out to keep persistent subscriptions in memory",
                path.display()
            )
            .into());
        }
        if let Some(url) = &self.nats {
            return Err(format!(
                "--nats {url}: the NATS JetStream store is not built into this sansrpc yet; \
                 leave --nats out to keep persistent subscriptions in memory"
            )
            .into());
        }
        let policy = RetentionPolicy {
            default: self.retention()?,
            ..RetentionPolicy::default()
        };
        let reporter = Box::new(|r: &sansrpc::ext::pubsub::Report| tracing::warn!("{r}"));
        Ok(Arc::new(PubSub::with_reporter(
            MemoryStore::new(policy),
            HubConfig::default(),
            reporter,
        )))
    }
}

#[derive(Deserialize)]
struct PublishParams {
    topic: String,
    data: Box<serde_json::value::RawValue>,
}

/// Registers `publish` (`{"topic": .., "data": ..}` → `{"delivered": n, "sequence_id": s}`).
/// With `persistent_connections` false (HTTP: no server push), the subscription methods
/// answer that they need a connection that stays open.
pub fn register(router: &mut Router, hub: &Hub, persistent_connections: bool) {
    let hub = Arc::clone(hub);
    let decoder = sansrpc::method::ParamsDecoder::<PublishParams>::new();
    let registered = router.raw_method("publish", move |params, out| {
        let p = decoder.decode(params)?;
        let data = RawValue::from_json(p.data.get()).map_err(|_| ErrorObject::invalid_params())?;
        let published = hub
            .publish(&p.topic, data)
            .map_err(|e| e.to_error_object())?;
        let sequence = published
            .sequence
            .map_or_else(|| "null".to_owned(), |s| s.to_string());
        out.extend_from_slice(
            format!(
                r#"{{"delivered":{},"sequence_id":{sequence}}}"#,
                published.delivered
            )
            .as_bytes(),
        );
        Ok(())
    });
    registered.expect("publish registers once");
    let _ = router.document(
        "publish",
        MethodDoc::summary(
            "{topic, data}: rpc.notification to every matching subscriber, and appended for \
             persistent subscribers; answers {delivered, sequence_id}",
        ),
    );
    if !persistent_connections {
        for name in METHODS {
            let refused = router.extension(name, |_, _| {
                Err(ErrorObject::new(
                    code::METHOD_NOT_FOUND,
                    "Subscriptions need a connection that stays open (WebSocket, TCP, Unix \
                     socket or stdio); HTTP cannot push notifications",
                ))
            });
            refused.expect("the pub/sub names register once");
        }
    }
}
