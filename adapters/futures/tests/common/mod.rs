//! The calculator the tests serve and call, and a time bound for every test.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{join_all, Either};
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::{ErrorObject, RawValue};
use sansrpc_futures::{AsyncRouter, CallError, Client};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Copy)]
pub struct Pair {
    pub a: f64,
    pub b: f64,
}

macro_rules! binary {
    ($ty:ident, $name:literal) => {
        pub enum $ty {}
        impl Method for $ty {
            const NAME: &'static str = $name;
            type Params = Pair;
            type Result = f64;
        }
    };
}
binary!(Add, "add");
binary!(Subtract, "subtract");
binary!(Multiply, "multiply");
binary!(Divide, "divide");

/// `add` by position: the same method, params as a tuple.
pub enum AddPositional {}
impl Method for AddPositional {
    const NAME: &'static str = "add";
    type Params = (f64, f64);
    type Result = f64;
}

pub enum Tick {}
impl NotificationMethod for Tick {
    const NAME: &'static str = "tick";
    type Params = ();
}

pub enum Ticks {}
impl Method for Ticks {
    const NAME: &'static str = "ticks";
    type Params = ();
    type Result = u64;
}

/// The calculator: sync handlers on the core router, async ones in front.
pub fn calculator() -> AsyncRouter {
    let ticks = Arc::new(AtomicU64::new(0));
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.method::<Add, _>(|p| Ok(p.a + p.b)).unwrap();
    sync.method::<Subtract, _>(|p| Ok(p.a - p.b)).unwrap();
    let seen = ticks.clone();
    sync.notification::<Tick, _>(move |()| {
        seen.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    router
        .method::<Multiply, _, _>(|p| async move { Ok(p.a * p.b) })
        .unwrap();
    router
        .method::<Divide, _, _>(|p| async move {
            if p.b == 0.0 {
                Err(ErrorObject::new(1001, "division by zero"))
            } else {
                Ok(p.a / p.b)
            }
        })
        .unwrap();
    router
        .method::<Ticks, _, _>(move |()| {
            let n = ticks.load(Ordering::SeqCst);
            async move { Ok(n) }
        })
        .unwrap();
    router
}

/// Everything a calculator client checks, over whatever transport and runtime.
pub async fn exercise(client: &Client) {
    let p = Pair { a: 6.0, b: 3.0 };
    // Named params (a struct is sent as an object) and positional ones (a tuple).
    assert_eq!(client.call::<Add>(&p).await.unwrap(), 9.0);
    assert_eq!(
        client.call::<AddPositional>(&(6.0, 3.0)).await.unwrap(),
        9.0
    );
    assert_eq!(client.call::<Subtract>(&p).await.unwrap(), 3.0);
    assert_eq!(client.call::<Multiply>(&p).await.unwrap(), 18.0);
    assert_eq!(client.call::<Divide>(&p).await.unwrap(), 2.0);
    let positional = RawValue::from_json("[6, 3]").unwrap();
    let raw = client.call_raw("divide", Some(positional)).await.unwrap();
    assert_eq!(raw.get(), "2.0");

    // Concurrent calls, answered in whatever order, each to its caller.
    let calls = (0..32).map(|i| {
        let i = f64::from(i);
        client.call::<Multiply>(&Pair { a: i, b: 2.0 })
    });
    let results = join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(r.unwrap(), i as f64 * 2.0);
    }

    // A notification, then a call that sees it (both in order on one connection).
    client.notify::<Tick>(&()).await.unwrap();
    client.notify::<Tick>(&()).await.unwrap();
    assert_eq!(client.call::<Ticks>(&()).await.unwrap(), 2);

    // Errors: unknown method, application error.
    let unknown = client.call_raw("nope", None).await.unwrap_err();
    assert_eq!(unknown.code(), Some(-32601));
    let zero = client.call::<Divide>(&Pair { a: 1.0, b: 0.0 }).await;
    match zero {
        Err(CallError::Rpc(e)) => {
            assert_eq!(e.code, 1001);
            assert_eq!(e.message, "division by zero");
        }
        other => panic!("expected an application error, got {other:?}"),
    }
    let bad = client
        .call_raw("add", Some(RawValue::from_json("[1]").unwrap()))
        .await;
    assert_eq!(bad.unwrap_err().code(), Some(-32602));

    // A batch: one array, one result per call, in the order added.
    let mut batch = client.batch();
    let add = batch.call::<Add>(&p);
    let div = batch.call::<Divide>(&Pair { a: 1.0, b: 0.0 });
    batch.notify::<Tick>(&());
    let missing = batch.call_raw("nope", None);
    let mut results = batch.send().await.unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(add.take(&mut results).unwrap(), 9.0);
    assert_eq!(div.take(&mut results).unwrap_err().code(), Some(1001));
    assert_eq!(results[missing].as_ref().unwrap_err().code(), Some(-32601));
}

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
