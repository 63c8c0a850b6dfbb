//! Random valid and invalid messages from a small grammar, the answer each one requires
//! (predicted here by the rules of sections 4 to 6, independently of the core), and
//! shrinking of an input that gets a wrong answer.
//!
//! Messages only ever name methods under [`METHOD_PREFIX`], which no server implements, so
//! the required answer never depends on the server's methods. Inputs whose reading the
//! specification leaves open (duplicate members, unknown members, lone surrogate escapes,
//! bytes that are not UTF-8, two requests with the same id in one batch) are never
//! generated here; [`Input`](super::Input) adds them, with lenient expectations.

use std::borrow::ToOwned;
use std::format;
use std::string::{String, ToString};
use std::vec;
use std::vec::Vec;

use serde::de::IgnoredAny;

use super::judge::{same_json, Expect, Item};
use sansrpc::codec::Framing;

pub(super) const INVALID: i64 = -32600;
pub(super) const NOT_FOUND: i64 = -32601;
const PARSE: i64 = -32700;

/// Every generated method name starts with this, and shrinking keeps it: no server
/// implements such a method, so every request must be answered `-32601` Method not found.
pub const METHOD_PREFIX: &str = "sansrpc.check.";
const PREFIX: &str = METHOD_PREFIX;

/// Where a [`Gen`] takes its choices from.
pub trait Entropy {
    /// A number in `0..n` (0 when `n` is 0 or 1).
    fn below(&mut self, n: u64) -> u64;
}

/// SplitMix64: small, fast, and the same sequence for a seed on every platform and in
/// every version of this crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Entropy for Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The fuzzer's bytes choose: each choice takes as few bytes as its range needs, and once
/// they run out every choice is 0 (so generation always ends).
impl Entropy for arbitrary::Unstructured<'_> {
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        self.int_in_range(0..=n - 1).unwrap_or(0)
    }
}

impl<E: Entropy + ?Sized> Entropy for &mut E {
    fn below(&mut self, n: u64) -> u64 {
        (**self).below(n)
    }
}

/// A JSON value with its tokens kept as written: numbers as text, strings as their escaped
/// contents.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number token.
    Num(String),
    /// A string's contents, escapes as written.
    Str(String),
    /// An array.
    Arr(Vec<J>),
    /// An object, members in order, keys as escaped contents ([`Gen`] never repeats one).
    Obj(Vec<(String, J)>),
}

impl J {
    fn render(&self, spaced: bool, out: &mut String) {
        let (comma, colon) = if spaced { (", ", ": ") } else { (",", ":") };
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(n) => out.push_str(n),
            J::Str(s) => {
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    item.render(spaced, out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    out.push('"');
                    out.push_str(k);
                    out.push('"');
                    out.push_str(colon);
                    v.render(spaced, out);
                }
                out.push('}');
            }
        }
    }

    /// The compact text.
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        self.render(false, &mut out);
        out
    }

    pub(super) fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// One generated input.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// Valid JSON, written compactly or with spaces.
    Tree(J, bool),
    /// Text that is not JSON.
    Text(String),
}

impl Msg {
    /// The body sent.
    pub fn body(&self) -> Vec<u8> {
        match self {
            Msg::Tree(j, spaced) => {
                let mut out = String::new();
                j.render(*spaced, &mut out);
                out.into_bytes()
            }
            Msg::Text(t) => t.clone().into_bytes(),
        }
    }

    /// The answer the specification requires.
    pub fn expect(&self) -> Expect {
        match self {
            Msg::Text(_) => Expect::Single(error(PARSE, "null")),
            Msg::Tree(J::Arr(items), _) if items.is_empty() => {
                Expect::Single(error(INVALID, "null"))
            }
            Msg::Tree(J::Arr(items), _) => {
                let answers: Vec<Item> = items.iter().filter_map(entry).collect();
                if answers.is_empty() {
                    Expect::Nothing
                } else {
                    Expect::Batch(answers)
                }
            }
            Msg::Tree(j, _) => entry(j).map_or(Expect::Nothing, Expect::Single),
        }
    }

    /// Smaller inputs to try, largest reductions first.
    pub fn shrink(&self, framing: Framing) -> Vec<Msg> {
        match self {
            Msg::Text(t) => shrink_text(t)
                .into_iter()
                .filter(|t| not_json(t.as_bytes(), framing))
                .map(Msg::Text)
                .collect(),
            Msg::Tree(j, spaced) => {
                let mut out = Vec::new();
                if *spaced {
                    out.push(Msg::Tree(j.clone(), false));
                }
                if let J::Arr(items) = j {
                    out.extend(items.iter().map(|e| Msg::Tree(e.clone(), *spaced)));
                }
                out.extend(shrink_j(j).into_iter().map(|j| Msg::Tree(j, *spaced)));
                out.retain(|m| match m {
                    Msg::Tree(j, _) => methods_stay_unknown(j) && ids_distinct(j),
                    Msg::Text(_) => true,
                });
                out
            }
        }
    }
}

pub(super) fn error(code: i64, id: &str) -> Item {
    Item::Error {
        code,
        id: id.to_owned(),
    }
}

/// The answer one entry (a message, or a batch element) requires: `None` for a valid
/// notification.
pub(super) fn entry(j: &J) -> Option<Item> {
    if !matches!(j, J::Obj(_)) {
        return Some(error(INVALID, "null"));
    }
    let id = j.get("id");
    let id_valid = matches!(id, None | Some(J::Num(_) | J::Str(_) | J::Null));
    let reply_id = match id {
        Some(v) if id_valid => v.text(),
        _ => "null".to_owned(),
    };
    let version_ok = matches!(j.get("jsonrpc"), Some(J::Str(s)) if s == "2.0");
    let method_ok = matches!(j.get("method"), Some(J::Str(_)));
    let params_ok = matches!(j.get("params"), None | Some(J::Arr(_) | J::Obj(_)));
    if !(id_valid && version_ok && method_ok && params_ok) {
        return Some(error(INVALID, &reply_id));
    }
    id.map(|_| error(NOT_FOUND, &reply_id))
}

/// Every entry's method, when it is a string, is one no server implements.
fn methods_stay_unknown(j: &J) -> bool {
    let ok = |e: &J| match e.get("method") {
        Some(J::Str(m)) => m.starts_with(PREFIX),
        _ => true,
    };
    match j {
        J::Arr(items) => items.iter().all(ok),
        other => ok(other),
    }
}

/// The id of a batch entry that is a request with a valid id, as a value.
fn request_id(e: &J) -> Option<serde_json::Value> {
    match e.get("id")? {
        id @ (J::Num(_) | J::Str(_) | J::Null) => serde_json::from_str(&id.text()).ok(),
        _ => None,
    }
}

/// No two entries of a batch carry the same id (by value): what a server does with a
/// second request whose id is in flight is not the specification's to say.
fn ids_distinct(j: &J) -> bool {
    let J::Arr(items) = j else { return true };
    let ids: Vec<serde_json::Value> = items.iter().filter_map(request_id).collect();
    ids.iter()
        .enumerate()
        .all(|(i, a)| ids[..i].iter().all(|b| !same_json(a, b)))
}

/// True when `text`, as it goes on the wire, is not JSON (and not blank, which newline
/// framing would skip).
fn not_json(text: &[u8], framing: Framing) -> bool {
    let wire: Vec<u8> = match framing {
        Framing::Newline => text
            .iter()
            .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
            .collect(),
        _ => text.to_vec(),
    };
    !wire.iter().all(u8::is_ascii_whitespace)
        && serde_json::from_slice::<IgnoredAny>(&wire).is_err()
}

/// Escaped string contents split into units: one character, or one escape sequence.
fn units(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let len = match c {
            '\\' if rest[1..].starts_with('u') => 6.min(rest.len()),
            '\\' => 2.min(rest.len()),
            c => c.len_utf8(),
        };
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

fn shrink_str(s: &str) -> Vec<String> {
    let u = units(s);
    if u.is_empty() {
        return Vec::new();
    }
    let mut out = vec![String::new()];
    if u.len() > 2 {
        out.push(u[..u.len() / 2].concat());
        out.push(u[u.len() / 2..].concat());
    }
    for i in 0..u.len().min(12) {
        let mut v = u.clone();
        v.remove(i);
        out.push(v.concat());
    }
    out
}

fn shrink_j(j: &J) -> Vec<J> {
    let mut out = Vec::new();
    match j {
        J::Arr(items) => {
            for i in 0..items.len() {
                let mut v = items.clone();
                v.remove(i);
                out.push(J::Arr(v));
            }
            for (i, item) in items.iter().enumerate() {
                for smaller in shrink_j(item) {
                    let mut v = items.clone();
                    v[i] = smaller;
                    out.push(J::Arr(v));
                }
            }
        }
        J::Obj(members) => {
            for i in 0..members.len() {
                let mut v = members.clone();
                v.remove(i);
                out.push(J::Obj(v));
            }
            for (i, (_, value)) in members.iter().enumerate() {
                for smaller in shrink_j(value) {
                    let mut v = members.clone();
                    v[i].1 = smaller;
                    out.push(J::Obj(v));
                }
            }
        }
        J::Str(s) => out.extend(shrink_str(s).into_iter().map(J::Str)),
        J::Num(n) if n != "0" => out.push(J::Num("0".into())),
        J::Num(_) | J::Null | J::Bool(_) => {}
    }
    out
}

/// Shorter texts, at character boundaries.
fn shrink_text(t: &str) -> Vec<String> {
    let chars: Vec<char> = t.chars().collect();
    let n = chars.len();
    let mut out = Vec::new();
    let mut chunk = n / 2;
    while chunk >= 1 {
        let mut start = 0;
        while start < n {
            let end = (start + chunk).min(n);
            let candidate: String = chars[..start].iter().chain(&chars[end..]).collect();
            if !candidate.is_empty() {
                out.push(candidate);
            }
            start = end;
        }
        if chunk == 1 {
            break;
        }
        chunk /= 2;
    }
    out
}

/// Generates messages: from a seed ([`Gen::new`], the same messages for a seed on every
/// platform), or from any [`Entropy`], such as a fuzzer's
/// [`Unstructured`](arbitrary::Unstructured) bytes ([`Gen::with_entropy`]).
#[derive(Debug)]
pub struct Gen<E = Rng> {
    rng: E,
    framing: Framing,
}

const STRING_UNITS: &[&str] = &[
    "a", "b", "z", "0", " ", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\u0000", "é", "日",
    "🎉",
];
const SURROGATE_PAIR: &str = "\\ud83d\\ude00";
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-7",
    "1.5",
    "-2.25",
    "1e3",
    "1E+2",
    "2.5e-3",
    "0.0",
    "123456789012345678901234567890",
    "-18446744073709551616",
];
const NAMES: &[&str] = &[
    "unknown",
    "x",
    "a/b",
    "é",
    "\\u00e9",
    "with space",
    "\\\"q\\\"",
    "",
];

impl Gen {
    /// A generator for `seed`; malformed texts are checked against `framing`.
    pub fn new(seed: u64, framing: Framing) -> Gen {
        Gen::with_entropy(Rng::new(seed), framing)
    }
}

impl<E: Entropy> Gen<E> {
    /// A generator taking its choices from `entropy`; malformed texts are checked against
    /// `framing`.
    pub fn with_entropy(entropy: E, framing: Framing) -> Gen<E> {
        Gen {
            rng: entropy,
            framing,
        }
    }

    /// A number in `0..n`.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.below(items.len() as u64) as usize]
    }

    pub(super) fn string(&mut self, surrogates: bool, max: u64) -> String {
        let len = self.rng.below(max + 1);
        (0..len)
            .map(|_| {
                if surrogates && self.rng.below(20) == 0 {
                    SURROGATE_PAIR
                } else {
                    *self.pick(STRING_UNITS)
                }
            })
            .collect()
    }

    pub(super) fn number(&mut self) -> String {
        match self.rng.below(4) {
            0 => (self.rng.below(2_000_001) as i64 - 1_000_000).to_string(),
            1 => format!("{}.{}", self.rng.below(1000), self.rng.below(100)),
            _ => self.pick(NUMBERS).to_string(),
        }
    }

    pub(super) fn value(&mut self, depth: u32, surrogates: bool) -> J {
        let kinds = if depth == 0 { 4 } else { 6 };
        match self.rng.below(kinds) {
            0 => J::Null,
            1 => J::Bool(self.rng.below(2) == 0),
            2 => J::Num(self.number()),
            3 => J::Str(self.string(surrogates, 6)),
            4 => J::Arr(
                (0..self.rng.below(4))
                    .map(|_| self.value(depth - 1, surrogates))
                    .collect(),
            ),
            _ => J::Obj(
                (0..self.rng.below(4))
                    .map(|i| (format!("k{i}"), self.value(depth - 1, surrogates)))
                    .collect(),
            ),
        }
    }

    fn method(&mut self) -> String {
        let name = if self.rng.below(2) == 0 {
            self.pick(NAMES).to_string()
        } else {
            self.string(false, 5)
        };
        format!("{PREFIX}{name}")
    }

    pub(super) fn entry(&mut self, surrogates: bool) -> J {
        if self.rng.below(100) < 8 {
            return self.value(2, surrogates);
        }
        let mut members = Vec::new();
        let version = match self.rng.below(100) {
            0..=84 => Some(J::Str("2.0".into())),
            85..=89 => None,
            90..=92 => Some(J::Str("1.0".into())),
            93..=95 => Some(J::Num("2.0".into())),
            96..=97 => Some(J::Null),
            _ => Some(J::Str("2.0 ".into())),
        };
        let method = match self.rng.below(100) {
            0..=86 => Some(J::Str(self.method())),
            87..=90 => None,
            91..=94 => Some(J::Num(self.number())),
            95..=97 => Some(J::Null),
            _ => Some(J::Arr(Vec::new())),
        };
        let params = match self.rng.below(100) {
            0..=44 => None,
            45..=64 => Some(J::Arr(
                (0..self.rng.below(4))
                    .map(|_| self.value(2, surrogates))
                    .collect(),
            )),
            65..=84 => Some(J::Obj(
                (0..self.rng.below(4))
                    .map(|i| (format!("p{i}"), self.value(2, surrogates)))
                    .collect(),
            )),
            _ => Some(self.value(0, surrogates)),
        };
        let id = match self.rng.below(100) {
            0..=19 => None,
            20..=49 => Some(J::Num(self.number())),
            50..=79 => Some(J::Str(self.string(surrogates, 8))),
            80..=84 => Some(J::Null),
            85..=89 => Some(J::Bool(self.rng.below(2) == 0)),
            90..=94 => Some(J::Obj(Vec::new())),
            _ => Some(J::Arr(vec![J::Num("1".into())])),
        };
        for (key, value) in [
            ("jsonrpc", version),
            ("method", method),
            ("params", params),
            ("id", id),
        ] {
            if let Some(value) = value {
                members.push((key.to_owned(), value));
            }
        }
        // Member order does not matter; shuffle it.
        for i in (1..members.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            members.swap(i, j);
        }
        J::Obj(members)
    }

    fn tree(&mut self, surrogates: bool) -> J {
        if self.rng.below(100) < 18 {
            let len = match self.rng.below(10) {
                0 => 0,
                _ => 1 + self.rng.below(5),
            };
            let mut entries: Vec<J> = (0..len).map(|_| self.entry(surrogates)).collect();
            // Give a repeated id a fresh, unique one.
            for i in 0..entries.len() {
                let repeated = request_id(&entries[i]).is_some_and(|id| {
                    entries[..i]
                        .iter()
                        .filter_map(request_id)
                        .any(|b| same_json(&id, &b))
                });
                if let (true, J::Obj(members)) = (repeated, &mut entries[i]) {
                    for (k, v) in members.iter_mut() {
                        if k == "id" {
                            *v = J::Num(format!("{}", 900_000_000 + i));
                        }
                    }
                }
            }
            J::Arr(entries)
        } else {
            self.entry(surrogates)
        }
    }

    fn malformed(&mut self) -> String {
        for _ in 0..16 {
            let base = self.tree(false).text();
            let chars: Vec<char> = base.chars().collect();
            let at = self.rng.below(chars.len() as u64) as usize;
            let junk = *self.pick(&['{', '}', '[', ']', ',', ':', '"', '\\', 'x', '\'']);
            let text: String = match self.rng.below(4) {
                0 => chars[..at.max(1)].iter().collect(),
                1 => {
                    let mut c = chars.clone();
                    c.insert(at, junk);
                    c.into_iter().collect()
                }
                2 => {
                    let mut c = chars.clone();
                    c.remove(at);
                    c.into_iter().collect()
                }
                _ => format!("{base}{junk}"),
            };
            if not_json(text.as_bytes(), self.framing) {
                return text;
            }
        }
        "{".to_owned()
    }

    /// The next message: valid and invalid requests, notifications and batches (empty,
    /// nested, mixed), ids of every kind, and texts that are not JSON.
    pub fn message(&mut self) -> Msg {
        if self.rng.below(100) < 12 {
            return Msg::Text(self.malformed());
        }
        let spaced = self.rng.below(5) == 0;
        Msg::Tree(self.tree(true), spaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;

    #[test]
    fn the_same_seed_gives_the_same_messages() {
        let run = |seed| {
            let mut g = Gen::new(seed, Framing::ContentLength);
            (0..50).map(|_| g.message().body()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn generated_trees_are_json_and_texts_are_not() {
        let mut g = Gen::new(1, Framing::Newline);
        for _ in 0..2000 {
            let m = g.message();
            if let Msg::Tree(j, _) = &m {
                assert!(ids_distinct(j));
            }
            let body = m.body();
            let parsed = serde_json::from_slice::<IgnoredAny>(&body);
            match m {
                Msg::Tree(..) => assert!(parsed.is_ok(), "{}", String::from_utf8_lossy(&body)),
                Msg::Text(_) => assert!(parsed.is_err(), "{}", String::from_utf8_lossy(&body)),
            }
        }
    }

    #[test]
    fn predictions_follow_the_rules() {
        let tree = |s: &str| {
            let j = parse(s);
            Msg::Tree(j, false).expect()
        };
        assert_eq!(
            tree(r#"{"jsonrpc":"2.0","method":"sansrpc.check.x","id":1e3}"#),
            Expect::Single(error(NOT_FOUND, "1e3"))
        );
        assert_eq!(
            tree(r#"{"jsonrpc":"2.0","method":"sansrpc.check.x"}"#),
            Expect::Nothing
        );
        assert_eq!(
            tree(r#"{"jsonrpc":"1.0","method":"sansrpc.check.x","id":"a"}"#),
            Expect::Single(error(INVALID, "\"a\""))
        );
        assert_eq!(
            tree(r#"{"jsonrpc":"2.0","method":"sansrpc.check.x","id":true}"#),
            Expect::Single(error(INVALID, "null"))
        );
        assert_eq!(tree("[]"), Expect::Single(error(INVALID, "null")));
        assert_eq!(
            tree(r#"[1,{"jsonrpc":"2.0","method":"sansrpc.check.x"}]"#),
            Expect::Batch(vec![error(INVALID, "null")])
        );
    }

    #[test]
    fn shrinking_gets_smaller_and_keeps_methods_unknown() {
        let m = Msg::Tree(
            parse(r#"[{"jsonrpc":"2.0","method":"sansrpc.check.xyz","id":"abc"},5]"#),
            true,
        );
        let candidates = m.shrink(Framing::ContentLength);
        assert!(!candidates.is_empty());
        let twice = Msg::Tree(
            parse(
                r#"[{"jsonrpc":"2.0","method":"sansrpc.check.x","id":"a"},{"jsonrpc":"2.0","method":"sansrpc.check.x","id":"ab"}]"#,
            ),
            false,
        );
        for c in twice.shrink(Framing::ContentLength) {
            let Msg::Tree(j, _) = c else { continue };
            assert!(ids_distinct(&j), "{}", j.text());
        }
        for c in &candidates {
            assert!(c.body().len() <= m.body().len());
            if let Msg::Tree(j, _) = c {
                assert!(methods_stay_unknown(j));
            }
        }
        let t = Msg::Text("{\"a\":".into());
        for c in t.shrink(Framing::ContentLength) {
            assert!(serde_json::from_slice::<IgnoredAny>(&c.body()).is_err());
        }
    }

    /// A test-only reader of simple JSON into `J` (no escapes in keys).
    fn parse(s: &str) -> J {
        fn conv(v: &serde_json::Value, raw: &str) -> J {
            match v {
                serde_json::Value::Null => J::Null,
                serde_json::Value::Bool(b) => J::Bool(*b),
                serde_json::Value::Number(_) => J::Num(raw.trim().to_owned()),
                serde_json::Value::String(s) => J::Str(s.clone()),
                serde_json::Value::Array(_) => {
                    let items: Vec<Box<serde_json::value::RawValue>> =
                        serde_json::from_str(raw).unwrap();
                    J::Arr(
                        items
                            .iter()
                            .map(|r| conv(&serde_json::from_str(r.get()).unwrap(), r.get()))
                            .collect(),
                    )
                }
                serde_json::Value::Object(_) => {
                    let members: Vec<(String, Box<serde_json::value::RawValue>)> =
                        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw)
                            .unwrap()
                            .keys()
                            .map(|k| {
                                let m: std::collections::HashMap<
                                    String,
                                    Box<serde_json::value::RawValue>,
                                > = serde_json::from_str(raw).unwrap();
                                (k.clone(), m[k].clone())
                            })
                            .collect();
                    J::Obj(
                        members
                            .into_iter()
                            .map(|(k, r)| {
                                let v = conv(&serde_json::from_str(r.get()).unwrap(), r.get());
                                (k, v)
                            })
                            .collect(),
                    )
                }
            }
        }
        conv(&serde_json::from_str(s).unwrap(), s)
    }
}
