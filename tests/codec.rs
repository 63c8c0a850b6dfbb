//! Behaviour of the framing codecs: each framing rule, recovery, bounds, and chunking
//! invariance.

use proptest::prelude::*;
use sansrpc::codec::{check_message, encode_frame, Decoder, FrameError, Framing};
use sansrpc::Limits;

type Event = Result<Vec<u8>, FrameError>;

/// What a decoder produced for a stream: its events, what `finish` said, and the most it
/// ever buffered.
#[derive(Debug, PartialEq)]
struct Run {
    events: Vec<Event>,
    finish: Option<FrameError>,
    peak: usize,
}

/// Feeds `chunks` one after another, following the calling contract, then finishes.
fn run_chunks<'a>(
    framing: Framing,
    limits: &Limits,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Run {
    run_chunks_with(framing, limits, chunks, false)
}

/// [`run_chunks`]; with `direct`, whole frames at the front of a chunk are taken with
/// `Decoder::frame_in` (no copy) before the rest is fed, as the endpoint does.
fn run_chunks_with<'a>(
    framing: Framing,
    limits: &Limits,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    direct: bool,
) -> Run {
    let mut decoder = Decoder::new(framing, limits);
    let mut events = Vec::new();
    let mut peak = 0;
    for chunk in chunks {
        let mut rest = chunk;
        loop {
            while let Some((used, body)) = direct.then(|| decoder.frame_in(rest)).flatten() {
                assert!(used > 0 && used <= rest.len());
                events.push(Ok(body.to_vec()));
                rest = &rest[used..];
            }
            let n = decoder.feed(rest);
            rest = &rest[n..];
            peak = peak.max(decoder.buffered());
            assert!(decoder.buffered() <= decoder.max_buffered());
            drain(&mut decoder, &mut events);
            if rest.is_empty() {
                break;
            }
        }
    }
    let finish = decoder.finish();
    assert_eq!(decoder.buffered(), 0);
    Run {
        events,
        finish,
        peak,
    }
}

fn drain(decoder: &mut Decoder, events: &mut Vec<Event>) {
    while let Some(event) = decoder.next_frame() {
        events.push(event.map(<[u8]>::to_vec));
    }
}

fn run(framing: Framing, limits: &Limits, input: &[u8]) -> Run {
    run_chunks(framing, limits, [input])
}

/// Feeds `input` split into pieces whose sizes cycle through `sizes` (each at least 1).
fn run_split(framing: Framing, limits: &Limits, input: &[u8], sizes: &[usize]) -> Run {
    run_split_with(framing, limits, input, sizes, false)
}

/// [`run_split`], taking whole frames without a copy first when `direct`.
fn run_split_with(
    framing: Framing,
    limits: &Limits,
    input: &[u8],
    sizes: &[usize],
    direct: bool,
) -> Run {
    let mut chunks = Vec::new();
    let mut rest = input;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .clamp(1, rest.len());
        chunks.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    run_chunks_with(framing, limits, chunks, direct)
}

fn frames(run: &Run) -> Vec<&[u8]> {
    run.events
        .iter()
        .filter_map(|e| e.as_ref().ok().map(Vec::as_slice))
        .collect()
}

fn ok(body: &[u8]) -> Event {
    Ok(body.to_vec())
}

fn cl(input: &[u8]) -> Run {
    run(Framing::ContentLength, &Limits::default(), input)
}

fn nl(input: &[u8]) -> Run {
    run(Framing::Newline, &Limits::default(), input)
}

fn small_limits() -> Limits {
    limits(1024, 256)
}

fn limits(max_frame_bytes: usize, max_header_bytes: usize) -> Limits {
    let mut limits = Limits::default();
    limits.max_frame_bytes = max_frame_bytes;
    limits.max_header_bytes = max_header_bytes;
    limits
}

// ---- Content-Length ----

#[test]
fn cl_decodes_consecutive_frames() {
    let mut wire = Vec::new();
    for body in [&b"{}"[..], b"", br#"{"a":[1,2,3]}"#] {
        encode_frame(Framing::ContentLength, body, &mut wire);
    }
    assert!(wire.starts_with(b"Content-Length: 2\r\n\r\n{}"));
    let r = cl(&wire);
    assert_eq!(r.events, vec![ok(b"{}"), ok(b""), ok(br#"{"a":[1,2,3]}"#)]);
    assert_eq!(r.finish, None);
}

#[test]
fn cl_accepts_lf_only_line_endings() {
    let r = cl(b"Content-Length: 2\n\n{}Content-Length: 1\nX-Other: y\n\n7");
    assert_eq!(r.events, vec![ok(b"{}"), ok(b"7")]);
}

#[test]
fn cl_header_names_are_case_insensitive_and_values_trimmed() {
    let r = cl(b"content-LENGTH:2\r\n\r\n{}CONTENT-length : \t 3 \t\r\n\r\n[1]");
    assert_eq!(r.events, vec![ok(b"{}"), ok(b"[1]")]);
}

#[test]
fn cl_ignores_unknown_headers_and_whitespace_between_frames() {
    let r = cl(b"\r\n  X-Trace: abc:def\r\nContent-Length: 2\r\nX-Empty:\r\n\r\n{}\r\n\r\n");
    assert_eq!(r.events, vec![ok(b"{}")]);
    assert_eq!(r.finish, None);
}

#[test]
fn cl_charset_utf8_spellings_are_accepted() {
    for ct in [
        "application/vscode-jsonrpc; charset=utf-8",
        "application/vscode-jsonrpc; charset=utf8",
        "application/vscode-jsonrpc; charset=UTF-8",
        "application/vscode-jsonrpc; charset=\"utf-8\"",
        "application/vscode-jsonrpc",
        "application/json; foo=bar",
    ] {
        let input = format!("Content-Type: {ct}\r\nContent-Length: 2\r\n\r\n{{}}");
        assert_eq!(cl(input.as_bytes()).events, vec![ok(b"{}")], "{ct}");
    }
}

#[test]
fn cl_other_charset_is_refused_and_its_body_skipped() {
    let r = cl(b"Content-Length: 5\r\nContent-Type: application/json; charset=latin1\r\n\r\n[\"\xe9\"]Content-Length: 2\r\n\r\n{}");
    assert_eq!(
        r.events,
        vec![Err(FrameError::UnsupportedCharset), ok(b"{}")]
    );
}

#[test]
fn cl_missing_length_resyncs_at_next_header() {
    let r = cl(b"Content-Type: application/json\r\n\r\n{\"lost\":1}Content-Length: 2\r\n\r\n{}");
    assert_eq!(r.events, vec![Err(FrameError::MissingLength), ok(b"{}")]);
}

#[test]
fn cl_malformed_lengths_resync_at_next_header() {
    for bad in [
        "abc",
        "-2",
        "+2",
        "",
        "2 2",
        "0x10",
        "99999999999999999999999",
    ] {
        let input = format!("Content-Length: {bad}\r\n\r\n{{}}content-length: 2\r\n\r\n[]");
        let r = cl(input.as_bytes());
        assert_eq!(
            r.events,
            vec![Err(FrameError::InvalidLength), ok(b"[]")],
            "{bad:?}"
        );
    }
}

#[test]
fn cl_conflicting_lengths_are_invalid() {
    let r = cl(b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}xContent-Length: 2\r\n\r\n[]");
    assert_eq!(r.events, vec![Err(FrameError::InvalidLength), ok(b"[]")]);
    let r = cl(b"Content-Length: 2\r\ncontent-length: 02\r\n\r\n{}");
    assert_eq!(r.events, vec![ok(b"{}")]);
}

#[test]
fn cl_garbage_before_header_is_one_event() {
    let r = cl(b"hello there! {\"not\": \"framed\"}\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(
        r.events,
        vec![Err(FrameError::Garbage { skipped: 31 }), ok(b"{}")]
    );
}

#[test]
fn cl_short_declared_length_spills_over_as_garbage() {
    let r = cl(b"Content-Length: 3\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n{}");
    assert_eq!(
        r.events,
        vec![
            ok(b"{\"a"),
            Err(FrameError::Garbage { skipped: 4 }),
            ok(b"{}")
        ]
    );
}

#[test]
fn cl_header_line_without_colon_is_garbage() {
    let r = cl(b"Content-Length 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]");
    assert_eq!(
        r.events,
        vec![Err(FrameError::Garbage { skipped: 22 }), ok(b"[]")]
    );
}

#[test]
fn cl_garbage_until_end_is_reported_by_finish() {
    let r = cl(b"Content-Length: 2\r\n\r\n{}garbage with no header after it");
    assert_eq!(r.events, vec![ok(b"{}")]);
    assert_eq!(r.finish, Some(FrameError::Garbage { skipped: 31 }));
}

#[test]
fn cl_huge_declared_length_allocates_nothing_and_is_skipped() {
    const DECLARED: u64 = 10_000_000_000;
    let limits = Limits::default();
    let mut decoder = Decoder::new(Framing::ContentLength, &limits);
    let header = format!("Content-Length: {DECLARED}\r\n\r\n");
    assert_eq!(decoder.feed(header.as_bytes()), header.len());
    assert_eq!(
        decoder.next_frame(),
        Some(Err(FrameError::TooLarge {
            declared: Some(DECLARED),
            limit: limits.max_frame_bytes
        }))
    );
    assert_eq!(decoder.next_frame(), None);
    let chunk = vec![b'x'; 1 << 20];
    let mut left = DECLARED;
    while left > 0 {
        let piece = &chunk[..left.min(chunk.len() as u64) as usize];
        assert_eq!(decoder.feed(piece), piece.len());
        assert_eq!(decoder.buffered(), 0);
        assert_eq!(decoder.next_frame(), None);
        left -= piece.len() as u64;
    }
    assert_eq!(decoder.feed(b"Content-Length: 2\r\n\r\n{}"), 23);
    assert_eq!(decoder.next_frame(), Some(Ok(&b"{}"[..])));
    assert_eq!(decoder.finish(), None);
}

#[test]
fn cl_too_large_body_arriving_with_its_header_is_dropped() {
    let limits = small_limits();
    let mut input = b"Content-Length: 5000\r\n\r\n".to_vec();
    input.extend(std::iter::repeat(b'z').take(5000));
    encode_frame(Framing::ContentLength, b"{}", &mut input);
    for sizes in [&[usize::MAX][..], &[100], &[1, 7, 300]] {
        let r = run_split(Framing::ContentLength, &limits, &input, sizes);
        assert_eq!(
            r.events,
            vec![
                Err(FrameError::TooLarge {
                    declared: Some(5000),
                    limit: 1024
                }),
                ok(b"{}")
            ]
        );
        assert!(r.peak <= 1024 + 256 + 16, "{}", r.peak);
    }
}

#[test]
fn cl_header_too_large_resyncs() {
    let limits = small_limits();
    let mut input = b"Content-Length: 2\r\nX-Pad: ".to_vec();
    input.extend(std::iter::repeat(b'p').take(400));
    input.extend_from_slice(b"\r\n\r\n{}");
    encode_frame(Framing::ContentLength, b"[1]", &mut input);
    let r = run(Framing::ContentLength, &limits, &input);
    assert_eq!(
        r.events,
        vec![Err(FrameError::HeaderTooLarge { limit: 256 }), ok(b"[1]")]
    );
}

#[test]
fn cl_endless_header_keeps_memory_bounded() {
    let limits = small_limits();
    let mut decoder = Decoder::new(Framing::ContentLength, &limits);
    let mut events = Vec::new();
    let mut chunk = b"X-Endless: ".to_vec();
    chunk.extend(std::iter::repeat(b'a').take(10_000));
    for _ in 0..100 {
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            assert!(decoder.buffered() <= 1024 + 256 + 16);
            drain(&mut decoder, &mut events);
        }
    }
    assert_eq!(events, vec![Err(FrameError::HeaderTooLarge { limit: 256 })]);
}

#[test]
fn cl_incomplete_body_waits_then_is_truncated() {
    let limits = small_limits();
    let mut decoder = Decoder::new(Framing::ContentLength, &limits);
    assert_eq!(decoder.feed(b"Content-Length: 1024\r\n\r\n"), 24);
    assert_eq!(decoder.next_frame(), None);
    assert_eq!(decoder.feed(&[b' '; 1000]), 1000);
    assert_eq!(decoder.next_frame(), None);
    assert_eq!(decoder.buffered(), 1000);
    assert_eq!(
        decoder.finish(),
        Some(FrameError::Truncated { received: 1024 })
    );
    assert_eq!(decoder.buffered(), 0);
}

#[test]
fn cl_truncation_is_reported_by_finish() {
    let r = cl(b"Content-Length: 10\r\n\r\n{\"a\"");
    assert_eq!(r.events, vec![]);
    assert_eq!(r.finish, Some(FrameError::Truncated { received: 26 }));
    let r = cl(b"Content-Length: 2\r\n\r\n{}Content-Le");
    assert_eq!(r.events, vec![ok(b"{}")]);
    assert_eq!(r.finish, Some(FrameError::Truncated { received: 10 }));
    let r = cl(b"Content-Length: 2\r\n\r\n{}\r\n \n");
    assert_eq!(r.finish, None);
}

#[test]
fn cl_every_split_point_gives_the_same_frames() {
    let mut wire = Vec::new();
    for body in ["{\"é\":\"日本語\"}", "[]", "{\"emoji\":\"🦀\"}"] {
        encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    let whole = cl(&wire);
    assert_eq!(whole.events.len(), 3);
    for cut in 0..=wire.len() {
        let r = run_chunks(
            Framing::ContentLength,
            &Limits::default(),
            [&wire[..cut], &wire[cut..]],
        );
        assert_eq!(r.events, whole.events, "cut at {cut}");
    }
    assert_eq!(
        run_split(Framing::ContentLength, &Limits::default(), &wire, &[1]).events,
        whole.events
    );
}

// ---- Newline ----

#[test]
fn nl_decodes_lines_and_strips_cr() {
    let r = nl(b"{\"a\":1}\n[2]\r\n3\n");
    assert_eq!(r.events, vec![ok(b"{\"a\":1}"), ok(b"[2]"), ok(b"3")]);
    assert_eq!(r.finish, None);
}

#[test]
fn nl_skips_blank_and_whitespace_lines() {
    let r = nl(b"\n\r\n  \t \r\n{}\n\n \n[]\n   ");
    assert_eq!(r.events, vec![ok(b"{}"), ok(b"[]")]);
    assert_eq!(r.finish, None);
}

#[test]
fn nl_truncated_last_line_is_reported_by_finish() {
    let r = nl(b"{}\n{\"partial\"");
    assert_eq!(r.events, vec![ok(b"{}")]);
    assert_eq!(r.finish, Some(FrameError::Truncated { received: 10 }));
}

#[test]
fn nl_oversize_line_is_skipped_and_the_next_decodes() {
    let limits = small_limits();
    let mut input = vec![b'x'; 3000];
    input.extend_from_slice(b"\n{}\n");
    input.extend(std::iter::repeat(b'y').take(1025));
    input.extend_from_slice(b"\r\n[]\n");
    let too_large = Err(FrameError::TooLarge {
        declared: None,
        limit: 1024,
    });
    for sizes in [&[usize::MAX][..], &[1], &[500, 3]] {
        let r = run_split(Framing::Newline, &limits, &input, sizes);
        assert_eq!(
            r.events,
            vec![too_large.clone(), ok(b"{}"), too_large.clone(), ok(b"[]")]
        );
        assert!(r.peak <= 1024 + 2);
    }
    // Exactly at the limit, with or without CR, is fine.
    let mut input = vec![b'z'; 1024];
    input.extend_from_slice(b"\r\n");
    input.extend(std::iter::repeat(b'z').take(1024));
    input.push(b'\n');
    let r = run_split(Framing::Newline, &limits, &input, &[1]);
    assert_eq!(frames(&r), vec![&[b'z'; 1024][..]; 2]);
}

#[test]
fn nl_endless_line_keeps_memory_bounded() {
    let limits = small_limits();
    let mut decoder = Decoder::new(Framing::Newline, &limits);
    let mut events = Vec::new();
    let chunk = vec![b'q'; 777];
    for _ in 0..10_000 {
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            assert!(decoder.buffered() <= 1024 + 2);
            drain(&mut decoder, &mut events);
        }
    }
    assert_eq!(decoder.buffered(), 0);
    assert_eq!(decoder.feed(b"tail\n{}\n"), 8);
    drain(&mut decoder, &mut events);
    assert_eq!(
        events,
        vec![
            Err(FrameError::TooLarge {
                declared: None,
                limit: 1024
            }),
            ok(b"{}")
        ]
    );
    assert_eq!(decoder.finish(), None);
}

#[test]
fn nl_encoding_keeps_pretty_json_on_one_line() {
    let value = serde_json::json!({"text": "line1\nline2\r\n", "list": [1, 2, {"k": null}]});
    let pretty = serde_json::to_vec_pretty(&value).unwrap();
    assert!(pretty.contains(&b'\n'));
    let mut wire = Vec::new();
    encode_frame(Framing::Newline, &pretty, &mut wire);
    encode_frame(Framing::Newline, b"{}", &mut wire);
    let r = nl(&wire);
    assert_eq!(r.events.len(), 2);
    let back: serde_json::Value = serde_json::from_slice(r.events[0].as_ref().unwrap()).unwrap();
    assert_eq!(back, value);
}

// ---- shared ----

#[test]
fn decoder_reports_its_framing() {
    for framing in [Framing::ContentLength, Framing::Newline] {
        assert_eq!(Decoder::new(framing, &Limits::default()).framing(), framing);
    }
}

#[test]
fn check_message_enforces_the_frame_limit() {
    let limits = small_limits();
    assert_eq!(check_message(&[b' '; 1024], &limits), Ok(()));
    assert_eq!(
        check_message(&[b' '; 1025], &limits),
        Err(FrameError::TooLarge {
            declared: Some(1025),
            limit: 1024
        })
    );
}

#[test]
fn errors_display() {
    let e = FrameError::TooLarge {
        declared: Some(10),
        limit: 5,
    };
    assert_eq!(
        e.to_string(),
        "frame of 10 bytes exceeds the limit of 5 bytes"
    );
    assert_eq!(
        FrameError::Garbage { skipped: 3 }.to_string(),
        "skipped 3 bytes that were not a frame header"
    );
}

// ---- properties ----

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<String>().prop_map(String::into_bytes),
        "[ -~é日🦀\n\r\t]{0,40}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

fn sizes() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(1usize..64, 1..8)
}

/// Garbage that is recognisably not a header: it starts with `}` and never contains
/// `content-length`.
fn garbage() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..40).prop_filter_map("contains the header", |g| {
        let mut v = vec![b'}'];
        v.extend(g);
        let lower = v.to_ascii_lowercase();
        (!lower.windows(14).any(|w| w == b"content-length")).then_some(v)
    })
}

proptest! {
    #[test]
    fn prop_cl_chunking_invariance(bodies in proptest::collection::vec(body(), 0..8), sizes in sizes()) {
        let mut wire = Vec::new();
        for b in &bodies {
            encode_frame(Framing::ContentLength, b, &mut wire);
        }
        let limits = Limits::default();
        let whole = run(Framing::ContentLength, &limits, &wire);
        let expected: Vec<Event> = bodies.iter().map(|b| Ok(b.clone())).collect();
        prop_assert_eq!(&whole.events, &expected);
        prop_assert_eq!(&whole.finish, &None);
        let split = run_split(Framing::ContentLength, &limits, &wire, &sizes);
        prop_assert_eq!(&split.events, &whole.events);
        prop_assert_eq!(&split.finish, &whole.finish);
        let direct = run_split_with(Framing::ContentLength, &limits, &wire, &sizes, true);
        prop_assert_eq!(&direct.events, &whole.events);
        prop_assert_eq!(&direct.finish, &whole.finish);
    }

    #[test]
    fn prop_nl_chunking_invariance(bodies in proptest::collection::vec(body(), 0..8), sizes in sizes()) {
        let mut wire = Vec::new();
        for b in &bodies {
            encode_frame(Framing::Newline, b, &mut wire);
        }
        let limits = Limits::default();
        let expected: Vec<Event> = bodies
            .iter()
            .map(|b| b.iter().map(|&c| if c == b'\n' || c == b'\r' { b' ' } else { c }).collect::<Vec<u8>>())
            .filter(|b| !b.iter().all(|c| b" \t\r\n".contains(c)))
            .map(Ok)
            .collect();
        let whole = run(Framing::Newline, &limits, &wire);
        prop_assert_eq!(&whole.events, &expected);
        prop_assert_eq!(&whole.finish, &None);
        let split = run_split(Framing::Newline, &limits, &wire, &sizes);
        prop_assert_eq!(&split.events, &whole.events);
        let direct = run_split_with(Framing::Newline, &limits, &wire, &sizes, true);
        prop_assert_eq!(&direct.events, &whole.events);
    }

    #[test]
    fn prop_cl_recovers_after_garbage(
        items in proptest::collection::vec((proptest::option::of(garbage()), body()), 1..8),
        sizes in sizes(),
    ) {
        let mut wire = Vec::new();
        let mut expected = Vec::new();
        for (g, b) in &items {
            if let Some(g) = g {
                wire.extend_from_slice(g);
                expected.push(Err(FrameError::Garbage { skipped: g.len() }));
            }
            encode_frame(Framing::ContentLength, b, &mut wire);
            expected.push(Ok(b.clone()));
        }
        let limits = Limits::default();
        let whole = run(Framing::ContentLength, &limits, &wire);
        prop_assert_eq!(&whole.events, &expected);
        let split = run_split(Framing::ContentLength, &limits, &wire, &sizes);
        prop_assert_eq!(&split.events, &expected);
        let direct = run_split_with(Framing::ContentLength, &limits, &wire, &sizes, true);
        prop_assert_eq!(&direct.events, &expected);
    }

    #[test]
    fn prop_arbitrary_bytes_chunking_invariance(
        input in proptest::collection::vec(
            prop_oneof![
                4 => any::<u8>(),
                1 => Just(b'\n'),
                1 => Just(b'\r'),
                1 => Just(b':'),
            ],
            0..600,
        ),
        header in proptest::option::of(0usize..300),
        sizes in sizes(),
    ) {
        // Arbitrary bytes, optionally with a real-looking header spliced in.
        let mut input = input;
        if let Some(at) = header {
            let at = at.min(input.len());
            input.splice(at..at, b"Content-Length: 3\r\n\r\n[1]".iter().copied());
        }
        let limits = limits(64, 32);
        for framing in [Framing::ContentLength, Framing::Newline] {
            let whole = run(framing, &limits, &input);
            let split = run_split(framing, &limits, &input, &sizes);
            prop_assert_eq!(&split, &Run { peak: split.peak, ..whole });
            let direct = run_split_with(framing, &limits, &input, &sizes, true);
            prop_assert_eq!(&direct.events, &split.events);
            prop_assert_eq!(&direct.finish, &split.finish);
            for f in frames(&split) {
                prop_assert!(f.len() <= 64);
            }
        }
    }
}
