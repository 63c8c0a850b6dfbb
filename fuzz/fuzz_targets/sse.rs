//! The Server-Sent Events decoder (an MCP client reads every Streamable HTTP answer with
//! it): no panic on any bytes, events within the limits, the same events however the stream
//! is cut into pieces, and what it decodes survives the encoder and the decoder again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::sse::{encode_event, SseDecoder, SseError, SseEvent, SseLimits};

type Seen = Vec<Result<SseEvent, SseError>>;

fn decode(limits: SseLimits, input: &[u8], sizes: &[usize]) -> (Seen, String) {
    let mut decoder = SseDecoder::new(limits);
    let mut seen = Vec::new();
    let mut rest = input;
    let mut i = 0;
    while !rest.is_empty() {
        let size = sizes[i % sizes.len()].min(rest.len());
        i += 1;
        decoder.feed(&rest[..size], |e| seen.push(e));
        rest = &rest[size..];
    }
    decoder.finish();
    (seen, decoder.last_event_id().to_owned())
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let mut limits = SseLimits::default();
    limits.max_line = [8, 64, 1024, 65536][usize::from(data[0] & 3)];
    limits.max_event = [16, 256, 4096, 1 << 20][usize::from(data[0] >> 2 & 3)];
    let sizes: Vec<usize> = data[1..5].iter().map(|&b| 1 + usize::from(b)).collect();
    let input = &data[5..];
    let whole = decode(limits, input, &[usize::MAX]);
    let pieces = decode(limits, input, &sizes);
    assert_eq!(whole, pieces, "the events depend on where the stream was cut");
    for event in whole.0.iter().flatten() {
        assert!(event.data.len() <= limits.max_event, "an event over the limit");
        // Encoded again and decoded again (with room for it): the same event.
        let mut wire = Vec::new();
        let event_name = Some(event.event.as_str()).filter(|e| !e.is_empty());
        encode_event(&mut wire, None, event_name, &event.data, None);
        let roomy = SseLimits::default();
        let (again, _) = decode(roomy, &wire, &[usize::MAX]);
        match again.as_slice() {
            [Ok(e)] => {
                assert_eq!(e.data, event.data);
                assert_eq!(e.event, event.event);
            }
            other => panic!("{event:?} encoded and decoded again gave {other:?}"),
        }
    }
});
