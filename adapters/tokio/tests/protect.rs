//! Protection over real sockets on 127.0.0.1: connection floods beyond the limit refused
//! (TCP, WebSocket, HTTP) while served connections keep working, WebSocket `Origin`s
//! refused with 403 (by default those of other hosts than loopback ones), CORS preflights answered, slowloris peers dropped at the timeout
//! (TCP and HTTP) and idle connections closed.

#[path = "../../../tests/support/common.rs"]
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{calculator, within, Add, Pair};
use sansrpc::connection::Config;
use sansrpc_tokio::ws::tungstenite::client::IntoClientRequest;
use sansrpc_tokio::ws::tungstenite::Error as WsError;
use sansrpc_tokio::{http, ws, Builder, Origins, ServeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const LIMIT: Duration = Duration::from_secs(60);

/// A running server; dropping the sender stops it.
struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

#[derive(Clone, Copy)]
enum Kind {
    Tcp,
    Ws,
    Http,
}

/// Serves the calculator on a fresh port with `options` and endpoint `config`.
async fn start(kind: Kind, options: ServeOptions, config: Config) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let b = Builder::new().config(config).router(calculator());
    let shutdown = async move {
        let _ = stopped.await;
    };
    let grace = Duration::from_secs(1);
    match kind {
        Kind::Tcp => tokio::spawn(sansrpc_tokio::serve_tcp_with(
            listener, b, options, shutdown, grace,
        )),
        Kind::Ws => tokio::spawn(ws::serve_with(listener, b, options, shutdown, grace)),
        Kind::Http => tokio::spawn(http::serve_with(listener, b, options, shutdown, grace)),
    };
    Running { addr, _stop: stop }
}

fn limit(n: usize) -> ServeOptions {
    let mut options = ServeOptions::default();
    options.max_connections = n;
    options
}

/// Reads until the peer closes (a reset counts), failing after 20 s.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the server did not close the connection");
    String::from_utf8_lossy(&seen).into_owned()
}

async fn add(client: &sansrpc_tokio::Client, a: f64) -> f64 {
    client.call::<Add>(&Pair { a, b: 1.0 }).await.unwrap()
}

#[tokio::test]
async fn a_tcp_flood_beyond_the_limit_is_refused_while_served_connections_keep_working() {
    within(LIMIT, async {
        let server = start(Kind::Tcp, limit(4), Config::default()).await;
        let mut clients = Vec::new();
        for i in 0..4 {
            let stream = TcpStream::connect(server.addr).await.unwrap();
            let conn = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
            assert_eq!(add(&conn.client, i as f64).await, i as f64 + 1.0);
            clients.push(conn);
        }
        for _ in 0..20 {
            let mut stream = TcpStream::connect(server.addr).await.unwrap();
            let got = read_to_close(&mut stream).await;
            assert!(
                got.starts_with("Content-Length: ")
                    && got.ends_with(r#""error":{"code":-32002,"message":"Server busy: too many connections"},"id":null}"#),
                "{got:?}"
            );
        }
        for (i, conn) in clients.iter().enumerate() {
            assert_eq!(add(&conn.client, i as f64).await, i as f64 + 1.0);
        }
    })
    .await;
}

#[tokio::test]
async fn a_websocket_flood_beyond_the_limit_gets_503() {
    within(LIMIT, async {
        let server = start(Kind::Ws, limit(2), Config::default()).await;
        let url = format!("ws://{}", server.addr);
        let mut clients = Vec::new();
        for _ in 0..2 {
            let conn = ws::connect(url.as_str(), Builder::new()).await.unwrap();
            assert_eq!(add(&conn.client, 1.0).await, 2.0);
            clients.push(conn);
        }
        for _ in 0..10 {
            match ws::connect(url.as_str(), Builder::new()).await {
                Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
                other => panic!("expected 503, got {:?}", other.map(|_| ())),
            }
        }
        for conn in &clients {
            assert_eq!(add(&conn.client, 2.0).await, 3.0);
        }
    })
    .await;
}

/// A WebSocket handshake request to `url` from `origin`.
fn handshake_from(url: &str, origin: &str) -> ws::tungstenite::handshake::client::Request {
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("origin", origin.parse().unwrap());
    request
}

#[tokio::test]
async fn a_disallowed_websocket_origin_is_refused_with_403() {
    within(LIMIT, async {
        let mut options = ServeOptions::default();
        options.allowed_origins = Origins::List(vec!["https://app.example".into()]);
        let server = start(Kind::Ws, options.clone(), Config::default()).await;
        let url = format!("ws://{}", server.addr);
        let with_origin = |origin: &str| handshake_from(&url, origin);
        match ws::connect(with_origin("https://evil.example"), Builder::new()).await {
            Err(WsError::Http(response)) => assert_eq!(response.status(), 403),
            other => panic!("expected 403, got {:?}", other.map(|_| ())),
        }
        let allowed = ws::connect(with_origin("https://APP.example"), Builder::new())
            .await
            .unwrap();
        assert_eq!(add(&allowed.client, 1.0).await, 2.0);
        // No Origin (a non-browser client): allowed by default...
        let plain = ws::connect(url.as_str(), Builder::new()).await.unwrap();
        assert_eq!(add(&plain.client, 1.0).await, 2.0);
        // ...and refused when configured so.
        options.allow_missing_origin = false;
        let strict = start(Kind::Ws, options, Config::default()).await;
        match ws::connect(format!("ws://{}", strict.addr).as_str(), Builder::new()).await {
            Err(WsError::Http(response)) => assert_eq!(response.status(), 403),
            other => panic!("expected 403, got {:?}", other.map(|_| ())),
        }
    })
    .await;
}

/// By default a WebSocket handshake is accepted from the pages of a loopback host only
/// (`Origins::SameAsHosts`), and from clients that send no `Origin`.
#[tokio::test]
async fn by_default_websocket_origins_are_those_of_loopback_hosts() {
    within(LIMIT, async {
        let server = start(Kind::Ws, ServeOptions::default(), Config::default()).await;
        let url = format!("ws://{}", server.addr);
        let with_origin = |origin: &str| handshake_from(&url, origin);
        for other in [
            "https://evil.example",
            "http://127.0.0.1.evil.example",
            "null",
        ] {
            match ws::connect(with_origin(other), Builder::new()).await {
                Err(WsError::Http(response)) => assert_eq!(response.status(), 403, "{other}"),
                got => panic!("{other}: expected 403, got {:?}", got.map(|_| ())),
            }
        }
        for local in [
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "https://[::1]",
        ] {
            let conn = ws::connect(with_origin(local), Builder::new())
                .await
                .unwrap();
            assert_eq!(add(&conn.client, 1.0).await, 2.0, "{local}");
        }
        let plain = ws::connect(url.as_str(), Builder::new()).await.unwrap();
        assert_eq!(add(&plain.client, 1.0).await, 2.0);
        let mut any = ServeOptions::default();
        any.allowed_origins = Origins::Any;
        let open = start(Kind::Ws, any, Config::default()).await;
        let url = format!("ws://{}", open.addr);
        let conn = ws::connect(handshake_from(&url, "https://evil.example"), Builder::new())
            .await
            .unwrap();
        assert_eq!(add(&conn.client, 1.0).await, 2.0);
    })
    .await;
}

/// Sends a hand-written HTTP request on a fresh connection (`Connection: close`) and
/// returns the status and the lower-cased head and the body.
async fn http_exchange(addr: SocketAddr, request: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let text = read_to_close(&mut stream).await;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head[9..12].parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

fn preflight(origin: &str) -> String {
    format!(
        "OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, x-trace\r\nConnection: close\r\n\r\n"
    )
}

fn post(origin: &str, body: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: x\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}"#;

#[tokio::test]
async fn cors_preflight_is_answered_for_allowed_origins_only() {
    within(LIMIT, async {
        let mut options = ServeOptions::default();
        options.cors = Some(Origins::List(vec!["https://app.example".into()]));
        options.cors_max_age = Duration::from_secs(120);
        let server = start(Kind::Http, options, Config::default()).await;

        let (status, head, _) = http_exchange(server.addr, &preflight("https://app.example")).await;
        assert_eq!(status, 204, "{head}");
        for header in [
            "access-control-allow-origin: https://app.example",
            "access-control-allow-methods: post",
            "access-control-allow-headers: content-type, x-trace",
            "access-control-max-age: 120",
            "vary: origin",
        ] {
            assert!(head.contains(header), "{header} missing in {head}");
        }
        let (status, head, _) =
            http_exchange(server.addr, &preflight("https://evil.example")).await;
        assert_eq!(status, 403, "{head}");
        assert!(!head.contains("access-control-"), "{head}");

        // Actual calls: answered either way; CORS headers only for the allowed origin.
        let (status, head, body) =
            http_exchange(server.addr, &post("https://app.example", CALL)).await;
        assert_eq!(status, 200);
        assert!(
            head.contains("access-control-allow-origin: https://app.example"),
            "{head}"
        );
        assert!(head.contains("vary: origin"), "{head}");
        assert_eq!(body, r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#);
        let (status, head, _) =
            http_exchange(server.addr, &post("https://evil.example", CALL)).await;
        assert_eq!(status, 200);
        assert!(!head.contains("access-control-allow-origin"), "{head}");

        // Any origin: `*`.
        let mut options = ServeOptions::default();
        options.cors = Some(Origins::Any);
        let any = start(Kind::Http, options, Config::default()).await;
        let (status, head, _) =
            http_exchange(any.addr, &preflight("https://whoever.example")).await;
        assert_eq!(status, 204);
        assert!(head.contains("access-control-allow-origin: *"), "{head}");
    })
    .await;
}

#[tokio::test]
async fn without_cors_options_is_not_allowed() {
    within(LIMIT, async {
        let server = start(Kind::Http, ServeOptions::default(), Config::default()).await;
        let (status, head, _) = http_exchange(server.addr, &preflight("https://app.example")).await;
        assert_eq!(status, 405);
        assert!(!head.contains("access-control-"), "{head}");
    })
    .await;
}

#[tokio::test]
async fn an_http_flood_beyond_the_limit_gets_503_while_kept_connections_work() {
    within(LIMIT, async {
        let server = start(Kind::Http, limit(2), Config::default()).await;
        let keep_alive = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{CALL}",
            CALL.len()
        );
        let mut kept = Vec::new();
        for _ in 0..2 {
            let mut stream = TcpStream::connect(server.addr).await.unwrap();
            stream.write_all(keep_alive.as_bytes()).await.unwrap();
            assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
            kept.push(stream);
        }
        for _ in 0..10 {
            let (status, _, _) = http_exchange(server.addr, &post("https://app.example", CALL)).await;
            assert_eq!(status, 503);
        }
        for stream in &mut kept {
            stream.write_all(keep_alive.as_bytes()).await.unwrap();
            let response = read_response(stream).await;
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        }
    })
    .await;
}

/// Reads one response on a kept-alive connection (its body has a Content-Length).
async fn read_response(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|n| n.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return text;
            }
        }
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed mid-response: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn a_tcp_slowloris_is_dropped_at_the_frame_timeout_and_an_idle_peer_at_the_idle_timeout() {
    within(LIMIT, async {
        let mut config = Config::default();
        config.frame_timeout = Some(Duration::from_millis(500));
        config.idle_timeout = Some(Duration::from_secs(5));
        let server = start(Kind::Tcp, ServeOptions::default(), config).await;
        let stream = TcpStream::connect(server.addr).await.unwrap();
        let normal = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::tcp(stream));
        assert_eq!(add(&normal.client, 1.0).await, 2.0);

        // Each time is taken before what starts the server's timer (a busy machine may run
        // this task late after it).
        let start = Instant::now();
        let mut slow = TcpStream::connect(server.addr).await.unwrap();
        let frame = format!("Content-Length: {}\r\n\r\n{CALL}", CALL.len());
        slow.write_all(&frame.as_bytes()[..frame.len() / 2])
            .await
            .unwrap();
        assert_eq!(read_to_close(&mut slow).await, "");
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(500), "dropped after {took:?}");
        assert!(
            took < Duration::from_secs(2),
            "dropped by the idle timeout instead"
        );
        assert_eq!(add(&normal.client, 2.0).await, 3.0);

        let start = Instant::now();
        let mut idle = TcpStream::connect(server.addr).await.unwrap();
        assert_eq!(read_to_close(&mut idle).await, "");
        assert!(start.elapsed() >= Duration::from_secs(5));
    })
    .await;
}

#[tokio::test]
async fn an_http_slowloris_is_dropped_at_the_timeout() {
    within(LIMIT, async {
        let mut config = Config::default();
        config.frame_timeout = Some(Duration::from_millis(500));
        let server = start(Kind::Http, ServeOptions::default(), config).await;
        // Half a head, then nothing: closed by the head timeout. (Each time is taken before
        // what starts the server's timer: a busy machine may run this task late after it.)
        let start = Instant::now();
        let mut slow = TcpStream::connect(server.addr).await.unwrap();
        slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Ty")
            .await
            .unwrap();
        read_to_close(&mut slow).await;
        assert!(start.elapsed() >= Duration::from_millis(500));
        // A whole head and half a body: 408, then closed.
        let mut slow = TcpStream::connect(server.addr).await.unwrap();
        let request = post("https://app.example", CALL);
        slow.write_all(&request.as_bytes()[..request.len() - 10])
            .await
            .unwrap();
        let got = read_to_close(&mut slow).await;
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        // A kept-alive connection waiting for its next request is closed as well.
        let mut kept = TcpStream::connect(server.addr).await.unwrap();
        let keep_alive = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{CALL}",
            CALL.len()
        );
        let start = Instant::now();
        kept.write_all(keep_alive.as_bytes()).await.unwrap();
        assert!(read_response(&mut kept).await.starts_with("HTTP/1.1 200"));
        assert_eq!(read_to_close(&mut kept).await, "");
        assert!(start.elapsed() >= Duration::from_millis(500));
        // A normal request meanwhile is answered.
        let (status, _, body) =
            http_exchange(server.addr, &post("https://app.example", CALL)).await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#)
        );
    })
    .await;
}

/// An HTTP server whose head timeout (the endpoint's frame timeout) is `limit`, and the
/// text of one `add` request to it.
async fn http_with_head_timeout(limit: Duration) -> (Running, String) {
    let mut config = Config::default();
    config.frame_timeout = Some(limit);
    let server = start(Kind::Http, ServeOptions::default(), config).await;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{CALL}",
        CALL.len()
    );
    (server, request)
}

/// The head timeout counts from the end of the connection's last exchange, not from its
/// opening, and does not cut an exchange under way: a kept-alive connection used for
/// longer than the timeout stays open, a body that comes after the timeout would have
/// fired (but within its own limit) is answered, and only idling closes the connection.
#[tokio::test]
async fn the_http_head_timeout_counts_from_the_last_exchange() {
    within(LIMIT, async {
        let limit = Duration::from_secs(2);
        let (server, request) = http_with_head_timeout(limit).await;
        let answered = |response: String| {
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
            assert!(response.ends_with(r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#));
        };
        let mut kept = TcpStream::connect(server.addr).await.unwrap();
        let opened = Instant::now();
        // Exchanges a quarter of the limit apart, for one and a half times the limit.
        while opened.elapsed() < limit * 3 / 2 {
            kept.write_all(request.as_bytes()).await.unwrap();
            answered(read_response(&mut kept).await);
            tokio::time::sleep(limit / 4).await;
        }
        // A head well within the limit, its body after the head timer would have fired.
        tokio::time::sleep(limit * 3 / 10).await;
        let (head, body) = request.split_at(request.len() - CALL.len());
        kept.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(limit * 7 / 10).await;
        kept.write_all(body.as_bytes()).await.unwrap();
        answered(read_response(&mut kept).await);
        // Then idle: closed once the limit has passed since that exchange.
        let idle = Instant::now();
        assert_eq!(read_to_close(&mut kept).await, "");
        assert!(idle.elapsed() >= limit);
    })
    .await;
}

/// An HTTP peer that sends requests and never reads the answers is closed once an answer
/// has waited the write-stall timeout with no byte taken (without it, the connection would
/// be held for good), and the server goes on serving others.
#[tokio::test]
async fn an_http_peer_that_never_reads_is_closed_at_the_write_stall_timeout() {
    within(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        const BIG: usize = 1 << 20;
        let mut router = calculator();
        router
            .sync()
            .raw_method("big", |_, out| {
                out.push(b'"');
                out.resize(out.len() + BIG, b'x');
                out.push(b'"');
                Ok(())
            })
            .unwrap();
        let mut config = Config::default();
        config.write_stall_timeout = Some(Duration::from_millis(500));
        let (_stop, stopped) = oneshot::channel::<()>();
        let builder = Builder::new().config(config).router(router);
        let shutdown = async move {
            let _ = stopped.await;
        };
        let options = ServeOptions::default();
        tokio::spawn(http::serve_with(
            listener,
            builder,
            options,
            shutdown,
            Duration::from_secs(1),
        ));
        // 64 answers of 1 MiB asked for, far more than the socket buffers hold; none read.
        let mut greedy = TcpStream::connect(addr).await.unwrap();
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"big"}"#;
        let request = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{call}",
            call.len()
        );
        for _ in 0..64 {
            greedy.write_all(request.as_bytes()).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        // What the buffers held comes, then the end: not all 64 answers.
        let mut received = 0;
        let mut buf = vec![0u8; 1 << 16];
        let drained = async {
            loop {
                match greedy.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => received += n,
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), drained)
            .await
            .expect("the server did not close the connection");
        assert!(received < 64 * BIG, "all {received} bytes came");
        // Others are served.
        let (status, _, body) = http_exchange(addr, &post("https://app.example", CALL)).await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"jsonrpc":"2.0","result":3.0,"id":1}"#)
        );
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_unix_socket_flood_beyond_the_limit_is_refused() {
    within(LIMIT, async {
        let dir = std::env::temp_dir().join(format!("sansrpc-protect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("limit.sock");
        let _ = std::fs::remove_file(&path);
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let (_stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let builder = Builder::new().router(calculator());
        let serve = sansrpc_tokio::serve_unix_with(listener, builder, limit(1), shutdown, grace());
        tokio::spawn(serve);
        let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        let served = sansrpc_tokio::spawn(Builder::new(), sansrpc_tokio::unix(stream));
        assert_eq!(add(&served.client, 1.0).await, 2.0);
        for _ in 0..5 {
            let mut refused = tokio::net::UnixStream::connect(&path).await.unwrap();
            let mut got = String::new();
            refused.read_to_string(&mut got).await.unwrap();
            assert!(got.contains(r#""code":-32002"#), "{got:?}");
        }
        assert_eq!(add(&served.client, 2.0).await, 3.0);
        let _ = std::fs::remove_file(&path);
    })
    .await;
}

fn grace() -> Duration {
    Duration::from_secs(1)
}

/// Under tokio's paused time (`start_paused`, test-util: what tests with virtual time run
/// on), an idle HTTP connection is still closed at its head timeout. The server judges
/// whether its timer can have fired by tokio's clock, which the auto-advance moves; judged
/// by the driver's time of the turn, which lags a timer that fired, the timer was never
/// polled again and the connection stayed open.
#[tokio::test(start_paused = true)]
async fn under_paused_time_an_idle_http_connection_is_closed_at_the_head_timeout() {
    let limit = Duration::from_secs(2);
    let (server, request) = http_with_head_timeout(limit).await;
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    kept.write_all(request.as_bytes()).await.unwrap();
    let response = read_response(&mut kept).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let idle = tokio::time::Instant::now();
    // `read_to_close` gives up after 20 s of the (paused) clock.
    assert_eq!(read_to_close(&mut kept).await, "");
    assert!(idle.elapsed() >= limit, "closed after {:?}", idle.elapsed());
}
