use super::*;
use alloc::string::String;
use alloc::vec;
use proptest::prelude::*;

const KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

fn masked(opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(opcode, payload, Some(KEY), &mut out);
    out
}

/// A frame with any first byte (fin, rsv, opcode) and a masked payload.
fn raw(b0: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = masked(Opcode::Text, payload);
    out[0] = b0;
    out
}

fn fault(role: Role, mut input: Vec<u8>) -> WsFault {
    let mut decoder = WsDecoder::new(role, 1024);
    loop {
        match decoder.decode(&mut input) {
            Err(fault) => return fault,
            Ok(Step::Event(n, _) | Step::Fragment(n)) => {
                input.drain(..n);
            }
            Ok(Step::Incomplete(n)) => panic!("incomplete, wants {n}"),
        }
    }
}

/// Decodes all of `input` (whole frames) into text messages and other events.
fn events(role: Role, max: usize, mut input: Vec<u8>) -> Result<Vec<String>, WsFault> {
    let mut decoder = WsDecoder::new(role, max);
    let mut seen = Vec::new();
    while !input.is_empty() {
        let used = match decoder.decode(&mut input)? {
            Step::Event(n, event) => {
                seen.push(match event {
                    WsEvent::Text(t) => String::from(core::str::from_utf8(t).unwrap()),
                    WsEvent::Ping(p) => alloc::format!("ping {p:?}"),
                    WsEvent::Pong(p) => alloc::format!("pong {p:?}"),
                    WsEvent::Close { code, reason } => alloc::format!("close {code:?} {reason}"),
                });
                n
            }
            Step::Fragment(n) => n,
            Step::Incomplete(n) => panic!("incomplete, wants {n} of {}", input.len()),
        };
        input.drain(..used);
    }
    Ok(seen)
}

#[test]
fn a_masked_text_frame_is_unmasked_in_place() {
    let mut wire = masked(Opcode::Text, b"hello");
    assert_eq!(wire.len(), 2 + 4 + 5);
    let mut decoder = WsDecoder::new(Role::Server, 100);
    assert_eq!(
        decoder.decode(&mut wire),
        Ok(Step::Event(11, WsEvent::Text(b"hello")))
    );
}

#[test]
fn a_client_reads_unmasked_frames_and_refuses_masked_ones() {
    let mut wire = Vec::new();
    encode_frame(Opcode::Text, b"[1]", None, &mut wire);
    assert_eq!(events(Role::Client, 10, wire), Ok(vec!["[1]".into()]));
    let f = fault(Role::Client, masked(Opcode::Text, b"[1]"));
    assert_eq!(f.code, close_code::PROTOCOL);
    let mut unmasked = Vec::new();
    encode_frame(Opcode::Text, b"[1]", None, &mut unmasked);
    assert_eq!(fault(Role::Server, unmasked).code, close_code::PROTOCOL);
}

#[test]
fn every_cut_of_a_frame_asks_for_more_and_never_for_less_than_it_has() {
    for len in [0usize, 5, 125, 126, 300, 65_535, 65_536, 70_000] {
        let payload = vec![b'x'; len];
        let wire = masked(Opcode::Text, &payload);
        let cuts = (0..wire.len().min(20)).chain([wire.len() - 1]);
        for cut in cuts {
            let mut part = wire[..cut].to_vec();
            let mut decoder = WsDecoder::new(Role::Server, 1 << 20);
            match decoder.decode(&mut part) {
                Ok(Step::Incomplete(n)) => assert!(n > cut && n <= wire.len(), "{len} {cut} {n}"),
                other => panic!("{len} {cut}: {other:?}"),
            }
            // A cut inside the payload is untouched: decoding the whole later unmasks once.
            assert_eq!(part, wire[..cut]);
        }
        let mut whole = wire.clone();
        let mut decoder = WsDecoder::new(Role::Server, 1 << 20);
        match decoder.decode(&mut whole) {
            Ok(Step::Event(n, WsEvent::Text(t))) => {
                assert_eq!(n, wire.len());
                assert_eq!(t, &payload[..]);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_fragmented_message_is_assembled_around_control_frames() {
    let mut wire = raw(0x01, b"{\"jsonrpc\":"); // text, not final
    wire.extend(masked(Opcode::Ping, b"p"));
    wire.extend(raw(0x00, b"\"2.0\",")); // continuation, not final
    wire.extend(raw(0x80, b"\"method\":\"m\"}")); // continuation, final
    wire.extend(masked(Opcode::Text, b"next"));
    assert_eq!(
        events(Role::Server, 1024, wire),
        Ok(vec![
            "ping [112]".into(),
            r#"{"jsonrpc":"2.0","method":"m"}"#.into(),
            "next".into()
        ])
    );
}

#[test]
fn the_fragment_buffer_is_given_back_after_a_large_message() {
    let mut decoder = WsDecoder::new(Role::Server, 1 << 20);
    let mut first = raw(0x01, &vec![b'a'; 100_000]);
    let Ok(Step::Fragment(_)) = decoder.decode(&mut first) else {
        panic!()
    };
    let mut last = raw(0x80, b"b");
    let Ok(Step::Event(_, WsEvent::Text(t))) = decoder.decode(&mut last) else {
        panic!()
    };
    assert_eq!(t.len(), 100_001);
    let mut next = masked(Opcode::Ping, b"");
    assert!(matches!(decoder.decode(&mut next), Ok(Step::Event(..))));
    assert_eq!(decoder.partial.capacity(), 0);
}

#[test]
fn protocol_errors_have_their_close_codes() {
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (raw(0x81 | 0x40, b"x"), close_code::PROTOCOL), // RSV1 without an extension
        (raw(0x83, b"x"), close_code::PROTOCOL),        // reserved data opcode
        (raw(0x8B, b"x"), close_code::PROTOCOL),        // reserved control opcode
        (raw(0x09, b"x"), close_code::PROTOCOL),        // fragmented ping
        (raw(0x89, &[b'x'; 126]), close_code::PROTOCOL), // oversize ping
        (raw(0x80, b"x"), close_code::PROTOCOL),        // continuation without a start
        (raw(0x82, b"x"), close_code::UNSUPPORTED),     // binary
        (raw(0x81, &[0xff, 0xfe]), close_code::INVALID), // text that is not UTF-8
        (raw(0x88, &[3]), close_code::PROTOCOL),        // close of one byte
        (raw(0x88, &[0x03, 0xED]), close_code::PROTOCOL), // close code 1005
        (raw(0x88, &[0x03, 0xE8, 0xff]), close_code::INVALID), // reason not UTF-8
    ];
    for (i, (wire, code)) in cases.into_iter().enumerate() {
        assert_eq!(fault(Role::Server, wire).code, code, "case {i}");
    }
    // A new message inside a fragmented one.
    let mut wire = raw(0x01, b"a");
    wire.extend(raw(0x81, b"b"));
    assert_eq!(fault(Role::Server, wire).code, close_code::PROTOCOL);
    // Invalid UTF-8 split across fragments is found when the message completes.
    let mut wire = raw(0x01, &[0xE2, 0x82]);
    wire.extend(raw(0x80, &[0x28]));
    assert_eq!(fault(Role::Server, wire).code, close_code::INVALID);
    // Invalid UTF-8 in a fragment fails at once (RFC 6455 §8.1), not at the message's end:
    // it was buffered up to the message limit first. Here the message never ends.
    let mut decoder = WsDecoder::new(Role::Server, 1024);
    let mut first = raw(0x01, b"ok");
    assert!(matches!(decoder.decode(&mut first), Ok(Step::Fragment(_))));
    let mut bad = raw(0x00, &[b'a', 0xFF]);
    assert_eq!(
        decoder.decode(&mut bad).unwrap_err().code,
        close_code::INVALID
    );
    // A character cut at a fragment's end waits for the next (which here cannot end it).
    let mut decoder = WsDecoder::new(Role::Server, 1024);
    let mut first = raw(0x01, &[0xE2, 0x82]);
    assert!(matches!(decoder.decode(&mut first), Ok(Step::Fragment(_))));
    let mut next = raw(0x00, b"x");
    assert_eq!(
        decoder.decode(&mut next).unwrap_err().code,
        close_code::INVALID
    );
    // ...and valid UTF-8 split across fragments is fine.
    let mut wire = raw(0x01, &[0xE2, 0x82]);
    wire.extend(raw(0x80, &[0xAC]));
    assert_eq!(events(Role::Server, 10, wire), Ok(vec!["€".into()]));
    // A 64-bit length with its top bit set.
    let mut wire = vec![0x81, 0xFF];
    wire.extend([0x80, 0, 0, 0, 0, 0, 0, 0]);
    wire.extend(KEY);
    assert_eq!(fault(Role::Server, wire).code, close_code::PROTOCOL);
}

#[test]
fn an_oversize_message_is_refused_from_its_header_alone() {
    let mut decoder = WsDecoder::new(Role::Server, 1000);
    // Only the header of a 1001-byte frame has arrived.
    let mut header = Vec::new();
    encode_header(Opcode::Text, 1001, Some(KEY), &mut header);
    let f = decoder.decode(&mut header).unwrap_err();
    assert_eq!(f.code, close_code::TOO_BIG);
    // Fragments count together.
    let mut decoder = WsDecoder::new(Role::Server, 1000);
    let mut first = raw(0x01, &[b'a'; 600]);
    let len = first.len();
    assert_eq!(decoder.decode(&mut first), Ok(Step::Fragment(len)));
    let mut header = raw(0x80, &[b'a'; 401]);
    header.truncate(8);
    assert_eq!(
        decoder.decode(&mut header).unwrap_err().code,
        close_code::TOO_BIG
    );
    // Exactly the limit passes.
    assert_eq!(
        events(Role::Server, 1000, masked(Opcode::Text, &[b'a'; 1000])),
        Ok(vec![String::from_utf8(vec![b'a'; 1000]).unwrap()])
    );
}

#[test]
fn close_frames_carry_code_and_reason() {
    let mut out = Vec::new();
    encode_close(Some(1001), "going away", Some(KEY), &mut out);
    encode_close(None, "ignored", Some(KEY), &mut out);
    assert_eq!(
        events(Role::Server, 10, out),
        Ok(vec![
            "close Some(1001) going away".into(),
            "close None ".into()
        ])
    );
    // A long reason is cut at a character boundary to fit 125 bytes.
    let mut out = Vec::new();
    encode_close(Some(1000), &"é".repeat(100), None, &mut out);
    assert_eq!(out.len(), 2 + 2 + 122);
    assert_eq!(
        events(Role::Client, 10, out),
        Ok(vec![alloc::format!("close Some(1000) {}", "é".repeat(61))])
    );
}

#[test]
fn frame_in_place_writes_what_encode_frame_writes() {
    for len in [0usize, 1, 125, 126, 127, 65_535, 65_536, 100_000] {
        for mask in [None, Some(KEY)] {
            let payload: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut expected = b"before".to_vec();
            encode_frame(Opcode::Text, &payload, mask, &mut expected);
            let mut out = b"before".to_vec();
            out.extend([0; MAX_HEADER]);
            out.extend(&payload);
            frame_in_place(&mut out, 6, MAX_HEADER, mask);
            assert_eq!(out, expected, "{len} {mask:?}");
        }
    }
}

#[test]
fn masking_twice_restores_the_payload() {
    for len in 0..40 {
        let original: Vec<u8> = (0..len as u8).collect();
        let mut bytes = original.clone();
        apply_mask(&mut bytes, KEY);
        if len > 0 {
            assert_ne!(bytes, original);
        }
        for (i, b) in bytes.iter().enumerate() {
            assert_eq!(*b, original[i] ^ KEY[i % 4]);
        }
        apply_mask(&mut bytes, KEY);
        assert_eq!(bytes, original);
    }
}

proptest! {
    /// Text messages, each cut into fragments with pings between them, read back whole in
    /// any chunking of the stream.
    #[test]
    fn messages_survive_fragmenting_and_chunking(
        messages in proptest::collection::vec("[a-z€ü{}\\[\\]\":,0-9]{0,300}", 1..8),
        cuts in proptest::collection::vec(1usize..50, 1..6),
        chunk in 1usize..200,
    ) {
        let mut wire = Vec::new();
        for (m, text) in messages.iter().enumerate() {
            let bytes = text.as_bytes();
            let step = cuts[m % cuts.len()];
            let pieces: Vec<&[u8]> = if bytes.is_empty() { vec![bytes] } else { bytes.chunks(step).collect() };
            for (i, piece) in pieces.iter().enumerate() {
                let opcode = if i == 0 { 0x01 } else { 0x00 };
                let fin = if i + 1 == pieces.len() { 0x80 } else { 0 };
                wire.extend(raw(opcode | fin, piece));
                if i % 2 == 1 {
                    wire.extend(masked(Opcode::Ping, b"p"));
                }
            }
        }
        // A reader that gets `chunk` bytes at a time, as from a socket.
        let mut decoder = WsDecoder::new(Role::Server, 1 << 16);
        let mut buffer: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut texts = Vec::new();
        loop {
            match decoder.decode(&mut buffer).unwrap() {
                Step::Event(n, event) => {
                    if let WsEvent::Text(t) = event {
                        texts.push(String::from(core::str::from_utf8(t).unwrap()));
                    }
                    buffer.drain(..n);
                }
                Step::Fragment(n) => {
                    buffer.drain(..n);
                }
                Step::Incomplete(n) => {
                    prop_assert!(n > buffer.len());
                    if fed == wire.len() {
                        break;
                    }
                    let take = chunk.min(wire.len() - fed);
                    buffer.extend_from_slice(&wire[fed..fed + take]);
                    fed += take;
                }
            }
        }
        prop_assert!(buffer.is_empty());
        prop_assert_eq!(texts, messages);
    }
}

#[test]
fn binary_messages_are_taken_as_text_only_when_accepted() {
    let mut wire = raw(0x82, br#"{"id":1}"#);
    // A fragmented binary message, with a ping between its fragments.
    wire.extend(raw(0x02, b"[1,"));
    wire.extend(raw(0x89, b"p"));
    wire.extend(raw(0x80, b"2]"));
    let mut decoder = WsDecoder::new(Role::Server, 1024).accept_binary(true);
    let mut seen = Vec::new();
    while !wire.is_empty() {
        let used = match decoder.decode(&mut wire).unwrap() {
            Step::Event(n, WsEvent::Text(t)) => {
                seen.push(String::from(core::str::from_utf8(t).unwrap()));
                n
            }
            Step::Event(n, _) | Step::Fragment(n) => n,
            Step::Incomplete(n) => panic!("incomplete, wants {n}"),
        };
        wire.drain(..used);
    }
    assert_eq!(seen, [r#"{"id":1}"#, "[1,2]"]);
    // Its UTF-8 is checked as a text message's.
    let mut decoder = WsDecoder::new(Role::Server, 1024).accept_binary(true);
    let mut wire = raw(0x82, &[0xff, 0xfe]);
    let fault = decoder.decode(&mut wire).err().unwrap();
    assert_eq!(fault.code, close_code::INVALID);
    // Not accepted (the default): 1003.
    assert_eq!(fault_of(raw(0x82, b"{}")).code, close_code::UNSUPPORTED);
}

fn fault_of(wire: Vec<u8>) -> WsFault {
    fault(Role::Server, wire)
}
