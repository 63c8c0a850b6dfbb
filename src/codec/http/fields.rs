//! A request head's target and header fields, kept in one buffer: one allocation per head,
//! whatever the number of fields (a `String` per name and a `Vec` per value made two per
//! field).

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

/// Where a field's name and value lie in [`Fields`]' buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    name: (u32, u32),
    value: (u32, u32),
}

/// The request target and header fields of a request head, in the order received: their
/// bytes in one buffer, and where each name and value lies in it. A
/// [`RequestDecoder::keeping_fields`](super::RequestDecoder::keeping_fields) decoder keeps
/// them in [`Head::fields`](super::Head::fields); [`Fields::new`] and [`Fields::push`] build
/// them by hand.
#[derive(Clone, Default)]
pub struct Fields {
    text: Vec<u8>,
    target: (u32, u32),
    /// On the heap, not inline: a head is moved several times between its parser and its
    /// reader, and sixteen places inline made every move of it copy 350 bytes.
    spans: Vec<Span>,
    /// Every name is known to be in lower case (`http`'s names are): not lowered again.
    lower: bool,
}

fn range((start, end): (u32, u32)) -> Range<usize> {
    start as usize..end as usize
}

/// `bytes` as text when they are UTF-8: ASCII (what a header's bytes nearly always are) is
/// seen eight bytes a step, and anything else goes through `from_utf8`, which for a few
/// dozen bytes costs more than the whole of the ASCII check.
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut high = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        high |= u64::from_ne_bytes(word);
    }
    let ascii = high & HIGH == 0 && chunks.remainder().iter().all(u8::is_ascii);
    match ascii {
        // SAFETY: ASCII bytes are UTF-8.
        true => Some(unsafe { core::str::from_utf8_unchecked(bytes) }),
        false => core::str::from_utf8(bytes).ok(),
    }
}

impl Fields {
    /// No target and no fields.
    pub fn new() -> Self {
        Fields::default()
    }

    /// No target and no fields, with room for `bytes` of them and `fields` fields.
    pub fn with_capacity(bytes: usize, fields: usize) -> Self {
        Fields {
            text: Vec::with_capacity(bytes),
            target: (0, 0),
            spans: Vec::with_capacity(fields),
            lower: false,
        }
    }

    /// The target and fields httparse read out of `head`, which `target` and every name and
    /// value of `headers` point into: `head` is copied once.
    pub(super) fn parsed(head: &[u8], target: &str, headers: &[httparse::Header<'_>]) -> Self {
        let base = head.as_ptr() as usize;
        let at = |s: &[u8]| {
            let start = (s.as_ptr() as usize).wrapping_sub(base) as u32;
            (start, start + s.len() as u32)
        };
        // The parser's slices all lie in `head` (at most `MAX_HEAD` bytes): offsets fit.
        let inside = |s: &[u8]| {
            s.is_empty()
                || (s.as_ptr() as usize >= base
                    && s.as_ptr() as usize + s.len() <= base + head.len())
        };
        let mut fields = Fields {
            text: head.to_vec(),
            target: if inside(target.as_bytes()) {
                at(target.as_bytes())
            } else {
                (0, 0)
            },
            spans: Vec::with_capacity(headers.len()),
            lower: false,
        };
        for h in headers {
            if inside(h.name.as_bytes()) && inside(h.value) {
                fields.spans.push(Span {
                    name: at(h.name.as_bytes()),
                    value: at(h.value),
                });
            }
        }
        fields
    }

    /// The request target (`/mcp?x=1`); empty when none was kept.
    pub fn target(&self) -> &str {
        core::str::from_utf8(&self.text[range(self.target)]).unwrap_or_default()
    }

    /// Sets the request target.
    pub(crate) fn set_target(&mut self, target: &str) {
        self.target = self.append(target.as_bytes());
    }

    /// Adds a field after the others.
    pub fn push(&mut self, name: &str, value: &[u8]) {
        self.lower = false;
        self.push_unlowered(name, value);
    }

    /// [`push`](Self::push), leaving what is known of the names' case as it is (the
    /// caller knows `name` is in lower case, or clears `lower` itself).
    fn push_unlowered(&mut self, name: &str, value: &[u8]) {
        let name = self.append(name.as_bytes());
        let value = self.append(value);
        self.spans.push(Span { name, value });
    }

    fn append(&mut self, bytes: &[u8]) -> (u32, u32) {
        let start = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        (start, self.text.len() as u32)
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn name_of(&self, span: &Span) -> &str {
        // Names are tokens (ASCII) as the parser reads them, and `&str` as `push` takes them.
        core::str::from_utf8(&self.text[range(span.name)]).unwrap_or_default()
    }

    /// Every field (name, value) in the order received.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> + Clone + '_ {
        self.spans
            .iter()
            .map(|s| (self.name_of(s), &self.text[range(s.value)]))
    }

    /// The value of the first field named `name` (ignoring ASCII case).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        // Bytes against bytes: a lookup reads no name as text (a head is looked up a dozen
        // times per request).
        self.find(name.as_bytes(), false)
    }

    /// The value of the first field named `name`: byte for byte when `exact`, else in any
    /// case. The length first, from the span (no slice made): most names differ in it.
    fn find(&self, name: &[u8], exact: bool) -> Option<&[u8]> {
        self.spans
            .iter()
            .find(|s| {
                (s.name.1 - s.name.0) as usize == name.len() && {
                    let have = &self.text[range(s.name)];
                    match exact {
                        true => have == name,
                        false => have.eq_ignore_ascii_case(name),
                    }
                }
            })
            .map(|s| &self.text[range(s.value)])
    }

    /// [`get`](Self::get) for a `name` in lower case: when every name here is known to be
    /// in lower case too (`http`'s), compared byte for byte rather than letter by letter
    /// in either case.
    pub(crate) fn get_lowercase(&self, name: &str) -> Option<&[u8]> {
        debug_assert!(!name.bytes().any(|b| b.is_ascii_uppercase()));
        self.find(name.as_bytes(), self.lower)
    }

    /// Keeps only the fields for which `keep` says true.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &[u8]) -> bool) {
        let text = &self.text;
        self.spans.retain(|s| {
            let name = core::str::from_utf8(&text[range(s.name)]).unwrap_or_default();
            keep(name, &text[range(s.value)])
        });
    }

    /// Removes every field named `name` (any case).
    pub fn remove(&mut self, name: &str) {
        let (name, text) = (name.as_bytes(), &self.text);
        self.spans
            .retain(|s| !text[range(s.name)].eq_ignore_ascii_case(name));
    }

    /// The fields of `http`'s names, which are in lower case (its `HeaderName` lowers them
    /// as it is made), pushed by [`Head::from_checked_parts`](super::Head::from_checked_parts):
    /// what [`make_text_without`](Self::make_text_without) need not lower.
    pub(super) fn push_lowercase(&mut self, name: &str, value: &[u8]) {
        debug_assert!(!name.bytes().any(|b| b.is_ascii_uppercase()));
        if self.spans.is_empty() {
            self.lower = true;
        }
        self.push_unlowered(name, value);
    }

    /// What a handler is shown of a request's fields, in one pass: every field named
    /// `without` (any case) removed, the other names written in lower case, and their
    /// values made text as [`make_values_text`](Self::make_values_text) does.
    pub(crate) fn make_text_without(&mut self, without: &str) {
        let without = without.as_bytes();
        // One look at the whole buffer: when it is UTF-8 (nearly always), every value is
        // text already and none is looked at on its own. (Each value lies between ASCII
        // bytes or whole pieces of text: the parsed head's delimiters, names and targets
        // pushed as `&str`, lossy conversions appended; a value that is not UTF-8 cannot
        // become so beside them.)
        let text = as_text(&self.text).is_some();
        let mut i = 0;
        while i < self.spans.len() {
            let Span { name, value } = self.spans[i];
            let name = &mut self.text[range(name)];
            if name.eq_ignore_ascii_case(without) {
                self.spans.remove(i);
                continue;
            }
            if !self.lower {
                name.make_ascii_lowercase();
            }
            if !text {
                self.make_value_text(i, value);
            }
            i += 1;
        }
        self.lower = true;
    }

    /// Replaces every value that is not UTF-8 with its lossy conversion (`U+FFFD` for each
    /// bad sequence), so that each value reads as text; values already text are left where
    /// they are (no copy).
    pub fn make_values_text(&mut self) {
        for i in 0..self.spans.len() {
            self.make_value_text(i, self.spans[i].value);
        }
    }

    /// Field `i`'s `value` made text: left where it is when it is ASCII or UTF-8, its lossy
    /// conversion appended and pointed to when not.
    fn make_value_text(&mut self, i: usize, value: (u32, u32)) {
        let value = range(value);
        if as_text(&self.text[value.clone()]).is_some() {
            return;
        }
        if let Cow::Owned(fixed) = alloc::string::String::from_utf8_lossy(&self.text[value]) {
            self.spans[i].value = self.append(fixed.as_bytes());
        }
    }
}

impl PartialEq for Fields {
    fn eq(&self, other: &Self) -> bool {
        self.target() == other.target() && self.iter().eq(other.iter())
    }
}

impl Eq for Fields {}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Value<'a>(&'a [u8]);
        impl fmt::Debug for Value<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match core::str::from_utf8(self.0) {
                    Ok(text) => fmt::Debug::fmt(text, f),
                    Err(_) => fmt::Debug::fmt(self.0, f),
                }
            }
        }
        f.debug_struct("Fields")
            .field("target", &self.target())
            .field(
                "fields",
                &DebugList(self.iter().map(|(n, v)| (n, Value(v)))),
            )
            .finish()
    }
}

/// Lists what an iterator yields, for `Debug`.
struct DebugList<I>(I);

impl<I: Iterator<Item = T> + Clone, T: fmt::Debug> fmt::Debug for DebugList<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.clone()).finish()
    }
}
