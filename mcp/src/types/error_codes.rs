//! JSON-RPC error codes used by MCP.
//!
//! The `data` shapes that go with them are types of `sansrpc_mcp::types`:
//! `UnsupportedProtocolVersionData`, `MissingRequiredClientCapabilityData`,
//! `UrlElicitationRequiredData` and `ResourceNotFoundData`.
//!
//! 2026-07-28 partitions the implementation-defined range: `-32000..=-32019` is left to
//! implementations (receivers must not assign them a shared meaning), `-32020..=-32099` is
//! reserved for codes the specification defines.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The message is not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (also: a method gated behind a server
/// capability the server did not advertise). On 2026-07-28 Streamable HTTP it goes with
/// HTTP 404.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters: unknown tool or prompt, bad arguments, bad cursor, bad log
/// level, missing required `_meta` fields (2026-07-28), resource not found (2026-07-28, with
/// `sansrpc_mcp::types::ResourceNotFoundData`), unsupported protocol version in
/// `initialize` (2025-11-25, with
/// `sansrpc_mcp::types::UnsupportedProtocolVersionData`).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;

/// `HeaderMismatch` (2026-07-28): HTTP headers (`MCP-Protocol-Version`, `Mcp-Method`,
/// `Mcp-Name`, `Mcp-Param-*`) missing, malformed or different from the body. HTTP 400. No
/// `data`.
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapability` (2026-07-28): the request needs a client capability the
/// request's `clientCapabilities` did not declare. HTTP 400. `data`:
/// `sansrpc_mcp::types::MissingRequiredClientCapabilityData`.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersion` (2026-07-28): the request's protocol version is not
/// supported. HTTP 400. `data`:
/// `sansrpc_mcp::types::UnsupportedProtocolVersionData`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Resource not found, 2025-11-25 and earlier. `data`:
/// `sansrpc_mcp::types::ResourceNotFoundData`. 2026-07-28 uses
/// [`INVALID_PARAMS`] instead and MUST NOT send this code; clients SHOULD still accept it.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// URL elicitation required, 2025-11-25 only. `data`:
/// `sansrpc_mcp::types::UrlElicitationRequiredData`. Reserved (never to be
/// sent) in 2026-07-28.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
