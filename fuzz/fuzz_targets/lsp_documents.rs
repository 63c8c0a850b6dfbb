//! sansrpc-lsp's document store against the naive model of its property test
//! (`lsp/tests/model`: code units in a vector, lines found by scanning, edits spliced):
//! arbitrary `didOpen`/`didChange`/`didClose` sequences in each position encoding, with
//! positions inside characters and line endings, past lines and past the end, ranges end
//! first, versions going backwards, notifications for documents not open. Nothing may
//! panic; after every notification the text equals the model's, every conversion agrees
//! with it and round-trips, the warnings are the ones the model expects, and a snapshot
//! taken before keeps its text.
#![no_main]

#[path = "../../lsp/tests/model/mod.rs"]
mod model;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use model::{check, expected_of, Expected, Model};
use sansrpc_lsp::document::{DocumentError, Documents, PositionEncoding};
use sansrpc_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, Position,
    Range, TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Uri,
    VersionedTextDocumentIdentifier,
};

const PIECES: &[&str] = &[
    "a", "b", "x", " ", "\t", "é", "e\u{301}", "\u{301}", "€", "中", "文", "😀", "𝄞", "\n", "\r",
    "\r\n", "\u{2028}", "\u{2029}", "\u{c}", "\u{b}", "\u{85}", "\u{feff}", "\0",
];

/// Text: pieces that break servers, picked by byte; those repeated (16 to 4,096 times, up
/// to 8 KB: documents the rope keeps in several chunks, from short inputs); or any string.
#[derive(Arbitrary, Debug)]
enum Text {
    Pieces(Vec<u8>),
    Repeated(Vec<u8>, u8),
    Any(String),
}

impl Text {
    fn string(&self) -> String {
        match self {
            Text::Pieces(picks) => picks
                .iter()
                .map(|&p| PIECES[p as usize % PIECES.len()])
                .collect(),
            Text::Repeated(picks, times) => {
                let once = Text::Pieces(picks.clone()).string();
                let times = (usize::from(*times) + 1) * 16;
                once.repeat(times.min((8_192 / once.len().max(1)).max(1)))
            }
            Text::Any(text) => text.clone(),
        }
    }
}

/// A position: near the document's lines and characters (taken modulo them, a few past),
/// or the numbers as they are.
#[derive(Arbitrary, Debug)]
enum Place {
    Near(u16, u16),
    Raw(u32, u32),
}

#[derive(Arbitrary, Debug)]
enum Change {
    Full(Text),
    Edit {
        start: Place,
        end: Place,
        text: Text,
    },
    Insert {
        at: Place,
        text: Text,
    },
}

#[derive(Arbitrary, Debug)]
enum Op {
    Change {
        changes: Vec<Change>,
        step: i8,
    },
    /// A `didChange` for a document that is not open.
    ChangeElsewhere,
    Reopen {
        text: Text,
        version: i8,
    },
    CloseAndOpen {
        text: Text,
    },
    /// Conversions of numbers as they come.
    Probe {
        line: u32,
        character: u32,
        offset: u32,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    encoding: u8,
    initial: Text,
    ops: Vec<Op>,
}

fn concrete(place: &Place, model: &Model) -> Position {
    match *place {
        Place::Near(line, character) => {
            let lines = model.lines();
            let line = u32::from(line) % (lines.len() as u32 + 2);
            let length = lines
                .get(line as usize)
                .map_or(0, |l| (l.end - l.start) as u32);
            Position::new(line, u32::from(character) % (length + 4))
        }
        Place::Raw(line, character) => Position::new(line, character),
    }
}

fn open(documents: &mut Documents, uri: &Uri, version: i32, text: String) -> usize {
    documents
        .did_open(&DidOpenTextDocumentParams {
            text_document: TextDocumentItem::new(uri.clone(), "text".into(), version, text),
        })
        .len()
}

fuzz_target!(|input: Input| {
    let encoding = PositionEncoding::ALL[input.encoding as usize % 3];
    let uri: Uri = "file:///fuzz.txt".parse().unwrap();
    let elsewhere: Uri = "file:///elsewhere.txt".parse().unwrap();
    let mut documents = Documents::new(encoding);
    let initial = input.initial.string();
    assert_eq!(open(&mut documents, &uri, 0, initial.clone()), 0);
    let mut model = Model::new(encoding, &initial, 0);

    for op in input.ops.iter().take(64) {
        match op {
            Op::Change { changes, step } => {
                let before = documents.snapshot(&uri).unwrap();
                let before_text = model.text();
                let version = model.version.saturating_add(i32::from(*step));
                let mut expected = model.take_version(version);
                let mut content_changes = Vec::new();
                for (index, change) in changes.iter().take(8).enumerate() {
                    let (range, text) = match change {
                        Change::Full(text) => (None, text.string()),
                        Change::Edit { start, end, text } => {
                            let start = concrete(start, &model);
                            (
                                Some(Range::new(start, concrete(end, &model))),
                                text.string(),
                            )
                        }
                        Change::Insert { at, text } => {
                            let at = concrete(at, &model);
                            (Some(Range::new(at, at)), text.string())
                        }
                    };
                    expected.extend(model.apply(index, range, &text));
                    content_changes.push(TextDocumentContentChangeEvent {
                        range,
                        range_length: None,
                        text,
                    });
                }
                let warnings = documents
                    .did_change(&DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
                        content_changes,
                    })
                    .expect("the document is open");
                let warnings: Vec<Expected> = warnings
                    .iter()
                    .map(|w| expected_of(w, encoding).expect("a warning the model knows"))
                    .collect();
                assert_eq!(warnings, expected);
                let doc = documents.get(&uri).unwrap();
                assert_eq!(doc.version(), version);
                // Every conversion of a document under 2 KB after each notification; of a
                // larger one (the rope in several chunks), its text now and everything at
                // the end.
                if model.units.len() <= 2048 {
                    check(doc, &model);
                } else {
                    assert_eq!(doc.to_string(), model.text());
                }
                assert_eq!(before.to_string(), before_text);
            }
            Op::ChangeElsewhere => {
                let result = documents.did_change(&DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier::new(elsewhere.clone(), 1),
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: "x".into(),
                    }],
                });
                assert_eq!(
                    result,
                    Err(DocumentError::NotOpen {
                        uri: elsewhere.clone()
                    })
                );
                assert_eq!(documents.len(), 1);
            }
            Op::Reopen { text, version } => {
                let text = text.string();
                let version = i32::from(*version);
                assert_eq!(open(&mut documents, &uri, version, text.clone()), 1);
                model = Model::new(encoding, &text, version);
                assert_eq!(documents.get(&uri).unwrap().to_string(), text);
            }
            Op::CloseAndOpen { text } => {
                let closed = documents
                    .did_close(&DidCloseTextDocumentParams {
                        text_document: TextDocumentIdentifier::new(uri.clone()),
                    })
                    .expect("the document is open");
                assert_eq!(closed.to_string(), model.text());
                assert!(documents.is_empty());
                let text = text.string();
                assert_eq!(open(&mut documents, &uri, 0, text.clone()), 0);
                model = Model::new(encoding, &text, 0);
            }
            Op::Probe {
                line,
                character,
                offset,
            } => {
                let doc = documents.get(&uri).unwrap();
                let position = Position::new(*line, *character);
                let (at, used, _) = model.resolve(position);
                let resolved = doc.resolve(position);
                assert_eq!(resolved.position, used);
                assert_eq!(doc.position_at(resolved.offset), used);
                assert_eq!(model.position_of(at), used);
                let offset = *offset as usize;
                let position = doc.position_at(offset);
                assert_eq!(doc.resolve(position).adjustment, None);
                assert!(doc.offset_at(position) <= offset.min(doc.len()));
                let _ = doc.text_in(Range::new(position, Position::new(*line, *character)));
            }
        }
    }
    check(documents.get(&uri).unwrap(), &model);
});
