//! WebSocket frame decoder: no panic, bounded buffering, chunking invariance, text
//! messages that are UTF-8 and within the limit.
//!
//! Input layout: byte 0 picks the role (low bit) and the message limit, bytes 1..4 the
//! chunk sizes (cycled), the rest is the stream. The stream is decoded as it arrives in
//! those chunks and again whole; both must give the same events and the same fault.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::codec::websocket::{Role, Step, WsDecoder, WsEvent, MAX_HEADER};

/// A decoded event, owned, to compare two runs.
#[derive(Debug, PartialEq)]
enum Seen {
    Text(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Option<u16>, String),
    Fault(u16),
}

fn decode(role: Role, limit: usize, stream: &[u8], chunks: &[usize]) -> Vec<Seen> {
    let largest_frame = limit.max(125) + MAX_HEADER;
    let largest_chunk = chunks.iter().copied().max().unwrap_or(1);
    let mut decoder = WsDecoder::new(role, limit);
    let mut buffer: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut seen = Vec::new();
    let mut turn = 0;
    loop {
        // What a transport holds: less than one frame, which the limit bounds, and a read.
        assert!(buffer.len() < largest_frame + largest_chunk);
        let used = match decoder.decode(&mut buffer) {
            Err(fault) => {
                seen.push(Seen::Fault(fault.code));
                return seen;
            }
            Ok(Step::Event(used, event)) => {
                seen.push(match event {
                    WsEvent::Text(text) => {
                        assert!(text.len() <= limit);
                        assert!(std::str::from_utf8(text).is_ok());
                        Seen::Text(text.to_vec())
                    }
                    WsEvent::Ping(p) => Seen::Ping(p.to_vec()),
                    WsEvent::Pong(p) => Seen::Pong(p.to_vec()),
                    WsEvent::Close { code, reason } => Seen::Close(code, reason.to_owned()),
                });
                used
            }
            Ok(Step::Fragment(used)) => used,
            Ok(Step::Incomplete(need)) => {
                assert!(need > buffer.len());
                if fed == stream.len() {
                    return seen;
                }
                // Read a chunk, as a transport does when the frame is incomplete.
                let take = chunks[turn % chunks.len()].min(stream.len() - fed);
                turn += 1;
                buffer.extend_from_slice(&stream[fed..fed + take]);
                fed += take;
                continue;
            }
        };
        assert!(used > 0 && used <= buffer.len());
        buffer.drain(..used);
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, c1, c2, c3, stream @ ..] = data else {
        return;
    };
    let role = if pick & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };
    let limit = [0usize, 1, 125, 126, 1000, 70_000][usize::from(pick >> 1) % 6];
    let chunks = [
        usize::from(*c1).max(1),
        usize::from(*c2).max(1),
        usize::from(*c3).max(1),
    ];
    let chunked = decode(role, limit, stream, &chunks);
    let whole = decode(role, limit, stream, &[stream.len().max(1)]);
    assert_eq!(chunked, whole);
});
