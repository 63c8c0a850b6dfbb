//! The document store's behaviour, case by case: encoding negotiation, what a line is, each
//! defined outcome of a position that names no place exactly, and each malformed
//! notification. (`document_model.rs` checks the same against a model over random edits.)

use std::borrow::Cow;

use sansrpc_lsp::document::{
    Adjustment, DocumentError, Documents, Endpoint, PositionEncoding, Resolved, TextDocument,
    UnknownPositionEncoding, Warning,
};
use sansrpc_lsp::lsp_types::{
    ClientCapabilities, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, Position, PositionEncodingKind, Range,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Uri,
    VersionedTextDocumentIdentifier,
};

use PositionEncoding::{Utf16, Utf32, Utf8};

fn uri(name: &str) -> Uri {
    format!("file:///{name}").parse().unwrap()
}

fn at(line: u32, character: u32) -> Position {
    Position::new(line, character)
}

fn range(start: (u32, u32), end: (u32, u32)) -> Range {
    Range::new(at(start.0, start.1), at(end.0, end.1))
}

fn doc(text: &str, encoding: PositionEncoding) -> TextDocument {
    TextDocument::new(uri("doc.txt"), "text", 1, text, encoding)
}

fn open(documents: &mut Documents, name: &str, version: i32, text: &str) -> Vec<Warning> {
    documents.did_open(&DidOpenTextDocumentParams {
        text_document: TextDocumentItem::new(uri(name), "rust".into(), version, text.into()),
    })
}

fn edit(start: (u32, u32), end: (u32, u32), text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: Some(range(start, end)),
        range_length: None,
        text: text.into(),
    }
}

fn full(text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: None,
        range_length: None,
        text: text.into(),
    }
}

fn change(
    documents: &mut Documents,
    name: &str,
    version: i32,
    changes: Vec<TextDocumentContentChangeEvent>,
) -> Result<Vec<Warning>, DocumentError> {
    documents.did_change(&DidChangeTextDocumentParams {
        text_document: VersionedTextDocumentIdentifier::new(uri(name), version),
        content_changes: changes,
    })
}

fn kinds(names: &[&'static str]) -> Vec<PositionEncodingKind> {
    names.iter().map(|n| PositionEncodingKind::new(n)).collect()
}

#[test]
fn negotiation_takes_the_clients_first_supported_choice_else_utf16() {
    let all = &PositionEncoding::ALL;
    assert_eq!(PositionEncoding::negotiate(None, all), Utf16);
    assert_eq!(PositionEncoding::negotiate(Some(&[]), all), Utf16);
    let offered = kinds(&["utf-8", "utf-16"]);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), all), Utf8);
    let offered = kinds(&["utf-32", "utf-8"]);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), all), Utf32);
    // Unknown kinds are skipped; names are exact.
    let offered = kinds(&["utf-7", "UTF-8", "utf-32"]);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), all), Utf32);
    let offered = kinds(&["utf-7", "UTF-8"]);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), all), Utf16);
    // The server's support decides among the client's choices.
    let offered = kinds(&["utf-8", "utf-32", "utf-16"]);
    assert_eq!(
        PositionEncoding::negotiate(Some(&offered), &[Utf32, Utf16]),
        Utf32
    );
    assert_eq!(PositionEncoding::negotiate(Some(&offered), &[Utf16]), Utf16);
    // Nothing in common: UTF-16, which every server must support, listed or not.
    let offered = kinds(&["utf-8"]);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), &[Utf32]), Utf16);
    assert_eq!(PositionEncoding::negotiate(Some(&offered), &[]), Utf16);
}

#[test]
fn negotiation_reads_the_initialize_capabilities() {
    let capabilities: ClientCapabilities = serde_json::from_str(
        r#"{"general":{"positionEncodings":["utf-32","utf-16"]},"textDocument":{}}"#,
    )
    .unwrap();
    let all = &PositionEncoding::ALL;
    assert_eq!(
        PositionEncoding::from_client_capabilities(&capabilities, all),
        Utf32
    );
    assert_eq!(
        PositionEncoding::from_client_capabilities(&capabilities, &[Utf8]),
        Utf16
    );
    let capabilities: ClientCapabilities = serde_json::from_str(r#"{"general":{}}"#).unwrap();
    assert_eq!(
        PositionEncoding::from_client_capabilities(&capabilities, all),
        Utf16
    );
    let capabilities = ClientCapabilities::default();
    assert_eq!(
        PositionEncoding::from_client_capabilities(&capabilities, all),
        Utf16
    );
}

#[test]
fn encodings_convert_to_and_from_lsp_types_kinds() {
    for (encoding, kind, name) in [
        (Utf8, PositionEncodingKind::UTF8, "utf-8"),
        (Utf16, PositionEncodingKind::UTF16, "utf-16"),
        (Utf32, PositionEncodingKind::UTF32, "utf-32"),
    ] {
        assert_eq!(encoding.kind(), kind);
        assert_eq!(PositionEncodingKind::from(encoding), kind);
        assert_eq!(PositionEncoding::try_from(&kind), Ok(encoding));
        assert_eq!(PositionEncoding::try_from(kind.clone()), Ok(encoding));
        assert_eq!(PositionEncoding::from_kind(&kind), Some(encoding));
        assert_eq!(encoding.as_str(), name);
        assert_eq!(encoding.to_string(), name);
        assert_eq!(
            serde_json::to_string(&encoding.kind()).unwrap(),
            format!("\"{name}\"")
        );
    }
    let unknown = PositionEncodingKind::new("utf-7");
    assert_eq!(
        PositionEncoding::try_from(&unknown),
        Err(UnknownPositionEncoding("utf-7".into()))
    );
    assert_eq!(
        UnknownPositionEncoding("utf-7".into()).to_string(),
        "unknown position encoding \"utf-7\""
    );
    assert_eq!(PositionEncoding::default(), Utf16);
}

#[test]
fn only_lf_crlf_and_cr_end_lines() {
    // U+2028, U+2029, form feed, vertical tab and NEL are characters of a line.
    let d = doc("a\u{2028}b\u{c}c\u{85}d\u{b}e\u{2029}f", Utf16);
    assert_eq!(d.line_count(), 1);
    assert_eq!(d.line(0).unwrap(), "a\u{2028}b\u{c}c\u{85}d\u{b}e\u{2029}f");
    let d = doc("a\rb\nc\r\nd", Utf16);
    assert_eq!(d.line_count(), 4);
    let lines: Vec<_> = (0..4).map(|n| d.line(n).unwrap().into_owned()).collect();
    assert_eq!(lines, ["a", "b", "c", "d"]);
    assert_eq!(d.line(4), None);
    for (text, count) in [
        ("", 1),
        ("x", 1),
        ("\n", 2),
        ("\r\n", 2),
        ("\r", 2),
        ("\n\r", 3),
        ("\r\r\n", 3),
        ("\r\n\n", 3),
        ("a\n\nb\n", 4),
    ] {
        assert_eq!(doc(text, Utf16).line_count(), count, "{text:?}");
    }
    // The line after a final line ending is empty.
    let d = doc("a\r\n", Utf8);
    assert_eq!(d.line(1).unwrap(), "");
    assert_eq!(d.end_position(), at(1, 0));
    assert_eq!(d.line_range(0), Some(range((0, 0), (0, 1))));
}

#[test]
fn positions_count_code_units_of_the_encoding() {
    // "a😀b中\u{301}" : 😀 is 4 bytes, 2 UTF-16 units, 1 char; 中 3/1/1; U+0301 2/1/1.
    let text = "a😀b中\u{301}c";
    for (encoding, b, c, end) in [(Utf8, 5, 6, 12), (Utf16, 3, 4, 7), (Utf32, 2, 3, 6)] {
        let d = doc(text, encoding);
        assert_eq!(d.offset_at(at(0, b)), 5, "{encoding}: b");
        assert_eq!(d.offset_at(at(0, c)), 6, "{encoding}: 中");
        assert_eq!(d.position_at(5), at(0, b));
        assert_eq!(d.position_at(11), at(0, end - 1));
        assert_eq!(d.end_position(), at(0, end));
        assert_eq!(d.len_units(), end as usize);
        assert_eq!(d.char_index_at(at(0, b)), 2);
        assert_eq!(d.position_of_char(2), at(0, b));
        assert_eq!(d.text_in(range((0, 1), (0, b))), "😀");
    }
}

#[test]
fn a_position_past_a_lines_end_is_its_end_before_the_line_ending() {
    let d = doc("ab\r\ncd\nef", Utf16);
    let resolved = |p| d.resolve(p);
    assert_eq!(
        resolved(at(0, 2)),
        Resolved {
            offset: 2,
            position: at(0, 2),
            adjustment: None
        }
    );
    // Between CR and LF.
    assert_eq!(
        resolved(at(0, 3)),
        Resolved {
            offset: 2,
            position: at(0, 2),
            adjustment: Some(Adjustment::InsideLineEnding)
        }
    );
    for character in [4, 5, u32::MAX] {
        assert_eq!(
            resolved(at(0, character)),
            Resolved {
                offset: 2,
                position: at(0, 2),
                adjustment: Some(Adjustment::PastLineEnd)
            }
        );
    }
    // An LF ending: one past the text is past the end, not inside the ending.
    assert_eq!(resolved(at(1, 3)).adjustment, Some(Adjustment::PastLineEnd));
    assert_eq!(resolved(at(1, 3)).offset, 6);
    // The last line has no ending.
    assert_eq!(resolved(at(2, 3)).offset, 9);
    assert_eq!(resolved(at(2, 3)).adjustment, Some(Adjustment::PastLineEnd));
}

#[test]
fn a_position_past_the_last_line_is_the_end_of_the_document() {
    let d = doc("ab\ncd", Utf16);
    for position in [at(2, 0), at(2, 7), at(u32::MAX, u32::MAX)] {
        assert_eq!(
            d.resolve(position),
            Resolved {
                offset: 5,
                position: at(1, 2),
                adjustment: Some(Adjustment::PastLastLine)
            }
        );
    }
    assert!(Adjustment::PastLastLine.is_spec_clamp());
    assert!(Adjustment::PastLineEnd.is_spec_clamp());
    assert!(!Adjustment::InsideLineEnding.is_spec_clamp());
    assert!(!Adjustment::InsideSurrogatePair.is_spec_clamp());
    assert!(!Adjustment::InsideUtf8Sequence.is_spec_clamp());
}

#[test]
fn a_position_inside_a_character_moves_back_to_its_start() {
    // UTF-16: between the halves of 😀's surrogate pair.
    let d = doc("a😀b", Utf16);
    assert_eq!(
        d.resolve(at(0, 2)),
        Resolved {
            offset: 1,
            position: at(0, 1),
            adjustment: Some(Adjustment::InsideSurrogatePair)
        }
    );
    assert_eq!(d.resolve(at(0, 3)).adjustment, None);
    // UTF-8: inside 😀's four bytes and 中's three.
    let d = doc("a😀中", Utf8);
    for character in 2..=4 {
        assert_eq!(
            d.resolve(at(0, character)),
            Resolved {
                offset: 1,
                position: at(0, 1),
                adjustment: Some(Adjustment::InsideUtf8Sequence)
            }
        );
    }
    assert_eq!(d.resolve(at(0, 6)).offset, 5);
    assert_eq!(
        d.resolve(at(0, 6)).adjustment,
        Some(Adjustment::InsideUtf8Sequence)
    );
    // UTF-32 has no inside.
    let d = doc("a😀b", Utf32);
    assert_eq!(
        d.resolve(at(0, 2)),
        Resolved {
            offset: 5,
            position: at(0, 2),
            adjustment: None
        }
    );
}

#[test]
fn offsets_inside_characters_and_line_endings_and_past_the_end_have_positions() {
    let d = doc("a😀\r\nb", Utf16);
    assert_eq!(d.position_at(2), at(0, 1)); // inside 😀: its start
    assert_eq!(d.position_at(5), at(0, 3)); // the CR: the line's end
    assert_eq!(d.position_at(6), at(0, 3)); // between CR and LF: before the CR
    assert_eq!(d.position_at(7), at(1, 0));
    assert_eq!(d.position_at(8), at(1, 1));
    assert_eq!(d.position_at(9), at(1, 1)); // past the end
    assert_eq!(d.position_at(usize::MAX), at(1, 1));
    assert_eq!(d.position_of_char(usize::MAX), at(1, 1));
    assert_eq!(d.range_of(1..7), range((0, 1), (1, 0)));
}

#[test]
fn ranges_read_text_and_lines_borrow_when_they_can() {
    let d = doc("fn main() {\r\n    let 𝄞 = 1;\r\n}\n", Utf16);
    assert_eq!(d.text_in(range((1, 8), (1, 10))), "𝄞");
    assert_eq!(d.text_in(range((0, 11), (2, 0))), "\r\n    let 𝄞 = 1;\r\n");
    // End first: the text between the two.
    assert_eq!(d.text_in(range((1, 10), (1, 8))), "𝄞");
    assert_eq!(d.text_in(d.full_range()), d.to_string());
    assert!(matches!(d.line(1), Some(Cow::Borrowed("    let 𝄞 = 1;"))));
    assert!(matches!(
        d.text_in(range((0, 3), (0, 7))),
        Cow::Borrowed("main")
    ));
    let resolved = d.resolve_range(range((1, 10), (1, 8)));
    assert!(resolved.reversed);
    assert_eq!(resolved.offsets(), 21..25);
}

#[test]
fn changes_in_one_notification_apply_in_order_each_to_the_result_of_the_last() {
    let mut documents = Documents::new(Utf16);
    assert!(open(&mut documents, "a.rs", 1, "hello\nworld").is_empty());
    let warnings = change(
        &mut documents,
        "a.rs",
        2,
        vec![
            edit((0, 0), (0, 5), "hi"),     // "hi\nworld"
            edit((0, 2), (0, 2), " 😀"),    // "hi 😀\nworld"
            edit((0, 5), (1, 0), ""),       // "hi 😀world": 😀 is 2 units, at 3..5
            edit((0, 3), (0, 5), "there "), // "hi there world"
        ],
    )
    .unwrap();
    assert_eq!(warnings, []);
    let d = documents.get(&uri("a.rs")).unwrap();
    assert_eq!(d.to_string(), "hi there world");
    assert_eq!(d.version(), 2);
    // A full replacement among incremental changes: what follows edits the new text.
    let warnings = change(
        &mut documents,
        "a.rs",
        3,
        vec![
            edit((0, 0), (0, 2), "HI"),
            full("a\r\nb"),
            edit((1, 0), (1, 1), "c"),
        ],
    )
    .unwrap();
    assert_eq!(warnings, []);
    assert_eq!(documents.get(&uri("a.rs")).unwrap().to_string(), "a\r\nc");
    // No changes at all: only the version moves.
    assert_eq!(change(&mut documents, "a.rs", 4, vec![]).unwrap(), []);
    assert_eq!(documents.get(&uri("a.rs")).unwrap().version(), 4);
}

#[test]
fn edits_that_make_and_break_crlf_pairs_keep_the_lines_right() {
    let mut documents = Documents::new(Utf8);
    open(&mut documents, "a", 1, "a\rb");
    let first = documents.snapshot(&uri("a")).unwrap();
    // An LF inserted after the CR (at the start of line 1): CR and LF are now one ending.
    change(&mut documents, "a", 2, vec![edit((1, 0), (1, 0), "\n")]).unwrap();
    let d = documents.get(&uri("a")).unwrap();
    assert_eq!(
        (d.line_count(), d.line(1).unwrap()),
        (2, Cow::Borrowed("b"))
    );
    assert_eq!(
        d.resolve(at(0, 2)).adjustment,
        Some(Adjustment::InsideLineEnding)
    );
    // Line 1 starts after the whole CRLF.
    change(&mut documents, "a", 3, vec![edit((1, 0), (1, 0), "x")]).unwrap();
    assert_eq!(documents.get(&uri("a")).unwrap().to_string(), "a\r\nxb");
    // From the end of line 0 to the start of line 1 is the whole ending: back to a CR.
    change(&mut documents, "a", 4, vec![edit((0, 1), (1, 0), "\r")]).unwrap();
    let d = documents.get(&uri("a")).unwrap();
    assert_eq!(d.to_string(), "a\rxb");
    assert_eq!(d.line_count(), 2);
    assert_eq!(
        d.resolve(at(0, 2)).adjustment,
        Some(Adjustment::PastLineEnd)
    );
    // No range splits a CRLF: an end between CR and LF is moved before the CR, so deleting
    // "the CR alone" deletes nothing.
    let warnings = change(
        &mut documents,
        "a",
        5,
        vec![edit((0, 1), (1, 0), "\r\n"), edit((0, 1), (0, 2), "")],
    )
    .unwrap();
    let adjustments: Vec<_> = warnings
        .iter()
        .map(|w| match w {
            Warning::Position {
                change,
                endpoint,
                adjustment,
                ..
            } => (*change, *endpoint, *adjustment),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(
        adjustments,
        [(1, Endpoint::End, Adjustment::InsideLineEnding)]
    );
    let d = documents.get(&uri("a")).unwrap();
    assert_eq!(d.to_string(), "a\r\nxb");
    assert_eq!((d.line_count(), d.offset_at(at(1, 0))), (2, 3));
    // The first snapshot kept its text.
    assert_eq!(first.to_string(), "a\rb");
}

#[test]
fn a_reversed_range_is_applied_between_its_ends_with_a_warning() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "r", 1, "abcdef");
    let warnings = change(&mut documents, "r", 2, vec![edit((0, 4), (0, 1), "X")]).unwrap();
    assert_eq!(
        warnings,
        [Warning::ReversedRange {
            uri: uri("r"),
            change: 0,
            range: range((0, 4), (0, 1))
        }]
    );
    assert!(!warnings[0].is_spec_clamp());
    assert_eq!(documents.get(&uri("r")).unwrap().to_string(), "aXef");
    assert_eq!(
        warnings[0].to_string(),
        "file:///r: change 0, range 0:4-0:1 ends before it starts: applied between the two"
    );
}

#[test]
fn adjusted_positions_of_a_change_are_reported_with_what_was_used() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "p", 1, "a😀\r\nb");
    let warnings = change(
        &mut documents,
        "p",
        2,
        vec![edit((0, 2), (0, 4), "-"), edit((0, 9), (7, 0), "")],
    )
    .unwrap();
    // First change: 0:2 is inside 😀 (moved to 0:1); 0:4 is between CR and LF (0:3).
    // Its text replaced "😀": "a-\r\nb". Second: 0:9 past the line (0:2), 7:0 past the end.
    let p = uri("p");
    assert_eq!(
        warnings,
        [
            Warning::Position {
                uri: p.clone(),
                change: 0,
                endpoint: Endpoint::Start,
                sent: at(0, 2),
                used: at(0, 1),
                adjustment: Adjustment::InsideSurrogatePair,
            },
            Warning::Position {
                uri: p.clone(),
                change: 0,
                endpoint: Endpoint::End,
                sent: at(0, 4),
                used: at(0, 3),
                adjustment: Adjustment::InsideLineEnding,
            },
            Warning::Position {
                uri: p.clone(),
                change: 1,
                endpoint: Endpoint::Start,
                sent: at(0, 9),
                used: at(0, 2),
                adjustment: Adjustment::PastLineEnd,
            },
            Warning::Position {
                uri: p.clone(),
                change: 1,
                endpoint: Endpoint::End,
                sent: at(7, 0),
                used: at(1, 1),
                adjustment: Adjustment::PastLastLine,
            },
        ]
    );
    assert_eq!(documents.get(&p).unwrap().to_string(), "a-");
    let spec: Vec<bool> = warnings.iter().map(Warning::is_spec_clamp).collect();
    assert_eq!(spec, [false, false, true, true]);
    assert_eq!(
        warnings[0].to_string(),
        "file:///p: change 0, range start 0:2 inside a UTF-16 surrogate pair, moved to its start (0:1)"
    );
    assert_eq!(warnings[3].uri(), &p);
}

#[test]
fn a_version_that_does_not_increase_is_applied_with_a_warning() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "v", 5, "abc");
    for (version, previous) in [(5, 5), (3, 5)] {
        let warnings = change(
            &mut documents,
            "v",
            version,
            vec![edit((0, 0), (0, 0), "x")],
        );
        assert_eq!(
            warnings.unwrap(),
            [Warning::VersionNotIncreasing {
                uri: uri("v"),
                previous,
                received: version
            }]
        );
        assert_eq!(documents.get(&uri("v")).unwrap().version(), version);
    }
    assert_eq!(documents.get(&uri("v")).unwrap().to_string(), "xxabc");
    assert_eq!(change(&mut documents, "v", 4, vec![]).unwrap(), []);
}

#[test]
fn a_document_that_is_not_open_is_an_error_and_nothing_changes() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "open", 1, "text");
    let error = change(&mut documents, "closed", 2, vec![full("x")]).unwrap_err();
    assert_eq!(error, DocumentError::NotOpen { uri: uri("closed") });
    assert_eq!(error.to_string(), "file:///closed: not open");
    assert_eq!(documents.len(), 1);
    assert!(!documents.contains(&uri("closed")));
    assert_eq!(documents.get(&uri("open")).unwrap().to_string(), "text");
    let closed = |name: &str| DidCloseTextDocumentParams {
        text_document: TextDocumentIdentifier::new(uri(name)),
    };
    assert_eq!(
        documents.did_close(&closed("closed")).unwrap_err(),
        DocumentError::NotOpen { uri: uri("closed") }
    );
    let document = documents.did_close(&closed("open")).unwrap();
    assert_eq!(document.to_string(), "text");
    assert!(documents.is_empty());
    // Closed, then changed: an error.
    assert!(change(&mut documents, "open", 2, vec![full("x")]).is_err());
    assert_eq!(
        documents
            .did_close(&closed("open"))
            .unwrap_err()
            .to_string(),
        "file:///open: not open"
    );
}

#[test]
fn a_second_did_open_replaces_the_document_with_a_warning() {
    let mut documents = Documents::new(Utf16);
    assert!(open(&mut documents, "twice", 3, "old").is_empty());
    let warnings = documents.did_open(&DidOpenTextDocumentParams {
        text_document: TextDocumentItem::new(uri("twice"), "python".into(), 1, "new".into()),
    });
    assert_eq!(
        warnings,
        [Warning::AlreadyOpen {
            uri: uri("twice"),
            previous_version: 3
        }]
    );
    let d = documents.get(&uri("twice")).unwrap();
    assert_eq!(
        (d.to_string().as_str(), d.version(), d.language_id()),
        ("new", 1, "python")
    );
    assert_eq!(documents.len(), 1);
}

#[test]
fn the_deprecated_range_length_is_ignored() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "l", 1, "abcdef");
    let mut change_event = edit((0, 1), (0, 3), "X");
    change_event.range_length = Some(5);
    change(&mut documents, "l", 2, vec![change_event]).unwrap();
    assert_eq!(documents.get(&uri("l")).unwrap().to_string(), "aXdef");
}

#[test]
fn snapshots_do_not_see_later_changes() {
    let mut documents = Documents::new(Utf16);
    open(&mut documents, "s", 1, "one\ntwo");
    let before = documents.snapshot(&uri("s")).unwrap();
    change(&mut documents, "s", 2, vec![edit((1, 0), (1, 3), "2")]).unwrap();
    assert_eq!(before.to_string(), "one\ntwo");
    assert_eq!(before.version(), 1);
    assert_eq!(documents.get(&uri("s")).unwrap().to_string(), "one\n2");
}

#[test]
fn the_encoding_can_be_set_after_documents_are_open() {
    let mut documents = Documents::default();
    assert_eq!(documents.encoding(), Utf16);
    open(&mut documents, "e", 1, "😀x");
    let utf16 = documents.snapshot(&uri("e")).unwrap();
    documents.set_encoding(Utf32);
    assert_eq!(documents.encoding(), Utf32);
    let d = documents.get(&uri("e")).unwrap();
    assert_eq!(d.encoding(), Utf32);
    assert_eq!(d.offset_at(at(0, 1)), 4);
    // The snapshot keeps the encoding it was taken with.
    assert_eq!(utf16.offset_at(at(0, 2)), 4);
    assert_eq!(utf16.clone().with_encoding(Utf8).offset_at(at(0, 4)), 4);
    let uris: Vec<_> = documents
        .iter()
        .map(|d| d.uri().as_str().to_owned())
        .collect();
    assert_eq!(uris, ["file:///e"]);
}

#[test]
fn debug_shows_the_document_without_its_text() {
    let d = doc("secret\nlines", Utf8);
    let debug = format!("{d:?}");
    assert!(!debug.contains("secret"), "{debug}");
    assert!(
        debug.contains("len: 12") && debug.contains("lines: 2"),
        "{debug}"
    );
}

/// CR and LF of one ending in different pieces of the rope (it keeps about 1 KiB a piece):
/// many lines, each edited at its end.
#[test]
fn line_endings_across_the_ropes_pieces() {
    let mut documents = Documents::new(Utf16);
    let line = "abcdefghi😀\r";
    let count = 3000;
    open(&mut documents, "big", 1, &line.repeat(count));
    assert_eq!(
        documents.get(&uri("big")).unwrap().line_count(),
        count as u32 + 1
    );
    // Every CR becomes CRLF: an LF inserted at the start of each following line.
    let changes = (1..=count as u32)
        .map(|n| edit((n, 0), (n, 0), "\n"))
        .collect();
    assert_eq!(change(&mut documents, "big", 2, changes).unwrap(), []);
    let d = documents.get(&uri("big")).unwrap();
    assert_eq!(d.to_string(), "abcdefghi😀\r\n".repeat(count));
    assert_eq!(d.line_count(), count as u32 + 1);
    for n in (0..count as u32).step_by(97) {
        assert_eq!(d.line(n).unwrap(), "abcdefghi😀");
        assert_eq!(
            d.resolve(at(n, 12)).adjustment,
            Some(Adjustment::InsideLineEnding)
        );
        assert_eq!(d.offset_at(at(n, 12)), n as usize * 15 + 13);
        assert_eq!(d.position_at(n as usize * 15 + 14), at(n, 11));
    }
    // Remove every LF again, from the last line up, by ranges across the line endings.
    let changes = (0..count as u32)
        .rev()
        .map(|n| edit((n, 11), (n + 1, 0), "\r"))
        .collect();
    assert_eq!(change(&mut documents, "big", 3, changes).unwrap(), []);
    assert_eq!(
        documents.get(&uri("big")).unwrap().to_string(),
        line.repeat(count)
    );
}

/// The lines of a text as a reader splits them, with no rope: at each LF, CRLF or lone CR;
/// each line's byte offsets without its ending.
fn model_lines(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let (mut lines, mut start, mut i) = (Vec::new(), 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                lines.push((start, i));
                i += 2;
                start = i;
            }
            b'\r' | b'\n' => {
                lines.push((start, i));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    lines.push((start, bytes.len()));
    lines
}

proptest::proptest! {
    /// `lines()`, `line_offsets` and `line_start` agree with the model on texts of LF,
    /// CRLF, lone CR, non-BMP characters, CJK and U+2028 (not a line break).
    #[test]
    fn lines_and_their_byte_offsets_agree_with_a_model(
        pieces in proptest::collection::vec(
            proptest::sample::select(vec!["a", "\n", "\r", "\r\n", "😀", "日本", "\u{2028}", " TODO"]),
            0..40,
        )
    ) {
        let text: String = pieces.concat();
        let doc = doc(&text, Utf16);
        let model = model_lines(&text);
        let lines: Vec<_> = doc.lines().collect();
        proptest::prop_assert_eq!(lines.len(), model.len());
        for (line, &(start, end)) in lines.iter().zip(&model) {
            proptest::prop_assert_eq!(line.offsets.clone(), start..end);
            proptest::prop_assert_eq!(&*line.text, &text[start..end]);
            proptest::prop_assert_eq!(doc.line_offsets(line.number), Some(start..end));
            proptest::prop_assert_eq!(doc.line_start(line.number), Some(start));
        }
        proptest::prop_assert_eq!(doc.line_offsets(model.len() as u32), None);
    }
}
