//! The blocking adapter's handler context, over a real TCP socket: a handler calls its
//! peer, reports progress on the request's token, and sees its request id; the peer is a
//! plain socket speaking JSON-RPC by hand.

#[path = "../../../tests/behaviour/suite.rs"]
mod suite;

use std::sync::Arc;
use std::time::Duration;

use sansrpc::router::Router;
use sansrpc::ErrorObject;
use sansrpc::Timeout;
use sansrpc_blocking::{serve_tcp, Options, RequestContext};
use serde_json::json;
use suite::Peer;

#[test]
fn a_handler_calls_its_peer_and_reports_progress() {
    let mut router = Router::new();
    router
        .raw_method("greet", |params, out| {
            let cx = RequestContext::current().expect("inside a handler");
            let name: serde_json::Value = serde_json::from_str(params.unwrap().get()).unwrap();
            let salutation = cx
                .peer()
                .call_raw_with(
                    "client/salutation",
                    None,
                    Timeout::After(Duration::from_secs(5)),
                )
                .map_err(|_| ErrorObject::fixed(-1, "the client did not answer"))?;
            let half = sansrpc::RawValue::from_json(r#"{"pct":50}"#).unwrap();
            assert!(
                cx.report_progress(half).unwrap(),
                "the request carries a token"
            );
            assert!(!cx.is_cancelled());
            let text = format!(
                "{}, {} (request {})",
                serde_json::from_str::<String>(salutation.get()).unwrap(),
                name["name"].as_str().unwrap(),
                cx.id()
            );
            out.extend_from_slice(serde_json::to_string(&text).unwrap().as_bytes());
            Ok(())
        })
        .unwrap();
    assert!(
        RequestContext::current().is_none(),
        "no context outside a handler"
    );
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let mut peer = Peer::connect(server.local_addr());
    peer.send(
        r#"{"jsonrpc":"2.0","method":"greet","params":{"name":"Ada","workDoneToken":"w1"},"id":7}"#,
    );
    // The handler asks us first.
    let asked = peer.expect();
    assert_eq!(asked["method"], "client/salutation");
    peer.send_json(&json!({"jsonrpc": "2.0", "result": "Hello", "id": asked["id"]}));
    let progress = peer.expect();
    assert_eq!(
        progress,
        json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "w1", "value": {"pct": 50}}})
    );
    let answer = peer.expect();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"], "Hello, Ada (request 7)");
    server.shutdown();
}

#[test]
fn a_stream_handler_keeps_its_context_and_sees_its_stream_end() {
    let kept = Arc::new(std::sync::Mutex::new(None::<RequestContext>));
    let slot = kept.clone();
    let mut router = Router::new();
    router
        .stream_method("count", move |(to,): (u64,)| {
            *slot.lock().unwrap() = RequestContext::current();
            Ok((0..to).map(Ok::<u64, ErrorObject<'static>>))
        })
        .unwrap();
    let server = serve_tcp("127.0.0.1:0", Arc::new(router), Options::default()).unwrap();
    let mut peer = Peer::connect(server.local_addr());
    peer.send(r#"{"jsonrpc":"2.0","method":"count","params":[2],"id":9}"#);
    let stream = peer.expect()["result"]["stream"].as_u64().unwrap();
    let cx = kept
        .lock()
        .unwrap()
        .clone()
        .expect("a context while making the stream");
    assert_eq!(cx.id().to_string(), "9");
    assert!(!cx.is_cancelled(), "the stream is open");
    // The peer cancels the stream: the handler's context says so.
    peer.send_json(
        &json!({"jsonrpc":"2.0","method":"rpc.stream.cancel","params":{"stream": stream}}),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cx.is_cancelled() && std::time::Instant::now() < deadline {
        // A round trip on the connection: the cancel before it was handled.
        peer.send(r#"{"jsonrpc":"2.0","method":"none","id":10}"#);
        peer.expect();
    }
    assert!(cx.is_cancelled());
    server.shutdown();
}
