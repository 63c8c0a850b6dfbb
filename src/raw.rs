//! `RawValue`: a piece of JSON text, validated once and then passed around unparsed.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use core::fmt;

/// A validated JSON value kept as text: `params`, `result` and error `data` as the peer
/// wrote them, borrowed from the receive buffer.
///
/// Decode it into a type with [`RawValue::deserialize`]; write it out again unchanged. It is
/// unsized like `str`: hold it as `&RawValue` (borrowed) or `Box<RawValue>` (owned).
#[repr(transparent)]
#[derive(PartialEq, Eq, Hash)]
pub struct RawValue(str);

impl RawValue {
    /// Wraps text known to be one valid JSON value.
    #[inline]
    pub(crate) fn from_validated(json: &str) -> &RawValue {
        // SAFETY: `RawValue` is `repr(transparent)` over `str`, so the pointer cast keeps
        // the same layout and the same lifetime.
        unsafe { &*(json as *const str as *const RawValue) }
    }

    pub(crate) fn boxed_from_validated(json: Box<str>) -> Box<RawValue> {
        // SAFETY: as in `from_validated`; the allocation's layout is unchanged.
        unsafe { Box::from_raw(Box::into_raw(json) as *mut RawValue) }
    }

    /// Checks that `json` is exactly one JSON value (whitespace around it allowed, nesting up
    /// to [`Limits::MAX_DEPTH_CAP`](crate::Limits::MAX_DEPTH_CAP)) and wraps it.
    pub fn from_json(json: &str) -> Result<&RawValue, InvalidJson> {
        crate::json::validate(json.as_bytes(), crate::Limits::MAX_DEPTH_CAP)
            .map(|span| RawValue::from_validated(&json[span.start..span.end]))
            .map_err(|_| InvalidJson)
    }

    /// Writes one JSON object from pieces each valid on its own (member names escaped here,
    /// values given as [`RawValue`]s, strings or serializable values) into `scratch`
    /// (cleared first), and takes one allocation of its exact size: text put together
    /// without [`from_json`](RawValue::from_json) scanning it again, valid by construction.
    ///
    /// ```
    /// use sansrpc::RawValue;
    /// let data = RawValue::from_json("[1,2]").unwrap();
    /// let mut scratch = Vec::new();
    /// let params = RawValue::write_object(&mut scratch, |o| -> Result<(), serde_json::Error> {
    ///     o.string("topic", "a.\"b\"");
    ///     o.raw("data", data);
    ///     o.array("seen", |a| {
    ///         a.object(|o| o.value("ok", &true))?;
    ///         a.value(&7)
    ///     })
    /// })
    /// .unwrap();
    /// assert_eq!(
    ///     params.get(),
    ///     r#"{"topic":"a.\"b\"","data":[1,2],"seen":[{"ok":true},7]}"#
    /// );
    /// ```
    ///
    /// # Errors
    /// The closure's error (the first a [`value`](ObjectWriter::value) met serializing,
    /// passed on with `?`), with nothing kept. A closure that cannot fail names
    /// [`Infallible`](core::convert::Infallible) and is matched with `let Ok(raw) = ...`.
    pub fn write_object<E>(
        scratch: &mut alloc::vec::Vec<u8>,
        members: impl FnOnce(&mut ObjectWriter<'_>) -> Result<(), E>,
    ) -> Result<Box<RawValue>, E> {
        scratch.clear();
        ObjectWriter::write(scratch, members)?;
        // SAFETY: the writers put only ASCII punctuation, names and strings escaped by
        // serde_json's writer, and text of values (UTF-8) into `scratch`.
        let text = unsafe { core::str::from_utf8_unchecked(scratch) };
        Ok(RawValue::boxed_from_validated(Box::from(text)))
    }

    /// serde_json's raw JSON text as this crate's, not scanned again: serde_json read it as
    /// one JSON value (its nesting bounded as serde_json bounds it, not by
    /// [`Limits::MAX_DEPTH_CAP`](crate::Limits::MAX_DEPTH_CAP)).
    pub fn from_serde_json(raw: &serde_json::value::RawValue) -> &RawValue {
        RawValue::from_validated(raw.get())
    }

    /// Like [`RawValue::from_json`], owning the text.
    pub fn from_string(json: alloc::string::String) -> Result<Box<RawValue>, InvalidJson> {
        let span = crate::json::validate(json.as_bytes(), crate::Limits::MAX_DEPTH_CAP)
            .map_err(|_| InvalidJson)?;
        Ok(RawValue::boxed_from_validated(Box::from(
            &json[span.start..span.end],
        )))
    }

    /// Serializes `value` with serde_json and wraps the text. What serde_json writes is one
    /// JSON value, so it is not scanned again, nor copied, as
    /// [`from_string`](RawValue::from_string) would: the way to turn a typed item or result
    /// into raw JSON.
    pub fn from_serialize<T: serde::Serialize + ?Sized>(
        value: &T,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        #[cfg(feature = "std")]
        let text = serde_json::to_string(value)?;
        #[cfg(not(feature = "std"))]
        let text = {
            let mut out = alloc::vec::Vec::with_capacity(128);
            crate::json::write_json(&mut out, value)?;
            // serde_json writes UTF-8; a failure here would be serde_json's bug.
            alloc::string::String::from_utf8(out).map_err(serde::ser::Error::custom)?
        };
        Ok(RawValue::boxed_from_validated(text.into_boxed_str()))
    }

    /// Like [`from_serialize`](RawValue::from_serialize), writing the text into `scratch`
    /// (cleared first) and taking one allocation of its exact size: for code that turns
    /// many values into raw JSON and keeps one buffer for them.
    pub fn from_serialize_in<T: serde::Serialize + ?Sized>(
        value: &T,
        scratch: &mut alloc::vec::Vec<u8>,
    ) -> Result<Box<RawValue>, serde_json::Error> {
        scratch.clear();
        crate::json::write_json(scratch, value)?;
        // SAFETY: serde_json's serializer writes only UTF-8: strings and keys as they are
        // (escaped), everything else ASCII; its own `to_string` relies on the same.
        let text = unsafe { core::str::from_utf8_unchecked(scratch) };
        Ok(RawValue::boxed_from_validated(Box::from(text)))
    }

    /// The JSON text `null`.
    pub const NULL: &'static RawValue = {
        // SAFETY: as in `from_validated`.
        unsafe { &*("null" as *const str as *const RawValue) }
    };

    /// The JSON text.
    #[inline]
    pub fn get(&self) -> &str {
        &self.0
    }

    /// Decodes the value into `T` with serde_json; borrowed fields borrow from `self`.
    pub fn deserialize<'de, T: serde::Deserialize<'de>>(&'de self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// True for `null`.
    #[inline]
    pub fn is_null(&self) -> bool {
        &self.0 == "null"
    }

    /// The members of an object, in the order written, each name with its value, read
    /// from the text as they are asked for (no value is built, nothing is allocated);
    /// `None` when the value is not an object. A name written twice comes twice.
    ///
    /// ```
    /// use sansrpc::RawValue;
    /// let params = RawValue::from_json(r#"{"name": "add", "arguments": {"a": 1}}"#).unwrap();
    /// let mut members = params.members().unwrap();
    /// let (name, value) = members.next().unwrap();
    /// assert!(name == "name" && value.get() == r#""add""#);
    /// let (name, value) = members.next().unwrap();
    /// assert!(name == "arguments" && value.get() == r#"{"a": 1}"#);
    /// assert!(members.next().is_none());
    /// assert!(RawValue::from_json("[1]").unwrap().members().is_none());
    /// ```
    pub fn members(&self) -> Option<Members<'_>> {
        let mut s = crate::json::Scanner::new(self.0.as_bytes());
        if s.peek_ws() != Some(b'{') {
            return None;
        }
        Some(Members {
            text: &self.0,
            pos: s.pos + 1,
            first: true,
        })
    }
}

/// The members of an object ([`RawValue::members`]).
#[derive(Debug, Clone)]
pub struct Members<'a> {
    text: &'a str,
    /// Where the next member (or the `,` before it) starts; `usize::MAX` once done.
    pos: usize,
    first: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = (MemberName<'a>, &'a RawValue);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos == usize::MAX {
            return None;
        }
        let text = self.text;
        let mut s = crate::json::Scanner {
            bytes: text.as_bytes(),
            pos: self.pos,
        };
        // The text is one valid JSON value (every way of making a `RawValue` checks it), so
        // a member is either there or the object ends, and its value needs no second check.
        let member = (|| {
            match (s.peek_ws()?, self.first) {
                (b'}', _) => return None,
                (b',', false) => s.pos += 1,
                (_, true) => {}
                _ => return None,
            }
            let name = s.key().ok()?;
            let value = s.valid_value();
            Some((
                MemberName {
                    raw: name.span.of(text),
                    escaped: name.escaped,
                },
                RawValue::from_validated(value.of(text)),
            ))
        })();
        self.first = false;
        self.pos = if member.is_some() { s.pos } else { usize::MAX };
        member
    }
}

/// A member's name as written in an object ([`RawValue::members`]): compared and decoded
/// without an allocation unless it holds escapes.
#[derive(Debug, Clone, Copy)]
pub struct MemberName<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> MemberName<'a> {
    /// The text between the quotes, escapes in place.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The name, escapes decoded (borrowed from the text when it has none; a lone
    /// surrogate escape decodes to U+FFFD).
    pub fn decoded(&self) -> alloc::borrow::Cow<'a, str> {
        if self.escaped {
            alloc::borrow::Cow::Owned(crate::json::Unescape::new(self.raw).collect())
        } else {
            alloc::borrow::Cow::Borrowed(self.raw)
        }
    }
}

/// The decoded name is `other`.
impl PartialEq<str> for MemberName<'_> {
    fn eq(&self, other: &str) -> bool {
        if self.escaped {
            crate::json::Unescape::new(self.raw).eq(other.chars())
        } else {
            self.raw == other
        }
    }
}

impl PartialEq<&str> for MemberName<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// The members of an object being written ([`RawValue::write_object`]): each call writes
/// one member, its name escaped, in the order called.
pub struct ObjectWriter<'a> {
    out: &'a mut alloc::vec::Vec<u8>,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    fn write<E>(
        out: &'a mut alloc::vec::Vec<u8>,
        members: impl FnOnce(&mut ObjectWriter<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        out.push(b'{');
        let mut writer = ObjectWriter { out, first: true };
        // Closed even after an error, so that text whose error was ignored stays valid.
        let written = members(&mut writer);
        writer.out.push(b'}');
        written
    }

    fn name(&mut self, name: &str) {
        let comma = !core::mem::replace(&mut self.first, false);
        if crate::json::needs_no_escape(name) {
            // A name is short: its pieces pushed into room reserved once.
            self.out.reserve(name.len() + 4);
            if comma {
                self.out.push(b',');
            }
            self.out.push(b'"');
            self.out.extend_from_slice(name.as_bytes());
            self.out.extend_from_slice(b"\":");
        } else {
            if comma {
                self.out.push(b',');
            }
            write_string(self.out, name);
            self.out.push(b':');
        }
    }

    /// A member whose value is JSON text already.
    pub fn raw(&mut self, name: &str, value: &RawValue) {
        self.name(name);
        self.out.extend_from_slice(value.get().as_bytes());
    }

    /// A member whose value is a string, escaped here.
    pub fn string(&mut self, name: &str, value: &str) {
        self.name(name);
        write_string(self.out, value);
    }

    /// A member whose value serde_json writes.
    ///
    /// # Errors
    /// `value`'s own serialization error (the object is then abandoned).
    pub fn value<T: serde::Serialize + ?Sized>(
        &mut self,
        name: &str,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.name(name);
        write_value(self.out, value)
    }

    /// A member whose value is an array, its elements written by `elements`.
    ///
    /// # Errors
    /// The first error of `elements`.
    pub fn array<E>(
        &mut self,
        name: &str,
        elements: impl FnOnce(&mut ArrayWriter<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.name(name);
        self.out.push(b'[');
        let mut writer = ArrayWriter {
            out: self.out,
            first: true,
        };
        let written = elements(&mut writer);
        self.out.push(b']');
        written
    }
}

/// The elements of an array being written ([`ObjectWriter::array`]).
pub struct ArrayWriter<'a> {
    out: &'a mut alloc::vec::Vec<u8>,
    first: bool,
}

impl ArrayWriter<'_> {
    fn next(&mut self) {
        if !core::mem::replace(&mut self.first, false) {
            self.out.push(b',');
        }
    }

    /// An element that is an object, its members written by `members`.
    ///
    /// # Errors
    /// The first error of `members`.
    pub fn object<E>(
        &mut self,
        members: impl FnOnce(&mut ObjectWriter<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.next();
        ObjectWriter::write(self.out, members)
    }

    /// An element serde_json writes.
    ///
    /// # Errors
    /// `value`'s own serialization error.
    pub fn value<T: serde::Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        self.next();
        write_value(self.out, value)
    }
}

/// `value` as serde_json writes it, or `null` in its place when it fails to serialize (so
/// that the text stays valid should the caller go on).
fn write_value<T: serde::Serialize + ?Sized>(
    out: &mut alloc::vec::Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    crate::json::write_json(out, value).inspect_err(|_| out.extend_from_slice(b"null"))
}

/// `text` as a JSON string, escaped as serde_json escapes it.
fn write_string(out: &mut alloc::vec::Vec<u8>, text: &str) {
    // Most names and many strings need no escape: copied as they are, without serde's
    // serializer around them.
    if crate::json::needs_no_escape(text) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        // A string always serializes, and writing to a `Vec` does not fail.
        let _ = crate::json::write_json(out, text);
    }
}

/// The text given to [`RawValue::from_json`] was not one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidJson;

impl fmt::Display for InvalidJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a single valid JSON value")
    }
}

#[cfg(feature = "std")]
impl std::error::Error for InvalidJson {}

impl ToOwned for RawValue {
    type Owned = Box<RawValue>;

    fn to_owned(&self) -> Box<RawValue> {
        RawValue::boxed_from_validated(Box::from(&self.0))
    }
}

impl Clone for Box<RawValue> {
    fn clone(&self) -> Self {
        (**self).to_owned()
    }
}

impl fmt::Debug for RawValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawValue({})", &self.0)
    }
}

impl fmt::Display for RawValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RawValue {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'a> From<&'a RawValue> for alloc::borrow::Cow<'a, RawValue> {
    fn from(raw: &'a RawValue) -> Self {
        alloc::borrow::Cow::Borrowed(raw)
    }
}

impl From<Box<RawValue>> for alloc::borrow::Cow<'_, RawValue> {
    fn from(raw: Box<RawValue>) -> Self {
        alloc::borrow::Cow::Owned(raw)
    }
}

/// Writes the JSON text as it is (with serde_json's serializers: byte for byte).
impl serde::Serialize for RawValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// Reads any JSON value as text (from serde_json's deserializers: byte for byte).
impl<'de> serde::Deserialize<'de> for Box<RawValue> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let text: Box<str> = raw.into();
        Ok(RawValue::boxed_from_validated(text))
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use std::collections::BTreeMap;

    /// A map serde_json cannot write (its keys are not strings).
    fn unwritable() -> BTreeMap<(u8, u8), u8> {
        BTreeMap::from([((1, 2), 3)])
    }

    #[test]
    fn written_objects_are_one_valid_value() {
        let mut scratch = b"left over".to_vec();
        let raw = RawValue::write_object(&mut scratch, |o| -> Result<(), serde_json::Error> {
            o.string("\u{1F600} \"q\"\n", "\u{0}é\\");
            o.array("empty", |_| Ok(()))?;
            o.array("nested", |a| {
                a.object(|_| Ok(()))?;
                a.object(|o| o.array("x", |a| a.value(&[1, 2])))
            })?;
            o.raw("null", RawValue::NULL);
            o.value("n", &-1.5)
        })
        .unwrap();
        assert!(RawValue::from_json(raw.get()).is_ok(), "{raw}");
        let back: serde_json::Value = raw.deserialize().unwrap();
        assert_eq!(back["\u{1F600} \"q\"\n"], "\u{0}é\\");
        assert_eq!(back["nested"][1]["x"], serde_json::json!([[1, 2]]));
        assert_eq!(back["n"], -1.5);
        let Ok(empty) =
            RawValue::write_object(&mut scratch, |_| Ok::<_, core::convert::Infallible>(()));
        assert_eq!(empty.get(), "{}");
    }

    #[test]
    fn a_failed_value_is_an_error_and_ignored_it_leaves_valid_text() {
        let mut scratch = Vec::new();
        let failed = RawValue::write_object(&mut scratch, |o| {
            o.string("a", "b");
            o.value("bad", &unwritable())
        });
        assert!(failed.is_err());
        // A caller that ignores the errors still gets one JSON value, `null` in their place.
        let raw = RawValue::write_object(&mut scratch, |o| -> Result<(), serde_json::Error> {
            let _ = o.value("bad", &unwritable());
            let _ = o.array("list", |a| -> Result<(), serde_json::Error> {
                let _ = a.value(&unwritable());
                a.object(|o| o.value("bad", &unwritable()))
            });
            o.string("after", "ok");
            Ok(())
        })
        .unwrap();
        assert_eq!(
            raw.get(),
            r#"{"bad":null,"list":[null,{"bad":null}],"after":"ok"}"#
        );
    }
}
