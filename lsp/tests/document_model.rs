//! The document store against an independent model (`tests/model`), over random sequences
//! of `didChange` notifications in each position encoding: after every notification the
//! texts are equal, every conversion agrees, and the store warns about exactly what the
//! model says it should.
//!
//! The texts mix what breaks servers: characters outside the BMP (😀, 𝄞: two UTF-16 code
//! units, four UTF-8 bytes), CJK, combining marks, CRLF, lone CR and LF, empty lines, and
//! characters that are not line breaks in LSP (U+2028, U+2029, form feed, vertical tab,
//! NEL). Edits land inside characters and line endings, at line ends and past them, past
//! the last line, end first; several changes go in one notification, full replacements
//! among them, versions sometimes go backwards. Some documents are several kilobytes, so
//! that the rope holds them in more than one piece.

mod model;

use model::{check, expected_of, Expected, Model};
use proptest::prelude::*;
use proptest::sample::select;
use sansrpc_lsp::document::{Documents, PositionEncoding};
use sansrpc_lsp::lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, Position, Range,
    TextDocumentContentChangeEvent, TextDocumentItem, Uri, VersionedTextDocumentIdentifier,
};

const PIECES: &[&str] = &[
    "a", "b", "x", "fn", " ", "\t", "é", "e\u{301}", "\u{301}", "€", "中", "文", "字", "😀", "𝄞",
    "\n", "\n", "\r", "\r\n", "\r\n", "\n\n", "\r\r", "\n\r", "\u{2028}", "\u{2029}", "\u{c}",
    "\u{b}", "\u{85}", "\u{feff}", "\0",
];

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(select(PIECES), 0..max).prop_map(|pieces| pieces.concat())
}

/// A position, chosen against the document it applies to (the model's text when the change
/// is made): a line among the document's (or one or two past), a character among the
/// line's code units (or a few past), or numbers far past both.
#[derive(Clone, Debug)]
enum Place {
    Near { line: u32, character: u32 },
    Far { line: u32, character: u32 },
    End,
}

fn place() -> impl Strategy<Value = Place> {
    prop_oneof![
        8 => (any::<u32>(), any::<u32>()).prop_map(|(line, character)| Place::Near { line, character }),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(line, character)| Place::Far { line, character }),
        1 => Just(Place::End),
    ]
}

/// Where a change's range ends, from its start.
#[derive(Clone, Debug)]
enum Extent {
    /// An insertion.
    Empty,
    /// A few code units on, maybe across lines.
    Forward { lines: u32, characters: u32 },
    /// Anywhere (about half of these end before they start).
    Anywhere(Place),
}

fn extent() -> impl Strategy<Value = Extent> {
    prop_oneof![
        3 => Just(Extent::Empty),
        5 => (0..3u32, 0..6u32).prop_map(|(lines, characters)| Extent::Forward { lines, characters }),
        1 => place().prop_map(Extent::Anywhere),
    ]
}

#[derive(Clone, Debug)]
enum Change {
    Full(String),
    Edit {
        start: Place,
        extent: Extent,
        text: String,
    },
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        1 => text(40).prop_map(Change::Full),
        12 => (place(), extent(), text(6)).prop_map(|(start, extent, text)| Change::Edit { start, extent, text }),
    ]
}

#[derive(Clone, Debug)]
struct Notification {
    changes: Vec<Change>,
    /// Added to the version: mostly 1, sometimes 0 or backwards.
    step: i32,
}

fn notification() -> impl Strategy<Value = Notification> {
    let step = prop_oneof![12 => Just(1), 2 => 2..5i32, 1 => Just(0), 1 => -3..0i32];
    (proptest::collection::vec(change(), 1..5), step)
        .prop_map(|(changes, step)| Notification { changes, step })
}

fn initial() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => text(60),
        // Several kilobytes: more than one piece of the rope.
        1 => text(1200),
    ]
}

fn encoding() -> impl Strategy<Value = PositionEncoding> {
    select(PositionEncoding::ALL.to_vec())
}

fn concrete(place: &Place, model: &Model) -> Position {
    let lines = model.lines();
    match *place {
        Place::Near { line, character } => {
            let line = line % (lines.len() as u32 + 2);
            let length = lines
                .get(line as usize)
                .map_or(0, |l| (l.end - l.start) as u32);
            Position::new(line, character % (length + 4))
        }
        Place::Far { line, character } => Position::new(line, character),
        Place::End => Position::new(lines.len() as u32, 0),
    }
}

fn uri() -> Uri {
    "file:///model.txt".parse().unwrap()
}

fn run(encoding: PositionEncoding, initial: String, notifications: Vec<Notification>) {
    let mut documents = Documents::new(encoding);
    let warnings = documents.did_open(&DidOpenTextDocumentParams {
        text_document: TextDocumentItem::new(uri(), "text".into(), 0, initial.clone()),
    });
    assert!(warnings.is_empty());
    let mut model = Model::new(encoding, &initial, 0);
    check(documents.get(&uri()).unwrap(), &model);

    for notification in notifications {
        let before = documents.snapshot(&uri()).unwrap();
        let before_model = model.clone();
        let version = model.version.saturating_add(notification.step);
        let mut expected = model.take_version(version);
        let mut content_changes = Vec::new();
        for (index, change) in notification.changes.iter().enumerate() {
            let (range, text) = match change {
                Change::Full(text) => (None, text.clone()),
                Change::Edit {
                    start,
                    extent,
                    text,
                } => {
                    let start = concrete(start, &model);
                    let end = match extent {
                        Extent::Empty => start,
                        Extent::Forward { lines, characters } => Position::new(
                            start.line.saturating_add(*lines),
                            if *lines == 0 {
                                start.character.saturating_add(*characters)
                            } else {
                                *characters
                            },
                        ),
                        Extent::Anywhere(place) => concrete(place, &model),
                    };
                    (Some(Range::new(start, end)), text.clone())
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
                text_document: VersionedTextDocumentIdentifier::new(uri(), version),
                content_changes,
            })
            .unwrap();
        let warnings: Vec<Expected> = warnings
            .iter()
            .map(|w| expected_of(w, encoding).unwrap_or_else(|| panic!("unexpected {w}")))
            .collect();
        assert_eq!(warnings, expected);
        let doc = documents.get(&uri()).unwrap();
        assert_eq!(doc.version(), version);
        check(doc, &model);
        // The snapshot taken before the notification did not move.
        assert_eq!(before.to_string(), before_model.text());
        assert_eq!(before.version(), before_model.version);
    }
}

proptest! {
    // PROPTEST_CASES runs more (or fewer) cases than the suite's 256.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_store_agrees_with_the_model_over_random_edits(
        encoding in encoding(),
        initial in initial(),
        notifications in proptest::collection::vec(notification(), 1..16),
    ) {
        run(encoding, initial, notifications);
    }
}

/// Edits chosen to hit every defined outcome at least once in each encoding, checked
/// against the model (the random run may or may not reach each of them).
#[test]
fn every_adjustment_agrees_with_the_model() {
    let text = "a😀b\r\nc€d\re\n\u{2028}f𝄞\r\n";
    let edits = [
        // Inside 😀 (UTF-16 and UTF-8), at 0:2 / 0:3.
        Range::new(Position::new(0, 2), Position::new(0, 3)),
        // Between CR and LF.
        Range::new(Position::new(0, 4), Position::new(0, 4)),
        Range::new(Position::new(1, 1), Position::new(1, 6)),
        // Past the last line, end first.
        Range::new(Position::new(9, 0), Position::new(2, 0)),
        Range::new(Position::new(3, 0), Position::new(3, 99)),
        Range::new(Position::new(4, 0), Position::new(5, 0)),
    ];
    for encoding in PositionEncoding::ALL {
        for range in edits {
            let changes = vec![Change::Edit {
                start: Place::Far {
                    line: range.start.line,
                    character: range.start.character,
                },
                extent: Extent::Anywhere(Place::Far {
                    line: range.end.line,
                    character: range.end.character,
                }),
                text: "Z\r".into(),
            }];
            let notification = Notification { changes, step: 1 };
            run(encoding, text.into(), vec![notification]);
        }
    }
}
