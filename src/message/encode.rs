//! Writing messages as JSON into a caller-owned buffer.

use alloc::vec::Vec;

use super::Version;
use crate::error::ErrorObject;
use crate::id::Id;
use crate::json;
use crate::raw::RawValue;

const V2_HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",";

/// Writes a request (`id` given) or a notification (`id` is `None`).
pub(crate) fn write_call(
    out: &mut Vec<u8>,
    version: Version,
    id: Option<&Id<'_>>,
    method: &str,
    params: Option<&RawValue>,
) {
    let params = params.map(|p| move |out: &mut Vec<u8>| out.extend_from_slice(p.get().as_bytes()));
    write_call_with(out, version, id, method, params);
}

/// [`write_call`] with params that `params` appends in place (one JSON value), so that
/// params put together from parts (a subscription's notice around its item) are not
/// written into a buffer of their own first.
pub(crate) fn write_call_with(
    out: &mut Vec<u8>,
    version: Version,
    id: Option<&Id<'_>>,
    method: &str,
    params: Option<impl FnOnce(&mut Vec<u8>)>,
) {
    match version {
        Version::V2 => out.extend_from_slice(V2_HEAD),
        Version::V1 => out.push(b'{'),
    }
    out.extend_from_slice(b"\"method\":");
    json::write_str(out, method);
    match (params, version) {
        (Some(write), _) => {
            out.extend_from_slice(b",\"params\":");
            write(out);
        }
        // JSON-RPC 1.0 requires params; an empty array stands for none.
        (None, Version::V1) => out.extend_from_slice(b",\"params\":[]"),
        (None, Version::V2) => {}
    }
    match (id, version) {
        (Some(id), _) => {
            out.extend_from_slice(b",\"id\":");
            id.write_json(out);
        }
        // A JSON-RPC 1.0 notification is a request with a null id.
        (None, Version::V1) => out.extend_from_slice(b",\"id\":null"),
        (None, Version::V2) => {}
    }
    out.push(b'}');
}

/// Writes a success response carrying `result`.
pub fn write_result_response(out: &mut Vec<u8>, version: Version, id: &Id<'_>, result: &RawValue) {
    match version {
        Version::V2 => out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":"),
        Version::V1 => out.extend_from_slice(b"{\"result\":"),
    }
    out.extend_from_slice(result.get().as_bytes());
    if version == Version::V1 {
        out.extend_from_slice(b",\"error\":null");
    }
    out.extend_from_slice(b",\"id\":");
    id.write_json(out);
    out.push(b'}');
}

/// Writes an error response carrying `error`; `id` is [`Id::NULL`] when the request's id
/// could not be determined.
pub fn write_error_response(
    out: &mut Vec<u8>,
    version: Version,
    id: &Id<'_>,
    error: &ErrorObject<'_>,
) {
    match version {
        Version::V2 => out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"error\":"),
        Version::V1 => out.extend_from_slice(b"{\"result\":null,\"error\":"),
    }
    error.write_json(out);
    out.extend_from_slice(b",\"id\":");
    id.write_json(out);
    out.push(b'}');
}

/// Writes the responses to a batch as one JSON array.
///
/// Call [`BatchWriter::entry`] before writing each response with the functions above, then
/// [`BatchWriter::finish`]. A batch that produced no response (all notifications) must not be
/// answered at all: `finish` then removes the opening bracket and returns `false`.
#[derive(Debug)]
pub struct BatchWriter {
    start: usize,
    count: usize,
}

impl BatchWriter {
    /// Starts the array at the end of `out`.
    pub fn start(out: &mut Vec<u8>) -> BatchWriter {
        let start = out.len();
        out.push(b'[');
        BatchWriter { start, count: 0 }
    }

    /// Prepares `out` for the next response (writes the separating comma).
    pub fn entry(&mut self, out: &mut Vec<u8>) {
        if self.count > 0 {
            out.push(b',');
        }
        self.count += 1;
    }

    /// Closes the array. Returns `false`, leaving `out` as it was before [`BatchWriter::start`],
    /// when no entry was written.
    pub fn finish(self, out: &mut Vec<u8>) -> bool {
        if self.count == 0 {
            out.truncate(self.start);
            false
        } else {
            out.push(b']');
            true
        }
    }
}

/// Appends `s` as a JSON string: quoted, with `"`, `\` and the control characters escaped
/// (the escaping every message this crate writes uses; no allocation).
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    json::write_str(out, s);
}

/// Which of `result`, `method` or `error` comes first among the top-level members of a
/// single message object, read from its keys alone without looking into any value it
/// passes over: what a transport needs to know of a frame its own connection wrote (a
/// result response, a call, or an error response whose code is wanted). `None` for a batch,
/// a frame that is not an object, or one with none of the three.
///
/// The values passed over are skipped, not checked: use it on frames a [`Connection`]
/// wrote (whole, valid messages), not on a peer's input.
///
/// [`Connection`]: crate::Connection
pub fn leading_member(frame: &[u8]) -> Option<Leading> {
    let mut s = json::Scanner::new(frame);
    s.expect(b'{').ok()?;
    if s.peek_ws() == Some(b'}') {
        return None;
    }
    loop {
        let key = s.key().ok()?;
        if !key.escaped {
            match &frame[key.span.start..key.span.end] {
                b"result" => return Some(Leading::Result),
                b"method" => return Some(Leading::Method),
                b"error" => return Some(Leading::Error),
                _ => {}
            }
        }
        s.value(1, crate::Limits::MAX_DEPTH_CAP).ok()?;
        match s.peek_ws()? {
            b',' => s.pos += 1,
            _ => return None,
        }
    }
}

/// What [`leading_member`] found first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leading {
    /// `result`: a result response.
    Result,
    /// `method`: a request or a notification.
    Method,
    /// `error`: an error response.
    Error,
}
