//! WebSocket framing (RFC 6455 §5) without I/O: frames in, messages and control frames
//! out, for a transport that has done the opening handshake and now reads the raw stream.
//!
//! JSON-RPC over WebSocket is one message per text frame (or per fragmented text
//! message), so [`WsDecoder`] yields whole text messages, unmasked in place in the
//! caller's buffer (no copy unless the message came in fragments), with their UTF-8
//! checked. Every way a peer can break the protocol is a [`WsFault`] carrying the close
//! code to fail the connection with (§7.1.7): 1002 for a protocol error, 1003 for a binary
//! message (this side speaks text), 1007 for invalid UTF-8, 1009 for a message over the
//! limit, found from the frame header before its payload is buffered.
//!
//! ```
//! use sansrpc::codec::websocket::{encode_frame, Opcode, Role, Step, WsDecoder, WsEvent};
//!
//! // A client's masked text frame, as a server reads it.
//! let mut wire = Vec::new();
//! encode_frame(Opcode::Text, br#"{"jsonrpc":"2.0","method":"a"}"#, Some([1, 2, 3, 4]), &mut wire);
//! let mut decoder = WsDecoder::new(Role::Server, 1 << 20);
//! match decoder.decode(&mut wire).unwrap() {
//!     Step::Event(used, WsEvent::Text(text)) => {
//!         assert_eq!(text, br#"{"jsonrpc":"2.0","method":"a"}"#);
//!         assert_eq!(used, 2 + 4 + 30);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```

use alloc::vec::Vec;
use core::fmt;

#[cfg(feature = "websocket-handshake")]
pub mod handshake;

/// Which end of the connection this is: a server reads masked frames and writes unmasked
/// ones, a client the other way round (§5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Accepted the connection.
    Server,
    /// Opened it.
    Client,
}

/// A frame's opcode (§5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// The rest of a fragmented message.
    Continuation,
    /// A UTF-8 text message.
    Text,
    /// A binary message.
    Binary,
    /// The closing handshake.
    Close,
    /// A ping, to be answered with a pong carrying the same payload.
    Ping,
    /// A pong.
    Pong,
}

impl Opcode {
    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// Close codes this module uses (§7.4.1).
pub mod close_code {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The peer broke the protocol.
    pub const PROTOCOL: u16 = 1002;
    /// A data type this side does not accept (binary, for JSON-RPC).
    pub const UNSUPPORTED: u16 = 1003;
    /// A text message (or close reason) that is not UTF-8.
    pub const INVALID: u16 = 1007;
    /// A message too big to process.
    pub const TOO_BIG: u16 = 1009;
}

/// Why the connection must fail: the close code to send and a short reason (§7.1.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsFault {
    /// The close code to send.
    pub code: u16,
    /// A short reason for the close frame.
    pub reason: &'static str,
}

impl WsFault {
    const fn new(code: u16, reason: &'static str) -> Self {
        WsFault { code, reason }
    }
}

impl fmt::Display for WsFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "websocket close {}: {}", self.code, self.reason)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WsFault {}

/// What a frame (or the message it completed) was.
#[derive(Debug, PartialEq, Eq)]
pub enum WsEvent<'a> {
    /// A whole text message, unmasked, its UTF-8 checked.
    Text(&'a [u8]),
    /// A ping: answer with a pong carrying `payload` ([`encode_frame`] with
    /// [`Opcode::Pong`]).
    Ping(&'a [u8]),
    /// A pong.
    Pong(&'a [u8]),
    /// The peer closes, with its status code (if it sent one) and reason. Answer with a
    /// close frame ([`encode_close`]) and read nothing more.
    Close {
        /// The status code, `None` for an empty close frame.
        code: Option<u16>,
        /// The reason, UTF-8 checked.
        reason: &'a str,
    },
}

/// One step of [`WsDecoder::decode`].
#[derive(Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// The frame at the start of the input, `used` bytes long, gave an event.
    Event(usize, WsEvent<'a>),
    /// The frame at the start of the input, `used` bytes long, was a fragment of a message
    /// not complete yet (kept by the decoder): decode on.
    Fragment(usize),
    /// The frame at the start of the input is incomplete: it needs this many bytes in all
    /// (a header needs at most 14). Read more, keeping what is there.
    Incomplete(usize),
}

/// Decodes frames one at a time from the caller's buffer (see the [module](self) docs).
///
/// The buffer is the caller's: it reads from the stream into it, hands the unconsumed part
/// to [`decode`](WsDecoder::decode), and drops the bytes each step says it used. Payloads
/// are unmasked in place, so a step's bytes must not be decoded twice. Memory is bounded:
/// a fragmented message is assembled in a buffer of at most `max_message` bytes, and a
/// frame that would pass the limit is refused from its header.
#[derive(Debug)]
pub struct WsDecoder {
    role: Role,
    max_message: usize,
    /// The fragments of a text message so far.
    partial: Vec<u8>,
    /// How much of `partial` is known to be whole UTF-8 characters: each fragment is
    /// checked as it comes (RFC 6455 §8.1: fail as soon as the text cannot be UTF-8), a
    /// character cut at its end checked with the next.
    checked: usize,
    /// A fragmented message is open.
    fragmented: bool,
    /// `partial` holds a message handed out by the last step: cleared at the next.
    delivered: bool,
    /// Binary messages are taken as text ([`accept_binary`](Self::accept_binary)).
    binary: bool,
}

/// What a frame's first bytes say.
struct Header {
    fin: bool,
    opcode: Opcode,
    mask: Option<[u8; 4]>,
    /// Header bytes, mask key included.
    len: usize,
    payload: usize,
}

/// A fragmented message's buffer is given back after delivery when it grew past this.
const KEEP_PARTIAL: usize = 64 * 1024;

impl WsDecoder {
    /// A decoder for `role`, refusing messages over `max_message` bytes (close code 1009).
    pub fn new(role: Role, max_message: usize) -> Self {
        WsDecoder {
            role,
            max_message,
            partial: Vec::new(),
            checked: 0,
            fragmented: false,
            delivered: false,
            binary: false,
        }
    }

    /// Takes binary messages as text too (their UTF-8 checked: 1007 when invalid), as
    /// geth and Hardhat do: web3.py sends its requests in binary frames unless told
    /// otherwise. Off by default: a binary frame fails the connection with 1003.
    pub fn accept_binary(mut self, accept: bool) -> Self {
        self.binary = accept;
        self
    }

    /// Decodes the frame at the start of `input` (unmasking it in place). After an `Err`,
    /// send a close frame with the fault's code and stop reading.
    pub fn decode<'a>(&'a mut self, input: &'a mut [u8]) -> Result<Step<'a>, WsFault> {
        if self.delivered {
            self.delivered = false;
            self.checked = 0;
            if self.partial.capacity() > KEEP_PARTIAL {
                self.partial = Vec::new();
            } else {
                self.partial.clear();
            }
        }
        let header = match self.header(input)? {
            Some(header) => header,
            None => return Ok(Step::Incomplete(needed_for_header(input))),
        };
        let used = header.len + header.payload;
        if input.len() < used {
            return Ok(Step::Incomplete(used));
        }
        let payload = &mut input[header.len..used];
        if let Some(key) = header.mask {
            apply_mask(payload, key);
        }
        let event = match header.opcode {
            Opcode::Text | Opcode::Binary if header.fin => {
                if core::str::from_utf8(payload).is_err() {
                    return Err(WsFault::new(close_code::INVALID, "invalid UTF-8"));
                }
                WsEvent::Text(payload)
            }
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                self.fragmented = true;
                self.partial.extend_from_slice(payload);
                let invalid = WsFault::new(close_code::INVALID, "invalid UTF-8");
                match core::str::from_utf8(&self.partial[self.checked..]) {
                    Ok(_) => self.checked = self.partial.len(),
                    // A character cut at the fragment's end: the next one completes it.
                    Err(e) if e.error_len().is_none() && !header.fin => {
                        self.checked += e.valid_up_to();
                    }
                    Err(_) => return Err(invalid),
                }
                if !header.fin {
                    return Ok(Step::Fragment(used));
                }
                self.fragmented = false;
                self.delivered = true;
                WsEvent::Text(&self.partial)
            }
            Opcode::Ping => WsEvent::Ping(payload),
            Opcode::Pong => WsEvent::Pong(payload),
            Opcode::Close => close_event(payload)?,
        };
        Ok(Step::Event(used, event))
    }

    /// Parses and checks the header at the start of `input`; `None` when incomplete.
    fn header(&self, input: &[u8]) -> Result<Option<Header>, WsFault> {
        let [b0, b1, ..] = *input else {
            return Ok(None);
        };
        if b0 & 0x70 != 0 {
            return Err(WsFault::new(close_code::PROTOCOL, "reserved bits set"));
        }
        let fin = b0 & 0x80 != 0;
        let opcode = Opcode::from_bits(b0 & 0x0F)
            .ok_or(WsFault::new(close_code::PROTOCOL, "reserved opcode"))?;
        let masked = b1 & 0x80 != 0;
        match (self.role, masked) {
            (Role::Server, false) => {
                return Err(WsFault::new(close_code::PROTOCOL, "unmasked client frame"))
            }
            (Role::Client, true) => {
                return Err(WsFault::new(close_code::PROTOCOL, "masked server frame"))
            }
            _ => {}
        }
        let (payload, mut len) = match b1 & 0x7F {
            126 => match input.get(2..4) {
                Some(&[a, b]) => (u64::from(u16::from_be_bytes([a, b])), 4),
                _ => return Ok(None),
            },
            127 => match input.get(2..10).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
                Some(bytes) => (u64::from_be_bytes(bytes), 10),
                None => return Ok(None),
            },
            n => (u64::from(n), 2),
        };
        if payload >> 63 != 0 {
            return Err(WsFault::new(close_code::PROTOCOL, "invalid frame length"));
        }
        if opcode.is_control() {
            if !fin {
                return Err(WsFault::new(
                    close_code::PROTOCOL,
                    "fragmented control frame",
                ));
            }
            if payload > 125 {
                return Err(WsFault::new(close_code::PROTOCOL, "oversize control frame"));
            }
        } else {
            match (opcode, self.fragmented) {
                (Opcode::Continuation, false) => {
                    return Err(WsFault::new(
                        close_code::PROTOCOL,
                        "continuation frame without a message",
                    ))
                }
                (Opcode::Text | Opcode::Binary, true) => {
                    return Err(WsFault::new(
                        close_code::PROTOCOL,
                        "new message inside a fragmented one",
                    ))
                }
                (Opcode::Binary, false) if !self.binary => return Err(binary()),
                _ => {}
            }
            let so_far = if self.fragmented {
                self.partial.len() as u64
            } else {
                0
            };
            if so_far.saturating_add(payload) > self.max_message as u64 {
                return Err(WsFault::new(close_code::TOO_BIG, "message too big"));
            }
        }
        let mask = if masked {
            match input
                .get(len..len + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
            {
                Some(key) => {
                    len += 4;
                    Some(key)
                }
                None => return Ok(None),
            }
        } else {
            None
        };
        // Fits in usize: at most `max_message` for data frames, 125 for control frames.
        let payload = usize::try_from(payload).unwrap_or(usize::MAX);
        Ok(Some(Header {
            fin,
            opcode,
            mask,
            len,
            payload,
        }))
    }
}

fn binary() -> WsFault {
    WsFault::new(close_code::UNSUPPORTED, "binary frames are not supported")
}

/// Bytes needed to see the whole header that starts `input` (at most 14).
fn needed_for_header(input: &[u8]) -> usize {
    let Some(&b1) = input.get(1) else {
        return 2;
    };
    let mask = if b1 & 0x80 != 0 { 4 } else { 0 };
    mask + match b1 & 0x7F {
        126 => 4,
        127 => 10,
        _ => 2,
    }
}

/// A close frame's payload as an event (§5.5.1, §7.4).
fn close_event(payload: &[u8]) -> Result<WsEvent<'_>, WsFault> {
    match payload {
        [] => Ok(WsEvent::Close {
            code: None,
            reason: "",
        }),
        [_] => Err(WsFault::new(
            close_code::PROTOCOL,
            "close frame of one byte",
        )),
        [a, b, reason @ ..] => {
            let code = u16::from_be_bytes([*a, *b]);
            let valid = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            if !valid {
                return Err(WsFault::new(close_code::PROTOCOL, "invalid close code"));
            }
            let reason = core::str::from_utf8(reason)
                .map_err(|_| WsFault::new(close_code::INVALID, "invalid UTF-8"))?;
            Ok(WsEvent::Close {
                code: Some(code),
                reason,
            })
        }
    }
}

/// XORs `payload` with the masking key (§5.3), a word at a time.
pub(crate) fn apply_mask(payload: &mut [u8], key: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3],
    ]);
    let mut chunks = payload.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let masked = u64::from_ne_bytes(word) ^ wide;
        chunk.copy_from_slice(&masked.to_ne_bytes());
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i & 3];
    }
}

/// Most bytes a frame header takes (8-byte length and a masking key).
pub const MAX_HEADER: usize = 14;

/// Appends a final frame's header for a payload of `len` bytes, with the masking key if
/// there is one (a client's frames are masked, a server's are not).
pub(crate) fn encode_header(opcode: Opcode, len: usize, mask: Option<[u8; 4]>, out: &mut Vec<u8>) {
    let mut bytes = [0u8; MAX_HEADER];
    let n = write_header(opcode, len, mask, &mut bytes);
    out.extend_from_slice(&bytes[..n]);
}

/// Writes a final frame's header into `bytes` and returns its length: for a transport that
/// writes the header from its own bytes and the payload from where it is (a vectored
/// write), as [`encode_frame`] writes it before the payload.
pub fn write_header(
    opcode: Opcode,
    len: usize,
    mask: Option<[u8; 4]>,
    bytes: &mut [u8; MAX_HEADER],
) -> usize {
    bytes[0] = 0x80 | opcode.bits();
    let m = if mask.is_some() { 0x80 } else { 0 };
    let mut n = if len < 126 {
        bytes[1] = m | len as u8;
        2
    } else if let Ok(short) = u16::try_from(len) {
        bytes[1] = m | 126;
        bytes[2..4].copy_from_slice(&short.to_be_bytes());
        4
    } else {
        bytes[1] = m | 127;
        bytes[2..10].copy_from_slice(&(len as u64).to_be_bytes());
        10
    };
    if let Some(key) = mask {
        bytes[n..n + 4].copy_from_slice(&key);
        n += 4;
    }
    n
}

/// The length of the header [`write_header`] writes.
pub fn header_len(len: usize, masked: bool) -> usize {
    let base = if len < 126 {
        2
    } else if len <= usize::from(u16::MAX) {
        4
    } else {
        10
    };
    base + if masked { 4 } else { 0 }
}

/// Appends a whole final frame: header, then `payload` (masked if `mask` is set).
pub fn encode_frame(opcode: Opcode, payload: &[u8], mask: Option<[u8; 4]>, out: &mut Vec<u8>) {
    encode_header(opcode, payload.len(), mask, out);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[start..], key);
    }
}

/// Appends a close frame with `code` and `reason` (cut to fit a control frame's 125
/// bytes), or an empty one without a code.
pub fn encode_close(code: Option<u16>, reason: &str, mask: Option<[u8; 4]>, out: &mut Vec<u8>) {
    let mut payload = [0u8; 125];
    let len = match code {
        None => 0,
        Some(code) => {
            payload[..2].copy_from_slice(&code.to_be_bytes());
            let mut cut = reason.len().min(123);
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            payload[2..2 + cut].copy_from_slice(&reason.as_bytes()[..cut]);
            2 + cut
        }
    };
    encode_frame(Opcode::Close, &payload[..len], mask, out);
}

/// Frames the message `out[start + reserved..]` in place, where `reserved` bytes at
/// `start` were set aside for its header (at least [`header_len`] of the message): writes
/// the header before the payload, masks the payload when `mask` is set, and closes the gap.
/// For a transport that reserves [`MAX_HEADER`] bytes, lets the connection append the
/// message, then frames it without copying it elsewhere.
pub fn frame_in_place(out: &mut Vec<u8>, start: usize, reserved: usize, mask: Option<[u8; 4]>) {
    let body = start + reserved;
    let len = out.len() - body;
    let header = header_len(len, mask.is_some());
    debug_assert!(header <= reserved);
    let at = body - header;
    let mut bytes = [0u8; MAX_HEADER];
    write_header(Opcode::Text, len, mask, &mut bytes);
    out[at..body].copy_from_slice(&bytes[..header]);
    if let Some(key) = mask {
        apply_mask(&mut out[body..], key);
    }
    if at > start {
        out.copy_within(at.., start);
        out.truncate(out.len() - (at - start));
    }
}

#[cfg(test)]
mod tests;
