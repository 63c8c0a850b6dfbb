//! The calculator over real WebSockets on 127.0.0.1: typed calls, notifications and
//! concurrent calls; binary frames and oversize messages closing only their connection;
//! keep-alive dropping a silent peer; pending calls failing when the socket closes.

mod common;

use std::time::{Duration, Instant};

use common::{calculator, exercise, within, Add, Pair, LIMIT};
use futures::{SinkExt, StreamExt};
use sansrpc::endpoint::Config;
use sansrpc_tokio::ws::tungstenite::protocol::frame::coding::CloseCode;
use sansrpc_tokio::ws::tungstenite::Message;
use sansrpc_tokio::ws::{self, KeepAlive};
use sansrpc_tokio::{sansrpc, Builder};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The calculator served over WebSocket with `builder`'s config; stop it with the sender.
async fn server(
    builder: Builder,
    keepalive: Option<KeepAlive>,
) -> (String, oneshot::Sender<()>, JoinHandle<std::io::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let builder = builder.router(calculator());
    let grace = Duration::from_secs(1);
    let task = tokio::spawn(ws::serve_with(
        listener, builder, keepalive, shutdown, grace,
    ));
    (url, stop, task)
}

/// The close code of the first close frame `ws` receives, if any, before the stream ends.
async fn close_code<S>(ws: &mut S) -> Option<CloseCode>
where
    S: futures::Stream<Item = Result<Message, ws::tungstenite::Error>> + Unpin,
{
    while let Some(message) = ws.next().await {
        match message {
            Ok(Message::Close(frame)) => return frame.map(|f| f.code),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

#[tokio::test]
async fn calculator_over_websocket() {
    within(LIMIT, async {
        let (url, stop, task) = server(Builder::new(), None).await;
        let a = ws::connect(&url, Builder::new()).await.unwrap();
        let b = ws::connect(&url, Builder::new()).await.unwrap();
        tokio::join!(exercise(&a.client), exercise(&b.client));
        let _ = stop.send(());
        task.await.unwrap().unwrap();
        // The server closed both connections; calls fail as closed.
        a.driver.await.unwrap().unwrap();
        let closed = a.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await;
        assert!(closed.unwrap_err().is_closed());
        drop(b);
    })
    .await;
}

#[tokio::test]
async fn a_binary_frame_closes_with_1003() {
    within(LIMIT, async {
        let (url, stop, _task) = server(Builder::new(), None).await;
        let (mut raw, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        raw.send(Message::Binary(b"{}".to_vec().into()))
            .await
            .unwrap();
        assert_eq!(close_code(&mut raw).await, Some(CloseCode::Unsupported));
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn an_oversize_message_closes_only_its_connection() {
    within(LIMIT, async {
        let mut config = Config::default();
        config.limits.max_frame_bytes = 1024;
        let (url, stop, _task) = server(Builder::new().config(config), None).await;
        let good = ws::connect(&url, Builder::new()).await.unwrap();
        let (mut raw, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        let huge = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"add","params":[1,"{}"]}}"#,
            "x".repeat(4096)
        );
        raw.send(Message::Text(huge.into())).await.unwrap();
        assert_eq!(close_code(&mut raw).await, Some(CloseCode::Size));
        // The other connection, and new ones, are served as before.
        exercise(&good.client).await;
        let again = ws::connect(&url, Builder::new()).await.unwrap();
        let sum = again.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await;
        assert_eq!(sum.unwrap(), 3.0);
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn keepalive_drops_a_peer_that_never_answers_pings() {
    within(LIMIT, async {
        let keepalive = KeepAlive {
            interval: Duration::from_millis(100),
            timeout: Duration::from_millis(200),
        };
        let (url, stop, _task) = server(Builder::new(), Some(keepalive)).await;
        // A peer that answers pings (its driver reads) stays connected through many pings.
        let live = ws::connect_with(&url, Builder::new(), None).await.unwrap();
        // A peer that never reads never answers.
        let (mut silent, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        // Reading now answers the queued pings, too late: the server has hung up.
        let mut pings = 0;
        let ended = loop {
            match silent.next().await {
                Some(Ok(Message::Ping(_))) => pings += 1,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break start.elapsed(),
            }
        };
        assert!(pings >= 1, "the server sent no ping");
        assert!(ended < Duration::from_secs(2), "dropped after {ended:?}");
        let sum = live.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await;
        assert_eq!(sum.unwrap(), 3.0);
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn pending_calls_fail_when_the_server_closes_the_socket() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        // A server that reads one request and closes without answering it.
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
            let request = ws.next().await.unwrap().unwrap();
            assert!(request.is_text());
            ws.close(None).await.unwrap();
        });
        let conn = ws::connect(&url, Builder::new()).await.unwrap();
        let result = conn.client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await;
        assert!(result.unwrap_err().is_closed());
        conn.driver.await.unwrap().unwrap();
        server.await.unwrap();
    })
    .await;
}
