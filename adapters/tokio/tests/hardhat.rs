//! sansrpc's client against a real Ethereum node not written here: Hardhat's (npm
//! `hardhat`, pinned in interop/hardhat/package-lock.json), HTTP and WebSocket on one
//! port. Over HTTP: `eth_chainId` and a batch; over WebSocket: `eth_subscribe("newHeads")`
//! while the test mines blocks with `hardhat_mine`, every mined block's head in order, then
//! `eth_unsubscribe`; and over HTTP a subscribe is refused before it goes out. The calls
//! and the subscription go through the client `#[rpc]` generates from the `Eth` trait.

#[path = "../../../tests/support/interop.rs"]
mod interop;

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use interop::{interop, npm_ci, Running};
use sansrpc::connection::subscriptions::MethodSubscription;
use sansrpc::connection::SendError;
use sansrpc::ErrorObject;
use sansrpc::RawValue;
use sansrpc_tokio::{http, sansrpc, ws, Builder, CallError, PendingSubscription, Subscription};
use serde_json::Value;

/// What this test calls of an Ethereum node: `EthClient` is generated from it.
#[sansrpc_tokio::rpc(client, namespace = "eth")]
trait Eth {
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;

    #[method(name = "getBlockByNumber")]
    async fn block_by_number(
        &self,
        tag: String,
        full: bool,
    ) -> Result<Option<Value>, ErrorObject<'static>>;

    #[subscription(
        name = "subscribe",
        item = Value,
        notification = "subscription",
        unsubscribe = "unsubscribe",
        ids = hex
    )]
    async fn new_heads(&self, pending: PendingSubscription, kind: String);
}

sansrpc::method!(ChainId = "eth_chainId", () => String);
sansrpc::method!(BlockNumber = "eth_blockNumber", () => String);
sansrpc::method!(NetVersion = "net_version", () => String);

/// Hardhat's node on a free port of 127.0.0.1, once it said it listens: the process and
/// the port.
fn hardhat() -> (Running, u16) {
    let dir = interop(env!("CARGO_MANIFEST_DIR"), "hardhat");
    npm_ci(&dir, "hardhat");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cli = dir.join("node_modules/hardhat/internal/cli/cli.js");
    let mut child = Command::new("node")
        .arg(cli)
        .args([
            "--config",
            "hardhat.config.cjs",
            "node",
            "--hostname",
            "127.0.0.1",
        ])
        .args(["--port", &port.to_string()])
        .current_dir(&dir)
        .env("HARDHAT_DISABLE_TELEMETRY_PROMPT", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start Hardhat's node (Node 20 or later)");
    // Read to the end on a thread (it logs every call), telling when it listens.
    let (tx, started) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("Started HTTP and WebSocket JSON-RPC server") {
                let _ = tx.send(line);
            }
        }
    });
    let running = Running(child);
    started
        .recv_timeout(Duration::from_secs(60))
        .expect("Hardhat's node did not start within 60 s");
    (running, port)
}

fn number(hex: &str) -> u64 {
    u64::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap()
}

#[tokio::test]
async fn sansrpc_client_follows_hardhats_node() {
    let (_node, port) = tokio::task::spawn_blocking(hardhat).await.unwrap();
    let work = async {
        // HTTP: a call and a batch.
        let over_http = http::connect(&format!("http://127.0.0.1:{port}"), Builder::new())
            .await
            .unwrap();
        let client = &over_http.client;
        assert_eq!(over_http.chain_id().await.unwrap(), "0x7a69");
        let genesis = over_http
            .block_by_number("0x0".to_owned(), false)
            .await
            .unwrap()
            .expect("the genesis block");
        assert_eq!(genesis["number"], "0x0", "{genesis}");
        let mut batch = client.batch();
        let chain = batch.call::<ChainId>(&());
        let height = batch.call::<BlockNumber>(&());
        let net = batch.call::<NetVersion>(&());
        let mut results = batch.send().await.unwrap();
        assert_eq!(chain.take(&mut results).unwrap(), "0x7a69");
        assert_eq!(net.take(&mut results).unwrap(), "31337");
        let start = number(&height.take(&mut results).unwrap());
        // Over HTTP a subscription is refused before it goes out.
        let refused = client
            .subscribe::<_, Value>(&MethodSubscription::ethereum(), &("newHeads",))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, CallError::Send(SendError::NoPush)),
            "{refused:?}"
        );

        // WebSocket: newHeads while blocks are mined.
        let over_ws = ws::connect(&format!("ws://127.0.0.1:{port}"), Builder::new())
            .await
            .unwrap();
        let mut heads: Subscription<Value> =
            over_ws.new_heads("newHeads".to_owned()).await.unwrap();
        let mine = RawValue::from_string(r#"["0x5"]"#.to_owned()).unwrap();
        client.call_raw("hardhat_mine", Some(&mine)).await.unwrap();
        let mut seen = Vec::new();
        while seen.len() < 5 {
            let head = heads.next().await.expect("a head").expect("not a lag");
            assert!(
                head["hash"].as_str().is_some_and(|h| h.len() == 66),
                "{head}"
            );
            seen.push(number(head["number"].as_str().unwrap()));
        }
        assert_eq!(seen, (start + 1..=start + 5).collect::<Vec<_>>());
        assert!(heads.unsubscribe().await.unwrap(), "Hardhat ended it");
        // Mined after the unsubscribe: nothing comes to a new subscription's stream but
        // its own blocks.
        let mut again: Subscription<Value> = over_ws
            .client
            .subscribe(&MethodSubscription::ethereum(), &("newHeads",))
            .await
            .unwrap();
        client.call_raw("hardhat_mine", Some(&mine)).await.unwrap();
        let head = again.next().await.unwrap().unwrap();
        assert_eq!(number(head["number"].as_str().unwrap()), start + 6);
    };
    tokio::time::timeout(Duration::from_secs(120), work)
        .await
        .expect("done within 120 s");
}
