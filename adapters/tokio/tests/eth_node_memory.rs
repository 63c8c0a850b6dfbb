//! The eth_node example with a subscriber that never reads: a WebSocket client subscribes
//! to newHeads and then reads nothing, while blocks of 16 KiB come every 20 ms (0.8 MB/s
//! toward it). The node's resident memory stays within a bound over what it used before
//! that subscriber came (its producer waits for room in the 1 MiB queue), another client,
//! reading, gets every block in order, and so does the silent one once it reads.

#[path = "../../../tests/support/processes.rs"]
mod processes;

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use processes::Example;
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc_tokio::ws::tungstenite::Message;
use sansrpc_tokio::{sansrpc, ws, Builder, Subscription, SubscriptionError};
use serde::Deserialize;

/// How long blocks flow toward the subscriber that never reads.
const RUN: Duration = Duration::from_secs(15);
/// How much the node's resident memory may grow over its level before the silent
/// subscriber came: its queue (1 MiB), the 64 KiB of output the driver lets wait
/// (`subscriptions::OUTPUT_ROOM`) and the connection's buffers, with room to spare. Short
/// of the 8 MiB a connection may buffer (`Config::max_buffered_output`), so it fails if
/// items were moved into the connection regardless of its output; the silent subscriber
/// is sent about 12 MB meanwhile. Every 20 ms, not faster: the reading client's own
/// queue on the node (1 MiB, 64 blocks) then covers 1.3 s of a test starved of CPU among
/// many others, which at 10 ms lost 44 blocks once on a machine loaded 40 deep.
const BOUND: u64 = 6 << 20;

/// The node's resident memory, from `/proc`.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[derive(Debug, Deserialize)]
struct Header {
    number: String,
    #[serde(rename = "extraData")]
    extra_data: String,
}

/// The next header; a lag, an error, the end or 10 s of silence fails the test.
async fn next(heads: &mut Subscription<Header>) -> Header {
    match tokio::time::timeout(Duration::from_secs(10), heads.next()).await {
        Ok(Some(Ok(header))) => header,
        Ok(Some(Err(SubscriptionError::Lagged(n)))) => {
            panic!("the reading subscriber missed {n} blocks")
        }
        other => panic!("a header, not {other:?}"),
    }
}

fn number(header: &Header) -> u64 {
    u64::from_str_radix(header.number.trim_start_matches("0x"), 16).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_costs_the_node_a_bound_and_others_get_every_block() {
    let env = [
        ("PORT", "0"),
        ("ETH_NODE_BLOCK_MS", "20"),
        ("ETH_NODE_BLOCK_PAD", "8192"),
    ];
    let node = tokio::task::spawn_blocking(move || {
        let mut node = Example::start_with_env("sansrpc-tokio", "eth_node", &env);
        let line = node.line();
        (node, line)
    })
    .await
    .unwrap();
    let addr = node.1.strip_prefix("listening on ").unwrap().to_owned();
    let pid = node.0.id();
    let url = format!("ws://{addr}");

    // The one that reads. It holds up to 256 MiB of heads unread on its side (the stream's
    // bound is the declaration's), so a test starved of CPU among many others does not
    // miss blocks of its own doing: the node's side is what is tested.
    let reader = ws::connect(&url, Builder::new()).await.unwrap();
    let patient = MethodSubscription::ethereum().with_capacity(256 << 20);
    let mut heads: Subscription<Header> = reader
        .client
        .subscribe(&patient, &("newHeads",))
        .await
        .unwrap();

    // Warmed up: the reader's subscription running for a second, before the silent one.
    let mut last = number(&next(&mut heads).await);
    let warm = Instant::now() + Duration::from_secs(1);
    while Instant::now() < warm {
        let n = number(&next(&mut heads).await);
        assert_eq!(n, last + 1, "every block, in order");
        last = n;
    }
    let baseline = rss(pid);

    // The subscriber that never reads: it sends its subscribe and nothing more.
    let (mut silent, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let subscribe = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
    silent.send(Message::text(subscribe)).await.unwrap();

    let (first, mut peak, mut bytes) = (last, baseline, 0u64);
    let end = Instant::now() + RUN;
    let mut sampled = Instant::now();
    while Instant::now() < end {
        let header = next(&mut heads).await;
        let n = number(&header);
        assert_eq!(n, last + 1, "every block, in order");
        assert_eq!(header.extra_data.len(), 2 + 2 * 8192);
        bytes += header.extra_data.len() as u64;
        last = n;
        if sampled.elapsed() >= Duration::from_millis(50) {
            peak = peak.max(rss(pid));
            sampled = Instant::now();
        }
    }
    peak = peak.max(rss(pid));
    let blocks = last - first;
    println!(
        "{blocks} blocks of {} KiB in {RUN:?} ({:.1} MB toward each subscriber); node RSS {:.1} MiB before the silent one subscribed, peak {:.1} MiB (+{:.1} MiB, bound +{} MiB)",
        8192 * 2 / 1024,
        bytes as f64 / 1e6,
        baseline as f64 / (1 << 20) as f64,
        peak as f64 / (1 << 20) as f64,
        (peak - baseline) as f64 / (1 << 20) as f64,
        BOUND >> 20,
    );
    assert!(
        bytes > 10_000_000,
        "too little was sent to tell anything: {bytes} bytes"
    );
    assert!(
        peak - baseline < BOUND,
        "the node grew by {} bytes with a subscriber that never reads",
        peak - baseline
    );
    // The silent one is still connected (its socket full), and still subscribed: the
    // node's producer for it waited for room (`send`), so what it gets when it reads at
    // last is its answer, then every header in order, each a notification with a result.
    let answer = tokio::time::timeout(Duration::from_secs(10), silent.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        answer.to_text().unwrap().contains(r#""result":"0x"#),
        "{answer:?}"
    );
    let mut previous = None;
    for _ in 0..200 {
        let message = tokio::time::timeout(Duration::from_secs(10), silent.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let notification: serde_json::Value =
            serde_json::from_str(message.to_text().unwrap()).unwrap();
        assert_eq!(notification["method"], "eth_subscription");
        let header: Header = serde_json::from_value(notification["params"]["result"].clone())
            .unwrap_or_else(|e| panic!("not a header ({e}): {notification:.200}"));
        let n = number(&header);
        if let Some(previous) = previous {
            assert_eq!(n, previous + 1, "every block, in order");
        }
        previous = Some(n);
    }
    drop(node);
}
