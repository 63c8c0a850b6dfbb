//! Fuzzing your own server: a `Router` as an application builds it, fed the inputs of
//! `sansrpc_compliance` (protocol edges, and calls to its own methods with params of any
//! shape, cut into chunks) and judged by the rules of JSON-RPC 2.0. Any answer the
//! specification forbids is a crash. Run with `cargo fuzz run own_server` (or
//! `cargo fuzz run -s none own_server` on stable).
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use sansrpc::codec::Framing;
use sansrpc::method::Method;
use sansrpc::router::{Reply, Router};
use sansrpc::{Config, Connection};
use sansrpc::{ErrorObject, Instant};
use sansrpc_compliance::Input;

struct Subtract;

impl Method for Subtract {
    const NAME: &'static str = "subtract";
    type Params = (i64, i64);
    type Result = i64;
}

/// The server under test, built as the application builds it.
fn server() -> Router {
    let mut router = Router::new();
    router
        .method::<Subtract, _>(|(a, b)| a.checked_sub(b).ok_or_else(ErrorObject::invalid_params))
        .unwrap();
    router
        .raw_method("params.size", |params, out| {
            let size = params.map_or(0, |p| p.get().len());
            out.extend_from_slice(size.to_string().as_bytes());
            Ok(())
        })
        .unwrap();
    router.raw_notification("log", |_| {}).unwrap();
    router
}

fuzz_target!(|data: &[u8]| {
    let (router, framing) = (server(), Framing::ContentLength);
    // Protocol edges (`Input` is also `Arbitrary`), and calls to the router's own methods.
    let methods: Vec<&str> = router.method_names().collect();
    let input = Input::calling(&mut Unstructured::new(data), &methods);
    let mut conn = Connection::new(Config::default(), Instant::ZERO);
    let mut reply = Reply::default();
    // Feed the input as it arrives, cut anywhere; answer what can be answered.
    for chunk in input.chunks(framing) {
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            rest = &rest[conn.handle_input(rest, Instant::ZERO).unwrap()..];
            router.serve(&mut conn, &mut reply, |_| {});
        }
    }
    // Everything the server wrote back, judged by the rules of JSON-RPC 2.0.
    let mut answered = Vec::new();
    while conn.poll_transmit(&mut answered).is_some() {}
    let violations = input.judge(framing, &answered);
    assert!(violations.is_empty(), "{input:?}\n{violations:#?}");
});
