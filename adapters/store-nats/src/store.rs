//! [`NatsStore`]: the [`Store`] on JetStream.

use std::collections::HashSet;
use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy};
use async_nats::jetstream::context::{ConsumerInfoErrorKind, GetStreamErrorKind};
use async_nats::jetstream::stream::{self, DirectGetErrorKind, DiscardPolicy, StorageType};
use async_nats::jetstream::{self, kv, ErrorCode};
use futures::StreamExt;
use sansrpc::RawValue;
use sansrpc_pubsub::store::{Retention, RetentionPolicy, Store, StoredMessage, SubscriptionState};

use crate::runtime::Runtime;
use crate::{
    boxed, check_topic, nats, stream_name, subscription_names, unescape, Error, DEFAULT_TIMEOUT,
    LOG_PREFIX, SUBSCRIPTIONS_BUCKET, TIMESTAMP_HEADER,
};

/// What nats-server's file store adds to a message's subject and payload, and the
/// timestamp header, rounded up.
const RECORD_OVERHEAD: usize = 96;
/// How many messages one fetch takes while the consumer's ack floor catches up.
const FETCH_BATCH: u64 = 256;
/// How many fetches one save makes at most to advance the consumer's ack floor.
const MAX_FETCHES: usize = 64;

/// A [`Store`] on NATS JetStream, shared by every node connected to the same NATS system.
///
/// The methods are synchronous and may be called from any thread, including inside a tokio
/// runtime: the store runs its own small runtime on a dedicated thread and the caller waits
/// on a std channel (at most the timeout) for each answer.
pub struct NatsStore {
    runtime: Runtime,
    js: jetstream::Context,
    kv: kv::Store,
    retention: RetentionPolicy,
    /// Topics whose stream this store created or updated with its retention.
    ensured: HashSet<String>,
}

impl std::fmt::Debug for NatsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsStore")
            .field("retention", &self.retention)
            .field("timeout", &self.runtime.timeout)
            .finish_non_exhaustive()
    }
}

fn stream_config(topic: &str, retention: Retention) -> Result<stream::Config, Error> {
    // 0 would mean "no limit" to JetStream; the newest message always stays, as in the
    // embedded store.
    let limit = |v: Option<u64>| v.map_or(-1, |v| i64::try_from(v.max(1)).unwrap_or(i64::MAX));
    let subject = format!("{LOG_PREFIX}{topic}");
    // JetStream accepts a message larger than max_bytes and then discards it at once, so a
    // publish would vanish: such a message is refused instead. A stored message costs its
    // subject, headers and a record overhead on top of the data.
    let max_message_size = retention.max_bytes.map_or(-1, |max| {
        let overhead = (RECORD_OVERHEAD + subject.len()) as u64;
        i32::try_from(max.saturating_sub(overhead).max(1)).unwrap_or(i32::MAX)
    });
    Ok(stream::Config {
        name: stream_name(topic)?,
        subjects: vec![subject],
        max_message_size,
        max_age: retention.max_age.unwrap_or(Duration::ZERO),
        max_messages: limit(retention.max_count),
        max_bytes: limit(retention.max_bytes),
        discard: DiscardPolicy::Old,
        storage: StorageType::File,
        allow_direct: true,
        num_replicas: 1,
        ..Default::default()
    })
}

fn encode_state(state: &SubscriptionState) -> Vec<u8> {
    serde_json::json!({
        "topic": state.topic,
        "ack_floor": state.ack_floor,
        "acked": state.acked,
        "last_seen_ms": state.last_seen_ms,
    })
    .to_string()
    .into_bytes()
}

fn decode_state(bytes: &[u8]) -> Result<SubscriptionState, Error> {
    let corrupt = || Error::Corrupt("a subscription record is not {topic, ack_floor, acked}");
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| corrupt())?;
    let topic = value["topic"].as_str().ok_or_else(corrupt)?.to_owned();
    let ack_floor = value["ack_floor"].as_u64().ok_or_else(corrupt)?;
    let acked = value["acked"]
        .as_array()
        .ok_or_else(corrupt)?
        .iter()
        .map(|v| v.as_u64().ok_or_else(corrupt))
        .collect::<Result<Vec<u64>, Error>>()?;
    // Absent from records written before it existed: unknown.
    let last_seen_ms = match &value["last_seen_ms"] {
        serde_json::Value::Null => 0,
        v => v.as_u64().ok_or_else(corrupt)?,
    };
    Ok(SubscriptionState {
        topic,
        ack_floor,
        acked,
        last_seen_ms,
    })
}

/// The stream of `topic`, or `None` if it does not exist.
async fn find_stream(
    js: &jetstream::Context,
    topic: &str,
) -> Result<Option<stream::Stream>, Error> {
    match js.get_stream(stream_name(topic)?).await {
        Ok(stream) => Ok(Some(stream)),
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                Ok(None)
            }
            _ => Err(nats("stream info")(e)),
        },
    }
}

/// The ack floor of the durable consumer `consumer` on `topic`'s stream, if both exist.
async fn consumer_floor(
    js: &jetstream::Context,
    topic: &str,
    consumer: &str,
) -> Result<Option<u64>, Error> {
    let Some(stream) = find_stream(js, topic).await? else {
        return Ok(None);
    };
    match stream.consumer_info(consumer).await {
        Ok(info) => Ok(Some(info.ack_floor.stream_sequence)),
        Err(e) => match e.kind() {
            ConsumerInfoErrorKind::NotFound | ConsumerInfoErrorKind::StreamNotFound => Ok(None),
            ConsumerInfoErrorKind::JetStream(j)
                if j.error_code() == ErrorCode::CONSUMER_NOT_FOUND =>
            {
                Ok(None)
            }
            _ => Err(nats("consumer info")(e)),
        },
    }
}

async fn delete_consumer(
    js: &jetstream::Context,
    topic: &str,
    consumer: &str,
) -> Result<(), Error> {
    let Some(stream) = find_stream(js, topic).await? else {
        return Ok(());
    };
    if consumer_floor(js, topic, consumer).await?.is_some() {
        stream
            .delete_consumer(consumer)
            .await
            .map_err(nats("delete consumer"))?;
    }
    Ok(())
}

/// Creates the durable consumer of a subscription if needed and advances its ack floor to
/// `floor` by fetching up to it and acknowledging all (best effort when retention races).
async fn mirror_floor<I>(
    stream: &stream::Stream<I>,
    topic: &str,
    consumer_name: &str,
    floor: u64,
) -> Result<(), Error> {
    let config = pull::Config {
        durable_name: Some(consumer_name.to_owned()),
        description: Some("sansrpc persistent subscription".into()),
        filter_subject: format!("{LOG_PREFIX}{topic}"),
        deliver_policy: DeliverPolicy::ByStartSequence {
            start_sequence: floor + 1,
        },
        ack_policy: AckPolicy::All,
        ack_wait: Duration::from_secs(30),
        ..Default::default()
    };
    let mut consumer: jetstream::consumer::Consumer<pull::Config> = stream
        .get_or_create_consumer(consumer_name, config.clone())
        .await
        .map_err(nats("create consumer"))?;
    let info = consumer.info().await.map_err(nats("consumer info"))?;
    let current = info.ack_floor.stream_sequence;
    if current > floor {
        // A lower floor than the consumer's: start the consumer over from it.
        stream
            .delete_consumer(consumer_name)
            .await
            .map_err(nats("delete consumer"))?;
        stream
            .create_consumer(config)
            .await
            .map_err(nats("create consumer"))?;
        return Ok(());
    }
    let mut delivered = info.delivered.stream_sequence.max(current);
    let mut highest: Option<(u64, jetstream::Message)> = None;
    for _ in 0..MAX_FETCHES {
        if delivered >= floor {
            break;
        }
        let want = (floor - delivered).min(FETCH_BATCH) as usize;
        let mut batch = consumer
            .fetch()
            .max_messages(want)
            .messages()
            .await
            .map_err(nats("fetch"))?;
        let mut got = 0;
        while let Some(message) = batch.next().await {
            let message = message.map_err(boxed("fetch"))?;
            got += 1;
            let sequence = message
                .info()
                .map_err(boxed("message info"))?
                .stream_sequence;
            delivered = delivered.max(sequence);
            if sequence <= floor && highest.as_ref().is_none_or(|(s, _)| sequence > *s) {
                highest = Some((sequence, message));
            }
        }
        if got == 0 {
            break;
        }
    }
    if let Some((_, message)) = highest {
        message.double_ack().await.map_err(boxed("ack"))?;
    }
    Ok(())
}

/// Opens the key-value bucket `bucket`, creating it first (one value per key, file
/// storage, with `config`'s description, `max_bytes`, `max_age` and discard policy) when
/// there is none. The bucket's stream is created as a KV bucket would be, without the
/// client's `create_key_value`, whose account-info query does not parse on nats-server 2.9.
pub(crate) async fn open_bucket(
    js: &jetstream::Context,
    bucket: &str,
    config: stream::Config,
) -> Result<kv::Store, Error> {
    if let Ok(kv) = js.get_key_value(bucket).await {
        return Ok(kv);
    }
    js.get_or_create_stream(stream::Config {
        name: format!("KV_{bucket}"),
        subjects: vec![format!("$KV.{bucket}.>")],
        max_messages_per_subject: 1,
        max_messages: -1,
        storage: StorageType::File,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        ..config
    })
    .await
    .map_err(nats("create bucket"))?;
    js.get_key_value(bucket).await.map_err(nats("open bucket"))
}

impl NatsStore {
    /// Connects to the NATS server at `url` (e.g. `nats://127.0.0.1:4222`) with JetStream
    /// enabled, and opens (or creates) the subscription bucket.
    pub fn connect(url: &str, retention: RetentionPolicy) -> Result<Self, Error> {
        Self::connect_with_timeout(url, retention, DEFAULT_TIMEOUT)
    }

    /// [`connect`](Self::connect) with a bound on every operation other than the default
    /// [`DEFAULT_TIMEOUT`].
    pub fn connect_with_timeout(
        url: &str,
        retention: RetentionPolicy,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let runtime = Runtime::start("sansrpc-nats-store", timeout)?;
        let url = url.to_owned();
        let (js, kv) = runtime.run(async move {
            let client = async_nats::ConnectOptions::new()
                .name("sansrpc store")
                .connect(url)
                .await
                .map_err(nats("connect"))?;
            let mut js = jetstream::new(client);
            js.set_timeout(timeout);
            // The bucket's stream is created as a KV bucket would be, without the client's
            // create_key_value, whose account-info query does not parse on nats-server 2.9.
            let bucket = stream::Config {
                description: Some("sansrpc persistent subscriptions".into()),
                max_bytes: -1,
                discard: DiscardPolicy::New,
                ..Default::default()
            };
            let kv = open_bucket(&js, SUBSCRIPTIONS_BUCKET, bucket).await?;
            Ok((js, kv))
        })?;
        Ok(NatsStore {
            runtime,
            js,
            kv,
            retention,
            ensured: HashSet::new(),
        })
    }

    /// The retention policy this store writes to the streams it uses.
    pub fn retention(&self) -> &RetentionPolicy {
        &self.retention
    }

    /// Creates `topic`'s stream, or brings its limits to this store's retention, once per
    /// topic per store.
    fn ensure_stream(&mut self, topic: &str) -> Result<(), Error> {
        check_topic(topic)?;
        if self.ensured.contains(topic) {
            return Ok(());
        }
        let config = stream_config(topic, self.retention.for_topic(topic))?;
        let js = self.js.clone();
        self.runtime.run(async move {
            js.create_or_update_stream(config)
                .await
                .map_err(nats("create stream"))?;
            Ok(())
        })?;
        self.ensured.insert(topic.to_owned());
        Ok(())
    }
}

impl Store for NatsStore {
    type Error = Error;

    fn append(&mut self, topic: &str, timestamp_ms: u64, data: &RawValue) -> Result<u64, Error> {
        self.ensure_stream(topic)?;
        let js = self.js.clone();
        let subject = format!("{LOG_PREFIX}{topic}");
        let payload = data.get().to_owned();
        let result = self.runtime.run(async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(TIMESTAMP_HEADER, timestamp_ms.to_string().as_str());
            let ack = js
                .publish_with_headers(subject, headers, payload.into())
                .await
                .map_err(nats("publish"))?
                .await
                .map_err(nats("publish ack"))?;
            Ok(ack.sequence)
        });
        if result.is_err() {
            // The stream may have been deleted behind our back: check it again next time.
            self.ensured.remove(topic);
        }
        result
    }

    fn last_sequence(&mut self, topic: &str) -> Result<u64, Error> {
        check_topic(topic)?;
        let js = self.js.clone();
        let topic = topic.to_owned();
        self.runtime.run(async move {
            Ok(match find_stream(&js, &topic).await? {
                Some(mut stream) => {
                    stream
                        .info()
                        .await
                        .map_err(nats("stream info"))?
                        .state
                        .last_sequence
                }
                None => 0,
            })
        })
    }

    fn read(
        &mut self,
        topic: &str,
        after: u64,
        max: usize,
        out: &mut Vec<StoredMessage>,
    ) -> Result<(), Error> {
        check_topic(topic)?;
        if max == 0 || after == u64::MAX {
            return Ok(());
        }
        let js = self.js.clone();
        let topic = topic.to_owned();
        let read = self.runtime.run(async move {
            let mut read = Vec::new();
            let Some(stream) = find_stream(&js, &topic).await? else {
                return Ok(read);
            };
            let subject = format!("{LOG_PREFIX}{topic}");
            let mut next = after + 1;
            while read.len() < max {
                let message = match stream
                    .direct_get_next_for_subject(subject.as_str(), Some(next))
                    .await
                {
                    Ok(message) => message,
                    Err(e) if e.kind() == DirectGetErrorKind::NotFound => break,
                    Err(e) => return Err(nats("direct get")(e)),
                };
                let timestamp_ms = message
                    .headers
                    .get(TIMESTAMP_HEADER)
                    .and_then(|v| v.as_str().parse().ok())
                    .unwrap_or_else(|| {
                        u64::try_from(message.time.unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
                    });
                let data = String::from_utf8(message.payload.to_vec())
                    .ok()
                    .and_then(|s| RawValue::from_string(s).ok())
                    .ok_or(Error::Corrupt("a logged message is not JSON"))?;
                next = message.sequence + 1;
                read.push(StoredMessage {
                    topic: topic.clone(),
                    sequence: message.sequence,
                    timestamp_ms,
                    data,
                });
            }
            Ok(read)
        })?;
        out.extend(read);
        Ok(())
    }

    fn load_subscription(&mut self, id: &str) -> Result<Option<SubscriptionState>, Error> {
        let (consumer, key) = subscription_names(id)?;
        let js = self.js.clone();
        let kv = self.kv.clone();
        self.runtime.run(async move {
            let Some(bytes) = kv.get(key).await.map_err(nats("load subscription"))? else {
                return Ok(None);
            };
            let mut state = decode_state(&bytes)?;
            if let Some(floor) = consumer_floor(&js, &state.topic, &consumer).await? {
                state.raise_floor(floor);
            }
            Ok(Some(state))
        })
    }

    fn save_subscription(&mut self, id: &str, state: &SubscriptionState) -> Result<(), Error> {
        let (consumer, key) = subscription_names(id)?;
        self.ensure_stream(&state.topic)?;
        let js = self.js.clone();
        let kv = self.kv.clone();
        let state = state.clone();
        self.runtime.run(async move {
            let mut floor_moved = true;
            if let Some(old) = kv
                .get(key.as_str())
                .await
                .map_err(nats("load subscription"))?
            {
                let old = decode_state(&old)?;
                if old.topic != state.topic {
                    delete_consumer(&js, &old.topic, &consumer).await?;
                } else {
                    floor_moved = old.ack_floor != state.ack_floor;
                }
            }
            kv.put(key.as_str(), encode_state(&state).into())
                .await
                .map_err(nats("save subscription"))?;
            if !floor_moved {
                // Only out-of-order acks changed: they live in the record alone.
                return Ok(());
            }
            let stream = js
                .get_stream_no_info(stream_name(&state.topic)?)
                .await
                .map_err(nats("stream"))?;
            mirror_floor(&stream, &state.topic, &consumer, state.ack_floor).await
        })
    }

    fn delete_subscription(&mut self, id: &str) -> Result<(), Error> {
        let (consumer, key) = subscription_names(id)?;
        let js = self.js.clone();
        let kv = self.kv.clone();
        self.runtime.run(async move {
            if let Some(old) = kv
                .get(key.as_str())
                .await
                .map_err(nats("load subscription"))?
            {
                delete_consumer(&js, &decode_state(&old)?.topic, &consumer).await?;
                kv.purge(key.as_str())
                    .await
                    .map_err(nats("delete subscription"))?;
            }
            Ok(())
        })
    }

    /// Lists the keys of the subscription bucket and reads each record: one round trip per
    /// record, so the hub's sweep of a large bucket takes a moment.
    fn subscriptions(&mut self, out: &mut Vec<(String, u64)>) -> Result<(), Error> {
        let kv = self.kv.clone();
        let found = self.runtime.run(async move {
            let mut keys = kv.keys().await.map_err(nats("list subscriptions"))?;
            let mut found = Vec::new();
            while let Some(key) = keys.next().await {
                let key = key.map_err(nats("list subscriptions"))?;
                let id =
                    unescape(&key).ok_or(Error::Corrupt("a subscription key is not escaped"))?;
                // Deleted since it was listed: skip it.
                if let Some(bytes) = kv.get(key).await.map_err(nats("load subscription"))? {
                    found.push((id, decode_state(&bytes)?.last_seen_ms));
                }
            }
            Ok(found)
        })?;
        out.extend(found);
        Ok(())
    }

    /// Does nothing: the NATS server removes messages older than the stream's `max_age`
    /// itself, by its own clock.
    fn expire(&mut self, _now_ms: u64) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_records_round_trip_and_garbage_is_an_error() {
        let mut state = SubscriptionState::new("orders.eu", 4);
        state.ack(7);
        assert_eq!(decode_state(&encode_state(&state)).unwrap(), state);
        state.last_seen_ms = 1_766_750_400_000;
        assert_eq!(decode_state(&encode_state(&state)).unwrap(), state);
        // A record from before last-seen times loads with 0 (unknown).
        let old = decode_state(br#"{"topic":"a","ack_floor":3,"acked":[5]}"#).unwrap();
        assert_eq!((old.ack_floor, old.last_seen_ms), (3, 0));
        for bad in [
            &b"x"[..],
            b"{}",
            br#"{"topic":"a","ack_floor":-1,"acked":[]}"#,
        ] {
            assert!(matches!(decode_state(bad), Err(Error::Corrupt(_))));
        }
    }

    #[test]
    fn retention_maps_to_stream_limits() {
        let config = stream_config(
            "a.b",
            Retention {
                max_age: Some(Duration::from_secs(60)),
                max_count: Some(5),
                max_bytes: None,
            },
        )
        .unwrap();
        assert_eq!(config.subjects, ["sansrpc.log.a.b"]);
        assert_eq!(
            (config.max_age, config.max_messages, config.max_bytes),
            (Duration::from_secs(60), 5, -1)
        );
        let zero = Retention {
            max_count: Some(0),
            ..Retention::default()
        };
        assert_eq!(stream_config("a", zero).unwrap().max_messages, 1);
        assert_eq!(config.discard, DiscardPolicy::Old);
    }
}
