//! The built-in interceptors in one process over TCP on 127.0.0.1: a server whose router
//! checks a bearer token, limits the rate across connections and counts calls; a client
//! whose token comes from a provider.
//!
//! ```sh
//! cargo run -p sansrpc-blocking --example interceptors
//! ```
mod calculator;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use calculator::{Add, Operands};
use sansrpc::ext::interceptors::{
    AuthLayer, BearerToken, Interceptors, Metrics, MetricsLayer, RateLimitLayer, TokenBucket,
};
use sansrpc::Timeout;
use sansrpc_blocking::{connect_tcp, serve_tcp, Options};
use sansrpc_runtime::system_clock;

/// Counts requests and errors; a real service would use `FacadeMetrics` (feature `metrics`).
#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    errors: AtomicU64,
}

impl Metrics for Counts {
    fn record_request(&self, _: &str) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
    fn record_response(&self, _: &str, _: Duration, _: bool) {}
    fn record_batch_size(&self, _: usize) {}
    fn record_error(&self, _: &str, _: i64) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let counts = Arc::new(Counts::default());
    let mut router = calculator::router();
    let known: Vec<String> = router.method_names().map(str::to_owned).collect();
    router
        .layer(MetricsLayer::new(counts.clone()).known_methods(known.iter().map(String::as_str)))
        .layer(AuthLayer::token("s3cret"))
        .layer(RateLimitLayer::new(
            TokenBucket::per_second(100),
            system_clock(),
        ));
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default())?;

    let timeout = Timeout::After(Duration::from_secs(5));
    let plain = connect_tcp(server.local_addr(), Options::default())?;
    match plain.call_with::<Add>(&Operands { a: 2, b: 3 }, timeout) {
        Ok(sum) => println!("without a token: {sum}?"),
        Err(e) => println!("without a token: {e}"),
    }
    let client = plain.with_interceptors(
        Interceptors::new().with(BearerToken::new(|| Some("s3cret".to_owned()))),
    );
    println!(
        "with a token: 2 + 3 = {}",
        client.call_with::<Add>(&Operands { a: 2, b: 3 }, timeout)?
    );
    client.close();
    server.shutdown();
    println!(
        "server metrics: {} requests, {} errors",
        counts.requests.load(Ordering::Relaxed),
        counts.errors.load(Ordering::Relaxed)
    );
    Ok(())
}
