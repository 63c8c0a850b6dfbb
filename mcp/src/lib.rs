//! Model Context Protocol (MCP) support for sansrpc.
//!
//! [`types`] holds the MCP message types (request params, results, notification params,
//! capabilities, content blocks, error data) for protocol revisions **2025-11-25** (the
//! `initialize` handshake era) and **2026-07-28** (stateless, per-request `_meta`), as serde
//! types that follow the schema's JSON names exactly. The protocol logic lives elsewhere.

#![deny(missing_docs)]

pub mod types;
