//! A small validating JSON scanner: it checks RFC 8259 syntax and UTF-8, measures nesting,
//! and reports where tokens are, without building any value.
//!
//! It is iterative (a bit stack, not recursion), so no input can overflow the stack, and it
//! allocates nothing. The classifier uses it to find the envelope members of a frame and to
//! skip over `params`, `result` and `data` in one pass.

/// Why a JSON text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonError {
    /// Not JSON: a syntax error, invalid UTF-8, or the text ended early.
    Syntax,
    /// Nesting deeper than the configured limit.
    TooDeep,
}

/// A byte range of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    #[inline(always)]
    pub(crate) fn of<'a>(&self, text: &'a str) -> &'a str {
        &text[self.start..self.end]
    }
}

/// A string token: the span between its quotes, escapes still in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StrTok {
    pub span: Span,
    pub escaped: bool,
}

impl StrTok {
    /// An empty token at position 0.
    pub(crate) const EMPTY: StrTok = StrTok {
        span: Span { start: 0, end: 0 },
        escaped: false,
    };
}

const ONES: u64 = u64::MAX / 255;
const HIGHS: u64 = ONES << 7;

/// The bytes of `x` (eight bytes of a string, the first lowest) that a JSON string
/// escapes: a quote, a backslash or a control byte, each with its high bit set. Only the
/// lowest flag is exact (a borrow may flag a byte after it).
#[inline(always)]
fn escaped(x: u64) -> u64 {
    let ctrl = x.wrapping_sub(ONES * 0x20) & !x;
    let q = x ^ (ONES * b'"' as u64);
    let quote = q.wrapping_sub(ONES) & !q;
    let s = x ^ (ONES * b'\\' as u64);
    let slash = s.wrapping_sub(ONES) & !s;
    (ctrl | quote | slash) & HIGHS
}

/// The bytes of `x` that need attention when a string is read: those [`escaped`] flags and
/// the bytes from 0x80, each with its high bit set. Only the lowest flag is exact.
#[inline(always)]
fn specials(x: u64) -> u64 {
    escaped(x) | (x & HIGHS)
}

/// Is `b` a byte that ends the fast path inside a string (quote, backslash, control, non-ASCII)?
#[inline(always)]
fn is_string_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)
}

/// The scanner: a position in a byte slice.
pub(crate) struct Scanner<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Scanner { bytes, pos: 0 }
    }

    /// Skips whitespace and returns the next byte without consuming it.
    #[inline]
    pub(crate) fn peek_ws(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b' ' | b'\n' | b'\r' | b'\t' => self.pos += 1,
                _ => return Some(b),
            }
        }
        None
    }

    /// Skips whitespace, then consumes `expected` or fails.
    #[inline]
    pub(crate) fn expect(&mut self, expected: u8) -> Result<(), JsonError> {
        if self.peek_ws() == Some(expected) {
            self.pos += 1;
            Ok(())
        } else {
            Err(JsonError::Syntax)
        }
    }

    /// Scans a string whose opening quote is at `pos`; leaves `pos` after the closing quote.
    ///
    /// Small enough to inline: the token is put together in the caller, and the scan
    /// ([`Scanner::skip_string`]) returns one flag in a register rather than a token through
    /// memory (which stalled on store forwarding).
    #[inline]
    pub(crate) fn string(&mut self) -> Result<StrTok, JsonError> {
        let start = self.pos + 1;
        let escaped = self.skip_string()?;
        Ok(StrTok {
            span: Span {
                start,
                end: self.pos - 1,
            },
            escaped,
        })
    }

    /// Scans a string whose opening quote is at `pos`; leaves `pos` after the closing quote
    /// and returns whether it holds escapes.
    ///
    /// Most strings of a message (its keys, its method, short values) are plain ASCII that
    /// ends within eight bytes: those are passed over here with one look, in the caller,
    /// and every other goes on in [`skip_string_rest`](Self::skip_string_rest).
    #[inline]
    pub(crate) fn skip_string(&mut self) -> Result<bool, JsonError> {
        debug_assert_eq!(self.bytes.get(self.pos), Some(&b'"'));
        let start = self.pos + 1;
        self.pos = start;
        if let Some(chunk) = self.bytes.get(start..start + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let mask = specials(u64::from_le_bytes(word));
            if mask == 0 {
                self.pos = start + 8;
            } else {
                let at = start + (mask.trailing_zeros() / 8) as usize;
                if self.bytes[at] == b'"' {
                    self.pos = at + 1;
                    return Ok(false);
                }
                self.pos = at;
            }
        }
        self.skip_string_rest()
    }

    /// The rest of a string from `pos` (inside it): leaves `pos` after the closing quote
    /// and returns whether it holds escapes.
    #[inline(never)]
    fn skip_string_rest(&mut self) -> Result<bool, JsonError> {
        let mut escaped = false;
        let bytes = self.bytes;
        loop {
            self.skip_plain();
            let Some(&b) = bytes.get(self.pos) else {
                return Err(JsonError::Syntax);
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                0x80.. => self.pos += utf8_char_len(&bytes[self.pos..])?,
                _ => return Err(JsonError::Syntax),
            }
        }
    }

    /// Advances over ASCII bytes that need no attention inside a string, eight at a time.
    #[inline(always)]
    fn skip_plain(&mut self) {
        let bytes = self.bytes;
        let mut pos = self.pos;
        while let Some(chunk) = bytes.get(pos..pos + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let mask = specials(u64::from_le_bytes(word));
            if mask != 0 {
                pos += (mask.trailing_zeros() / 8) as usize;
                self.pos = pos;
                return;
            }
            pos += 8;
        }
        while let Some(&b) = bytes.get(pos) {
            if is_string_special(b) {
                break;
            }
            pos += 1;
        }
        self.pos = pos;
    }

    /// Validates one escape sequence starting at the backslash.
    fn escape(&mut self) -> Result<(), JsonError> {
        let Some(&b) = self.bytes.get(self.pos + 1) else {
            return Err(JsonError::Syntax);
        };
        match b {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.pos += 2;
                Ok(())
            }
            b'u' => {
                let hex = self
                    .bytes
                    .get(self.pos + 2..self.pos + 6)
                    .ok_or(JsonError::Syntax)?;
                if hex.iter().all(u8::is_ascii_hexdigit) {
                    self.pos += 6;
                    Ok(())
                } else {
                    Err(JsonError::Syntax)
                }
            }
            _ => Err(JsonError::Syntax),
        }
    }

    /// Scans a number at `pos` per the JSON grammar; returns its span.
    #[inline]
    pub(crate) fn number(&mut self) -> Result<Span, JsonError> {
        let start = self.pos;
        self.skip_number()?;
        Ok(Span {
            start,
            end: self.pos,
        })
    }

    /// Scans a number starting at `pos`; leaves `pos` after it.
    fn skip_number(&mut self) -> Result<(), JsonError> {
        let bytes = self.bytes;
        let mut p = self.pos;
        if bytes.get(p) == Some(&b'-') {
            p += 1;
        }
        match bytes.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                p += 1;
                while matches!(bytes.get(p), Some(b'0'..=b'9')) {
                    p += 1;
                }
            }
            _ => return Err(JsonError::Syntax),
        }
        if bytes.get(p) == Some(&b'.') {
            p += 1;
            if !matches!(bytes.get(p), Some(b'0'..=b'9')) {
                return Err(JsonError::Syntax);
            }
            while matches!(bytes.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
        }
        if matches!(bytes.get(p), Some(b'e' | b'E')) {
            p += 1;
            if matches!(bytes.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if !matches!(bytes.get(p), Some(b'0'..=b'9')) {
                return Err(JsonError::Syntax);
            }
            while matches!(bytes.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
        }
        self.pos = p;
        Ok(())
    }

    /// Consumes the literal `word` (`true`, `false` or `null`) at `pos`.
    #[inline]
    pub(crate) fn literal(&mut self, word: &[u8]) -> Result<(), JsonError> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(JsonError::Syntax)
        }
    }

    /// Validates one value starting at the next non-whitespace byte and returns its span.
    ///
    /// `depth` is the nesting depth of the value's container (0 at top level); an array or
    /// object that would be deeper than `max_depth` fails with [`JsonError::TooDeep`].
    #[inline]
    pub(crate) fn value(&mut self, depth: u32, max_depth: u32) -> Result<Span, JsonError> {
        let first = self.peek_ws().ok_or(JsonError::Syntax)?;
        let start = self.pos;
        self.skip_value(first, depth, max_depth)?;
        Ok(Span {
            start,
            end: self.pos,
        })
    }

    /// Scans the value starting at `pos`, whose first byte is `first`.
    fn skip_value(&mut self, first: u8, depth: u32, max_depth: u32) -> Result<(), JsonError> {
        match first {
            b'{' | b'[' => self.container(depth, max_depth),
            b'"' => self.skip_string().map(drop),
            b'-' | b'0'..=b'9' => self.skip_number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => Err(JsonError::Syntax),
        }
    }

    /// Validates an array or object at `pos` without recursion: the kinds of the open
    /// containers live in a bit stack (1 = object), so memory is fixed whatever the input.
    fn container(&mut self, depth: u32, max_depth: u32) -> Result<(), JsonError> {
        let max_depth = max_depth.min(crate::Limits::MAX_DEPTH_CAP);
        let mut stack = [0u64; (crate::Limits::MAX_DEPTH_CAP as usize).div_ceil(64)];
        // Number of containers opened by this call that are still open.
        let mut open: usize = 0;
        // Set when a value was just completed inside the innermost container.
        let mut after_value = false;
        loop {
            let b = self.peek_ws().ok_or(JsonError::Syntax)?;
            if after_value {
                let in_object = stack[(open - 1) / 64] >> ((open - 1) % 64) & 1 == 1;
                match (b, in_object) {
                    (b',', false) => {
                        self.pos += 1;
                        after_value = false;
                        continue;
                    }
                    (b',', true) => {
                        self.pos += 1;
                        self.skip_key()?;
                        after_value = false;
                        continue;
                    }
                    (b']', false) | (b'}', true) => {
                        self.pos += 1;
                        open -= 1;
                        if open == 0 {
                            return Ok(());
                        }
                        continue;
                    }
                    _ => return Err(JsonError::Syntax),
                }
            }
            match b {
                b'[' | b'{' => {
                    if depth + open as u32 + 1 > max_depth {
                        return Err(JsonError::TooDeep);
                    }
                    let is_object = b == b'{';
                    let (word, bit) = (open / 64, open % 64);
                    stack[word] = (stack[word] & !(1 << bit)) | ((is_object as u64) << bit);
                    open += 1;
                    self.pos += 1;
                    let close = if is_object { b'}' } else { b']' };
                    if self.peek_ws() == Some(close) {
                        self.pos += 1;
                        open -= 1;
                        if open == 0 {
                            return Ok(());
                        }
                        after_value = true;
                        continue;
                    }
                    if is_object {
                        self.skip_key()?;
                    }
                }
                b'"' => {
                    self.skip_string()?;
                    after_value = true;
                }
                b'-' | b'0'..=b'9' => {
                    self.skip_number()?;
                    after_value = true;
                }
                b't' => {
                    self.literal(b"true")?;
                    after_value = true;
                }
                b'f' => {
                    self.literal(b"false")?;
                    after_value = true;
                }
                b'n' => {
                    self.literal(b"null")?;
                    after_value = true;
                }
                _ => return Err(JsonError::Syntax),
            }
        }
    }

    /// Passes over the value at the next non-whitespace byte of text known to be valid
    /// JSON (a [`RawValue`](crate::RawValue)'s) and returns its span: only strings and
    /// brackets are followed, nothing is checked again.
    pub(crate) fn valid_value(&mut self) -> Span {
        self.peek_ws();
        let start = self.pos;
        let bytes = self.bytes;
        let mut depth = 0usize;
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'"' => {
                    self.pos += 1;
                    loop {
                        self.skip_plain();
                        match bytes.get(self.pos) {
                            Some(b'"') => break,
                            Some(b'\\') => self.pos += 2,
                            Some(_) => self.pos += 1,
                            None => break,
                        }
                    }
                    self.pos += 1;
                    if depth == 0 {
                        break;
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b'}' | b']' | b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' if depth == 0 => break,
                b'}' | b']' => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => self.pos += 1,
            }
        }
        let end = self.pos.min(bytes.len());
        self.pos = end;
        Span { start, end }
    }

    /// Scans `"key" :` and leaves `pos` before the member's value.
    #[inline]
    pub(crate) fn key(&mut self) -> Result<StrTok, JsonError> {
        if self.peek_ws() != Some(b'"') {
            return Err(JsonError::Syntax);
        }
        let tok = self.string()?;
        self.expect(b':')?;
        Ok(tok)
    }

    /// [`Scanner::key`] where only its validity matters.
    #[inline]
    fn skip_key(&mut self) -> Result<(), JsonError> {
        if self.peek_ws() != Some(b'"') {
            return Err(JsonError::Syntax);
        }
        self.skip_string()?;
        self.expect(b':')
    }

    /// True when only whitespace remains.
    #[inline]
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek_ws().is_none()
    }
}

/// Length of the valid UTF-8 sequence at the start of `b` (whose first byte is >= 0x80).
#[inline]
fn utf8_char_len(b: &[u8]) -> Result<usize, JsonError> {
    let cont = |i: usize, lo: u8, hi: u8| matches!(b.get(i), Some(&c) if (lo..=hi).contains(&c));
    let ok = match b[0] {
        0xC2..=0xDF => cont(1, 0x80, 0xBF).then_some(2),
        0xE0 => (cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF)).then_some(3),
        0xE1..=0xEC | 0xEE..=0xEF => (cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF)).then_some(3),
        0xED => (cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF)).then_some(3),
        0xF0 => (cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)).then_some(4),
        0xF1..=0xF3 => {
            (cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)).then_some(4)
        }
        0xF4 => (cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)).then_some(4),
        _ => None,
    };
    ok.ok_or(JsonError::Syntax)
}

/// Validates that `text` is exactly one JSON value (surrounding whitespace allowed).
pub(crate) fn validate(text: &[u8], max_depth: u32) -> Result<Span, JsonError> {
    let mut s = Scanner::new(text);
    let span = s.value(0, max_depth)?;
    if s.at_end() {
        Ok(span)
    } else {
        Err(JsonError::Syntax)
    }
}

/// Iterates over the characters a JSON string token (escapes in place, already validated)
/// stands for. Lone surrogates in `\u` escapes decode to U+FFFD.
pub(crate) struct Unescape<'a> {
    rest: core::str::Chars<'a>,
}

impl<'a> Unescape<'a> {
    pub(crate) fn new(token: &'a str) -> Self {
        Unescape {
            rest: token.chars(),
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut n = 0;
        for _ in 0..4 {
            n = n * 16 + self.rest.next()?.to_digit(16)?;
        }
        Some(n)
    }
}

impl Iterator for Unescape<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c != '\\' {
            return Some(c);
        }
        Some(match self.rest.next()? {
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let hi = self.hex4()?;
                if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate: pair it with a following `\uDC00..DFFF` if there is one.
                    let mut look = self.rest.clone();
                    if look.next() == Some('\\') && look.next() == Some('u') {
                        let mut probe = Unescape { rest: look };
                        if let Some(lo) = probe.hex4().filter(|lo| (0xDC00..0xE000).contains(lo)) {
                            self.rest = probe.rest;
                            let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            return Some(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                    }
                    '\u{FFFD}'
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            other => other,
        })
    }
}

/// True when `needle` (not empty) occurs in `haystack`. For the short texts of a
/// request's params: one `memchr` per candidate first byte, no searcher set up per call (as
/// `memmem` builds one, which costs more than the search of a small text).
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut at = 0;
    while let Some(i) = memchr::memchr(first, &haystack[at..]) {
        let start = at + i + 1;
        if haystack[start..].starts_with(rest) {
            return true;
        }
        at = start;
    }
    false
}

/// True when the string token (escapes in place) stands for exactly `plain`.
pub(crate) fn token_eq(token: &str, escaped: bool, plain: &str) -> bool {
    if !escaped {
        token == plain
    } else {
        Unescape::new(token).eq(plain.chars())
    }
}

/// Appends `s` as a JSON string literal, quotes included.
pub(crate) fn write_str(out: &mut alloc::vec::Vec<u8>, s: &str) {
    out.push(b'"');
    write_str_body(out, s);
    out.push(b'"');
}

/// Appends the escaped contents of `s`, without quotes, as serde_json escapes them: the
/// runs that need no escape copied whole (found a word at a time), the quote, the backslash
/// and the control bytes escaped.
pub(crate) fn write_str_body(out: &mut alloc::vec::Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        let plain = start + plain_prefix(&bytes[start..]);
        out.extend_from_slice(&bytes[start..plain]);
        let Some(&b) = bytes.get(plain) else {
            return;
        };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
        }
        start = plain + 1;
    }
}

/// How many bytes at the start of `bytes` a JSON string holds as they are (no control
/// byte, quote or backslash), read eight at a time ([`escaped`]).
#[inline]
pub(crate) fn plain_prefix(bytes: &[u8]) -> usize {
    let mut plain = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mask = escaped(u64::from_le_bytes(word));
        if mask != 0 {
            return plain + (mask.trailing_zeros() / 8) as usize;
        }
        plain += 8;
    }
    /// The bytes a JSON string escapes.
    static ESCAPED: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 0x20 {
            table[b] = true;
            b += 1;
        }
        table[b'"' as usize] = true;
        table[b'\\' as usize] = true;
        table
    };
    let rest = &bytes[plain..];
    plain
        + rest
            .iter()
            .position(|&b| ESCAPED[usize::from(b)])
            .unwrap_or(rest.len())
}

/// True when `s` can be written between quotes as it is.
#[inline]
pub(crate) fn needs_no_escape(s: &str) -> bool {
    plain_prefix(s.as_bytes()) == s.len()
}

/// Appends `value` as JSON, with no `Value` between. With `std`, serde_json writes straight
/// into the buffer; without it serde_json offers only `to_vec`, one allocation per value.
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(
    out: &mut alloc::vec::Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    #[cfg(feature = "std")]
    {
        let start = out.len();
        let result = value.serialize(&mut serde_json::Serializer::new(&mut *out));
        if result.is_err() {
            out.truncate(start);
        }
        result
    }
    #[cfg(not(feature = "std"))]
    {
        out.extend_from_slice(&serde_json::to_vec(value)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_finds_what_memmem_finds() {
        let hay = b"{\"_meta\":{\"progressToken\":1},\"pp\":\"progress\"}";
        for start in 0..hay.len() {
            for end in start..=hay.len() {
                for needle in [
                    &b"progressToken"[..],
                    b"pp",
                    b"p",
                    b"\"_meta\"",
                    b"}",
                    b"x",
                    b"",
                ] {
                    let hay = &hay[start..end];
                    let expected = memchr::memmem::find(hay, needle).is_some();
                    assert_eq!(contains(hay, needle), expected, "{hay:?} {needle:?}");
                }
            }
        }
    }

    fn ok(s: &str) -> bool {
        validate(s.as_bytes(), 128).is_ok()
    }

    /// A string is read the same whether it ends within the first eight bytes (one look in
    /// the caller) or after them: each kind of byte that needs attention (the closing quote,
    /// an escape, a control byte, a two-byte character, a bad byte, a cut character) at
    /// every place up to 19, with text after the string, judged as serde_json judges it.
    #[test]
    fn strings_are_read_alike_wherever_their_special_bytes_fall() {
        let specials: [&[u8]; 7] = [
            b"",
            b"\\n",
            b"\\u00e9",
            b"\x01",
            "é".as_bytes(),
            b"\xff",
            b"\xc3",
        ];
        for len in 0..20 {
            for at in 0..=len {
                for special in specials {
                    let mut text = b"\"".to_vec();
                    text.extend(core::iter::repeat_n(b'a', at));
                    text.extend_from_slice(special);
                    text.extend(core::iter::repeat_n(b'b', len - at));
                    text.extend_from_slice(b"\", 1]");
                    let end = text.len() - 4;
                    let mut scanner = Scanner::new(&text);
                    let read = scanner.skip_string();
                    let json = serde_json::from_slice::<serde_json::Value>(&text[..end]);
                    let escaped = special.first() == Some(&b'\\');
                    match read {
                        Ok(flag) => {
                            assert!(json.is_ok(), "{text:?}: serde_json refuses it");
                            assert_eq!((flag, scanner.pos), (escaped, end), "{text:?}");
                        }
                        Err(_) => assert!(json.is_err(), "{text:?}: serde_json reads it"),
                    }
                }
            }
        }
    }

    /// Strings are escaped as serde_json escapes them, whatever byte needs it and wherever
    /// it falls (within a word of eight or in the bytes after the last whole one), and the
    /// plain prefix ends at the first such byte.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let specials = [
            "", "\"", "\\", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}", "é",
            "😀", " ", "/",
        ];
        for len in 0..20 {
            for at in 0..=len {
                for special in specials {
                    for twice in [false, true] {
                        let mut text = "a".repeat(at);
                        text.push_str(special);
                        text.push_str(&"b".repeat(len - at));
                        if twice {
                            text.push_str(special);
                        }
                        let mut out = alloc::vec::Vec::new();
                        write_str(&mut out, &text);
                        assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
                        let first = text
                            .bytes()
                            .position(|b| b < 0x20 || b == b'"' || b == b'\\')
                            .unwrap_or(text.len());
                        assert_eq!(plain_prefix(text.as_bytes()), first, "{text:?}");
                        assert_eq!(needs_no_escape(&text), first == text.len(), "{text:?}");
                    }
                }
            }
        }
        // Every byte value, alone and at each place of a word.
        for b in 0..=0x7fu8 {
            for at in 0..9 {
                let mut text = "x".repeat(at);
                text.push(char::from(b));
                let mut out = alloc::vec::Vec::new();
                write_str(&mut out, &text);
                assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
            }
        }
    }

    #[test]
    fn accepts_what_json_allows() {
        for s in [
            "0",
            "-0",
            "1.5",
            "-7",
            "1e3",
            "1E+3",
            "1.0e-3",
            "123456789012345678901234567890",
            "\"\"",
            "\"a\\u00e9\\n\\\"\"",
            "\"é😀\"",
            "true",
            "false",
            "null",
            "[]",
            "{}",
            " [1, {\"a\": [true, null]}, \"x\"] ",
            "{\"a\":{\"b\":{}}}",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn refuses_what_json_does_not_allow() {
        for s in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "-",
            "+1",
            "1e",
            "1e+",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{1:2}",
            "[1 2]",
            "\"\\x\"",
            "\"\\u12G4\"",
            "\"a",
            "\"\u{1}\"",
            "[",
            "]",
            "{\"a\":1]",
            "[1}",
            "1 2",
            "NaN",
            "[01]",
        ] {
            assert!(!ok(s), "{s:?}");
        }
        assert_eq!(validate(b"\"\xff\"", 8), Err(JsonError::Syntax));
        assert_eq!(validate(b"\"\xed\xa0\x80\"", 8), Err(JsonError::Syntax));
        assert_eq!(validate(b"\"\xc0\x80\"", 8), Err(JsonError::Syntax));
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        assert_eq!(validate(b"[[[]]]", 3), Ok(Span { start: 0, end: 6 }));
        assert_eq!(validate(b"[[[[]]]]", 3), Err(JsonError::TooDeep));
        let deep = alloc::vec![b'['; 1_000_000];
        assert_eq!(validate(&deep, 128), Err(JsonError::TooDeep));
        let mut balanced = alloc::vec![b'['; 1000];
        balanced.extend(alloc::vec![b']'; 1000]);
        assert_eq!(validate(&balanced, 1024).map(|s| s.end), Ok(2000));
        assert_eq!(validate(&balanced, 999), Err(JsonError::TooDeep));
    }

    #[test]
    fn unescape_decodes_pairs_and_lone_surrogates() {
        let s: alloc::string::String = Unescape::new(r#"a\u00e9\ud83d\ude00\ud800x\n"#).collect();
        assert_eq!(s, "aé😀\u{FFFD}x\n");
        assert!(token_eq(r"\u006dethod", true, "method"));
        assert!(!token_eq(r"\u006dethods", true, "method"));
    }

    #[test]
    fn write_str_escapes_round_trip() {
        let mut out = alloc::vec::Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}é");
        assert_eq!(out, r#""a\"b\\c\n\u0001é""#.as_bytes());
        let parsed: alloc::string::String = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed, "a\"b\\c\n\u{1}é");
    }
}
