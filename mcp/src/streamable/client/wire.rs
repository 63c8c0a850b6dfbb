//! What the client reads of the frames it sends and of the answers it gets, and the
//! headers of its requests.

use std::borrow::Cow;
use std::string::String;
use std::vec::Vec;

use sansrpc::codec::http::HttpMethod;

use super::{ClientConfig, ClientRequest, Role, Task};
use crate::streamable::encode_header_value;

/// What every request of the session carries.
#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) id: Option<String>,
    /// The revision the answer to `initialize` settled.
    pub(super) version: Option<String>,
    /// The revision the last request named itself (2026-07-28: `_meta`), for what names
    /// none (`notifications/cancelled`), when no session settled one.
    pub(super) named: Option<String>,
    /// The GET stream of this session was asked for (`notifications/initialized` sent).
    pub(super) listening: bool,
}

/// What a frame the connection sends is, for its POST.
#[derive(Debug, Default)]
pub(super) struct Frame {
    pub(super) method: Option<String>,
    /// It waits for an answer (a request, or a batch).
    pub(super) request: bool,
    /// `Mcp-Name`: the tool or prompt name, or the resource URI.
    pub(super) name: Option<String>,
    /// The revision its `_meta` names.
    pub(super) version: Option<String>,
    /// A request's id (JSON text).
    pub(super) id: Option<String>,
    /// The `requestId` (JSON text) of a `notifications/cancelled`.
    pub(super) cancels: Option<String>,
}

pub(super) fn describe(frame: &[u8]) -> Frame {
    let sent = match frame.trim_ascii_start().first() {
        Some(b'[') => None,
        _ => sent(frame),
    };
    let Some(sent) = sent else {
        // A batch (or what does not parse) waits for its answers.
        return Frame {
            request: frame.first() == Some(&b'['),
            ..Frame::default()
        };
    };
    let request = sent.method.is_some() && sent.id.is_some();
    let cancels = match sent.method {
        Some("notifications/cancelled") => sent
            .params
            .and_then(|params| members(params, ["requestId"]))
            .and_then(|[id]| id)
            .map(str::to_owned),
        _ => None,
    };
    Frame {
        method: sent.method.map(str::to_owned),
        request,
        name: sent.name,
        version: sent.version,
        id: sent.id.filter(|_| request).map(str::to_owned),
        cancels,
    }
}

/// What [`describe`] reads of a frame that is one message: what the server's checks of a
/// 2026-07-28 request read of it (`rules::stateless`), read as they read it.
struct Sent<'a> {
    /// The request's id, as JSON text.
    id: Option<&'a str>,
    method: Option<&'a str>,
    /// `params`, as JSON text.
    params: Option<&'a str>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
    name: Option<String>,
    /// The revision `params._meta` names.
    version: Option<String>,
}

/// [`Sent`] of `frame`; `None` when it is not one JSON object (or is not UTF-8), or its
/// `method` is no string without escapes.
fn sent(frame: &[u8]) -> Option<Sent<'_>> {
    let text = core::str::from_utf8(frame).ok()?;
    let [id, method, params] = members(text, ["id", "method", "params"])?;
    let method = match method {
        Some(method) => Some(borrowed(method)?),
        None => None,
    };
    // `params` that do not read as a whole are none (their `_meta` too); so is a `_meta`
    // that does not, for the revision it names.
    let (meta, name, uri) = params
        .and_then(|params| {
            let [meta, name, uri, _] = members(params, ["_meta", "name", "uri", "arguments"])?;
            Some((meta, string(name)?, string(uri)?))
        })
        .unwrap_or_default();
    let version = meta
        .and_then(|meta| {
            let [version, _] = members(
                meta,
                [
                    "io.modelcontextprotocol/protocolVersion",
                    "io.modelcontextprotocol/clientCapabilities",
                ],
            )?;
            string(version)
        })
        .flatten();
    let name = match method {
        Some("tools/call" | "prompts/get") => name,
        Some("resources/read") => uri,
        _ => None,
    };
    Some(Sent {
        id,
        method,
        params,
        name,
        version,
    })
}

/// A JSON string's text, borrowed: `None` for another value, or one with escapes (as
/// serde_json lends a `&str`).
fn borrowed(json: &str) -> Option<&str> {
    serde_json::from_str(json).ok()
}

/// A member's JSON string decoded (`Some(None)` for a member that is not there), or
/// `None` for another value.
fn string(json: Option<&str>) -> Option<Option<String>> {
    match json {
        Some(json) => serde_json::from_str(json).ok().map(Some),
        None => Some(None),
    }
}

/// The members `names` of the JSON object `text`, each as its JSON text (`null` as none),
/// as serde's derived decoding of a struct of as many `Option`s finds them: `None` when
/// `text` is not one JSON object, or when one of `names` comes twice. A client reads its
/// frames and the server's answers with it, not with a derived decoder for each shape
/// read (each with its field names' decoder, and its reading of a JSON array as the
/// struct, never sent here): 9.7 KB of the MCP example page.
fn members<'a, const N: usize>(text: &'a str, names: [&str; N]) -> Option<[Option<&'a str>; N]> {
    let mut found = [None; N];
    read_members(text, &names, &mut found)?;
    Some(found)
}

/// [`members`], for any number of names (one function for every shape read).
fn read_members<'a>(text: &'a str, names: &[&str], found: &mut [Option<&'a str>]) -> Option<()> {
    let mut seen = 0u32;
    for (name, value) in sansrpc::RawValue::from_json(text).ok()?.members()? {
        let Some(at) = names.iter().position(|n| name == **n) else {
            continue;
        };
        if seen & (1 << at) != 0 {
            return None;
        }
        seen |= 1 << at;
        if !value.is_null() {
            found[at] = Some(value.get());
        }
    }
    Some(())
}

/// True for a response (a result or an error, no method).
pub(super) fn is_response(message: &[u8]) -> bool {
    let shape = core::str::from_utf8(message)
        .ok()
        .and_then(|text| members(text, ["method", "result", "error"]));
    match shape {
        Some([None, result, error]) => result.is_some() || error.is_some(),
        // A method that is no string without escapes does not read either.
        _ => false,
    }
}

/// The `protocolVersion` of an answer to `initialize`.
pub(super) fn init_version(message: &[u8]) -> Option<String> {
    let [result] = members(core::str::from_utf8(message).ok()?, ["result"])?;
    let [version] = members(result?, ["protocolVersion"])?;
    string(version).flatten()
}

/// A header value as text when it is visible ASCII (what HTTP libraries read as text).
pub(super) fn visible(value: &[u8]) -> Option<&str> {
    value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
        .then(|| core::str::from_utf8(value).ok())
        .flatten()
}

/// The request of `task`'s next exchange: its method, its headers from the session and
/// the frame, its body.
pub(super) fn request(
    config: &ClientConfig,
    session: &mut Session,
    task: &mut Task,
    exchange: u64,
    last_event_id: Option<String>,
) -> ClientRequest {
    let post = match &task.role {
        Role::Post {
            frame,
            described,
            extra,
            ..
        } if last_event_id.is_none() => Some((frame, described, extra)),
        _ => None,
    };
    let method = match (&task.role, &post) {
        (_, Some(_)) => HttpMethod::Post,
        (Role::Delete, _) => HttpMethod::Delete,
        _ => HttpMethod::Get,
    };
    let mut headers: Vec<(Cow<'static, str>, String)> = config
        .headers
        .iter()
        .map(|(n, v)| (Cow::Owned(n.to_ascii_lowercase()), v.clone()))
        .collect();
    if method == HttpMethod::Get {
        headers.push(("accept".into(), "text/event-stream".into()));
    } else {
        headers.push((
            "accept".into(),
            "application/json, text/event-stream".into(),
        ));
        headers.push(("content-type".into(), "application/json".into()));
    }
    let described = post.map(|(_, d, _)| d);
    let initialize = described.is_some_and(|d| d.method.as_deref() == Some("initialize"));
    // An `initialize` starts a new session: it carries no session id.
    let carried = session.id.clone().filter(|_| !initialize);
    if let Some(id) = &carried {
        headers.push(("mcp-session-id".into(), id.clone()));
    }
    // A 2026-07-28 request names its revision itself; a session's was settled at
    // initialize; a notification on the stateless revision goes with the revision its
    // requests named (without it, the server refuses it).
    let named = described.and_then(|d| d.version.clone());
    if named.is_some() {
        session.named.clone_from(&named);
    }
    let version = named
        .or_else(|| session.version.clone())
        .or_else(|| session.named.clone());
    if let Some(version) = version {
        headers.push(("mcp-protocol-version".into(), version));
    }
    // The standard headers (SEP-2243): the method, and the name of what it acts on.
    if let Some((_, described, extra)) = post {
        if let Some(method) = &described.method {
            headers.push(("mcp-method".into(), encode_header_value(method)));
        }
        if let Some(name) = &described.name {
            headers.push(("mcp-name".into(), encode_header_value(name)));
        }
        for (name, value) in extra {
            headers.push((Cow::Owned(name.to_ascii_lowercase()), value.clone()));
        }
    }
    let body = post.map(|(frame, _, _)| frame.clone());
    match last_event_id {
        Some(id) => headers.push(("last-event-id".into(), id)),
        // A resumption keeps the session its stream was opened on.
        None => task.carried = carried,
    }
    ClientRequest {
        exchange,
        method,
        headers,
        body,
    }
}
