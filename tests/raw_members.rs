//! `RawValue::members` reads an object's members from its text: every member, in the order
//! written, names decoded as serde_json decodes them, values exactly as written.

use proptest::prelude::*;
use sansrpc::RawValue;
use serde_json::Value;

fn members(text: &str) -> Option<Vec<(String, String)>> {
    let raw = RawValue::from_json(text).unwrap();
    raw.members().map(|m| {
        m.map(|(name, value)| (name.decoded().into_owned(), value.get().to_owned()))
            .collect()
    })
}

#[test]
fn every_member_in_order_values_as_written() {
    let text = " { \"a\" : 1 , \"b\":[1, {\"c\": null}] ,\"a\":\"x\\\"y\", \"e\":{} } ";
    assert_eq!(
        members(text).unwrap(),
        [
            ("a", "1"),
            ("b", "[1, {\"c\": null}]"),
            ("a", "\"x\\\"y\""),
            ("e", "{}"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
    assert_eq!(members("{}").unwrap(), []);
    assert_eq!(members(" {\n} ").unwrap(), []);
}

#[test]
fn not_an_object_has_no_members() {
    for text in ["[]", "[{\"a\":1}]", "\"{\"", "1", "null", "true"] {
        assert_eq!(members(text), None, "{text}");
    }
}

#[test]
fn escaped_names_compare_and_decode_as_their_characters() {
    let raw =
        RawValue::from_json(r#"{"n\u0061me":1,"\ud83d\ude00":2,"plain":3,"\"q\\":4}"#).unwrap();
    let names: Vec<_> = raw.members().unwrap().map(|(n, _)| n).collect();
    assert!(names[0] == "name" && names[0] != "n\\u0061me");
    assert_eq!(names[0].raw(), "n\\u0061me");
    assert_eq!(names[1].decoded(), "😀");
    assert!(names[2] == "plain" && names[2] != "plai" && names[2] != "plainer");
    assert!(matches!(
        names[2].decoded(),
        std::borrow::Cow::Borrowed("plain")
    ));
    assert_eq!(names[3].decoded(), "\"q\\");
    // A lone surrogate decodes to U+FFFD.
    let raw = RawValue::from_json(r#"{"\ud800x":0}"#).unwrap();
    let (name, _) = raw.members().unwrap().next().unwrap();
    assert_eq!(name.decoded(), "\u{FFFD}x");
}

#[test]
fn deep_values_within_the_cap_are_members() {
    let depth = sansrpc::Limits::MAX_DEPTH_CAP as usize - 1;
    let value = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let text = format!("{{\"deep\":{value},\"next\":2}}");
    assert_eq!(
        members(&text).unwrap(),
        [
            ("deep".to_owned(), value),
            ("next".to_owned(), "2".to_owned())
        ]
    );
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Against serde_json: the same names and values, in the order written, whatever the
    /// names hold (quotes, controls, non-ASCII are escaped by serde_json's writer).
    #[test]
    fn the_same_members_as_serde_json_reads(
        pairs in prop::collection::vec((any::<String>(), value()), 0..6),
        spaced in any::<bool>(),
    ) {
        let mut text = String::from("{");
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            if spaced {
                text.push_str(" \n");
            }
            text.push_str(&serde_json::to_string(name).unwrap());
            text.push(':');
            if spaced {
                text.push('\t');
            }
            text.push_str(&serde_json::to_string(value).unwrap());
        }
        text.push('}');
        let got = members(&text).unwrap();
        prop_assert_eq!(got.len(), pairs.len());
        for ((name, value), (got_name, got_value)) in pairs.iter().zip(&got) {
            prop_assert_eq!(name, got_name);
            prop_assert_eq!(&serde_json::to_string(value).unwrap(), got_value);
        }
    }
}
