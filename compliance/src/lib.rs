//! sansrpc-compliance: JSON-RPC 2.0 compliance fuzzing, inputs at the edges of the
//! specification from a fuzzer's bytes, and a judge of a server's answers.
//!
//! For fuzzing a server in-process (cargo-fuzz, libFuzzer, AFL), or checking it from a
//! seed; `sansrpc check --fuzz` uses the same generator and judge over a socket.
//!
//! - [`Input`] implements [`arbitrary::Arbitrary`]: the fuzzer's bytes choose a message
//!   (requests, notifications, batches empty, nested and mixed; ids of every kind; duplicate
//!   members, bytes that are not UTF-8, lone surrogates, deep nesting, texts that are not
//!   JSON, responses) and how its bytes are cut into chunks on their way in.
//! - [`Input::judge`] reads what the server wrote back and returns the [`Violation`]s of
//!   the specification: empty when the answer is one the specification requires or allows.
//!   Where the specification leaves the reading open, the expectation is lenient, so a
//!   violation is always a real one.
//!
//! Every generated method name starts with [`METHOD_PREFIX`], which no server implements:
//! every request must be answered `-32601` Method not found, whatever methods the server
//! has, so the judge needs to know nothing about them. The judge reads answers with
//! serde_json and its own framing, nothing of this crate's parser: it does not share the
//! bugs it looks for.
//!
//! # Fuzzing your own server
//! The fuzz target feeds each input to a fresh server and judges everything it wrote:
//!
//! ```
//! use sansrpc::codec::Framing;
//! use sansrpc_compliance::{Gen, Input};
//! use sansrpc::{Config, Connection};
//! use sansrpc::router::{Reply, Router};
//! use sansrpc::Instant;
//!
//! let mut router = Router::new();
//! router.raw_method("echo", |params, out| {
//!     out.extend_from_slice(params.map_or("null", |p| p.get()).as_bytes());
//!     Ok(())
//! })?;
//!
//! // In a fuzz target: `fuzz_target!(|input: Input| { … })`. Here, from a seed.
//! let mut gen = Gen::new(1, Framing::ContentLength);
//! for _ in 0..200 {
//!     let input = Input::generate(&mut gen);
//!     let mut conn = Connection::new(Config::default(), Instant::ZERO);
//!     let mut reply = Reply::default();
//!     for chunk in input.chunks(Framing::ContentLength) {
//!         let mut chunk = &chunk[..];
//!         while !chunk.is_empty() {
//!             chunk = &chunk[conn.handle_input(chunk, Instant::ZERO)?..];
//!             router.serve(&mut conn, &mut reply, |_| {});
//!         }
//!     }
//!     let mut answered = Vec::new();
//!     while conn.poll_transmit(&mut answered).is_some() {}
//!     let violations = input.judge(Framing::ContentLength, &answered);
//!     assert!(violations.is_empty(), "{input:?}: {violations:?}");
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The lower layer is there too: [`Gen`] makes messages ([`Msg`]) from a seed or any
//! [`Entropy`], each with the answer it requires ([`Expect`]), and [`judge`] judges one
//! answer against an [`Expect`].
//!
//! [`Input`]: crate::Input
//! [`Input::judge`]: crate::Input::judge
//! [`Violation`]: crate::Violation
//! [`METHOD_PREFIX`]: crate::METHOD_PREFIX
//! [`Gen`]: crate::Gen
//! [`Msg`]: crate::Msg
//! [`Entropy`]: crate::Entropy
//! [`Expect`]: crate::Expect
//! [`judge`]: crate::judge()

#![deny(missing_docs)]

mod gen;
mod input;
mod judge;

pub use gen::{Entropy, Gen, Msg, Rng, J, METHOD_PREFIX};
pub use input::{Input, Violation};
pub use judge::{judge, single_id, Expect, Item};
