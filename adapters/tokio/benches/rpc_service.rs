//! JSON-RPC over HTTP through the tower service, in process: `RpcService` (what an axum or
//! hyper app mounts) given an `http::Request` as hyper hands one over (its head parsed,
//! its body a `Full<Bytes>`), the service's future polled by hand on this thread with a
//! tokio runtime entered (no executor, no socket, no HTTP library), the answer's body
//! taken. The methods are the load generator's (`add`, typed; `echo`, raw), the request an
//! `add`. `scripts/instructions` counts `rpc_http_call_once` (one request each): the head
//! judged by the core's rules, the body read, a pooled connection machine taken, handed the
//! body and driven to its answer, put back, the response made.

use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body::Body as _;
use http_body_util::Full;
use sansrpc::method::Method;
use sansrpc_tokio::service::RpcService;
use sansrpc_tokio::{AsyncRouter, Builder};
use tower_service::Service;

enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = (i64, i64);
    type Result = i64;
}

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"add","params":[2,7]}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","result":9,"id":2}"#;

/// The service of the load generator's `sansrpc-axum-server`.
fn service() -> RpcService {
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.raw_method("echo", |params, out| {
        out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
        Ok(())
    })
    .expect("echo registers");
    sync.method::<Add, _>(|(a, b)| Ok(a.wrapping_add(b)))
        .expect("add registers");
    RpcService::new(Builder::new().router(router))
}

/// The POST hyper would hand the service.
fn request() -> http::Request<Full<Bytes>> {
    http::Request::post("/")
        .header("host", "127.0.0.1:8545")
        .header("content-type", "application/json")
        .header("content-length", REQUEST.len())
        .body(Full::new(Bytes::from_static(REQUEST.as_bytes())))
        .expect("a request")
}

/// One request through the service, in a function of its own that a profiler counts
/// calls of: the service's future polled once (a handler that does not wait answers
/// within it), the response's body taken; its status plus the body's length.
#[inline(never)]
fn rpc_http_call_once(
    service: &mut RpcService,
    request: http::Request<Full<Bytes>>,
    cx: &mut Context<'_>,
) -> usize {
    let mut future = service.call(request);
    let Poll::Ready(Ok(response)) = future.as_mut().poll(cx) else {
        panic!("answered within the first poll");
    };
    let (parts, mut body) = response.into_parts();
    let mut len = 0;
    while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(cx) {
        len += frame.data_ref().map_or(0, Bytes::len);
    }
    black_box(usize::from(parts.status.as_u16()) + len)
}

fn rpc_service(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _entered = runtime.enter();
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut service = service();
    // The answer, checked once: the status, the JSON type, the body.
    let mut future = service.call(request());
    let Poll::Ready(Ok(response)) = future.as_mut().poll(&mut cx) else {
        panic!("answered within the first poll");
    };
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let (_, mut body) = response.into_parts();
    let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
        panic!("a body");
    };
    assert_eq!(frame.data_ref().map(|d| &d[..]), Some(ANSWER.as_bytes()));
    let once = 200 + ANSWER.len();
    let mut group = c.benchmark_group("rpc_service");
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("RpcService", |b| {
        b.iter(|| {
            let request = request();
            assert_eq!(rpc_http_call_once(&mut service, request, &mut cx), once)
        })
    });
    group.finish();
}

criterion_group!(benches, rpc_service);
criterion_main!(benches);
