//! sansrpc: a JSON-RPC 2.0 protocol core that does no I/O.
//!
//! Bytes go in, classified messages come out; messages go in, framed bytes come out. The
//! core never reads a clock, spawns, locks, sleeps or touches a socket, so the same code runs
//! under tokio, async-std, smol, plain threads, or on a microcontroller (`#![no_std]` +
//! `alloc`; the `std` feature, on by default, only adds `std::error::Error` impls).
//!
//! # Layers
//! - [`codec`]: framing. An incremental [`codec::Decoder`] for Content-Length headers (LSP)
//!   and newline-delimited JSON (MCP stdio), fed any chunking, with a bounded buffer that
//!   resynchronises after garbage; [`codec::encode_frame`] writes frames into your buffer;
//!   [`codec::check_message`] for transports that deliver whole messages (WebSocket, HTTP).
//! - [`message`]: the message model and the [`Classifier`], which validates a frame in one
//!   pass and classifies it exactly per JSON-RPC 2.0 sections 4 to 6: requests,
//!   notifications, responses, invalid entries (answered with `-32600` and their id when it
//!   is valid) and malformed responses (typed [`ProtocolError`]s, never answered). Entries
//!   borrow from the frame: method `&str`, params `&`[`RawValue`], the [`Id`] as its exact
//!   token.
//! - [`Limits`]: every bound, each with a documented default and a documented answer.
//!
//! # A server loop with no runtime
//! ```
//! use sansrpc::codec::{encode_frame, Decoder, Framing};
//! use sansrpc::message::{write_error_response, BatchWriter};
//! use sansrpc::{Classified, Classifier, ErrorObject, Incoming, Limits};
//!
//! let limits = Limits::default();
//! let mut decoder = Decoder::new(Framing::ContentLength, &limits);
//! let mut classifier = Classifier::new(limits);
//! let (mut body, mut wire) = (Vec::new(), Vec::new());
//!
//! let answer = |entry: &Incoming<'_>, out: &mut Vec<u8>| match entry {
//!     Incoming::Request(req) => {
//!         write_error_response(out, req.version, &req.id, &ErrorObject::method_not_found())
//!     }
//!     Incoming::Invalid(invalid) => invalid.write_response(out),
//!     _ => {}
//! };
//!
//! // Input may arrive split anywhere, even inside a header.
//! let input = b"Content-Length: 37\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":7}";
//! for chunk in input.chunks(5) {
//!     let mut chunk = &chunk[..];
//!     while !chunk.is_empty() {
//!         let used = decoder.feed(chunk);
//!         chunk = &chunk[used..];
//!         while let Some(frame) = decoder.next_frame() {
//!             let Ok(frame) = frame else { continue }; // a framing error event: log it
//!             body.clear();
//!             match classifier.classify(frame) {
//!                 Classified::Single(entry) => answer(&entry, &mut body),
//!                 Classified::Batch(batch) => {
//!                     let mut w = BatchWriter::start(&mut body);
//!                     for entry in batch.filter(Incoming::needs_response) {
//!                         w.entry(&mut body);
//!                         answer(&entry, &mut body);
//!                     }
//!                     w.finish(&mut body);
//!                 }
//!                 Classified::Rejected(r) => r.write_response(&limits, &mut body),
//!             }
//!             if !body.is_empty() {
//!                 encode_frame(Framing::ContentLength, &body, &mut wire);
//!             }
//!         }
//!     }
//! }
//! assert!(wire.ends_with(br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":7}"#));
//! ```
//!
//! # Features
//! - `std` (default): `std::error::Error` impls, panic-catching in the router.
//! - `discover` (default): the router's built-in `rpc.discover` and
//!   [`router::MethodDoc`](crate::router).
//! - `streams` (default): pull-based streams over `rpc.stream.next` / `rpc.stream.cancel`.
//! - `progress` (default): deadlines extended by progress on a call's token.
//! - `pubsub` (default): pub/sub, persistent subscriptions and NATS-style topics.
//! - `serde-json-params` (default): typed params decoded by serde_json; without it by
//!   [`de`], the core's own decoder (no float parsing unless a type asks for one, shorter
//!   messages, and serde_json's parser left out of a firmware).
//! - `tracing`, `metrics`: spans around handled calls; call metrics.
//!
//! A small device takes `default-features = false` and names what it uses: with none of
//! the optional parts, `Connection` + `Router` are 77 KB of flash on a Cortex-M3 (opt-level
//! "z", LTO), 106 KB with `discover`, `streams` and `progress`.
//!
//! # Duplicate members
//! A message in which a protocol member (`jsonrpc`, `method`, `params`, `id`, `result`,
//! `error`, or an error object's `code`, `message`, `data`) appears twice is refused: a
//! request with `-32600` "duplicate member", a response as
//! [`ProtocolError::DuplicateMember`]. Parsers disagree on which duplicate wins, and that
//! disagreement is how request smuggling works; refusing is the one safe reading. Unknown
//! members are ignored, duplicated or not.
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

extern crate alloc;
// The unit tests run on a host with std whatever the features (the test harness links it).
#[cfg(any(feature = "std", test))]
extern crate std;

pub mod client;
pub mod codec;
mod config;
pub mod connection;
pub mod de;
pub mod driver;
pub mod error;
pub mod ext;
pub mod id;
mod json;
pub mod limits;
pub mod message;
pub mod method;
mod raw;
pub mod router;
mod sync;
mod time;
mod wire;

/// The Rust snippets of the README and of the guides in docs/ (one module each), compiled
/// and run as doctests of this crate. A snippet that needs an adapter crate is marked
/// `ignore` and names the example that compiles it.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
#[cfg(doctest)]
#[doc = include_str!("../docs/cli.md")]
mod guide_cli {}
#[cfg(doctest)]
#[doc = include_str!("../docs/client.md")]
mod guide_client {}
#[cfg(doctest)]
#[doc = include_str!("../docs/core.md")]
mod guide_core {}
#[cfg(doctest)]
#[doc = include_str!("../docs/driver.md")]
mod guide_driver {}
#[cfg(doctest)]
#[doc = include_str!("../docs/embedded.md")]
mod guide_embedded {}
#[cfg(doctest)]
#[doc = include_str!("../docs/errors.md")]
mod guide_errors {}
#[cfg(doctest)]
#[doc = include_str!("../docs/fuzzing.md")]
mod guide_fuzzing {}
#[cfg(doctest)]
#[doc = include_str!("../docs/interop.md")]
mod guide_interop {}
#[cfg(doctest)]
#[doc = include_str!("../docs/limits.md")]
mod guide_limits {}
#[cfg(doctest)]
#[doc = include_str!("../docs/lsp.md")]
mod guide_lsp {}
#[cfg(doctest)]
#[doc = include_str!("../docs/mcp.md")]
mod guide_mcp {}
#[cfg(doctest)]
#[doc = include_str!("../docs/methods.md")]
mod guide_methods {}
#[cfg(doctest)]
#[doc = include_str!("../docs/performance.md")]
mod guide_performance {}
#[cfg(doctest)]
#[doc = include_str!("../docs/pubsub.md")]
mod guide_pubsub {}
#[cfg(doctest)]
#[doc = include_str!("../docs/streams.md")]
mod guide_streams {}
#[cfg(doctest)]
#[doc = include_str!("../docs/subscriptions.md")]
mod guide_subscriptions {}
#[cfg(doctest)]
#[doc = include_str!("../docs/testing.md")]
mod guide_testing {}
#[cfg(doctest)]
#[doc = include_str!("../docs/transports.md")]
mod guide_transports {}

pub use config::Config;
pub use connection::{Connection, Event, Profile, Timeout};
pub use error::{ErrorObject, ProtocolError};
pub use id::{Id, IdKind};
pub use limits::Limits;
pub use message::{Classified, Classifier, Incoming, Notification, Request, Response, Version};
pub use raw::{ArrayWriter, InvalidJson, MemberName, Members, ObjectWriter, RawValue};
pub use time::Instant;
