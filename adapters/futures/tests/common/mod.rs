//! The calculator the tests serve and call, and a time bound for every test.
#![allow(dead_code)]

#[path = "../../fixtures/calculator.rs"]
mod calc;
#[path = "../../fixtures/exercise.rs"]
mod exercise;

use std::future::Future;
use std::time::Duration;

use futures::future::Either;

#[allow(unused_imports)]
pub use calc::*;
#[allow(unused_imports)]
pub use exercise::exercise;

/// Runs `f`, failing the test if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, f: impl Future<Output = T>) -> T {
    let f = std::pin::pin!(f);
    let timer = std::pin::pin!(async_io::Timer::after(limit));
    match futures::future::select(f, timer).await {
        Either::Left((value, _)) => value,
        Either::Right(_) => panic!("not done within {limit:?}"),
    }
}

pub const LIMIT: Duration = Duration::from_secs(20);
