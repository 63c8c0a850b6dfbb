//! A calculator served over stdin/stdout: the child process of the child-process tests and
//! example. `--newline` switches from Content-Length to newline framing.

use sansrpc::codec::Framing;
use sansrpc::method::{Method, NotificationMethod};
use sansrpc::ErrorObject;
use sansrpc_futures::{transport, AsyncIoTimer, AsyncRouter, Builder};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Serialize, Deserialize)]
struct Pair {
    a: f64,
    b: f64,
}

macro_rules! binary {
    ($ty:ident, $name:literal) => {
        enum $ty {}
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

enum Tick {}
impl NotificationMethod for Tick {
    const NAME: &'static str = "tick";
    type Params = ();
}

enum Ticks {}
impl Method for Ticks {
    const NAME: &'static str = "ticks";
    type Params = ();
    type Result = u64;
}

fn main() -> std::io::Result<()> {
    let newline = std::env::args().any(|a| a == "--newline");
    let ticks = Arc::new(AtomicU64::new(0));
    let mut router = AsyncRouter::new();
    let sync = router.sync();
    sync.method::<Add, _>(|p| Ok(p.a + p.b)).unwrap();
    sync.method::<Subtract, _>(|p| Ok(p.a - p.b)).unwrap();
    sync.method::<Multiply, _>(|p| Ok(p.a * p.b)).unwrap();
    let seen = ticks.clone();
    sync.notification::<Tick, _>(move |()| {
        seen.fetch_add(1, Ordering::SeqCst);
    })
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
    let framing = if newline {
        Framing::Newline
    } else {
        Framing::ContentLength
    };
    let builder = Builder::new().framing(framing).router(router);
    let (_client, driver) = builder.connect(transport::stdio(), AsyncIoTimer);
    async_io::block_on(driver)
}
