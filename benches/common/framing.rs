//! W5's stream and its two decoders, shared by the criterion bench (`framing`) and the
//! interleaved runner (`interleaved`). The bench that includes it includes
//! `common/floor.rs` beside it, as `floor`.
#![allow(dead_code)]

use std::hint::black_box;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::{Classified, Classifier, Incoming};

use super::floor::Envelope;

pub fn stream(n: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..n {
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/hover","params":{{"textDocument":{{"uri":"file:///src/lib.rs"}},"position":{{"line":{i},"character":7}}}},"id":{i}}}"#
        );
        encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    wire
}

/// The floor's framing: find the blank line, read `Content-Length` (assumed first and
/// well-formed), slice the body. No limits, no recovery, no case-insensitivity.
#[inline(never)]
pub fn floor(wire: &[u8]) -> usize {
    let mut rest = wire;
    let mut count = 0;
    while !rest.is_empty() {
        let end = rest.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let header = std::str::from_utf8(&rest[..end]).unwrap();
        let len: usize = header["Content-Length: ".len()..].parse().unwrap();
        let body = &rest[end + 4..end + 4 + len];
        let env: Envelope<'_> = serde_json::from_slice(body).unwrap();
        black_box((env.method, env.params, env.id));
        count += 1;
        rest = &rest[end + 4 + len..];
    }
    count
}

#[inline(never)]
pub fn ours(wire: &[u8], dec: &mut Decoder, classifier: &mut Classifier) -> usize {
    let mut rest = wire;
    let mut count = 0;
    while !rest.is_empty() {
        // Whole frames straight from the input, as the endpoint takes them; the rest fed.
        while let Some((used, frame)) = dec.frame_in(rest) {
            match classifier.classify(frame) {
                Classified::Single(Incoming::Request(req)) => {
                    black_box((&req.method, &req.params, &req.id));
                }
                other => panic!("{other:?}"),
            }
            count += 1;
            rest = &rest[used..];
        }
        let used = dec.feed(rest);
        rest = &rest[used..];
        while let Some(frame) = dec.next_frame() {
            match classifier.classify(frame.unwrap()) {
                Classified::Single(Incoming::Request(req)) => {
                    black_box((&req.method, &req.params, &req.id));
                }
                other => panic!("{other:?}"),
            }
            count += 1;
        }
    }
    count
}
