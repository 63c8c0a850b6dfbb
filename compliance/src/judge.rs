//! Judging what a server answered, by the rules of JSON-RPC 2.0 sections 5 and 6, with
//! serde_json and nothing of the core's: the checker must not share the bugs it looks for.

use core::fmt;
use std::borrow::ToOwned;
use std::boxed::Box;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// One expected response inside a single answer or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An error object with this code, and this id token.
    Error {
        /// The required code.
        code: i64,
        /// The id token, exactly as it must be echoed (`null` when the id was unknown).
        id: String,
    },
    /// A result equal to this value (numbers compared as numbers), and this id token.
    Result {
        /// The required result.
        value: Value,
        /// The id token.
        id: String,
    },
    /// A response with this id token, a result or an error of any code: for an entry whose
    /// code another case judges (a request for an unknown method inside a batch, whose
    /// `-32601` is the error-code cases' to judge).
    Any {
        /// The id token.
        id: String,
    },
}

impl Item {
    fn id(&self) -> &str {
        match self {
            Item::Error { id, .. } | Item::Result { id, .. } | Item::Any { id } => id,
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Error { code, id } => write!(f, "error {code} with id {id}"),
            Item::Result { value, id } => write!(f, "result {value} with id {id}"),
            Item::Any { id } => write!(f, "a response with id {id}"),
        }
    }
}

/// What the specification requires in answer to one input.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// No response at all (notifications, all-notification batches).
    Nothing,
    /// One response object (not an array).
    Single(Item),
    /// One array holding exactly these responses, in any order.
    Batch(Vec<Item>),
    /// Hostile input the server may answer with error objects (id `null`, or `id` when
    /// given), a response to the request in it (id `id`), or nothing; on a socket it may
    /// also close the connection. It must keep answering either way.
    Tolerated {
        /// The id of the request inside the input, if it has one.
        id: Option<String>,
    },
    /// Valid JSON nested deeper than a server may parse: a `-32700` or `-32600` error with
    /// id `null` (the server's depth limit), or the answer `normal` (a server with no limit).
    Deep {
        /// What a server without a depth limit answers.
        normal: Box<Expect>,
    },
    /// One well-formed response object with this id, a result or an error of any code: a
    /// valid request for one of the server's own methods, whose results only the server
    /// knows ([`Input::calling`](super::Input::calling)).
    Any {
        /// The id token.
        id: String,
    },
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Nothing => f.write_str("no response"),
            Expect::Single(item) => item.fmt(f),
            Expect::Batch(items) => {
                f.write_str("an array of [")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    item.fmt(f)?;
                }
                f.write_str("]")
            }
            Expect::Tolerated { .. } => {
                f.write_str("an error response, or no response, and the server alive")
            }
            Expect::Deep { normal } => write!(
                f,
                "error -32700 or -32600 with id null (nesting beyond the server's limit), or {normal} (no limit)"
            ),
            Expect::Any { id } => write!(f, "a response (result or error) with id {id}"),
        }
    }
}

/// The members of one JSON object in order, values as raw text; duplicates kept.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// One response object, checked for shape.
#[derive(Debug)]
struct Response {
    /// The id token as written, when present.
    id: Option<String>,
    /// The result or error, when the response is well formed.
    outcome: Result<Outcome, String>,
}

/// A well-formed response's content.
#[derive(Debug)]
enum Outcome {
    /// `result`.
    Result(Value),
    /// `error.code`.
    Error(i64),
}

/// Reads one response object; shape faults go in `outcome`.
fn response(raw: &RawValue) -> Response {
    let members = match serde_json::from_str::<Members>(raw.get()) {
        Ok(m) => m.0,
        Err(_) => {
            return Response {
                id: None,
                outcome: Err(format!("not a response object: {}", raw.get())),
            }
        }
    };
    let get = |name: &str| {
        let mut found = members.iter().filter(|(k, _)| k == name);
        let first = found.next().map(|(_, v)| v);
        (first, found.next().is_some())
    };
    let (id, dup_id) = get("id");
    let id = id.map(|v| v.get().to_owned());
    let shape = || -> Result<Outcome, String> {
        let (version, dup_version) = get("jsonrpc");
        let (result, dup_result) = get("result");
        let (error, dup_error) = get("error");
        if dup_id || dup_version || dup_result || dup_error {
            return Err("a member appears twice".into());
        }
        match version.map(|v| v.get()) {
            Some("\"2.0\"") => {}
            Some(other) => return Err(format!("\"jsonrpc\" is {other}, not \"2.0\"")),
            None => return Err("\"jsonrpc\" is missing".into()),
        }
        if id.is_none() {
            return Err("\"id\" is missing (it is required, null when unknown)".into());
        }
        match (result, error) {
            (Some(_), Some(_)) => Err("both \"result\" and \"error\"".into()),
            (None, None) => Err("neither \"result\" nor \"error\"".into()),
            (Some(result), None) => serde_json::from_str(result.get())
                .map(Outcome::Result)
                .map_err(|e| format!("result does not parse: {e}")),
            (None, Some(error)) => error_code(error).map(Outcome::Error),
        }
    };
    Response {
        outcome: shape(),
        id,
    }
}

/// The code of an error object, checked for shape (§5.1).
fn error_code(error: &RawValue) -> Result<i64, String> {
    let members = serde_json::from_str::<Members>(error.get())
        .map_err(|_| format!("\"error\" is not an object: {}", error.get()))?
        .0;
    let get = |name: &str| {
        members
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.get())
    };
    let code = get("code").ok_or("the error object has no \"code\"")?;
    let code: i64 = code
        .parse()
        .map_err(|_| format!("the error code {code} is not an integer"))?;
    match get("message") {
        Some(m) if m.starts_with('"') => Ok(code),
        Some(m) => Err(format!("the error message {m} is not a string")),
        None => Err("the error object has no \"message\"".into()),
    }
}

/// A frame as responses: one object, or an array of them.
enum Answer {
    /// One response object.
    Single(Response),
    /// An array (of possibly malformed responses).
    Batch(Vec<Response>),
}

/// Reads a frame.
fn parse(frame: &[u8]) -> Result<Answer, String> {
    let text = core::str::from_utf8(frame).map_err(|_| "the response is not UTF-8".to_owned())?;
    let raw: Box<RawValue> =
        serde_json::from_str(text).map_err(|e| format!("the response is not JSON: {e}"))?;
    match text.trim_start().as_bytes().first() {
        Some(b'[') => {
            let items: Vec<Box<RawValue>> = serde_json::from_str(raw.get())
                .map_err(|e| format!("the response array does not parse: {e}"))?;
            Ok(Answer::Batch(items.iter().map(|r| response(r)).collect()))
        }
        _ => Ok(Answer::Single(response(&raw))),
    }
}

/// The id token of a response, when the frame is one response object that has one (a
/// driver waiting for the answer to a probe request of its own picks it out by this).
pub fn single_id(frame: &[u8]) -> Option<String> {
    match parse(frame) {
        Ok(Answer::Single(r)) => r.id,
        _ => None,
    }
}

/// Numbers compare as numbers (`7` and `7.0` are the same result), everything else exactly.
pub(super) fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The digits of a JSON number token, exact: `(negative, digits without leading or
/// trailing zeros, exponent of the last digit)`; zero of either sign is `(false, "", 0)`.
fn decimal(token: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all = format!("{int}{frac}");
    let mut exponent = exponent.checked_sub(frac.len() as i64)?;
    let trimmed = all.trim_start_matches('0');
    let digits = trimmed.trim_end_matches('0');
    exponent = exponent.checked_add((trimmed.len() - digits.len()) as i64)?;
    if digits.is_empty() {
        return Some((false, String::new(), 0));
    }
    Some((negative, digits.to_owned(), exponent))
}

/// True when two id tokens are the same JSON value: strings compared after unescaping,
/// numbers compared exactly as decimal values (`-0` is `0`, `1e3` is `1000`, and
/// `2^70` is not the nearest double), everything else as parsed JSON.
pub(super) fn same_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (decimal(a), decimal(b)) {
        return x == y;
    }
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(Value::Number(_)), _) | (_, Ok(Value::Number(_))) => false,
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether `response` carries the id `sent`: `Err` says why not; `Ok(Some(advice))` when it
/// is the same value written differently (byte-for-byte echo is advice).
fn echoed(response: &Response, sent: &str) -> Result<Option<String>, String> {
    let id = response.id.as_deref().unwrap_or("");
    if id == sent {
        return Ok(None);
    }
    if !same_id(id, sent) {
        return Err(format!("id is {id}, expected {sent}"));
    }
    Ok(Some(format!(
        "id echoed as {id}, sent as {sent}: the same value written differently (advice: echo the id byte for byte)"
    )))
}

/// Whether `response` is `item`: `Err` says why not; `Ok(Some(advice))` when it is, but
/// the id came back as the same value written differently (byte-for-byte echo is advice).
fn mismatch(item: &Item, response: &Response) -> Result<Option<String>, String> {
    let outcome = match &response.outcome {
        Ok(outcome) => outcome,
        Err(why) => return Err(format!("malformed response: {why}")),
    };
    let advice = echoed(response, item.id())?;
    let wrong = match (item, outcome) {
        (Item::Any { .. }, _) => None,
        (Item::Error { code, .. }, Outcome::Error(got)) if got == code => None,
        (Item::Error { code, .. }, Outcome::Error(got)) => {
            Some(format!("error code {got}, expected {code}"))
        }
        (Item::Error { code, .. }, Outcome::Result(v)) => {
            Some(format!("a result ({v}), expected error {code}"))
        }
        (Item::Result { value, .. }, Outcome::Result(got)) if same_json(value, got) => None,
        (Item::Result { value, .. }, Outcome::Result(got)) => {
            Some(format!("result {got}, expected {value}"))
        }
        (Item::Result { value, .. }, Outcome::Error(code)) => {
            Some(format!("error {code}, expected result {value}"))
        }
    };
    wrong.map_or(Ok(advice), Err)
}

/// Judges one received frame against what was required: `Err` says why it fails,
/// `Ok(Some(advice))` that it passes with advice.
pub fn judge(expect: &Expect, frame: &[u8]) -> Result<Option<String>, String> {
    let answer = parse(frame)?;
    match (expect, answer) {
        (Expect::Nothing, _) => Err("answered, but nothing may be answered".into()),
        (Expect::Deep { normal }, Answer::Single(r)) => {
            let limit = [-32700, -32600].iter().find_map(|&code| {
                let item = Item::Error {
                    code,
                    id: "null".into(),
                };
                mismatch(&item, &r).ok()
            });
            match limit {
                Some(advice) => Ok(advice),
                None => judge(normal, frame).map_err(|why| {
                    format!("{why} (nor is it error -32700 or -32600 with id null)")
                }),
            }
        }
        (Expect::Deep { normal }, Answer::Batch(_)) => judge(normal, frame),
        (Expect::Single(item), Answer::Single(r)) => mismatch(item, &r),
        (Expect::Single(item), Answer::Batch(_)) => Err(format!(
            "answered with an array, expected one response: {item}"
        )),
        (Expect::Batch(_), Answer::Single(_)) => {
            Err("answered with one response object, expected an array".into())
        }
        (Expect::Batch(items), Answer::Batch(responses)) => batch(items, &responses),
        (Expect::Any { id }, Answer::Single(r)) => match &r.outcome {
            Ok(_) => echoed(&r, id),
            Err(why) => Err(format!("malformed response: {why}")),
        },
        (Expect::Any { id }, Answer::Batch(_)) => Err(format!(
            "answered with an array, expected one response with id {id}"
        )),
        (Expect::Tolerated { id }, answer) => {
            let responses = match answer {
                Answer::Single(r) => vec![r],
                Answer::Batch(rs) => rs,
            };
            for r in &responses {
                if let Err(why) = &r.outcome {
                    return Err(format!("malformed response: {why}"));
                }
                let rid = r.id.as_deref().unwrap_or("");
                if rid != "null" && !id.as_deref().is_some_and(|id| same_id(rid, id)) {
                    return Err(format!("answered with id {rid}, which was never sent"));
                }
            }
            Ok(None)
        }
    }
}

fn batch(items: &[Item], responses: &[Response]) -> Result<Option<String>, String> {
    if responses.is_empty() {
        return Err("answered with an empty array (send nothing instead)".into());
    }
    if responses.len() != items.len() {
        return Err(format!(
            "{} responses in the array, expected {}",
            responses.len(),
            items.len()
        ));
    }
    let mut used = vec![false; responses.len()];
    let mut advice = None;
    for item in items {
        let found = responses
            .iter()
            .enumerate()
            .filter(|(i, _)| !used[*i])
            .find_map(|(i, r)| mismatch(item, r).ok().map(|a| (i, a)));
        match found {
            Some((i, a)) => {
                used[i] = true;
                advice = advice.or(a);
            }
            None => {
                // Explain with the response carrying the same id, if there is one.
                let same_id = responses
                    .iter()
                    .enumerate()
                    .find(|(i, r)| !used[*i] && r.id.as_deref() == Some(item.id()));
                return Err(match same_id {
                    Some((_, r)) => {
                        format!(
                            "for {item}: {}",
                            mismatch(item, r).err().unwrap_or_default()
                        )
                    }
                    None => format!("no response matches {item}"),
                });
            }
        }
    }
    Ok(advice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(code: i64, id: &str) -> Item {
        Item::Error {
            code,
            id: id.into(),
        }
    }

    fn with_id(id: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"x"}},"id":{id}}}"#)
            .into_bytes()
    }

    #[test]
    fn ids_must_be_the_same_value_and_byte_for_byte_is_advice() {
        let e = Expect::Single(err(-32601, "1e3"));
        assert_eq!(judge(&e, &with_id("1e3")), Ok(None));
        let advice = judge(&e, &with_id("1000.0")).unwrap().unwrap();
        assert!(advice.contains("written differently"), "{advice}");
        for (sent, back) in [
            (r#""\u00e9""#, "\"é\""),
            ("-0", "0"),
            (r#""\/""#, r#""/""#),
            ("1.50", "1.5"),
            ("2E+2", "200"),
        ] {
            let e = Expect::Single(err(-32601, sent));
            assert!(
                judge(&e, &with_id(back)).unwrap().is_some(),
                "{sent} {back}"
            );
        }
        for (sent, back) in [
            ("1", "\"1\""),
            ("1.5", "1"),
            // 2^70 and the double nearest to it are different decimal values.
            ("1180591620717411303424", "1.1805916207174113e+21"),
            ("\"a\"", "\"A\""),
            ("null", "0"),
        ] {
            let e = Expect::Single(err(-32601, sent));
            assert!(judge(&e, &with_id(back)).is_err(), "{sent} {back}");
        }
    }

    #[test]
    fn deep_input_may_be_refused_as_parse_error_or_invalid_request() {
        let e = Expect::Deep {
            normal: Box::new(Expect::Single(err(-32601, "\"deep\""))),
        };
        let refused = |code: i64| {
            format!(r#"{{"jsonrpc":"2.0","error":{{"code":{code},"message":"x"}},"id":null}}"#)
        };
        assert_eq!(judge(&e, refused(-32700).as_bytes()), Ok(None));
        assert_eq!(judge(&e, refused(-32600).as_bytes()), Ok(None));
        assert!(judge(&e, refused(-32603).as_bytes()).is_err());
        assert_eq!(judge(&e, &with_id("\"deep\"")), Ok(None));
    }

    #[test]
    fn shapes_are_checked() {
        let e = Expect::Single(err(-32600, "null"));
        let no_version = br#"{"error":{"code":-32600,"message":"x"},"id":null}"#;
        assert!(judge(&e, no_version).unwrap_err().contains("jsonrpc"));
        let no_id = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"}}"#;
        assert!(judge(&e, no_id).unwrap_err().contains("\"id\" is missing"));
        let both =
            br#"{"jsonrpc":"2.0","result":1,"error":{"code":-32600,"message":"x"},"id":null}"#;
        assert!(judge(&e, both).unwrap_err().contains("both"));
        let bad_code = br#"{"jsonrpc":"2.0","error":{"code":"x","message":"x"},"id":null}"#;
        assert!(judge(&e, bad_code).unwrap_err().contains("not an integer"));
    }

    #[test]
    fn batches_match_in_any_order() {
        let e = Expect::Batch(vec![err(-32601, "\"a\""), err(-32600, "null")]);
        let got = br#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"},"id":null},
                      {"jsonrpc":"2.0","error":{"code":-32601,"message":"x"},"id":"a"}]"#;
        assert_eq!(judge(&e, got), Ok(None));
        let single = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"},"id":null}"#;
        assert!(judge(&e, single).is_err());
    }

    #[test]
    fn results_compare_numbers_as_numbers() {
        let e = Expect::Single(Item::Result {
            value: serde_json::json!(19),
            id: "1".into(),
        });
        assert_eq!(
            judge(&e, br#"{"jsonrpc":"2.0","result":19.0,"id":1}"#),
            Ok(None)
        );
        assert!(judge(&e, br#"{"jsonrpc":"2.0","result":-19,"id":1}"#).is_err());
    }
}
