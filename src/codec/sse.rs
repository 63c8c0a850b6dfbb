//! Server-Sent Events (the WHATWG HTML `text/event-stream` format), as MCP's Streamable
//! HTTP uses them: a server encodes events ([`encode_event`], [`encode_comment`]); a
//! client decodes them incrementally ([`SseDecoder`]), fed any chunking, within bounds on the
//! line and event sizes.
//!
//! ```
//! use sansrpc::codec::sse::{encode_event, SseDecoder, SseLimits};
//!
//! let mut wire = Vec::new();
//! encode_event(&mut wire, Some("7.1"), Some("message"), "{\"a\":1}\nsecond line", Some(500));
//! assert_eq!(wire, b"id: 7.1\nevent: message\nretry: 500\ndata: {\"a\":1}\ndata: second line\n\n");
//!
//! let mut decoder = SseDecoder::new(SseLimits::default());
//! let mut events = Vec::new();
//! for piece in wire.chunks(3) {
//!     decoder.feed(piece, |event| events.push(event));
//! }
//! let event = events.pop().unwrap().unwrap();
//! assert_eq!(event.data, "{\"a\":1}\nsecond line");
//! assert_eq!((event.event.as_str(), event.retry), ("message", Some(500)));
//! assert_eq!(decoder.last_event_id(), "7.1");
//! ```

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

mod store;

pub use store::{EventStore, MemoryEventStore};

/// Appends the id of event `seq` of stream `stream` (`stream.seq`): unique in a server that
/// numbers its streams once, and naming its stream, so a `Last-Event-ID` says where to
/// resume ([`parse_event_id`]).
///
/// ```
/// let mut id = Vec::new();
/// sansrpc::codec::sse::event_id(7, 3, &mut id);
/// assert_eq!(id, b"7.3");
/// assert_eq!(sansrpc::codec::sse::parse_event_id(" 7.3 "), Some((7, 3)));
/// assert_eq!(sansrpc::codec::sse::parse_event_id("7"), None);
/// ```
pub fn event_id(stream: u64, seq: u64, out: &mut Vec<u8>) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(stream).as_bytes());
    out.push(b'.');
    out.extend_from_slice(buf.format(seq).as_bytes());
}

/// An [`event_id`] read back: its stream and sequence number.
pub fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    let (stream, seq) = text.trim().split_once('.')?;
    if stream.len() > 20 || seq.len() > 20 {
        return None;
    }
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// Appends one event: its `id` and `event` name (a CR or LF in either is dropped, so a
/// field can never end early, and a NUL in the `id`, which decoders would ignore), the `retry` delay in milliseconds, and `data` as one
/// `data:` line per line of it (an empty `data` gives one empty `data:` line: MCP's
/// priming event), then the blank line that dispatches it.
pub fn encode_event(
    out: &mut Vec<u8>,
    id: Option<&str>,
    event: Option<&str>,
    data: &str,
    retry: Option<u32>,
) {
    // `nul`: drop NUL too (an `id` holding one is ignored by decoders; an event name may
    // hold one).
    let field = |out: &mut Vec<u8>, name: &[u8], value: &str, nul: bool| {
        out.extend_from_slice(name);
        out.extend(
            value
                .bytes()
                .filter(|&b| b != b'\n' && b != b'\r' && !(nul && b == 0)),
        );
        out.push(b'\n');
    };
    if let Some(id) = id {
        field(out, b"id: ", id, true);
    }
    if let Some(event) = event {
        field(out, b"event: ", event, false);
    }
    if let Some(ms) = retry {
        out.extend_from_slice(b"retry: ");
        out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
        out.push(b'\n');
    }
    let mut rest = data;
    loop {
        let end = memchr::memchr2(b'\r', b'\n', rest.as_bytes()).unwrap_or(rest.len());
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&rest.as_bytes()[..end]);
        out.push(b'\n');
        if end == rest.len() {
            break;
        }
        // A CRLF is one line end.
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
    out.push(b'\n');
}

/// Appends a comment (`: text`, with CR and LF dropped) and a blank line: a keep-alive
/// clients ignore.
pub fn encode_comment(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b": ");
    out.extend(text.bytes().filter(|&b| b != b'\n' && b != b'\r'));
    out.extend_from_slice(b"\n\n");
}

/// One event, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event's type (`message` when it named none).
    pub event: String,
    /// Its data lines, joined with `\n`.
    pub data: String,
    /// The last event id after it (it persists across events, as the spec says).
    pub id: String,
    /// A `retry` it carried, in milliseconds.
    pub retry: Option<u64>,
}

/// Bounds of a [`SseDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseLimits {
    /// Longest line other than a data line (default 64 KiB): a longer one is skipped with
    /// [`SseError::LineTooLong`]. A data line may be as long as [`max_event`](Self::max_event)
    /// allows its event's data to be.
    pub max_line: usize,
    /// Largest event data (default 4 MiB): a larger event is dropped with
    /// [`SseError::EventTooLarge`].
    pub max_event: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_line: 64 * 1024,
            max_event: 4 << 20,
        }
    }
}

/// A fault in the stream; the decoder goes on after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseError {
    /// A line over [`SseLimits::max_line`]: skipped up to its end.
    LineTooLong,
    /// An event whose data grew over [`SseLimits::max_event`]: dropped up to its end.
    EventTooLarge,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SseError::LineTooLong => "an SSE line over the limit",
            SseError::EventTooLarge => "an SSE event over the limit",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SseError {}

/// Decodes an event stream incrementally, by the WHATWG parsing rules: a UTF-8 BOM at the
/// start is skipped, lines end with CRLF, LF or CR (a CR at the end of one piece and an LF
/// at the start of the next are one line end), `:` lines are comments, a field's value
/// loses one leading space, `id` containing NUL is ignored, `retry` takes ASCII digits only,
/// an event with no data is not dispatched. Invalid UTF-8 is decoded lossily (U+FFFD), as
/// browsers do.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    limits: SseLimits,
    line: Vec<u8>,
    /// The line under way is over the limit: skip to its end.
    skipping: bool,
    /// The last piece ended with a CR: an LF starting the next is part of that line end.
    after_cr: bool,
    /// The first bytes of the stream are still to be looked at for a BOM.
    at_start: bool,
    bom_seen: usize,
    event: String,
    data: String,
    /// The event under way is over the limit: drop it at its end.
    dropping: bool,
    retry: Option<u64>,
    last_id: String,
    /// `last_id` as of the last blank line: what a reconnecting client sends.
    committed_id: String,
    /// The reconnection delay the stream last asked for, in milliseconds.
    reconnect: Option<u64>,
}

impl SseDecoder {
    /// A decoder within `limits`.
    pub fn new(limits: SseLimits) -> Self {
        SseDecoder {
            limits,
            line: Vec::new(),
            skipping: false,
            after_cr: false,
            at_start: true,
            bom_seen: 0,
            event: String::new(),
            data: String::new(),
            dropping: false,
            retry: None,
            last_id: String::new(),
            committed_id: String::new(),
            reconnect: None,
        }
    }

    /// The last event id as of the last complete event (its blank line; an event without
    /// data, such as MCP's priming event, counts): what a reconnecting client sends as
    /// `Last-Event-ID`. The `id` line of an event still arriving does not count yet, so a
    /// stream cut in the middle of an event is resumed from before it.
    pub fn last_event_id(&self) -> &str {
        &self.committed_id
    }

    /// The reconnection delay the stream last asked for (`retry`), in milliseconds.
    pub fn reconnection_time(&self) -> Option<u64> {
        self.reconnect
    }

    /// Takes `bytes`, handing each event dispatched (or fault) to `each`, in order.
    pub fn feed(&mut self, bytes: &[u8], mut each: impl FnMut(Result<SseEvent, SseError>)) {
        self.feed_dyn(bytes, &mut each);
    }

    fn feed_dyn(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(Result<SseEvent, SseError>)) {
        if self.at_start {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            while self.bom_seen < BOM.len() && !bytes.is_empty() {
                if bytes[0] != BOM[self.bom_seen] {
                    // Not a BOM after all: what was taken for one is data.
                    let seen = BOM[..self.bom_seen].to_vec();
                    self.at_start = false;
                    self.bom_seen = 0;
                    self.feed_dyn(&seen, each);
                    break;
                }
                self.bom_seen += 1;
                bytes = &bytes[1..];
            }
            if self.bom_seen == BOM.len() || !self.at_start {
                self.at_start = false;
            } else if bytes.is_empty() {
                return;
            }
        }
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match memchr::memchr2(b'\n', b'\r', bytes) {
                Some(at) => {
                    self.take_part(&bytes[..at], each);
                    self.after_cr = bytes[at] == b'\r';
                    self.end_line(each);
                    bytes = &bytes[at + 1..];
                }
                None => {
                    self.take_part(bytes, each);
                    break;
                }
            }
        }
    }

    /// The end of the stream: an event not ended by a blank line is discarded (as the
    /// spec says); true when there was one.
    pub fn finish(&mut self) -> bool {
        let partial = !self.data.is_empty() || !self.line.is_empty();
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.dropping = false;
        self.skipping = false;
        partial
    }

    fn take_part(&mut self, part: &[u8], each: &mut dyn FnMut(Result<SseEvent, SseError>)) {
        if self.skipping {
            return;
        }
        let len = self.line.len() + part.len();
        if len > self.limits.max_line {
            // A data line may be as long as an event's data (a server writes a message as
            // one line): the event's limit governs it.
            if !is_data_line(&self.line, part) {
                self.skipping = true;
                self.line.clear();
                each(Err(SseError::LineTooLong));
                return;
            }
            if len > self.limits.max_event.saturating_add(DATA_FIELD.len() + 1) {
                self.skipping = true;
                self.line.clear();
                if !self.dropping {
                    self.dropping = true;
                    self.data.clear();
                    each(Err(SseError::EventTooLarge));
                }
                return;
            }
        }
        self.line.extend_from_slice(part);
    }

    fn end_line(&mut self, each: &mut dyn FnMut(Result<SseEvent, SseError>)) {
        if self.skipping {
            self.skipping = false;
            return;
        }
        let line = core::mem::take(&mut self.line);
        self.process(&line, each);
        self.line = line;
        self.line.clear();
    }

    fn process(&mut self, line: &[u8], each: &mut dyn FnMut(Result<SseEvent, SseError>)) {
        if line.is_empty() {
            return self.dispatch(each);
        }
        if line[0] == b':' {
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"event" => self.event = lossy(value),
            b"data" => {
                if self.dropping {
                    return;
                }
                // The limit counts the decoded text: each invalid UTF-8 byte becomes a
                // three-byte U+FFFD, so the raw length is not enough.
                let value = String::from_utf8_lossy(value);
                if self.data.len() + value.len() + 1 > self.limits.max_event {
                    self.dropping = true;
                    self.data.clear();
                    each(Err(SseError::EventTooLarge));
                    return;
                }
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains(&0) => self.last_id = lossy(value),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = core::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok());
                self.reconnect = self.retry.or(self.reconnect);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, each: &mut dyn FnMut(Result<SseEvent, SseError>)) {
        self.committed_id.clone_from(&self.last_id);
        let retry = self.retry.take();
        let event = core::mem::take(&mut self.event);
        if core::mem::take(&mut self.dropping) || self.data.is_empty() {
            self.data.clear();
            return;
        }
        let mut data = core::mem::take(&mut self.data);
        data.pop();
        each(Ok(SseEvent {
            event: if event.is_empty() {
                String::from("message")
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
            retry,
        }));
    }
}

/// How a data line starts.
const DATA_FIELD: &[u8] = b"data:";

/// True when the line that `line` and then `part` begin is a data line, or may be one (it
/// is a shorter start of one: with a line limit under five bytes, wherever the stream was
/// cut the line is told the same way).
fn is_data_line(line: &[u8], part: &[u8]) -> bool {
    let have = line.len().min(DATA_FIELD.len());
    let rest = &DATA_FIELD[have..];
    let more = part.len().min(rest.len());
    line[..have] == DATA_FIELD[..have] && part[..more] == rest[..more]
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec;

    fn decode(chunks: &[&[u8]]) -> Vec<Result<SseEvent, SseError>> {
        let mut decoder = SseDecoder::new(SseLimits::default());
        let mut out = Vec::new();
        for c in chunks {
            decoder.feed(c, |e| out.push(e));
        }
        out
    }

    fn data(events: &[Result<SseEvent, SseError>]) -> Vec<String> {
        events
            .iter()
            .map(|e| e.as_ref().map(|e| e.data.clone()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn the_specs_examples() {
        let stream = b"data: YHOO\ndata: +2\ndata: 10\n\n: comment\ndata:first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
        let events = decode(&[stream]);
        assert_eq!(
            data(&events),
            [
                "YHOO\n+2\n10",
                "first event",
                "second event",
                " third event"
            ]
        );
        let ids: Vec<_> = events
            .iter()
            .map(|e| e.as_ref().unwrap().id.clone())
            .collect();
        assert_eq!(ids, ["", "1", "", ""]);
        // Two events, the second with empty data; a data line without colon; no blank line
        // at the end, no event.
        assert_eq!(data(&decode(&[b"data\n\ndata\ndata\n\ndata:"])), ["", "\n"]);
        // A blank line with no data line before it dispatches nothing.
        assert!(decode(&[b"id: 3\n\n: x\n\n"]).is_empty());
    }

    #[test]
    fn line_ends_of_every_kind_and_any_split() {
        let wire = b"\xEF\xBB\xBFevent: x\r\ndata: a\rdata: b\r\n\r\nid: 9\ndata: c\n\n";
        let whole = decode(&[wire]);
        assert_eq!(data(&whole), ["a\nb", "c"]);
        assert_eq!(whole[0].as_ref().unwrap().event, "x");
        for split in 0..wire.len() {
            let (a, b) = wire.split_at(split);
            assert_eq!(decode(&[a, b]), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(decode(&bytes), whole);
    }

    #[test]
    fn an_event_name_with_nul_survives_encoding() {
        // Found by the `sse` fuzz target: the encoder dropped NUL from event names too.
        let mut wire = Vec::new();
        encode_event(&mut wire, Some("1\u{0}"), Some("t\u{0}x"), "d", None);
        let events = decode(&[&wire]);
        let event = events[0].as_ref().unwrap();
        assert_eq!(
            (event.event.as_str(), event.data.as_str()),
            ("t\u{0}x", "d")
        );
    }

    #[test]
    fn ids_with_nul_are_ignored_and_retry_takes_digits_only() {
        let events = decode(&[b"id: 1\nretry: 2x\ndata: a\n\nid: 2\0\nretry: 30\ndata: b\n\n"]);
        let a = events[0].as_ref().unwrap();
        let b = events[1].as_ref().unwrap();
        assert_eq!((a.id.as_str(), a.retry), ("1", None));
        assert_eq!((b.id.as_str(), b.retry), ("1", Some(30)));
    }

    #[test]
    fn limits_hold_whatever_the_input() {
        let mut decoder = SseDecoder::new(SseLimits {
            max_line: 100,
            max_event: 1000,
        });
        let mut out = Vec::new();
        let long = vec![b'x'; 10_000];
        // A line other than data: skipped, the event goes on.
        decoder.feed(b"event: ", |e| out.push(e));
        for _ in 0..100 {
            decoder.feed(&long, |e| out.push(e));
        }
        assert!(decoder.line.capacity() <= 10_000 + 100);
        decoder.feed(b"\ndata: ok\n\n", |e| out.push(e));
        assert_eq!(out[0], Err(SseError::LineTooLong));
        assert_eq!(out[1].as_ref().unwrap().data, "ok");
        // A data line over the event's limit: the whole event is dropped, the line's
        // bytes never held past the limit.
        let mut out = Vec::new();
        decoder.feed(b"data: ", |e| out.push(e));
        for _ in 0..100 {
            decoder.feed(&long, |e| out.push(e));
        }
        assert!(decoder.line.capacity() <= 10_000 + 1000);
        decoder.feed(b"\ndata: in the same event\n\ndata: next\n\n", |e| {
            out.push(e)
        });
        assert_eq!(out[0], Err(SseError::EventTooLarge));
        assert_eq!(out[1].as_ref().unwrap().data, "next");
        assert_eq!(out.len(), 2);
        let mut out = Vec::new();
        for _ in 0..20 {
            decoder.feed(b"data: ", |e| out.push(e));
            decoder.feed(&[b'y'; 90], |e| out.push(e));
            decoder.feed(b"\n", |e| out.push(e));
        }
        decoder.feed(b"\ndata: after\n\n", |e| out.push(e));
        assert_eq!(out, [Err(SseError::EventTooLarge), out[1].clone()]);
        assert_eq!(out[1].as_ref().unwrap().data, "after");
    }

    #[test]
    fn a_data_line_may_be_as_long_as_an_event() {
        // A server writes each message as one data line: a 1 MiB tool result, in pieces
        // of any size, with the default limits (64 KiB lines, 4 MiB events).
        let message = format!("{{\"result\":\"{}\"}}", "r".repeat(1 << 20));
        let wire = format!("id: 7\nevent: message\ndata: {message}\n\n");
        for piece in [1000, 4096, 65_536, wire.len()] {
            let chunks: Vec<&[u8]> = wire.as_bytes().chunks(piece).collect();
            let out = decode(&chunks);
            assert_eq!(out.len(), 1, "in pieces of {piece}");
            let event = out[0].as_ref().unwrap();
            assert_eq!((event.data.len(), &event.id[..]), (message.len(), "7"));
        }
        // A line that only starts like one is held to the line limit.
        let wire = format!("datum: {}\ndata: ok\n\n", "d".repeat(70_000));
        let out = decode(&[wire.as_bytes()]);
        assert_eq!(out[0], Err(SseError::LineTooLong));
        assert_eq!(out[1].as_ref().unwrap().data, "ok");
    }

    #[test]
    fn the_event_limit_counts_invalid_utf8_as_its_replacement() {
        // 100 invalid bytes are 300 bytes of U+FFFD: over a 256-byte event limit (found
        // by the sse fuzz target in CI).
        let mut decoder = SseDecoder::new(SseLimits {
            max_line: 1024,
            max_event: 256,
        });
        let mut out = Vec::new();
        let mut wire = b"data: ".to_vec();
        wire.extend_from_slice(&[0xFF; 100]);
        wire.extend_from_slice(b"\n\ndata: ok\n\n");
        decoder.feed(&wire, |e| out.push(e));
        assert_eq!(out[0], Err(SseError::EventTooLarge));
        assert_eq!(out[1].as_ref().unwrap().data, "ok");
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn encoded_events_decode_to_what_was_encoded() {
        for (id, name, text, retry) in [
            (Some("1.2"), Some("message"), "{\"x\":[1,2]}", None),
            (None, None, "", Some(10)),
            (Some("a"), None, "one\r\ntwo\rthree\nfour", None),
            (Some("bad\nid"), Some("e\rv"), "x", Some(0)),
        ] {
            let mut wire = Vec::new();
            encode_event(&mut wire, id, name, text, retry);
            let mut decoder = SseDecoder::new(SseLimits::default());
            let mut out = Vec::new();
            decoder.feed(&wire, |e| out.push(e));
            // An empty data line is an event with empty data (MCP's priming event).
            let e = out[0].as_ref().unwrap();
            assert_eq!(e.data, text.replace("\r\n", "\n").replace('\r', "\n"));
            assert_eq!(e.id, id.unwrap_or_default().replace('\n', ""));
            assert_eq!(e.retry, retry.map(u64::from));
        }
        let mut wire = Vec::new();
        encode_comment(&mut wire, "keep\nalive");
        assert_eq!(wire, b": keepalive\n\n");
        assert!(decode(&[&wire]).is_empty());
    }

    #[test]
    fn the_last_event_id_counts_from_complete_events_only() {
        let mut d = SseDecoder::new(SseLimits::default());
        let mut seen = Vec::new();
        // MCP's priming event: an id, a retry, one empty data line.
        d.feed(b"id: s.0\nretry: 500\ndata: \n\n", |e| seen.push(e));
        assert!(matches!(seen.as_slice(), [Ok(e)] if e.data.is_empty()));
        assert_eq!(d.last_event_id(), "s.0");
        assert_eq!(d.reconnection_time(), Some(500));
        // Cut after the id line of the next event: it is resumed from before that event.
        d.feed(b"id: s.1\ndata: {}\n\nid: s.2\ndata: [", |e| seen.push(e));
        assert_eq!(seen.len(), 2);
        assert_eq!(d.last_event_id(), "s.1");
        d.feed(b"]\n\n", |e| seen.push(e));
        assert_eq!(d.last_event_id(), "s.2");
    }
}
