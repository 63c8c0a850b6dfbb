//! The round trip between two machines in one thread, shared by the criterion bench
//! (`endpoint`) and the interleaved runner (`interleaved`): the serde_json floor and two
//! sansrpc connection machines, each sending a request, answering it and reading the answer.
#![allow(dead_code)]

use std::hint::black_box;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::connection::RequestOptions;
use sansrpc::{Instant, Limits, RawValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue as SerdeRaw;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[allow(dead_code)]
    jsonrpc: &'a str,
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a SerdeRaw>,
    #[serde(borrow)]
    id: Option<&'a SerdeRaw>,
    #[serde(borrow)]
    result: Option<&'a SerdeRaw>,
}

#[derive(Serialize)]
struct Call<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    params: &'a SerdeRaw,
    id: u64,
}

#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'a str,
    result: i64,
    id: &'a SerdeRaw,
}

/// The floor: the same bytes on the wire, produced and consumed with serde_json and a
/// Content-Length decoder, with no correlation, deadlines or bookkeeping at all.
#[inline(never)]
pub fn floor_round_trip(
    id: u64,
    params: &SerdeRaw,
    wire: &mut Vec<u8>,
    body: &mut Vec<u8>,
    dec: &mut Decoder,
) -> i64 {
    body.clear();
    serde_json::to_writer(
        &mut *body,
        &Call {
            jsonrpc: "2.0",
            method: "add",
            params,
            id,
        },
    )
    .unwrap();
    wire.clear();
    encode_frame(Framing::ContentLength, body, wire);
    let _ = dec.feed(wire);
    let frame = dec.next_frame().unwrap().unwrap();
    let req: Envelope<'_> = serde_json::from_slice(frame).unwrap();
    let (a, b): (i64, i64) = serde_json::from_str(req.params.unwrap().get()).unwrap();
    black_box(req.method);
    body.clear();
    serde_json::to_writer(
        &mut *body,
        &Reply {
            jsonrpc: "2.0",
            result: a + b,
            id: req.id.unwrap(),
        },
    )
    .unwrap();
    wire.clear();
    encode_frame(Framing::ContentLength, body, wire);
    let _ = dec.feed(wire);
    let frame = dec.next_frame().unwrap().unwrap();
    let resp: Envelope<'_> = serde_json::from_slice(frame).unwrap();
    serde_json::from_str::<u64>(resp.id.unwrap().get()).unwrap();
    serde_json::from_str(resp.result.unwrap().get()).unwrap()
}

/// The floor's state between round trips.
pub struct Floor {
    id: u64,
    params: Box<SerdeRaw>,
    wire: Vec<u8>,
    body: Vec<u8>,
    dec: Decoder,
}

impl Floor {
    pub fn new() -> Self {
        Floor {
            id: 0,
            params: SerdeRaw::from_string("[1,2]".into()).unwrap(),
            wire: Vec::with_capacity(4096),
            body: Vec::with_capacity(4096),
            dec: Decoder::new(Framing::ContentLength, &Limits::default()),
        }
    }

    /// One round trip: `1 + 2`.
    pub fn once(&mut self) -> i64 {
        self.id += 1;
        floor_round_trip(
            self.id,
            &self.params,
            &mut self.wire,
            &mut self.body,
            &mut self.dec,
        )
    }
}

/// The same round trip between two connection machines (the layer every driver runs on).
pub struct Machines {
    client: sansrpc::connection::Connection,
    server: sansrpc::connection::Connection,
    wire: Vec<u8>,
    body: Vec<u8>,
    token: u64,
}

impl Machines {
    pub fn new() -> Self {
        use sansrpc::connection::{Config as ConnConfig, Connection};
        Machines {
            client: Connection::new(ConnConfig::default(), Instant::ZERO),
            server: Connection::new(ConnConfig::default(), Instant::ZERO),
            wire: Vec::with_capacity(4096),
            body: Vec::with_capacity(64),
            token: 0,
        }
    }

    #[inline(never)]
    pub fn round_trip(&mut self, params: &RawValue, now: Instant) -> i64 {
        use sansrpc::connection::Event as ConnEvent;
        self.token += 1;
        let token = self.token;
        let options = RequestOptions::default();
        self.client
            .call(token, "add", Some(params), options, now)
            .unwrap();
        self.wire.clear();
        while self.client.poll_transmit(&mut self.wire).is_some() {}
        let _ = self.server.handle_input(&self.wire, now).unwrap();
        while let Some(event) = self.server.poll_event() {
            if let ConnEvent::Request { handle, request } = event {
                let (a, b): (i64, i64) = request.params.unwrap().deserialize().unwrap();
                self.body.clear();
                itoa(a + b, &mut self.body);
                let result = RawValue::from_json(std::str::from_utf8(&self.body).unwrap()).unwrap();
                self.server.respond(handle, Ok(result));
            }
        }
        self.wire.clear();
        while self.server.poll_transmit(&mut self.wire).is_some() {}
        let _ = self.client.handle_input(&self.wire, now).unwrap();
        let mut sum = 0;
        while let Some(event) = self.client.poll_event() {
            if let ConnEvent::Answer {
                token: got, result, ..
            } = event
            {
                assert_eq!(got, token);
                sum = result.unwrap().deserialize().unwrap();
            }
        }
        sum
    }
}

/// Writes `n` as the floor's serde_json does (with the `itoa` crate).
pub fn itoa(n: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}
