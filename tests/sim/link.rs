//! A simulated link between two connections: frames sit in flight until delivered, may be
//! delivered in another order (whole frames, never bytes), in pieces of any size, and the
//! whole connection may be cut.

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::connection::Connection;
use sansrpc::{Instant, Limits};
use std::collections::VecDeque;

/// How the connections are wired: a byte stream with a framing, or whole messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stream(Framing),
    Messages,
}

/// A tiny deterministic generator, so a shuffle is a function of its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn below(&mut self, n: usize) -> usize {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// One direction of the link.
pub struct Wire {
    transport: Transport,
    /// Decodes what the sender transmits back into frames, as a router that reorders would.
    decoder: Option<Decoder>,
    /// Whole frame bodies transmitted and not yet put on the stream: these can be reordered.
    pub queue: VecDeque<Vec<u8>>,
    /// Bytes committed to arrive in this order (a frame partly delivered stays at the head).
    /// For a message transport, whole messages instead.
    pub stream: Vec<u8>,
    pub messages: VecDeque<Vec<u8>>,
}

impl Wire {
    fn new(transport: Transport) -> Self {
        let decoder = match transport {
            Transport::Stream(f) => Some(Decoder::new(f, &Limits::default())),
            Transport::Messages => None,
        };
        Wire {
            transport,
            decoder,
            queue: VecDeque::new(),
            stream: Vec::new(),
            messages: VecDeque::new(),
        }
    }

    /// Takes what the sender transmitted (one `poll_transmit` worth) and returns the frame
    /// bodies found in it.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut bodies = Vec::new();
        match &mut self.decoder {
            None => bodies.push(bytes.to_vec()),
            Some(decoder) => {
                let mut input = bytes;
                while !input.is_empty() {
                    let used = decoder.feed(input);
                    input = &input[used..];
                    while let Some(frame) = decoder.next_frame() {
                        match frame {
                            Ok(body) => bodies.push(body.to_vec()),
                            Err(e) => panic!("a connection transmitted a bad frame: {e}"),
                        }
                    }
                }
            }
        }
        self.queue.extend(bodies.iter().cloned());
        bodies
    }

    /// Puts raw bytes on the stream after everything already sequenced (garbage, half
    /// frames): they arrive as they are. For a message transport, one message.
    pub fn inject(&mut self, bytes: &[u8]) {
        match self.transport {
            Transport::Stream(_) => self.stream.extend_from_slice(bytes),
            Transport::Messages => self.messages.push_back(bytes.to_vec()),
        }
    }

    /// Puts one frame with this body on the stream after everything already sequenced.
    pub fn inject_frame(&mut self, body: &[u8]) {
        match self.transport {
            Transport::Stream(f) => encode_frame(f, body, &mut self.stream),
            Transport::Messages => self.messages.push_back(body.to_vec()),
        }
    }

    /// Moves up to `count` frames from the queue onto the stream: from the front when
    /// `seed` is 0, else picked in a seeded random order.
    pub fn sequence(&mut self, count: usize, seed: u64) {
        let mut rng = Rng::new(seed);
        for _ in 0..count.min(self.queue.len()) {
            let i = if seed == 0 {
                0
            } else {
                rng.below(self.queue.len())
            };
            let body = self.queue.remove(i).unwrap();
            match self.transport {
                Transport::Stream(f) => encode_frame(f, &body, &mut self.stream),
                Transport::Messages => self.messages.push_back(body),
            }
        }
    }

    /// True when nothing is in flight in this direction.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.stream.is_empty() && self.messages.is_empty()
    }

    /// Hands at most `limit` bytes (or messages) of the stream to `ep` in pieces of at most
    /// `chunk` bytes, calling `drain` after each input call. Stops early when the connection
    /// takes nothing even after draining (its output is backed up). Returns whether anything
    /// was taken.
    pub fn deliver(
        &mut self,
        ep: &mut Connection,
        limit: usize,
        chunk: usize,
        now: Instant,
        drain: &mut dyn FnMut(&mut Connection),
    ) -> bool {
        let chunk = chunk.max(1);
        if self.transport == Transport::Messages {
            let mut moved = false;
            for _ in 0..limit.min(self.messages.len()) {
                let message = self.messages.front().unwrap();
                if ep.handle_message(message, now).is_err() {
                    drain(ep);
                    if ep.handle_message(message, now).is_err() {
                        break;
                    }
                }
                drain(ep);
                self.messages.pop_front();
                moved = true;
            }
            return moved;
        }
        let end = limit.min(self.stream.len());
        let mut offset = 0;
        while offset < end {
            let piece = &self.stream[offset..(offset + chunk).min(end)];
            let used = ep.handle_input(piece, now).unwrap();
            offset += used;
            drain(ep);
            if used == 0 {
                // Events were drained; one more try tells whether the output is what is full.
                let used = ep.handle_input(piece, now).unwrap();
                offset += used;
                drain(ep);
                if used == 0 {
                    break;
                }
            }
        }
        self.stream.drain(..offset);
        offset > 0
    }
}

/// Both directions: `wires[0]` carries side 0's output to side 1, `wires[1]` the reverse.
pub struct Link {
    pub wires: [Wire; 2],
    pub cut: bool,
}

impl Link {
    pub fn new(transport: Transport) -> Self {
        Link {
            wires: [Wire::new(transport), Wire::new(transport)],
            cut: false,
        }
    }

    /// Drops the connection: everything in flight is lost.
    pub fn cut(&mut self) {
        for w in &mut self.wires {
            w.queue.clear();
            w.stream.clear();
            w.messages.clear();
        }
        self.cut = true;
    }
}
