//! Method subscriptions in the Ethereum shape over real sockets on 127.0.0.1: a server's
//! `SubscriptionSink` and a client's `Subscription` stream over WebSocket and TCP; the
//! stream ending on unsubscribe, on the server's close and with the connection; the lag
//! policies seen by a slow reader and by one that never reads; plain HTTP refusing
//! subscriptions on both sides; HTTP and WebSocket on one port.

#[path = "../../../tests/support/common.rs"]
mod common;
#[path = "../../../tests/support/echoes.rs"]
mod echoes;

use std::io::{Read, Write};
use std::time::Duration;

use common::{within, LIMIT};
use echoes::Echoes;
use futures::StreamExt;
use sansrpc::connection::subscriptions::{LagPolicy, MethodSubscription, ITEM_OVERHEAD};
use sansrpc::connection::SendError;
use sansrpc::ErrorObject;
use sansrpc_tokio::{
    http, sansrpc, ws, AsyncRouter, Builder, CallError, Ended, Fanout, ServeOptions,
};
use sansrpc_tokio::{Subscription, SubscriptionError};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// What the server's subscription handlers report: how each subscription ended.
type Reports = mpsc::UnboundedReceiver<Ended>;

/// A router with `declaration` serving these kinds of subscription (the params are
/// `[kind, count]`):
/// - `"count"`: items 0..count, each sent when the queue has room, then it waits; how it
///   ended is reported;
/// - `"burst"`: items 0..count queued at once without waiting (`try_send`: a full queue
///   meets the lag policy), then it waits;
/// - `"ticks"`: an item every 5 ms until it is over; how it ended is reported;
/// - `"close"`: items 0..count, then the server ends it with an error (-32050);
/// - `"big"`: items of 64 KiB, one a millisecond without waiting for room, until sending
///   fails; why is reported;
/// - `"slow"`: accepted after `count` milliseconds, then as `"ticks"`;
/// - anything else is rejected with -32602.
fn router(declaration: MethodSubscription) -> (AsyncRouter, Reports) {
    let (tx, reports) = mpsc::unbounded_channel();
    let mut router = AsyncRouter::new();
    router
        .subscription(declaration, move |pending, (kind, count): (String, u64)| {
            let tx = tx.clone();
            async move {
                if !["count", "burst", "ticks", "close", "big", "slow"].contains(&kind.as_str()) {
                    return pending.reject(ErrorObject::fixed(-32602, "unknown subscription"));
                }
                if kind == "slow" {
                    tokio::time::sleep(Duration::from_millis(count)).await;
                }
                let sink = pending.accept().await.expect("accepted");
                // The handler is dropped when the subscription is over: a watcher reports.
                let watch = sink.clone();
                let report = tx.clone();
                tokio::spawn(async move {
                    let _ = report.send(watch.closed().await);
                });
                match kind.as_str() {
                    "count" => {
                        for n in 0..count {
                            sink.send(&n).await.unwrap();
                        }
                        std::future::pending::<()>().await;
                    }
                    "burst" => {
                        for n in 0..count {
                            let _ = sink.try_send(&n);
                        }
                        std::future::pending::<()>().await;
                    }
                    "ticks" | "slow" => {
                        for n in 0u64.. {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            if sink.send(&n).await.is_err() {
                                break;
                            }
                        }
                    }
                    "close" => {
                        for n in 0..count {
                            sink.send(&n).await.unwrap();
                        }
                        sink.close(Some(ErrorObject::fixed(-32050, "no more")));
                    }
                    _ => {
                        let big = "x".repeat(64 * 1024);
                        while sink.try_send(&big).is_ok() {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                    }
                }
            }
        })
        .unwrap();
    (router, reports)
}

/// A WebSocket server with `router`: its URL and its stop.
async fn ws_server(router: AsyncRouter) -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let builder = Builder::new().router(router);
    tokio::spawn(ws::serve(
        listener,
        builder,
        shutdown,
        Duration::from_secs(1),
    ));
    (url, stop)
}

/// A TCP server (Content-Length framing) with `router`: its address and its stop.
async fn tcp_server(router: AsyncRouter) -> (std::net::SocketAddr, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let builder = Builder::new().router(router);
    let grace = Duration::from_secs(1);
    tokio::spawn(sansrpc_tokio::serve_tcp(listener, builder, shutdown, grace));
    (addr, stop)
}

fn eth() -> MethodSubscription {
    MethodSubscription::ethereum()
}

/// The next `n` items of `stream`, which must all be items.
async fn items(stream: &mut Subscription<u64>, n: usize) -> Vec<u64> {
    let mut seen = Vec::new();
    while seen.len() < n {
        match stream.next().await {
            Some(Ok(item)) => seen.push(item),
            other => panic!("an item, not {other:?}"),
        }
    }
    seen
}

#[tokio::test]
async fn websocket_subscription_streams_items_and_unsubscribes_when_dropped() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let (url, _stop) = ws_server(router).await;
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth(), &("ticks", 0)).await.unwrap();
        assert_eq!(ticks.id().get(), r#""0x1""#, "Ethereum's hex ids");
        assert_eq!(items(&mut ticks, 10).await, (0..10).collect::<Vec<_>>());
        // A second subscription on the same connection gets its own id and items.
        let mut counted: Subscription<u64> =
            conn.client.subscribe(&eth(), &("count", 3)).await.unwrap();
        assert_eq!(counted.id().get(), r#""0x2""#);
        assert_eq!(items(&mut counted, 3).await, [0, 1, 2]);
        drop(ticks);
        // The server learns it: the client unsubscribed.
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        drop(counted);
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        // The connection goes on.
        let again: Subscription<u64> = conn.client.subscribe(&eth(), &("count", 1)).await.unwrap();
        assert_eq!(again.id().get(), r#""0x3""#);
    })
    .await;
}

#[tokio::test]
async fn tcp_unsubscribe_answers_true_and_the_server_sees_it() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let (addr, _stop) = tcp_server(router).await;
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth(), &("ticks", 0)).await.unwrap();
        assert_eq!(items(&mut ticks, 5).await, [0, 1, 2, 3, 4]);
        assert!(ticks.unsubscribe().await.unwrap(), "the server ended it");
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        // An id the server does not know is answered false.
        let answer = conn
            .client
            .call_raw("eth_unsubscribe", Some(&raw(r#"["0x1"]"#)))
            .await
            .unwrap();
        assert_eq!(answer.get(), "false");
    })
    .await;
}

fn raw(json: &str) -> Box<sansrpc::RawValue> {
    sansrpc::RawValue::from_string(json.to_owned()).unwrap()
}

#[tokio::test]
async fn a_subscribe_dropped_before_its_answer_is_unsubscribed_once_it_comes() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let (url, _stop) = ws_server(router).await;
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        // The server accepts after 300 ms; the caller gives up after 50.
        let eth = eth();
        let subscribe = conn.client.subscribe::<_, u64>(&eth, &("slow", 300));
        let gave_up = tokio::time::timeout(Duration::from_millis(50), subscribe).await;
        assert!(gave_up.is_err());
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        // The connection goes on.
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth, &("ticks", 0)).await.unwrap();
        assert_eq!(items(&mut ticks, 2).await, [0, 1]);
    })
    .await;
}

#[tokio::test]
async fn the_servers_close_ends_the_stream_after_its_items_with_the_error() {
    within(LIMIT, async {
        // With sansrpc's notices on: the error reaches sansrpc's client.
        let noticed = eth().with_notices(true);
        let (router, mut reports) = router(noticed.clone());
        let (url, _stop) = ws_server(router).await;
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let mut closing: Subscription<u64> = conn
            .client
            .subscribe(&noticed, &("close", 4))
            .await
            .unwrap();
        assert_eq!(items(&mut closing, 4).await, [0, 1, 2, 3]);
        match closing.next().await {
            Some(Err(SubscriptionError::Ended(e))) => {
                assert_eq!((e.code, &*e.message), (-32050, "no more"))
            }
            other => panic!("the server's error, not {other:?}"),
        }
        assert!(closing.next().await.is_none(), "then the stream ends");
        assert_eq!(reports.recv().await, Some(Ended::ByServer));
    })
    .await;
}

#[tokio::test]
async fn a_rejected_subscribe_fails_with_the_handlers_error() {
    within(LIMIT, async {
        let (router, _reports) = router(eth());
        let (url, _stop) = ws_server(router).await;
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let refused = conn
            .client
            .subscribe::<_, u64>(&eth(), &("logs", 0))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Some(-32602));
        // Params that do not fit the handler's are -32602 too.
        let refused = conn
            .client
            .subscribe::<_, u64>(&eth(), &("count",))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Some(-32602));
    })
    .await;
}

#[tokio::test]
async fn the_stream_ends_with_the_connection_and_the_server_sees_the_client_go() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let (url, stop) = ws_server(router).await;
        // The client goes away: the server's sink sees the connection closed.
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth(), &("ticks", 0)).await.unwrap();
        items(&mut ticks, 2).await;
        conn.driver.abort();
        let _ = conn.driver.await;
        assert_eq!(reports.recv().await, Some(Ended::Closed));
        // Whatever was read before, the stream ends.
        while let Some(item) = ticks.next().await {
            item.unwrap();
        }

        // The server goes away: the client's stream ends.
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth(), &("ticks", 0)).await.unwrap();
        items(&mut ticks, 2).await;
        let _ = stop.send(());
        while let Some(item) = ticks.next().await {
            item.unwrap();
        }
        assert_eq!(reports.recv().await, Some(Ended::Closed));
    })
    .await;
}

#[tokio::test]
async fn a_slow_reader_is_told_how_many_items_it_missed() {
    within(LIMIT, async {
        let declaration = eth()
            .with_capacity(8 * (1 + ITEM_OVERHEAD))
            .with_lag(LagPolicy::DropOldest)
            .with_notices(true);
        let (router, _reports) = router(declaration.clone());
        let (url, _stop) = ws_server(router).await;
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        // 1,000 items queued at once without waiting, and read only after a while.
        let mut counted: Subscription<u64> = conn
            .client
            .subscribe(&declaration, &("burst", 1000))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (mut missed, mut read, mut lags) = (0, Vec::new(), 0);
        while missed + read.len() as u64 != 1000 {
            match counted.next().await {
                Some(Ok(item)) => read.push(item),
                Some(Err(SubscriptionError::Lagged(n))) => {
                    missed += n;
                    lags += 1;
                }
                other => panic!("an item or a lag, not {other:?}"),
            }
        }
        assert!(
            lags > 0 && missed > 0,
            "items were dropped and the reader told"
        );
        assert!(
            read.len() <= 2 * 8,
            "at most the two queues' worth: {}",
            read.len()
        );
        assert!(read.windows(2).all(|w| w[0] < w[1]), "in order: {read:?}");
        assert_eq!(read.last(), Some(&999), "the newest kept");
    })
    .await;
}

/// `body` framed with Content-Length.
fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[tokio::test]
async fn lag_policy_close_ends_a_subscriber_that_never_reads() {
    within(LIMIT, async {
        let declaration = eth()
            .with_capacity(4 * (64 * 1024 + 2 + ITEM_OVERHEAD))
            .with_lag(LagPolicy::Close)
            .with_notices(true);
        let (router, mut reports) = router(declaration);
        let (addr, _stop) = tcp_server(router).await;
        // A raw client: it subscribes, then reads nothing.
        let mut raw = std::net::TcpStream::connect(addr).unwrap();
        let subscribe = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["big",0]}"#;
        raw.write_all(&framed(subscribe)).unwrap();
        // The producer's send fails: the queue overflowed while the socket was full.
        assert_eq!(reports.recv().await, Some(Ended::Lagged));
        // Reading it all now, the last notification carries the error.
        let tail = tokio::task::spawn_blocking(move || {
            raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut wire = Vec::new();
            let mut chunk = vec![0; 1 << 16];
            let marker = br#""error":{"code":-32006"#;
            loop {
                let n = raw.read(&mut chunk).unwrap();
                assert!(n > 0, "the connection ended before the error came");
                wire.extend_from_slice(&chunk[..n]);
                if let Some(at) = wire.windows(marker.len()).position(|w| w == marker) {
                    let from = wire[..at].iter().rposition(|&b| b == b'{').unwrap();
                    return String::from_utf8_lossy(&wire[from.saturating_sub(40)..]).into_owned();
                }
            }
        })
        .await
        .unwrap();
        assert!(
            tail.contains(r#""params":{"subscription":"0x1","error":{"code":-32006"#),
            "{tail}"
        );
    })
    .await;
}

#[tokio::test]
async fn by_default_a_subscriber_that_never_reads_is_disconnected_without_another_shape() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let (addr, _stop) = tcp_server(router).await;
        // A raw client: it subscribes, then reads nothing.
        let mut raw = std::net::TcpStream::connect(addr).unwrap();
        let subscribe = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["big",0]}"#;
        raw.write_all(&framed(subscribe)).unwrap();
        // The producer's try_send fails: the queue (1 MiB) overflowed.
        assert_eq!(reports.recv().await, Some(Ended::Lagged));
        // Read now, the connection holds items, then ends: as go-ethereum, no lag notice
        // and no error notification.
        let wire = tokio::task::spawn_blocking(move || {
            raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut wire = Vec::new();
            raw.read_to_end(&mut wire).unwrap();
            wire
        })
        .await
        .unwrap();
        // Every whole frame after the answer is a notification with a result.
        let (mut rest, mut frames) = (&wire[..], Vec::new());
        while let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&rest[..end]).unwrap();
            let len: usize = head.trim_start_matches("Content-Length: ").parse().unwrap();
            let Some(body) = rest.get(end + 4..end + 4 + len) else {
                break; // cut by the close
            };
            frames.push(String::from_utf8(body.to_vec()).unwrap());
            rest = &rest[end + 4 + len..];
        }
        assert!(frames[0].contains(r#""result":"0x1""#), "{}", frames[0]);
        assert!(frames.len() > 1);
        for frame in &frames[1..] {
            assert!(
                frame.starts_with(r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":"xxx"#),
                "{frame:.200}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn plain_http_refuses_subscriptions_on_both_sides() {
    within(LIMIT, async {
        let (router, _reports) = router(eth());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let builder = Builder::new().router(router);
        let shutdown = std::future::pending::<()>();
        tokio::spawn(http::serve(listener, builder, shutdown, Duration::from_secs(1)));

        // Our client does not send it.
        let conn = http::connect(&format!("http://{addr}"), Builder::new())
            .await
            .unwrap();
        let refused = conn
            .client
            .subscribe::<_, u64>(&eth(), &("count", 1))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, CallError::Send(SendError::NoPush)),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("not plain HTTP"), "{refused}");

        // Another client's subscribe is answered with an error that says why.
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["count",1]}"#;
        let answer = tokio::task::spawn_blocking(move || post(addr, body))
            .await
            .unwrap();
        assert!(
            answer.contains(r#""error":{"code":-32601,"message":"Subscriptions are not supported over plain HTTP"#),
            "{answer}"
        );
    })
    .await;
}

/// POSTs `body` to `addr` and returns the whole answer (the connection closed after it).
fn post(addr: std::net::SocketAddr, body: &str) -> String {
    post_with(addr, body, "\r\n")
}

/// `post` with its head's lines ended with `eol`.
fn post_with(addr: std::net::SocketAddr, body: &str, eol: &str) -> String {
    let mut raw = std::net::TcpStream::connect(addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!(
        "POST / HTTP/1.1{eol}Host: {addr}{eol}Content-Type: application/json{eol}Connection: close{eol}Content-Length: {}{eol}{eol}{body}",
        body.len()
    );
    raw.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    raw.read_to_string(&mut answer).unwrap();
    answer
}

sansrpc::method!(ChainId = "eth_chainId", () => String);

#[tokio::test]
async fn one_port_serves_http_and_websocket() {
    within(LIMIT, async {
        let (mut router, _reports) = router(eth());
        router
            .method::<ChainId, _, _>(|()| async { Ok("0x539".to_owned()) })
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let builder = Builder::new().router(router);
        let shutdown = std::future::pending::<()>();
        let options = ServeOptions::default();
        let grace = Duration::from_secs(1);
        tokio::spawn(http::serve_upgrading_with(
            listener, builder, options, shutdown, grace,
        ));

        let over_http = http::connect(&format!("http://{addr}"), Builder::new())
            .await
            .unwrap();
        assert_eq!(
            over_http.client.call::<ChainId>(&()).await.unwrap(),
            "0x539"
        );
        let over_ws = ws::connect(&format!("ws://{addr}"), Builder::new())
            .await
            .unwrap();
        assert_eq!(over_ws.client.call::<ChainId>(&()).await.unwrap(), "0x539");
        let mut counted: Subscription<u64> = over_ws
            .client
            .subscribe(&eth(), &("count", 3))
            .await
            .unwrap();
        assert_eq!(items(&mut counted, 3).await, [0, 1, 2]);
        // The HTTP side of the same port still refuses subscriptions.
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["count",1]}"#;
        let answer = tokio::task::spawn_blocking(move || post(addr, body))
            .await
            .unwrap();
        assert!(answer.contains(r#""code":-32601"#), "{answer}");
        // A head whose lines end with a bare LF is a request like any other (it waited for
        // 16 KiB or the head's timeout, unanswered).
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}"#;
        let answer = tokio::task::spawn_blocking(move || post_with(addr, body, "\n"))
            .await
            .unwrap();
        assert!(answer.contains(r#""result":"0x539""#), "{answer}");
    })
    .await;
}

#[tokio::test]
async fn bad_subscribe_and_unsubscribe_params_are_answered() {
    use futures::SinkExt;
    use sansrpc_tokio::ws::tungstenite::Message;
    within(LIMIT, async {
        let (router, _reports) = router(eth());
        let (url, _stop) = ws_server(router).await;
        let (mut raw, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        let cases = [
            // Before any subscription: the router answers false.
            (r#"{"jsonrpc":"2.0","id":1,"method":"eth_unsubscribe","params":["0x1"]}"#, r#""result":false"#),
            (r#"{"jsonrpc":"2.0","id":2,"method":"eth_subscribe"}"#, r#""code":-32602"#),
            (r#"{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":{"a":1}}"#, r#""code":-32602"#),
            (r#"{"jsonrpc":"2.0","id":4,"method":"eth_subscribe","params":["count",1]}"#, r#""result":"0x1""#),
            // Now the connection answers it: whatever it is given, an answer.
            (r#"{"jsonrpc":"2.0","id":5,"method":"eth_unsubscribe"}"#, r#""result":false"#),
            (r#"{"jsonrpc":"2.0","id":6,"method":"eth_unsubscribe","params":[{"x":1}]}"#, r#""result":false"#),
            (r#"{"jsonrpc":"2.0","id":7,"method":"eth_unsubscribe","params":["0xffffffffffffffffff"]}"#, r#""result":false"#),
            (r#"{"jsonrpc":"2.0","id":8,"method":"eth_unsubscribe","params":{"subscription":"0x1"}}"#, r#""result":true"#),
        ];
        for (request, expected) in cases {
            raw.send(Message::text(request)).await.unwrap();
            // The answer (a notification of the subscription may come first).
            let answer = loop {
                let message = raw.next().await.unwrap().unwrap();
                let text = message.to_text().unwrap().to_owned();
                if text.contains(r#""id":"#) {
                    break text;
                }
            };
            assert!(answer.contains(expected), "{request} -> {answer}");
        }
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_unix_socket_carries_subscriptions_as_geths_ipc_does() {
    within(LIMIT, async {
        let (router, mut reports) = router(eth());
        let dir = std::env::temp_dir().join(format!("sansrpc-subs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("geth.ipc");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let builder = Builder::new().router(router);
        let shutdown = std::future::pending::<()>();
        let grace = Duration::from_secs(1);
        tokio::spawn(sansrpc_tokio::serve_unix(
            listener, builder, shutdown, grace,
        ));
        let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::unix(stream));
        let mut ticks: Subscription<u64> =
            conn.client.subscribe(&eth(), &("ticks", 0)).await.unwrap();
        assert_eq!(items(&mut ticks, 3).await, [0, 1, 2]);
        drop(ticks);
        assert_eq!(reports.recv().await, Some(Ended::Unsubscribed));
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// A router whose `eth_subscribe` adds each accepted sink to `fanout` (the handler ends).
fn fanout_router(declaration: MethodSubscription, fanout: std::sync::Arc<Fanout>) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    router
        .subscription(declaration, move |pending, (_kind,): (String,)| {
            let fanout = std::sync::Arc::clone(&fanout);
            async move {
                if let Ok(sink) = pending.accept().await {
                    fanout.add(sink);
                }
            }
        })
        .unwrap();
    router
}

#[tokio::test]
async fn a_fanout_sends_each_item_once_to_every_subscriber_in_order() {
    within(LIMIT, async {
        let fanout = std::sync::Arc::new(Fanout::new());
        let (url, _stop) = ws_server(fanout_router(eth(), fanout.clone())).await;
        let mut conns = Vec::new();
        let mut streams = Vec::new();
        for _ in 0..3 {
            let conn = ws::connect(&url, Builder::new()).await.unwrap();
            let heads: Subscription<u64> =
                conn.client.subscribe(&eth(), &("newHeads",)).await.unwrap();
            streams.push(heads);
            conns.push(conn);
        }
        // Accepted: each handler added its sink (the answer goes out after the accept).
        while fanout.len() < 3 {
            tokio::task::yield_now().await;
        }
        for n in 0..200u64 {
            assert_eq!(fanout.send(&n), 3);
        }
        for heads in &mut streams {
            assert_eq!(items(heads, 200).await, (0..200).collect::<Vec<_>>());
        }
        // One unsubscribes: it leaves the fan-out at the next send; the others go on.
        let gone = streams.pop().unwrap();
        assert!(gone.unsubscribe().await.unwrap());
        assert_eq!(fanout.send(&200u64), 2);
        assert_eq!(fanout.len(), 2);
        for heads in &mut streams {
            assert_eq!(items(heads, 1).await, [200]);
        }
    })
    .await;
}

/// A fan-out's items are held once, not copied, by each WebSocket connection's output
/// and written from there; one written only in part goes on from where the socket
/// stopped. A subscriber with a 4 KiB receive buffer reads nothing while 300 items of
/// 1 KiB pile up (the server's writes stop partway through frames), then reads them all:
/// every item whole, in order.
#[tokio::test]
async fn a_websocket_subscriber_behind_gets_every_shared_item_whole() {
    within(LIMIT, async {
        let roomy = eth().with_capacity(1 << 20);
        let fanout = std::sync::Arc::new(Fanout::new());
        let (url, _stop) = ws_server(fanout_router(roomy, fanout.clone())).await;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let addr = url.trim_start_matches("ws://").parse().unwrap();
        let stream = socket.connect(addr).await.unwrap().into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        let (to_read, read_now) = std::sync::mpsc::channel::<()>();
        let reader = tokio::task::spawn_blocking(move || {
            use tokio_tungstenite::tungstenite::{client, Message};
            let (mut ws, _) = client::client(url.as_str(), stream).unwrap();
            let subscribe =
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
            ws.send(Message::text(subscribe)).unwrap();
            let answer = ws.read().unwrap().into_text().unwrap();
            assert!(answer.contains(r#""result":"0x"#), "{answer}");
            read_now.recv().unwrap();
            (0..300)
                .map(|_| ws.read().unwrap().into_text().unwrap().to_string())
                .collect::<Vec<_>>()
        });
        while fanout.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let item = |n: usize| format!("{n:06}{}", "x".repeat(1018));
        for n in 0..300 {
            assert_eq!(fanout.send(&item(n)), 1);
        }
        // The server writes until the peer's window is full.
        tokio::time::sleep(Duration::from_millis(200)).await;
        to_read.send(()).unwrap();
        let frames = reader.await.unwrap();
        for (n, frame) in frames.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(frame).unwrap();
            assert_eq!(v["method"], "eth_subscription");
            assert_eq!(v["params"]["result"], item(n), "item {n}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_fanout_disconnects_a_subscriber_that_never_reads_and_the_others_get_every_item() {
    within(LIMIT, async {
        // 64 KiB a queue: the silent subscriber meets it fast.
        let small = eth().with_capacity(64 << 10);
        let fanout = std::sync::Arc::new(Fanout::new());
        let (addr, _stop) = tcp_server(fanout_router(small.clone(), fanout.clone())).await;
        // The silent one: subscribes over raw TCP, reads nothing.
        let mut silent = std::net::TcpStream::connect(addr).unwrap();
        let subscribe =
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#;
        silent.write_all(&framed(subscribe)).unwrap();
        // The reader, on its own task.
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let reader = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        let mut heads: Subscription<String> = reader
            .client
            .subscribe(&small, &("newHeads",))
            .await
            .unwrap();
        while fanout.len() < 2 {
            tokio::task::yield_now().await;
        }
        let (progress, mut read) = tokio::sync::watch::channel(0u64);
        let follow = tokio::spawn(async move {
            let mut seen = 0u64;
            loop {
                let item = heads.next().await.unwrap().unwrap();
                if item == "end" {
                    return seen;
                }
                assert_eq!(item[..6], format!("{seen:06}"), "in order");
                seen += 1;
                progress.send_replace(seen);
            }
        });
        // 1 KiB items until the subscriber that never reads is gone (its queue, 64 KiB,
        // full once its socket's buffers are), then 100 more. The reader (whose queue is as
        // small) is waited for every 32 items: never 64 KiB behind.
        let (mut n, mut after) = (0u64, None);
        while after.is_none_or(|first| n < first + 100) {
            assert!(n < 100_000, "the silent subscriber was never disconnected");
            let to = fanout.send(&format!("{n:06}{}", "x".repeat(1018)));
            if n == 0 {
                assert_eq!(to, 2);
            }
            if to == 1 && after.is_none() {
                after = Some(n);
            }
            if n % 32 == 31 {
                read.wait_for(|&seen| seen > n).await.unwrap();
            }
            n += 1;
        }
        fanout.send("end");
        assert_eq!(follow.await.unwrap(), n, "the reader got every item");
        assert_eq!(fanout.len(), 1);
        // Its connection was closed (as geth closes it), after what was written.
        let wire = tokio::task::spawn_blocking(move || {
            silent
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut wire = Vec::new();
            silent.read_to_end(&mut wire).unwrap();
            wire
        })
        .await
        .unwrap();
        assert!(!wire.is_empty());
        assert!(!String::from_utf8_lossy(&wire).contains("lagged"));
    })
    .await;
}

/// A live subscription does not hold a server's shutdown for its grace period: a producer
/// that only waits for its subscription to end is ended with the connection, the server
/// returns, and the client's stream ends. The grace period is a minute; the test's limit,
/// a third of it.
#[tokio::test]
async fn a_live_subscription_does_not_hold_shutdown_for_the_grace_period() {
    within(LIMIT, async {
        let mut router = AsyncRouter::new();
        router
            .subscription(eth(), move |pending, (_kind,): (String,)| async move {
                let Ok(sink) = pending.accept().await else {
                    return;
                };
                sink.closed().await;
            })
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let server = tokio::spawn(ws::serve(
            listener,
            Builder::new().router(router),
            shutdown,
            Duration::from_secs(60),
        ));
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let mut heads: Subscription<u64> =
            conn.client.subscribe(&eth(), &("newHeads",)).await.unwrap();
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        assert!(!matches!(heads.next().await, Some(Ok(_))));
    })
    .await;
}

/// A parked connection lets a fan-out write its notifications to the socket from the
/// producer's thread ([`sansrpc::Connection::may_bypass`]); the connection's driver takes
/// that back on each turn. Here the two race on two worker threads: three WebSocket
/// subscribers with 4 KiB receive buffers, reading in bursts with pauses (so that some
/// writes are taken in part or not at all, and the socket fills), each asking an `echo`
/// of 3 KiB every 25 items (which wakes its driver between notifications, and whose answer
/// the socket takes in part too), while a thread
/// sends 3,000 items of 300 bytes; once subscribed, each subscribes again to a
/// subscription whose handler sends 20 items as it is accepted. Every subscriber gets every
/// item whole, once, in order, and every answer to its requests; no notification comes
/// before the answer naming its subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_written_past_a_parked_driver_keep_their_order_with_its_own_output() {
    within(LIMIT, async {
        const ITEMS: usize = 3_000;
        const SUBSCRIBERS: usize = 3;
        let roomy = eth().with_capacity(4 << 20);
        let fanout = std::sync::Arc::new(Fanout::new());
        // `newHeads` joins the fan-out; `burst` sends 20 items from its handler at once.
        let mut router = AsyncRouter::new();
        let joins = fanout.clone();
        router
            .subscription(roomy, move |pending, (kind,): (String,)| {
                let fanout = std::sync::Arc::clone(&joins);
                async move {
                    let Ok(sink) = pending.accept().await else {
                        return;
                    };
                    if kind == "burst" {
                        for n in 0..20u64 {
                            sink.send(&n).await.unwrap();
                        }
                        sink.closed().await;
                    } else {
                        fanout.add(sink);
                    }
                }
            })
            .unwrap();
        router
            .raw_method("echo", |params| async move {
                Ok(params.unwrap_or_else(|| sansrpc::RawValue::from_string("null".into()).unwrap()))
            })
            .unwrap();
        let (url, _stop) = ws_server(router).await;
        let item = |n: usize| format!("{n:06}{}", "y".repeat(294));
        let mut readers = Vec::new();
        for who in 0..SUBSCRIBERS {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_recv_buffer_size(4096).unwrap();
            let addr = url.trim_start_matches("ws://").parse().unwrap();
            let stream = socket.connect(addr).await.unwrap().into_std().unwrap();
            stream.set_nonblocking(false).unwrap();
            let url = url.clone();
            readers.push(tokio::task::spawn_blocking(move || {
                use tokio_tungstenite::tungstenite::{client, Message};
                let (mut ws, _) = client::client(url.as_str(), stream).unwrap();
                let subscribe =
                    r#"{"jsonrpc":"2.0","id":0,"method":"eth_subscribe","params":["newHeads"]}"#;
                ws.send(Message::text(subscribe)).unwrap();
                let (mut seen, mut echoes) = (0usize, Echoes::new(who));
                let (mut heads, mut burst, mut bursts) = (None, None, 0u64);
                while seen < ITEMS || echoes.waiting() || bursts < 20 {
                    let text = ws.read().unwrap().into_text().unwrap();
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    if v["method"] == "eth_subscription" {
                        let to = Some(&v["params"]["subscription"]);
                        if to == burst.as_ref() {
                            assert_eq!(v["params"]["result"], bursts, "subscriber {who}");
                            bursts += 1;
                            continue;
                        }
                        // Never before the answer that names its subscription.
                        assert_eq!(to, heads.as_ref(), "subscriber {who}: {text}");
                        assert_eq!(v["params"]["result"], item(seen), "subscriber {who}");
                        seen += 1;
                        echoes.after_item(&mut ws, seen);
                    } else if v["id"] == 0 {
                        heads = Some(v["result"].clone());
                        // A second subscription, its items sent as it is accepted (the
                        // driver parked with the first one active, nothing queued): they
                        // come after its answer.
                        let subscribe = r#"{"jsonrpc":"2.0","id":"burst","method":"eth_subscribe","params":["burst"]}"#;
                        ws.send(Message::text(subscribe)).unwrap();
                    } else if v["id"] == "burst" {
                        burst = Some(v["result"].clone());
                    } else {
                        echoes.answer(&v);
                    }
                }
                (seen, echoes.answered, bursts)
            }));
        }
        while fanout.len() < SUBSCRIBERS {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let producer = std::thread::spawn(move || {
            for n in 0..ITEMS {
                assert_eq!(fanout.send(&item(n)), SUBSCRIBERS, "item {n}");
                if n % 100 == 99 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        for reader in readers {
            let got = reader.await.unwrap();
            assert_eq!(got, (ITEMS, ITEMS as u64 / 25, 20));
        }
        producer.join().unwrap();
    })
    .await;
}
