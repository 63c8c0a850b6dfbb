//! JSON-RPC 1.0 compatibility: off by default, lenient when switched on.

mod common;

use common::serve_with;
use sansrpc::{
    Classified, Classifier, Id, Incoming, Limits, Notification, Request, Response, Version,
};
use serde_json::json;

fn v1() -> Limits {
    let mut l = Limits::default();
    l.accept_v1 = true;
    l
}

fn classify(limits: Limits, frame: &str) -> Incoming<'static> {
    match Classifier::new(limits).classify(frame.as_bytes()) {
        Classified::Single(e) => e.into_owned(),
        other => panic!("{frame}: {other:?}"),
    }
}

#[test]
fn off_by_default() {
    let v = serve_with(
        Limits::default(),
        br#"{"method":"sum","params":[5,3],"id":"req-10-add"}"#,
    )
    .unwrap();
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], "req-10-add");
}

#[test]
fn requests_without_jsonrpc_are_answered_in_1_0_form() {
    let v = serve_with(
        v1(),
        br#"{"method":"sum","params":[5,3],"id":"req-10-add"}"#,
    )
    .unwrap();
    assert_eq!(v, json!({"result": 8, "error": null, "id": "req-10-add"}));
    let v = serve_with(v1(), br#"{"method":"nope","params":[],"id":2}"#).unwrap();
    assert_eq!(v["result"], json!(null));
    assert_eq!(v["error"]["code"], -32601);
    assert!(v.get("jsonrpc").is_none());
    // 2.0 messages keep working in the same mode.
    let v = serve_with(
        v1(),
        br#"{"jsonrpc":"2.0","method":"sum","params":[5,3],"id":1}"#,
    )
    .unwrap();
    assert_eq!(v, json!({"jsonrpc": "2.0", "result": 8, "id": 1}));
}

#[test]
fn null_id_is_a_notification_in_1_0_only() {
    assert!(matches!(
        classify(v1(), r#"{"method":"log","params":["x"],"id":null}"#),
        Incoming::Notification(_)
    ));
    assert_eq!(
        serve_with(v1(), br#"{"method":"log","params":["x"],"id":null}"#),
        None
    );
    // In 2.0 a null id is still a request.
    assert!(matches!(
        classify(v1(), r#"{"jsonrpc":"2.0","method":"log","id":null}"#),
        Incoming::Request(_)
    ));
}

#[test]
fn responses_with_both_members_one_null() {
    match classify(v1(), r#"{"result":8,"error":null,"id":"a"}"#) {
        Incoming::Response(r) => assert_eq!(r.result.unwrap().get(), "8"),
        other => panic!("{other:?}"),
    }
    match classify(
        v1(),
        r#"{"result":null,"error":{"code":1,"message":"Method not found"},"id":"b"}"#,
    ) {
        Incoming::Response(r) => assert_eq!(r.result.unwrap_err().message, "Method not found"),
        other => panic!("{other:?}"),
    }
    match classify(v1(), r#"{"result":null,"error":null,"id":null}"#) {
        Incoming::Response(r) => assert!(r.result.unwrap().is_null()),
        other => panic!("{other:?}"),
    }
    // Both non-null is still an error, and without 1.0 mode so is the 1.0 shape.
    assert!(matches!(
        classify(
            v1(),
            r#"{"result":1,"error":{"code":1,"message":"m"},"id":1}"#
        ),
        Incoming::BadResponse { .. }
    ));
    assert!(matches!(
        classify(Limits::default(), r#"{"result":8,"error":null,"id":"a"}"#),
        Incoming::BadResponse { .. }
    ));
}

#[test]
fn writers_produce_1_0_shapes() {
    let mut out = Vec::new();
    Request {
        id: Id::number(1),
        method: "add".into(),
        params: None,
        version: Version::V1,
    }
    .write_json(&mut out);
    assert_eq!(out, br#"{"method":"add","params":[],"id":1}"#);
    out.clear();
    Notification {
        method: "log".into(),
        params: None,
        version: Version::V1,
    }
    .write_json(&mut out);
    assert_eq!(out, br#"{"method":"log","params":[],"id":null}"#);
    out.clear();
    Response {
        id: Id::string("x"),
        result: Ok(sansrpc::RawValue::from_json("8").unwrap().into()),
        version: Version::V1,
    }
    .write_json(&mut out);
    assert_eq!(out, br#"{"result":8,"error":null,"id":"x"}"#);
}
