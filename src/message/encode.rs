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
