//! `#[rpc]` over real TCP on 127.0.0.1: a server from the trait and its generated client;
//! params by position and by name as they go on the wire (seen by a raw server) and as
//! they arrive (decoded by the generated one); an error from the server arriving as
//! `CallError::Rpc`; a subscription streaming items and unsubscribing.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{within, LIMIT};
use futures::StreamExt;
use sansrpc::ErrorObject;
use sansrpc_tokio::{AsyncRouter, Builder, CallError, Ended, PendingSubscription, Spawned};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A block, as `eth_getBlockByNumber` answers it here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    number: String,
    full: bool,
}

/// A fake node's API: the trait both sides are generated from.
#[sansrpc_tokio::rpc(server, client, namespace = "eth")]
pub trait Eth {
    /// The chain id.
    #[method(name = "chainId")]
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>>;

    /// A block by number, params by name.
    #[method(name = "getBlockByNumber", param_kind = map)]
    async fn block(
        &self,
        number: String,
        full: bool,
    ) -> Result<Option<Block>, ErrorObject<'static>>;

    /// The same, params by position.
    #[method(name = "getBlockByNumberPositional")]
    async fn block_positional(
        &self,
        number: String,
        full: bool,
    ) -> Result<Option<Block>, ErrorObject<'static>>;

    /// Always fails, with -32042.
    #[method(name = "fail")]
    async fn fail(&self, reason: String) -> Result<u64, ErrorObject<'static>>;

    /// `count` items, then one a millisecond until the client unsubscribes.
    #[subscription(name = "subscribe", item = u64, unsubscribe = "unsubscribe", notification = "subscription", ids = hex)]
    async fn subscribe_ticks(&self, pending: PendingSubscription, kind: String);
}

/// The server: reports how each subscription ended.
struct Node {
    ended: mpsc::UnboundedSender<Ended>,
    served: AtomicU64,
}

impl EthServer for Node {
    async fn chain_id(&self) -> Result<String, ErrorObject<'static>> {
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok("0x539".to_owned())
    }

    async fn block(
        &self,
        number: String,
        full: bool,
    ) -> Result<Option<Block>, ErrorObject<'static>> {
        Ok((number != "0xffff").then_some(Block { number, full }))
    }

    async fn block_positional(
        &self,
        number: String,
        full: bool,
    ) -> Result<Option<Block>, ErrorObject<'static>> {
        self.block(number, full).await
    }

    async fn fail(&self, reason: String) -> Result<u64, ErrorObject<'static>> {
        let data = sansrpc::RawValue::from_string(serde_json::to_string(&reason).unwrap()).unwrap();
        Err(ErrorObject::fixed(-32042, "refused").with_data(std::borrow::Cow::Owned(data)))
    }

    async fn subscribe_ticks(&self, pending: PendingSubscription, kind: String) {
        if kind != "ticks" {
            return pending.reject(ErrorObject::fixed(-32602, "only ticks"));
        }
        let Ok(sink) = pending.accept().await else {
            return;
        };
        let ended = self.ended.clone();
        let watch = sink.clone();
        tokio::spawn(async move {
            let _ = ended.send(watch.closed().await);
        });
        for n in 0u64.. {
            if sink.send(&n).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Serves `router` over TCP (Content-Length framing) on 127.0.0.1; a client connected.
async fn serve(router: AsyncRouter) -> Spawned {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let builder = Builder::new().router(router);
    tokio::spawn(sansrpc_tokio::serve_tcp(
        listener,
        builder,
        std::future::pending(),
        Duration::from_secs(1),
    ));
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream))
}

fn node() -> (Node, mpsc::UnboundedReceiver<Ended>) {
    let (ended, reports) = mpsc::unbounded_channel();
    let node = Node {
        ended,
        served: AtomicU64::new(0),
    };
    (node, reports)
}

#[tokio::test]
async fn generated_client_calls_generated_server_by_position_and_by_name() {
    within(LIMIT, async {
        let (node, _reports) = node();
        let conn = serve(node.into_router().unwrap()).await;
        assert_eq!(conn.chain_id().await.unwrap(), "0x539");
        let by_name = conn.block("0x10".to_owned(), true).await.unwrap();
        assert_eq!(
            by_name,
            Some(Block {
                number: "0x10".to_owned(),
                full: true
            })
        );
        let by_position = conn
            .block_positional("0x11".to_owned(), false)
            .await
            .unwrap();
        assert_eq!(
            by_position,
            Some(Block {
                number: "0x11".to_owned(),
                full: false
            })
        );
        assert_eq!(conn.block("0xffff".to_owned(), false).await.unwrap(), None);
    })
    .await;
}

#[tokio::test]
async fn params_go_on_the_wire_as_an_array_or_an_object() {
    within(LIMIT, async {
        // A raw server echoes the params it got, as JSON text.
        let mut router = AsyncRouter::new();
        for name in [
            "eth_getBlockByNumber",
            "eth_getBlockByNumberPositional",
            "eth_chainId",
        ] {
            router
                .raw_method(name, |params: Option<Box<sansrpc::RawValue>>| async move {
                    let text = params.map_or("absent".to_owned(), |p| p.get().to_owned());
                    let block = Block {
                        number: text,
                        full: false,
                    };
                    let json = serde_json::to_string(&block).unwrap();
                    Ok(sansrpc::RawValue::from_string(json).unwrap())
                })
                .unwrap();
        }
        let conn = serve(router).await;
        let by_name = conn.block("0x1".to_owned(), true).await.unwrap().unwrap();
        assert_eq!(by_name.number, r#"{"number":"0x1","full":true}"#);
        let by_position = conn
            .block_positional("0x2".to_owned(), true)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(by_position.number, r#"["0x2",true]"#);
        // A result that is not the method's type is a decode error, not a panic.
        let wrong = conn.chain_id().await.unwrap_err();
        assert!(matches!(wrong, CallError::Decode(_)), "{wrong:?}");
    })
    .await;
}

#[tokio::test]
async fn generated_server_decodes_params_either_way_and_refuses_bad_ones() {
    within(LIMIT, async {
        let (node, _reports) = node();
        let conn = serve(node.into_router().unwrap()).await;
        let raw = |s: &str| sansrpc::RawValue::from_string(s.to_owned()).unwrap();
        for (method, params) in [
            ("eth_getBlockByNumber", r#"["0x5",true]"#),
            ("eth_getBlockByNumber", r#"{"full":true,"number":"0x5"}"#),
            ("eth_getBlockByNumberPositional", r#"["0x5",true]"#),
            (
                "eth_getBlockByNumberPositional",
                r#"{"number":"0x5","full":true}"#,
            ),
        ] {
            let answer = conn
                .client
                .call_raw(method, Some(&raw(params)))
                .await
                .unwrap();
            assert_eq!(
                answer.get(),
                r#"{"number":"0x5","full":true}"#,
                "{method} {params}"
            );
        }
        let bad = conn
            .client
            .call_raw("eth_getBlockByNumber", Some(&raw(r#"["0x5"]"#)))
            .await
            .unwrap_err();
        assert_eq!(bad.code(), Some(-32602), "{bad:?}");
    })
    .await;
}

#[tokio::test]
async fn an_error_from_the_server_arrives_as_call_error_rpc() {
    within(LIMIT, async {
        let (node, _reports) = node();
        let conn = serve(node.into_router().unwrap()).await;
        match conn.fail("no reason".to_owned()).await {
            Err(CallError::Rpc(e)) => {
                assert_eq!(e.code, -32042);
                assert_eq!(e.message, "refused");
                assert_eq!(
                    e.data.map(|d| d.get().to_owned()).as_deref(),
                    Some(r#""no reason""#)
                );
            }
            other => panic!("an error object, not {other:?}"),
        }
    })
    .await;
}

#[tokio::test]
async fn a_subscription_streams_items_and_unsubscribes() {
    within(LIMIT, async {
        let (node, mut reports) = node();
        let conn = serve(node.into_router().unwrap()).await;
        let mut ticks = conn.subscribe_ticks("ticks".to_owned()).await.unwrap();
        assert_eq!(ticks.id().get(), r#""0x1""#, "hex ids, as declared");
        let mut seen = Vec::new();
        while seen.len() < 5 {
            seen.push(ticks.next().await.expect("an item").expect("not a lag"));
        }
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert!(ticks.unsubscribe().await.unwrap(), "the server ended it");
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        // Rejected by the server: the error object, as a call's.
        let refused = conn.subscribe_ticks("blocks".to_owned()).await.unwrap_err();
        assert_eq!(refused.code(), Some(-32602), "{refused:?}");
        // Still served.
        assert_eq!(conn.chain_id().await.unwrap(), "0x539");
    })
    .await;
}

#[tokio::test]
async fn mounting_twice_on_one_router_is_refused() {
    let (first, _) = node();
    let (second, _) = node();
    let mut router = first.into_router().unwrap();
    let e = second.mount(&mut router).unwrap_err();
    assert!(e.to_string().contains("eth_chainId"), "{e}");
}

/// An API served by a plain (not async) server on the core `Router` too.
#[sansrpc_tokio::rpc(sync, server, client, namespace = "calc")]
pub trait Calc {
    /// `a + b`, params by position.
    #[method(name = "add")]
    async fn add(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>>;

    /// `a / b`, params by name; -32000 for a division by zero.
    #[method(name = "div", param_kind = map)]
    async fn div(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>>;
}

struct Calculator;

impl CalcSyncServer for Calculator {
    fn add(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>> {
        a.checked_add(b)
            .ok_or(ErrorObject::fixed(-32000, "overflow"))
    }

    fn div(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>> {
        a.checked_div(b)
            .ok_or(ErrorObject::fixed(-32000, "division by zero"))
    }
}

#[tokio::test]
async fn a_sync_server_on_the_blocking_adapter_answers_the_generated_client() {
    within(LIMIT, async {
        let router = Calculator.into_sync_router().unwrap();
        let server = sansrpc_blocking::serve_tcp(
            "127.0.0.1:0",
            Arc::new(router),
            sansrpc_blocking::Options::default(),
        )
        .unwrap();
        let stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        assert_eq!(conn.add(40, 2).await.unwrap(), 42);
        assert_eq!(conn.div(84, 2).await.unwrap(), 42);
        match conn.div(1, 0).await {
            Err(CallError::Rpc(e)) => {
                assert_eq!((e.code, &*e.message), (-32000, "division by zero"))
            }
            other => panic!("an error object, not {other:?}"),
        }
        conn.client.close().await;
        tokio::task::spawn_blocking(move || server.shutdown())
            .await
            .unwrap();
    })
    .await;
}

/// The same API called from the blocking adapter's client.
#[sansrpc_tokio::rpc(blocking_client, namespace = "calc")]
pub trait CalcBlocking {
    /// `a + b`, params by position.
    #[method(name = "add")]
    async fn add(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>>;

    /// `a / b`, params by name.
    #[method(name = "div", param_kind = map)]
    async fn div(&self, a: i64, b: i64) -> Result<i64, ErrorObject<'static>>;
}

#[test]
fn the_blocking_client_extension_calls_the_sync_server() {
    let router = Calculator.into_sync_router().unwrap();
    let options = sansrpc_blocking::Options::default;
    let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(router), options()).unwrap();
    let client = sansrpc_blocking::connect_tcp(server.local_addr(), options()).unwrap();
    assert_eq!(client.add(40, 2).unwrap(), 42);
    assert_eq!(client.div(84, 2).unwrap(), 42);
    match client.div(1, 0) {
        Err(CallError::Rpc(e)) => assert_eq!(e.code, -32000),
        other => panic!("an error object, not {other:?}"),
    }
    client.close();
    server.shutdown();
}

/// Subscriptions from one trait on threads: a sync server on the core `Router` (the
/// blocking adapter serves it) and the blocking client's iterator; the async client too.
#[sansrpc_tokio::rpc(sync, blocking_client, client, namespace = "chain")]
pub trait Chain {
    /// The head's number.
    #[method(name = "head")]
    async fn head(&self) -> Result<u64, ErrorObject<'static>>;

    /// The heads from `from` on, one per item; -32602 for a `from` past the head.
    #[subscription(name = "subscribeHeads", item = u64, notification = "head", unsubscribe = "unsubscribeHeads", ids = number)]
    async fn heads(&self, pending: sansrpc_blocking::PendingSubscription, from: u64);
}

/// A chain of 16 heads: each subscription gets those from `from` on, from a thread of its
/// own, then waits for its end and reports it.
struct Heads {
    ended: std::sync::Mutex<std::sync::mpsc::Sender<sansrpc_blocking::Ended>>,
}

impl ChainSyncServer for Heads {
    fn head(&self) -> Result<u64, ErrorObject<'static>> {
        Ok(15)
    }

    fn heads(&self, pending: sansrpc_blocking::PendingSubscription, from: u64) {
        if from > 15 {
            return pending.reject(ErrorObject::fixed(-32602, "past the head"));
        }
        let sink = pending.accept().expect("accepted");
        let ended = self.ended.lock().unwrap().clone();
        // The handler's worker is not held: a thread of its own produces.
        std::thread::spawn(move || {
            for n in from..16 {
                // A client that drops its iterator at once may end it before this sends.
                if sink.send(&n).is_err() {
                    break;
                }
            }
            let _ = ended.send(sink.wait_closed());
        });
    }
}

#[test]
fn a_sync_servers_subscription_iterates_on_the_generated_blocking_client() {
    // A hang is a failure, not a stuck run.
    let (done, finished) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(LIMIT) {
            eprintln!("not done within {LIMIT:?}");
            std::process::abort();
        }
    });
    let (ended_tx, ended) = std::sync::mpsc::channel();
    let chain = Heads {
        ended: std::sync::Mutex::new(ended_tx),
    };
    let router = chain.into_sync_router().unwrap();
    let options = sansrpc_blocking::Options::default;
    let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(router), options()).unwrap();
    let client = sansrpc_blocking::connect_tcp(server.local_addr(), options()).unwrap();
    assert_eq!(ChainBlockingClient::head(&client).unwrap(), 15);
    let mut heads = ChainBlockingClient::heads(&client, 10).unwrap();
    assert_eq!(heads.id().get(), "1");
    let seen: Vec<u64> = heads.by_ref().take(6).map(Result::unwrap).collect();
    assert_eq!(seen, [10, 11, 12, 13, 14, 15]);
    assert!(heads.unsubscribe().unwrap());
    assert_eq!(ended.recv().unwrap(), sansrpc_blocking::Ended::Unsubscribed);
    match ChainBlockingClient::heads(&client, 99) {
        Err(CallError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("the handler's error, not {other:?}"),
    }
    // Dropping the iterator unsubscribes.
    let heads = ChainBlockingClient::heads(&client, 15).unwrap();
    drop(heads);
    assert_eq!(ended.recv().unwrap(), sansrpc_blocking::Ended::Unsubscribed);
    client.close();
    server.shutdown();
    let _ = done.send(());
}

#[tokio::test]
async fn a_sync_servers_subscription_streams_to_the_generated_async_client() {
    within(LIMIT, async {
        let (ended_tx, ended) = std::sync::mpsc::channel();
        let chain = Heads {
            ended: std::sync::Mutex::new(ended_tx),
        };
        let router = chain.into_sync_router().unwrap();
        let options = sansrpc_blocking::Options::default();
        let server = sansrpc_blocking::serve_tcp("127.0.0.1:0", Arc::new(router), options).unwrap();
        let stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        let mut heads = ChainClient::heads(&conn, 12).await.unwrap();
        let mut seen = Vec::new();
        while seen.len() < 4 {
            seen.push(heads.next().await.unwrap().unwrap());
        }
        assert_eq!(seen, [12, 13, 14, 15]);
        assert!(heads.unsubscribe().await.unwrap());
        let why = tokio::task::spawn_blocking(move || ended.recv().unwrap());
        assert_eq!(why.await.unwrap(), sansrpc_blocking::Ended::Unsubscribed);
        conn.client.close().await;
        tokio::task::spawn_blocking(move || server.shutdown())
            .await
            .unwrap();
    })
    .await;
}

/// A dev node's API as a new user writes it (its own module: its client's names are
/// `EthClient`'s too).
mod dev {
    use super::{serve, within, Block, LIMIT};
    use futures::StreamExt;
    use sansrpc::ErrorObject;
    use sansrpc_tokio::{sansrpc, AsyncRouter, CallError, PendingSubscription};

    /// `Result` under another name, as nodes write it.
    pub type RpcResult<T> = Result<T, ErrorObject<'static>>;

    /// A dev node's API as a new user writes it: three namespaces in one trait, an alias of
    /// `Result`, trailing `Option` args.
    #[sansrpc_tokio::rpc(server, client, namespace = "eth")]
    pub trait DevNode {
        /// `eth_chainId`.
        #[method(name = "chainId")]
        async fn chain_id(&self) -> RpcResult<String>;

        /// `eth_getBalance(address, block?)`.
        #[method(name = "getBalance")]
        async fn balance(&self, address: String, block: Option<String>) -> RpcResult<String>;

        /// `eth_getBlockByNumber(number, full)` by name, `full` optional.
        #[method(name = "getBlockByNumber", param_kind = map)]
        async fn block(&self, number: String, full: Option<bool>) -> RpcResult<Option<Block>>;

        /// `net_version`.
        #[method(name = "version", namespace = "net")]
        async fn net_version(&self) -> RpcResult<String>;

        /// `web3_clientVersion`.
        #[method(name = "clientVersion", namespace = "web3")]
        async fn client_version(&self) -> RpcResult<String>;

        /// `eth_subscribe(kind, filter?)`.
        #[subscription(name = "subscribe", item = u64, notification = "subscription", unsubscribe = "unsubscribe", ids = hex)]
        async fn heads(&self, pending: PendingSubscription, kind: String, filter: Option<Block>);
    }

    struct Dev;

    impl DevNodeServer for Dev {
        async fn chain_id(&self) -> RpcResult<String> {
            Ok("0x539".to_owned())
        }
        async fn balance(&self, address: String, block: Option<String>) -> RpcResult<String> {
            Ok(format!(
                "{address}@{}",
                block.as_deref().unwrap_or("latest")
            ))
        }
        async fn block(&self, number: String, full: Option<bool>) -> RpcResult<Option<Block>> {
            let full = full.unwrap_or(false);
            Ok(Some(Block { number, full }))
        }
        async fn net_version(&self) -> RpcResult<String> {
            Ok("1337".to_owned())
        }
        async fn client_version(&self) -> RpcResult<String> {
            Ok("dev/0.1".to_owned())
        }
        async fn heads(&self, pending: PendingSubscription, kind: String, filter: Option<Block>) {
            let Ok(sink) = pending.accept().await else {
                return;
            };
            let first = kind.len() as u64 + u64::from(filter.is_some());
            for n in first..first + 3 {
                if sink.send(&n).await.is_err() {
                    return;
                }
            }
            sink.closed().await;
        }
    }

    #[tokio::test]
    async fn several_namespaces_and_an_alias_of_result_in_one_trait() {
        within(LIMIT, async {
            let conn = serve(Dev.into_router().unwrap()).await;
            assert_eq!(conn.chain_id().await.unwrap(), "0x539");
            assert_eq!(conn.net_version().await.unwrap(), "1337");
            assert_eq!(conn.client_version().await.unwrap(), "dev/0.1");
            // The wire names, as any client sends them.
            for (method, expected) in [
                ("eth_chainId", r#""0x539""#),
                ("net_version", r#""1337""#),
                ("web3_clientVersion", r#""dev/0.1""#),
            ] {
                let raw = conn.client.call_raw(method, None).await.unwrap();
                assert_eq!(raw.get(), expected);
            }
        })
        .await;
    }

    /// A server that refuses more positional args than a method takes, as go-ethereum's
    /// argument parser does: the sansrpc router's own check on typed params (`(String,)`
    /// takes one), for a method and for `eth_subscribe`.
    fn strict_node() -> AsyncRouter {
        sansrpc::method!(GetBalance = "eth_getBalance", (String,) => String);
        let mut router = AsyncRouter::new();
        router
            .method::<GetBalance, _, _>(|(address,)| async move { Ok(format!("{address}@latest")) })
            .unwrap();
        let eth = sansrpc::connection::subscriptions::MethodSubscription::ethereum();
        router
            .subscription(eth, |pending, (kind,): (String,)| async move {
                let Ok(sink) = pending.accept().await else {
                    return;
                };
                let _ = sink.send(&(kind.len() as u64)).await;
                sink.closed().await;
            })
            .unwrap();
        router
    }

    #[tokio::test]
    async fn trailing_none_args_are_left_out_for_a_server_that_refuses_extra_args() {
        within(LIMIT, async {
            let conn = serve(strict_node()).await;
            // Left out: `["0xabc"]`, which the strict server takes.
            assert_eq!(
                conn.balance("0xabc".to_owned(), None).await.unwrap(),
                "0xabc@latest"
            );
            // Given, the arg goes on the wire, and this server refuses it as geth would.
            let refused = conn
                .balance("0xabc".to_owned(), Some("0x10".to_owned()))
                .await
                .unwrap_err();
            match refused {
                CallError::Rpc(e) => {
                    assert_eq!(e.code, -32602);
                    assert!(
                        e.message.contains("expected at most 1 params, got 2"),
                        "{e:?}"
                    );
                }
                other => panic!("refused, not {other:?}"),
            }
            // The subscription's filter left out: `["newHeads"]`.
            let mut heads = conn.heads("newHeads".to_owned(), None).await.unwrap();
            assert_eq!(heads.next().await.unwrap().unwrap(), 8);
            assert!(heads.unsubscribe().await.unwrap());
            // The generated server takes both shapes.
            let conn = serve(Dev.into_router().unwrap()).await;
            assert_eq!(
                conn.balance("0xabc".to_owned(), Some("0x10".to_owned()))
                    .await
                    .unwrap(),
                "0xabc@0x10"
            );
            assert_eq!(
                conn.balance("0xabc".to_owned(), None).await.unwrap(),
                "0xabc@latest"
            );
            let mut heads = conn.heads("newHeads".to_owned(), None).await.unwrap();
            assert_eq!(heads.next().await.unwrap().unwrap(), 8);
            // By name, a `None` is left out too.
            let block = conn.block("0x1".to_owned(), None).await.unwrap().unwrap();
            assert_eq!((block.number.as_str(), block.full), ("0x1", false));
        })
        .await;
    }

    #[tokio::test]
    async fn a_missing_param_is_named_in_the_error() {
        within(LIMIT, async {
            let conn = serve(Dev.into_router().unwrap()).await;
            for params in [None, Some("[]"), Some("{}"), Some(r#"{"full":true}"#)] {
                let params = params.map(|p| sansrpc::RawValue::from_string(p.to_owned()).unwrap());
                let e = match conn
                    .client
                    .call_raw(
                        if params.as_ref().is_some_and(|p| p.get().starts_with('{')) {
                            "eth_getBlockByNumber"
                        } else {
                            "eth_getBalance"
                        },
                        params.as_deref(),
                    )
                    .await
                {
                    Err(CallError::Rpc(e)) => e,
                    other => panic!("refused, not {other:?}"),
                };
                assert_eq!(e.code, -32602);
                let name = if e.message.contains("number") {
                    "number"
                } else {
                    "address"
                };
                assert_eq!(
                    e.message,
                    format!("Invalid params: missing field `{name}`"),
                    "{params:?}"
                );
            }
        })
        .await;
    }
}
