//! The JSON-RPC 2.0 specification's Examples section, each as a test, and the
//! classification rules of sections 4 to 6.

mod common;

use common::{code, serve, serve_with, sorted};
use sansrpc::{Classified, Classifier, Incoming, Limits, ProtocolError};
use serde_json::json;

#[test]
fn positional_parameters() {
    assert_eq!(
        serve(r#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#),
        Some(json!({"jsonrpc": "2.0", "result": 19, "id": 1}))
    );
    assert_eq!(
        serve(r#"{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}"#),
        Some(json!({"jsonrpc": "2.0", "result": -19, "id": 2}))
    );
}

#[test]
fn named_parameters() {
    assert_eq!(
        serve(
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#
        ),
        Some(json!({"jsonrpc": "2.0", "result": 19, "id": 3}))
    );
    assert_eq!(
        serve(
            r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#
        ),
        Some(json!({"jsonrpc": "2.0", "result": 19, "id": 4}))
    );
}

#[test]
fn notifications_get_nothing() {
    assert_eq!(
        serve(r#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#),
        None
    );
    assert_eq!(serve(r#"{"jsonrpc": "2.0", "method": "foobar"}"#), None);
}

#[test]
fn non_existent_method() {
    assert_eq!(
        serve(r#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#),
        Some(
            json!({"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"})
        )
    );
}

#[test]
fn invalid_json() {
    assert_eq!(
        serve(r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#),
        Some(
            json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null})
        )
    );
}

#[test]
fn invalid_request_object() {
    let v = serve(r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#).unwrap();
    assert_eq!(code(&v), -32600);
    assert_eq!(v["id"], json!(null));
    assert_eq!(v["jsonrpc"], "2.0");
}

#[test]
fn batch_invalid_json() {
    let v = serve(
        r#"[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]"#,
    )
    .unwrap();
    assert!(v.is_object(), "one response, not an array: {v}");
    assert_eq!(code(&v), -32700);
    assert_eq!(v["id"], json!(null));
}

#[test]
fn empty_array() {
    let v = serve("[]").unwrap();
    assert!(v.is_object());
    assert_eq!(code(&v), -32600);
    assert_eq!(v["id"], json!(null));
}

#[test]
fn invalid_batch_but_not_empty() {
    let v = serve("[1]").unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(code(&a[0]), -32600);
    assert_eq!(a[0]["id"], json!(null));
}

#[test]
fn invalid_batch() {
    let v = serve("[1,2,3]").unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 3);
    for e in a {
        assert_eq!(code(e), -32600);
        assert_eq!(e["id"], json!(null));
    }
}

#[test]
fn mixed_batch() {
    let v = serve(
        r#"[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]"#,
    )
    .unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 5);
    assert_eq!(a[0], json!({"jsonrpc": "2.0", "result": 7, "id": "1"}));
    assert_eq!(a[1], json!({"jsonrpc": "2.0", "result": 19, "id": "2"}));
    assert_eq!(code(&a[2]), -32600);
    assert_eq!(a[2]["id"], json!(null));
    assert_eq!(
        a[3],
        json!({"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"})
    );
    assert_eq!(
        a[4],
        json!({"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"})
    );
    // Any order is allowed; the same set of answers either way.
    assert_eq!(sorted(v.clone()).as_array().unwrap().len(), 5);
}

#[test]
fn all_notifications_batch() {
    assert_eq!(
        serve(
            r#"[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]"#
        ),
        None
    );
}

// Section 4 and 5 rules beyond the examples.

fn invalid(frame: &str) -> serde_json::Value {
    let v = serve(frame).unwrap_or_else(|| panic!("no answer to {frame}"));
    assert_eq!(code(&v), -32600, "{frame} -> {v}");
    v
}

#[test]
fn neither_object_nor_array_is_invalid_request_with_null_id() {
    for frame in ["1", "\"x\"", "null", "true", " 3.5 "] {
        assert_eq!(invalid(frame)["id"], json!(null), "{frame}");
    }
}

#[test]
fn version_must_be_exactly_2_0() {
    for frame in [
        r#"{"method":"a","id":1}"#,
        r#"{"jsonrpc":"2","method":"a","id":1}"#,
        r#"{"jsonrpc":"1.0","method":"a","id":1}"#,
        r#"{"jsonrpc":2.0,"method":"a","id":1}"#,
        r#"{"jsonrpc":"2.0 ","method":"a","id":1}"#,
        r#"{"jsonrpc":null,"method":"a","id":1}"#,
    ] {
        assert_eq!(
            invalid(frame)["id"],
            json!(1),
            "the valid id is echoed: {frame}"
        );
    }
    // An escaped "2.0" is the same string.
    assert_eq!(
        serve(r#"{"jsonrpc":"2\u002e0","method":"get_data","id":1}"#).unwrap()["result"],
        json!(["hello", 5])
    );
}

#[test]
fn method_must_be_a_string() {
    for frame in [
        r#"{"jsonrpc":"2.0","method":1,"id":"x"}"#,
        r#"{"jsonrpc":"2.0","method":null,"id":"x"}"#,
        r#"{"jsonrpc":"2.0","method":["a"],"id":"x"}"#,
        r#"{"jsonrpc":"2.0","id":"x"}"#,
    ] {
        assert_eq!(invalid(frame)["id"], json!("x"), "{frame}");
    }
    // Without an id, an invalid notification is still answered, with id null.
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","method":7}"#)["id"],
        json!(null)
    );
}

#[test]
fn params_must_be_structured() {
    for p in ["1", "\"a\"", "null", "true"] {
        let frame = format!(r#"{{"jsonrpc":"2.0","method":"sum","params":{p},"id":9}}"#);
        assert_eq!(invalid(&frame)["id"], json!(9));
    }
    assert_eq!(
        serve(r#"{"jsonrpc":"2.0","method":"sum","params":[],"id":9}"#).unwrap()["result"],
        json!(0)
    );
}

#[test]
fn ids_of_a_wrong_type_answer_with_null() {
    for id in ["true", "false", "{}", "[1]", r#"{"a":1}"#] {
        let frame = format!(r#"{{"jsonrpc":"2.0","method":"sum","params":[1],"id":{id}}}"#);
        assert_eq!(invalid(&frame)["id"], json!(null), "{frame}");
    }
}

#[test]
fn ids_are_echoed_byte_for_byte() {
    for id in [
        "1",
        "-7",
        "1.0",
        "1.5",
        "1e3",
        "-0",
        "0",
        "123456789012345678901234567890",
        "1E+2",
        "null",
        r#""""#,
        r#""abc""#,
        r#""a\"b""#,
        r#""\u00e9t\u00e9""#,
        r#""été 😀""#,
        r#""\ud83d\ude00""#,
    ] {
        let frame = format!(r#"{{"jsonrpc":"2.0","method":"get_data","id":{id}}}"#);
        let mut classifier = Classifier::default();
        let mut out = Vec::new();
        match classifier.classify(frame.as_bytes()) {
            Classified::Single(Incoming::Request(req)) => common::answer(&req, &mut out),
            other => panic!("{frame}: {other:?}"),
        }
        let expected = format!(r#"{{"jsonrpc":"2.0","result":["hello",5],"id":{id}}}"#);
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}

#[test]
fn absent_id_and_null_id_differ() {
    let mut c = Classifier::default();
    assert!(matches!(
        c.classify(br#"{"jsonrpc":"2.0","method":"m"}"#),
        Classified::Single(Incoming::Notification(_))
    ));
    match c.classify(br#"{"jsonrpc":"2.0","method":"m","id":null}"#) {
        Classified::Single(Incoming::Request(r)) => assert!(r.id.is_null()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_members_are_ignored() {
    assert_eq!(
        serve(
            r#"{"jsonrpc":"2.0","x-trace":{"deep":[1,2]},"method":"sum","params":[1,2],"id":1,"extra":null}"#
        ),
        Some(json!({"jsonrpc":"2.0","result":3,"id":1}))
    );
}

#[test]
fn duplicate_protocol_members_are_refused() {
    // Which of two methods (or ids) counts is exactly what a smuggling attack plays on;
    // the message is refused instead, and its id is not trusted when the id is the duplicate.
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","method":"sum","method":"subtract","params":[1],"id":1}"#)
            ["id"],
        json!(1)
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"sum","id":1}"#)["id"],
        json!(1)
    );
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","method":"sum","params":[1],"params":[2],"id":1}"#)["id"],
        json!(1)
    );
    assert_eq!(
        code(&invalid(
            r#"{"jsonrpc":"2.0","method":"sum","id":1,"id":2}"#
        )),
        -32600
    );
    // Escaped member names are the same names.
    assert_eq!(
        invalid(r#"{"jsonrpc":"2.0","method":"sum","\u006dethod":"x","id":1}"#)["id"],
        json!(1)
    );
    // Duplicate unknown members are harmless.
    assert_eq!(
        serve(r#"{"jsonrpc":"2.0","x":1,"x":2,"method":"sum","params":[2],"id":1}"#).unwrap()
            ["result"],
        json!(2)
    );
}

#[test]
fn reserved_names_are_marked() {
    let mut c = Classifier::default();
    match c.classify(br#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#) {
        Classified::Single(Incoming::Request(r)) => assert!(r.is_reserved()),
        other => panic!("{other:?}"),
    }
    match c.classify(br#"{"jsonrpc":"2.0","method":"rpcx","id":1}"#) {
        Classified::Single(Incoming::Request(r)) => assert!(!r.is_reserved()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn escaped_method_names_are_decoded() {
    let mut c = Classifier::default();
    match c.classify(br#"{"jsonrpc":"2.0","method":"a\/b\u00e9","id":1}"#) {
        Classified::Single(Incoming::Request(r)) => assert_eq!(r.method, "a/bé"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn trailing_garbage_is_a_parse_error() {
    assert_eq!(
        code(&serve(r#"{"jsonrpc":"2.0","method":"a","id":1} x"#).unwrap()),
        -32700
    );
    assert_eq!(
        code(&serve(r#"[{"jsonrpc":"2.0","method":"a","id":1}] ]"#).unwrap()),
        -32700
    );
    assert_eq!(code(&serve("").unwrap()), -32700);
    assert_eq!(code(&serve("   ").unwrap()), -32700);
    assert_eq!(code(&serve("\u{feff}{}").unwrap()), -32700);
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let v = serve_with(
        Limits::default(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\",\"id\":1}",
    )
    .unwrap();
    assert_eq!(code(&v), -32700);
}

// Client side: malformed responses are typed protocol errors, never answered.

fn response(frame: &str) -> Incoming<'static> {
    let mut c = Classifier::default();
    match c.classify(frame.as_bytes()) {
        Classified::Single(entry) => entry.into_owned(),
        other => panic!("{frame}: {other:?}"),
    }
}

#[test]
fn well_formed_responses() {
    match response(r#"{"jsonrpc":"2.0","result":{"a":[1]},"id":7}"#) {
        Incoming::Response(r) => {
            assert_eq!(r.id.as_u64(), Some(7));
            assert_eq!(r.result.unwrap().get(), r#"{"a":[1]}"#);
        }
        other => panic!("{other:?}"),
    }
    match response(
        r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"boom","data":{"why":"x"}},"id":"q"}"#,
    ) {
        Incoming::Response(r) => {
            let e = r.result.unwrap_err();
            assert_eq!((e.code, &*e.message), (-32000, "boom"));
            assert_eq!(e.data.unwrap().get(), r#"{"why":"x"}"#);
        }
        other => panic!("{other:?}"),
    }
    match response(r#"{"jsonrpc":"2.0","result":null,"id":null}"#) {
        Incoming::Response(r) => assert!(r.id.is_null() && r.result.unwrap().is_null()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_responses_are_protocol_errors() {
    let cases = [
        (
            r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":1}"#,
            ProtocolError::ResultAndError,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":1}"#,
            ProtocolError::NonIntegerErrorCode,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":"1","message":"m"},"id":1}"#,
            ProtocolError::NonIntegerErrorCode,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":99999999999999999999,"message":"m"},"id":1}"#,
            ProtocolError::NonIntegerErrorCode,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":1},"id":1}"#,
            ProtocolError::MissingErrorMessage,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":1,"message":2},"id":1}"#,
            ProtocolError::NonStringErrorMessage,
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"message":"m"},"id":1}"#,
            ProtocolError::MissingErrorCode,
        ),
        (
            r#"{"jsonrpc":"2.0","error":"bad","id":1}"#,
            ProtocolError::ErrorNotObject,
        ),
        (
            r#"{"jsonrpc":"2.0","error":null,"id":1}"#,
            ProtocolError::ErrorNotObject,
        ),
        (r#"{"jsonrpc":"2.0","result":1}"#, ProtocolError::MissingId),
        (
            r#"{"jsonrpc":"2.0","result":1,"id":true}"#,
            ProtocolError::InvalidId,
        ),
        (r#"{"result":1,"id":1}"#, ProtocolError::BadVersion),
        (
            r#"{"jsonrpc":"2.0","result":1,"result":2,"id":1}"#,
            ProtocolError::DuplicateMember,
        ),
    ];
    for (frame, expected) in cases {
        match response(frame) {
            Incoming::BadResponse { error, .. } => assert_eq!(error, expected, "{frame}"),
            other => panic!("{frame}: {other:?}"),
        }
        // And a malformed response is never answered.
        assert_eq!(serve(frame), None, "{frame}");
    }
    match response(r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"m"},"id":5}"#) {
        Incoming::BadResponse { id, .. } => assert_eq!(id.unwrap().as_u64(), Some(5)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_object_that_is_neither_call_nor_response_is_invalid() {
    assert_eq!(invalid(r#"{"jsonrpc":"2.0","id":4}"#)["id"], json!(4));
    assert_eq!(invalid("{}")["id"], json!(null));
}
