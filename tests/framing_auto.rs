//! `Framing::Auto`, and framing mistakes reported loudly with a hint, at any chunking.

use sansrpc::codec::{encode_frame, Decoder, FrameError, Framing};
use sansrpc::connection::{Config, Connection, Event, Profile};
use sansrpc::{Instant, Limits};

const BODIES: [&str; 3] = [
    r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#,
    r#"[{"jsonrpc":"2.0","method":"b"}]"#,
    r#"{"jsonrpc":"2.0","id":"x","method":"c","params":{"s":"{["}}"#,
];

fn wire(framing: Framing, lead: &str) -> Vec<u8> {
    let mut out = lead.as_bytes().to_vec();
    for b in BODIES {
        encode_frame(framing, b.as_bytes(), &mut out);
    }
    out
}

/// Feeds `input` in chunks of `chunk` bytes; returns the frames and errors, in order.
fn decode(decoder: &mut Decoder, input: &[u8], chunk: usize) -> Vec<Result<String, FrameError>> {
    let mut out = Vec::new();
    for piece in input.chunks(chunk) {
        let mut piece = piece;
        loop {
            let n = decoder.feed(piece);
            piece = &piece[n..];
            while let Some(f) = decoder.next_frame() {
                out.push(f.map(|b| String::from_utf8(b.to_vec()).unwrap()));
            }
            if piece.is_empty() {
                break;
            }
        }
    }
    if let Some(e) = decoder.finish() {
        out.push(Err(e));
    }
    out
}

fn oks() -> Vec<Result<String, FrameError>> {
    BODIES.iter().map(|b| Ok(b.to_string())).collect()
}

#[test]
fn auto_picks_either_framing_at_any_chunking() {
    for (framing, lead) in [
        (Framing::Newline, ""),
        (Framing::Newline, " \r\n\t"),
        (Framing::ContentLength, ""),
        (Framing::ContentLength, "\r\n"),
    ] {
        let input = wire(framing, lead);
        for chunk in 1..=input.len() {
            let mut d = Decoder::new(Framing::Auto, &Limits::default());
            assert_eq!(d.framing(), Framing::Auto);
            let mut out = Vec::new();
            let mut rest = &input[..];
            let mut decided = None;
            while !rest.is_empty() {
                let (piece, tail) = rest.split_at(chunk.min(rest.len()));
                rest = tail;
                let mut piece = piece;
                while !piece.is_empty() {
                    let n = d.feed(piece);
                    piece = &piece[n..];
                    while let Some(f) = d.next_frame() {
                        out.push(f.map(|b| String::from_utf8(b.to_vec()).unwrap()));
                    }
                }
                if d.framing() != Framing::Auto {
                    decided.get_or_insert(d.framing());
                }
            }
            assert_eq!(out, oks(), "{framing:?} {lead:?} chunk {chunk}");
            assert_eq!(decided, Some(framing));
            assert_eq!(d.finish(), None);
            // After the end of one stream, the next one decides again.
            assert_eq!(d.framing(), Framing::Auto);
        }
    }
}

#[test]
fn newline_json_on_a_content_length_decoder_is_reported_first_with_a_hint() {
    let input = wire(Framing::Newline, "");
    for chunk in [1, 2, 7, input.len()] {
        let mut d = Decoder::new(Framing::ContentLength, &Limits::default());
        let out = decode(&mut d, &input, chunk);
        let first = out[0].clone().unwrap_err();
        assert_eq!(
            first,
            FrameError::WrongFraming {
                expected: Framing::ContentLength,
                found: Framing::Newline
            }
        );
        let message = first.to_string();
        assert!(
            message.contains("newline") && message.contains("Content-Length"),
            "{message}"
        );
        assert!(out[1..]
            .iter()
            .all(|e| !matches!(e, Err(FrameError::WrongFraming { .. }))));
        assert!(
            out[1..].iter().all(Result::is_err),
            "no frame decodes: {out:?}"
        );
    }
}

#[test]
fn a_content_length_header_on_a_newline_decoder_is_reported_first() {
    let input = wire(Framing::ContentLength, "");
    for chunk in [1, 3, input.len()] {
        let mut d = Decoder::new(Framing::Newline, &Limits::default());
        let out = decode(&mut d, &input, chunk);
        assert_eq!(
            out[0],
            Err(FrameError::WrongFraming {
                expected: Framing::Newline,
                found: Framing::ContentLength
            })
        );
    }
    // The right framing reports nothing.
    let mut d = Decoder::new(Framing::Newline, &Limits::default());
    assert_eq!(decode(&mut d, &wire(Framing::Newline, "\n"), 5), oks());
}

#[test]
fn an_mcp_endpoint_fed_content_length_says_so() {
    let mut ep = Connection::new(Config::for_profile(Profile::Mcp), Instant::ZERO);
    let input = wire(Framing::ContentLength, "");
    assert_eq!(ep.handle_input(&input, Instant::ZERO), Ok(input.len()));
    let Some(Event::FrameError(e)) = ep.poll_event() else {
        panic!("the first event names the framing mistake")
    };
    assert!(
        e.to_string().contains("configure ContentLength framing"),
        "{e}"
    );
}

#[test]
fn an_auto_endpoint_answers_in_the_peers_framing() {
    for framing in [Framing::Newline, Framing::ContentLength] {
        let mut config = Config::default();
        config.framing = Some(Framing::Auto);
        let mut ep = Connection::new(config, Instant::ZERO);
        let mut input = Vec::new();
        encode_frame(framing, BODIES[0].as_bytes(), &mut input);
        assert_eq!(ep.handle_input(&input, Instant::ZERO), Ok(input.len()));
        let Some(Event::Request { handle, .. }) = ep.poll_event() else {
            panic!()
        };
        ep.respond(handle, Ok(sansrpc::RawValue::from_json("1").unwrap()));
        assert_eq!(ep.running(), 0, "answered");
        let mut out = Vec::new();
        while ep.poll_transmit(&mut out).is_some() {}
        let mut expected = Vec::new();
        encode_frame(
            framing,
            br#"{"jsonrpc":"2.0","result":1,"id":1}"#,
            &mut expected,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(expected).unwrap()
        );
    }
}
