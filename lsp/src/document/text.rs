//! One open document: its text in a rope, and every conversion between LSP positions and
//! places in that text.

use std::borrow::Cow;
use std::fmt;

use lsp_types::{Position, Range, TextDocumentContentChangeEvent, TextDocumentItem, Uri};
use ropey::{LineType, Rope};

use super::encoding::PositionEncoding;
use super::warning::{Adjustment, Endpoint, Warning};

/// The only line breaks of LSP: LF, CRLF and CR (not U+2028, not form feed, not NEL).
const LINES: LineType = LineType::LF_CR;

/// An open text document: its URI, language, version and text, and the position encoding
/// its positions count in.
///
/// Cloning is cheap: the text is a rope whose nodes are shared, so a clone copies no text
/// (it costs the URI's and the language id's strings). A clone is a snapshot: changes to
/// the store's document after it was taken do not reach it.
///
/// Lines end with LF, CRLF or CR, and with nothing else; a document has one line more than
/// it has line endings (`""` has one line, `"a\n"` two). Positions are resolved as the
/// specification says, and where it says nothing, as [`Adjustment`] describes: no position
/// and no offset is refused, and none makes a method panic.
#[derive(Clone)]
pub struct TextDocument {
    uri: Uri,
    language_id: String,
    version: i32,
    encoding: PositionEncoding,
    text: Rope,
}

/// One line of a document, as [`TextDocument::lines`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentLine<'a> {
    /// Its number, from 0.
    pub number: u32,
    /// The byte offsets of its text in the document, its line ending left out.
    pub offsets: std::ops::Range<usize>,
    /// Its text without its line ending: borrowed when it lies in one piece of the rope.
    pub text: Cow<'a, str>,
}

/// A position resolved to a place in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The byte offset of the place in the text (UTF-8).
    pub offset: usize,
    /// The position of that place: the position given, unless it was adjusted.
    pub position: Position,
    /// How the position was moved to the place, if it did not name one exactly.
    pub adjustment: Option<Adjustment>,
}

/// A range resolved to places in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedRange {
    /// The start (`start.offset <= end.offset`).
    pub start: Resolved,
    /// The end.
    pub end: Resolved,
    /// Whether the range was given end first (its start after its end): `start` and `end`
    /// are then the range's `end` and `start`.
    pub reversed: bool,
}

impl ResolvedRange {
    /// The byte range of the text between the two places.
    pub fn offsets(&self) -> std::ops::Range<usize> {
        self.start.offset..self.end.offset
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    None,
    Lf,
    Cr,
    CrLf,
}

/// Where a line's text starts and ends (before its line ending), in bytes.
#[derive(Clone, Copy, Debug)]
struct Line {
    start: usize,
    end: usize,
    ending: Ending,
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl TextDocument {
    /// A document with this text, whose positions count in `encoding`.
    pub fn new(
        uri: Uri,
        language_id: impl Into<String>,
        version: i32,
        text: &str,
        encoding: PositionEncoding,
    ) -> TextDocument {
        TextDocument {
            uri,
            language_id: language_id.into(),
            version,
            encoding,
            text: Rope::from_str(text),
        }
    }

    /// The document a `didOpen` names.
    pub fn from_item(item: TextDocumentItem, encoding: PositionEncoding) -> TextDocument {
        TextDocument::new(
            item.uri,
            item.language_id,
            item.version,
            &item.text,
            encoding,
        )
    }

    /// The document's URI.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The document's language id, as the client named it at `didOpen`.
    pub fn language_id(&self) -> &str {
        &self.language_id
    }

    /// The document's version: the last one the client gave it.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// What the `character` of this document's positions counts.
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// The same document (it shares the text), with positions counted in `encoding`.
    pub fn with_encoding(mut self, encoding: PositionEncoding) -> TextDocument {
        self.encoding = encoding;
        self
    }

    /// The length of the text in bytes.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.text.len() == 0
    }

    /// The length of the text in code units of the document's encoding.
    pub fn len_units(&self) -> usize {
        self.units(self.text.len())
    }

    /// The number of lines: one more than the number of line endings.
    pub fn line_count(&self) -> u32 {
        to_u32(self.text.len_lines(LINES))
    }

    /// The text, in pieces, in order (the rope's chunks; concatenated, the whole text).
    pub fn chunks(&self) -> impl Iterator<Item = &str> + '_ {
        self.text.chunks()
    }

    /// Line `line`'s text without its line ending; `None` past the last line. Borrowed when
    /// the line lies in one piece of the rope; copied (the line only) otherwise.
    pub fn line(&self, line: u32) -> Option<Cow<'_, str>> {
        let line = self.line_bounds(line as usize)?;
        Some(self.slice(line.start, line.end))
    }

    /// The byte offsets of line `line`'s text in the document, its line ending left out
    /// (`&text[offsets]` is [`line`](Self::line)); `None` past the last line.
    ///
    /// ```
    /// # use sansrpc_lsp::document::{PositionEncoding, TextDocument};
    /// let uri: sansrpc_lsp::lsp_types::Uri = "file:///a.txt".parse().unwrap();
    /// let doc = TextDocument::new(uri, "plaintext", 1, "a😀\r\nb\rc", PositionEncoding::Utf16);
    /// assert_eq!(doc.line_offsets(0), Some(0..5));
    /// assert_eq!(doc.line_offsets(1), Some(7..8));
    /// assert_eq!(doc.line_offsets(2), Some(9..10));
    /// assert_eq!(doc.line_offsets(3), None);
    /// ```
    pub fn line_offsets(&self, line: u32) -> Option<std::ops::Range<usize>> {
        let bounds = self.line_bounds(line as usize)?;
        Some(bounds.start..bounds.end)
    }

    /// The byte offset where line `line` starts; `None` past the last line.
    pub fn line_start(&self, line: u32) -> Option<usize> {
        self.line_offsets(line).map(|offsets| offsets.start)
    }

    /// Every line in order, with its number and byte offsets, its line ending left out:
    /// what an analysis walks (`lines().filter(..).map(|l| doc.range_of(l.offsets))`).
    ///
    /// ```
    /// # use sansrpc_lsp::document::{PositionEncoding, TextDocument};
    /// let uri: sansrpc_lsp::lsp_types::Uri = "file:///a.txt".parse().unwrap();
    /// let doc = TextDocument::new(uri, "plaintext", 1, "one\r\ntwo\n", PositionEncoding::Utf16);
    /// let lines: Vec<_> = doc.lines().map(|l| (l.number, l.offsets, l.text.into_owned())).collect();
    /// assert_eq!(lines, [(0, 0..3, "one".to_owned()), (1, 5..8, "two".to_owned()), (2, 9..9, String::new())]);
    /// ```
    pub fn lines(&self) -> impl Iterator<Item = DocumentLine<'_>> + '_ {
        (0..self.line_count()).filter_map(move |number| {
            let offsets = self.line_offsets(number)?;
            let text = self.slice(offsets.start, offsets.end);
            Some(DocumentLine {
                number,
                offsets,
                text,
            })
        })
    }

    /// The range of line `line`'s text (not its line ending); `None` past the last line.
    pub fn line_range(&self, line: u32) -> Option<Range> {
        let bounds = self.line_bounds(line as usize)?;
        let length = self.units(bounds.end) - self.units(bounds.start);
        Some(Range::new(
            Position::new(line, 0),
            Position::new(line, to_u32(length)),
        ))
    }

    /// The position of the end of the text.
    pub fn end_position(&self) -> Position {
        self.position_at(self.text.len())
    }

    /// The range of the whole text: from `0:0` to [`end_position`](Self::end_position).
    pub fn full_range(&self) -> Range {
        Range::new(Position::new(0, 0), self.end_position())
    }

    /// The text of `range`, resolved as [`resolve_range`](Self::resolve_range) does (a
    /// range given end first is read between its two ends). Borrowed when it lies in one
    /// piece of the rope; copied (the range only) otherwise.
    pub fn text_in(&self, range: Range) -> Cow<'_, str> {
        let resolved = self.resolve_range(range);
        self.slice(resolved.start.offset, resolved.end.offset)
    }

    /// The byte offset of `position` (see [`resolve`](Self::resolve)).
    pub fn offset_at(&self, position: Position) -> usize {
        self.resolve(position).offset
    }

    /// The index among the text's `char`s (Unicode scalar values) of `position` (see
    /// [`resolve`](Self::resolve)).
    pub fn char_index_at(&self, position: Position) -> usize {
        self.text.byte_to_char_idx(self.resolve(position).offset)
    }

    /// The place in the text `position` names, how it was found, and the position of that
    /// place. Never fails:
    ///
    /// - a line past the last line is the end of the text ([`Adjustment::PastLastLine`]);
    /// - a character past the end of its line's text is the end of that text, before the
    ///   line ending ([`Adjustment::PastLineEnd`], or [`Adjustment::InsideLineEnding`] when
    ///   it falls between CR and LF);
    /// - a character inside the code units of one character (the second half of a UTF-16
    ///   surrogate pair, the middle of a UTF-8 sequence) is moved back to that character's
    ///   start ([`Adjustment::InsideSurrogatePair`], [`Adjustment::InsideUtf8Sequence`]).
    ///
    /// The first two are what the specification says; all of them give the place the
    /// client most likely meant, and never a place inside a character or a line ending.
    pub fn resolve(&self, position: Position) -> Resolved {
        let Some(line) = self.line_bounds(position.line as usize) else {
            return Resolved {
                offset: self.text.len(),
                position: self.end_position(),
                adjustment: Some(Adjustment::PastLastLine),
            };
        };
        let first = self.units(line.start);
        let length = self.units(line.end) - first;
        let character = position.character as usize;
        if character > length {
            let adjustment = if character == length + 1 && line.ending == Ending::CrLf {
                Adjustment::InsideLineEnding
            } else {
                Adjustment::PastLineEnd
            };
            return Resolved {
                offset: line.end,
                position: Position::new(position.line, to_u32(length)),
                adjustment: Some(adjustment),
            };
        }
        let target = first + character;
        let (offset, adjustment) = match self.encoding {
            PositionEncoding::Utf8 if !self.text.is_char_boundary(target) => (
                self.text.floor_char_boundary(target),
                Some(Adjustment::InsideUtf8Sequence),
            ),
            PositionEncoding::Utf8 => (target, None),
            PositionEncoding::Utf16 => {
                // Ropey gives the start of the character a code unit belongs to.
                let offset = self.text.utf16_to_byte_idx(target);
                let inside = self.text.byte_to_utf16_idx(offset) != target;
                (offset, inside.then_some(Adjustment::InsideSurrogatePair))
            }
            PositionEncoding::Utf32 => (self.text.char_to_byte_idx(target), None),
        };
        let position = match adjustment {
            Some(_) => Position::new(position.line, to_u32(self.units(offset) - first)),
            None => position,
        };
        Resolved {
            offset,
            position,
            adjustment,
        }
    }

    /// Both ends of `range` resolved as [`resolve`](Self::resolve) does. A range given end
    /// first (its start after its end) is taken between the two, as
    /// vscode-languageserver-textdocument takes it, and marked `reversed`.
    pub fn resolve_range(&self, range: Range) -> ResolvedRange {
        let reversed = range.start > range.end;
        let (start, end) = if reversed {
            (range.end, range.start)
        } else {
            (range.start, range.end)
        };
        let start_resolved = self.resolve(start);
        let end = if end == start {
            start_resolved
        } else {
            self.resolve(end)
        };
        let start = start_resolved;
        // Every adjustment moves a position to a place no later than one it does not move
        // past, so ordered positions give ordered places.
        debug_assert!(start.offset <= end.offset);
        ResolvedRange {
            start,
            end,
            reversed,
        }
    }

    /// The position of the place at byte `offset`. Never fails: an offset past the end is
    /// the end; one inside a character is moved back to that character's start; one
    /// between the CR and the LF of a CRLF is moved before the CR (the end of the line's
    /// text), as vscode-languageserver-textdocument does.
    pub fn position_at(&self, offset: usize) -> Position {
        let mut offset = self.text.floor_char_boundary(offset.min(self.text.len()));
        if offset > 0
            && offset < self.text.len()
            && self.text.byte(offset) == b'\n'
            && self.text.byte(offset - 1) == b'\r'
        {
            offset -= 1;
        }
        let line = self.text.byte_to_line_idx(offset, LINES);
        let start = self.text.line_to_byte_idx(line, LINES);
        Position::new(to_u32(line), to_u32(self.units(offset) - self.units(start)))
    }

    /// The position of the text's `char` (Unicode scalar value) at index `index`; past the
    /// last, the end of the text.
    pub fn position_of_char(&self, index: usize) -> Position {
        let index = index.min(self.text.len_chars());
        self.position_at(self.text.char_to_byte_idx(index))
    }

    /// The range of the bytes `offsets` (each end as [`position_at`](Self::position_at)
    /// gives it).
    pub fn range_of(&self, offsets: std::ops::Range<usize>) -> Range {
        Range::new(
            self.position_at(offsets.start),
            self.position_at(offsets.end),
        )
    }

    /// Applies the content changes of a `didChange` in order, each to the text the one
    /// before left, and takes `version`. A change without a range replaces the whole text;
    /// one with a range replaces that range ([`resolve_range`](Self::resolve_range); the
    /// deprecated `rangeLength` is ignored, as the specification allows). Returns what had
    /// to be adjusted, in order; the changes are applied in every case.
    pub fn apply_changes(
        &mut self,
        version: i32,
        changes: &[TextDocumentContentChangeEvent],
    ) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if version <= self.version {
            warnings.push(Warning::VersionNotIncreasing {
                uri: self.uri.clone(),
                previous: self.version,
                received: version,
            });
        }
        for (index, change) in changes.iter().enumerate() {
            match change.range {
                None => self.text = Rope::from_str(&change.text),
                Some(range) => self.replace(index, range, &change.text, &mut warnings),
            }
        }
        self.version = version;
        warnings
    }

    fn replace(&mut self, index: usize, range: Range, text: &str, warnings: &mut Vec<Warning>) {
        let resolved = self.resolve_range(range);
        if resolved.reversed {
            warnings.push(Warning::ReversedRange {
                uri: self.uri.clone(),
                change: index,
                range,
            });
        }
        let (sent_start, sent_end) = if resolved.reversed {
            (range.end, range.start)
        } else {
            (range.start, range.end)
        };
        for (endpoint, sent, used) in [
            (Endpoint::Start, sent_start, resolved.start),
            (Endpoint::End, sent_end, resolved.end),
        ] {
            if let Some(adjustment) = used.adjustment {
                warnings.push(Warning::Position {
                    uri: self.uri.clone(),
                    change: index,
                    endpoint,
                    sent,
                    used: used.position,
                    adjustment,
                });
            }
        }
        let offsets = resolved.offsets();
        if !offsets.is_empty() {
            self.text.remove(offsets.clone());
        }
        if !text.is_empty() {
            self.text.insert(offsets.start, text);
        }
    }

    /// Replaces text, language and version, as a second `didOpen` does.
    pub(super) fn reopen(&mut self, item: &TextDocumentItem) {
        self.language_id.clone_from(&item.language_id);
        self.version = item.version;
        self.text = Rope::from_str(&item.text);
    }

    pub(super) fn set_encoding(&mut self, encoding: PositionEncoding) {
        self.encoding = encoding;
    }

    fn slice(&self, start: usize, end: usize) -> Cow<'_, str> {
        let slice = self.text.slice(start..end);
        match slice.as_str() {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(String::from(slice)),
        }
    }

    /// The index in the document's encoding's code units of the character at byte `offset`.
    fn units(&self, offset: usize) -> usize {
        match self.encoding {
            PositionEncoding::Utf8 => offset,
            PositionEncoding::Utf16 => self.text.byte_to_utf16_idx(offset),
            PositionEncoding::Utf32 => self.text.byte_to_char_idx(offset),
        }
    }

    fn line_bounds(&self, line: usize) -> Option<Line> {
        let lines = self.text.len_lines(LINES);
        if line >= lines {
            return None;
        }
        let start = self.text.line_to_byte_idx(line, LINES);
        if line + 1 == lines {
            return Some(Line {
                start,
                end: self.text.len(),
                ending: Ending::None,
            });
        }
        // The next line starts right after this one's ending.
        let next = self.text.line_to_byte_idx(line + 1, LINES);
        let (end, ending) = match self.text.byte(next - 1) {
            b'\n' if next >= start + 2 && self.text.byte(next - 2) == b'\r' => {
                (next - 2, Ending::CrLf)
            }
            b'\n' => (next - 1, Ending::Lf),
            _ => (next - 1, Ending::Cr),
        };
        Some(Line { start, end, ending })
    }
}

impl fmt::Display for TextDocument {
    /// Writes the whole text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.chunks().try_for_each(|chunk| f.write_str(chunk))
    }
}

impl fmt::Debug for TextDocument {
    /// The document without its text (which may be megabytes): its length and line count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextDocument")
            .field("uri", &self.uri.as_str())
            .field("language_id", &self.language_id)
            .field("version", &self.version)
            .field("encoding", &self.encoding)
            .field("len", &self.text.len())
            .field("lines", &self.text.len_lines(LINES))
            .finish()
    }
}
