//! Interceptors over real TCP on 127.0.0.1: a server router with the auth layer, clients
//! with and without a bearer token, a client-side rate limit and client metrics.

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use calculator::*;
use common::within;
use sansrpc::ext::interceptors::{
    AuthLayer, BearerToken, ClientMetrics, ClientRateLimit, Interceptors, Metrics, MetricsLayer,
    TokenBucket,
};
use sansrpc::method::CallError;
use sansrpc::Timeout;
use sansrpc::{ErrorObject, RawValue};
use sansrpc_blocking::{connect_tcp, serve_tcp, Client, Options, Server};
use sansrpc_runtime::system_clock;

const LIMIT: Duration = Duration::from_secs(30);
const T: Timeout = Timeout::After(Duration::from_secs(10));

/// Every record, as text, in order.
#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl Recorded {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Metrics for Recorded {
    fn record_request(&self, method: &str) {
        self.0.lock().unwrap().push(format!("request {method}"));
    }
    fn record_response(&self, method: &str, _: Duration, success: bool) {
        self.0
            .lock()
            .unwrap()
            .push(format!("response {method} {success}"));
    }
    fn record_batch_size(&self, size: usize) {
        self.0.lock().unwrap().push(format!("batch {size}"));
    }
    fn record_error(&self, method: &str, code: i64) {
        self.0
            .lock()
            .unwrap()
            .push(format!("error {method} {code}"));
    }
}

/// The calculator behind a metrics layer (outermost) and the auth layer.
fn server(metrics: Arc<Recorded>) -> (Server, Client) {
    let mut router = calculator::router();
    let names: Vec<String> = router.method_names().map(str::to_owned).collect();
    router.layer(MetricsLayer::new(metrics).known_methods(names.iter().map(String::as_str)));
    router.layer(AuthLayer::token("s3cret"));
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let client = connect_tcp(server.local_addr(), Options::default()).unwrap();
    (server, client)
}

fn rpc_error<T: std::fmt::Debug>(result: Result<T, CallError>) -> ErrorObject<'static> {
    match result {
        Err(CallError::Rpc(e)) => e,
        other => panic!("expected an error object, got {other:?}"),
    }
}

#[test]
fn without_a_token_existing_and_missing_methods_get_the_same_error() {
    within(LIMIT, || {
        let (_server, client) = server(Arc::default());
        let existing = rpc_error(client.call_with::<Add>(&Operands { a: 1, b: 2 }, T));
        let missing = rpc_error(client.call_raw_with(
            "multiply",
            Some(RawValue::from_json("[2,3]").unwrap()),
            T,
        ));
        let discover = rpc_error(client.call_raw_with("rpc.discover", None, T));
        assert_eq!(existing.code, 1000);
        assert_eq!(existing, missing);
        assert_eq!(existing, discover);
        // A wrong token is no better.
        let wrong = client.with_interceptors(
            Interceptors::new().with(BearerToken::new(|| Some("guess".to_owned()))),
        );
        assert_eq!(
            rpc_error(wrong.call_with::<Add>(&Operands { a: 1, b: 2 }, T)),
            existing
        );
        client.close();
    });
}

#[test]
fn a_token_from_the_provider_authenticates_every_kind_of_call() {
    within(LIMIT, || {
        let metrics = Arc::new(Recorded::default());
        let (_server, plain) = server(metrics.clone());
        let token = Arc::new(Mutex::new(Some("s3cret".to_owned())));
        let provider = {
            let token = Arc::clone(&token);
            move || token.lock().unwrap().clone()
        };
        let client = plain.with_interceptors(Interceptors::new().with(BearerToken::new(provider)));
        // By name, by position, no params.
        assert_eq!(
            client
                .call_with::<Add>(&Operands { a: 2, b: 3 }, T)
                .unwrap(),
            5
        );
        assert_eq!(client.call_with::<AddPositional>(&(2, 3), T).unwrap(), 5);
        assert_eq!(client.call_with::<Divide>(&(1.0, 4.0), T).unwrap(), 0.25);
        // Notifications carry it too: only an authenticated one is recorded.
        plain.notify::<Log>(&("anonymous".to_owned(),)).unwrap();
        client.notify::<Log>(&("signed".to_owned(),)).unwrap();
        assert_eq!(client.call_with::<Logged>(&(), T).unwrap(), ["signed"]);
        // Batches: every entry carries it.
        let mut batch = client.batch();
        batch.call_raw(
            "add",
            Some(RawValue::from_json(r#"{"a":1,"b":1}"#).unwrap()),
        );
        batch.call_raw("subtract", Some(RawValue::from_json("[5,2]").unwrap()));
        let answers = batch.send_with(T).unwrap();
        assert_eq!(answers[0].as_ref().unwrap().get(), "2");
        assert_eq!(answers[1].as_ref().unwrap().get(), "3");
        // Authenticated, a missing method is reported as such.
        let missing = rpc_error(client.call_raw_with("multiply", None, T));
        assert_eq!(missing.code, -32601);
        // The provider runs per call: a revoked token takes effect at once.
        *token.lock().unwrap() = None;
        assert_eq!(
            rpc_error(client.call_with::<Add>(&Operands { a: 2, b: 3 }, T)).code,
            1000
        );
        // The server's metrics saw the batch and labelled the missing method as unknown.
        let seen = metrics.take();
        assert!(seen.contains(&"batch 2".to_owned()), "{seen:?}");
        assert!(
            seen.contains(&"error (unknown) -32601".to_owned()),
            "{seen:?}"
        );
        assert!(seen.iter().all(|s| !s.contains("multiply")), "{seen:?}");
        client.close();
    });
}

#[test]
fn the_client_rate_limit_refuses_without_sending_and_client_metrics_see_outcomes() {
    within(LIMIT, || {
        let server_metrics = Arc::new(Recorded::default());
        let client_metrics = Arc::new(Recorded::default());
        let (_server, plain) = server(server_metrics.clone());
        let client = plain.with_interceptors(
            Interceptors::new()
                .with(ClientMetrics::new(client_metrics.clone()))
                .with(ClientRateLimit::new(
                    TokenBucket::new(2, Duration::from_secs(3600)),
                    system_clock(),
                ))
                .with(BearerToken::new(|| Some("s3cret".to_owned()))),
        );
        assert_eq!(
            client
                .call_with::<Add>(&Operands { a: 2, b: 3 }, T)
                .unwrap(),
            5
        );
        assert_eq!(
            rpc_error(client.call_with::<Divide>(&(1.0, 0.0), T)).code,
            DIVISION_BY_ZERO
        );
        match client.call_with::<Add>(&Operands { a: 2, b: 3 }, T) {
            Err(CallError::Intercepted(e)) => {
                assert_eq!(e.code, -32002);
                let data = e.data.as_ref().unwrap().get();
                assert!(data.starts_with(r#"{"retryAfterMs":"#), "{data}");
            }
            other => panic!("expected a local refusal, got {other:?}"),
        }
        assert_eq!(
            client_metrics.take(),
            [
                "request add",
                "response add true",
                "request divide",
                "response divide false",
                "error divide 1",
                "request add",
                "response add false",
                "error add -32002",
            ]
        );
        // Only two calls reached the server.
        let seen = server_metrics.take();
        let requests = seen.iter().filter(|s| s.starts_with("request")).count();
        assert_eq!(requests, 2, "{seen:?}");
        client.close();
    });
}
