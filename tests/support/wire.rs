//! Moving bytes between two connection machines in virtual time, for the tests of the core
//! and of the crates beside it (`#[path]`-included).

#![allow(dead_code)]

use sansrpc::connection::Connection;
use sansrpc::{Instant, RawValue};

/// The time every exchange here happens at.
pub const NOW: Instant = Instant::ZERO;

/// `json` as raw JSON (it must be valid).
pub fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

/// Moves everything `from` wrote into `to`; the text moved.
pub fn send(from: &mut Connection, to: &mut Connection) -> String {
    let mut wire = Vec::new();
    while from.poll_transmit(&mut wire).is_some() {}
    to.handle_input(&wire, NOW).unwrap();
    String::from_utf8(wire).unwrap()
}

/// The body of every Content-Length frame in `wire`.
pub fn bodies(wire: &str) -> Vec<String> {
    wire.split("Content-Length: ")
        .filter(|f| !f.is_empty())
        .map(|f| f[f.find("\r\n\r\n").unwrap() + 4..].to_owned())
        .collect()
}
