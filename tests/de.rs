//! `sansrpc::de`, the core's own decoder, against serde_json: the same values from the same
//! texts for the types params hold, errors where serde_json errs, serde_json's `RawValue`
//! (and so `sansrpc::RawValue` and `Id`) byte for byte, and a random run over generated
//! JSON. With the `serde-json-params` feature off, typed params decode through it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

use proptest::prelude::*;
use sansrpc::id::Id;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, PartialEq, Deserialize)]
struct Point {
    x: i32,
    y: i32,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Strict {
    a: u8,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Shape {
    Dot,
    Circle(f64),
    Rect { w: u32, h: u32 },
    Pair(i8, i8),
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "kind")]
enum Tagged {
    A { n: i64 },
    B,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Loose {
    Num(i64),
    Text(String),
    List(Vec<Loose>),
}

#[derive(Debug, PartialEq, Deserialize)]
struct Borrowing<'a> {
    #[serde(borrow)]
    name: &'a str,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Unit;

#[derive(Debug, PartialEq, Deserialize)]
struct Wrapper(u64);

/// Both decoders on `text`: the same value, or both an error.
fn same<T: DeserializeOwned + PartialEq + Debug>(text: &str) {
    let ours = sansrpc::de::from_str::<T>(text);
    let theirs = serde_json::from_str::<T>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text}: ours {ours:?}, serde_json {theirs:?}"),
    }
}

#[test]
fn scalars() {
    for text in [
        "0",
        "-0",
        "1",
        "-1",
        "255",
        "256",
        "-129",
        "127",
        "65535",
        "65536",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "1.0",
        "1e2",
        "-1.5",
        "true",
        "null",
        "\"7\"",
        "[]",
        "{}",
        " 12 ",
    ] {
        same::<u8>(text);
        same::<i8>(text);
        same::<u16>(text);
        same::<i32>(text);
        same::<u32>(text);
        same::<i64>(text);
        same::<u64>(text);
        same::<i128>(text);
        same::<u128>(text);
        same::<f64>(text);
        same::<bool>(text);
        same::<Option<i64>>(text);
        same::<()>(text);
        same::<String>(text);
        same::<Value>(text);
    }
    same::<u128>("340282366920938463463374607431768211455");
    same::<i128>("-170141183460469231731687303715884105728");
    same::<f64>("1e400");
    same::<char>("\"x\"");
    same::<char>("\"xy\"");
}

#[test]
fn strings() {
    for text in [
        r#""plain""#,
        r#""tab\there""#,
        r#""quote \" and \\ and \/""#,
        r#""\u00e9\u4e2d\ud83d\ude00""#,
        r#""é中😀""#,
        r#""""#,
        r#""\b\f\n\r\t""#,
    ] {
        same::<String>(text);
        same::<Value>(text);
        same::<Vec<u8>>(text);
    }
    // Borrowed where there is no escape; serde_json refuses to borrow an escaped string.
    let b: Borrowing<'_> = sansrpc::de::from_str(r#"{"name":"abc"}"#).unwrap();
    assert_eq!(b.name, "abc");
    assert!(sansrpc::de::from_str::<Borrowing<'_>>(r#"{"name":"a\nb"}"#).is_err());
    // A lone surrogate reads as U+FFFD (serde_json refuses the string).
    let s: String = sansrpc::de::from_str(r#""a\ud800b""#).unwrap();
    assert_eq!(s, "a\u{FFFD}b");
}

#[test]
fn compounds() {
    for text in [
        r#"{"x":1,"y":2}"#,
        r#"{"y":2,"x":1,"label":"p"}"#,
        r#"{"x":1,"y":2,"extra":[1,{"z":null}]}"#,
        r#"{"x":1}"#,
        r#"{"x":1,"y":2,"x":3}"#,
        r#"[1,2]"#,
        r#"[1,2,"l"]"#,
        r#"[1,2,"l",4]"#,
        r#"{"x":"1","y":2}"#,
        r#"{"x":1.5,"y":2}"#,
        r#"{"x":3000000000,"y":2}"#,
        r#"null"#,
        r#"[]"#,
    ] {
        same::<Point>(text);
        same::<Value>(text);
    }
    for text in [r#"{"a":1}"#, r#"{"a":1,"b":2}"#, r#"{"a":300}"#, r#"{}"#] {
        same::<Strict>(text);
    }
    for text in [
        r#"[1,2,3]"#,
        r#"[]"#,
        r#"[1,"2"]"#,
        r#"[[1],[2,3]]"#,
        r#"{"a":1}"#,
        r#"[1,2"#,
    ] {
        same::<Vec<i64>>(text);
        same::<(i64, i64, i64)>(text);
        same::<Vec<Vec<i64>>>(text);
        same::<(u8, Option<String>)>(text);
    }
    for text in [
        r#"{"a":1,"b":2}"#,
        r#"{"1":true,"2":false}"#,
        r#"{"-5":true}"#,
        r#"{"x":true}"#,
        r#"{}"#,
    ] {
        same::<HashMap<String, i64>>(text);
        same::<BTreeMap<String, Value>>(text);
        same::<BTreeMap<u32, bool>>(text);
        same::<BTreeMap<i64, bool>>(text);
    }
    for text in ["null", "1", r#"{}"#] {
        same::<Unit>(text);
        same::<Wrapper>(text);
    }
}

#[test]
fn enums() {
    for text in [
        r#""dot""#,
        r#"{"circle":2.5}"#,
        r#"{"rect":{"w":1,"h":2}}"#,
        r#"{"pair":[1,-1]}"#,
        r#""square""#,
        r#"{"circle":2.5,"dot":null}"#,
        r#"{"rect":[1,2]}"#,
        r#"7"#,
    ] {
        same::<Shape>(text);
    }
    for text in [
        r#"{"kind":"A","n":5}"#,
        r#"{"kind":"B"}"#,
        r#"{"kind":"C"}"#,
        r#"{"n":5}"#,
    ] {
        same::<Tagged>(text);
    }
    for text in [r#"5"#, r#""five""#, r#"[1,"a",[2]]"#, r#"true"#, r#"1.5"#] {
        same::<Loose>(text);
    }
}

#[test]
fn raw_values_and_ids() {
    for text in [
        r#"{"a" : [1, 2.50, "x"]}"#,
        r#"1.50"#,
        r#""s\n""#,
        r#"null"#,
        r#"[ ]"#,
    ] {
        let ours: Box<serde_json::value::RawValue> = sansrpc::de::from_str(text).unwrap();
        let theirs: Box<serde_json::value::RawValue> = serde_json::from_str(text).unwrap();
        assert_eq!(ours.get(), theirs.get());
        let ours: Box<sansrpc::RawValue> = sansrpc::de::from_str(text).unwrap();
        assert_eq!(ours.get(), text.trim());
        let member = format!(r#"{{"v":{text},"w":1}}"#);
        #[derive(Deserialize)]
        struct Holder<'a> {
            #[serde(borrow)]
            v: &'a serde_json::value::RawValue,
            w: u8,
        }
        let h: Holder<'_> = sansrpc::de::from_str(&member).unwrap();
        assert_eq!((h.v.get(), h.w), (text.trim(), 1));
    }
    // Ids keep their text exactly.
    let id: Id<'static> = sansrpc::de::from_str("1.50").unwrap();
    assert_eq!(id.raw(), "1.50");
    let id: Id<'static> = sansrpc::de::from_str(r#""tok""#).unwrap();
    assert_eq!(id.as_str().as_deref(), Some("tok"));
    assert!(sansrpc::de::from_str::<Id<'static>>("[1]").is_err());
}

#[test]
fn errors_say_what_was_expected() {
    let e = sansrpc::de::from_str::<Point>(r#"{"x":1}"#).unwrap_err();
    assert_eq!(e.message(), "missing field `y`");
    let e = sansrpc::de::from_str::<Strict>(r#"{"a":1,"b":2}"#).unwrap_err();
    assert_eq!(e.message(), "unknown field `b`");
    let e = sansrpc::de::from_str::<i64>(r#""7""#).unwrap_err();
    assert_eq!(e.message(), "invalid type: string, expected i64");
    let e = sansrpc::de::from_str::<u8>("300").unwrap_err();
    assert_eq!(e.message(), "invalid value: integer, expected u8");
    let e = sansrpc::de::from_str::<(i64, i64)>("[1]").unwrap_err();
    assert_eq!(e.message(), "invalid length, expected a tuple of size 2");
    let e = sansrpc::de::from_str::<(i64,)>("[1,2]").unwrap_err();
    assert_eq!(e.message(), "the array has more elements than expected");
    let e = sansrpc::de::from_str::<i64>("1 2").unwrap_err();
    assert_eq!(e.message(), "trailing characters after the value");
    let e = sansrpc::de::from_str::<Vec<i64>>("[1,").unwrap_err();
    assert_eq!(e.message(), "the text ended before a value");
    let e = sansrpc::de::from_str::<Vec<i64>>("[1,]").unwrap_err();
    assert_eq!(e.message(), "invalid type: end of array, expected i64");
    let e = sansrpc::de::from_str::<Vec<i64>>("[1 2]").unwrap_err();
    assert_eq!(e.message(), "not valid JSON");
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(sansrpc::de::from_str::<Value>(&deep).is_err());
    assert!(sansrpc::de::from_str::<serde::de::IgnoredAny>(&deep).is_err());
    let fine = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert!(sansrpc::de::from_str::<Value>(&fine).is_ok());
}

/// JSON values without floats (whose last digit two parsers may round differently).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1000i32..1000).prop_map(|n| Value::from(f64::from(n) / 4.0)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_value_reads_as_serde_json_reads_it(v in json(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            serde_json::to_string(&v).unwrap()
        };
        let ours: Value = sansrpc::de::from_str(&text).unwrap();
        prop_assert_eq!(&ours, &v);
        let theirs: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(ours, theirs);
    }

    #[test]
    fn any_text_decodes_or_errs_as_serde_json_does(text in "[\\[\\]{}:,\"0-9a-z.\\-\\\\ ]{0,24}") {
        let ours = sansrpc::de::from_str::<Value>(&text);
        let theirs = serde_json::from_str::<Value>(&text);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{}", text);
        if let (Ok(a), Ok(b)) = (ours, theirs) {
            prop_assert_eq!(a, b);
        }
    }
}
