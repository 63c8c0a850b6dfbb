//! `sansrpc::de` at its edges: robustness on any `&str` (deep nesting on every path, junk,
//! random and mutated text), agreement with serde_json on which texts are JSON and on the
//! values read (map keys of every kind, enums in every representation, flatten, raw values,
//! 128-bit integers, which visitor method is called), and the scanner's position when a
//! visitor drives `MapAccess`/`SeqAccess` in unusual ways.

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Debug};

use proptest::prelude::*;
use sansrpc::id::Id;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue as JsonRaw;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Helpers and types

/// Both decoders on `text`: equal values, or both errors.
fn same<T: DeserializeOwned + PartialEq + Debug>(text: &str) {
    let ours = sansrpc::de::from_str::<T>(text);
    let theirs = serde_json::from_str::<T>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => {
            // Floats: core's parser rounds correctly, serde_json's default one may not
            // (an accepted difference, also for integers past 64 bits, read as floats);
            // texts without a fraction, an exponent or a 20-digit integer must agree.
            let has_float = text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
                || text
                    .split(|c: char| !c.is_ascii_digit())
                    .any(|run| run.len() >= 20);
            assert!(a == b || has_float, "{text}: ours {a:?}, serde_json {b:?}")
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "{text:?} as {}: ours {ours:?}, serde_json {theirs:?}",
            std::any::type_name::<T>()
        ),
    }
}

/// Same acceptance only (for types without `PartialEq`).
fn same_ok<T: DeserializeOwned>(text: &str) {
    let ours = sansrpc::de::from_str::<T>(text).map(drop);
    let theirs = serde_json::from_str::<T>(text).map(drop);
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok(),
        "{text:?} as {}: ours {ours:?}, serde_json {theirs:?}",
        std::any::type_name::<T>()
    );
}

#[derive(Debug, PartialEq, Deserialize)]
struct Point {
    x: i32,
    y: i32,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
enum Color {
    Red,
    Green,
    #[serde(rename = "blue")]
    Blue,
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
    C(Point),
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    One(u8),
    Two { s: String },
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Loose {
    Num(i64),
    Text(String),
    List(Vec<Loose>),
    Map(BTreeMap<String, Loose>),
}

#[derive(Debug, PartialEq, Deserialize)]
struct Inner {
    a: u8,
    #[serde(default)]
    b: Option<bool>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Flat {
    id: u32,
    #[serde(flatten)]
    inner: Inner,
    #[serde(flatten)]
    rest: BTreeMap<String, Value>,
}

/// The shape `Profile::progress_token` decodes (Option<Id> through the RawValue protocol).
#[derive(Debug, Deserialize)]
struct TokenParams {
    #[serde(rename = "workDoneToken")]
    work_done_token: Option<Id<'static>>,
    #[serde(rename = "_meta")]
    meta: Option<TokenMeta>,
}
#[derive(Debug, Deserialize)]
struct TokenMeta {
    #[serde(rename = "progressToken")]
    _progress_token: Option<Id<'static>>,
}

/// Runs `f` on a thread with a 1 MiB stack (what an embedded-ish or async task might
/// have); a stack overflow aborts the test binary, so this also proves recursion is bounded.
fn small_stack<F: FnOnce() + Send + 'static>(f: F) {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// 1. Robustness

#[test]
fn hundred_thousand_open_brackets_are_refused_on_every_path() {
    small_stack(|| {
        let mut texts = vec![
            "[".repeat(100_000),
            "{\"a\":".repeat(100_000),
            "[{\"a\":".repeat(50_000),
        ];
        // Balanced, but far too deep.
        texts.push(format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
        // Deep inside a member that a struct ignores or reads raw.
        texts.push(format!(
            r#"{{"x":1,"y":2,"z":{}1{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        ));
        texts.push(format!(
            r#"{{"workDoneToken":1,"_meta":{{"progressToken":{}}}}}"#,
            "[".repeat(100_000)
        ));
        for t in &texts {
            let t = t.as_str();
            assert!(sansrpc::de::from_str::<Value>(t).is_err());
            assert!(sansrpc::de::from_str::<IgnoredAny>(t).is_err());
            assert!(sansrpc::de::from_str::<Box<JsonRaw>>(t).is_err());
            assert!(sansrpc::de::from_str::<&JsonRaw>(t).is_err());
            assert!(sansrpc::de::from_str::<Box<sansrpc::RawValue>>(t).is_err());
            assert!(sansrpc::de::from_str::<Id<'static>>(t).is_err());
            assert!(sansrpc::de::from_str::<Option<Id<'static>>>(t).is_err());
            assert!(sansrpc::de::from_str::<Point>(t).is_err());
            assert!(sansrpc::de::from_str::<Loose>(t).is_err());
            assert!(sansrpc::de::from_str::<Tagged>(t).is_err());
            assert!(sansrpc::de::from_str::<Adjacent>(t).is_err());
            assert!(sansrpc::de::from_str::<Flat>(t).is_err());
            assert!(sansrpc::de::from_str::<Shape>(t).is_err());
            assert!(sansrpc::de::from_str::<TokenParams>(t).is_err());
            assert!(sansrpc::de::from_str::<Vec<Value>>(t).is_err());
            assert!(sansrpc::de::from_str::<HashMap<String, Value>>(t).is_err());
        }
    });
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn depth_limit_is_the_same_on_every_path() {
    small_stack(|| {
        // 128 levels in all, whichever way the innermost part is read.
        for (n, ok) in [(128, true), (129, false)] {
            let t = nested(n);
            assert_eq!(sansrpc::de::from_str::<Value>(&t).is_ok(), ok, "{n}");
            assert_eq!(sansrpc::de::from_str::<IgnoredAny>(&t).is_ok(), ok, "{n}");
            assert_eq!(sansrpc::de::from_str::<Box<JsonRaw>>(&t).is_ok(), ok, "{n}");
            assert_eq!(sansrpc::de::from_str::<Loose>(&t).is_ok(), ok, "{n}");
            // Read one level as a Vec, the rest raw / ignored / as Value.
            assert_eq!(sansrpc::de::from_str::<Vec<Box<JsonRaw>>>(&t).is_ok(), ok);
            assert_eq!(sansrpc::de::from_str::<Vec<IgnoredAny>>(&t).is_ok(), ok);
            assert_eq!(sansrpc::de::from_str::<Vec<Value>>(&t).is_ok(), ok);
            // Inside an object member: the object is one level.
            let m = format!(r#"{{"x":1,"y":2,"z":{}}}"#, nested(n - 1));
            assert_eq!(sansrpc::de::from_str::<Point>(&m).is_ok(), ok, "{n}");
            assert_eq!(
                sansrpc::de::from_str::<BTreeMap<String, Box<JsonRaw>>>(&m).is_ok(),
                ok
            );
            assert_eq!(sansrpc::de::from_str::<Value>(&m).is_ok(), ok);
        }
        // serde_json allows one level less (accepted difference): 127 agree.
        same::<Value>(&nested(127));
    });
}

/// Lone surrogate escapes are an accepted difference: keep them out of the comparison.
fn has_surrogate_escape(t: &str) -> bool {
    let b = t.as_bytes();
    b.windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'))
}

fn compare_all(text: &str) {
    // Never panics, whatever the text (a panic fails the proptest).
    let _ = sansrpc::de::from_str::<Color>(text);
    let _ = sansrpc::de::from_str::<Id<'static>>(text);
    let _ = sansrpc::de::from_str::<&str>(text);
    if has_surrogate_escape(text) {
        return;
    }
    same::<Value>(text);
    same_ok::<IgnoredAny>(text);
    same_ok::<Box<JsonRaw>>(text);
    same::<Point>(text);
    same::<Shape>(text);
    same::<Tagged>(text);
    same::<Loose>(text);
    same::<Flat>(text);
    same::<Vec<Option<i64>>>(text);
    same::<BTreeMap<String, Value>>(text);
    same::<BTreeMap<u32, Value>>(text);
    same::<(u8, String)>(text);
    same::<u128>(text);
    same::<i128>(text);
    same::<String>(text);
    same::<char>(text);
    same::<Option<bool>>(text);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random text over JSON's punctuation, digits, escapes and some non-ASCII.
    #[test]
    fn random_text_no_panic_and_same_acceptance(
        text in "[\\[\\]{}:,\" \t\n0-9abefnlrstuxyz.+\\-\\\\/é😀\u{1}A-F]{0,32}"
    ) {
        compare_all(&text);
    }

    /// Valid JSON with one byte-level mutation: mostly near-valid texts.
    #[test]
    fn mutated_json_same_acceptance(
        v in json(),
        at in any::<prop::sample::Index>(),
        op in 0u8..3,
        ch in prop::sample::select(vec!['[', ']', '{', '}', ',', ':', '"', '\\', ' ', '0', '-', 'e', '.', 'n']),
    ) {
        let mut text = serde_json::to_string(&v).unwrap();
        if !text.is_empty() {
            let mut i = at.index(text.len());
            while !text.is_char_boundary(i) { i -= 1; }
            match op {
                0 => { text.remove(i); }
                1 => text.insert(i, ch),
                _ => { text.remove(i); text.insert(i, ch); }
            }
        }
        compare_all(&text);
    }
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "[a-z\"\\\\]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{0,3}|x|y|id|a|b|kind|n", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------------------------------
// 2. What is JSON

#[test]
fn trailing_commas_missing_colons_and_junk_are_refused() {
    for t in [
        "[1,]",
        "[,1]",
        "[,]",
        "[1,,2]",
        "[1 2]",
        "{\"a\":1,}",
        "{,\"a\":1}",
        "{\"a\" 1}",
        "{\"a\"::1}",
        "{\"a\":}",
        "{\"a\"}",
        "{\"a\":1 \"b\":2}",
        "{1:2}",
        "{'a':1}",
        "[1]]",
        "{}}",
        "\"a",
        "\"\\\"",
        "\"\\u12\"",
        "nul",
        "nulll",
        "truee",
        "01",
        "-",
        "1.",
        ".1",
        "+1",
        "1e",
        "\u{feff}1",
        "NaN",
        "Infinity",
        "",
        "   ",
        "\"\u{1}\"",
        "\"\t\"",
    ] {
        assert!(sansrpc::de::from_str::<Value>(t).is_err(), "{t:?}");
        assert!(sansrpc::de::from_str::<IgnoredAny>(t).is_err(), "{t:?}");
        assert!(sansrpc::de::from_str::<Box<JsonRaw>>(t).is_err(), "{t:?}");
        assert!(serde_json::from_str::<Value>(t).is_err(), "{t:?}");
    }
    // Inside types that drive MapAccess/SeqAccess themselves.
    for t in [
        r#"{"x":1,"y":2,}"#,
        r#"{"x":1 "y":2}"#,
        r#"{"x":1,"y":2,"z":[1,]}"#,
        r#"{"x":1,"y":2,"z":{"a":1,}}"#,
        r#"{"x":1,"y":2,"z"}"#,
        r#"{"x":1,"y":2,"z":}"#,
        r#"[1,2,]"#,
        r#"[1,,2]"#,
        r#"{"x":1,"y":2}}"#,
    ] {
        same::<Point>(t);
        same::<Flat>(t);
        same::<Loose>(t);
        assert!(sansrpc::de::from_str::<Point>(t).is_err(), "{t:?}");
    }
    for t in [
        r#"{"circle":}"#,
        r#"{"circle" 1}"#,
        r#"{"pair":[1,2,]}"#,
        r#"{"dot":null,}"#,
    ] {
        same::<Shape>(t);
    }
}

#[test]
fn flatten_and_enum_representations_match_serde_json() {
    for t in [
        r#"{"id":1,"a":2}"#,
        r#"{"a":2,"id":1,"b":true,"z":[1,{"q":null}],"w":"s"}"#,
        r#"{"id":1}"#,
        r#"{"id":1,"a":"2"}"#,
        r#"{"id":1,"a":2,"a":3}"#,
        r#"{"id":1,"a":2,"b":null,"x":-0,"y":1e2,"big":18446744073709551616}"#,
        r#"[1,2]"#,
    ] {
        same::<Flat>(t);
    }
    for t in [
        r#"{"kind":"A","n":5}"#,
        r#"{"n":5,"kind":"A"}"#,
        r#"{"kind":"B"}"#,
        r#"{"kind":"B","extra":[1]}"#,
        r#"{"kind":"C","x":1,"y":2}"#,
        r#"{"kind":"C","x":1}"#,
        r#"{"kind":"D"}"#,
        r#"["A",5]"#,
        r#"{}"#,
    ] {
        same::<Tagged>(t);
    }
    for t in [
        r#"{"t":"One","c":3}"#,
        r#"{"c":3,"t":"One"}"#,
        r#"{"t":"Two","c":{"s":"x"}}"#,
        r#"{"t":"Two"}"#,
        r#"["One",3]"#,
    ] {
        same::<Adjacent>(t);
    }
    for t in [
        r#"[1,"a",[2,{"k":[3]}],{}]"#,
        r#"{"a":{"b":"c"}}"#,
        r#"1.5"#,
        r#"-0"#,
        r#"18446744073709551615"#,
        r#"-9223372036854775808"#,
        r#""\u00e9""#,
    ] {
        same::<Loose>(t);
    }
    for t in [
        r#""dot""#,
        r#""\u0064ot""#,
        r#"{"circle":-0}"#,
        r#"{"rect":{"h":2,"w":1}}"#,
        r#"{"rect":[1,2]}"#,
        r#"{"pair":[1,-1]}"#,
        r#"{"pair":[1]}"#,
        r#"{"dot":null}"#,
        r#"{"dot":1}"#,
        r#"{"circle":1.5,"dot":null}"#,
        r#"{}"#,
        r#"["dot"]"#,
    ] {
        same::<Shape>(t);
    }
}

#[test]
fn raw_values_read_byte_for_byte_everywhere() {
    for t in [
        r#" {"a" : [1, 2.50, "x\n"] } "#,
        "\t-0.0e+0\n",
        r#""\ud83d\ude00""#,
        "null",
        "[ [ ] , { } ]",
    ] {
        let ours: Box<JsonRaw> = sansrpc::de::from_str(t).unwrap();
        let theirs: Box<JsonRaw> = serde_json::from_str(t).unwrap();
        assert_eq!(ours.get(), theirs.get());
        let ours: &JsonRaw = sansrpc::de::from_str(t).unwrap();
        assert_eq!(ours.get(), theirs.get());
        let ours: Box<sansrpc::RawValue> = sansrpc::de::from_str(t).unwrap();
        assert_eq!(ours.get(), theirs.get());
        // In a Vec and a map, with odd whitespace around.
        let list = format!("[ {t} , {t} ]");
        let ours: Vec<Box<JsonRaw>> = sansrpc::de::from_str(&list).unwrap();
        let theirs: Vec<Box<JsonRaw>> = serde_json::from_str(&list).unwrap();
        assert_eq!(
            ours.iter().map(|r| r.get()).collect::<Vec<_>>(),
            theirs.iter().map(|r| r.get()).collect::<Vec<_>>()
        );
        let map = format!(r#"{{ "k" :{t}, "l":1 }}"#);
        let ours: BTreeMap<String, Box<JsonRaw>> = sansrpc::de::from_str(&map).unwrap();
        let theirs: BTreeMap<String, Box<JsonRaw>> = serde_json::from_str(&map).unwrap();
        assert_eq!(ours["k"].get(), theirs["k"].get());
        assert_eq!(ours["l"].get(), "1");
    }
    // Option: null is None, anything else Some(raw).
    same_ok::<Option<Box<JsonRaw>>>("null");
    let o: Option<Box<JsonRaw>> = sansrpc::de::from_str(" [1] ").unwrap();
    assert_eq!(o.unwrap().get(), "[1]");
    // serde_json refuses a raw value through untagged/flatten content: so does de.
    #[derive(Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum U {
        R(Box<JsonRaw>),
    }
    same_ok::<U>("1");
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct F {
        #[serde(flatten)]
        m: HashMap<String, Box<JsonRaw>>,
    }
    same_ok::<F>(r#"{"a":1}"#);
    // Invalid JSON inside a raw value is refused, not copied.
    for t in ["[1,]", "{\"a\":1,}", "\"\\x\"", "[1 2]", "01"] {
        assert!(sansrpc::de::from_str::<Box<JsonRaw>>(t).is_err(), "{t}");
        assert!(
            sansrpc::de::from_str::<Box<sansrpc::RawValue>>(t).is_err(),
            "{t}"
        );
    }
}

#[test]
fn progress_token_shapes() {
    let p: TokenParams =
        sansrpc::de::from_str(r#"{"workDoneToken": 7 ,"_meta":{"progressToken":"t\u0041"}}"#)
            .unwrap();
    assert_eq!(p.work_done_token.unwrap().raw(), "7");
    let p: TokenParams = sansrpc::de::from_str(r#"{"workDoneToken":null}"#).unwrap();
    assert!(p.work_done_token.is_none() && p.meta.is_none());
    for bad in [
        r#"{"workDoneToken":[1]}"#,
        r#"{"workDoneToken":{}}"#,
        r#"{"workDoneToken":true}"#,
        r#"{"workDoneToken":1,}"#,
        r#"{"workDoneToken":1"#,
    ] {
        assert!(sansrpc::de::from_str::<TokenParams>(bad).is_err(), "{bad}");
    }
}

// ---------------------------------------------------------------------------------------
// 3. Values

#[test]
fn numbers_chars_and_strings_read_as_serde_json_reads_them() {
    for t in [
        "-0", "-0.0", "0", "-0e0", "1E2", "1e-400", "1e400", "-1e400",
    ] {
        same::<Value>(t);
        same::<f64>(t);
        same::<i64>(t);
        same::<u64>(t);
        same::<Option<f32>>(t);
    }
    let v: Value = sansrpc::de::from_str("-0").unwrap();
    assert!(v.as_f64().unwrap().is_sign_negative());
    for t in [
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "340282366920938463463374607431768211455",
        "340282366920938463463374607431768211456",
        "-170141183460469231731687303715884105728",
        "-170141183460469231731687303715884105729",
        "-0",
        "-1",
        "1.0",
        "00",
        "1e2",
    ] {
        same::<Value>(t);
        same::<u64>(t);
        same::<i64>(t);
        same::<u128>(t);
        same::<i128>(t);
    }
    for t in [
        r#""a""#,
        r#""é""#,
        r#""😀""#,
        r#""\ud83d\ude00""#,
        r#""\n""#,
        r#""ab""#,
        r#""""#,
        "'a'",
        "97",
    ] {
        same::<char>(t);
        same::<String>(t);
        same::<Vec<u8>>(t);
    }
}

/// Records which visit_* method the deserializer chose.
struct How;
impl<'de> Visitor<'de> for How {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<String, E> {
        Ok(format!("borrowed_str {v}"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(format!("str {v}"))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(format!("str {v}"))
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<String, E> {
        Ok(format!("borrowed_bytes {v:?}"))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<String, E> {
        Ok(format!("bytes {v:?}"))
    }
    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<String, E> {
        Ok(format!("bytes {v:?}"))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(format!("u64 {v}"))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(format!("i64 {v}"))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(format!("u128 {v}"))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(format!("i128 {v}"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(format!("f64 {v:?}"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<String, A::Error> {
        let mut n = 0;
        while a.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(format!("seq {n}"))
    }
}

macro_rules! how {
    ($name:ident, $method:ident) => {
        struct $name(String);
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.$method(How).map($name)
            }
        }
    };
}
how!(AsAny, deserialize_any);
how!(AsStr, deserialize_str);
how!(AsBytes, deserialize_bytes);
how!(AsU128, deserialize_u128);
how!(AsI128, deserialize_i128);

fn how<'a, T: Deserialize<'a>>(text: &'a str, get: fn(T) -> String) -> (String, String) {
    let ours = sansrpc::de::from_str::<T>(text)
        .map(get)
        .unwrap_or_else(|e| format!("err {e}"));
    let theirs = serde_json::from_str::<T>(text)
        .map(get)
        .unwrap_or_else(|_| "err".into());
    (ours, theirs)
}

#[test]
fn borrowed_owned_bytes_and_wide_integers_are_visited_as_serde_json_visits_them() {
    let eq = |(ours, theirs): (String, String)| {
        let ours = if ours.starts_with("err") {
            "err".to_string()
        } else {
            ours
        };
        assert_eq!(ours, theirs);
    };
    for t in [
        r#""plain""#,
        r#""esc\naped""#,
        "1",
        "-1",
        "-0",
        "1.5",
        "18446744073709551616",
        "[1,[2],3]",
    ] {
        eq(how::<AsAny>(t, |x| x.0));
        eq(how::<AsStr>(t, |x| x.0));
        eq(how::<AsBytes>(t, |x| x.0));
    }
    for t in [
        "0",
        "-0",
        "-1",
        "340282366920938463463374607431768211455",
        "-170141183460469231731687303715884105728",
        "1.0",
    ] {
        eq(how::<AsU128>(t, |x| x.0));
    }
    for t in [
        "-0",
        "-1",
        "-170141183460469231731687303715884105728",
        "1.0",
    ] {
        eq(how::<AsI128>(t, |x| x.0));
    }
    // Keys borrow as values do.
    let m: HashMap<&str, u8> = sansrpc::de::from_str(r#"{"k":1}"#).unwrap();
    assert_eq!(m["k"], 1);
    let t = r#"{"k\n":1}"#;
    assert!(sansrpc::de::from_str::<HashMap<&str, u8>>(t).is_err());
    assert!(serde_json::from_str::<HashMap<&str, u8>>(t).is_err());
}

/// A visitor that takes only `visit_i128` (as a hand-written big-integer type might).
struct OnlyI128;
impl<'de> Visitor<'de> for OnlyI128 {
    type Value = i128;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an i128")
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<i128, E> {
        Ok(v)
    }
}
#[derive(Debug, PartialEq)]
struct Big(i128);
impl<'de> Deserialize<'de> for Big {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_i128(OnlyI128).map(Big)
    }
}

#[test]
fn deserialize_i128_always_visits_i128() {
    // serde_json's deserialize_i128 always calls visit_i128 (and refuses > i128::MAX);
    // de calls visit_u128 for any number without a `-`.
    assert_eq!(serde_json::from_str::<Big>("5").unwrap(), Big(5));
    assert_eq!(sansrpc::de::from_str::<Big>("-5"), Ok(Big(-5)));
    assert_eq!(sansrpc::de::from_str::<Big>("5"), Ok(Big(5)));
}

// ---------------------------------------------------------------------------------------
// Map keys

#[test]
fn enum_map_keys_are_read() {
    // A map keyed by a unit-variant enum: serde_json reads it; de's `Key` forwards
    // `deserialize_enum` to `deserialize_any`, which hands the enum visitor a string.
    let t = r#"{"Red":1,"blue":3}"#;
    let theirs: BTreeMap<Color, u8> = serde_json::from_str(t).unwrap();
    let ours = sansrpc::de::from_str::<BTreeMap<Color, u8>>(t);
    assert_eq!(ours, Ok(theirs));
    let ours = sansrpc::de::from_str::<HashMap<Color, Value>>(r#"{"Green":null}"#);
    assert!(ours.is_ok(), "{ours:?}");
}

#[test]
fn bool_map_keys_are_read() {
    same::<BTreeMap<bool, u8>>(r#"{"true":1,"false":0}"#);
}

#[test]
fn wide_integer_map_keys_are_read() {
    same::<BTreeMap<u128, u8>>(r#"{"340282366920938463463374607431768211455":1}"#);
    same::<BTreeMap<i128, u8>>(r#"{"-170141183460469231731687303715884105728":1}"#);
}

#[test]
fn float_map_keys_are_read() {
    let t = r#"{"1.5":1,"-2":2}"#;
    let theirs: HashMap<F64Key, u8> = serde_json::from_str(t).unwrap();
    let ours = sansrpc::de::from_str::<HashMap<F64Key, u8>>(t);
    assert_eq!(ours, Ok(theirs));
}

/// An f64 usable as a map key.
#[derive(Debug, Clone, Copy, Deserialize)]
struct F64Key(f64);
impl PartialEq for F64Key {
    fn eq(&self, o: &Self) -> bool {
        self.0.to_bits() == o.0.to_bits()
    }
}
impl Eq for F64Key {}
impl std::hash::Hash for F64Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

#[test]
fn integer_keys_must_be_json_numbers() {
    // serde_json reads an integer key as a JSON number between the quotes; de uses
    // Rust's `str::parse`, which also takes `+1` and `01`, and unescapes first.
    let mut differ = Vec::new();
    for t in [
        r#"{"+1":true}"#,
        r#"{"01":true}"#,
        r#"{"\u0031":true}"#,
        r#"{"-0":true}"#,
        r#"{"1":true,"01":false}"#,
    ] {
        for ok in [
            std::panic::catch_unwind(|| same::<BTreeMap<u32, bool>>(t)),
            std::panic::catch_unwind(|| same::<BTreeMap<i64, bool>>(t)),
        ] {
            if ok.is_err() {
                differ.push(t);
            }
        }
    }
    assert!(
        differ.is_empty(),
        "accepted by de, refused by serde_json: {differ:?}"
    );
}

#[test]
fn integer_keys_that_agree() {
    for t in [
        r#"{"1":true,"2":false}"#,
        r#"{"-5":true}"#,
        r#"{"x":true}"#,
        r#"{" 1":true}"#,
        r#"{"1 ":true}"#,
        r#"{"1.0":true}"#,
        r#"{"":true}"#,
        r#"{"256":true}"#,
        r#"{"18446744073709551616":true}"#,
        r#"{"-9223372036854775808":true}"#,
        r#"{"1":true,}"#,
        r#"{"1" true}"#,
    ] {
        same::<BTreeMap<u8, bool>>(t);
        same::<BTreeMap<u64, bool>>(t);
        same::<BTreeMap<i64, bool>>(t);
        same::<BTreeMap<i8, bool>>(t);
    }
    // A newtype around an integer key reads as the integer.
    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
    struct K(u16);
    same::<BTreeMap<K, u8>>(r#"{"7":1}"#);
    same::<BTreeMap<char, u8>>(r#"{"a":1,"\u00e9":2}"#);
    same::<BTreeMap<char, u8>>(r#"{"ab":1}"#);
}

// ---------------------------------------------------------------------------------------
// 4. MapAccess / SeqAccess driven oddly

/// What a hand-written visitor does with the map or sequence it is given.
#[derive(Clone, Copy, Debug)]
enum Drive {
    /// `next_value` before any `next_key`.
    ValueFirst,
    /// `next_key` twice without a value between.
    KeyKey,
    /// One key and its value, then return.
    OneMember,
    /// One key, no value, then return.
    KeyOnly,
    /// Drain the map, then ask for a key and a value again.
    PastTheEnd,
    /// Drain to the end properly.
    All,
    /// Read one element of a sequence, then return.
    OneElement,
    /// Drain the sequence and ask again.
    SeqPastTheEnd,
}

struct Driver(Drive);
impl<'de> Visitor<'de> for Driver {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map or a sequence")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<u32, A::Error> {
        match self.0 {
            Drive::ValueFirst => {
                m.next_value::<Value>()?;
                Ok(1)
            }
            Drive::KeyKey => {
                m.next_key::<String>()?;
                m.next_key::<String>()?;
                Ok(2)
            }
            Drive::OneMember => {
                m.next_entry::<String, Value>()?;
                Ok(1)
            }
            Drive::KeyOnly => {
                m.next_key::<String>()?;
                Ok(1)
            }
            Drive::PastTheEnd | Drive::All => {
                let mut n = 0;
                while m.next_entry::<String, IgnoredAny>()?.is_some() {
                    n += 1;
                }
                if let Drive::PastTheEnd = self.0 {
                    assert!(m.next_key::<String>()?.is_none());
                    // A value with no key: must be an error, not a read past the `}`.
                    m.next_value::<Value>()?;
                }
                Ok(n)
            }
            _ => Ok(0),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<u32, A::Error> {
        match self.0 {
            Drive::OneElement => {
                s.next_element::<Value>()?;
                Ok(1)
            }
            Drive::SeqPastTheEnd | Drive::All => {
                let mut n = 0;
                while s.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                if let Drive::SeqPastTheEnd = self.0 {
                    assert!(s.next_element::<Value>()?.is_none());
                    assert!(s.next_element::<Value>()?.is_none());
                }
                Ok(n)
            }
            _ => Ok(0),
        }
    }
}

/// Drives `text` with `how` under both decoders; returns (ours, serde_json's) results.
fn drive(text: &str, how: Drive) -> (Result<u32, String>, Result<u32, String>) {
    struct D(u32);
    thread_local!(static HOW: std::cell::Cell<Option<Drive>> = const { std::cell::Cell::new(None) });
    impl<'de> Deserialize<'de> for D {
        fn deserialize<De: de::Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
            let how = HOW.with(|h| h.get()).unwrap();
            d.deserialize_any(Driver(how)).map(D)
        }
    }
    HOW.with(|h| h.set(Some(how)));
    let ours = sansrpc::de::from_str::<Vec<D>>(&format!("[{text}]"))
        .map(|v| v[0].0)
        .map_err(|e| e.to_string());
    let theirs = serde_json::from_str::<Vec<D>>(&format!("[{text}]"))
        .map(|v| v[0].0)
        .map_err(|e| e.to_string());
    (ours, theirs)
}

#[test]
fn odd_visitors_get_errors_not_a_misplaced_scanner() {
    let map = r#"{"a":1,"b":[2]}"#;
    for how in [
        Drive::ValueFirst,
        Drive::KeyKey,
        Drive::OneMember,
        Drive::KeyOnly,
        Drive::PastTheEnd,
    ] {
        let (ours, theirs) = drive(map, how);
        assert!(ours.is_err(), "{how:?}: {ours:?}");
        assert!(theirs.is_err(), "{how:?}: serde_json {theirs:?}");
    }
    assert_eq!(drive(map, Drive::All), (Ok(2), Ok(2)));
    assert_eq!(drive("{}", Drive::All), (Ok(0), Ok(0)));
    let (ours, _) = drive("{}", Drive::ValueFirst);
    assert!(ours.is_err());
    let (ours, _) = drive("{}", Drive::PastTheEnd);
    assert!(ours.is_err());
    let seq = "[1,[2],{}]";
    let (ours, theirs) = drive(seq, Drive::OneElement);
    assert!(ours.is_err() && theirs.is_err());
    assert_eq!(drive(seq, Drive::SeqPastTheEnd), (Ok(3), Ok(3)));
    assert_eq!(drive("[]", Drive::SeqPastTheEnd), (Ok(0), Ok(0)));
    // Trailing commas are caught by the access, whoever drives it.
    for t in [
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "{\"a\" 1}",
    ] {
        let (ours, theirs) = drive(t, Drive::All);
        assert!(ours.is_err() && theirs.is_err(), "{t}: {ours:?} {theirs:?}");
    }
}

#[test]
fn type_errors_do_not_echo_the_peer_text() {
    // `de`'s invalid-type messages name what was expected, not the value found.
    let secret = "SECRET<script>";
    for t in [
        format!(r#""{secret}""#),
        format!(r#"{{"x":"{secret}","y":1}}"#),
        format!(r#"{{"{secret}":1}}"#),
    ] {
        for e in [
            sansrpc::de::from_str::<i64>(&t).unwrap_err(),
            sansrpc::de::from_str::<Point>(&t).unwrap_err(),
            sansrpc::de::from_str::<BTreeMap<u32, u8>>(&t).unwrap_err(),
        ] {
            assert!(!e.message().contains(secret), "{}", e.message());
        }
    }
}

// ---------------------------------------------------------------------------------------
// End to end: typed params through the router (serde_json with the default feature
// `serde-json-params`, `de` without it). The answer must not depend on the feature.

#[derive(Deserialize)]
struct Weights {
    by_color: BTreeMap<Color, u32>,
}
enum Total {}
impl sansrpc::method::Method for Total {
    const NAME: &'static str = "total";
    type Params = Weights;
    type Result = u32;
}

fn call_total(params: &str) -> Result<Value, i64> {
    use sansrpc::router::{Reply, Router};
    let mut r = Router::new();
    r.method::<Total, _>(|p| Ok(p.by_color.values().sum()))
        .unwrap();
    let req = sansrpc::Request {
        id: Id::number(1),
        method: "total".to_owned().into(),
        params: Some(
            sansrpc::RawValue::from_string(params.to_owned())
                .unwrap()
                .into(),
        ),
        version: sansrpc::Version::V2,
    };
    let mut reply = Reply::default();
    r.dispatch(&req, &mut reply);
    match reply.error() {
        Some(e) => Err(e.code),
        None => Ok(serde_json::from_str(reply.result_json().unwrap()).unwrap()),
    }
}

#[test]
fn enum_keyed_params_decode_with_either_decoder() {
    // Passes with default features; fails with `--no-default-features` (-32602).
    assert_eq!(
        call_total(r#"{"by_color":{"Red":2,"blue":3}}"#),
        Ok(Value::from(5))
    );
}
