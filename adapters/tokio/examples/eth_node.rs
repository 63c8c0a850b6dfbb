//! A small fake Ethereum node: JSON-RPC over HTTP and WebSocket on one port, as geth and
//! Hardhat serve them, with a deterministic chain that grows a block every 200 ms. Enough
//! for dapp libraries (viem, ethers, web3.py) to follow its blocks:
//!
//! - `eth_chainId` (`"0x539"`, 1337), `net_version` (`"1337"`), `eth_blockNumber`,
//!   `eth_getBlockByNumber(tag, full)` (a number, `latest`, `earliest`, ...; `null` past the
//!   head), batches of them;
//! - `eth_subscribe("newHeads")` / `eth_unsubscribe` over WebSocket: every block's header,
//!   in order. Each subscription's producer waits for room in its queue (1 MiB): a
//!   subscriber that stops reading costs the node that bound, no more, and gets every
//!   block in order when it reads again (or is closed by the write-stall timeout).
//!
//! `PORT=8545 cargo run -p sansrpc-tokio --example eth_node` (`PORT` defaults to 8545; 0
//! takes a free one). It prints `listening on 127.0.0.1:PORT` and serves until Ctrl-C.
//! For tests: `ETH_NODE_BLOCK_MS` sets the block time, `ETH_NODE_BLOCK_PAD` pads each
//! block's `extraData` with that many bytes.

use std::sync::Arc;
use std::time::Duration;

use sansrpc::ErrorObject;
use sansrpc_tokio::{http, sansrpc, AsyncRouter, Builder, PendingSubscription, ServeOptions};
use serde_json::{json, Value};
use tokio::sync::watch;

/// The node's `eth_` API; `EthServer` is what the node implements (the `EthClient` a
/// client calls is tested in tests/rpc_trait.rs).
#[sansrpc_tokio::rpc(server, namespace = "eth")]
trait Eth {
    /// `eth_chainId`: 1337, as Hardhat's and geth's dev chains.
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;

    /// `eth_blockNumber`: the head's number.
    #[method(name = "blockNumber")]
    async fn block_number(&self) -> Result<String, ErrorObject<'static>>;

    /// `eth_getBlockByNumber(tag, full)`: `null` past the head.
    #[method(name = "getBlockByNumber")]
    async fn block_by_number(
        &self,
        tag: String,
        full: bool,
    ) -> Result<Option<Value>, ErrorObject<'static>>;

    /// `eth_subscribe("newHeads")`: every block's header from the next one on, in order.
    #[subscription(
        name = "subscribe",
        item = Value,
        notification = "subscription",
        unsubscribe = "unsubscribe",
        ids = hex
    )]
    async fn subscribe(&self, pending: PendingSubscription, kind: String, options: Option<Value>);
}

/// `net_version`.
#[sansrpc_tokio::rpc(server, namespace = "net")]
trait Net {
    /// `"1337"`.
    #[method(name = "version")]
    async fn version(&self) -> Result<String, ErrorObject<'static>>;
}

/// The chain: block `n` is made from `n` alone, so every run serves the same blocks.
struct Chain {
    /// The number of the newest block.
    head: watch::Receiver<u64>,
    /// Bytes of `extraData` per block.
    pad: usize,
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
struct Node(Arc<Chain>);

impl EthServer for Node {
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>> {
        Ok("0x539".to_owned())
    }

    async fn block_number(&self) -> Result<String, ErrorObject<'static>> {
        Ok(format!("{:#x}", self.0.latest()))
    }

    async fn block_by_number(
        &self,
        tag: String,
        _full: bool,
    ) -> Result<Option<Value>, ErrorObject<'static>> {
        let chain = &self.0;
        chain.named(&tag).map(|n| n.map(|n| chain.block(n)))
    }

    /// `newHeads` only.
    async fn subscribe(&self, pending: PendingSubscription, kind: String, _options: Option<Value>) {
        if kind != "newHeads" {
            let e = ErrorObject::fixed(-32602, "only newHeads subscriptions are served");
            return pending.reject(e);
        }
        let chain = &self.0;
        let mut head = chain.head.clone();
        let mut sent = *head.borrow_and_update();
        let Ok(sink) = pending.accept().await else {
            return;
        };
        while head.changed().await.is_ok() {
            let latest = *head.borrow_and_update();
            // Several heads at once (the node was held up): each waits for room in the
            // subscription's queue, so a slow reader gets them all, in order.
            for n in sent + 1..=latest {
                if sink.send(&chain.header(n)).await.is_err() {
                    return; // Unsubscribed, or the client went away.
                }
            }
            sent = latest;
        }
    }
}

impl NetServer for Node {
    async fn version(&self) -> Result<String, ErrorObject<'static>> {
        Ok("1337".to_owned())
    }
}

fn router(chain: Arc<Chain>) -> AsyncRouter {
    let node = Node(chain);
    let mut router = AsyncRouter::new();
    EthServer::mount(node.clone(), &mut router).expect("the eth_ names are free");
    NetServer::mount(node, &mut router).expect("the net_ names are free");
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
    let (grow, head) = watch::channel(0u64);
    let chain = Arc::new(Chain {
        head,
        pad: env("ETH_NODE_BLOCK_PAD", 0),
    });
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(block_time);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            grow.send_modify(|n| *n += 1);
        }
    });

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    let builder = Builder::new().router(router(chain));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let grace = Duration::from_secs(1);
    // As geth: web3.py sends its requests in binary WebSocket frames.
    let mut options = ServeOptions::default();
    options.accept_binary = true;
    http::serve_with_websocket(listener, builder, options, shutdown, grace).await
}
