//! [`Input`]: one fuzz input (a message, the answer it requires, how its bytes are cut into
//! chunks) and judging what a server answered to it.

use core::fmt;
use std::borrow::ToOwned;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

use arbitrary::{Arbitrary, Unstructured};

use super::gen::{error, Entropy, Gen, Msg, INVALID, J, METHOD_PREFIX, NOT_FOUND};
use super::judge::{judge, Expect, Item};
use sansrpc::codec::Framing;

/// One input for a server under test: the message body, the answer JSON-RPC 2.0 requires
/// (or allows) for it, and how its bytes are cut into chunks on their way in.
///
/// Most inputs come from the grammar of [`Gen`]: requests, notifications and batches
/// (empty, nested, mixed), valid and invalid, ids of every kind (integers, fractions,
/// exponents, numbers beyond 64 bits, strings with escapes, `null`, absent), and texts that
/// are not JSON. The rest are edges whose reading the specification leaves open, each with
/// a lenient expectation ([`Expect::Tolerated`]: an error, an answer, or nothing, never a
/// stray id): duplicate members, bytes that are not UTF-8, lone surrogate escapes, several
/// requests with the same id in one batch, and response objects sent to the server; and
/// JSON nested 2 to 4,000 deep ([`Expect::Deep`]: refused by a depth limit or answered as
/// usual). No input holds a raw line feed or carriage return, so newline framing carries
/// every one as one line.
///
/// Build one from a fuzzer's bytes ([`Arbitrary`]), or from any [`Gen`]
/// ([`Input::generate`]).
#[derive(Clone, PartialEq)]
pub struct Input {
    kind: Kind,
    body: Vec<u8>,
    expect: Expect,
    /// The sizes of the first chunks.
    sizes: Vec<usize>,
    /// The size of the chunks after those (0: the rest in one).
    then: usize,
}

/// Where an input comes from (shown by `Debug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Generated,
    DuplicateMember,
    NotUtf8,
    LoneSurrogate,
    DuplicateIds,
    Response,
    Deep,
    Call,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Input> {
        Ok(Input::generate(&mut Gen::with_entropy(
            u,
            Framing::ContentLength,
        )))
    }
}

impl From<Msg> for Input {
    /// The message, in one chunk.
    fn from(msg: Msg) -> Input {
        Input {
            kind: Kind::Generated,
            body: msg.body(),
            expect: msg.expect(),
            sizes: Vec::new(),
            then: 0,
        }
    }
}

impl Input {
    /// The next input from `gen`.
    pub fn generate<E: Entropy>(gen: &mut Gen<E>) -> Input {
        let (kind, body, expect) = match gen.below(100) {
            0..=54 => {
                let msg = gen.message();
                (Kind::Generated, msg.body(), msg.expect())
            }
            55..=61 => duplicate_member(gen),
            62..=68 => not_utf8(gen),
            69..=74 => lone_surrogate(gen),
            75..=81 => duplicate_ids(gen),
            82..=88 => response(gen),
            _ => deep(gen),
        };
        let mut input = Input::generate_chunking(gen, kind, body);
        input.expect = expect;
        input
    }

    /// An input of `body` (expecting nothing, until told), cut as `gen` chooses.
    fn generate_chunking<E: Entropy>(gen: &mut Gen<E>, kind: Kind, body: Vec<u8>) -> Input {
        let sizes = (0..gen.below(5)).map(|_| gen.below(48) as usize).collect();
        let then = match gen.below(4) {
            0 => 1 + gen.below(16) as usize,
            _ => 0,
        };
        Input {
            kind,
            body,
            expect: Expect::Nothing,
            sizes,
            then,
        }
    }

    /// Like [`generate`](Input::generate) half the time; otherwise a request or notification
    /// for one of the server's own `methods` (names as on the wire), with params, id and
    /// members from the grammar. Such a call, when valid, is judged by structure only
    /// ([`Expect::Any`]: one response with its id, a result or an error of any code); a
    /// notification gets no answer; an invalid one gets `-32600`.
    ///
    /// `entropy` is a fuzzer's `&mut Unstructured` (or a [`Rng`](super::Rng)). With no
    /// methods, this is [`generate`](Input::generate).
    pub fn calling<E: Entropy>(entropy: E, methods: &[&str]) -> Input {
        let mut gen = Gen::with_entropy(entropy, Framing::ContentLength);
        if methods.is_empty() || gen.below(2) == 0 {
            return Input::generate(&mut gen);
        }
        let name = *gen.pick(methods);
        // The name as escaped string contents.
        let quoted = serde_json::to_string(name).unwrap_or_default();
        let name = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
        let mut entry = gen.entry(false);
        if let J::Obj(members) = &mut entry {
            for (key, value) in members.iter_mut() {
                if let ("method", J::Str(method)) = (key.as_str(), value) {
                    *method = name.to_owned();
                }
            }
        }
        // The grammar's prediction, with "method not found" read as "any answer".
        let msg = Msg::Tree(entry, gen.below(5) == 0);
        let expect = match msg.expect() {
            Expect::Single(Item::Error { code, id }) if code == NOT_FOUND => Expect::Any { id },
            other => other,
        };
        let body = msg.body();
        let mut input = Input::generate_chunking(&mut gen, Kind::Call, body);
        input.expect = expect;
        input
    }

    /// The message body, unframed (for a transport that carries whole messages: WebSocket,
    /// HTTP).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The answer the specification requires (or the answers it allows).
    pub fn expect(&self) -> &Expect {
        &self.expect
    }

    /// The body framed for a byte stream: after a `Content-Length` header
    /// ([`Framing::ContentLength`], and [`Framing::Auto`]), or followed by `\n`
    /// ([`Framing::Newline`]).
    pub fn wire(&self, framing: Framing) -> Vec<u8> {
        let mut wire = Vec::with_capacity(self.body.len() + 32);
        match framing {
            Framing::Newline => {
                wire.extend_from_slice(&self.body);
                wire.push(b'\n');
            }
            Framing::ContentLength | Framing::Auto => {
                wire.extend_from_slice(
                    format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
                );
                wire.extend_from_slice(&self.body);
            }
        }
        wire
    }

    /// The framed bytes ([`wire`](Input::wire)) cut the way this input says: whole, at a
    /// few places (inside the header too), or a few bytes at a time; some chunks may be
    /// empty. Feed them to the server in order.
    pub fn chunks(&self, framing: Framing) -> Vec<Vec<u8>> {
        let wire = self.wire(framing);
        let mut rest = &wire[..];
        let mut out = Vec::new();
        for &size in &self.sizes {
            let (chunk, after) = rest.split_at(size.min(rest.len()));
            out.push(chunk.to_vec());
            rest = after;
        }
        match self.then {
            0 if rest.is_empty() => {}
            0 => out.push(rest.to_vec()),
            n => out.extend(rest.chunks(n).map(<[u8]>::to_vec)),
        }
        out
    }

    /// The violations of JSON-RPC 2.0 in `answered`, all a server wrote on a byte stream
    /// framed with `framing` after it was fed this input (and before any other): empty
    /// when the answer is one the specification requires or allows. With
    /// [`Framing::Auto`], the output's framing is the one its first byte says.
    pub fn judge(&self, framing: Framing, answered: &[u8]) -> Vec<Violation> {
        let (frames, fault) = frames(framing, answered);
        let mut violations = judge_answers(&self.expect, &frames);
        if let Some(why) = fault {
            violations.push(Violation {
                message: format!("the output is not {framing:?} frames: {why}"),
                answer: Some(show(answered)),
            });
        }
        violations
    }

    /// Like [`judge`](Input::judge), for a transport that carries whole messages: `answers`
    /// are the messages the server sent after it got [`body`](Input::body).
    pub fn judge_messages<B: AsRef<[u8]>>(&self, answers: &[B]) -> Vec<Violation> {
        let answers: Vec<&[u8]> = answers.iter().map(AsRef::as_ref).collect();
        judge_answers(&self.expect, &answers)
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("kind", &self.kind)
            .field("body", &show(&self.body))
            .field("expect", &format_args!("{}", self.expect))
            .field("chunk_sizes", &self.sizes)
            .field("then_chunks_of", &self.then)
            .finish()
    }
}

/// A way a server's answer breaks JSON-RPC 2.0 (or its framing), found by [`Input::judge`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// What is wrong, and what was required, in words.
    pub message: String,
    /// The answer it is about, as text (bytes that are not UTF-8 escaped; long ones cut),
    /// when it is about one.
    pub answer: Option<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(answer) = &self.answer {
            write!(f, " (answered: {answer})")?;
        }
        Ok(())
    }
}

/// Bytes as text for a person: as they are when UTF-8, escaped otherwise, cut after 2,000
/// characters.
fn show(bytes: &[u8]) -> String {
    const MAX: usize = 2000;
    let text = match core::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => format!("{}", bytes.escape_ascii()),
    };
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], bytes.len()),
        None => text,
    }
}

/// Judges every answer to one input: how many there may be, and each one.
fn judge_answers(expect: &Expect, answers: &[&[u8]]) -> Vec<Violation> {
    let (at_least, at_most) = match expect {
        Expect::Nothing => (0, 0),
        Expect::Tolerated { .. } => (0, usize::MAX),
        Expect::Deep { normal } if **normal == Expect::Nothing => (0, 1),
        Expect::Single(_) | Expect::Batch(_) | Expect::Deep { .. } | Expect::Any { .. } => (1, 1),
    };
    let mut violations = Vec::new();
    if answers.len() < at_least {
        violations.push(Violation {
            message: format!("no answer; required: {expect}"),
            answer: None,
        });
    }
    for (i, answer) in answers.iter().enumerate() {
        let message = if at_most > 0 && i >= at_most {
            Some("one answer too many: an input gets one answer at most".to_owned())
        } else {
            judge(expect, answer)
                .err()
                .map(|why| format!("{why}; required: {expect}"))
        };
        if let Some(message) = message {
            violations.push(Violation {
                message,
                answer: Some(show(answer)),
            });
        }
    }
    violations
}

/// A server's output cut into frame bodies, read independently of the core's codec; with
/// why it stops early, if it does.
fn frames(framing: Framing, mut bytes: &[u8]) -> (Vec<&[u8]>, Option<String>) {
    let newline = match framing {
        Framing::Newline => true,
        Framing::ContentLength => false,
        Framing::Auto => matches!(
            bytes.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        ),
    };
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let next = if newline {
            line(bytes)
        } else {
            content_length(bytes)
        };
        match next {
            Ok((frame, rest)) => {
                if !frame.iter().all(u8::is_ascii_whitespace) {
                    out.push(frame);
                }
                bytes = rest;
            }
            Err(why) => return (out, Some(why)),
        }
    }
    (out, None)
}

/// One line (its `\r\n` or `\n` taken off), and what follows it.
fn line(bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("it ends inside a line (no final \\n)")?;
    let line = &bytes[..end];
    Ok((line.strip_suffix(b"\r").unwrap_or(line), &bytes[end + 1..]))
}

/// One Content-Length frame's body, and what follows it.
fn content_length(bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("it ends inside a header block")?;
    let mut length = None;
    for line in bytes[..end].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = core::str::from_utf8(line).map_err(|_| "a header is not text")?;
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("the header {line:?} has no colon"))?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("Content-Length {value:?} is no length"))?,
            );
        }
    }
    let length = length.ok_or("a header block without Content-Length")?;
    let body = &bytes[end + 4..];
    if body.len() < length {
        return Err(format!(
            "it ends inside a frame (Content-Length {length}, {} bytes follow)",
            body.len()
        ));
    }
    Ok(body.split_at(length))
}

/// Members of a request-shaped object from the grammar (at least one).
fn object<E: Entropy>(gen: &mut Gen<E>) -> Vec<(String, J)> {
    match gen.entry(false) {
        J::Obj(members) if !members.is_empty() => members,
        _ => vec![
            ("jsonrpc".to_owned(), J::Str("2.0".into())),
            ("method".to_owned(), J::Str(format!("{METHOD_PREFIX}x"))),
            ("id".to_owned(), J::Num("1".into())),
        ],
    }
}

/// The lenient expectation for an object: answers may carry its id, if it has a valid one.
fn tolerated(members: &[(String, J)]) -> Expect {
    let id = members
        .iter()
        .find(|(k, _)| k == "id")
        .and_then(|(_, v)| match v {
            J::Num(_) | J::Str(_) | J::Null => Some(v.text()),
            _ => None,
        });
    Expect::Tolerated { id }
}

/// The body of an object, compact or spaced.
fn render<E: Entropy>(gen: &mut Gen<E>, j: J) -> Vec<u8> {
    let spaced = gen.below(5) == 0;
    Msg::Tree(j, spaced).body()
}

/// Appends `unit` to a string of the object that is not its id: the method name, a param,
/// or a new unknown member.
fn inject<E: Entropy>(gen: &mut Gen<E>, members: &mut Vec<(String, J)>, unit: &str) {
    let slot = gen.below(3);
    for (key, value) in members.iter_mut() {
        match (key.as_str(), value) {
            ("method", J::Str(s)) if slot == 0 => return s.push_str(unit),
            ("params", J::Arr(items)) if slot == 1 => return items.push(J::Str(unit.into())),
            ("params", J::Obj(m)) if slot == 1 => {
                return m.push(("note".to_owned(), J::Str(unit.into())));
            }
            _ => {}
        }
    }
    members.push(("note".to_owned(), J::Str(unit.into())));
}

/// One member written twice, the id always with the same value (so either copy is the id).
fn duplicate_member<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    let mut members = object(gen);
    let (key, value) = gen.pick(&members).clone();
    let copy = if key == "id" || gen.below(2) == 0 {
        value
    } else {
        gen.value(1, false)
    };
    let at = gen.below(members.len() as u64 + 1) as usize;
    members.insert(at, (key, copy));
    let expect = tolerated(&members);
    (Kind::DuplicateMember, render(gen, J::Obj(members)), expect)
}

/// A message with bytes that are not UTF-8: inside a string, or after the JSON.
fn not_utf8<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    const BAD: &[&[u8]] = &[
        b"\xff",
        b"\xc3",
        b"\x80",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\xf4\x90\x80\x80",
        b"\xfe\xfe",
    ];
    // A character the grammar never writes, replaced by the bad bytes once rendered.
    const MARK: &str = "\u{e000}";
    let mut members = object(gen);
    let outside = gen.below(5) == 0;
    if !outside {
        inject(gen, &mut members, MARK);
    }
    let expect = tolerated(&members);
    let mut body = render(gen, J::Obj(members));
    let bad = *gen.pick(BAD);
    match body.windows(MARK.len()).position(|w| w == MARK.as_bytes()) {
        Some(at) => drop(body.splice(at..at + MARK.len(), bad.iter().copied())),
        None => body.extend_from_slice(bad),
    }
    (Kind::NotUtf8, body, expect)
}

/// A string (not the id) with a surrogate escape that has no partner.
fn lone_surrogate<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    const LONE: &[&str] = &[
        "\\ud800",
        "\\udbff",
        "\\udc00",
        "\\udfff",
        "\\ud83dx",
        "\\ude00\\ud83d",
        "\\ud83d\\ud83d",
    ];
    let mut members = object(gen);
    let unit = *gen.pick(LONE);
    inject(gen, &mut members, unit);
    let expect = tolerated(&members);
    (Kind::LoneSurrogate, render(gen, J::Obj(members)), expect)
}

/// A batch whose requests all have the same id.
fn duplicate_ids<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    let id = match gen.below(3) {
        0 => J::Num(gen.number()),
        1 => J::Str(gen.string(false, 6)),
        _ => J::Null,
    };
    let len = 2 + gen.below(4);
    let entries = (0..len)
        .map(|_| {
            let mut entry = gen.entry(false);
            if let J::Obj(members) = &mut entry {
                match members.iter_mut().find(|(k, _)| k == "id") {
                    Some((_, v)) => *v = id.clone(),
                    None if gen.below(2) == 0 => members.push(("id".to_owned(), id.clone())),
                    None => {}
                }
            }
            entry
        })
        .collect();
    let expect = Expect::Tolerated {
        id: Some(id.text()),
    };
    (Kind::DuplicateIds, render(gen, J::Arr(entries)), expect)
}

/// A response object (result, error, or both), as a peer answering a call would send.
fn response<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    const CODES: &[&str] = &["-32700", "-32600", "-32601", "-32603", "-32000", "0", "7"];
    let mut members = vec![("jsonrpc".to_owned(), J::Str("2.0".into()))];
    let shape = gen.below(3);
    if shape != 1 {
        members.push(("result".to_owned(), gen.value(2, false)));
    }
    if shape != 0 {
        let code = J::Num((*gen.pick(CODES)).to_owned());
        let message = J::Str(gen.string(false, 6));
        members.push((
            "error".to_owned(),
            J::Obj(vec![("code".into(), code), ("message".into(), message)]),
        ));
    }
    match gen.below(4) {
        0 => members.push(("id".to_owned(), J::Num(gen.number()))),
        1 => members.push(("id".to_owned(), J::Str(gen.string(false, 6)))),
        2 => members.push(("id".to_owned(), J::Null)),
        _ => {}
    }
    let expect = tolerated(&members);
    (Kind::Response, render(gen, J::Obj(members)), expect)
}

/// JSON nested deep: in a request's params, or as the whole message.
fn deep<E: Entropy>(gen: &mut Gen<E>) -> (Kind, Vec<u8>, Expect) {
    let depth = match gen.below(3) {
        // Around the usual limits (sansrpc's default is 128).
        0 => 100 + gen.below(60),
        1 => 2 + gen.below(300),
        _ => 300 + gen.below(3700),
    } as usize;
    let arrays = gen.below(2) == 0;
    let nest = |leaf: &str| {
        if arrays {
            "[".repeat(depth) + "]".repeat(depth).as_str()
        } else {
            format!("{}{leaf}{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
        }
    };
    let (body, normal) = if gen.below(2) == 0 {
        let id = match gen.below(3) {
            0 => Some(gen.number()),
            1 => Some(format!("\"{}\"", gen.string(false, 6))),
            _ => None,
        };
        let id_member = id
            .as_ref()
            .map_or(String::new(), |id| format!(r#","id":{id}"#));
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"{METHOD_PREFIX}deep","params":{}{id_member}}}"#,
            nest("1")
        );
        let normal = id.map_or(Expect::Nothing, |id| Expect::Single(error(NOT_FOUND, &id)));
        (body, normal)
    } else if arrays {
        // With no limit: a batch of one entry, an array, which is no request.
        (nest(""), Expect::Batch(vec![error(INVALID, "null")]))
    } else {
        // With no limit: an object that is no request.
        (nest("1"), Expect::Single(error(INVALID, "null")))
    };
    let expect = Expect::Deep {
        normal: std::boxed::Box::new(normal),
    };
    (Kind::Deep, body.into_bytes(), expect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn ok(frame: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32601,"message":"x"}},"id":{frame}}}"#)
    }

    #[test]
    fn inputs_from_no_bytes_and_from_seeds_are_well_formed() {
        let empty = Input::arbitrary(&mut Unstructured::new(&[])).unwrap();
        assert!(!empty.body().is_empty());
        let mut gen = Gen::new(5, Framing::Newline);
        let mut kinds = Vec::new();
        for _ in 0..3000 {
            let input = Input::generate(&mut gen);
            assert!(!input.body().contains(&b'\n') && !input.body().contains(&b'\r'));
            for framing in [Framing::ContentLength, Framing::Newline] {
                assert_eq!(input.chunks(framing).concat(), input.wire(framing));
            }
            if !kinds.contains(&input.kind) {
                kinds.push(input.kind);
            }
            // Open readings are lenient; everything else must be JSON or not as generated.
            let utf8 = core::str::from_utf8(input.body()).is_ok();
            assert!(utf8 || input.kind == Kind::NotUtf8, "{input:?}");
        }
        assert_eq!(kinds.len(), 7, "{kinds:?}");
    }

    #[test]
    fn answers_are_deframed_and_counted() {
        let request = br#"{"jsonrpc":"2.0","method":"sansrpc.check.x","id":1}"#;
        let msg = Msg::Text(String::from_utf8(request.to_vec()).unwrap());
        let mut input = Input::from(msg);
        input.expect = Expect::Single(error(NOT_FOUND, "1"));
        let answer = ok("1");
        let cl = format!("Content-Length: {}\r\n\r\n{answer}", answer.len());
        assert_eq!(input.judge(Framing::ContentLength, cl.as_bytes()), vec![]);
        assert_eq!(input.judge(Framing::Auto, cl.as_bytes()), vec![]);
        let nl = format!("{answer}\r\n");
        assert_eq!(input.judge(Framing::Newline, nl.as_bytes()), vec![]);
        assert_eq!(input.judge(Framing::Auto, nl.as_bytes()), vec![]);
        assert_eq!(input.judge_messages(&[answer.as_bytes()]), vec![]);
        // Nothing, twice, cut short, wrong.
        assert_eq!(input.judge(Framing::Newline, b"").len(), 1);
        assert_eq!(
            input
                .judge(Framing::Newline, format!("{nl}{nl}").as_bytes())
                .len(),
            1
        );
        let cut = input.judge(Framing::ContentLength, &cl.as_bytes()[..cl.len() - 1]);
        assert!(cut[1].message.contains("inside a frame"), "{cut:?}");
        let wrong = input.judge(Framing::Newline, format!("{}\n", ok("2")).as_bytes());
        assert!(
            wrong[0].to_string().contains("id is 2, expected 1"),
            "{wrong:?}"
        );
    }

    #[test]
    fn calls_to_the_servers_methods_are_judged_by_structure() {
        let mut rng = super::super::Rng::new(3);
        let (mut calls, mut any, mut escaped) = (0, 0, false);
        for _ in 0..500 {
            let input = Input::calling(&mut rng, &["add", "a\"b"]);
            if input.kind == Kind::Call {
                calls += 1;
                let body = core::str::from_utf8(input.body()).unwrap();
                assert!(!body.contains(METHOD_PREFIX), "{body}");
                escaped |= body.contains(r#""a\"b""#);
            }
            if let Expect::Any { id } = input.expect() {
                any += 1;
                let result = format!(r#"{{"jsonrpc":"2.0","result":[1],"id":{id}}}"#);
                assert_eq!(input.judge_messages(&[result.as_bytes()]), vec![]);
                assert_eq!(input.judge_messages(&[ok(id).as_bytes()]), vec![]);
                let other = format!(r#"{{"jsonrpc":"2.0","result":1,"id":"other{id}"}}"#);
                assert_eq!(input.judge_messages(&[other.as_bytes()]).len(), 1);
                let both = format!(
                    r#"{{"jsonrpc":"2.0","result":1,"error":{{"code":1,"message":""}},"id":{id}}}"#
                );
                assert_eq!(input.judge_messages(&[both.as_bytes()]).len(), 1);
                assert_eq!(input.judge_messages::<&[u8]>(&[]).len(), 1);
            }
        }
        assert!(calls > 150 && any > 50 && escaped, "{calls} {any}");
    }

    #[test]
    fn nothing_tolerated_and_deep_notifications_may_go_unanswered() {
        for expect in [
            Expect::Nothing,
            Expect::Tolerated { id: None },
            Expect::Deep {
                normal: std::boxed::Box::new(Expect::Nothing),
            },
        ] {
            assert_eq!(judge_answers(&expect, &[]), vec![]);
        }
        let refused = ok("null");
        let answers = [refused.as_bytes(), refused.as_bytes()];
        assert_eq!(
            judge_answers(&Expect::Tolerated { id: None }, &answers),
            vec![]
        );
        assert_eq!(judge_answers(&Expect::Nothing, &answers).len(), 2);
    }
}
