//! Protocol profiles: the conventions of LSP and MCP for cancellation, progress and framing.

use crate::codec::Framing;
use crate::id::Id;
use crate::raw::RawValue;

/// The protocol conventions a connection follows for cancellation, progress and framing.
///
/// Choose one with [`Config::for_profile`](super::Config::for_profile), which also sets
/// [`Config::cancel_method`](super::Config::cancel_method),
/// [`Config::progress_method`](super::Config::progress_method) and the default framing.
/// The profile decides the params shapes and whether a cancelled request is answered;
/// both sending and receiving follow it. Under `Lsp`, `"params": null` is read as absent
/// ([`Limits::null_params_as_absent`](crate::Limits::null_params_as_absent)); the others
/// refuse it, as JSON-RPC 2.0 says.
///
/// | | cancel | cancelled request | progress | framing |
/// |---|---|---|---|---|
/// | `JsonRpc`, `Lsp` | `$/cancelRequest {id}` | answered, `-32800` | `$/progress {token, value}` | Content-Length |
/// | `Mcp` | `notifications/cancelled {requestId, reason}` | no response | `notifications/progress {progressToken, progress, total?, message?}` | newline |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Profile {
    /// Plain JSON-RPC 2.0, with LSP's conventions for the extensions (the default).
    #[default]
    JsonRpc,
    /// The Language Server Protocol.
    Lsp,
    /// The Model Context Protocol.
    Mcp,
}

impl Profile {
    /// The code sansrpc answers with, under this profile, for an error of its own: server
    /// busy (`-32002`), batch too large (`-32003`), request too large (`-32004`), and the
    /// stream extension's `-32020..=-32022`. Unchanged except under MCP, which assigns codes
    /// in the server-error range itself (`-32002` resource not found; `-32020..=-32022`
    /// HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion in
    /// 2026-07-28): there sansrpc's own codes move out of that range by +1000 (`-32002`
    /// becomes `-31002`, `-32021` becomes `-31021`). The standard codes (`-32700`,
    /// `-326xx`) and errors an application answers with are never changed.
    ///
    /// ```
    /// use sansrpc::Profile;
    /// use sansrpc::error::code;
    /// assert_eq!(Profile::Mcp.own_code(code::SERVER_BUSY), -31002);
    /// assert_eq!(Profile::Lsp.own_code(code::SERVER_BUSY), -32002);
    /// assert_eq!(Profile::Mcp.own_code(code::INVALID_PARAMS), -32602);
    /// ```
    pub const fn own_code(self, code: i64) -> i64 {
        match self {
            Profile::Mcp if crate::error::code::is_server_error(code) => code + 1000,
            _ => code,
        }
    }

    /// The method of cancellation notifications.
    pub const fn cancel_method(self) -> &'static str {
        match self {
            Profile::JsonRpc | Profile::Lsp => "$/cancelRequest",
            Profile::Mcp => "notifications/cancelled",
        }
    }

    /// The params member of a cancellation that names the cancelled request.
    pub const fn cancel_id_key(self) -> &'static str {
        match self {
            Profile::JsonRpc | Profile::Lsp => "id",
            Profile::Mcp => "requestId",
        }
    }

    /// Whether a request the peer cancelled is still answered (LSP: with
    /// [`Config::cancelled_code`](super::Config::cancelled_code); MCP: never).
    pub const fn answers_cancelled(self) -> bool {
        !matches!(self, Profile::Mcp)
    }

    /// The method of progress notifications.
    pub const fn progress_method(self) -> &'static str {
        match self {
            Profile::JsonRpc | Profile::Lsp => "$/progress",
            Profile::Mcp => "notifications/progress",
        }
    }

    /// The params member of a progress notification that carries the token.
    pub const fn progress_token_key(self) -> &'static str {
        match self {
            Profile::JsonRpc | Profile::Lsp => "token",
            Profile::Mcp => "progressToken",
        }
    }

    /// The token a peer put in a request's params for partial results (LSP's
    /// `partialResultToken`; plain JSON-RPC looks for it too, MCP has none): the server may
    /// send parts of the result as progress on it (`$/progress {token, value}`) before the
    /// answer. `None` when there is none or it is not an integer or a string.
    pub fn partial_result_token(self, params: Option<&RawValue>) -> Option<Id<'static>> {
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "partialResultToken")]
            token: Option<Id<'static>>,
        }
        if matches!(self, Profile::Mcp) {
            return None;
        }
        let text = params?.get().trim_start();
        let bytes = text.as_bytes();
        let named = crate::json::contains(bytes, b"partialResultToken");
        if !text.starts_with('{') || (!named && memchr::memchr(b'\\', bytes).is_none()) {
            return None;
        }
        // A token that is not a number, a string or null fails the whole decode: `None`.
        let params: Params = crate::de::from_str(text).ok()?;
        params.token
    }

    /// The progress token a peer put in a request's params, where this profile puts it:
    /// MCP's `_meta.progressToken`, LSP's `workDoneToken` (plain JSON-RPC looks for
    /// either). `None` when there is none or it is not an integer or a string.
    pub fn progress_token(self, params: Option<&RawValue>) -> Option<Id<'static>> {
        #[derive(serde::Deserialize)]
        struct Meta {
            #[serde(rename = "progressToken")]
            progress_token: Option<Id<'static>>,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "workDoneToken")]
            work_done_token: Option<Id<'static>>,
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        // Most requests carry no token: seen without parsing (an object naming the key, or
        // one with escapes that might spell it).
        let text = params?.get().trim_start();
        let bytes = text.as_bytes();
        let named = |key: &str| crate::json::contains(bytes, key.as_bytes());
        let present = match self {
            Profile::Mcp => named("progressToken"),
            Profile::Lsp => named("workDoneToken"),
            Profile::JsonRpc => named("workDoneToken") || named("progressToken"),
        };
        if !text.starts_with('{') || (!present && memchr::memchr(b'\\', bytes).is_none()) {
            return None;
        }
        // A token that is not a number, a string or null (either of them, under plain
        // JSON-RPC) fails the whole decode: `None`.
        let params: Params = crate::de::from_str(text).ok()?;
        let meta = || params.meta.and_then(|m| m.progress_token);
        match self {
            Profile::Mcp => meta(),
            Profile::Lsp => params.work_done_token,
            Profile::JsonRpc => params.work_done_token.or_else(meta),
        }
    }

    /// The framing of a byte stream (stdio, TCP) under this profile.
    pub const fn default_framing(self) -> Framing {
        match self {
            Profile::JsonRpc | Profile::Lsp => Framing::ContentLength,
            Profile::Mcp => Framing::Newline,
        }
    }
}
