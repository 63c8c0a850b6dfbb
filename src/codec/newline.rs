//! Newline-delimited framing (MCP stdio, JSON Lines).

use super::buffer::InputBuffer;
use super::{is_space, FrameError};
use crate::Limits;

/// An incremental decoder for newline-delimited framing: one message per line.
///
/// A line ends at `\n`; a `\r` just before it is stripped. Lines holding only whitespace
/// are skipped silently. A line longer than `max_frame_bytes` is reported once as
/// [`FrameError::TooLarge`] (as soon as the limit is passed, without waiting for its end)
/// and the rest of it is consumed without being stored, so memory stays bounded even if
/// the newline never comes.
///
/// The calling contract is the one of [`Decoder`](super::Decoder), which wraps this type.
#[derive(Debug)]
pub struct NewlineDecoder {
    buf: InputBuffer,
    /// Dropping the rest of an oversize line.
    discarding: bool,
    /// Live bytes already searched for `\n`, so that none is searched twice.
    scanned: usize,
    max_frame: usize,
}

impl NewlineDecoder {
    /// Creates a decoder with the frame bound of `limits`.
    ///
    /// Allocates nothing until the first [`NewlineDecoder::feed`].
    pub fn new(limits: &Limits) -> Self {
        // Room for the longest line plus its `\r\n`, so a full buffer always holds either
        // a line end or a line that is already too long.
        let bound = limits.max_frame_bytes.saturating_add(2);
        NewlineDecoder {
            buf: InputBuffer::new(bound),
            discarding: false,
            scanned: 0,
            max_frame: limits.max_frame_bytes,
        }
    }

    /// Buffers as much of `input` as the bound allows and returns how many bytes it
    /// consumed; see [`Decoder::feed`](super::Decoder::feed).
    ///
    /// While the rest of an oversize line is being dropped and nothing else is buffered,
    /// its bytes are consumed without being stored.
    #[must_use = "bytes not consumed must be fed again after draining next_frame"]
    pub fn feed(&mut self, input: &[u8]) -> usize {
        let mut taken = 0;
        if self.discarding && self.buf.len() == 0 {
            match find_newline(input) {
                Some(at) => {
                    taken = at + 1;
                    self.discarding = false;
                }
                None => return input.len(),
            }
        }
        taken + self.buf.append(&input[taken..])
    }

    /// A whole line taken straight from `input`, without buffering it: when nothing is
    /// buffered and `input` starts with a non-blank line within the limit, how many bytes
    /// of `input` it spans (with its line end) and the line. `None` otherwise: feed the
    /// bytes instead.
    pub fn frame_in<'a>(&mut self, input: &'a [u8]) -> Option<(usize, &'a [u8])> {
        if self.buf.len() != 0 || self.discarding {
            return None;
        }
        let newline = find_newline(input)?;
        let len = match input[..newline] {
            [.., b'\r'] => newline - 1,
            _ => newline,
        };
        let line = &input[..len];
        if len > self.max_frame || line.iter().all(|&b| is_space(b)) {
            return None;
        }
        Some((newline + 1, line))
    }

    /// Returns the next line or error event; see
    /// [`Decoder::next_frame`](super::Decoder::next_frame).
    pub fn next_frame(&mut self) -> Option<Result<&[u8], FrameError>> {
        loop {
            let bytes = self.buf.bytes();
            if self.discarding {
                match find_newline(bytes) {
                    Some(at) => {
                        self.buf.consume(at + 1);
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        self.buf.consume_all();
                        return None;
                    }
                }
            }
            let Some(offset) = find_newline(&bytes[self.scanned..]) else {
                self.scanned = bytes.len();
                if bytes.len() > self.max_frame.saturating_add(1) {
                    self.buf.consume_all();
                    self.scanned = 0;
                    self.discarding = true;
                    return Some(Err(self.too_large()));
                }
                return None;
            };
            let newline = self.scanned + offset;
            self.scanned = 0;
            let len = match bytes[..newline] {
                [.., b'\r'] => newline - 1,
                _ => newline,
            };
            let blank = bytes[..len].iter().all(|&b| is_space(b));
            let from = self.buf.start();
            self.buf.consume(newline + 1);
            if len > self.max_frame {
                return Some(Err(self.too_large()));
            }
            if !blank {
                return Some(Ok(self.buf.slice(from, from + len)));
            }
        }
    }

    /// The bytes buffered and not handed out yet.
    pub(super) fn buffered_bytes(&self) -> &[u8] {
        self.buf.bytes()
    }

    /// Signals the end of input; see [`Decoder::finish`](super::Decoder::finish).
    ///
    /// A last line without its `\n` is reported as [`FrameError::Truncated`].
    pub fn finish(&mut self) -> Option<FrameError> {
        let rest = self.buf.bytes();
        let error = if self.discarding || rest.iter().all(|&b| is_space(b)) {
            None
        } else {
            Some(FrameError::Truncated {
                received: rest.len(),
            })
        };
        self.buf.clear();
        self.discarding = false;
        self.scanned = 0;
        error
    }

    /// Returns how many input bytes are buffered and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// True while a line is partly received; see
    /// [`Decoder::in_frame`](super::Decoder::in_frame).
    pub(crate) fn in_frame(&self) -> bool {
        self.discarding || self.buf.len() > 0
    }

    /// Returns the most bytes the decoder ever buffers: `max_frame_bytes + 2`.
    pub fn max_buffered(&self) -> usize {
        self.buf.bound()
    }

    fn too_large(&self) -> FrameError {
        FrameError::TooLarge {
            declared: None,
            limit: self.max_frame,
        }
    }
}

fn find_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}
