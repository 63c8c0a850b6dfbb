//! Interceptors over real TCP on 127.0.0.1 (smol): the auth layer guards async and sync
//! handlers alike; clients attach a bearer token from a provider; a client-side rate
//! limit refuses without sending.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{within, LIMIT};
use futures::channel::mpsc;
use futures::StreamExt;
use sansrpc::ext::interceptors::{
    AuthLayer, BearerToken, ClientRateLimit, Interceptors, TokenBucket,
};
use sansrpc::method::{CallError, NotificationMethod};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder, Client};
use sansrpc_runtime::system_clock;

enum Seen {}
impl NotificationMethod for Seen {
    const NAME: &'static str = "seen";
    type Params = (String,);
}

/// An async `echo`, a sync `add`, an async `seen` notification, behind the auth layer.
fn router(seen: mpsc::UnboundedSender<String>) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    router
        .raw_method("echo", |params: Option<Box<RawValue>>| async move {
            Ok(params.unwrap_or_else(|| RawValue::NULL.to_owned()))
        })
        .unwrap();
    router
        .notification::<Seen, _, _>(move |(text,)| {
            let _ = seen.unbounded_send(text);
            async {}
        })
        .unwrap();
    let sync = router.sync();
    sync.raw_method("add", |params, out| {
        let (a, b): (i64, i64) = params
            .ok_or_else(ErrorObject::invalid_params)?
            .deserialize()
            .map_err(|_| ErrorObject::invalid_params())?;
        out.extend_from_slice((a + b).to_string().as_bytes());
        Ok(())
    })
    .unwrap();
    sync.layer(AuthLayer::token("s3cret"));
    router
}

/// Serves one connection with `router`; returns a plain client.
async fn connect(router: AsyncRouter) -> (Client, smol::Task<()>) {
    let listener = async_net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = smol::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (_, driver) = Builder::new()
            .router(router)
            .connect(transport::tcp(stream), AsyncIoTimer);
        let _ = driver.await;
    });
    let stream = async_net::TcpStream::connect(addr).await.unwrap();
    let (client, driver) = Builder::new().connect(transport::tcp(stream), AsyncIoTimer);
    smol::spawn(driver).detach();
    (client, server)
}

fn raw(json: &str) -> Option<&RawValue> {
    Some(RawValue::from_json(json).unwrap())
}

fn rpc_error(result: Result<Box<RawValue>, CallError>) -> ErrorObject<'static> {
    match result {
        Err(CallError::Rpc(e)) => e,
        other => panic!("expected an error object, got {other:?}"),
    }
}

#[test]
fn async_and_sync_handlers_are_guarded_and_a_token_provider_opens_them() {
    smol::block_on(within(LIMIT, async {
        let (seen_tx, mut seen) = mpsc::unbounded();
        let (plain, _server) = connect(router(seen_tx)).await;

        let async_method = rpc_error(plain.call_raw("echo", raw("[1]")).await);
        let sync_method = rpc_error(plain.call_raw("add", raw("[1,2]")).await);
        let missing = rpc_error(plain.call_raw("nope", raw("[1]")).await);
        assert_eq!(async_method.code, 1000);
        assert_eq!(async_method, sync_method);
        assert_eq!(async_method, missing);

        let token = Arc::new(Mutex::new(Some("s3cret".to_owned())));
        let provider = {
            let token = Arc::clone(&token);
            move || token.lock().unwrap().clone()
        };
        let client = plain.with_interceptors(Interceptors::new().with(BearerToken::new(provider)));
        // Handlers see the params without the credential, exactly as sent.
        let echoed = client
            .call_raw("echo", raw(r#"[1,"x",{"y":2.50}]"#))
            .await
            .unwrap();
        assert_eq!(echoed.get(), r#"[1,"x",{"y":2.50}]"#);
        let echoed = client.call_raw("echo", raw(r#"{"k":"v"}"#)).await.unwrap();
        assert_eq!(echoed.get(), r#"{"k":"v"}"#);
        assert_eq!(client.call_raw("echo", None).await.unwrap().get(), "null");
        assert_eq!(
            client.call_raw("add", raw("[1,2]")).await.unwrap().get(),
            "3"
        );
        let missing = rpc_error(client.call_raw("nope", None).await);
        assert_eq!(missing.code, -32601);

        // Batches: every entry carries the token.
        let mut batch = client.batch();
        batch.call_raw("add", raw("[2,2]"));
        batch.call_raw("echo", raw("[5]"));
        let results = batch.send().await.unwrap();
        assert_eq!(results[0].as_ref().unwrap().get(), "4");
        assert_eq!(results[1].as_ref().unwrap().get(), "[5]");

        // Only the authenticated notification reaches its async handler: notifications
        // run in arrival order, so the anonymous one would have come first.
        plain
            .notify::<Seen>(&("anonymous".to_owned(),))
            .await
            .unwrap();
        client
            .notify::<Seen>(&("signed".to_owned(),))
            .await
            .unwrap();
        client.call_raw("echo", None).await.unwrap();
        assert_eq!(seen.next().await.as_deref(), Some("signed"));
        assert!(seen.try_recv().is_err(), "nothing else arrived");

        // The provider runs per call: revoking the token takes effect at once.
        *token.lock().unwrap() = None;
        assert_eq!(rpc_error(client.call_raw("echo", None).await).code, 1000);
    }));
}

#[test]
fn the_client_rate_limit_fails_calls_locally() {
    smol::block_on(within(LIMIT, async {
        let (seen_tx, _seen) = mpsc::unbounded();
        let (plain, _server) = connect(router(seen_tx)).await;
        let client = plain.with_interceptors(
            Interceptors::new()
                .with(ClientRateLimit::new(
                    TokenBucket::new(1, Duration::from_secs(3600)),
                    system_clock(),
                ))
                .with(BearerToken::new(|| Some("s3cret".to_owned()))),
        );
        assert_eq!(
            client.call_raw("add", raw("[1,2]")).await.unwrap().get(),
            "3"
        );
        match client.call_raw("add", raw("[1,2]")).await {
            Err(CallError::Intercepted(e)) => assert_eq!(e.code, -32002),
            other => panic!("expected a local refusal, got {other:?}"),
        }
        let mut batch = client.batch();
        batch.call_raw("add", raw("[1,2]"));
        assert!(matches!(
            batch.send().await,
            Err(CallError::Intercepted(e)) if e.code == -32002
        ));
        // The connection is still fine for handles without the limit.
        let open = plain.with_interceptors(
            Interceptors::new().with(BearerToken::new(|| Some("s3cret".to_owned()))),
        );
        assert_eq!(open.call_raw("add", raw("[2,3]")).await.unwrap().get(), "5");
    }));
}
