//! The harness both decoder fuzz targets share: no panic, a bounded buffer, `feed` always
//! making progress once drained, every frame within the limit, and chunking invariance.

use sansrpc::codec::{Decoder, FrameError, Framing};
use sansrpc::Limits;

type Event = Result<Vec<u8>, FrameError>;

fn decode(
    framing: Framing,
    check_frame: fn(&[u8]),
    limits: &Limits,
    input: &[u8],
    sizes: &[usize],
    direct: bool,
) -> (Vec<Event>, Option<FrameError>) {
    let mut decoder = Decoder::new(framing, limits);
    let bound = decoder.max_buffered();
    assert!(bound <= limits.max_frame_bytes + limits.max_header_bytes + 16);
    let mut events = Vec::new();
    let mut rest = input;
    let mut i = 0;
    let mut stalled = false;
    while !rest.is_empty() {
        let size = sizes[i % sizes.len()].min(rest.len());
        i += 1;
        let mut chunk = &rest[..size];
        rest = &rest[size..];
        while !chunk.is_empty() {
            // Whole frames at the front taken without a copy, as the endpoint does.
            while let Some((used, body)) = direct.then(|| decoder.frame_in(chunk)).flatten() {
                assert!(used > 0 && used <= chunk.len());
                assert!(body.len() <= limits.max_frame_bytes);
                check_frame(body);
                events.push(Ok(body.to_vec()));
                chunk = &chunk[used..];
            }
            if chunk.is_empty() {
                break;
            }
            let n = decoder.feed(chunk);
            chunk = &chunk[n..];
            assert!(decoder.buffered() <= bound);
            if n == 0 {
                // The previous round drained everything, so feed must make progress now.
                assert!(!stalled, "feed took nothing after next_frame was drained");
            }
            stalled = n == 0;
            while let Some(event) = decoder.next_frame() {
                if let Ok(body) = &event {
                    assert!(body.len() <= limits.max_frame_bytes);
                    check_frame(body);
                }
                events.push(event.map(<[u8]>::to_vec));
                assert!(decoder.buffered() <= bound);
            }
        }
    }
    let finish = decoder.finish();
    assert_eq!(decoder.buffered(), 0);
    (events, finish)
}

/// Runs one input: byte 0 picks the limits, bytes 1..5 the chunk sizes (cycled), the rest is
/// the stream, decoded whole and in chunks, feeding every byte or taking whole frames
/// without a copy first; all must give the same events.
pub fn run(framing: Framing, check_frame: fn(&[u8]), data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let mut limits = Limits::default();
    limits.max_frame_bytes = [16, 100, 1024, 4096][usize::from(data[0] & 3)];
    limits.max_header_bytes = [32, 64, 256, 1024][usize::from(data[0] >> 2 & 3)];
    let sizes: Vec<usize> = data[1..5].iter().map(|&b| 1 + usize::from(b)).collect();
    let input = &data[5..];
    let whole = decode(framing, check_frame, &limits, input, &[usize::MAX], false);
    let chunked = decode(framing, check_frame, &limits, input, &sizes, false);
    assert_eq!(whole, chunked);
    let direct = decode(framing, check_frame, &limits, input, &sizes, true);
    assert_eq!(whole, direct);
    let whole_direct = decode(framing, check_frame, &limits, input, &[usize::MAX], true);
    assert_eq!(whole, whole_direct);
}
