//! One-character edits at random places of a 10 MB document, and a hover's read of it:
//! sansrpc-lsp's store (a rope) against the naive server, which keeps a `String`, finds a
//! position by scanning from the start, and builds a new `String` per edit (and, a
//! stronger baseline, one that edits its `String` in place with `replace_range`).
//!
//! The document: 10 MB of code-like lines of 0 to 120 bytes, one in eight with non-ASCII
//! text (é, 中文, 😀), LF endings. Positions are UTF-16, drawn once with a fixed xorshift
//! seed (the same sequence every run) and cycled; both sides get the same ones.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use sansrpc_lsp::document::{Documents, PositionEncoding};
use sansrpc_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, Position, Range,
    TextDocumentContentChangeEvent, TextDocumentItem, Uri, VersionedTextDocumentIdentifier,
};

const SIZE: usize = 10_000_000;
const POSITIONS: usize = 4096;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn document(rng: &mut XorShift) -> String {
    const WORDS: &[&str] = &[
        "let",
        "value",
        "=",
        "compute(x);",
        "fn",
        "{",
        "}",
        "// note",
        "self.field",
    ];
    const OTHER: &[&str] = &["// café é", "\"中文字符\"", "/* 😀 */", "𝄞"];
    let mut text = String::with_capacity(SIZE + 256);
    while text.len() < SIZE {
        let width = rng.below(120);
        let start = text.len();
        text.push_str(&"    "[..rng.below(4)]);
        while text.len() - start < width {
            text.push_str(WORDS[rng.below(WORDS.len())]);
            text.push(' ');
        }
        if rng.below(8) == 0 {
            text.push_str(OTHER[rng.below(OTHER.len())]);
        }
        text.push('\n');
    }
    text
}

/// Places to edit: a random line, a random character of it (UTF-16), the character's
/// length in UTF-16 (to delete it whole).
fn positions(text: &str, rng: &mut XorShift) -> Vec<(Position, u32)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::with_capacity(POSITIONS);
    while out.len() < POSITIONS {
        let line = rng.below(lines.len());
        let chars: Vec<char> = lines[line].chars().collect();
        if chars.is_empty() {
            continue;
        }
        let index = rng.below(chars.len());
        let character: usize = chars[..index].iter().map(|c| c.len_utf16()).sum();
        let width = chars[index].len_utf16() as u32;
        out.push((Position::new(line as u32, character as u32), width));
    }
    out
}

/// The naive server's position → byte offset: count lines from the start, then walk the
/// line's characters counting UTF-16 code units.
fn naive_offset(text: &str, position: Position) -> usize {
    let mut start = 0;
    for _ in 0..position.line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let mut units = 0;
    for (i, c) in text[start..].char_indices() {
        if units >= position.character as usize || c == '\n' {
            return start + i;
        }
        units += c.len_utf16();
    }
    text.len()
}

fn naive_rebuild(text: &str, start: Position, end: Position, insert: &str) -> String {
    let (from, to) = (naive_offset(text, start), naive_offset(text, end));
    let mut new = String::with_capacity(text.len() + insert.len());
    new.push_str(&text[..from]);
    new.push_str(insert);
    new.push_str(&text[to..]);
    new
}

fn naive_in_place(text: &mut String, start: Position, end: Position, insert: &str) {
    let (from, to) = (naive_offset(text, start), naive_offset(text, end));
    text.replace_range(from..to, insert);
}

fn change(uri: &Uri, version: i32, range: Range, text: &str) -> DidChangeTextDocumentParams {
    DidChangeTextDocumentParams {
        text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
        content_changes: vec![TextDocumentContentChangeEvent {
            range: Some(range),
            range_length: None,
            text: text.into(),
        }],
    }
}

fn edits(c: &mut Criterion) {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let text = document(&mut rng);
    let places = positions(&text, &mut rng);
    let uri: Uri = "file:///big.rs".parse().unwrap();
    let mut documents = Documents::new(PositionEncoding::Utf16);
    documents.did_open(&DidOpenTextDocumentParams {
        text_document: TextDocumentItem::new(uri.clone(), "rust".into(), 0, text.clone()),
    });

    let mut group = c.benchmark_group("one_char_edit_10mb");
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));

    // Each insert is undone by the delete bench's edits only in size: the document
    // drifts by one character per iteration, a negligible part of 10 MB.
    let mut version = 0;
    let mut i = 0;
    group.bench_function("rope_insert", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            version += 1;
            let params = change(&uri, version, Range::new(at, at), "x");
            black_box(documents.did_change(&params).unwrap());
        })
    });
    group.bench_function("rope_delete", |b| {
        b.iter(|| {
            let (at, width) = places[i % POSITIONS];
            i += 1;
            version += 1;
            let end = Position::new(at.line, at.character + width);
            let params = change(&uri, version, Range::new(at, end), "");
            black_box(documents.did_change(&params).unwrap());
        })
    });

    let mut naive = text.clone();
    group.bench_function("string_rebuild_insert", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            naive = naive_rebuild(&naive, at, at, "x");
        })
    });
    group.bench_function("string_rebuild_delete", |b| {
        b.iter(|| {
            let (at, width) = places[i % POSITIONS];
            i += 1;
            naive = naive_rebuild(&naive, at, Position::new(at.line, at.character + width), "");
        })
    });
    // How much of the naive edit is finding the place: the scan alone.
    group.bench_function("string_find_position_only", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            black_box(naive_offset(&naive, at));
        })
    });
    group.bench_function("string_in_place_insert", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            naive_in_place(&mut naive, at, at, "x");
        })
    });
    group.bench_function("string_in_place_delete", |b| {
        b.iter(|| {
            let (at, width) = places[i % POSITIONS];
            i += 1;
            naive_in_place(
                &mut naive,
                at,
                Position::new(at.line, at.character + width),
                "",
            );
        })
    });
    group.finish();

    // A hover: take the document for the handler, find the position, read its line.
    let mut group = c.benchmark_group("hover_read_10mb");
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("rope_snapshot_offset_line", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            let doc = documents.snapshot(&uri).unwrap();
            let offset = doc.offset_at(at);
            let line = doc.line(at.line).map_or(0, |l| l.len());
            black_box((offset, line));
        })
    });
    // The naive server clones its String for a handler that runs later.
    group.bench_function("string_clone_offset_line", |b| {
        b.iter(|| {
            let (at, _) = places[i % POSITIONS];
            i += 1;
            let doc = naive.clone();
            let offset = naive_offset(&doc, at);
            let line = doc[offset..].split('\n').next().map_or(0, str::len);
            black_box((offset, line));
        })
    });
    group.finish();
}

criterion_group!(benches, edits);
criterion_main!(benches);
