//! sansrpc: a JSON-RPC 2.0 protocol core that does no I/O.
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod codec;
pub mod limits;

pub use limits::Limits;
