//! A deliberately naive model of an LSP text document, written apart from the store and
//! sharing none of its code: the text is a vector of code units of the position encoding
//! (UTF-8 bytes, UTF-16 code units, or `char`s for UTF-32), lines are found by scanning it
//! for LF, CRLF and CR, a position is clamped as the specification says, an edit splices
//! code units, and the text is decoded back. No rope, no index, no cleverness: every
//! question is answered by walking the vector from its start.
//!
//! `check` compares a `TextDocument` with the model on everything the store answers.
//! Used by `tests/document_model.rs` (proptest) and by the `lsp_documents` fuzz target.
#![allow(dead_code)]

use sansrpc_lsp::document::{Adjustment, Endpoint, PositionEncoding, TextDocument, Warning};
use sansrpc_lsp::lsp_types::{Position, Range};

const LF: u32 = 0x0A;
const CR: u32 = 0x0D;

/// How the model moved a position, in its own words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// Line past the last one: the end of the text.
    PastLastLine,
    /// Character past the line's text: the end of the line's text.
    PastLineEnd,
    /// Character between the CR and the LF of a CRLF: the end of the line's text.
    InsideLineEnding,
    /// Character on a code unit that continues a character: back to its first code unit.
    InsideCharacter,
}

/// What the model expects the store to warn about, in the store's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The version did not go up.
    Version { previous: i32, received: i32 },
    /// Change `change` had its start after its end.
    Reversed { change: usize, range: Range },
    /// A position of change `change` was moved.
    Moved {
        change: usize,
        endpoint: Endpoint,
        sent: Position,
        used: Position,
        how: Moved,
    },
}

/// The store's warning in the model's words (`None` for warnings the model does not
/// produce, which then fail the comparison).
pub fn expected_of(warning: &Warning, encoding: PositionEncoding) -> Option<Expected> {
    Some(match warning {
        Warning::VersionNotIncreasing {
            previous, received, ..
        } => Expected::Version {
            previous: *previous,
            received: *received,
        },
        Warning::ReversedRange { change, range, .. } => Expected::Reversed {
            change: *change,
            range: *range,
        },
        Warning::Position {
            change,
            endpoint,
            sent,
            used,
            adjustment,
            ..
        } => Expected::Moved {
            change: *change,
            endpoint: *endpoint,
            sent: *sent,
            used: *used,
            how: moved_of(*adjustment, encoding),
        },
        _ => return None,
    })
}

fn moved_of(adjustment: Adjustment, encoding: PositionEncoding) -> Moved {
    match adjustment {
        Adjustment::PastLastLine => Moved::PastLastLine,
        Adjustment::PastLineEnd => Moved::PastLineEnd,
        Adjustment::InsideLineEnding => Moved::InsideLineEnding,
        Adjustment::InsideSurrogatePair if encoding == PositionEncoding::Utf16 => {
            Moved::InsideCharacter
        }
        Adjustment::InsideUtf8Sequence if encoding == PositionEncoding::Utf8 => {
            Moved::InsideCharacter
        }
        other => panic!("{other:?} reported in {encoding:?}"),
    }
}

/// One line: its text is `units[start..end]`, then `ending` code units of line ending.
#[derive(Clone, Copy, Debug)]
pub struct ModelLine {
    pub start: usize,
    pub end: usize,
    pub ending: usize,
}

/// See `Model::tables`.
pub struct Tables {
    pub byte_of_unit: Vec<usize>,
    pub char_of_unit: Vec<usize>,
    pub unit_of_byte: Vec<usize>,
    pub unit_of_char: Vec<usize>,
}

impl Tables {
    fn byte(&self, unit: usize) -> usize {
        let byte = self.byte_of_unit[unit];
        assert_ne!(
            byte,
            usize::MAX,
            "code unit {unit} does not start a character"
        );
        byte
    }

    fn char(&self, unit: usize) -> usize {
        let index = self.char_of_unit[unit];
        assert_ne!(
            index,
            usize::MAX,
            "code unit {unit} does not start a character"
        );
        index
    }

    /// Past the end: the end.
    fn unit_at_byte(&self, byte: usize) -> usize {
        self.unit_of_byte[byte.min(self.unit_of_byte.len() - 1)]
    }

    /// Past the end: the end.
    fn unit_at_char(&self, index: usize) -> usize {
        self.unit_of_char[index.min(self.unit_of_char.len() - 1)]
    }
}

/// The document.
#[derive(Clone, Debug)]
pub struct Model {
    pub encoding: PositionEncoding,
    pub units: Vec<u32>,
    pub version: i32,
}

fn encode(encoding: PositionEncoding, text: &str) -> Vec<u32> {
    match encoding {
        PositionEncoding::Utf8 => text.bytes().map(u32::from).collect(),
        PositionEncoding::Utf16 => text.encode_utf16().map(u32::from).collect(),
        PositionEncoding::Utf32 => text.chars().map(u32::from).collect(),
    }
}

fn decode(encoding: PositionEncoding, units: &[u32]) -> String {
    match encoding {
        PositionEncoding::Utf8 => {
            let bytes: Vec<u8> = units.iter().map(|&u| u as u8).collect();
            String::from_utf8(bytes).expect("the model split a UTF-8 sequence")
        }
        PositionEncoding::Utf16 => {
            let units: Vec<u16> = units.iter().map(|&u| u as u16).collect();
            String::from_utf16(&units).expect("the model split a surrogate pair")
        }
        PositionEncoding::Utf32 => units
            .iter()
            .map(|&u| char::from_u32(u).expect("not a char"))
            .collect(),
    }
}

/// Whether a code unit is not the first of its character.
fn continues(encoding: PositionEncoding, unit: u32) -> bool {
    match encoding {
        PositionEncoding::Utf8 => unit & 0xC0 == 0x80,
        PositionEncoding::Utf16 => (0xDC00..0xE000).contains(&unit),
        PositionEncoding::Utf32 => false,
    }
}

impl Model {
    pub fn new(encoding: PositionEncoding, text: &str, version: i32) -> Model {
        Model {
            encoding,
            units: encode(encoding, text),
            version,
        }
    }

    pub fn text(&self) -> String {
        decode(self.encoding, &self.units)
    }

    pub fn lines(&self) -> Vec<ModelLine> {
        let u = &self.units;
        let mut lines = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < u.len() {
            if u[i] == LF {
                lines.push(ModelLine {
                    start,
                    end: i,
                    ending: 1,
                });
                start = i + 1;
            } else if u[i] == CR {
                if i + 1 < u.len() && u[i + 1] == LF {
                    lines.push(ModelLine {
                        start,
                        end: i,
                        ending: 2,
                    });
                    start = i + 2;
                    i += 1;
                } else {
                    lines.push(ModelLine {
                        start,
                        end: i,
                        ending: 1,
                    });
                    start = i + 1;
                }
            }
            i += 1;
        }
        lines.push(ModelLine {
            start,
            end: u.len(),
            ending: 0,
        });
        lines
    }

    /// The code unit a position names, the position of it, and how it was moved.
    pub fn resolve(&self, position: Position) -> (usize, Position, Option<Moved>) {
        self.resolve_in(&self.lines(), position)
    }

    /// `resolve` with the lines already found.
    pub fn resolve_in(
        &self,
        lines: &[ModelLine],
        position: Position,
    ) -> (usize, Position, Option<Moved>) {
        let line = position.line as usize;
        if line >= lines.len() {
            let end = self.units.len();
            return (end, self.position_in(lines, end), Some(Moved::PastLastLine));
        }
        let l = lines[line];
        let length = l.end - l.start;
        let character = position.character as usize;
        if character > length {
            let how = if character == length + 1 && l.ending == 2 {
                Moved::InsideLineEnding
            } else {
                Moved::PastLineEnd
            };
            return (
                l.end,
                Position::new(position.line, length as u32),
                Some(how),
            );
        }
        let mut at = l.start + character;
        let mut how = None;
        while at < self.units.len() && continues(self.encoding, self.units[at]) {
            at -= 1;
            how = Some(Moved::InsideCharacter);
        }
        (at, Position::new(position.line, (at - l.start) as u32), how)
    }

    /// The position of code unit `at` (a character's first; moved before the CR when it is
    /// the LF of a CRLF).
    pub fn position_of(&self, at: usize) -> Position {
        self.position_in(&self.lines(), at)
    }

    /// `position_of` with the lines already found.
    pub fn position_in(&self, lines: &[ModelLine], at: usize) -> Position {
        let mut at = at.min(self.units.len());
        if at > 0 && at < self.units.len() && self.units[at] == LF && self.units[at - 1] == CR {
            at -= 1;
        }
        // The last line that starts at or before `at` (line 0 starts at 0).
        let index = lines.partition_point(|l| l.start <= at) - 1;
        Position::new(index as u32, (at - lines[index].start) as u32)
    }

    /// Lookup tables made by walking the text once: for each code unit that starts a
    /// character (and the end), its UTF-8 byte offset and its `char` index; for each byte
    /// offset, the first code unit of its character; for each `char` index, its first code
    /// unit.
    pub fn tables(&self) -> Tables {
        let text = self.text();
        let mut tables = Tables {
            byte_of_unit: vec![usize::MAX; self.units.len() + 1],
            char_of_unit: vec![usize::MAX; self.units.len() + 1],
            unit_of_byte: vec![usize::MAX; text.len() + 1],
            unit_of_char: Vec::new(),
        };
        let (mut unit, mut byte) = (0, 0);
        for (index, c) in text.chars().enumerate() {
            tables.byte_of_unit[unit] = byte;
            tables.char_of_unit[unit] = index;
            tables.unit_of_char.push(unit);
            for b in byte..byte + c.len_utf8() {
                tables.unit_of_byte[b] = unit;
            }
            unit += self.encoding.len_of(c);
            byte += c.len_utf8();
        }
        assert_eq!((unit, byte), (self.units.len(), text.len()));
        tables.byte_of_unit[unit] = byte;
        tables.char_of_unit[unit] = tables.unit_of_char.len();
        tables.unit_of_byte[byte] = unit;
        tables.unit_of_char.push(unit);
        tables
    }

    /// The text between two code units.
    pub fn between(&self, from: usize, to: usize) -> String {
        decode(self.encoding, &self.units[from..to])
    }

    /// Applies one content change (`range: None`: the whole text) and says what it expects
    /// the store to warn about.
    pub fn apply(&mut self, change: usize, range: Option<Range>, text: &str) -> Vec<Expected> {
        let mut expected = Vec::new();
        let Some(range) = range else {
            self.units = encode(self.encoding, text);
            return expected;
        };
        let sent_in_order =
            (range.start.line, range.start.character) <= (range.end.line, range.end.character);
        let (start, end) = if sent_in_order {
            (range.start, range.end)
        } else {
            expected.push(Expected::Reversed { change, range });
            (range.end, range.start)
        };
        let (from, start_used, start_moved) = self.resolve(start);
        let (to, end_used, end_moved) = self.resolve(end);
        for (endpoint, sent, used, moved) in [
            (Endpoint::Start, start, start_used, start_moved),
            (Endpoint::End, end, end_used, end_moved),
        ] {
            if let Some(how) = moved {
                expected.push(Expected::Moved {
                    change,
                    endpoint,
                    sent,
                    used,
                    how,
                });
            }
        }
        assert!(from <= to, "the model's clamps are not monotonic");
        let inserted = encode(self.encoding, text);
        self.units.splice(from..to, inserted);
        expected
    }

    /// Takes a notification's version, and says whether the store should warn.
    pub fn take_version(&mut self, version: i32) -> Vec<Expected> {
        let previous = std::mem::replace(&mut self.version, version);
        if version <= previous {
            vec![Expected::Version {
                previous,
                received: version,
            }]
        } else {
            Vec::new()
        }
    }
}

/// How thoroughly `check` probes: every position and offset of a small text, a sample of
/// a larger one.
const EXHAUSTIVE_UP_TO: usize = 300;

/// Asserts that the document and the model agree: the text, the lines, and every
/// conversion the store offers, on probes over the whole text and past its ends.
pub fn check(doc: &TextDocument, model: &Model) {
    let encoding = model.encoding;
    assert_eq!(doc.encoding(), encoding);
    let text = model.text();
    assert_eq!(doc.to_string(), text, "texts differ ({encoding:?})");
    assert_eq!(doc.len(), text.len());
    assert_eq!(doc.len_units(), model.units.len());
    assert_eq!(doc.chunks().collect::<String>(), text);
    let small = model.units.len() <= EXHAUSTIVE_UP_TO;
    let lines = model.lines();
    let tables = model.tables();

    assert_eq!(
        doc.line_count() as usize,
        lines.len(),
        "line count of {text:?}"
    );
    assert_eq!(doc.line(lines.len() as u32), None);
    assert_eq!(doc.line_range(lines.len() as u32), None);
    let sampled = |index: usize| small || index % 23 == 0 || index + 1 == lines.len();
    for (index, line) in lines.iter().enumerate().filter(|(i, _)| sampled(*i)) {
        let index = index as u32;
        let expected = model.between(line.start, line.end);
        assert_eq!(
            doc.line(index).as_deref(),
            Some(expected.as_str()),
            "line {index}"
        );
        let length = (line.end - line.start) as u32;
        assert_eq!(
            doc.line_range(index),
            Some(Range::new(
                Position::new(index, 0),
                Position::new(index, length)
            ))
        );
    }
    let end = model.position_in(&lines, model.units.len());
    assert_eq!(doc.end_position(), end);
    assert_eq!(doc.full_range(), Range::new(Position::new(0, 0), end));

    // Positions: every line (or a sample), every character of it (or a sample) and a few
    // past its end.
    let mut positions = Vec::new();
    for (index, line) in lines.iter().enumerate().filter(|(i, _)| sampled(*i)) {
        let length = (line.end - line.start) as u32;
        let step = if small { 1 } else { (length / 12).max(1) };
        let mut character = 0;
        while character <= length + 3 {
            positions.push(Position::new(index as u32, character));
            character += step;
        }
        positions.push(Position::new(index as u32, length.saturating_sub(1)));
        positions.push(Position::new(index as u32, u32::MAX));
    }
    let count = lines.len() as u32;
    positions.extend([
        Position::new(count, 0),
        Position::new(count, 5),
        Position::new(count + 1, 0),
        Position::new(u32::MAX, u32::MAX),
    ]);
    for &position in &positions {
        let (at, used, moved) = model.resolve_in(&lines, position);
        let resolved = doc.resolve(position);
        let offset = tables.byte(at);
        assert_eq!(
            resolved.offset, offset,
            "offset of {position:?} in {text:?}"
        );
        assert_eq!(resolved.position, used, "position {position:?} in {text:?}");
        assert_eq!(
            resolved.adjustment.map(|a| moved_of(a, encoding)),
            moved,
            "adjustment of {position:?} in {text:?}"
        );
        assert_eq!(doc.offset_at(position), offset);
        assert_eq!(doc.char_index_at(position), tables.char(at));
        // The place resolved, and its position, round-trip exactly.
        assert_eq!(
            doc.position_at(offset),
            used,
            "position_at({offset}) in {text:?}"
        );
        let again = doc.resolve(used);
        assert_eq!((again.offset, again.adjustment), (offset, None));
    }

    // Ranges: pairs of probe positions, in both orders.
    let stride = (positions.len() / if small { 20 } else { 8 }).max(1);
    let picks: Vec<Position> = positions.iter().copied().step_by(stride).collect();
    for (i, &a) in picks.iter().enumerate() {
        for &b in picks.iter().skip(i).step_by(3) {
            let (x, _, _) = model.resolve_in(&lines, a.min(b));
            let (y, _, _) = model.resolve_in(&lines, a.max(b));
            let expected = model.between(x, y);
            assert_eq!(doc.text_in(Range::new(a, b)), expected, "{a:?}..{b:?}");
            assert_eq!(doc.text_in(Range::new(b, a)), expected, "{b:?}..{a:?}");
            let resolved = doc.resolve_range(Range::new(b, a));
            assert_eq!(resolved.reversed, b > a);
            assert_eq!(resolved.offsets(), tables.byte(x)..tables.byte(y));
        }
    }

    // Offsets: every byte (or a sample) and past the end.
    let step = if small { 1 } else { (text.len() / 250).max(1) };
    let mut offsets: Vec<usize> = (0..=text.len() + 2).step_by(step).collect();
    offsets.extend([text.len(), text.len() + 1, usize::MAX]);
    for &offset in &offsets {
        let at = tables.unit_at_byte(offset);
        let expected = model.position_in(&lines, at);
        assert_eq!(
            doc.position_at(offset),
            expected,
            "position_at({offset}) in {text:?}"
        );
        // Back to the place the offset was moved to.
        let (back, _, moved) = model.resolve_in(&lines, expected);
        assert_eq!(moved, None);
        assert_eq!(doc.offset_at(expected), tables.byte(back));
    }
    let chars = tables.unit_of_char.len() - 1;
    let step = if small { 1 } else { (chars / 200).max(1) };
    for index in (0..=chars + 1).step_by(step) {
        let at = tables.unit_at_char(index);
        assert_eq!(
            doc.position_of_char(index),
            model.position_in(&lines, at),
            "char {index}"
        );
    }
}
