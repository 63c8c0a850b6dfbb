//! The calculator over real WebSockets on 127.0.0.1: typed calls, notifications and
//! concurrent calls; binary frames and oversize messages closing only their connection;
//! keep-alive dropping a silent peer; pending calls failing when the socket closes.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{calculator, exercise, within, Add, Pair, LIMIT};
use futures::{SinkExt, StreamExt};
use sansrpc::connection::Config;
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
    let mut options = sansrpc_tokio::ServeOptions::default();
    options.keepalive = keepalive;
    let task = tokio::spawn(ws::serve_with(listener, builder, options, shutdown, grace));
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

/// A raw client: the upgrade request for `url`'s server, written by hand.
fn upgrade_request(addr: &str) -> String {
    format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// A raw client: connects to `url`'s server and writes the upgrade request with `behind`
/// in the same write; returns the stream, the server's `101` head, and the bytes read
/// after it.
async fn upgraded(url: &str, behind: &[u8]) -> (tokio::net::TcpStream, String, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("ws://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut wire = upgrade_request(addr).into_bytes();
    wire.extend_from_slice(behind);
    stream.write_all(&wire).await.unwrap();
    let mut buf = Vec::new();
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            assert!(buf.starts_with(b"HTTP/1.1 101"), "{buf:?}");
            let read = buf.split_off(at + 4);
            return (stream, String::from_utf8(buf).unwrap(), read);
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed during the handshake");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads frames (a server's: unmasked) from `stream`, after what `read` holds, until `want`
/// events came; `read` keeps what follows them.
async fn read_events(
    stream: &mut tokio::net::TcpStream,
    read: &mut Vec<u8>,
    want: usize,
) -> Vec<String> {
    use sansrpc::codec::websocket::{Role, Step, WsDecoder, WsEvent};
    use tokio::io::AsyncReadExt;
    let mut decoder = WsDecoder::new(Role::Client, 1 << 20);
    let mut seen = Vec::new();
    while seen.len() < want {
        let used = match decoder.decode(read).unwrap() {
            Step::Event(used, event) => {
                seen.push(match event {
                    WsEvent::Text(t) => String::from_utf8(t.to_vec()).unwrap(),
                    WsEvent::Ping(p) => format!("ping {}", String::from_utf8_lossy(p)),
                    WsEvent::Pong(p) => format!("pong {}", String::from_utf8_lossy(p)),
                    WsEvent::Close { code, .. } => format!("close {code:?}"),
                });
                used
            }
            Step::Fragment(used) => used,
            Step::Incomplete(_) => {
                let mut chunk = [0u8; 4096];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed after {seen:?}");
                read.extend_from_slice(&chunk[..n]);
                continue;
            }
        };
        read.drain(..used);
    }
    seen
}

/// A masked client frame with any first byte (fin, opcode).
fn client_frame(b0: u8, payload: &[u8]) -> Vec<u8> {
    use sansrpc::codec::websocket::{encode_frame, Opcode};
    let mut out = Vec::new();
    encode_frame(Opcode::Text, payload, Some([9, 8, 7, 6]), &mut out);
    out[0] = b0;
    out
}

#[tokio::test]
async fn frames_sent_right_behind_the_upgrade_request_are_answered() {
    within(LIMIT, async {
        let (url, stop, _task) = server(Builder::new(), None).await;
        // The head, a call, a ping, and a call in two fragments with a ping between them:
        // one write, so the server reads them all with its handshake.
        let mut wire = Vec::new();
        wire.extend(client_frame(
            0x81,
            br#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}"#,
        ));
        wire.extend(client_frame(0x89, b"hello"));
        wire.extend(client_frame(0x01, br#"{"jsonrpc":"2.0","id":2,"#));
        wire.extend(client_frame(0x89, b"again"));
        wire.extend(client_frame(
            0x80,
            br#""method":"add","params":{"a":3,"b":4}}"#,
        ));
        let (mut stream, _, read) = upgraded(&url, &wire).await;
        // Events until both answers came; pongs carry their ping's payload, and the newest
        // ping is answered (an older one's pong may be replaced by it).
        let mut answers = Vec::new();
        let mut pongs = Vec::new();
        let mut read = read;
        while answers.len() < 2 {
            let event = read_events(&mut stream, &mut read, 1).await;
            let event = event.into_iter().next().unwrap();
            if event.starts_with("pong") {
                pongs.push(event);
            } else {
                answers.push(event);
            }
        }
        answers.sort();
        assert_eq!(
            answers,
            [
                r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#,
                r#"{"jsonrpc":"2.0","result":7.0,"id":2}"#
            ]
        );
        assert!(pongs.iter().all(|p| p == "pong hello" || p == "pong again"));
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn a_ping_is_answered_with_its_payload_and_a_close_with_its_code() {
    use tokio::io::AsyncWriteExt;
    within(LIMIT, async {
        let (url, stop, _task) = server(Builder::new(), None).await;
        let (mut stream, head, mut read) = upgraded(&url, &[]).await;
        // The accept key RFC 6455 §1.3 gives for this request's key.
        assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
        stream
            .write_all(&client_frame(0x89, b"are you there"))
            .await
            .unwrap();
        let seen = read_events(&mut stream, &mut read, 1).await;
        assert_eq!(seen, ["pong are you there"]);
        stream
            .write_all(&client_frame(0x88, &[0x0F, 0xA0])) // 4000
            .await
            .unwrap();
        let seen = read_events(&mut stream, &mut read, 1).await;
        assert_eq!(seen, ["close Some(4000)"]);
        // Then the server closes the TCP connection.
        use tokio::io::AsyncReadExt;
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn a_large_message_arriving_over_many_reads_is_answered_and_the_next_one_too() {
    use tokio::io::AsyncWriteExt;
    within(LIMIT, async {
        let (url, stop, _task) = server(Builder::new(), None).await;
        let (mut stream, _, mut read) = upgraded(&url, &[]).await;
        // Five times the largest read (64 KiB: the server takes it in many reads, its
        // buffer growing as the bytes come), then a small call.
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"add","params":{{"a":1,"b":2,"pad":"{}"}}}}"#,
            "x".repeat(320 * 1024)
        );
        stream
            .write_all(&client_frame(0x81, big.as_bytes()))
            .await
            .unwrap();
        let small = br#"{"jsonrpc":"2.0","id":2,"method":"add","params":{"a":3,"b":4}}"#;
        stream.write_all(&client_frame(0x81, small)).await.unwrap();
        let seen = read_events(&mut stream, &mut read, 2).await;
        assert_eq!(
            seen,
            [
                r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#,
                r#"{"jsonrpc":"2.0","result":7.0,"id":2}"#
            ]
        );
        let _ = stop.send(());
    })
    .await;
}

/// Answers far larger than the socket takes at once, asked for by a peer that reads only
/// once it has asked for all of them: the server writes each frame's payload straight from
/// the connection's buffer and, where the socket took a frame only in part, the rest of it
/// from its own; every answer arrives whole, framed once, and in order.
#[tokio::test]
async fn large_answers_to_a_peer_that_reads_late_arrive_whole_and_in_order() {
    use sansrpc::RawValue;
    use sansrpc_tokio::AsyncRouter;
    use tokio::io::AsyncWriteExt;
    within(LIMIT, async {
        let mut router = AsyncRouter::new();
        router
            .raw_method("fill", |params| async move {
                let (n, byte): (usize, char) = params
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or((0, 'x'));
                Ok(RawValue::from_serialize(&byte.to_string().repeat(n)).unwrap())
            })
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let options = sansrpc_tokio::ServeOptions::default();
        let builder = Builder::new().router(router);
        let grace = Duration::from_secs(1);
        tokio::spawn(ws::serve_with(listener, builder, options, shutdown, grace));
        let (mut stream, _, mut read) = upgraded(&url, &[]).await;
        // 24 answers of 40-200 KiB (3 MiB in all), asked for before any is read; small
        // ones between them, so that frames of each header size share a write.
        let sizes: Vec<usize> = (0..48)
            .map(|i| if i % 2 == 0 { 40_000 + i * 3_331 } else { i })
            .collect();
        for (i, n) in sizes.iter().enumerate() {
            let byte = char::from(b'a' + (i % 26) as u8);
            let call =
                format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"fill","params":[{n},"{byte}"]}}"#);
            stream
                .write_all(&client_frame(0x81, call.as_bytes()))
                .await
                .unwrap();
        }
        let seen = read_events(&mut stream, &mut read, sizes.len()).await;
        for (i, (answer, n)) in seen.iter().zip(&sizes).enumerate() {
            let byte = char::from(b'a' + (i % 26) as u8);
            let want = format!(
                r#"{{"jsonrpc":"2.0","result":"{}","id":{i}}}"#,
                byte.to_string().repeat(*n)
            );
            assert!(
                answer == &want,
                "answer {i} of {} bytes differs",
                answer.len()
            );
        }
        let _ = stop.send(());
    })
    .await;
}

/// A server that closes (here for a protocol fault: a binary frame) while its peer keeps
/// sending reads on after its close frame, dropping what comes, until the peer's close
/// frame (RFC 6455 §5.5.1, §7.1.1). Closed with input unread, the socket is reset, and
/// what it had not sent yet (answers the peer has not read, then the close frame) is lost:
/// the peer sees its connection reset, no close frame (1006).
#[tokio::test]
async fn a_closing_server_reads_until_the_peers_close_so_its_close_frame_arrives() {
    use sansrpc::method::Method;
    use sansrpc_tokio::{AsyncRouter, ServeOptions};

    enum Sleep {}
    impl Method for Sleep {
        const NAME: &'static str = "sleep";
        type Params = (u64,);
        type Result = u64;
    }
    let call = |ms: u64, id: u64| {
        let call = format!(r#"{{"jsonrpc":"2.0","method":"sleep","params":[{ms}],"id":{id}}}"#);
        Message::Text(call.into())
    };
    within(LIMIT, async {
        let mut router = AsyncRouter::new();
        router
            .method::<Sleep, _, _>(|(ms,)| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ms)
            })
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut options = ServeOptions::default();
        options.keepalive = None;
        let builder = Builder::new().router(router);
        let shutdown = std::future::pending();
        let grace = Duration::from_secs(1);
        tokio::spawn(ws::serve_with(listener, builder, options, shutdown, grace));
        // A client with a small receive window: the answers it does not read yet fill it,
        // and what the server writes after them waits in the server's send queue.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(2048).unwrap();
        let tcp = socket.connect(addr).await.unwrap();
        let url = format!("ws://{addr}");
        let (raw, _) = tokio_tungstenite::client_async(url, tcp).await.unwrap();
        let (mut tx, mut rx) = raw.split();
        for id in 0..200 {
            tx.feed(call(0, id)).await.unwrap();
        }
        // A request still answered after the input ended (its handler takes 200 ms), then
        // the fault, then frames that go on coming while the server answers and closes.
        tx.feed(call(200, 200)).await.unwrap();
        tx.feed(Message::Binary(b"{}".to_vec().into()))
            .await
            .unwrap();
        tx.flush().await.unwrap();
        for id in 201..260 {
            if tx.send(call(0, id)).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Reading at last, within the server's linger period: the answers, then its close
        // frame with its code.
        assert_eq!(close_code(&mut rx).await, Some(CloseCode::Unsupported));
    })
    .await;
}

/// Writes `wire` to `url`'s server and reads what it answers until it closes.
async fn answer_to(url: &str, wire: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("ws://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(wire).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn a_refused_opening_handshake_is_answered_before_the_connection_closes() {
    within(LIMIT, async {
        let (url, stop, _task) = server(Builder::new(), None).await;
        let addr = url.trim_start_matches("ws://").to_string();
        let good = upgrade_request(&addr);
        // Another version: 426, naming 13 (RFC 6455 §4.4).
        let old = good.replace("Version: 13", "Version: 8");
        let answer = answer_to(&url, old.as_bytes()).await;
        assert!(
            answer.starts_with("HTTP/1.1 426 Upgrade Required\r\n"),
            "{answer}"
        );
        assert!(answer.contains("sec-websocket-version: 13\r\n"), "{answer}");
        // A plain GET, and a key that is not 16 bytes in base64: 400.
        let plain = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let answer = answer_to(&url, plain.as_bytes()).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(answer.ends_with("no Upgrade: websocket"), "{answer}");
        let short = good.replace("dGhlIHNhbXBsZSBub25jZQ==", "c2hvcnQ=");
        let answer = answer_to(&url, short.as_bytes()).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        // A page of another site: 403 (the default `Origin` rule: loopback pages only).
        let evil = good.replace("\r\n\r\n", "\r\nOrigin: https://evil.example\r\n\r\n");
        let answer = answer_to(&url, evil.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
        // A head over 16 KiB: 431.
        let huge = good.replace(
            "\r\n\r\n",
            &format!("\r\nX-Pad: {}\r\n\r\n", "a".repeat(17_000)),
        );
        let answer = answer_to(&url, huge.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
        // A good one still opens, with the RFC's accept key for the RFC's nonce.
        let (_stream, head, _) = upgraded(&url, b"").await;
        assert!(
            head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
            "{head}"
        );
        let _ = stop.send(());
    })
    .await;
}
