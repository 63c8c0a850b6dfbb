//! The calculator over real HTTP on 127.0.0.1: the typed client, and the server's statuses
//! checked with hand-written requests (405, 415, 413 without reading the body, 204, batches,
//! parse errors); the client against hand-written servers (kept-alive connections, a server
//! that closes them, error statuses).

#[path = "../../../tests/support/common.rs"]
mod common;
#[path = "support/noisy.rs"]
mod noisy;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{calculator, within, Add, Divide, Multiply, Pair, Tick, Ticks, LIMIT};
use futures::future::join_all;
use sansrpc::connection::{Config, EndReason};
use sansrpc::RawValue;
use sansrpc_tokio::http;
use sansrpc_tokio::{sansrpc, Builder, CallError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server: its address, the sender that stops it, its task.
type Serving = (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<std::io::Result<()>>,
);

/// The calculator served over HTTP with `config`; stop it with the sender.
async fn server(config: Config) -> Serving {
    serve_builder(Builder::new().config(config).router(calculator())).await
}

/// `builder` served over HTTP; stop it with the sender.
async fn serve_builder(builder: Builder) -> Serving {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let grace = Duration::from_secs(1);
    (
        addr,
        stop,
        tokio::spawn(http::serve(listener, builder, shutdown, grace)),
    )
}

/// Sends `head` (and `body`) on a fresh connection and reads the response's status line,
/// headers and body (by its Content-Length), without closing the sending side.
async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    read_response(&mut stream, &mut Vec::new()).await
}

async fn post(addr: SocketAddr, content_type: &str, body: &str) -> (u16, String, String) {
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    exchange(addr, &head, body.as_bytes()).await
}

#[tokio::test]
async fn calculator_over_http() {
    within(LIMIT, async {
        let (addr, stop, task) = server(Config::default()).await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        let p = Pair { a: 6.0, b: 3.0 };
        assert_eq!(client.call::<Add>(&p).await.unwrap(), 9.0);
        assert_eq!(client.call::<Divide>(&p).await.unwrap(), 2.0);
        let zero = client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await;
        assert_eq!(zero.unwrap_err().code(), Some(1001));
        let unknown = client.call_raw("nope", None).await.unwrap_err();
        assert_eq!(unknown.code(), Some(-32601));
        let raw = client.call_raw("add", Some(RawValue::from_json("[1, 2]").unwrap()));
        assert_eq!(raw.await.unwrap().get(), "3.0");
        // Concurrent calls, each its own POST (on the connections kept alive).
        let client = &client;
        let calls = (0..16).map(|i| async move {
            let p = Pair {
                a: f64::from(i),
                b: 2.0,
            };
            client.call::<Multiply>(&p).await
        });
        for (i, r) in join_all(calls).await.into_iter().enumerate() {
            assert_eq!(r.unwrap(), i as f64 * 2.0);
        }
        // Notifications (204), seen by a later call.
        let before = client.call::<Ticks>(&()).await.unwrap();
        client.notify::<Tick>(&()).await.unwrap();
        client.notify::<Tick>(&()).await.unwrap();
        assert!(client.call::<Ticks>(&()).await.unwrap() >= before + 2);
        // A batch: one POST, one result per call, in order.
        let mut batch = client.batch();
        let add = batch.call::<Add>(&p);
        batch.notify::<Tick>(&());
        let div = batch.call::<Divide>(&Pair { a: 1.0, b: 0.0 });
        let mut results = batch.send().await.unwrap();
        assert_eq!(add.take(&mut results).unwrap(), 9.0);
        assert_eq!(div.take(&mut results).unwrap_err().code(), Some(1001));
        // A batch of notifications only: 204, no results.
        let mut batch = client.batch();
        batch.notify::<Tick>(&()).notify::<Tick>(&());
        assert!(batch.send().await.unwrap().is_empty());

        let _ = stop.send(());
        task.await.unwrap().unwrap();
        // Stopped: nothing listens any more.
        let gone = client.call::<Add>(&p).await.unwrap_err();
        assert!(
            matches!(
                gone,
                CallError::Ended(EndReason::Unanswered { status: None })
            ),
            "{gone:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn http_errors_reach_the_client() {
    within(LIMIT, async {
        let mut config = Config::default();
        config.limits.max_frame_bytes = 256;
        let (addr, stop, _task) = server(config).await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        let big = format!("[\"{}\"]", "x".repeat(1024));
        let big = RawValue::from_json(&big).unwrap();
        match client.call_raw("add", Some(big)).await {
            Err(CallError::Ended(EndReason::Unanswered { status })) => {
                assert_eq!(status, Some(413))
            }
            other => panic!("expected 413, got {other:?}"),
        }
        // Small calls still go through.
        assert_eq!(
            client.call::<Add>(&Pair { a: 1.0, b: 2.0 }).await.unwrap(),
            3.0
        );
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn statuses() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let call = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#;

        let (status, headers, _) = exchange(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"").await;
        assert_eq!(status, 405);
        assert!(headers.contains("allow: post"), "{headers}");

        assert_eq!(post(addr, "text/plain", call).await.0, 415);
        assert_eq!(
            post(addr, "application/json; charset=latin-1", call)
                .await
                .0,
            415
        );

        let (status, headers, body) = post(addr, "application/json; charset=UTF-8", call).await;
        assert_eq!(status, 200);
        assert!(
            headers.contains("content-type: application/json"),
            "{headers}"
        );
        assert_eq!(body, r#"{"jsonrpc":"2.0","result":3.0,"id":7}"#);

        let note = r#"{"jsonrpc":"2.0","method":"tick"}"#;
        let (status, _, body) = post(addr, "application/json", note).await;
        assert_eq!((status, body.as_str()), (204, ""));

        let batch = format!(r#"[{call},{note},{{"jsonrpc":"2.0","id":8,"method":"nope"}}]"#);
        let (status, _, body) = post(addr, "application/json", &batch).await;
        assert_eq!(status, 200);
        let answers: serde_json::Value = serde_json::from_str(&body).unwrap();
        let answers = answers.as_array().unwrap();
        assert_eq!(answers.len(), 2, "{body}");
        assert_eq!(answers[0]["result"], 3.0);
        assert_eq!(answers[1]["error"]["code"], -32601);

        let all_notes = format!("[{note},{note}]");
        assert_eq!(post(addr, "application/json", &all_notes).await.0, 204);

        let (status, _, body) = post(addr, "application/json", "{nope").await;
        assert_eq!(status, 200);
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["error"]["code"], -32700);
        assert!(answer["id"].is_null());
        let _ = stop.send(());
    })
    .await;
}

#[tokio::test]
async fn an_oversize_body_gets_413_without_being_read() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        // 100 MB declared, 4 KB sent: the 413 comes at once, the rest never awaited.
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n";
        let start = Instant::now();
        let (status, _, _) = exchange(addr, head, &[b' '; 4096]).await;
        assert_eq!(status, 413);
        assert!(start.elapsed() < Duration::from_secs(2));
        // Undeclared (chunked) and over the limit: cut off at the limit.
        let mut config = Config::default();
        config.limits.max_frame_bytes = 1024;
        let (small, stop_small, _task) = server(config).await;
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        let chunk = format!("800\r\n{}\r\n", " ".repeat(0x800));
        let (status, _, _) = exchange(small, head, chunk.as_bytes()).await;
        assert_eq!(status, 413);
        let _ = stop.send(());
        let _ = stop_small.send(());
    })
    .await;
}

/// A body that comes in pieces (chunks written one at a time, and a declared length sent
/// in two writes) is joined before it is handled; each answer fits its request.
#[tokio::test]
async fn a_body_in_pieces_is_joined() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        let call = r#"{"jsonrpc":"2.0","id":5,"method":"add","params":{"a":20,"b":22}}"#;
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        stream.write_all(head.as_bytes()).await.unwrap();
        for piece in [&call[..10], &call[10..30], &call[30..]] {
            let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
            stream.write_all(chunk.as_bytes()).await.unwrap();
            stream.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stream.write_all(b"0\r\n\r\n").await.unwrap();
        let (status, _, body) = read_response(&mut stream, &mut received).await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"jsonrpc":"2.0","result":42.0,"id":5}"#)
        );
        // The same connection, a declared length, the body in two writes.
        let call = r#"{"jsonrpc":"2.0","id":6,"method":"add","params":{"a":1,"b":1}}"#;
        let request = post_head(call);
        let (first, second) = request.split_at(request.len() - 12);
        stream.write_all(first.as_bytes()).await.unwrap();
        stream.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        stream.write_all(second.as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut stream, &mut received).await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"jsonrpc":"2.0","result":2.0,"id":6}"#)
        );
        let _ = stop.send(());
    })
    .await;
}

/// Reads one response (status, lower-cased headers, body) from a kept-alive connection.
async fn read_response(stream: &mut TcpStream, received: &mut Vec<u8>) -> (u16, String, String) {
    let mut chunk = [0; 4096];
    loop {
        let text = String::from_utf8_lossy(received).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let headers = text[..end].to_ascii_lowercase();
            let length = headers
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse::<usize>().unwrap());
            if received.len() >= end + 4 + length {
                let status = text[9..12].parse().unwrap();
                let body = text[end + 4..end + 4 + length].to_owned();
                received.drain(..end + 4 + length);
                return (status, headers, body);
            }
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-response: {received:?}");
        received.extend_from_slice(&chunk[..n]);
    }
}

fn post_head(body: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn exchanges_on_one_keep_alive_connection_share_its_state_and_may_reuse_ids() {
    within(LIMIT, async {
        let (addr, stop, task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        // The same id in every exchange: each is answered before the next, so none clash;
        // sync and async handlers, notifications and batches alternate on one connection.
        for i in 0..20 {
            let bodies = [
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"add","params":{{"a":{i},"b":1}}}}"#),
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"multiply","params":{{"a":{i},"b":2}}}}"#
                ),
                r#"{"jsonrpc":"2.0","method":"tick"}"#.to_owned(),
                r#"[{"jsonrpc":"2.0","id":1,"method":"ticks"},{"jsonrpc":"2.0","method":"tick"}]"#
                    .to_owned(),
                "{not json".to_owned(),
            ];
            for body in &bodies {
                stream.write_all(post_head(body).as_bytes()).await.unwrap();
                let (status, _, answer) = read_response(&mut stream, &mut received).await;
                match body.as_str() {
                    b if b.contains("\"add\"") => {
                        assert_eq!(status, 200);
                        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
                        assert_eq!(
                            (v["id"].clone(), v["result"].as_f64()),
                            (1.into(), Some(f64::from(i) + 1.0))
                        );
                    }
                    b if b.contains("multiply") => {
                        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
                        assert_eq!(v["result"].as_f64(), Some(f64::from(i) * 2.0));
                    }
                    b if b.starts_with('[') => {
                        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
                        assert_eq!(v.as_array().map(Vec::len), Some(1), "{answer}");
                    }
                    b if b.contains("tick") => assert_eq!((status, answer.as_str()), (204, "")),
                    _ => {
                        assert_eq!(status, 200);
                        assert!(answer.contains("-32700"), "{answer}");
                    }
                }
            }
        }
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}

/// A router with a synchronous `echo` (its params as its result, unparsed).
fn echo_router() -> sansrpc_tokio::AsyncRouter {
    let mut router = sansrpc_tokio::AsyncRouter::new();
    router
        .sync()
        .raw_method("echo", |params, out| {
            out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
            Ok(())
        })
        .unwrap();
    router
}

/// Many keep-alive connections at once, on two workers, each a run of exchanges whose
/// handlers answer at once (`echo`), after some turns of their task (`later`), or never
/// answer (a notification whose handler takes some turns, `note`), and batches of both:
/// the server's connections take turns with its blank machines (`Connection::is_blank`),
/// and every answer is its own request's, on its own connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_exchanges_each_get_their_own_answers_while_machines_are_shared() {
    within(LIMIT, async {
        let notes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut router = echo_router();
        router
            .raw_method("later", |params| async move {
                let params = params.unwrap();
                let turns: Vec<u64> = serde_json::from_str(params.get()).unwrap();
                for _ in 0..turns[2] {
                    tokio::task::yield_now().await;
                }
                Ok(params)
            })
            .unwrap();
        let seen = notes.clone();
        router
            .raw_notification("note", move |_| {
                let seen = seen.clone();
                async move {
                    for _ in 0..3 {
                        tokio::task::yield_now().await;
                    }
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })
            .unwrap();
        let (addr, stop, task) = serve_builder(Builder::new().router(router)).await;
        const CONNECTIONS: u64 = 24;
        const EXCHANGES: u64 = 40;
        let clients = (0..CONNECTIONS).map(|c| {
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                let mut received = Vec::new();
                let mut notes = 0;
                for k in 0..EXCHANGES {
                    let params = format!("[{c},{k},{}]", (c + k) % 4);
                    let (body, expect) = match k % 4 {
                        0 => (
                            format!(r#"{{"jsonrpc":"2.0","id":{k},"method":"echo","params":{params}}}"#),
                            Some(format!(r#"[{{"id":{k},"result":{params}}}]"#)),
                        ),
                        1 => (
                            format!(r#"{{"jsonrpc":"2.0","id":{k},"method":"later","params":{params}}}"#),
                            Some(format!(r#"[{{"id":{k},"result":{params}}}]"#)),
                        ),
                        2 => {
                            notes += 1;
                            (format!(r#"{{"jsonrpc":"2.0","method":"note","params":{params}}}"#), None)
                        }
                        _ => (
                            format!(
                                r#"[{{"jsonrpc":"2.0","id":"a{k}","method":"later","params":{params}}},{{"jsonrpc":"2.0","id":"b{k}","method":"echo","params":{params}}}]"#
                            ),
                            Some(format!(
                                r#"[{{"id":"a{k}","result":{params}}},{{"id":"b{k}","result":{params}}}]"#
                            )),
                        ),
                    };
                    stream.write_all(post_head(&body).as_bytes()).await.unwrap();
                    let (status, _, answer) = read_response(&mut stream, &mut received).await;
                    match expect {
                        None => assert_eq!((status, answer.as_str()), (204, ""), "{c} {k}"),
                        Some(expect) => {
                            assert_eq!(status, 200, "{c} {k}: {answer}");
                            let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
                            let mut answers = match answer {
                                serde_json::Value::Array(all) => all,
                                one => vec![one],
                            };
                            for a in &mut answers {
                                a.as_object_mut().unwrap().remove("jsonrpc");
                            }
                            answers.sort_by_key(|a| a["id"].to_string());
                            let expect: serde_json::Value = serde_json::from_str(&expect).unwrap();
                            assert_eq!(serde_json::Value::Array(answers), expect, "{c} {k}");
                        }
                    }
                }
                // Kept open: a connection's end drops the handlers still running on it.
                (notes, stream)
            })
        });
        let (mut sent, mut streams) = (0, Vec::new());
        for client in join_all(clients).await {
            let (notes, stream) = client.unwrap();
            sent += notes;
            streams.push(stream);
        }
        // Every notification's handler ran to its end, none dropped with a machine.
        let notes = &notes;
        tokio::time::timeout(Duration::from_secs(10), async move {
            while notes.load(std::sync::atomic::Ordering::SeqCst) < sent {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            let handled = notes.load(std::sync::atomic::Ordering::SeqCst);
            panic!("{handled} of {sent} notifications handled")
        });
        drop(streams);
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}

/// Never answers.
enum Stall {}
impl sansrpc::method::Method for Stall {
    const NAME: &'static str = "stall";
    type Params = ();
    type Result = u64;
}

#[tokio::test]
async fn a_handler_past_its_time_goes_unanswered_and_its_connection_closes() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut router = calculator();
        router
            .method::<Stall, _, _>(|()| futures::future::pending())
            .unwrap();
        let mut config = Config::default();
        config.limits.max_frame_bytes = 32 << 20;
        let builder = Builder::new().config(config).router(router);
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let limit = Duration::from_millis(300);
        let grace = Duration::from_secs(1);
        let mut options = sansrpc_tokio::ServeOptions::default();
        options.handler_timeout = limit;
        let task = tokio::spawn(http::serve_with(
            listener, builder, options, shutdown, grace,
        ));
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        let add = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#;
        stream.write_all(post_head(add).as_bytes()).await.unwrap();
        assert_eq!(read_response(&mut stream, &mut received).await.0, 200);
        let started = Instant::now();
        let stall = r#"{"jsonrpc":"2.0","id":7,"method":"stall"}"#;
        stream.write_all(post_head(stall).as_bytes()).await.unwrap();
        let (status, headers, body) = read_response(&mut stream, &mut received).await;
        assert!(started.elapsed() >= limit);
        assert_eq!((status, body.as_str()), (204, ""));
        assert!(headers.contains("connection: close"), "{headers}");
        let mut rest = Vec::new();
        assert_eq!(stream.read_to_end(&mut rest).await.unwrap(), 0, "closed");
        // Other connections are served as before.
        let (status, _, body) = post(addr, "application/json", add).await;
        assert_eq!(status, 200);
        assert!(body.contains("3.0"), "{body}");
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}

/// Reads what the server sends until it closes the connection.
async fn read_to_close(stream: &mut TcpStream, received: &mut Vec<u8>) -> String {
    stream.read_to_end(received).await.unwrap();
    String::from_utf8_lossy(received).into_owned()
}

const ADD: &str = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","result":3.0,"id":7}"#;

/// Requests written back to back before any answer is read (a chunked one among them) are
/// answered one after another, in order, each carrying a date.
#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let chunked = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        let twice = r#"{"jsonrpc":"2.0","id":8,"method":"multiply","params":[4,2]}"#;
        let mut burst = post_head(ADD);
        burst.push_str(chunked);
        burst.push_str(&format!("{:x}\r\n{twice}\r\n0\r\n\r\n", twice.len()));
        burst.push_str(&post_head(r#"{"jsonrpc":"2.0","method":"tick"}"#));
        burst.push_str(&post_head(ADD));
        stream.write_all(burst.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        let mut answers = Vec::new();
        for _ in 0..4 {
            let (status, headers, body) = read_response(&mut stream, &mut received).await;
            assert!(headers.contains("\r\ndate: "), "{headers}");
            answers.push((status, body));
        }
        let expected = [
            (200, ANSWER),
            (200, r#"{"jsonrpc":"2.0","result":8.0,"id":8}"#),
            (204, ""),
            (200, ANSWER),
        ];
        let answers: Vec<_> = answers.iter().map(|(s, b)| (*s, b.as_str())).collect();
        assert_eq!(answers, expected);
        let _ = stop.send(());
    })
    .await;
}

/// A client that sends `Expect: 100-continue` gets `100 Continue` before it sends its body;
/// one whose request is refused gets the refusal instead, and the connection closes (the
/// body it held back never comes).
#[tokio::test]
async fn expect_100_continue() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            ADD.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        let (status, _, body) = read_response(&mut stream, &mut received).await;
        assert_eq!((status, body.as_str()), (100, ""));
        stream.write_all(ADD.as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut stream, &mut received).await;
        assert_eq!((status, body.as_str()), (200, ANSWER));

        let mut stream = TcpStream::connect(addr).await.unwrap();
        let refused = head.replace("application/json", "text/plain");
        stream.write_all(refused.as_bytes()).await.unwrap();
        let all = read_to_close(&mut stream, &mut Vec::new()).await;
        assert!(all.starts_with("HTTP/1.1 415 "), "{all}");
        assert!(!all.contains(" 100 "), "{all}");
        assert!(all.to_ascii_lowercase().contains("connection: close"), "{all}");
        let _ = stop.send(());
    })
    .await;
}

/// HTTP/1.0 closes after the answer unless it asks for keep-alive; HTTP/1.1 stays open
/// unless it asks to close.
#[tokio::test]
async fn keep_alive_follows_the_version_and_the_connection_header() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let request = |version: &str, connection: &str| {
            format!(
                "POST / {version}\r\nHost: x\r\nContent-Type: application/json\r\n{connection}Content-Length: {}\r\n\r\n{ADD}",
                ADD.len()
            )
        };
        for (version, connection) in [("HTTP/1.0", ""), ("HTTP/1.1", "Connection: close\r\n")] {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(request(version, connection).as_bytes())
                .await
                .unwrap();
            let all = read_to_close(&mut stream, &mut Vec::new()).await;
            assert!(all.starts_with("HTTP/1.1 200 OK\r\n"), "{all}");
            assert!(all.contains("connection: close"), "{all}");
            assert!(all.ends_with(ANSWER), "{all}");
        }
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        for _ in 0..2 {
            let kept = request("HTTP/1.0", "Connection: keep-alive\r\n");
            stream.write_all(kept.as_bytes()).await.unwrap();
            let (status, headers, body) = read_response(&mut stream, &mut received).await;
            assert_eq!((status, body.as_str()), (200, ANSWER));
            assert!(headers.contains("connection: keep-alive"), "{headers}");
        }
        let _ = stop.send(());
    })
    .await;
}

/// A request whose framing cannot be read is answered with what is wrong and its
/// connection closed; the server goes on serving others.
#[tokio::test]
async fn malformed_requests_get_4xx_or_501_and_a_close() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let json = "Content-Type: application/json\r\n";
        let long = format!("X-Long: {}\r\n", "a".repeat(40 * 1024));
        let cases = [
            ("NOT HTTP AT ALL\r\n\r\n".to_owned(), 400),
            (format!("POST / HTTP/1.1\r\n{json}Content-Length: 12x\r\n\r\n"), 400),
            (
                format!("POST / HTTP/1.1\r\n{json}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"),
                400,
            ),
            (format!("POST / HTTP/1.1\r\n{json}Transfer-Encoding: gzip\r\n\r\n"), 501),
            (format!("POST / HTTP/1.1\r\n{json}Transfer-Encoding: chunked\r\n\r\nzz\r\n"), 400),
            (format!("POST / HTTP/1.1\r\n{json}{long}\r\n"), 431),
        ];
        for (request, expected) in cases {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(request.as_bytes()).await.unwrap();
            let all = read_to_close(&mut stream, &mut Vec::new()).await;
            let status = format!("HTTP/1.1 {expected} ");
            assert!(all.starts_with(&status), "{request:.60}: {all}");
            assert!(all.contains("connection: close"), "{all}");
        }
        assert_eq!(post(addr, "application/json", ADD).await.0, 200);
        let _ = stop.send(());
    })
    .await;
}

/// A refused request's body is read past, and its connection keeps serving.
#[tokio::test]
async fn a_refused_request_with_a_body_keeps_its_connection() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        let refused = [
            post_head(ADD).replace("application/json", "text/plain"),
            post_head(ADD).replacen("POST", "PUT", 1),
        ];
        for request in refused {
            stream.write_all(request.as_bytes()).await.unwrap();
            let (status, headers, _) = read_response(&mut stream, &mut received).await;
            assert!(matches!(status, 405 | 415), "{status}");
            assert!(!headers.contains("connection: close"), "{headers}");
            stream.write_all(post_head(ADD).as_bytes()).await.unwrap();
            let (status, _, body) = read_response(&mut stream, &mut received).await;
            assert_eq!((status, body.as_str()), (200, ANSWER));
        }
        let _ = stop.send(());
    })
    .await;
}

/// A body of one-byte chunks, each with a long extension (its framing 900 times its data),
/// written in one go: joined right (the transport drops the framing as it decodes it).
#[tokio::test]
async fn a_body_of_tiny_chunks_with_long_extensions_is_joined() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut request = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_owned();
        let extension = "e".repeat(900);
        for byte in ADD.chars() {
            request.push_str(&format!("1;{extension}\r\n{byte}\r\n"));
        }
        request.push_str("0\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut stream, &mut Vec::new()).await;
        assert_eq!((status, body.as_str()), (200, ANSWER));
        let _ = stop.send(());
    })
    .await;
}

/// Answers once released.
enum Slow {}
impl sansrpc::method::Method for Slow {
    const NAME: &'static str = "slow";
    type Params = ();
    type Result = u64;
}

/// At shutdown: a request whose handler runs is answered when it finishes, with
/// `Connection: close`; one whose body is still arriving will never be handed in, and is
/// answered `503` with `Connection: close` (it was not processed); an idle keep-alive
/// connection is closed; then the server returns.
#[tokio::test]
async fn shutdown_answers_what_runs_refuses_what_is_arriving_and_closes_the_rest() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (started, release) = (
            std::sync::Arc::new(tokio::sync::Notify::new()),
            std::sync::Arc::new(tokio::sync::Notify::new()),
        );
        let mut router = calculator();
        let (s, r) = (started.clone(), release.clone());
        router
            .method::<Slow, _, _>(move |()| {
                let (s, r) = (s.clone(), r.clone());
                async move {
                    s.notify_one();
                    r.notified().await;
                    Ok(5)
                }
            })
            .unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let grace = Duration::from_secs(10);
        let mut config = Config::default();
        config.limits.max_frame_bytes = 32 << 20;
        let builder = Builder::new().config(config).router(router);
        let task = tokio::spawn(http::serve(listener, builder, shutdown, grace));

        // Running: its handler has started.
        let mut running = TcpStream::connect(addr).await.unwrap();
        let slow = r#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#;
        running.write_all(post_head(slow).as_bytes()).await.unwrap();
        started.notified().await;
        // Arriving: the server has read its head (it asked for the body) and part of it.
        let mut arriving = TcpStream::connect(addr).await.unwrap();
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 40\r\n\r\n";
        arriving.write_all(head.as_bytes()).await.unwrap();
        let mut continued = vec![0; 25];
        arriving.read_exact(&mut continued).await.unwrap();
        assert_eq!(continued, b"HTTP/1.1 100 Continue\r\n\r\n");
        arriving.write_all(br#"{"jsonrpc":"2.0","#).await.unwrap();
        // Idle: one exchange done, kept alive.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(post_head(ADD).as_bytes()).await.unwrap();
        let (status, _, body) = read_response(&mut idle, &mut Vec::new()).await;
        assert_eq!((status, body.as_str()), (200, ANSWER));

        let _ = stop.send(());
        let mut received = Vec::new();
        let refused = read_to_close(&mut arriving, &mut received).await;
        assert!(refused.starts_with("HTTP/1.1 503 "), "{refused}");
        assert!(refused.to_ascii_lowercase().contains("connection: close"), "{refused}");
        let mut rest = Vec::new();
        assert_eq!(idle.read_to_end(&mut rest).await.unwrap(), 0, "{rest:?}");
        release.notify_one();
        let mut received = Vec::new();
        let (status, headers, body) = read_response(&mut running, &mut received).await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"jsonrpc":"2.0","result":5,"id":1}"#)
        );
        assert!(headers.contains("connection: close"), "{headers}");
        assert_eq!(running.read_to_end(&mut rest).await.unwrap(), 0);
        task.await.unwrap().unwrap();
    })
    .await;
}

/// A client that goes on sending a body refused from its head (413) reads the answer, and
/// its writes do not fail: the server half-closes and reads what comes until the client
/// closes (a lingering close). Closing at once with unread input reset the connection: the
/// client's writes failed with a broken pipe (curl then reports a send error, not the 413),
/// and over a real network the answer may be dropped with it. Ten rounds, each writing
/// 8 MiB behind the head (more than loopback's socket buffers hold).
#[tokio::test]
async fn a_refused_body_still_arriving_does_not_reset_the_connection() {
    within(LIMIT, async {
        let (addr, stop, _task) = server(Config::default()).await;
        for _ in 0..10 {
            let stream = TcpStream::connect(addr).await.unwrap();
            let (mut reader, mut writer) = stream.into_split();
            let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n";
            let sending = tokio::spawn(async move {
                writer.write_all(head.as_bytes()).await?;
                let chunk = vec![b' '; 64 * 1024];
                for _ in 0..128 {
                    writer.write_all(&chunk).await?;
                }
                Ok::<_, std::io::Error>(writer)
            });
            // The answer comes before the body is sent (it is refused from the head).
            let mut received = Vec::new();
            let text = loop {
                let mut chunk = [0; 1024];
                let n = reader.read(&mut chunk).await.unwrap();
                received.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&received).into_owned();
                if n == 0 || text.contains("\r\n\r\n") {
                    break text;
                }
            };
            assert!(text.starts_with("HTTP/1.1 413 "), "{text}");
            assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
            let writer = sending.await.unwrap().expect("every write of the body taken");
            drop(writer);
            let mut rest = Vec::new();
            assert_eq!(reader.read_to_end(&mut rest).await.unwrap(), 0, "{rest:?}");
        }
        let _ = stop.send(());
    })
    .await;
}

/// A server written by hand for the client's tests: each POST on each connection is
/// answered with what `answer(connection, body)` gives (connections numbered from 1; an
/// empty answer closes the connection instead), and the connection is closed after
/// `per_connection` answers (without saying so, as a server whose keep-alive timeout ran
/// out does). Returns its address and how many connections it took.
async fn scripted(
    per_connection: usize,
    answer: impl Fn(usize, &serde_json::Value) -> String + Send + Sync + 'static,
) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let (count, answer) = (accepted.clone(), std::sync::Arc::new(answer));
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut received = Vec::new();
                for _ in 0..per_connection {
                    let Some(body) = read_request(&mut stream, &mut received).await else {
                        return;
                    };
                    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let response = answer(n, &request);
                    if response.is_empty() {
                        return;
                    }
                    stream.write_all(response.as_bytes()).await.unwrap();
                }
            });
        }
    });
    (addr, accepted)
}

/// Reads one request (its head and `Content-Length` body); `None` when the client closed.
async fn read_request(stream: &mut TcpStream, received: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut chunk = [0; 4096];
    loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            assert!(head.starts_with("post / http/1.1\r\n"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|n| n.trim().parse().unwrap())
                .unwrap();
            if received.len() >= end + 4 + length {
                let body = received[end + 4..end + 4 + length].to_vec();
                received.drain(..end + 4 + length);
                return Some(body);
            }
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        received.extend_from_slice(&chunk[..n]);
    }
}

/// An HTTP response with `status`, a JSON body and a length.
fn respond(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn the_client_keeps_its_connection_and_reconnects_when_the_server_closes_it() {
    within(LIMIT, async {
        // Each answer is the number of the connection it came on.
        let (addr, accepted) = scripted(2, |n, request| {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{n}}}"#, request["id"]);
            respond("200 OK", "application/json", &body)
        })
        .await;
        let conn = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap();
        let mut on = Vec::new();
        for _ in 0..5 {
            let answer = conn.client.call_raw("which", None).await.unwrap();
            on.push(answer.get().to_owned());
            // Time for the server's close to arrive: the client notices it while idle.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(on, ["1", "1", "2", "2", "3"]);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
        // A notification (204) and a batch on the same connections.
        let (addr, accepted) = scripted(usize::MAX, |_, request| match request.as_array() {
            Some(calls) => {
                let answers: Vec<String> = calls
                    .iter()
                    .filter(|c| c.get("id").is_some())
                    .map(|c| format!(r#"{{"jsonrpc":"2.0","id":{},"result":0}}"#, c["id"]))
                    .collect();
                respond(
                    "200 OK",
                    "application/json",
                    &format!("[{}]", answers.join(",")),
                )
            }
            None if request.get("id").is_none() => "HTTP/1.1 204 No Content\r\n\r\n".to_owned(),
            None => {
                let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":0}}"#, request["id"]);
                respond("200 OK", "application/json", &body)
            }
        })
        .await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        for _ in 0..3 {
            client.notify_raw("note", None).await.unwrap();
            let mut batch = client.batch();
            batch.call_raw("a", None);
            batch.notify_raw("note", None);
            batch.call_raw("b", None);
            let results = batch.send().await.unwrap();
            assert!(results.iter().all(|r| r.as_ref().unwrap().get() == "0"));
        }
        // Six POSTs; a notification resolves once queued, so its POST may still be under
        // way when the batch goes, on a second connection.
        assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) <= 2);
    })
    .await;
}

#[tokio::test]
async fn an_error_status_is_the_calls_error_with_its_json_rpc_error_when_it_has_one() {
    within(LIMIT, async {
        let (addr, _) = scripted(usize::MAX, |_, request| {
            let id = &request["id"];
            match request["method"].as_str().unwrap() {
                "failing" => {
                    let error = r#"{"code":-32000,"message":"boom"}"#;
                    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#);
                    respond("500 Internal Server Error", "application/json", &body)
                }
                "proxied" => respond("502 Bad Gateway", "text/html", "<html>gateway</html>"),
                "elsewhere" => {
                    let body = r#"{"jsonrpc":"2.0","id":999999,"result":0}"#;
                    respond("200 OK", "application/json", body)
                }
                _ => "HTTP/1.1 204 No Content\r\n\r\n".to_owned(),
            }
        })
        .await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        let failing = client.call_raw("failing", None).await.unwrap_err();
        assert_eq!(failing.code(), Some(-32000), "{failing:?}");
        let unanswered = |status| CallError::Ended(EndReason::Unanswered { status });
        for (method, status) in [("proxied", 502), ("elsewhere", 200), ("nothing", 204)] {
            let e = client.call_raw(method, None).await.unwrap_err();
            assert_eq!(e.to_string(), unanswered(Some(status)).to_string(), "{method}");
            assert!(matches!(e, CallError::Ended(EndReason::Unanswered { status: Some(s) }) if s == status));
        }
    })
    .await;
}

#[tokio::test]
async fn a_post_that_meets_the_close_of_a_kept_connection_is_sent_again_once() {
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};
    within(LIMIT, async {
        // Each connection answers its first POST (with its number) and closes under its
        // second, having read it, before answering anything.
        let seen = Arc::new(Mutex::new(HashMap::<usize, usize>::new()));
        let posts = Arc::clone(&seen);
        let (addr, accepted) = scripted(usize::MAX, move |n, request| {
            let mut seen = posts.lock().unwrap();
            let count = seen.entry(n).or_default();
            *count += 1;
            match count {
                1 => {
                    let body =
                        format!(r#"{{"jsonrpc":"2.0","id":{},"result":{n}}}"#, request["id"]);
                    respond("200 OK", "application/json", &body)
                }
                _ => String::new(),
            }
        })
        .await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        let mut on = Vec::new();
        for _ in 0..3 {
            on.push(
                client
                    .call_raw("which", None)
                    .await
                    .unwrap()
                    .get()
                    .to_owned(),
            );
        }
        // The second and third calls met the close of the connection kept from the call
        // before and went again on a new one.
        assert_eq!(on, ["1", "2", "3"]);
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        let posts: usize = seen.lock().unwrap().values().sum();
        assert_eq!(posts, 5);

        // A server that closes under every POST: the first call is sent twice (its
        // connection was made at `connect` and waited), a call on a new connection once.
        let (addr, accepted) = scripted(usize::MAX, |_, _| String::new()).await;
        let client = http::connect(&format!("http://{addr}/"), Builder::new())
            .await
            .unwrap()
            .client;
        let unanswered = CallError::Ended(EndReason::Unanswered { status: None });
        for connections in [2, 3] {
            let e = client.call_raw("which", None).await.unwrap_err();
            assert_eq!(e.to_string(), unanswered.to_string());
            assert_eq!(accepted.load(Ordering::SeqCst), connections);
        }
    })
    .await;
}

#[tokio::test]
async fn an_answer_over_the_clients_frame_limit_fails_its_call() {
    within(LIMIT, async {
        let big = "x".repeat(4096);
        let (addr, _) = scripted(usize::MAX, move |_, request| {
            let id = &request["id"];
            let body = match request["method"].as_str().unwrap() {
                "small" => return respond("200 OK", "application/json", &format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#
                )),
                _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{big}"}}"#),
            };
            match request["method"].as_str().unwrap() {
                // Its length said first: refused before it is read.
                "big" => respond("200 OK", "application/json", &body),
                // In chunks of no announced length: refused once past the limit.
                _ => {
                    let chunks: String = body
                        .as_bytes()
                        .chunks(512)
                        .map(|c| format!("{:x}\r\n{}\r\n", c.len(), std::str::from_utf8(c).unwrap()))
                        .collect();
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{chunks}0\r\n\r\n")
                }
            }
        })
        .await;
        let mut config = Config::default();
        config.limits.max_frame_bytes = 1024;
        let client = http::connect(&format!("http://{addr}/"), Builder::new().config(config))
            .await
            .unwrap()
            .client;
        let unanswered = CallError::Ended(EndReason::Unanswered { status: None });
        for method in ["big", "big_chunked", "small", "big"] {
            let answer = client.call_raw(method, None).await;
            match method {
                "small" => assert_eq!(answer.unwrap().get(), "1"),
                _ => assert_eq!(answer.unwrap_err().to_string(), unanswered.to_string(), "{method}"),
            }
        }
    })
    .await;
}

/// A server of `router` over HTTP with frames up to 32 MiB; stop it with the sender.
async fn serve_router(router: sansrpc_tokio::AsyncRouter) -> Serving {
    let mut config = Config::default();
    config.limits.max_frame_bytes = 32 << 20;
    serve_builder(Builder::new().config(config).router(router)).await
}

/// The result of an answer, its id checked.
fn result_of(answer: &[u8], id: u64) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(answer).unwrap();
    assert_eq!(v["id"], id);
    v["result"].clone()
}

/// A plain answer goes out in one vectored write from the connection's output, and what
/// the socket does not take is written from the server's buffer: an 8 MiB answer (more
/// than loopback's socket buffers hold, so the first write is always partial) arrives
/// whole and in order, and the connection then answers the next request at once (it
/// waited for the server's timer once: the server did not read again after a write that
/// took more than one turn).
#[tokio::test]
async fn an_answer_larger_than_the_socket_takes_at_once_arrives_whole() {
    within(LIMIT, async {
        let router = echo_router();
        let (addr, stop, task) = serve_router(router).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        // Distinct bytes along the string, so that a piece out of place shows.
        let text: String = (0..8 << 20)
            .map(|i| char::from(b'a' + (i % 23) as u8))
            .collect();
        let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"echo","params":["{text}"]}}"#);
        stream.write_all(post_head(&body).as_bytes()).await.unwrap();
        // Read by its length (`read_response` looks at all it has after each read).
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(stream.read_u8().await.unwrap());
        }
        let headers = String::from_utf8(head).unwrap().to_ascii_lowercase();
        assert!(headers.starts_with("http/1.1 200"), "{headers}");
        assert!(
            headers.contains("content-type: application/json"),
            "{headers}"
        );
        let length: usize = headers
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|n| n.trim().parse().unwrap())
            .unwrap();
        let mut answer = vec![0; length];
        stream.read_exact(&mut answer).await.unwrap();
        let echoed = result_of(&answer, 7);
        // Compared without printing 8 MiB when they differ.
        let echoed = echoed[0].as_str().unwrap_or_default();
        assert!(
            echoed == text,
            "{} bytes echoed of {}",
            echoed.len(),
            text.len()
        );
        let small = r#"{"jsonrpc":"2.0","id":8,"method":"echo","params":[1]}"#;
        stream.write_all(post_head(small).as_bytes()).await.unwrap();
        let mut received = Vec::new();
        let (status, _, answer) = read_response(&mut stream, &mut received).await;
        assert_eq!(status, 200);
        assert_eq!(result_of(answer.as_bytes(), 8), serde_json::json!([1]));
        assert!(received.is_empty(), "nothing after the answers");
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}

/// An answer a handler gives later (not at its first poll) lets the connection's next
/// request in at once: the server waited for its timer (the head limit) before reading
/// again, its last read having taken the request's last byte.
#[tokio::test]
async fn after_an_answer_given_later_the_next_request_is_read_at_once() {
    within(LIMIT, async {
        let mut router = sansrpc_tokio::AsyncRouter::new();
        router
            .raw_method("later", |params| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(params.expect("params are given"))
            })
            .unwrap();
        let (addr, stop, task) = serve_router(router).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        let started = Instant::now();
        for id in 0..5u64 {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"later","params":[{id}]}}"#);
            stream.write_all(post_head(&body).as_bytes()).await.unwrap();
            let (status, _, answer) = read_response(&mut stream, &mut received).await;
            assert_eq!(status, 200);
            assert_eq!(result_of(answer.as_bytes(), id), serde_json::json!([id]));
        }
        // Five answers 20 ms each, where one wait for the timer took the head limit (20 s).
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}

/// Plain HTTP has no way to send the client what a handler sends it besides its answer
/// (a notification, before the answer or after it): a POST's response is its body's
/// answer, whatever the handler sent first (a large answer, written straight from the
/// connection's output, too), and a notification sent between exchanges is not the next
/// one's answer. (Before, the first notification went out as the answer, and the answer
/// was left for the next exchange.)
#[tokio::test]
async fn what_a_handler_sends_besides_its_answer_never_takes_its_place_over_http() {
    within(LIMIT, async {
        let (router, mut kept) = noisy::router();
        let (addr, stop, task) = serve_router(router).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut received = Vec::new();
        let large = format!("[\"{}\"]", "x".repeat(40 << 10));
        for (id, params) in [(1u64, "[1]"), (2, large.as_str())] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"noisy","params":{params}}}"#);
            stream.write_all(post_head(&body).as_bytes()).await.unwrap();
            let (status, _, answer) = read_response(&mut stream, &mut received).await;
            assert_eq!(status, 200);
            let expected: serde_json::Value = serde_json::from_str(params).unwrap();
            assert_eq!(result_of(answer.as_bytes(), id), expected);
        }
        let batch = r#"[{"jsonrpc":"2.0","id":3,"method":"noisy","params":[3]},{"jsonrpc":"2.0","method":"noisy","params":[0]}]"#;
        stream.write_all(post_head(batch).as_bytes()).await.unwrap();
        let (status, _, answer) = read_response(&mut stream, &mut received).await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&answer).unwrap(),
            serde_json::json!([{"jsonrpc":"2.0","result":[3],"id":3}])
        );
        for id in [4u64, 6] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"keep"}}"#);
            stream.write_all(post_head(&body).as_bytes()).await.unwrap();
            let (_, _, answer) = read_response(&mut stream, &mut received).await;
            assert_eq!(result_of(answer.as_bytes(), id), true);
            // Sent after the answer, before the next request.
            let client = kept.recv().await.unwrap();
            client.notify_raw("late", None).await.unwrap();
            let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"noisy","params":[5]}}"#, id + 1);
            stream.write_all(post_head(&body).as_bytes()).await.unwrap();
            let (_, _, answer) = read_response(&mut stream, &mut received).await;
            assert_eq!(result_of(answer.as_bytes(), id + 1), serde_json::json!([5]));
        }
        drop(stream);
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    })
    .await;
}
