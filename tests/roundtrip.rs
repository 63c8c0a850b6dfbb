//! Property tests: writing a message and classifying the bytes gives the same message back,
//! for any valid message, odd ids included; and the classifier agrees with serde_json on
//! what is JSON.

use proptest::prelude::*;
use sansrpc::message::{write_error_response, write_result_response, BatchWriter};
use sansrpc::{
    Classified, Classifier, ErrorObject, Id, Incoming, Notification, RawValue, Request, Response,
    Version,
};
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn structured() -> impl Strategy<Value = Value> {
    json_value().prop_map(|v| match v {
        Value::Array(_) | Value::Object(_) => v,
        other => Value::Array(vec![other]),
    })
}

/// Number texts of every shape the grammar allows.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,8})?([eE][+-]?[0-9]{1,3})?",
    ]
}

fn id() -> impl Strategy<Value = Id<'static>> {
    prop_oneof![
        Just(Id::NULL),
        number_text().prop_map(|t| Id::from_number_text(&t).unwrap().into_owned()),
        ".{0,20}".prop_map(Id::from),
        "\\PC{0,40}".prop_map(Id::from),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z/$.]{1,20}", "\\PC{0,20}", ".{0,10}"]
}

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

#[derive(Debug, Clone)]
enum Msg {
    Request(Request<'static>),
    Notification(Notification<'static>),
    Response(Response<'static>),
}

fn message() -> impl Strategy<Value = Msg> {
    let params = || proptest::option::of(structured());
    prop_oneof![
        (id(), method(), params()).prop_map(|(id, method, params)| Msg::Request(Request {
            id,
            method: method.into(),
            params: params.map(|p| raw(&p).into()),
            version: Version::V2,
        })),
        (method(), params()).prop_map(|(method, params)| Msg::Notification(Notification {
            method: method.into(),
            params: params.map(|p| raw(&p).into()),
            version: Version::V2,
        })),
        (id(), json_value()).prop_map(|(id, result)| Msg::Response(Response {
            id,
            result: Ok(raw(&result).into()),
            version: Version::V2,
        })),
        (
            id(),
            any::<i64>(),
            ".{0,20}",
            proptest::option::of(json_value())
        )
            .prop_map(|(id, code, message, data)| {
                let mut e = ErrorObject::new(code, message);
                if let Some(d) = data {
                    e = e.with_data(raw(&d));
                }
                Msg::Response(Response {
                    id,
                    result: Err(e),
                    version: Version::V2,
                })
            }),
    ]
}

/// serde_json's verdict on a JSON text, except that it refuses numbers beyond the range of
/// f64 (`1e400`), which the JSON grammar allows and ids may carry.
fn serde_accepts(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => true,
        Err(e) => e.to_string().starts_with("number out of range"),
    }
}

fn write(m: &Msg, out: &mut Vec<u8>) {
    match m {
        Msg::Request(r) => r.write_json(out),
        Msg::Notification(n) => n.write_json(out),
        Msg::Response(r) => match &r.result {
            Ok(v) => write_result_response(out, r.version, &r.id, v),
            Err(e) => write_error_response(out, r.version, &r.id, e),
        },
    }
}

fn same(m: &Msg, got: &Incoming<'_>) -> bool {
    match (m, got) {
        (Msg::Request(a), Incoming::Request(b)) => a == b,
        (Msg::Notification(a), Incoming::Notification(b)) => a == b,
        (Msg::Response(a), Incoming::Response(b)) => a == b,
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: Some(Box::new(
        proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/roundtrip.txt"))), ..ProptestConfig::default() })]

    #[test]
    fn write_then_classify_gives_the_same_message(m in message()) {
        let mut out = Vec::new();
        write(&m, &mut out);
        // What we write is JSON by serde_json's judgement too.
        prop_assert!(serde_accepts(&out), "{}", String::from_utf8_lossy(&out));
        let mut c = Classifier::default();
        match c.classify(&out) {
            Classified::Single(got) => prop_assert!(same(&m, &got), "{m:?}\n{got:?}"),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn batches_round_trip_in_order(ms in prop::collection::vec(message(), 1..20)) {
        let mut out = Vec::new();
        let mut w = BatchWriter::start(&mut out);
        for m in &ms {
            w.entry(&mut out);
            write(m, &mut out);
        }
        prop_assert!(w.finish(&mut out));
        let mut c = Classifier::default();
        match c.classify(&out) {
            Classified::Batch(batch) => {
                prop_assert_eq!(batch.len(), ms.len());
                for (m, got) in ms.iter().zip(batch) {
                    prop_assert!(same(m, &got), "{m:?}\n{got:?}");
                }
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn ids_survive_owning(id in id()) {
        let mut out = Vec::new();
        id.write_json(&mut out);
        let text = String::from_utf8(out).unwrap();
        match id.kind() {
            sansrpc::IdKind::String => {
                let back: String = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back, id.as_str().unwrap());
            }
            // serde_json refuses numbers beyond f64 (1e400), which JSON allows: compare text.
            sansrpc::IdKind::Number => prop_assert_eq!(&text, id.raw()),
            sansrpc::IdKind::Null => prop_assert_eq!(&text, "null"),
        }
        prop_assert_eq!(id.to_owned_id(), id.clone());
    }

    #[test]
    fn json_verdicts_agree_with_serde_json(bytes in prop::collection::vec(prop_oneof![
        Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b':'), Just(b','), Just(b'\\'),
        Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), Just(b' '), Just(b'n'), Just(b'u'), Just(b'a'),
        any::<u8>()], 0..40)) {
        let ours = RawValue::from_json(std::str::from_utf8(&bytes).unwrap_or("\u{0}")).is_ok();
        let theirs = std::str::from_utf8(&bytes).is_ok() && serde_accepts(&bytes);
        prop_assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(&bytes));
    }
}
