//! Framing codecs: turning a byte stream into frames and frames into bytes.
//!
//! Two byte-stream framings are supported, chosen with [`Framing`]:
//!
//! - [`Framing::ContentLength`], as the Language Server Protocol uses it: a header block
//!   (`Content-Length: N`, optionally `Content-Type`) ended by an empty line, then `N`
//!   bytes of body.
//! - [`Framing::Newline`], as MCP's stdio transport uses it: one JSON text per line.
//!
//! [`Decoder`] turns bytes into frames incrementally and never performs I/O: the caller
//! hands it whatever bytes arrived and then drains the frames.
//!
//! ```
//! use sansrpc::codec::{encode_frame, Decoder, Framing};
//! use sansrpc::Limits;
//!
//! let mut wire = Vec::new();
//! encode_frame(Framing::ContentLength, br#"{"jsonrpc":"2.0","method":"a"}"#, &mut wire);
//! encode_frame(Framing::ContentLength, br#"{"jsonrpc":"2.0","method":"b"}"#, &mut wire);
//!
//! let mut decoder = Decoder::new(Framing::ContentLength, &Limits::default());
//! let mut frames = Vec::new();
//! let mut input = &wire[..];
//! // The run loop: feed, drain, feed the rest.
//! while !input.is_empty() {
//!     let n = decoder.feed(input);
//!     input = &input[n..];
//!     while let Some(event) = decoder.next_frame() {
//!         match event {
//!             Ok(body) => frames.push(body.to_vec()),
//!             Err(error) => panic!("unexpected {error}"),
//!         }
//!     }
//! }
//! assert_eq!(decoder.finish(), None);
//! assert_eq!(frames.len(), 2);
//! ```
//!
//! Transports that deliver one message per frame (WebSocket text frames, HTTP bodies)
//! need no decoder; they check the size with [`check_message`]. A transport that reads a
//! WebSocket's raw stream after the handshake frames it with [`websocket`]; an HTTP/1.1
//! server's stream is cut into request heads and bodies with [`http`].

mod buffer;
mod content_length;
pub mod http;
mod newline;
mod read_size;
pub mod sse;
pub mod websocket;

use alloc::vec::Vec;
use core::fmt;

use crate::Limits;

pub use content_length::ContentLengthDecoder;
pub use newline::NewlineDecoder;
pub use read_size::ReadSize;

/// A way of cutting a byte stream into messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// `Content-Length: N` header block, an empty line, then `N` bytes of body (LSP).
    ContentLength,
    /// One message per line, ended by `\n` (MCP stdio, JSON Lines).
    Newline,
    /// Decided by the peer's first bytes: a leading `{` or `[` (after any whitespace) is
    /// newline framing, anything else (a `Content-Length` header) is Content-Length. For a
    /// server that does not know which kind of client will connect. Until the first
    /// non-whitespace byte arrives, output is written with Content-Length.
    Auto,
}

/// A framing fault in the input: the peer's fault, never the caller's.
///
/// Every variant is reported once, as an event from [`Decoder::next_frame`] or
/// [`Decoder::finish`]; the decoder has already recovered when the caller sees it, and
/// decoding simply continues with the next call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame is larger than [`Limits::max_frame_bytes`].
    ///
    /// For Content-Length, `declared` is the header's value and the body is skipped
    /// without being stored; for newline framing, `declared` is `None` and the rest of
    /// the line is skipped. Either way the next frame decodes normally.
    TooLarge {
        /// The length the header declared, if the framing declares one.
        declared: Option<u64>,
        /// The limit in force.
        limit: usize,
    },
    /// A Content-Length header block did not end within [`Limits::max_header_bytes`].
    ///
    /// The decoder skips to the next `Content-Length` header.
    HeaderTooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// A Content-Length header block had no `Content-Length` header.
    ///
    /// The body's extent is unknown, so the decoder skips to the next `Content-Length`
    /// header without reporting the skipped bytes again.
    MissingLength,
    /// A `Content-Length` value was not a plain decimal number that fits in 64 bits, or two
    /// `Content-Length` headers disagreed.
    ///
    /// Recovery is as for [`FrameError::MissingLength`].
    InvalidLength,
    /// A `Content-Type` header named a charset other than `utf-8` / `utf8`.
    ///
    /// The length was valid, so the body is skipped exactly and the next frame decodes
    /// normally.
    UnsupportedCharset,
    /// Bytes that are not a header were found where a Content-Length header block should
    /// start (stray output, or the tail of a body whose declared length was too short).
    ///
    /// Reported once per run of such bytes, when the next `Content-Length` header is
    /// found (or by [`Decoder::finish`] if none comes); `skipped` counts the bytes
    /// dropped. Whitespace between frames is not garbage.
    Garbage {
        /// How many bytes were dropped.
        skipped: usize,
    },
    /// The input ended inside a frame; reported by [`Decoder::finish`].
    Truncated {
        /// How many bytes of the incomplete frame had arrived (header included).
        received: usize,
    },
    /// The stream's first bytes are in the other framing: a JSON text where a
    /// `Content-Length` header was expected, or a `Content-Length` header where newline
    /// framing was expected. Reported once, before whatever error the frames then give;
    /// its message names the framing to configure (or [`Framing::Auto`]).
    WrongFraming {
        /// The framing the decoder was configured with.
        expected: Framing,
        /// The framing the input looks like.
        found: Framing,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge {
                declared: Some(n),
                limit,
            } => write!(f, "frame of {n} bytes exceeds the limit of {limit} bytes"),
            FrameError::TooLarge {
                declared: None,
                limit,
            } => write!(f, "frame exceeds the limit of {limit} bytes"),
            FrameError::HeaderTooLarge { limit } => {
                write!(f, "header block exceeds the limit of {limit} bytes")
            }
            FrameError::MissingLength => f.write_str("header block has no Content-Length"),
            FrameError::InvalidLength => f.write_str("invalid Content-Length value"),
            FrameError::UnsupportedCharset => f.write_str("Content-Type charset is not utf-8"),
            FrameError::Garbage { skipped } => {
                write!(f, "skipped {skipped} bytes that were not a frame header")
            }
            FrameError::Truncated { received } => {
                write!(f, "input ended inside a frame after {received} bytes")
            }
            FrameError::WrongFraming { expected, found } => write!(
                f,
                "the peer's first bytes look like {} framing, but this side expects {}: \
                 configure {found:?} framing (or Framing::Auto) on this side",
                found.describe(),
                expected.describe()
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for FrameError {}

/// An incremental decoder for either byte-stream framing.
///
/// The calling contract: pass arriving bytes to [`Decoder::feed`], which takes as many as
/// its bounded buffer allows; drain [`Decoder::next_frame`] until it returns `None`; if
/// `feed` took fewer bytes than offered, feed the rest and drain again. At end of input,
/// call [`Decoder::finish`]. Errors are events: after one, keep draining.
///
/// Memory is bounded: the buffer never holds more than
/// [`Decoder::max_buffered`] bytes (about `max_frame_bytes + max_header_bytes`), whatever
/// the input, and once its buffer is warm the decoder allocates nothing.
#[derive(Debug)]
pub struct Decoder {
    inner: Inner,
    /// What the first non-whitespace byte of the stream told: nothing yet, or a pending
    /// [`FrameError::WrongFraming`] to report once.
    first: First,
    /// Created with [`Framing::Auto`]: the limits to decide again with after `finish`.
    auto: Option<Limits>,
}

#[derive(Debug)]
enum Inner {
    ContentLength(ContentLengthDecoder),
    Newline(NewlineDecoder),
    /// [`Framing::Auto`] before the first non-whitespace byte: the limits to build with.
    Undecided(Limits),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// No non-whitespace byte yet.
    Waiting,
    /// A mistake to report at the next [`Decoder::next_frame`].
    Mistake(Framing, Framing),
    /// Checked (and reported, if it was a mistake).
    Done,
}

impl Framing {
    fn describe(self) -> &'static str {
        match self {
            Framing::ContentLength => "Content-Length (LSP)",
            Framing::Newline => "newline (MCP stdio, JSON Lines)",
            Framing::Auto => "automatically detected",
        }
    }

    /// The framing a stream whose first non-whitespace byte is `b` uses.
    fn of_first_byte(b: u8) -> Framing {
        match b {
            b'{' | b'[' => Framing::Newline,
            _ => Framing::ContentLength,
        }
    }
}

impl Decoder {
    /// Creates a decoder for `framing` with the frame and header bounds of `limits`.
    ///
    /// Allocates nothing until the first [`Decoder::feed`].
    pub fn new(framing: Framing, limits: &Limits) -> Self {
        let inner = match framing {
            Framing::ContentLength => Inner::ContentLength(ContentLengthDecoder::new(limits)),
            Framing::Newline => Inner::Newline(NewlineDecoder::new(limits)),
            Framing::Auto => Inner::Undecided(*limits),
        };
        Decoder {
            inner,
            first: First::Waiting,
            auto: (framing == Framing::Auto).then_some(*limits),
        }
    }

    /// Looks at the stream's first non-whitespace byte (in `input`, if it is there): decides
    /// [`Framing::Auto`], or notes a framing mistake. Returns how many leading bytes an
    /// undecided decoder consumed (whitespace only).
    fn look_at_first(&mut self, input: &[u8]) -> usize {
        if let Inner::Newline(_) = self.inner {
            // Checked on the first buffered line instead (see `newline_mistake`).
            return 0;
        }
        let Some(at) = input.iter().position(|&b| !is_space(b)) else {
            return match self.inner {
                Inner::Undecided(_) => input.len(),
                _ => 0,
            };
        };
        let found = Framing::of_first_byte(input[at]);
        self.first = First::Done;
        match &self.inner {
            Inner::Undecided(limits) => {
                self.inner = match found {
                    Framing::Newline => Inner::Newline(NewlineDecoder::new(limits)),
                    _ => Inner::ContentLength(ContentLengthDecoder::new(limits)),
                };
                at
            }
            Inner::ContentLength(_) if found == Framing::Newline => {
                self.first = First::Mistake(Framing::ContentLength, found);
                0
            }
            _ => 0,
        }
    }

    /// Buffers as much of `input` as the bound allows and returns how many bytes it consumed.
    ///
    /// Bytes belonging to a frame being discarded (oversize) are consumed without being
    /// stored once the decoder has seen its header. When it returns less than
    /// `input.len()`, the caller drains [`Decoder::next_frame`] and feeds the rest; that
    /// always makes room. Never parses, never fails.
    #[must_use = "bytes not consumed must be fed again after draining next_frame"]
    pub fn feed(&mut self, input: &[u8]) -> usize {
        let skipped = match self.first {
            First::Waiting => self.look_at_first(input),
            _ => 0,
        };
        let input = &input[skipped..];
        skipped
            + match &mut self.inner {
                Inner::ContentLength(d) => d.feed(input),
                Inner::Newline(d) => d.feed(input),
                Inner::Undecided(_) => 0,
            }
    }

    /// A whole frame taken straight from `input` without copying it: when nothing is
    /// buffered and `input` starts with a complete, well-formed frame within the limits,
    /// how many bytes of `input` it spans and its body, borrowed from `input`. `None`
    /// otherwise (a partial frame, an error to report, the first bytes not yet checked):
    /// [`feed`](Decoder::feed) the bytes and drain [`next_frame`](Decoder::next_frame)
    /// instead. Taking frames this way and feeding the rest gives the same frames as
    /// feeding everything; it only skips the copy into the decoder's buffer.
    pub fn frame_in<'a>(&mut self, input: &'a [u8]) -> Option<(usize, &'a [u8])> {
        if !matches!(self.first, First::Done) {
            return None;
        }
        match &mut self.inner {
            Inner::ContentLength(d) => d.frame_in(input),
            Inner::Newline(d) => d.frame_in(input),
            Inner::Undecided(_) => None,
        }
    }

    /// Returns the next complete frame body, borrowed from the internal buffer, or an
    /// error event; `None` when more input is needed.
    ///
    /// After an error the decoder has already recovered: call again. The body is valid
    /// until the next call on the decoder.
    pub fn next_frame(&mut self) -> Option<Result<&[u8], FrameError>> {
        // Nothing buffered and no frame begun: the usual answer once frames come whole.
        if self.is_idle() {
            return None;
        }
        if let (First::Waiting, Inner::Newline(d)) = (self.first, &self.inner) {
            self.first = newline_mistake(d.buffered_bytes());
        }
        if let First::Mistake(expected, found) = self.first {
            self.first = First::Done;
            return Some(Err(FrameError::WrongFraming { expected, found }));
        }
        match &mut self.inner {
            Inner::ContentLength(d) => d.next_frame(),
            Inner::Newline(d) => d.next_frame(),
            Inner::Undecided(_) => None,
        }
    }

    /// Signals the end of input: reports a truncated partial frame (or unreported
    /// garbage), if any, and resets the decoder for a new stream.
    ///
    /// Call it after [`Decoder::next_frame`] returned `None`; whatever is still buffered
    /// then is an incomplete frame. Leftover whitespace is not an error.
    pub fn finish(&mut self) -> Option<FrameError> {
        // A new stream follows: its first bytes are checked (or, for Auto, decide) again.
        self.first = First::Waiting;
        let result = match &mut self.inner {
            Inner::ContentLength(d) => d.finish(),
            Inner::Newline(d) => d.finish(),
            Inner::Undecided(_) => None,
        };
        if let Some(limits) = self.auto {
            self.inner = Inner::Undecided(limits);
        }
        result
    }

    /// Returns how many input bytes are buffered and not yet handed out.
    pub fn buffered(&self) -> usize {
        match &self.inner {
            Inner::ContentLength(d) => d.buffered(),
            Inner::Newline(d) => d.buffered(),
            Inner::Undecided(_) => 0,
        }
    }

    /// True when nothing is buffered and no frame is begun (nor a framing mistake waiting to
    /// be reported): [`Decoder::next_frame`] would return `None` at once.
    #[inline]
    pub fn is_idle(&self) -> bool {
        matches!(self.first, First::Done) && !self.in_frame()
    }

    /// Returns true while a frame has started arriving and is not complete yet (its header
    /// or part of its body is buffered, or a refused frame's body or garbage is still being
    /// skipped). Meaningful once [`Decoder::next_frame`] has returned `None`; the endpoint
    /// times such a frame out ([`Config::frame_timeout`](crate::wire::Config)).
    #[inline]
    pub(crate) fn in_frame(&self) -> bool {
        match &self.inner {
            Inner::ContentLength(d) => d.in_frame(),
            Inner::Newline(d) => d.in_frame(),
            Inner::Undecided(_) => false,
        }
    }

    /// Returns the most bytes the decoder ever buffers: [`Decoder::buffered`] never
    /// exceeds it.
    pub fn max_buffered(&self) -> usize {
        match &self.inner {
            Inner::ContentLength(d) => d.max_buffered(),
            Inner::Newline(d) => d.max_buffered(),
            Inner::Undecided(limits) => limits.max_frame_bytes + limits.max_header_bytes,
        }
    }

    /// Returns the framing in use: the one this decoder was created for, or for
    /// [`Framing::Auto`] the one the first bytes chose ([`Framing::Auto`] until then).
    pub fn framing(&self) -> Framing {
        match self.inner {
            Inner::ContentLength(_) => Framing::ContentLength,
            Inner::Newline(_) => Framing::Newline,
            Inner::Undecided(_) => Framing::Auto,
        }
    }
}

/// Writes one framed message, appending it to `out`.
///
/// - [`Framing::ContentLength`] (and [`Framing::Auto`], until a decoder has decided):
///   `Content-Length: N\r\n\r\n` followed by `body`.
/// - [`Framing::Newline`]: `body` followed by `\n`. A valid JSON text contains raw `\n`
///   and `\r` bytes only as insignificant whitespace (inside strings they must be
///   escaped), so every such byte in `body` is written as a space: the frame stays one
///   line and a valid JSON body keeps its meaning.
///
/// Allocates only if `out` lacks the capacity.
pub fn encode_frame(framing: Framing, body: &[u8], out: &mut Vec<u8>) {
    match framing {
        Framing::ContentLength | Framing::Auto => {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(body);
        }
        Framing::Newline => {
            out.reserve(body.len() + 1);
            out.extend(body.iter().map(|&b| match b {
                b'\n' | b'\r' => b' ',
                b => b,
            }));
            out.push(b'\n');
        }
    }
}

/// Checks the size of a message that arrived in a transport's own frame (a WebSocket text
/// frame, an HTTP body), where no byte-stream decoder is involved.
///
/// Returns [`FrameError::TooLarge`] when `body` is longer than [`Limits::max_frame_bytes`].
pub fn check_message(body: &[u8], limits: &Limits) -> Result<(), FrameError> {
    if body.len() > limits.max_frame_bytes {
        return Err(FrameError::TooLarge {
            declared: Some(body.len() as u64),
            limit: limits.max_frame_bytes,
        });
    }
    Ok(())
}

/// Whether the first line of a newline-framed stream, buffered in `bytes`, is a
/// `Content-Length` header; [`First::Waiting`] until enough of it has arrived to tell.
fn newline_mistake(bytes: &[u8]) -> First {
    const HEADER: &[u8] = b"content-length";
    let start = bytes
        .iter()
        .position(|&b| !is_space(b))
        .unwrap_or(bytes.len());
    let line = &bytes[start..];
    let n = line.len().min(HEADER.len());
    if !line[..n].eq_ignore_ascii_case(&HEADER[..n]) {
        First::Done
    } else if n == HEADER.len() {
        First::Mistake(Framing::Newline, Framing::ContentLength)
    } else {
        First::Waiting
    }
}

/// Whitespace that may separate frames without being an error.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_encoding_replaces_line_breaks() {
        let mut out = Vec::new();
        encode_frame(Framing::Newline, b"{\r\n\"a\":1\n}", &mut out);
        assert_eq!(out, b"{  \"a\":1 }\n");
    }

    #[test]
    fn check_message_bounds() {
        let limits = Limits {
            max_frame_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(check_message(b"1234", &limits), Ok(()));
        assert_eq!(
            check_message(b"12345", &limits),
            Err(FrameError::TooLarge {
                declared: Some(5),
                limit: 4
            })
        );
    }
}
