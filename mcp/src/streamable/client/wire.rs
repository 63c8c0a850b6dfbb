//! What the client reads of the frames it sends and of the answers it gets, and the
//! headers of its requests.

use std::borrow::Cow;
use std::string::String;
use std::vec::Vec;

use sansrpc::codec::http::HttpMethod;
use serde_json::value::RawValue as Json;

use super::{ClientConfig, ClientRequest, Role, Task};
use crate::streamable::encode_header_value;
use crate::streamable::rules::json_of;

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
    #[derive(serde::Deserialize)]
    struct Cancel<'a> {
        #[serde(borrow)]
        params: Option<CancelParams<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct CancelParams<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: Option<&'a Json>,
    }
    let sent = match frame.trim_ascii_start().first() {
        Some(b'[') => None,
        _ => crate::streamable::rules::stateless(frame),
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
        Some("notifications/cancelled") => json_of::<Cancel<'_>>(frame)
            .and_then(|c| c.params?.request_id)
            .map(|id| id.get().to_owned()),
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

/// True for a response (a result or an error, no method).
pub(super) fn is_response(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Shape<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
        #[serde(borrow)]
        result: Option<&'a Json>,
        #[serde(borrow)]
        error: Option<&'a Json>,
    }
    json_of::<Shape<'_>>(message)
        .is_some_and(|s| s.method.is_none() && (s.result.is_some() || s.error.is_some()))
}

/// The `protocolVersion` of an answer to `initialize`.
pub(super) fn init_version(message: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        result: Option<InitResult>,
    }
    #[derive(serde::Deserialize)]
    struct InitResult {
        #[serde(rename = "protocolVersion")]
        version: Option<String>,
    }
    json_of::<Answer>(message)?.result?.version
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
