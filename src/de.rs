//! A serde deserializer over JSON text, built on the core's own scanner.
//!
//! It reads a value the way serde_json does for the types a params or a lifecycle message
//! usually holds, with less code: no floating point unless a type asks for `f32`/`f64` (or
//! for anything, with `deserialize_any`), and errors that name what was expected without
//! formatting the value that was found. On a device it keeps serde_json's parser, its
//! float tables and its error formatting out of the firmware (see `docs/embedded.md`).
//!
//! It differs from serde_json in three ways, all on inputs the core has already validated:
//! a `\u` escape of a lone surrogate reads as U+FFFD (serde_json refuses the string); a
//! float is parsed with `core`'s correctly rounded parser; and its messages are its own.
//! serde_json's `RawValue` (and so [`crate::RawValue`] and [`crate::Id`]) is read byte for
//! byte through the same private protocol serde_json's own deserializers speak.

use alloc::borrow::Cow;
use alloc::string::{String, ToString};
use core::fmt;

use serde::de::{self, DeserializeSeed, Expected, IntoDeserializer, Unexpected, Visitor};

use crate::json::{JsonError, Scanner, Unescape};

/// How deep arrays and objects may nest while decoding (as serde_json's default).
const MAX_DEPTH: u32 = 128;

/// serde_json's name for a raw value: a newtype struct by this name asks for the text.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Why a text did not decode into the type asked for: a message for a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeError(Cow<'static, str>);

impl DeError {
    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }

    fn syntax(e: JsonError) -> Self {
        DeError(Cow::Borrowed(match e {
            JsonError::Syntax => "not valid JSON",
            JsonError::TooDeep => "nested too deeply",
        }))
    }

    fn text(message: &'static str) -> Self {
        DeError(Cow::Borrowed(message))
    }

    fn join(parts: &[&str]) -> Self {
        let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            s.push_str(part);
        }
        DeError(Cow::Owned(s))
    }

    fn expected(what: &str, exp: &dyn Expected) -> Self {
        let mut s = String::from(what);
        s.push_str(", expected ");
        let _ = fmt::write(&mut s, format_args!("{exp}"));
        DeError(Cow::Owned(s))
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl de::StdError for DeError {}

/// What was found, named without its value (a string's or a float's value would need
/// `Debug` escaping or float printing).
fn found(unexp: &Unexpected<'_>) -> &'static str {
    match unexp {
        Unexpected::Bool(_) => "invalid type: boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) => "invalid type: integer",
        Unexpected::Float(_) => "invalid type: floating point number",
        Unexpected::Char(_) | Unexpected::Str(_) => "invalid type: string",
        Unexpected::Bytes(_) => "invalid type: bytes",
        Unexpected::Unit | Unexpected::Option => "invalid type: null",
        Unexpected::Seq => "invalid type: array",
        Unexpected::Map => "invalid type: object",
        _ => "invalid type",
    }
}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError(Cow::Owned(msg.to_string()))
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        match unexp {
            Unexpected::Other(what) => {
                let mut s = String::from("invalid type: ");
                s.push_str(what);
                DeError::expected(&s, exp)
            }
            _ => DeError::expected(found(&unexp), exp),
        }
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        let what = match unexp {
            Unexpected::Unsigned(_) | Unexpected::Signed(_) => "invalid value: integer",
            Unexpected::Str(_) => "invalid value: string",
            _ => "invalid value",
        };
        DeError::expected(what, exp)
    }

    fn invalid_length(_len: usize, exp: &dyn Expected) -> Self {
        DeError::expected("invalid length", exp)
    }

    fn unknown_variant(variant: &str, _expected: &'static [&'static str]) -> Self {
        DeError::join(&["unknown variant `", variant, "`"])
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Self {
        DeError::join(&["unknown field `", field, "`"])
    }

    fn missing_field(field: &'static str) -> Self {
        DeError::join(&["missing field `", field, "`"])
    }

    fn duplicate_field(field: &'static str) -> Self {
        DeError::join(&["duplicate field `", field, "`"])
    }
}

/// Decodes the JSON text `text` (one value, whitespace around it allowed) into `T`.
/// Borrowed strings borrow from `text` where they hold no escapes.
pub fn from_str<'de, T: de::Deserialize<'de>>(text: &'de str) -> Result<T, DeError> {
    let mut de = Deserializer {
        s: Scanner::new(text.as_bytes()),
        text,
        depth: MAX_DEPTH,
    };
    let value = T::deserialize(&mut de)?;
    if de.s.at_end() {
        Ok(value)
    } else {
        Err(DeError::text("trailing characters after the value"))
    }
}

/// An integer's text read in 64 bits: `u64` without a sign, else `i64`.
enum Int64 {
    Unsigned(u64),
    Signed(i64),
}

/// `text` (an integer as the scanner found it) in 64 bits; `None` past them.
fn int64(text: &str) -> Option<Int64> {
    match text.strip_prefix('-') {
        Some(digits) => {
            let n = digits.parse::<u64>().ok()?;
            (n <= i64::MAX as u64 + 1).then(|| Int64::Signed((n as i64).wrapping_neg()))
        }
        None => text.parse().ok().map(Int64::Unsigned),
    }
}

struct Deserializer<'de> {
    s: Scanner<'de>,
    text: &'de str,
    /// How many more levels of nesting are allowed.
    depth: u32,
}

/// A number's text, as the scanner found it.
enum Num<'de> {
    /// No fraction, no exponent.
    Int(&'de str),
    Float(&'de str),
}

impl<'de> Deserializer<'de> {
    fn peek(&mut self) -> Result<u8, DeError> {
        self.s
            .peek_ws()
            .ok_or(DeError::text("the text ended before a value"))
    }

    /// What the next value is, for an error that says so.
    fn unexpected(&mut self) -> Unexpected<'static> {
        match self.s.peek_ws() {
            Some(b'"') => Unexpected::Str(""),
            Some(b't' | b'f') => Unexpected::Bool(false),
            Some(b'n') => Unexpected::Unit,
            Some(b'[') => Unexpected::Seq,
            Some(b'{') => Unexpected::Map,
            Some(b']') => Unexpected::Other("end of array"),
            Some(b'}') => Unexpected::Other("end of object"),
            Some(b'-' | b'0'..=b'9') => {
                let at = self.s.pos;
                let kind = match self.number() {
                    Ok(Num::Int(t)) if t != "-0" => Unexpected::Unsigned(0),
                    _ => Unexpected::Float(0.0),
                };
                self.s.pos = at;
                kind
            }
            Some(_) => Unexpected::Other("a character that starts no JSON value"),
            None => Unexpected::Other("the end of the text"),
        }
    }

    fn invalid_type<V: Visitor<'de>>(&mut self, visitor: &V) -> DeError {
        de::Error::invalid_type(self.unexpected(), visitor)
    }

    fn number(&mut self) -> Result<Num<'de>, DeError> {
        let span = self.s.number().map_err(DeError::syntax)?;
        let text = span.of(self.text);
        Ok(if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            Num::Float(text)
        } else {
            Num::Int(text)
        })
    }

    /// The string at the next position: borrowed when it holds no escape.
    fn string(&mut self) -> Result<Cow<'de, str>, DeError> {
        let tok = self.s.string().map_err(DeError::syntax)?;
        let raw = tok.span.of(self.text);
        Ok(if tok.escaped {
            Cow::Owned(Unescape::new(raw).collect())
        } else {
            Cow::Borrowed(raw)
        })
    }

    fn visit_string<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'"' => match self.string()? {
                Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            },
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    /// The integer at the next position (no fraction, no exponent), or an error naming
    /// what is there instead. `-0` is a float to serde_json (-0.0) but for the 128-bit
    /// types (`wide`), and so here.
    fn integer<V: Visitor<'de>>(&mut self, visitor: &V, wide: bool) -> Result<&'de str, DeError> {
        let at = self.s.pos;
        if let b'-' | b'0'..=b'9' = self.peek()? {
            if let Num::Int(text) = self.number()? {
                if wide || text != "-0" {
                    return Ok(text);
                }
            }
        }
        self.s.pos = at;
        Err(self.invalid_type(visitor))
    }

    /// An integer to `visitor` as `u64` or `i64`.
    fn visit_integer<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DeError> {
        let text = self.integer(&visitor, false)?;
        match int64(text) {
            Some(Int64::Unsigned(n)) => visitor.visit_u64(n),
            Some(Int64::Signed(n)) => visitor.visit_i64(n),
            None => Err(DeError::text("integer out of range")),
        }
    }

    /// An integer to `visitor` as `u128` or `i128` (for the 128-bit types only, so that
    /// the others link no 128-bit arithmetic).
    fn visit_wide_integer<V: Visitor<'de>>(
        &mut self,
        visitor: V,
        signed: bool,
    ) -> Result<V::Value, DeError> {
        let text = self.integer(&visitor, true)?;
        let out_of_range = || DeError::text("integer out of range");
        if signed {
            visitor.visit_i128(text.parse().map_err(|_| out_of_range())?)
        } else if text.starts_with('-') {
            Err(out_of_range())
        } else {
            visitor.visit_u128(text.parse().map_err(|_| out_of_range())?)
        }
    }

    fn visit_float<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => {}
            _ => return Err(self.invalid_type(&visitor)),
        }
        let text = match self.number()? {
            Num::Int(t) | Num::Float(t) => t,
        };
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => visitor.visit_f64(f),
            _ => Err(DeError::text("number out of range")),
        }
    }

    /// Enters an array or object: one level deeper, or an error past the limit.
    fn enter(&mut self, open: u8) -> Result<(), DeError> {
        self.s.expect(open).map_err(DeError::syntax)?;
        self.depth = self
            .depth
            .checked_sub(1)
            .ok_or(DeError::syntax(JsonError::TooDeep))?;
        Ok(())
    }

    fn leave(&mut self, close: u8) -> Result<(), DeError> {
        self.depth += 1;
        if self.s.peek_ws() == Some(close) {
            self.s.pos += 1;
            Ok(())
        } else {
            Err(DeError::text(if close == b']' {
                "the array has more elements than expected"
            } else {
                "the object has more members than expected"
            }))
        }
    }

    fn visit_array<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DeError> {
        self.enter(b'[')?;
        let value = visitor.visit_seq(Elements {
            de: self,
            first: true,
        })?;
        self.leave(b']')?;
        Ok(value)
    }

    fn visit_object<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, DeError> {
        self.enter(b'{')?;
        let value = visitor.visit_map(Members {
            de: self,
            first: true,
        })?;
        self.leave(b'}')?;
        Ok(value)
    }

    /// Skips one value.
    fn skip(&mut self) -> Result<(), DeError> {
        self.s
            .value(MAX_DEPTH - self.depth, MAX_DEPTH)
            .map(drop)
            .map_err(DeError::syntax)
    }
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'n' => {
                self.s.literal(b"null").map_err(DeError::syntax)?;
                visitor.visit_unit()
            }
            b't' | b'f' => self.deserialize_bool(visitor),
            b'"' => self.visit_string(visitor),
            b'[' => self.visit_array(visitor),
            b'{' => self.visit_object(visitor),
            _ => {
                // As serde_json: `-0` and an integer past 64 bits read as floats.
                let at = self.s.pos;
                if let Num::Int(text) = self.number()? {
                    match int64(text).filter(|_| text != "-0") {
                        Some(Int64::Unsigned(n)) => return visitor.visit_u64(n),
                        Some(Int64::Signed(n)) => return visitor.visit_i64(n),
                        None => {}
                    }
                }
                self.s.pos = at;
                self.visit_float(visitor)
            }
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b't' => {
                self.s.literal(b"true").map_err(DeError::syntax)?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.s.literal(b"false").map_err(DeError::syntax)?;
                visitor.visit_bool(false)
            }
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_wide_integer(visitor, true)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_integer(visitor)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_wide_integer(visitor, false)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_float(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_float(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_string(visitor)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_string(visitor)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_string(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit_string(visitor)
    }

    /// A string's UTF-8 bytes, or an array of numbers.
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'"' => match self.string()? {
                Cow::Borrowed(s) => visitor.visit_borrowed_bytes(s.as_bytes()),
                Cow::Owned(s) => visitor.visit_byte_buf(s.into_bytes()),
            },
            b'[' => self.visit_array(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.peek()? == b'n' {
            self.s.literal(b"null").map_err(DeError::syntax)?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.peek()? == b'n' {
            self.s.literal(b"null").map_err(DeError::syntax)?;
            visitor.visit_unit()
        } else {
            Err(self.invalid_type(&visitor))
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if name == RAW_TOKEN {
            self.peek()?;
            let span = self
                .s
                .value(MAX_DEPTH - self.depth, MAX_DEPTH)
                .map_err(DeError::syntax)?;
            return visitor.visit_map(RawMember {
                text: Some(span.of(self.text)),
            });
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'[' => self.visit_array(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'{' => self.visit_object(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    /// An object by member names, or (as serde_json) an array by position.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'{' => self.visit_object(visitor),
            b'[' => self.visit_array(visitor),
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    /// A string names a unit variant; an object of one member a variant with its content.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.peek()? {
            b'"' => match self.string()? {
                Cow::Borrowed(s) => visitor.visit_enum(s.into_deserializer()),
                Cow::Owned(s) => visitor.visit_enum(s.into_deserializer()),
            },
            b'{' => {
                self.enter(b'{')?;
                let value = visitor.visit_enum(Variant { de: self })?;
                self.leave(b'}')?;
                Ok(value)
            }
            _ => Err(self.invalid_type(&visitor)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.skip()?;
        visitor.visit_unit()
    }
}

/// The elements of an array.
struct Elements<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match (self.de.peek()?, self.first) {
            (b']', true) => return Ok(None),
            (_, true) => {}
            (b',', false) => self.de.s.pos += 1,
            (b']', false) => return Ok(None),
            _ => return Err(DeError::syntax(JsonError::Syntax)),
        }
        self.first = false;
        seed.deserialize(&mut *self.de).map(Some)
    }
}

/// The members of an object.
struct Members<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'de> de::MapAccess<'de> for Members<'_, 'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match (self.de.peek()?, self.first) {
            (b'}', true) => return Ok(None),
            (_, true) => {}
            (b',', false) => self.de.s.pos += 1,
            (b'}', false) => return Ok(None),
            _ => return Err(DeError::syntax(JsonError::Syntax)),
        }
        self.first = false;
        if self.de.peek()? != b'"' {
            return Err(DeError::syntax(JsonError::Syntax));
        }
        seed.deserialize(Key { de: &mut *self.de }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        self.de.s.expect(b':').map_err(DeError::syntax)?;
        seed.deserialize(&mut *self.de)
    }
}

/// A member's name: a string, also read as a number or a bool where the key type is one
/// (a map keyed by integers), as serde_json does.
struct Key<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> Key<'_, 'de> {
    /// The key read as a number by `read` (on a deserializer over the text between its
    /// quotes), for a map keyed by a number type. As serde_json, the whole key must be a
    /// JSON number (no escape, no sign but `-`, no leading zero, no space).
    fn number<V: Visitor<'de>>(
        self,
        visitor: V,
        read: impl FnOnce(&mut Deserializer<'de>, V) -> Result<V::Value, DeError>,
    ) -> Result<V::Value, DeError> {
        let tok = self.de.s.string().map_err(DeError::syntax)?;
        let text = tok.span.of(self.de.text);
        if tok.escaped || !matches!(text.as_bytes().first(), Some(b'-' | b'0'..=b'9')) {
            return Err(de::Error::invalid_type(Unexpected::Str(""), &visitor));
        }
        let mut inner = Deserializer {
            s: Scanner::new(text.as_bytes()),
            text,
            depth: 0,
        };
        let value = read(&mut inner, visitor)?;
        if inner.s.pos == text.len() {
            Ok(value)
        } else {
            Err(DeError::text("invalid type: string, expected a number key"))
        }
    }
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.de.visit_string(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    /// A key is never null.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    /// A unit variant by name.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_enum(self.de, name, variants, visitor)
    }

    /// `"true"` or `"false"`.
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let tok = self.de.s.string().map_err(DeError::syntax)?;
        match (tok.escaped, tok.span.of(self.de.text)) {
            (false, "true") => visitor.visit_bool(true),
            (false, "false") => visitor.visit_bool(false),
            _ => Err(de::Error::invalid_type(Unexpected::Str(""), &visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, |d, v| d.visit_wide_integer(v, true))
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_integer)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, |d, v| d.visit_wide_integer(v, false))
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_float)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.number(visitor, Deserializer::visit_float)
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// serde_json's raw-value protocol: one member named [`RAW_TOKEN`] whose value is the text.
struct RawMember<'de> {
    text: Option<&'de str>,
}

impl<'de> de::MapAccess<'de> for RawMember<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        if self.text.is_none() {
            return Ok(None);
        }
        seed.deserialize(de::value::BorrowedStrDeserializer::new(RAW_TOKEN))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let text = self.text.take().ok_or(DeError::text("no raw value"))?;
        seed.deserialize(de::value::BorrowedStrDeserializer::new(text))
    }
}

/// An enum written as an object of one member: the variant's name, then its content.
struct Variant<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'a, 'de> de::EnumAccess<'de> for Variant<'a, 'de> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        if self.de.peek()? != b'"' {
            return Err(DeError::syntax(JsonError::Syntax));
        }
        let variant = seed.deserialize(Key { de: &mut *self.de })?;
        self.de.s.expect(b':').map_err(DeError::syntax)?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        de::Deserialize::deserialize(&mut *self.de)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(&mut *self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_seq(&mut *self.de, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_struct(&mut *self.de, "", fields, visitor)
    }
}
