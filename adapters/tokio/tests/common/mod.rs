//! The calculator the tests serve and call, and a time bound for every test.
#![allow(dead_code)]

#[path = "../../../futures/fixtures/calculator.rs"]
mod calc;
#[path = "../../../futures/fixtures/exercise.rs"]
mod exercise;

use std::future::Future;
use std::time::Duration;

#[allow(unused_imports)]
pub use calc::*;
#[allow(unused_imports)]
pub use exercise::exercise;

/// Runs `f`, failing the test if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, f)
        .await
        .unwrap_or_else(|_| panic!("not done within {limit:?}"))
}

pub const LIMIT: Duration = Duration::from_secs(20);
