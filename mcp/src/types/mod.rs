//! MCP message types for protocol revisions 2025-11-25 and 2026-07-28.
//!
//! One Rust type serves both revisions. Where they differ, the revision-specific fields are
//! `Option`s documented with the revision that uses them (for example `resultType`, `ttlMs`
//! and `cacheScope` exist only in 2026-07-28; `task` and `elicitationId` only in 2025-11-25).
//! Types for methods that exist in only one revision say so in their docs.
//!
//! Conventions:
//!
//! - Field names follow the schema's JSON names exactly (camelCase; `_meta`, `$schema`, `type`
//!   and `ref` are renamed explicitly).
//! - Optional fields are `Option`s and are omitted from the output when `None`.
//! - Unknown fields are accepted on input. Objects the schema leaves open (results,
//!   capabilities, `_meta` objects) keep them in a flattened `extra` map, so they survive a
//!   round trip; elsewhere they are dropped.
//! - Object-level `_meta` is a plain [`MetaObject`]; the `_meta` of request params, results
//!   and notification params is [`RequestMeta`], [`ResultMeta`] and [`NotificationMeta`], which
//!   name the reserved `io.modelcontextprotocol/*` keys and keep every other key.
//! - JSON `number` fields are `f64`; integral values are written without a fraction
//!   (`50`, not `50.0`), as JavaScript peers write them. JSON `integer` fields are `u64`.
//! - Request params are deserialized from the JSON-RPC `params` member, results from
//!   `result`; the JSON-RPC envelope itself belongs to the sansrpc core.

pub mod methods;
pub mod notifications;

pub mod error_codes;
pub mod meta_keys;
pub mod version;

#[macro_use]
mod serde_util;
mod capabilities;
mod common;
mod completion;
mod content;
mod elicitation;
mod errors;
mod lifecycle;
mod logging;
mod meta;
mod mrtr;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tasks;
mod tools;
mod utilities;

pub use capabilities::*;
pub use common::*;
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use errors::*;
pub use lifecycle::*;
pub use logging::*;
pub use meta::*;
pub use mrtr::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use subscriptions::*;
pub use tasks::*;
pub use tools::*;
pub use utilities::*;
