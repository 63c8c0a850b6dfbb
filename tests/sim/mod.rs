//! A simulated network for two connections and a reference model checked against them.
//!
//! Shared by `tests/model.rs` (proptest) and `fuzz/fuzz_targets/endpoint.rs` (libFuzzer),
//! which include it by path; it depends only on `sansrpc` and `serde_json`.
#![allow(dead_code)]

pub mod link;
pub mod model;
