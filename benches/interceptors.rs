//! What the built-in server layers cost per call: `Router::dispatch` of one small request
//! with no layer, behind `AuthLayer` (the credential parsed out of the params and the
//! params rebuilt), and behind auth + rate limit + metrics (a no-op `Metrics`), all in
//! one criterion group and one run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sansrpc::ext::interceptors::{
    attach_credential, AuthLayer, Metrics, MetricsLayer, RateLimitLayer, TokenBucket,
};
use sansrpc::router::{Reply, Router};
use sansrpc::{Id, Instant, RawValue, Request, Version};

struct NoMetrics;

impl Metrics for NoMetrics {
    fn record_request(&self, method: &str) {
        black_box(method);
    }
    fn record_response(&self, method: &str, duration: Duration, success: bool) {
        black_box((method, duration, success));
    }
    fn record_batch_size(&self, size: usize) {
        black_box(size);
    }
    fn record_error(&self, method: &str, code: i64) {
        black_box((method, code));
    }
}

fn router() -> Router {
    let mut r = Router::new();
    r.raw_method("add", |params, out| {
        let (a, b): (i64, i64) = params
            .ok_or_else(sansrpc::ErrorObject::invalid_params)?
            .deserialize()
            .map_err(|_| sansrpc::ErrorObject::invalid_params())?;
        out.extend_from_slice((a + b).to_string().as_bytes());
        Ok(())
    })
    .unwrap();
    r
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("layers");
    let plain = RawValue::from_json("[1,2]").unwrap().to_owned();
    let signed = attach_credential(Some(&plain), "s3cret-token-0123456789");
    let request = |params: &RawValue| Request {
        id: Id::number(1),
        method: "add".into(),
        params: Some(params.to_owned().into()),
        version: Version::V2,
    };
    let (bare_req, signed_req) = (request(&plain), request(&signed));

    let bare = router();
    let mut auth = router();
    auth.layer(AuthLayer::token("s3cret-token-0123456789"));
    let mut all = router();
    all.layer(MetricsLayer::new(NoMetrics).clock(|| Instant::ZERO))
        .layer(AuthLayer::token("s3cret-token-0123456789"))
        // Never empty: a bucket this large at a fixed instant outlasts the run.
        .layer(RateLimitLayer::new(
            TokenBucket::new(u32::MAX, Duration::from_nanos(1)),
            || Instant::from_duration(Duration::from_secs(1 << 40)),
        ));

    let mut reply = Reply::default();
    for (router, req) in [
        (&bare, &bare_req),
        (&auth, &signed_req),
        (&all, &signed_req),
    ] {
        router.dispatch(req, &mut reply);
        assert_eq!(reply.result_json(), Some("3"));
    }
    group.bench_function("no layer", |b| {
        b.iter(|| bare.dispatch(black_box(&bare_req), &mut reply))
    });
    group.bench_function("auth", |b| {
        b.iter(|| auth.dispatch(black_box(&signed_req), &mut reply))
    });
    group.bench_function("auth + rate limit + metrics", |b| {
        b.iter(|| all.dispatch(black_box(&signed_req), &mut reply))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
