//! sansrpc: a JSON-RPC 2.0 protocol core that does no I/O.
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod codec;
pub mod error;
pub mod id;
mod json;
pub mod limits;
pub mod message;
mod raw;

pub use error::{ErrorObject, ProtocolError};
pub use id::{Id, IdKind};
pub use limits::Limits;
pub use message::{Classified, Classifier, Incoming, Notification, Request, Response, Version};
pub use raw::{InvalidJson, RawValue};
