//! A small fake Ethereum node: JSON-RPC over HTTP and WebSocket on one port, as geth and
//! Hardhat serve them, with a deterministic chain that grows a block every 200 ms. Enough
//! for dapp libraries (viem, ethers, web3.py) to follow its blocks and logs:
//!
//! - `eth_chainId` (`"0x539"`, 1337), `net_version` (`"1337"`), `web3_clientVersion`,
//!   `eth_blockNumber`, `eth_getBlockByNumber(tag, full?)` (a number, `latest`, `earliest`,
//!   ...; `null` past the head), batches of them: one trait, three namespaces;
//! - `eth_subscribe("newHeads")` and `eth_subscribe("logs", filter?)` / `eth_unsubscribe`
//!   over WebSocket: every block's header, and its one log, in order. Each subscription's
//!   producer waits for room in its queue (1 MiB): a subscriber that stops reading costs
//!   the node that bound, no more, and gets every block in order when it reads again (or is
//!   closed by the write-stall timeout).
//!
//! `PORT=8545 cargo run -p sansrpc-tokio --example eth_node` (`PORT` defaults to 8545; 0
//! takes a free one). It prints `listening on 127.0.0.1:PORT` and serves until Ctrl-C.
//! For tests: `ETH_NODE_BLOCK_MS` sets the block time, `ETH_NODE_BLOCK_PAD` pads each
//! block's `extraData` with that many bytes; `ETH_NODE_BURSTS=65,1000` makes the chain wait
//! for `ETH_NODE_BURST_AFTER` subscriptions (default 2), then grow by 65 blocks at once,
//! then by 1,000 at once (a node catching up), then stop; `ETH_NODE_MOUNT=router` registers
//! `eth_subscribe` by hand (`AsyncRouter::subscription` with `MethodSubscription::ethereum()`)
//! rather than through `#[subscription]`.

use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::ErrorObject;
use sansrpc_tokio::{http, sansrpc, AsyncRouter, Builder, PendingSubscription, ServeOptions};
use serde_json::{json, Value};
use tokio::sync::watch;

/// What the node's methods return.
pub type RpcResult<T> = Result<T, ErrorObject<'static>>;

/// The node's API, `eth_`, `net_` and `web3_` in one trait; `NodeServer` is what the node
/// implements (the `NodeClient` a client calls is tested in tests/rpc_trait.rs).
#[sansrpc_tokio::rpc(server, namespace = "eth")]
trait Node {
    /// `eth_chainId`: 1337, as Hardhat's and geth's dev chains.
    #[method(name = "chainId")]
    async fn chain_id(&self) -> RpcResult<String>;

    /// `eth_blockNumber`: the head's number.
    #[method(name = "blockNumber")]
    async fn block_number(&self) -> RpcResult<String>;

    /// `eth_getBlockByNumber(tag, full?)`: `null` past the head.
    #[method(name = "getBlockByNumber")]
    async fn block_by_number(&self, tag: String, full: Option<bool>) -> RpcResult<Option<Value>>;

    /// `net_version`: `"1337"`.
    #[method(name = "version", namespace = "net")]
    async fn version(&self) -> RpcResult<String>;

    /// `web3_clientVersion`.
    #[method(name = "clientVersion", namespace = "web3")]
    async fn client_version(&self) -> RpcResult<String>;
}

/// `eth_subscribe("newHeads" | "logs", filter?)`: every block's header, or its log, from the
/// next block on, in order.
#[sansrpc_tokio::rpc(server, namespace = "eth")]
trait Subscribe {
    #[subscription(
        name = "subscribe",
        item = Value,
        notification = "subscription",
        unsubscribe = "unsubscribe",
        ids = hex
    )]
    async fn subscribe(&self, pending: PendingSubscription, kind: String, filter: Option<Value>);
}

/// The chain: block `n` is made from `n` alone, so every run serves the same blocks.
struct Chain {
    /// The number of the newest block.
    head: watch::Receiver<u64>,
    /// Bytes of `extraData` per block.
    pad: usize,
    /// Subscriptions accepted so far (what a burst waits for).
    subscribed: watch::Sender<usize>,
}

/// A 32-byte hash, from a block number and what it is for.
fn hash(n: u64, salt: u64) -> String {
    let word = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    format!("0x{word:016x}{:016x}{word:016x}{salt:016x}", !word)
}

impl Chain {
    /// Block `n`'s header, as `newHeads` sends it.
    fn header(&self, n: u64) -> Value {
        const EMPTY_ROOT: &str =
            "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";
        const EMPTY_UNCLES: &str =
            "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";
        let parent = if n == 0 {
            format!("0x{}", "0".repeat(64))
        } else {
            hash(n - 1, 1)
        };
        json!({
            "number": format!("{n:#x}"),
            "hash": hash(n, 1),
            "parentHash": parent,
            "nonce": "0x0000000000000000",
            "mixHash": hash(n, 2),
            "sha3Uncles": EMPTY_UNCLES,
            "logsBloom": format!("0x{}", "0".repeat(512)),
            "transactionsRoot": EMPTY_ROOT,
            "stateRoot": hash(n, 3),
            "receiptsRoot": EMPTY_ROOT,
            "miner": "0x0000000000000000000000000000000000000000",
            "difficulty": "0x0",
            "totalDifficulty": "0x0",
            "extraData": format!("0x{}", "00".repeat(self.pad)),
            "size": format!("{:#x}", 600 + self.pad),
            "gasLimit": "0x1c9c380",
            "gasUsed": "0x0",
            // 2024-01-01, a second a block.
            "timestamp": format!("{:#x}", 1_704_067_200 + n),
            "baseFeePerGas": "0x3b9aca00",
            "withdrawalsRoot": EMPTY_ROOT,
            "blobGasUsed": "0x0",
            "excessBlobGas": "0x0",
            "parentBeaconBlockRoot": hash(n, 4),
        })
    }

    /// Block `n`'s one log, as `logs` sends it: an event of the node's one contract.
    fn log(&self, n: u64) -> Value {
        json!({
            "address": "0x5fbdb2315678afecb367f032d93f642f64180aa3",
            "topics": [hash(n, 5)],
            "data": format!("0x{:064x}", n),
            "blockNumber": format!("{n:#x}"),
            "blockHash": hash(n, 1),
            "transactionHash": hash(n, 6),
            "transactionIndex": "0x0",
            "logIndex": "0x0",
            "removed": false,
        })
    }

    /// Block `n` with its (empty) transactions, as `eth_getBlockByNumber` answers it.
    fn block(&self, n: u64) -> Value {
        let mut block = self.header(n);
        block["transactions"] = json!([]);
        block["uncles"] = json!([]);
        block["withdrawals"] = json!([]);
        block
    }

    fn latest(&self) -> u64 {
        *self.head.borrow()
    }

    /// The block a tag or number names, when there is one.
    fn named(&self, tag: &str) -> Result<Option<u64>, ErrorObject<'static>> {
        let latest = self.latest();
        let n = match tag {
            "latest" | "pending" | "safe" | "finalized" => latest,
            "earliest" => 0,
            hex => {
                let digits = hex.strip_prefix("0x").unwrap_or("");
                u64::from_str_radix(digits, 16)
                    .map_err(|_| ErrorObject::fixed(-32602, "invalid block number or tag"))?
            }
        };
        Ok((n <= latest).then_some(n))
    }
}

/// The node's API, served from the chain.
#[derive(Clone)]
struct Served(Arc<Chain>);

impl NodeServer for Served {
    async fn chain_id(&self) -> RpcResult<String> {
        Ok("0x539".to_owned())
    }

    async fn block_number(&self) -> RpcResult<String> {
        Ok(format!("{:#x}", self.0.latest()))
    }

    async fn block_by_number(&self, tag: String, _full: Option<bool>) -> RpcResult<Option<Value>> {
        let chain = &self.0;
        chain.named(&tag).map(|n| n.map(|n| chain.block(n)))
    }

    async fn version(&self) -> RpcResult<String> {
        Ok("1337".to_owned())
    }

    async fn client_version(&self) -> RpcResult<String> {
        Ok("sansrpc-eth-node/0.1".to_owned())
    }
}

impl SubscribeServer for Served {
    async fn subscribe(&self, pending: PendingSubscription, kind: String, filter: Option<Value>) {
        self.follow(pending, kind, filter).await
    }
}

impl Served {
    /// `newHeads` and `logs` (every log of the node's one contract, whatever the filter).
    async fn follow(&self, pending: PendingSubscription, kind: String, _filter: Option<Value>) {
        let logs = match kind.as_str() {
            "newHeads" => false,
            "logs" => true,
            _ => {
                let e =
                    ErrorObject::fixed(-32602, "only newHeads and logs subscriptions are served");
                return pending.reject(e);
            }
        };
        let chain = &self.0;
        let mut head = chain.head.clone();
        let mut sent = *head.borrow_and_update();
        let Ok(sink) = pending.accept().await else {
            return;
        };
        chain.subscribed.send_modify(|n| *n += 1);
        while head.changed().await.is_ok() {
            let latest = *head.borrow_and_update();
            // Several blocks at once (the node catching up): each waits for room in the
            // subscription's queue, so a slow reader gets them all, in order.
            for n in sent + 1..=latest {
                let item = if logs { chain.log(n) } else { chain.header(n) };
                if sink.send(&item).await.is_err() {
                    return; // Unsubscribed, or the client went away.
                }
            }
            sent = latest;
        }
    }
}

fn router(chain: Arc<Chain>, by_hand: bool) -> AsyncRouter {
    let node = Served(chain);
    let mut router = AsyncRouter::new();
    NodeServer::mount(node.clone(), &mut router).expect("the names are free");
    if by_hand {
        // What `#[subscription]` generates, written out.
        let eth = MethodSubscription::ethereum();
        router
            .subscription(
                eth,
                move |pending, (kind, filter): (String, Option<Value>)| {
                    let node = node.clone();
                    async move { node.follow(pending, kind, filter).await }
                },
            )
            .expect("eth_subscribe is free");
    } else {
        SubscribeServer::mount(node, &mut router).expect("eth_subscribe is free");
    }
    router
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = env("PORT", 8545);
    let block_time = Duration::from_millis(env("ETH_NODE_BLOCK_MS", 200));
    let bursts: Vec<u64> = std::env::var("ETH_NODE_BURSTS")
        .unwrap_or_default()
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let burst_after: usize = env("ETH_NODE_BURST_AFTER", 2);
    let (grow, head) = watch::channel(0u64);
    let (subscribed, mut subscriptions) = watch::channel(0usize);
    let chain = Arc::new(Chain {
        head,
        pad: env("ETH_NODE_BLOCK_PAD", 0),
        subscribed,
    });
    tokio::spawn(async move {
        if !bursts.is_empty() {
            // A node catching up: once its subscribers are there, the chain grows by each
            // burst at once, then stops.
            let _ = subscriptions.wait_for(|n| *n >= burst_after).await;
            for burst in bursts {
                tokio::time::sleep(Duration::from_millis(300)).await;
                grow.send_modify(|n| *n += burst);
            }
            return std::future::pending().await;
        }
        let mut ticks = tokio::time::interval(block_time);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            grow.send_modify(|n| *n += 1);
        }
    });

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    let by_hand = std::env::var("ETH_NODE_MOUNT").is_ok_and(|m| m == "router");
    let builder = Builder::new().router(router(chain, by_hand));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let grace = Duration::from_secs(1);
    // As geth: web3.py sends its requests in binary WebSocket frames.
    let mut options = ServeOptions::default();
    options.accept_binary = true;
    http::serve_upgrading_with(listener, builder, options, shutdown, grace).await
}
