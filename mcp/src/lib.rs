//! Model Context Protocol (MCP) support for sansrpc.
//!
//! [`types`] holds the MCP message types (request params, results, notification params,
//! capabilities, content blocks, error data) for protocol revisions **2025-11-25** (the
//! `initialize` handshake era) and **2026-07-28** (stateless, per-request `_meta`), as serde
//! types that follow the schema's JSON names exactly. The protocol logic lives elsewhere.
//!
//! ```
//! use sansrpc_mcp::types::{CallToolResult, ContentBlock};
//!
//! let wire = r#"{"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}}"#;
//! let result: CallToolResult = serde_json::from_str(wire).unwrap();
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "3"));
//! // Written back with the schema's names, nothing added.
//! let back = serde_json::to_value(&result).unwrap();
//! assert_eq!(back, serde_json::from_str::<serde_json::Value>(wire).unwrap());
//! ```

#![deny(missing_docs)]

#[cfg(feature = "futures")]
pub mod client;
pub mod server;
pub mod types;

/// A value as raw JSON, for the adapters' raw handlers and calls (the MCP types and
/// `serde_json` values always serialise).
#[cfg(any(feature = "futures", feature = "blocking"))]
pub(crate) fn raw_json(value: &impl serde::Serialize) -> Box<sansrpc::RawValue> {
    std::thread_local! {
        /// Where a value is written before its one copy of the exact size is taken (a
        /// `String` grown as serde_json writes, then shrunk, allocated twice or more).
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let write = |out: &mut Vec<u8>| {
        // What serde_json writes is one JSON value: not scanned again.
        let raw = sansrpc::RawValue::from_serialize_in(value, out).expect("MCP types serialize");
        // A large value's room is not held on to.
        if out.capacity() > 64 * 1024 {
            *out = Vec::new();
        }
        raw
    };
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => write(&mut out),
        // Written from inside a serialization (never by the MCP types): a buffer of its own.
        Err(_) => write(&mut Vec::new()),
    })
}
