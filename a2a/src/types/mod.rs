//! The A2A 1.0 data model (`specification/a2a.proto`, package `lf.a2a.v1`) as serde types
//! in the JSON shapes of the JSON-RPC binding: ProtoJSON, as a2a-sdk's `json_format` and
//! @a2a-js/sdk's `toJSON`/`fromJSON` write and read it.
//!
//! Conventions:
//!
//! - Members are camelCase (`contextId`), which §5.5 makes the only form on the wire (the
//!   proto's snake_case names, which ProtoJSON parsers also take, are not read).
//! - Enums are their proto names (`TASK_STATE_WORKING`, `ROLE_USER`); their numbers are
//!   read too.
//! - A oneof is one member: [`Part`]'s content (`text`, `raw`, `url`, `data`),
//!   [`StreamResponse`], [`SendMessageResponse`], [`SecurityScheme`], [`OAuthFlows`].
//! - `bytes` are base64 (standard alphabet, padded; both alphabets read, padded or not);
//!   timestamps are RFC 3339 UTC strings ([`Timestamp`]); `google.protobuf.Struct` is a
//!   JSON object ([`Struct`]), `google.protobuf.Value` any JSON value.
//! - Fields the proto marks REQUIRED are always written; other fields are omitted at their
//!   default (empty string, list or map, `false`, unset), as ProtoJSON writes them. On
//!   input, `null` and absence read as the default, and unknown members are ignored
//!   (§5.7); a REQUIRED field that is absent reads as its default, and the task machine
//!   refuses the values it cannot work with (an empty `messageId`, a message without
//!   parts).
//! - Strings without presence that are commonly unset are `Option<String>`: an empty
//!   string reads as `None`.

mod card;
mod message;
mod requests;
pub(crate) mod serde_util;
mod task;
mod timestamp;

pub use card::*;
pub use message::*;
pub use requests::*;
pub use serde_util::Struct;
pub use task::*;
pub use timestamp::{Timestamp, TimestampError};
