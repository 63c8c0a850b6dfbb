//! The JSON-RPC tower service mounted in an axum app served by hyper-util's server of the
//! test's own (HTTP/1.1 and h2c), driven with hyper's client: its options, and handlers
//! that outlive their answer or their client. (The apps that mount MCP beside it are
//! sansrpc-mcp's tests.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;

#[path = "support/noisy.rs"]
mod noisy;

/// One connection to `port`, HTTP/1.1 or HTTP/2 (prior knowledge).
#[derive(Clone)]
enum Conn {
    H1(Arc<tokio::sync::Mutex<http1::SendRequest<Full<Bytes>>>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Conn {
    async fn h1(port: u16) -> Conn {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        let (send, conn) = http1::handshake(TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(conn.with_upgrades());
        Conn::H1(Arc::new(tokio::sync::Mutex::new(send)))
    }

    async fn h2(port: u16) -> Conn {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        tcp.set_nodelay(true).unwrap();
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        Conn::H2(send)
    }

    /// Sends `method` `path` with `headers` and `body`; the answer's status, header fields
    /// and whole body.
    async fn send(
        &self,
        port: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("http://127.0.0.1:{port}{path}"));
        if matches!(self, Conn::H1(_)) {
            request = request.header("host", format!("127.0.0.1:{port}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap();
        let response = match self {
            Conn::H1(send) => {
                let mut send = send.lock().await;
                send.ready().await.unwrap();
                send.send_request(request).await.unwrap()
            }
            Conn::H2(send) => {
                let mut send = send.clone();
                send.ready().await.unwrap();
                send.send_request(request).await.unwrap()
            }
        };
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or(""))
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))
    }
}

const JSON: (&str, &str) = ("content-type", "application/json");

/// Serves `app` on a free port with hyper-util's server (HTTP/1.1 and h2c), counting the
/// connections it accepts.
async fn serve(app: axum::Router) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            stream.set_nodelay(true).unwrap();
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let server = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let _ = server
                    .serve_connection_with_upgrades(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (port, accepted)
}

#[tokio::test]
async fn rpc_service_options_cors_limits_and_handler_time_hold_on_http2() {
    use sansrpc::method::Method;
    use sansrpc_tokio::service::RpcService;
    use sansrpc_tokio::{AsyncRouter, Builder, Origins, ServeOptions};

    enum Sleep {}
    impl Method for Sleep {
        const NAME: &'static str = "sleep";
        type Params = (u64,);
        type Result = u64;
    }
    let mut router = AsyncRouter::new();
    router
        .method::<Sleep, _, _>(|(ms,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ms)
        })
        .unwrap();
    let mut config = sansrpc::connection::Config::default();
    config.limits.max_frame_bytes = 1024;
    let mut options = ServeOptions::default();
    options.cors = Some(Origins::List(vec!["https://app.example.com".into()]));
    options.handler_timeout = Duration::from_millis(300);
    let rpc = RpcService::with_options(Builder::new().config(config).router(router), &options);
    let (port, accepted) = serve(axum::Router::new().route_service("/rpc", rpc)).await;
    let conn = Conn::h2(port).await;

    let origin = ("origin", "https://app.example.com");
    let preflight = [origin, ("access-control-request-method", "POST")];
    let answer = conn.send(port, "OPTIONS", "/rpc", &preflight, "").await;
    assert_eq!(answer.status, 204, "{answer:?}");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        "https://app.example.com"
    );
    assert_eq!(answer.header("access-control-allow-methods"), "POST");
    assert_eq!(answer.header("access-control-max-age"), "600");
    let elsewhere = [("origin", "https://evil.example.com"), preflight[1]];
    let answer = conn.send(port, "OPTIONS", "/rpc", &elsewhere, "").await;
    assert_eq!(answer.status, 403);

    let call = r#"{"jsonrpc":"2.0","method":"sleep","params":[1],"id":1}"#;
    let answer = conn.send(port, "POST", "/rpc", &[JSON, origin], call).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("vary"), "Origin");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        "https://app.example.com"
    );
    assert_eq!(answer.json()["result"], 1);

    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"sleep","params":[1],"id":"{}"}}"#,
        "x".repeat(2000)
    );
    let answer = conn.send(port, "POST", "/rpc", &[JSON], &big).await;
    assert_eq!(answer.status, 413);

    // Past its time a request is answered 204, and the connection goes on serving.
    let slow = r#"{"jsonrpc":"2.0","method":"sleep","params":[5000],"id":2}"#;
    let answer = conn.send(port, "POST", "/rpc", &[JSON], slow).await;
    assert_eq!(answer.status, 204);
    // Ids of requests under way at once never meet: each has its own connection machine.
    let same_id = (0..20).map(|n| {
        let conn = conn.clone();
        tokio::spawn(async move {
            let call = format!(r#"{{"jsonrpc":"2.0","method":"sleep","params":[{n}],"id":7}}"#);
            conn.send(port, "POST", "/rpc", &[JSON], &call).await.json()["result"].clone()
        })
    });
    for (n, answer) in same_id.enumerate() {
        assert_eq!(answer.await.unwrap(), n);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "one HTTP/2 connection");
}

/// A notification's handler still running when its request is answered `204` finishes
/// (its machine goes on on a task of its own), and the requests after it are served.
#[tokio::test]
async fn rpc_service_notification_handlers_finish_after_the_answer() {
    use sansrpc::method::NotificationMethod;
    use sansrpc_tokio::service::RpcService;
    use sansrpc_tokio::{AsyncRouter, Builder};
    use tokio::sync::{mpsc, Notify};

    enum Record {}
    impl NotificationMethod for Record {
        const NAME: &'static str = "record";
        type Params = (u64,);
    }
    // Each `record` waits for the test's go-ahead, then reports its number.
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let go = Arc::new(Notify::new());
    let mut router = AsyncRouter::new();
    let gate = Arc::clone(&go);
    router
        .notification::<Record, _, _>(move |(n,)| {
            let (gate, done_tx) = (Arc::clone(&gate), done_tx.clone());
            async move {
                gate.notified().await;
                let _ = done_tx.send(n);
            }
        })
        .unwrap();
    let rpc = RpcService::new(Builder::new().router(router));
    let (port, _) = serve(axum::Router::new().route_service("/rpc", rpc)).await;
    let conn = Conn::h1(port).await;
    for n in 0..3u64 {
        let note = format!(r#"{{"jsonrpc":"2.0","method":"record","params":[{n}]}}"#);
        let answer = conn.send(port, "POST", "/rpc", &[JSON], &note).await;
        assert_eq!(answer.status, 204, "{answer:?}");
        // Answered before its handler could finish: it finishes now, on its own.
        go.notify_one();
        // A guard against a hang, not a time limit on the handler.
        let finished = tokio::time::timeout(Duration::from_secs(60), done.recv()).await;
        assert_eq!(finished, Ok(Some(n)));
    }
    let call = r#"{"jsonrpc":"2.0","method":"missing","id":1}"#;
    let answer = conn.send(port, "POST", "/rpc", &[JSON], call).await;
    assert_eq!(answer.json()["error"]["code"], -32601);
}

/// A request whose client goes away before the answer (an HTTP/2 stream reset) has its
/// handler finish all the same, as it did when each machine ran on a task of its own.
#[tokio::test]
async fn rpc_service_handlers_finish_when_the_client_goes_away() {
    use sansrpc::method::Method;
    use sansrpc_tokio::service::RpcService;
    use sansrpc_tokio::{AsyncRouter, Builder};
    use tokio::sync::{mpsc, Notify};

    enum Slow {}
    impl Method for Slow {
        const NAME: &'static str = "slow";
        type Params = (u64,);
        type Result = u64;
    }
    // The handler tells it started, waits for the test's go-ahead, then reports.
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let go = Arc::new(Notify::new());
    let gate = Arc::clone(&go);
    let mut router = AsyncRouter::new();
    router
        .method::<Slow, _, _>(move |(n,)| {
            let (gate, started_tx, done_tx) =
                (Arc::clone(&gate), started_tx.clone(), done_tx.clone());
            async move {
                let _ = started_tx.send(n);
                gate.notified().await;
                let _ = done_tx.send(n);
                Ok(n)
            }
        })
        .unwrap();
    // In front of the service: a layer that tells when a request's future is dropped
    // unfinished (what hyper does when the client resets the stream).
    #[derive(Clone)]
    struct Watch<S>(S, mpsc::UnboundedSender<()>);
    struct Watched<F>(std::pin::Pin<Box<F>>, Option<mpsc::UnboundedSender<()>>);
    impl<F: std::future::Future> std::future::Future for Watched<F> {
        type Output = F::Output;
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<F::Output> {
            let done = self.0.as_mut().poll(cx);
            if done.is_ready() {
                self.1 = None;
            }
            done
        }
    }
    impl<F> Drop for Watched<F> {
        fn drop(&mut self) {
            if let Some(tx) = self.1.take() {
                let _ = tx.send(());
            }
        }
    }
    impl<S: tower::Service<R>, R> tower::Service<R> for Watch<S> {
        type Response = S::Response;
        type Error = S::Error;
        type Future = Watched<S::Future>;
        fn poll_ready(
            &mut self,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), S::Error>> {
            self.0.poll_ready(cx)
        }
        fn call(&mut self, request: R) -> Self::Future {
            Watched(Box::pin(self.0.call(request)), Some(self.1.clone()))
        }
    }
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let rpc = Watch(RpcService::new(Builder::new().router(router)), dropped_tx);
    let (port, _) = serve(axum::Router::new().route_service("/rpc", rpc)).await;

    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (mut client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(format!("http://127.0.0.1:{port}/rpc"))
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (answer, mut body) = client.send_request(request, false).unwrap();
    let call = r#"{"jsonrpc":"2.0","method":"slow","params":[7],"id":1}"#;
    body.send_data(Bytes::from_static(call.as_bytes()), true)
        .unwrap();
    assert_eq!(started.recv().await, Some(7));
    // The client gives up: the server drops the request's future, its handler waiting.
    body.send_reset(h2::Reason::CANCEL);
    drop(answer);
    assert_eq!(dropped.recv().await, Some(()));
    go.notify_one();
    // A guard against a hang, not a time limit on the handler.
    let finished = tokio::time::timeout(Duration::from_secs(60), done.recv()).await;
    assert_eq!(
        finished,
        Ok(Some(7)),
        "the handler finished after the reset"
    );
}

/// [`ServeOptions::accept_binary`](sansrpc_tokio::ServeOptions::accept_binary) holds
/// through the WebSocket tower service as it does in `ws::serve_with`: a binary frame with
/// a request is answered when it is set (web3.py's frames), and closes the connection with
/// 1003 when not.
#[tokio::test]
async fn ws_service_takes_binary_frames_only_with_accept_binary() {
    use futures::{SinkExt, StreamExt};
    use sansrpc::method::Method;
    use sansrpc_tokio::service::WsService;
    use sansrpc_tokio::ws::tungstenite::protocol::frame::coding::CloseCode;
    use sansrpc_tokio::ws::tungstenite::Message;
    use sansrpc_tokio::{AsyncRouter, Builder, ServeOptions};

    enum Double {}
    impl Method for Double {
        const NAME: &'static str = "double";
        type Params = (u64,);
        type Result = u64;
    }
    let call = r#"{"jsonrpc":"2.0","method":"double","params":[21],"id":1}"#;
    for accept_binary in [true, false] {
        let mut router = AsyncRouter::new();
        router
            .method::<Double, _, _>(|(n,)| async move { Ok(2 * n) })
            .unwrap();
        let mut options = ServeOptions::default();
        options.accept_binary = accept_binary;
        let ws = WsService::with_options(Builder::new().router(router), &options);
        let (port, _) = serve(axum::Router::new().route_service("/ws", ws)).await;
        let url = format!("ws://127.0.0.1:{port}/ws");
        let (mut raw, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        raw.send(Message::Binary(call.as_bytes().to_vec().into()))
            .await
            .unwrap();
        let first = tokio::time::timeout(Duration::from_secs(10), raw.next()).await;
        let first = first.expect("no answer in 10 s").expect("stream ended");
        match (accept_binary, first.unwrap()) {
            (true, Message::Text(answer)) => {
                let answer: Value = serde_json::from_str(&answer).unwrap();
                assert_eq!(answer["result"], 42, "{answer}");
            }
            (false, Message::Close(Some(frame))) => {
                assert_eq!(frame.code, CloseCode::Unsupported);
            }
            (accept_binary, other) => panic!("accept_binary {accept_binary}: {other:?}"),
        }
    }
}

/// Most requests are answered within one call on a machine at rest, the rest by polling
/// it: on the same machines, one after another, a synchronous handler (with its context),
/// an async one that waits, a batch of both held until both answer, a notification, a
/// body that is not JSON, and the synchronous handler again.
#[tokio::test]
async fn rpc_service_answers_at_once_or_after_waiting_on_the_same_machines() {
    use sansrpc::method::Method;
    use sansrpc_tokio::service::RpcService;
    use sansrpc_tokio::{AsyncRouter, Builder, RequestContext};

    enum Add {}
    impl Method for Add {
        const NAME: &'static str = "add";
        type Params = (i64, i64);
        type Result = i64;
    }
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.method::<Add, _>(|(a, b)| Ok(a + b)).unwrap();
    sync.raw_method("has_context", |_, out| {
        let found = RequestContext::current().is_some();
        out.extend_from_slice(if found { b"true" } else { b"false" });
        Ok(())
    })
    .unwrap();
    // Answers its params, after waiting once: by a later poll, not within the first.
    router
        .raw_method("later", |params| async move {
            tokio::task::yield_now().await;
            params.ok_or_else(sansrpc::ErrorObject::invalid_params)
        })
        .unwrap();
    let rpc = RpcService::new(Builder::new().router(router));
    let (port, _) = serve(axum::Router::new().route_service("/rpc", rpc)).await;
    let conn = Conn::h1(port).await;
    let post = |body: &'static str| {
        let conn = conn.clone();
        async move { conn.send(port, "POST", "/rpc", &[JSON], body).await }
    };
    for _ in 0..2 {
        let answer = post(r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.json(),
            serde_json::json!({"jsonrpc":"2.0","result":3,"id":1})
        );

        let answer = post(r#"{"jsonrpc":"2.0","method":"has_context","id":"c"}"#).await;
        assert_eq!(answer.json()["result"], true, "{answer:?}");

        let answer = post(r#"{"jsonrpc":"2.0","method":"later","params":[7],"id":2}"#).await;
        assert_eq!(
            answer.json(),
            serde_json::json!({"jsonrpc":"2.0","result":[7],"id":2})
        );

        let batch = r#"[{"jsonrpc":"2.0","method":"later","params":[5],"id":3},
            {"jsonrpc":"2.0","method":"add","params":[2,2]},
            {"jsonrpc":"2.0","method":"add","params":[3,4],"id":4}]"#;
        let answer = post(batch).await;
        assert_eq!(answer.status, 200);
        let mut answers = answer.json().as_array().cloned().unwrap_or_default();
        answers.sort_by_key(|a| a["id"].as_i64());
        assert_eq!(
            answers,
            vec![
                serde_json::json!({"jsonrpc":"2.0","result":[5],"id":3}),
                serde_json::json!({"jsonrpc":"2.0","result":7,"id":4}),
            ]
        );

        let answer = post(r#"{"jsonrpc":"2.0","method":"add","params":[1,1]}"#).await;
        assert_eq!(answer.status, 204, "{answer:?}");
        assert!(answer.body.is_empty());

        let answer = post(r#"{"jsonrpc":"2.0","method":"add","params":[1,"#).await;
        assert_eq!(answer.json()["error"]["code"], -32700, "{answer:?}");
    }
}

/// Plain HTTP has no way to send the client what a handler sends it besides its answer: a
/// POST's response is its body's answer, whatever the handler sent first, and a
/// notification sent while its machine waits in the pool is not the next request's answer
/// (before, each was taken as the answer), over HTTP/1.1 and h2c.
#[tokio::test]
async fn what_a_handler_sends_besides_its_answer_never_takes_its_place() {
    use sansrpc_tokio::service::RpcService;
    use sansrpc_tokio::Builder;

    let (router, mut kept) = noisy::router();
    let rpc = RpcService::new(Builder::new().router(router));
    let (port, _) = serve(axum::Router::new().route_service("/rpc", rpc)).await;
    for conn in [Conn::h1(port).await, Conn::h2(port).await] {
        let post = |body: String| {
            let conn = conn.clone();
            async move { conn.send(port, "POST", "/rpc", &[JSON], &body).await }
        };
        let answer = post(r#"{"jsonrpc":"2.0","id":1,"method":"noisy","params":[1]}"#.into()).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.json(),
            serde_json::json!({"jsonrpc":"2.0","result":[1],"id":1})
        );
        let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"noisy","params":[2]},
            {"jsonrpc":"2.0","method":"noisy","params":[0]}]"#;
        let answer = post(batch.into()).await;
        assert_eq!(
            answer.json(),
            serde_json::json!([{"jsonrpc":"2.0","result":[2],"id":2}])
        );
        for id in [3, 5] {
            let answer = post(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"keep"}}"#)).await;
            assert_eq!(answer.json()["result"], true, "{answer:?}");
            // Sent after the answer, while the machine waits for the next request: it is
            // queued at once, and taken (and dropped) when the machine serves again.
            let client = kept.recv().await.unwrap();
            let late = client.notify_raw("late", None);
            let next = id + 1;
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":{next},"method":"noisy","params":[{next}]}}"#);
            let answer = post(body).await;
            assert_eq!(
                answer.json(),
                serde_json::json!({"jsonrpc":"2.0","result":[next],"id":next})
            );
            late.await.unwrap();
        }
    }
}
