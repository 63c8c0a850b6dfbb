//! NATS JetStream behind sansrpc persistent subscriptions ([`NatsStore`]), and a NATS bus
//! that carries ephemeral pub/sub between server nodes ([`NatsBus`]).
//!
//! Several sansrpc servers on one NATS system share one log and one set of subscription
//! records, so a persistent subscriber may reconnect to any of them and resume where it
//! acknowledged.
//!
//! ```no_run
//! use sansrpc_pubsub::store::{RetentionPolicy, Store};
//! use sansrpc::RawValue;
//! use sansrpc_store_nats::NatsStore;
//!
//! // A nats-server with JetStream (`nats-server -js`) on its default port.
//! let mut store = NatsStore::connect("nats://127.0.0.1:4222", RetentionPolicy::default())?;
//! let sequence = store.append("orders.eu", 0, RawValue::from_json(r#"{"id":1}"#).unwrap())?;
//! assert!(sequence >= 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What maps to what
//! | sansrpc | NATS |
//! |---|---|
//! | topic `T` | JetStream stream `SANSRPC_<T escaped>` on subject `sansrpc.log.T` |
//! | sequence id | the stream sequence (one stream per topic, so they are per topic) |
//! | retention (age, count, bytes) | the stream's `max_age`, `max_msgs`, `max_bytes`, discard old |
//! | message timestamp | header `Sansrpc-Timestamp-Ms` (the server's time if absent) |
//! | subscription id `S` | durable pull consumer `SANSRPC_<S escaped>` on the topic's stream; its ack floor follows the saved floor |
//! | subscription record | key `<S escaped>` in the KV bucket `SANSRPC_SUBSCRIPTIONS`: topic, floor and out-of-order acks |
//! | ephemeral publish to `T` | core NATS subject `sansrpc.pub.T` |
//! | MCP change of server `N` (feature `mcp`, `McpFanout`) | core NATS subject `sansrpc.pub.mcp.<N escaped>.<kind>` |
//! | A2A task `T` of agent `A` (feature `a2a`, `NatsTaskStore`) | key `<T escaped>` in the KV bucket `SANSRPC_A2A_<A escaped>`: the task's version and JSON |
//! | A2A task change of agent `A` (feature `a2a`, `A2aFanout`) | core NATS subject `sansrpc.pub.a2a.<A escaped>.changes` |
//!
//! Escaping keeps ASCII letters, digits and `-`, and writes every other byte as `_XX` (hex),
//! so distinct names stay distinct. Names longer than [`MAX_NAME_LEN`] once escaped are
//! refused, as are topics that are not valid NATS subjects without wildcards.
//!
//! # Durability
//! [`Store::append`](sansrpc_pubsub::store::Store::append) returns once JetStream acknowledged
//! the message (stored in the stream's file storage on the server; nats-server syncs to disk
//! on its own `sync_interval`, so a power loss on the NATS host may lose the last moments
//! unless the server is configured to sync always). A subscription save returns once the
//! KV bucket acknowledged the record; the consumer's ack floor is then advanced to the saved
//! floor (acknowledge-all), so `nats consumer info` shows each subscriber's progress. When
//! loading, the higher of the two floors wins.
//!
//! Age retention is enforced by the NATS server with its own clock, so
//! [`Store::expire`](sansrpc_pubsub::store::Store::expire) does nothing here. JetStream counts
//! `max_bytes` over whole stored messages (subject, headers and data), not data alone, and
//! would accept a message larger than `max_bytes` only to drop it at once; so each stream's
//! `max_msg_size` is set just under `max_bytes` and such a message is refused with an error
//! (the embedded store keeps it alone instead). Every
//! node should use the same [`RetentionPolicy`](sansrpc_pubsub::store::RetentionPolicy): the
//! first use of a topic by a node writes its limits to the stream.
//!
//! # Bounds
//! Unlike the embedded store, this one does not bound the number of topics or their bytes
//! in all: the NATS cluster does. Each topic's stream carries the retention's limits; what
//! all streams together may hold is the JetStream account's and server's storage limits
//! (`max_file_store`, account `max_bytes`, `max_streams`), set in the NATS configuration,
//! beyond which creating a stream or appending fails with an error. The subscription
//! records in the KV bucket are bounded by the hub
//! (`HubConfig::max_persistent_ids`), counted through
//! [`Store::subscriptions`](sansrpc_pubsub::store::Store::subscriptions).
#![deny(missing_docs)]

use std::time::Duration;

#[cfg(feature = "a2a")]
mod a2a;
mod bus;
#[cfg(any(feature = "mcp", feature = "a2a"))]
mod fanout;
#[cfg(feature = "mcp")]
mod mcp;
mod runtime;
mod store;

#[cfg(feature = "a2a")]
pub use a2a::{bucket_name, A2aFanout, NatsTaskStore, TaskBucket, A2A_QUEUE};
pub use bus::{BusEvent, NatsBus};
#[cfg(feature = "mcp")]
pub use mcp::{McpFanout, MCP_QUEUE};
pub use store::NatsStore;

/// Subject prefix of the persistent log: topic `T` is stored from subject `sansrpc.log.T`.
pub const LOG_PREFIX: &str = "sansrpc.log.";
/// Subject prefix of ephemeral pub/sub: topic `T` travels on subject `sansrpc.pub.T`.
pub const PUB_PREFIX: &str = "sansrpc.pub.";
/// The KV bucket of subscription records.
pub const SUBSCRIPTIONS_BUCKET: &str = "SANSRPC_SUBSCRIPTIONS";
/// The header that carries a message's publish time in milliseconds since the Unix epoch.
pub const TIMESTAMP_HEADER: &str = "Sansrpc-Timestamp-Ms";
/// The longest stream, consumer or key name (after escaping) this crate creates.
pub const MAX_NAME_LEN: usize = 200;
/// How long one operation may take before it fails with [`Error::Timeout`], by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong talking to NATS.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A NATS or JetStream operation failed.
    #[error("nats: {op}: {source}")]
    Nats {
        /// What was being done.
        op: &'static str,
        /// The client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The topic is not a valid NATS subject without wildcards, or is too long.
    #[error("nats: topic {0:?} cannot be a NATS subject (empty token, wildcard, whitespace or too long)")]
    InvalidTopic(String),
    /// A subscription id whose escaped name is longer than [`MAX_NAME_LEN`].
    #[error("nats: subscription id is too long ({0} bytes escaped)")]
    IdTooLong(usize),
    /// An operation got no answer in time.
    #[error("nats: no answer within {0:?}")]
    Timeout(Duration),
    /// The store's runtime thread could not start or stopped.
    #[error("nats: runtime thread: {0}")]
    Runtime(#[source] std::io::Error),
    /// Something stored in NATS does not decode (written by something else?).
    #[error("nats: corrupt record: {0}")]
    Corrupt(&'static str),
}

pub(crate) fn nats<E>(op: &'static str) -> impl FnOnce(E) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |e| Error::Nats {
        op,
        source: Box::new(e),
    }
}

pub(crate) fn boxed(
    op: &'static str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Error {
    move |source| Error::Nats { op, source }
}

/// Escapes `name` into `[A-Za-z0-9_-]`: other bytes become `_XX`. Injective.
pub(crate) fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// The name [`escape`] was given; `None` if `escaped` is not one of its outputs.
pub(crate) fn unescape(escaped: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut rest = escaped.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'_' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// Checks that `topic` is a literal NATS subject.
pub(crate) fn check_topic(topic: &str) -> Result<(), Error> {
    let valid = !topic.is_empty()
        && LOG_PREFIX.len() + topic.len() <= MAX_NAME_LEN
        && topic.split('.').all(|token| {
            !token.is_empty()
                && token
                    .chars()
                    .all(|c| !c.is_whitespace() && !c.is_control() && c != '*' && c != '>')
        });
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidTopic(topic.to_owned()))
    }
}

/// The stream of `topic` (already checked).
pub(crate) fn stream_name(topic: &str) -> Result<String, Error> {
    let name = format!("SANSRPC_{}", escape(topic));
    if name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidTopic(topic.to_owned()));
    }
    Ok(name)
}

/// The durable consumer and the KV key of subscription `id`.
pub(crate) fn subscription_names(id: &str) -> Result<(String, String), Error> {
    let key = escape(id);
    if key.is_empty() || key.len() + 8 > MAX_NAME_LEN {
        return Err(Error::IdTooLong(key.len()));
    }
    Ok((format!("SANSRPC_{key}"), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_and_bus_can_move_between_threads() {
        fn send<T: Send>() {}
        fn sync<T: Sync>() {}
        send::<NatsStore>();
        send::<NatsBus>();
        sync::<NatsBus>();
    }

    #[test]
    fn escaping_is_injective_and_names_are_valid() {
        assert_eq!(escape("orders.eu-1"), "orders_2Eeu-1");
        assert_ne!(escape("a_2E"), escape("a."));
        assert_eq!(escape("a_2E"), "a_5F2E");
        assert_eq!(escape("é"), "_C3_A9");
        for name in ["orders.eu-1", "a_2E", "é w", ""] {
            assert_eq!(unescape(&escape(name)).as_deref(), Some(name));
        }
        assert_eq!(unescape("a_2"), None);
        assert_eq!(stream_name("a.b").unwrap(), "SANSRPC_a_2Eb");
        assert_eq!(
            subscription_names("w 1").unwrap(),
            ("SANSRPC_w_201".to_owned(), "w_201".to_owned())
        );
        assert!(matches!(subscription_names(""), Err(Error::IdTooLong(0))));
        assert!(subscription_names(&"x".repeat(300)).is_err());
    }

    #[test]
    fn topics_must_be_literal_subjects() {
        for ok in ["a", "orders.eu", "a-b_c.d1", "é"] {
            check_topic(ok).unwrap();
        }
        for bad in ["", "a..b", ".a", "a.", "a.*", "a.>", "a b", "a\tb", "a*b"] {
            assert!(
                matches!(check_topic(bad), Err(Error::InvalidTopic(_))),
                "{bad:?}"
            );
        }
        assert!(check_topic(&"t".repeat(MAX_NAME_LEN)).is_err());
    }
}
