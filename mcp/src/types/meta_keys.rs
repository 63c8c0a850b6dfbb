//! Reserved `_meta` keys.
//!
//! `sansrpc_mcp::types::RequestMeta`, `sansrpc_mcp::types::ResultMeta` and
//! `sansrpc_mcp::types::NotificationMeta` give the reserved keys typed fields; these
//! constants are for code that works on the raw map.

/// Request `_meta`: the protocol version of this request (string). Required on every
/// request in 2026-07-28; must equal the `MCP-Protocol-Version` HTTP header.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Request `_meta`: the client's capabilities for this request
/// (`sansrpc_mcp::types::ClientCapabilities`; `{}` = none). Required on every
/// request in 2026-07-28.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Request `_meta`: the client's `sansrpc_mcp::types::Implementation`. Optional
/// (clients SHOULD send it; servers MUST NOT require it). 2026-07-28.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Request `_meta`: the `sansrpc_mcp::types::LoggingLevel` the client wants log
/// notifications at for this request; without it the server MUST NOT send
/// `notifications/message`. 2026-07-28 (replaces `logging/setLevel`).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta`: the server's `sansrpc_mcp::types::Implementation`. Servers SHOULD
/// include it in every result. 2026-07-28 (replaces `serverInfo` of `InitializeResult`).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification and `subscriptions/listen` result `_meta`: the JSON-RPC id of the
/// `subscriptions/listen` request whose stream carries the message (same JSON type as the
/// id). 2026-07-28.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Request `_meta`: the progress token the sender wants `notifications/progress` for. Both
/// revisions.
pub const PROGRESS_TOKEN: &str = "progressToken";
/// `_meta` of task-related messages: `{"taskId": …}`
/// (`sansrpc_mcp::types::RelatedTaskMetadata`).
/// 2025-11-25 only (experimental tasks).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// Request `_meta`: W3C Trace Context `traceparent` (string). 2026-07-28 (SEP-414).
pub const TRACEPARENT: &str = "traceparent";
/// Request `_meta`: W3C Trace Context `tracestate` (string). 2026-07-28 (SEP-414).
pub const TRACESTATE: &str = "tracestate";
/// Request `_meta`: W3C Baggage `baggage` (string). 2026-07-28 (SEP-414).
pub const BAGGAGE: &str = "baggage";
