//! Request ids, kept exactly as the peer wrote them.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::hash::{Hash, Hasher};

use crate::json;

/// What kind of JSON value an id is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// `"id": null`. Not the same as an absent id, which makes a notification.
    Null,
    /// A JSON number, in any form the grammar allows (`1`, `-7`, `1.0`, `1.5`, `1e3`, 2^70…).
    Number,
    /// A JSON string.
    String,
}

/// Longest token stored inline, without a heap allocation, by an owned id.
const INLINE: usize = 22;

#[derive(Clone)]
enum Token<'a> {
    Borrowed(&'a str),
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<str>),
}

impl Token<'_> {
    #[inline]
    fn as_str(&self) -> &str {
        match self {
            Token::Borrowed(s) => s,
            Token::Inline { len, buf } => {
                let bytes = &buf[..*len as usize];
                debug_assert!(core::str::from_utf8(bytes).is_ok());
                // SAFETY: an inline token is only ever made by `Token::owned` (the bytes of a
                // whole `&str`), by `Id::number` (ASCII digits and a sign) or by copying
                // another inline token, and `len` is the length written, so the bytes are
                // valid UTF-8. Checking again here cost a UTF-8 validation per id
                // comparison on the hot path (the in-flight tables compare ids).
                unsafe { core::str::from_utf8_unchecked(bytes) }
            }
            Token::Heap(s) => s,
        }
    }

    /// The token's bytes, for comparisons that need no `str`.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        match self {
            Token::Borrowed(s) => s.as_bytes(),
            Token::Inline { len, buf } => &buf[..*len as usize],
            Token::Heap(s) => s.as_bytes(),
        }
    }

    fn owned(s: &str) -> Token<'static> {
        if s.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Token::Inline {
                len: s.len() as u8,
                buf,
            }
        } else {
            Token::Heap(Box::from(s))
        }
    }
}

/// A JSON-RPC request id: a number, a string or `null`, preserved byte for byte.
///
/// The id keeps the token the peer wrote (for a string, the text between the quotes with
/// its escapes in place), so writing it back echoes exactly what was received: `1.0` stays
/// `1.0`, `1e3` stays `1e3`, `123456789012345678901234567890` loses no digit, `"\u00e9"`
/// keeps its escape. `Id<'a>` borrows from the receive buffer; `Id<'static>` is the owned
/// form, which keeps tokens of up to 22 bytes (every `u64`, short strings) inline without
/// allocating.
///
/// Equality: numbers are equal when their tokens are identical (so `1` and `1.0` are two
/// ids, as they are two different echoes); strings are equal when they stand for the same
/// characters, escaped or not (`"a"` equals `"\u0061"`). `Hash` agrees with `Eq`.
#[derive(Clone)]
pub struct Id<'a> {
    kind: IdKind,
    token: Token<'a>,
}

impl<'a> Id<'a> {
    /// The id `null`.
    pub const NULL: Id<'static> = Id {
        kind: IdKind::Null,
        token: Token::Borrowed("null"),
    };

    /// An id from a token the scanner already validated.
    #[inline]
    pub(crate) fn from_token(kind: IdKind, token: &'a str) -> Self {
        Id {
            kind,
            token: Token::Borrowed(token),
        }
    }

    /// A numeric id from an integer.
    pub fn number(n: i64) -> Id<'static> {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n).as_bytes();
        let len = digits.len();
        let mut buf = [0u8; INLINE];
        buf[..len].copy_from_slice(digits);
        Id {
            kind: IdKind::Number,
            token: Token::Inline {
                len: len as u8,
                buf,
            },
        }
    }

    /// A numeric id from any JSON number text (`1.5`, `1e3`, `-0`, big integers); `None` when
    /// `text` is not a JSON number.
    pub fn from_number_text(text: &'a str) -> Option<Self> {
        let mut s = json::Scanner::new(text.as_bytes());
        let span = s.number().ok()?;
        (span.end == text.len()).then_some(Id::from_token(IdKind::Number, text))
    }

    /// A string id. Characters that JSON requires escaped are escaped (which then allocates).
    pub fn string(s: impl Into<Cow<'a, str>>) -> Self {
        let token = match s.into() {
            Cow::Borrowed(b) if json::needs_no_escape(b) => Token::Borrowed(b),
            Cow::Owned(o) if json::needs_no_escape(&o) => Token::owned_from_string(o),
            other => {
                let mut out = Vec::with_capacity(other.len() + 8);
                json::write_str_body(&mut out, &other);
                // Escaping ASCII bytes of a `str` keeps it valid UTF-8.
                Token::owned_from_string(String::from_utf8(out).unwrap_or_default())
            }
        };
        Id {
            kind: IdKind::String,
            token,
        }
    }

    /// The id's kind.
    #[inline]
    pub fn kind(&self) -> IdKind {
        self.kind
    }

    /// True for `null`.
    #[inline]
    pub fn is_null(&self) -> bool {
        self.kind == IdKind::Null
    }

    /// The token as written: the number text, the string's contents between the quotes
    /// with escapes in place, or `null`.
    #[inline]
    pub fn raw(&self) -> &str {
        self.token.as_str()
    }

    /// The id as a `u64`, when it is a number written as a plain non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        if self.kind != IdKind::Number {
            return None;
        }
        let raw = self.raw().as_bytes();
        if raw.is_empty() || raw.len() > 20 || (raw.len() > 1 && raw[0] == b'0') {
            return None;
        }
        let mut n: u64 = 0;
        for &b in raw {
            if !b.is_ascii_digit() {
                return None;
            }
            n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        }
        Some(n)
    }

    /// The id as an `i64`, when it is a number written as a plain integer.
    pub fn as_i64(&self) -> Option<i64> {
        let raw = self.raw();
        match raw.strip_prefix('-') {
            Some(abs) if self.kind == IdKind::Number => {
                let magnitude = Id::from_token(IdKind::Number, abs).as_u64()?;
                0i64.checked_sub_unsigned(magnitude)
            }
            _ => self.as_u64().and_then(|n| i64::try_from(n).ok()),
        }
    }

    /// The characters a string id stands for, escapes decoded (borrowed when there are none).
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        if self.kind != IdKind::String {
            return None;
        }
        let raw = self.raw();
        Some(if raw.contains('\\') {
            Cow::Owned(json::Unescape::new(raw).collect())
        } else {
            Cow::Borrowed(raw)
        })
    }

    /// An owned copy, inline when the token is short.
    pub fn to_owned_id(&self) -> Id<'static> {
        Id {
            kind: self.kind,
            token: match &self.token {
                Token::Inline { len, buf } => Token::Inline {
                    len: *len,
                    buf: *buf,
                },
                other => Token::owned(other.as_str()),
            },
        }
    }

    /// Converts into the owned form, inline when the token is short.
    pub fn into_owned(self) -> Id<'static> {
        match self.token {
            Token::Heap(h) => Id {
                kind: self.kind,
                token: Token::Heap(h),
            },
            _ => self.to_owned_id(),
        }
    }

    /// Appends the id as JSON: the exact token, quoted for strings.
    #[inline]
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self.kind {
            IdKind::String => {
                out.push(b'"');
                out.extend_from_slice(self.raw().as_bytes());
                out.push(b'"');
            }
            IdKind::Number => out.extend_from_slice(self.raw().as_bytes()),
            IdKind::Null => out.extend_from_slice(b"null"),
        }
    }
}

impl Token<'static> {
    fn owned_from_string(s: String) -> Token<'static> {
        if s.len() <= INLINE {
            Token::owned(&s)
        } else {
            Token::Heap(s.into_boxed_str())
        }
    }
}

impl PartialEq for Id<'_> {
    fn eq(&self, other: &Id<'_>) -> bool {
        if self.kind != other.kind {
            return false;
        }
        let (a, b) = (self.token.as_bytes(), other.token.as_bytes());
        match self.kind {
            IdKind::String if a.contains(&b'\\') || b.contains(&b'\\') => {
                json::Unescape::new(self.raw()).eq(json::Unescape::new(other.raw()))
            }
            _ => a == b,
        }
    }
}

impl Eq for Id<'_> {}

impl Hash for Id<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        match self.kind {
            IdKind::String => {
                let raw = self.raw();
                if raw.contains('\\') {
                    for c in json::Unescape::new(raw) {
                        state.write_u32(c as u32);
                    }
                } else {
                    for c in raw.chars() {
                        state.write_u32(c as u32);
                    }
                }
                state.write_u8(0xff);
            }
            _ => self.raw().hash(state),
        }
    }
}

/// A total order consistent with `Eq`: by kind (null, number, string), then numbers by
/// token length and then token, and strings by the characters they stand for. It exists so
/// ids can key ordered maps in `no_std`; it is not numeric order, but the ids peers count
/// up (`1`, `2`, … `10`) come in increasing order, which the endpoint's tables take fastest.
impl Ord for Id<'_> {
    fn cmp(&self, other: &Id<'_>) -> core::cmp::Ordering {
        let rank = |k: IdKind| match k {
            IdKind::Null => 0u8,
            IdKind::Number => 1,
            IdKind::String => 2,
        };
        rank(self.kind).cmp(&rank(other.kind)).then_with(|| {
            // Bytes of UTF-8 order as the characters they encode do.
            let (a, b) = (self.token.as_bytes(), other.token.as_bytes());
            match self.kind {
                IdKind::String if a.contains(&b'\\') || b.contains(&b'\\') => {
                    json::Unescape::new(self.raw()).cmp(json::Unescape::new(other.raw()))
                }
                IdKind::Number => a.len().cmp(&b.len()).then_with(|| short_cmp(a, b)),
                _ => short_cmp(a, b),
            }
        })
    }
}

/// `a.cmp(b)`, without a call into `memcmp` for the short tokens ids usually are.
#[inline]
fn short_cmp(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    if a.len() <= 16 && b.len() <= 16 {
        for (x, y) in a.iter().zip(b) {
            if x != y {
                return x.cmp(y);
            }
        }
        a.len().cmp(&b.len())
    } else {
        a.cmp(b)
    }
}

impl PartialOrd for Id<'_> {
    fn partial_cmp(&self, other: &Id<'_>) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Shows the id as JSON, as it is written on the wire.
impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            IdKind::String => write!(f, "\"{}\"", self.raw()),
            _ => f.write_str(self.raw()),
        }
    }
}

impl From<i64> for Id<'static> {
    fn from(n: i64) -> Self {
        Id::number(n)
    }
}

impl From<i32> for Id<'static> {
    fn from(n: i32) -> Self {
        Id::number(i64::from(n))
    }
}

impl From<u32> for Id<'static> {
    fn from(n: u32) -> Self {
        Id::number(i64::from(n))
    }
}

impl<'a> From<&'a str> for Id<'a> {
    fn from(s: &'a str) -> Self {
        Id::string(s)
    }
}

impl From<String> for Id<'static> {
    fn from(s: String) -> Self {
        Id::string(s)
    }
}

/// Writes the id as the peer wrote it: numbers byte for byte (with serde_json), strings as
/// strings, `null` as unit.
impl serde::Serialize for Id<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.kind {
            IdKind::Null => serializer.serialize_unit(),
            IdKind::String => serializer.serialize_str(&self.as_str().unwrap_or_default()),
            IdKind::Number => {
                let raw: &serde_json::value::RawValue =
                    serde_json::from_str(self.raw()).map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
        }
    }
}

/// Reads a number (its text kept exactly), a string or `null` into an owned id; anything
/// else is an error.
impl<'de> serde::Deserialize<'de> for Id<'static> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = alloc::boxed::Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let text = raw.get().trim();
        let id = match text.as_bytes().first() {
            Some(b'"') => Some(Id::from_token(IdKind::String, &text[1..text.len() - 1])),
            Some(b'n') if text == "null" => Some(Id::NULL),
            _ => Id::from_number_text(text),
        };
        id.map(Id::into_owned)
            .ok_or_else(|| serde::de::Error::custom("an id must be a number, a string or null"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn numbers_echo_exactly() {
        for t in [
            "1",
            "-7",
            "1.0",
            "1.5",
            "1e3",
            "-0",
            "123456789012345678901234567890",
        ] {
            let id = Id::from_number_text(t).unwrap();
            let mut out = Vec::new();
            id.write_json(&mut out);
            assert_eq!(out, t.as_bytes());
            let owned = id.to_owned_id();
            assert_eq!(owned.raw(), t);
            assert_eq!(owned, id);
        }
        assert!(Id::from_number_text("01").is_none());
        assert!(Id::from_number_text("1.").is_none());
        assert!(Id::from_number_text("abc").is_none());
    }

    #[test]
    fn integer_accessors() {
        assert_eq!(Id::number(42).as_u64(), Some(42));
        assert_eq!(Id::number(-42).as_i64(), Some(-42));
        assert_eq!(Id::number(i64::MIN).as_i64(), Some(i64::MIN));
        assert_eq!(Id::number(i64::MIN).raw(), "-9223372036854775808");
        assert_eq!(Id::from_number_text("1.0").unwrap().as_u64(), None);
        assert_eq!(
            Id::from_number_text("18446744073709551616")
                .unwrap()
                .as_u64(),
            None
        );
        assert_eq!(
            Id::from_number_text("18446744073709551615")
                .unwrap()
                .as_u64(),
            Some(u64::MAX)
        );
        assert_eq!(Id::string("1").as_u64(), None);
    }

    #[test]
    fn strings_compare_by_meaning_and_echo_by_token() {
        let a = Id::from_token(IdKind::String, "a");
        let esc = Id::from_token(IdKind::String, "\\u0061");
        assert_eq!(a, esc);
        assert_eq!(esc.to_string(), "\"\\u0061\"");
        assert_eq!(esc.as_str().unwrap(), "a");
        let state = std::collections::hash_map::RandomState::new();
        use core::hash::BuildHasher;
        assert_eq!(state.hash_one(&a), state.hash_one(&esc));
        assert_ne!(Id::number(1), Id::string("1"));
        assert_ne!(Id::NULL, Id::string("null"));
    }

    #[test]
    fn counted_up_numbers_order_as_counted_and_the_order_is_total() {
        let ids: alloc::vec::Vec<Id<'_>> = (0..200i64).map(Id::number).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "1, 2, ... 10 in order");
        // Null first, then numbers, then strings; equal tokens equal.
        let mixed = [
            Id::NULL,
            Id::from_token(IdKind::Number, "-1"),
            Id::from_token(IdKind::Number, "1.5"),
            Id::string(""),
            Id::string("a"),
        ];
        assert!(mixed.windows(2).all(|w| w[0] < w[1]));
        let one = Id::from_token(IdKind::Number, "1");
        assert_eq!(one.cmp(&Id::number(1)), core::cmp::Ordering::Equal);
    }

    #[test]
    fn owned_ids_are_inline_when_short() {
        let long = "x".repeat(100);
        let id = Id::string(long.as_str()).into_owned();
        assert_eq!(id.raw(), long);
        let quoted = Id::string("say \"hi\"\n");
        assert_eq!(quoted.raw(), "say \\\"hi\\\"\\n");
        assert_eq!(quoted.as_str().unwrap(), "say \"hi\"\n");
    }
}
