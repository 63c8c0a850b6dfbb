//! Every classifier limit: its default, its breach, and the documented answer.

mod common;

use common::{code, serve_with};
use sansrpc::message::Rejection;
use sansrpc::{Classified, Classifier, Incoming, Limits};
use serde_json::json;

fn limits(f: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    f(&mut l);
    l
}

#[test]
fn defaults_are_documented_values() {
    let l = Limits::default();
    assert_eq!(l.max_frame_bytes, 8 * 1024 * 1024);
    assert_eq!(l.max_header_bytes, 8 * 1024);
    assert_eq!(l.max_depth, 128);
    assert_eq!(l.max_batch_len, 1024);
    assert_eq!(l.max_id_len, 256);
    assert!(!l.accept_v1);
    assert!(!l.batch_too_large_as_invalid_request);
}

#[test]
fn a_million_open_brackets_is_an_error_not_a_stack_overflow() {
    let frame = vec![b'['; 1_000_000];
    let v = serve_with(Limits::default(), &frame).unwrap();
    assert_eq!(code(&v), -32700);
    assert_eq!(v["error"]["message"], "Parse error: nesting too deep");
    assert_eq!(v["id"], json!(null));
    // The same depth inside params of an otherwise fine request.
    let mut frame = br#"{"jsonrpc":"2.0","method":"m","id":1,"params":"#.to_vec();
    frame.extend(std::iter::repeat_n(b'{', 200_000).flat_map(|_| *br#"{"a":"#));
    assert_eq!(
        code(&serve_with(Limits::default(), &frame).unwrap()),
        -32700
    );
}

#[test]
fn depth_limit_counts_the_envelope() {
    let l = limits(|l| l.max_depth = 3);
    // Envelope (1) > params array (2) > inner array (3): allowed.
    let ok = br#"{"jsonrpc":"2.0","method":"sum","params":[[1]],"id":1}"#;
    let mut c = Classifier::new(l);
    assert!(matches!(
        c.classify(ok),
        Classified::Single(Incoming::Request(_))
    ));
    // One more level is refused.
    let deep = br#"{"jsonrpc":"2.0","method":"sum","params":[[[1]]],"id":1}"#;
    assert_eq!(c.classify(deep).rejection(), Some(Rejection::TooDeep));
    // In a batch the batch array is level 1.
    let batch = br#"[{"jsonrpc":"2.0","method":"sum","params":[[1]],"id":1}]"#;
    assert_eq!(c.classify(batch).rejection(), Some(Rejection::TooDeep));
    // Settings above the cap are clamped, not trusted.
    let mut c = Classifier::new(limits(|l| l.max_depth = u32::MAX));
    let frame = vec![b'['; 5000];
    assert_eq!(c.classify(&frame).rejection(), Some(Rejection::TooDeep));
}

#[test]
fn batch_length_limit() {
    let entry = r#"{"jsonrpc":"2.0","method":"sum","params":[1],"id":1}"#;
    let batch = |n: usize| format!("[{}]", vec![entry; n].join(","));
    let l = limits(|l| l.max_batch_len = 3);
    let v = serve_with(l, batch(3).as_bytes()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3);
    let v = serve_with(l, batch(4).as_bytes()).unwrap();
    assert!(v.is_object(), "one response for the whole batch: {v}");
    assert_eq!(code(&v), -32003);
    assert_eq!(v["error"]["message"], "Batch too large");
    assert_eq!(v["id"], json!(null));
    let l = limits(|l| {
        l.max_batch_len = 3;
        l.batch_too_large_as_invalid_request = true;
    });
    assert_eq!(code(&serve_with(l, batch(4).as_bytes()).unwrap()), -32600);
    // Entries past the limit are scanned without being recorded: a long batch that is not
    // JSON is a parse error like a short one (the fuzzer's differential against serde_json
    // found the two verdicts differing on a 1,434-entry array with a stray byte).
    let mut frame = batch(4).into_bytes();
    frame.pop();
    frame.extend_from_slice(b", not json at all");
    let mut c = Classifier::new(limits(|l| l.max_batch_len = 3));
    assert_eq!(c.classify(&frame).rejection(), Some(Rejection::Parse));
    let mut frame = batch(4).into_bytes();
    frame.extend_from_slice(b" x");
    assert_eq!(c.classify(&frame).rejection(), Some(Rejection::Parse));
    let deep = format!(
        "[{entry},{entry},{entry},{}1{}]",
        "[".repeat(200),
        "]".repeat(200)
    );
    assert_eq!(
        c.classify(deep.as_bytes()).rejection(),
        Some(Rejection::TooDeep)
    );
    let tail = format!("[{entry},{entry},{entry},1,\"x\",{{\"a\":[null]}}]");
    assert_eq!(
        c.classify(tail.as_bytes()).rejection(),
        Some(Rejection::BatchTooLarge)
    );
}

#[test]
fn string_id_length_limit() {
    let l = limits(|l| l.max_id_len = 8);
    let ok = br#"{"jsonrpc":"2.0","method":"get_data","id":"12345678"}"#;
    assert_eq!(serve_with(l, ok).unwrap()["id"], json!("12345678"));
    let long = br#"{"jsonrpc":"2.0","method":"get_data","id":"123456789"}"#;
    let v = serve_with(l, long).unwrap();
    assert_eq!(code(&v), -32600);
    assert_eq!(v["error"]["message"], "Invalid Request: id too long");
    assert_eq!(v["id"], json!(null), "the oversize id is not echoed");
    // Number tokens are bounded the same way (a number id of a million digits).
    let mut frame = br#"{"jsonrpc":"2.0","method":"get_data","id":"#.to_vec();
    frame.extend(std::iter::repeat_n(b'7', 1_000_000));
    frame.push(b'}');
    assert_eq!(
        serve_with(Limits::default(), &frame).unwrap()["id"],
        json!(null)
    );
}

#[test]
fn frame_size_limit_for_single_message_transports() {
    let l = limits(|l| l.max_frame_bytes = 64);
    let frame = format!(
        r#"{{"jsonrpc":"2.0","method":"sum","params":[{}],"id":1}}"#,
        vec!["1"; 40].join(",")
    );
    let v = serve_with(l, frame.as_bytes()).unwrap();
    assert_eq!(code(&v), -32004);
    assert_eq!(v["id"], json!(null));
}

#[test]
fn classifier_is_reusable_after_every_rejection() {
    let mut c = Classifier::new(limits(|l| l.max_batch_len = 2));
    let good = br#"{"jsonrpc":"2.0","method":"m","id":1}"#;
    for bad in [&b"[[[[[["[..], b"[1,2,3]", b"{", b"[]", b"7", b"\xff"] {
        assert!(c.classify(bad).rejection().is_some(), "{bad:?}");
        assert!(matches!(
            c.classify(good),
            Classified::Single(Incoming::Request(_))
        ));
    }
}
