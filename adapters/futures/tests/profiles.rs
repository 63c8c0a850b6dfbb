//! The MCP profile through the driver, over a real TCP connection on 127.0.0.1 (smol): a
//! foreign peer writing newline-framed JSON sees MCP progress, and no response after its
//! `notifications/cancelled`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::{within, LIMIT};
use futures::io::BufReader;
use futures::{AsyncBufReadExt, AsyncWriteExt, StreamExt};
use sansrpc::connection::{Config, Profile};
use sansrpc::{Id, RawValue};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Client};
use serde_json::{json, Value};

/// Sets its flag when dropped: the handler's future was dropped by the peer's cancel.
struct Dropped(Arc<AtomicBool>);
impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn mcp_progress_and_cancel_on_the_wire() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let me: Arc<OnceLock<Client>> = Arc::new(OnceLock::new());
            let conn = me.clone();
            let mut router = AsyncRouter::new();
            router
                .raw_method("slow", move |params| {
                    let conn = conn.clone();
                    let guard = Dropped(flag.clone());
                    async move {
                        let _guard = guard;
                        let params: Value = serde_json::from_str(params.unwrap().get()).unwrap();
                        let token = params["_meta"]["progressToken"].as_str().unwrap();
                        let value = RawValue::from_json(r#"{"progress":1,"total":2}"#).unwrap();
                        let client = conn.get().unwrap();
                        client
                            .send_progress(&Id::string(token), value)
                            .await
                            .unwrap();
                        futures::future::pending::<()>().await;
                        Ok(RawValue::from_string("null".into()).unwrap())
                    }
                })
                .unwrap();
            router
                .raw_method("ping", |_| async {
                    Ok(RawValue::from_string("{}".into()).unwrap())
                })
                .unwrap();
            let (client, driver) = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(router)
                .connect(transport::tcp(stream), AsyncIoTimer);
            let _ = me.set(client);
            let _ = driver.await;
        })
        .detach();

        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let mut writer = stream.clone();
        let mut lines = BufReader::new(stream).lines();
        let call =
            r#"{"jsonrpc":"2.0","id":1,"method":"slow","params":{"_meta":{"progressToken":"p1"}}}"#;
        writer
            .write_all(format!("{call}\n").as_bytes())
            .await
            .unwrap();
        let progress: Value = serde_json::from_str(&lines.next().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            progress,
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "p1", "progress": 1, "total": 2}})
        );
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}"#;
        writer
            .write_all(format!("{cancel}\n").as_bytes())
            .await
            .unwrap();
        while !cancelled.load(Ordering::SeqCst) {
            async_io::Timer::after(Duration::from_millis(10)).await;
        }
        // The next line on the wire answers the ping: nothing was written for request 1.
        writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
            .await
            .unwrap();
        let next: Value = serde_json::from_str(&lines.next().await.unwrap().unwrap()).unwrap();
        assert_eq!(next, json!({"jsonrpc": "2.0", "result": {}, "id": 2}));
    }));
}

#[derive(serde::Serialize, serde::Deserialize)]
struct AddParams {
    a: i64,
    b: i64,
}

sansrpc::method!(Add = "tools/add", AddParams => i64);
sansrpc::method!(Ping = "ping", () => Value);

#[test]
fn one_line_methods_called_and_served_without_turbofish() {
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut router = AsyncRouter::new();
            router
                .handle(Add, |p| async move { Ok(p.a + p.b) })
                .unwrap();
            router.handle(Ping, |()| async { Ok(json!({})) }).unwrap();
            let (_client, driver) = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(router)
                .connect(transport::tcp(stream), AsyncIoTimer);
            let _ = driver.await;
        })
        .detach();
        let stream = async_net::TcpStream::connect(addr).await.unwrap();
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .connect(transport::tcp(stream), AsyncIoTimer);
        smol::spawn(driver).detach();
        assert_eq!(
            client
                .request(Add, &AddParams { a: 2, b: 3 })
                .await
                .unwrap(),
            5
        );
        assert_eq!(client.request(Ping, &()).await.unwrap(), json!({}));
        // MCP's `_meta` on a method that takes no params.
        let meta = RawValue::from_json(r#"{"_meta":{"progressToken":1}}"#).unwrap();
        assert_eq!(
            client.call_raw("ping", Some(meta)).await.unwrap().get(),
            "{}"
        );
    }));
}

/// Collects the messages of `WARN` events, from every thread.
struct Warnings(std::sync::Mutex<Vec<String>>);

struct Message<'a>(&'a mut String);
impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut message = String::new();
            event.record(&mut Message(&mut message));
            self.0.lock().unwrap().push(message);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn content_length_sent_to_an_mcp_server_is_a_warning_naming_the_framing() {
    static WARNINGS: OnceLock<Arc<Warnings>> = OnceLock::new();
    let warnings = WARNINGS
        .get_or_init(|| Arc::new(Warnings(std::sync::Mutex::new(Vec::new()))))
        .clone();
    let _ = tracing::subscriber::set_global_default(warnings.clone());
    smol::block_on(within(LIMIT, async {
        let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        smol::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (_client, driver) = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .connect(transport::tcp(stream), AsyncIoTimer);
            let _ = driver.await;
        })
        .detach();
        let mut stream = async_net::TcpStream::connect(addr).await.unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        stream.write_all(frame.as_bytes()).await.unwrap();
        loop {
            let seen = warnings.0.lock().unwrap().clone();
            if let Some(w) = seen.iter().find(|w| w.contains("framing")) {
                assert!(w.contains("configure ContentLength framing"), "{w}");
                break;
            }
            drop(seen);
            async_io::Timer::after(Duration::from_millis(10)).await;
        }
    }));
}
