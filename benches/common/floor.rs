//! The serde_json floor's message types, shared by the benches that measure against it
//! (each uses what its workloads need).
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue as SerdeRaw;

/// The floor's view of an incoming message: borrowed, typed, params and id kept raw.
#[derive(Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow)]
    pub jsonrpc: &'a str,
    #[serde(borrow)]
    pub method: &'a str,
    #[serde(borrow)]
    pub params: Option<&'a SerdeRaw>,
    #[serde(borrow)]
    pub id: Option<&'a SerdeRaw>,
}

/// The floor's success response; field order matches what sansrpc writes.
#[derive(Serialize)]
pub struct ResultResponse<'a, T: Serialize> {
    pub jsonrpc: &'static str,
    pub result: T,
    pub id: &'a SerdeRaw,
}
