//! MCP's protocol constants, defined once: the revisions ([`version`]), the error codes
//! ([`error_codes`]) and the reserved `_meta` keys ([`meta_keys`]). The core's Streamable
//! HTTP machine ([`streamable`](crate::streamable)) decides with them, and the
//! `sansrpc-mcp` crate re-exports these modules as `sansrpc_mcp::types::{version,
//! error_codes, meta_keys}`.

pub mod error_codes;
pub mod meta_keys;
pub mod version;
