//! Handlers with a `RequestContext`, over real TCP sockets on smol: calling the peer from
//! inside a handler, seeing a cancellation instead of being dropped, reporting progress in
//! the connection's profile.

mod common;

use std::time::Duration;

use common::{within, LIMIT};
use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::connection::{Config, Profile};
use sansrpc::method::Method;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Client, RequestContext};

enum Greet {}
impl Method for Greet {
    const NAME: &'static str = "greet";
    type Params = (String,);
    type Result = String;
}

/// Asked by the server of its client, from inside the `greet` handler.
enum Salutation {}
impl Method for Salutation {
    const NAME: &'static str = "client/salutation";
    type Params = ();
    type Result = String;
}

enum Wait {}
impl Method for Wait {
    const NAME: &'static str = "wait";
    type Params = serde_json::Value;
    type Result = String;
}

/// Serves one connection with `server` and connects a client built with `client` to it.
async fn pair(server: Builder, client: Builder) -> (Client, smol::Task<std::io::Result<()>>) {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (_, driver) = server.connect(transport::tcp(stream), AsyncIoTimer);
        driver.await
    });
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let (client_handle, driver) = client.connect(transport::tcp(stream), AsyncIoTimer);
    smol::spawn(driver).detach();
    (client_handle, served)
}

/// True when `f` is still pending after `ms` milliseconds; `f` is dropped then.
async fn still_pending<F: std::future::Future>(f: F, ms: u64) -> bool {
    let f = std::pin::pin!(f);
    let timer = async_io::Timer::after(Duration::from_millis(ms));
    matches!(
        futures::future::select(f, timer).await,
        futures::future::Either::Right(_)
    )
}

#[test]
fn a_handler_calls_the_peer_through_its_context() {
    smol::block_on(within(LIMIT, async {
        let mut server = AsyncRouter::new();
        server
            .method_with_context::<Greet, _, _>(|cx: RequestContext, (name,)| async move {
                let salutation = cx
                    .peer()
                    .call::<Salutation>(&())
                    .await
                    .map_err(|_| ErrorObject::fixed(-1, "the client did not answer"))?;
                Ok(format!("{salutation}, {name} (request {})", cx.id()))
            })
            .unwrap();
        let mut client = AsyncRouter::new();
        client
            .method::<Salutation, _, _>(|()| async { Ok("Hello".to_owned()) })
            .unwrap();
        let (client, _served) =
            pair(Builder::new().router(server), Builder::new().router(client)).await;
        let answer = client.call::<Greet>(&("Ada".to_owned(),)).await.unwrap();
        assert!(answer.starts_with("Hello, Ada (request "), "{answer}");
    }));
}

#[test]
fn a_handler_with_a_context_sees_the_cancellation_and_is_not_dropped() {
    smol::block_on(within(LIMIT, async {
        let (saw_tx, mut saw) = mpsc::unbounded();
        let mut server = AsyncRouter::new();
        server
            .method_with_context::<Wait, _, _>(move |cx: RequestContext, _| {
                let saw_tx = saw_tx.clone();
                async move {
                    assert!(!cx.is_cancelled());
                    cx.cancelled().await;
                    assert!(cx.is_cancelled());
                    let _ = saw_tx.unbounded_send(cx.id().to_string());
                    Err(ErrorObject::fixed(-32800, "stopped on request"))
                }
            })
            .unwrap();
        let (client, _served) = pair(Builder::new().router(server), Builder::new()).await;
        // Dropped after a short while: the client sends $/cancelRequest.
        let call = client.call::<Wait>(&serde_json::json!({}));
        assert!(
            still_pending(call, 100).await,
            "the call must not end by itself"
        );
        let id = saw.next().await.expect("the handler saw its cancellation");
        assert!(!id.is_empty());
        // The connection goes on.
        let again = client.call::<Wait>(&serde_json::json!({}));
        assert!(still_pending(again, 50).await);
        assert!(
            saw.next().await.is_some(),
            "the second one was cancelled too"
        );
    }));
}

#[test]
fn progress_goes_out_in_the_connections_profile() {
    smol::block_on(within(LIMIT, async {
        for profile in [Profile::Lsp, Profile::Mcp] {
            let mut server = AsyncRouter::new();
            server
                .method_with_context::<Wait, _, _>(|cx: RequestContext, _| async move {
                    let half = RawValue::from_json("{\"progress\":50,\"total\":100}").unwrap();
                    let sent = cx.report_progress(half).await.unwrap();
                    Ok(format!("sent:{sent}"))
                })
                .unwrap();
            let (seen_tx, mut seen) = mpsc::unbounded();
            let mut client = AsyncRouter::new();
            let method = Config::for_profile(profile).progress_method;
            client
                .raw_notification(method, move |params| {
                    let _ = seen_tx.unbounded_send(params.map(|p| p.get().to_owned()));
                    async {}
                })
                .unwrap();
            let config = Config::for_profile(profile);
            let (client, _served) = pair(
                Builder::new()
                    .config(config.clone())
                    .router(server)
                    .configure(|c| c.lsp_lifecycle = false),
                Builder::new()
                    .config(config)
                    .router(client)
                    .configure(|c| c.lsp_lifecycle = false),
            )
            .await;
            let params = match profile {
                Profile::Mcp => serde_json::json!({"_meta": {"progressToken": "t-1"}}),
                _ => serde_json::json!({"workDoneToken": "t-1"}),
            };
            assert_eq!(client.call::<Wait>(&params).await.unwrap(), "sent:true");
            let note = seen
                .next()
                .await
                .flatten()
                .expect("a progress notification");
            let note: serde_json::Value = serde_json::from_str(&note).unwrap();
            let expected = match profile {
                Profile::Mcp => {
                    serde_json::json!({"progressToken": "t-1", "progress": 50, "total": 100})
                }
                _ => serde_json::json!({"token": "t-1", "value": {"progress": 50, "total": 100}}),
            };
            assert_eq!(note, expected, "{profile:?}");
            // No token: nothing is sent.
            let none = client.call::<Wait>(&serde_json::json!({})).await.unwrap();
            assert_eq!(none, "sent:false");
        }
    }));
}

#[test]
fn rpc_discover_lists_async_context_and_stream_methods() {
    smol::block_on(within(LIMIT, async {
        let mut server = AsyncRouter::new();
        server
            .method::<Greet, _, _>(|(name,)| async move { Ok(name) })
            .unwrap();
        server
            .method_with_context::<Wait, _, _>(|_cx: RequestContext, _| async { Ok(String::new()) })
            .unwrap();
        server
            .stream_method("numbers", |(): ()| {
                Ok(futures::stream::iter(
                    (0..3).map(Ok::<u32, ErrorObject<'static>>),
                ))
            })
            .unwrap();
        let (client, _served) = pair(Builder::new().router(server), Builder::new()).await;
        let doc = client.call_raw("rpc.discover", None).await.unwrap();
        let doc: serde_json::Value = serde_json::from_str(doc.get()).unwrap();
        let methods = doc["methods"].as_array().unwrap();
        let names: Vec<&str> = methods
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["greet", "numbers", "wait"]);
        assert_eq!(methods[1]["x-stream"], true);
        assert_eq!(methods[0]["params"].as_array().unwrap().len(), 1);
    }));
}

/// Records what a metrics layer is told.
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<(String, bool)>>);

impl sansrpc::ext::interceptors::Metrics for Seen {
    fn record_request(&self, _method: &str) {}
    fn record_response(&self, method: &str, _duration: Duration, success: bool) {
        self.0.lock().unwrap().push((method.to_owned(), success));
    }
    fn record_batch_size(&self, _size: usize) {}
    fn record_error(&self, _method: &str, _code: i64) {}
}

#[test]
fn layers_see_async_handlers_finish() {
    smol::block_on(within(LIMIT, async {
        let seen = std::sync::Arc::new(Seen::default());
        let mut server = AsyncRouter::new();
        server
            .sync()
            .layer(sansrpc::ext::interceptors::MetricsLayer::new(seen.clone()));
        server
            .method::<Greet, _, _>(|(name,)| async move {
                if name.is_empty() {
                    return Err(ErrorObject::fixed(-1, "no name"));
                }
                Ok(name)
            })
            .unwrap();
        let (client, _served) = pair(Builder::new().router(server), Builder::new()).await;
        client.call::<Greet>(&("Ada".to_owned(),)).await.unwrap();
        assert!(client.call::<Greet>(&(String::new(),)).await.is_err());
        let seen = seen.0.lock().unwrap().clone();
        assert_eq!(
            seen,
            [("greet".to_owned(), true), ("greet".to_owned(), false)]
        );
    }));
}

#[test]
fn synchronous_and_stream_handlers_find_their_context() {
    smol::block_on(within(LIMIT, async {
        let mut core = sansrpc::router::Router::new();
        core.raw_method("whoami", |_, out| {
            let cx = RequestContext::current().expect("a context in a sync handler");
            let progress = RawValue::from_json("{\"kind\":\"report\"}").unwrap();
            let queued = cx.queue_progress(progress);
            out.extend_from_slice(format!("\"{} {queued}\"", cx.id()).as_bytes());
            Ok(())
        })
        .unwrap();
        let kept = std::sync::Arc::new(std::sync::Mutex::new(None::<RequestContext>));
        let slot = kept.clone();
        core.stream_method("count", move |(to,): (u64,)| {
            *slot.lock().unwrap() = RequestContext::current();
            Ok((1..=to).map(Ok::<u64, ErrorObject<'static>>))
        })
        .unwrap();
        let (seen_tx, mut seen) = mpsc::unbounded();
        let mut client = AsyncRouter::new();
        client
            .raw_notification("$/progress", move |params| {
                let _ = seen_tx.unbounded_send(params.map(|p| p.get().to_owned()));
                async {}
            })
            .unwrap();
        let (client, _served) = pair(
            Builder::new().router(AsyncRouter::from_router(core)),
            Builder::new().router(client),
        )
        .await;
        let answer = client
            .call_raw(
                "whoami",
                Some(RawValue::from_json(r#"{"workDoneToken":"w"}"#).unwrap()),
            )
            .await
            .unwrap();
        let answer: String = serde_json::from_str(answer.get()).unwrap();
        assert!(answer.ends_with(" true"), "{answer}");
        let note = seen
            .next()
            .await
            .flatten()
            .expect("progress from a sync handler");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&note).unwrap(),
            serde_json::json!({"token": "w", "value": {"kind": "report"}})
        );
        // Outside a handler there is none.
        assert!(RequestContext::current().is_none());

        let mut items = client
            .stream::<_, u64>("count", &(3,), sansrpc_futures::StreamOptions::new(4, 8))
            .await
            .unwrap();
        let mut got = Vec::new();
        while let Some(item) = items.next().await {
            got.push(item.unwrap());
        }
        assert_eq!(got, [1, 2, 3]);
        let cx = kept
            .lock()
            .unwrap()
            .clone()
            .expect("a context in a stream handler");
        // The stream ended: its context says so once the server dropped it.
        for _ in 0..200 {
            if cx.is_cancelled() {
                break;
            }
            async_io::Timer::after(Duration::from_millis(10)).await;
        }
        assert!(
            cx.is_cancelled(),
            "the stream's context is cancelled when it ends"
        );
    }));
}

/// LSP: progress the server starts on its own is created with the client first
/// (`window/workDoneProgress/create`) when the client said it handles that, the request's
/// own `workDoneToken` is used when it has one, and partial results go out on the
/// request's `partialResultToken` ahead of the answer.
#[test]
fn lsp_work_done_progress_and_partial_results() {
    smol::block_on(within(LIMIT, async {
        for (creates, work_done_token) in [(true, None), (false, None), (false, Some("w-9"))] {
            let mut server = AsyncRouter::new();
            server
                .raw_method("initialize", |_| async {
                    Ok(RawValue::from_string("{\"capabilities\":{}}".into()).unwrap())
                })
                .unwrap();
            server
                .raw_method_with_context("index", |cx: RequestContext, _| async move {
                    let part = RawValue::from_json("[1]").unwrap();
                    let partial = cx.report_partial(part).await.unwrap();
                    assert_eq!(partial, cx.partial_result_token().is_some());
                    let token = cx.begin_work_done("Indexing").await.unwrap();
                    let mut answer = Vec::new();
                    match token {
                        Some(t) => t.write_json(&mut answer),
                        None => answer.extend_from_slice(b"null"),
                    }
                    let answer = String::from_utf8(answer).unwrap();
                    Ok(RawValue::from_string(answer).unwrap())
                })
                .unwrap();
            let (seen_tx, mut seen) = mpsc::unbounded();
            let created = seen_tx.clone();
            let mut client = AsyncRouter::new();
            client
                .raw_method("window/workDoneProgress/create", move |params| {
                    let params = params.map(|p| p.get().to_owned()).unwrap_or_default();
                    let _ = created.unbounded_send(format!("create {params}"));
                    async { Ok(RawValue::from_string("null".into()).unwrap()) }
                })
                .unwrap();
            client
                .raw_notification("$/progress", move |params| {
                    let params = params.map(|p| p.get().to_owned()).unwrap_or_default();
                    let _ = seen_tx.unbounded_send(format!("progress {params}"));
                    async {}
                })
                .unwrap();
            let config = Config::for_profile(Profile::Lsp);
            let (client, _served) = pair(
                Builder::new().config(config.clone()).router(server),
                Builder::new()
                    .config(config)
                    .router(client)
                    .configure(|c| c.lsp_lifecycle = false),
            )
            .await;
            let capabilities = serde_json::json!({"processId": null,
                "capabilities": {"window": {"workDoneProgress": creates}}});
            let capabilities = RawValue::from_string(capabilities.to_string()).unwrap();
            client
                .call_raw("initialize", Some(&capabilities))
                .await
                .unwrap();
            let mut params = serde_json::json!({"partialResultToken": "p-1"});
            if let Some(t) = work_done_token {
                params["workDoneToken"] = serde_json::json!(t);
            }
            let params = RawValue::from_string(params.to_string()).unwrap();
            let token = client.call_raw("index", Some(&params)).await.unwrap();
            let token: serde_json::Value = serde_json::from_str(token.get()).unwrap();
            // Everything the client saw arrived before the answer.
            let mut saw = Vec::new();
            while let Ok(line) = seen.try_recv() {
                saw.push(line);
            }
            let mut expected = vec![r#"progress {"token":"p-1","value":[1]}"#.to_owned()];
            let begin = r#""value":{"kind":"begin","title":"Indexing"}"#;
            match (creates, work_done_token) {
                (_, Some(t)) => {
                    assert_eq!(token, serde_json::json!(t));
                    expected.push(format!(r#"progress {{"token":"{t}",{begin}}}"#));
                }
                (true, None) => {
                    let t = token.as_str().expect("a created token").to_owned();
                    assert!(t.starts_with("sansrpc-progress-"), "{t}");
                    expected.push(format!(r#"create {{"token":"{t}"}}"#));
                    expected.push(format!(r#"progress {{"token":"{t}",{begin}}}"#));
                }
                (false, None) => assert_eq!(token, serde_json::Value::Null),
            }
            assert_eq!(
                saw, expected,
                "creates: {creates}, token: {work_done_token:?}"
            );
        }
    }));
}

/// A handler registered with `raw_method_with_context` reads its params before its
/// future is made (they are lent, not copied); one that answers at once (answered as it is
/// routed) and one that waits (polled again among the running handlers) are both
/// answered, each with what it read from its own params.
#[test]
fn a_handler_reads_its_lent_params_before_its_future_and_both_kinds_answer() {
    smol::block_on(within(LIMIT, async {
        let mut server = AsyncRouter::new();
        for (method, wait) in [("now", false), ("later", true)] {
            server
                .raw_method_with_context(method, move |_cx, params: Option<&RawValue>| {
                    // Read here, before the future: only what is read goes into it.
                    let name = params
                        .and_then(|p| p.members())
                        .and_then(|mut m| m.find(|(n, _)| *n == "name"))
                        .map(|(_, v)| v.get().to_owned())
                        .unwrap_or_else(|| "null".to_owned());
                    async move {
                        if wait {
                            async_io::Timer::after(Duration::from_millis(20)).await;
                        }
                        Ok(RawValue::from_string(name).unwrap())
                    }
                })
                .unwrap();
        }
        let (client, _served) = pair(Builder::new().router(server), Builder::new()).await;
        let call = |method: &'static str, name: &str| {
            let params = RawValue::from_string(format!(r#"{{"x":1,"name":"{name}"}}"#)).unwrap();
            let client = client.clone();
            async move { client.call_raw(method, Some(&params)).await.unwrap() }
        };
        let (later, now) = futures::future::join(call("later", "b"), call("now", "a")).await;
        assert_eq!((now.get(), later.get()), (r#""a""#, r#""b""#));
        let absent = client.call_raw("now", None).await.unwrap();
        assert_eq!(absent.get(), "null");
    }));
}
