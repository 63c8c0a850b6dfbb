//! Params as MCP sends them (`_meta`, unknown members), one-sided serde bounds, serde for
//! `Id` and `RawValue`, and typed answers.

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::connection::{Config, Connection, Event, RequestOptions};
use sansrpc::method::{Method, ParamsDecoder};
use sansrpc::router::{Reply, Router};
use sansrpc::{ErrorObject, Id, Instant, RawValue, Request, Version};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

fn request(method: &str, params: Option<&str>) -> Request<'static> {
    Request {
        id: Id::number(1),
        method: method.to_owned().into(),
        params: params.map(|p| RawValue::from_string(p.to_owned()).unwrap().into()),
        version: Version::V2,
    }
}

fn dispatch(r: &Router, method: &str, params: Option<&str>) -> Result<Value, i64> {
    let mut reply = Reply::default();
    r.dispatch(&request(method, params), &mut reply);
    match reply.error() {
        Some(e) => Err(e.code),
        None => Ok(serde_json::from_str(reply.result_json().unwrap()).unwrap()),
    }
}

enum Ping {}
impl Method for Ping {
    const NAME: &'static str = "ping";
    type Params = ();
    type Result = Value;
}

/// Served only: the params need only `Deserialize`, the result only `Serialize`.
#[derive(Deserialize)]
struct AddParams {
    a: i64,
    b: i64,
}
#[derive(Serialize)]
struct Sum {
    sum: i64,
}
enum Add {}
impl Method for Add {
    const NAME: &'static str = "add";
    type Params = AddParams;
    type Result = Sum;
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictParams {
    a: i64,
}
enum Strict {}
impl Method for Strict {
    const NAME: &'static str = "strict";
    type Params = StrictParams;
    type Result = i64;
}

fn router() -> Router {
    let mut r = Router::new();
    r.method::<Ping, _>(|()| Ok(json!({}))).unwrap();
    r.method::<Add, _>(|p| Ok(Sum { sum: p.a + p.b })).unwrap();
    r.method::<Strict, _>(|p| Ok(p.a)).unwrap();
    r
}

#[test]
fn unit_params_accept_meta_and_any_object() {
    let r = router();
    for params in [
        None,
        Some("[]"),
        Some("{}"),
        Some(" { } "),
        Some(r#"{"_meta": {"progressToken": "t"}}"#),
        Some(r#"{"extra": [1, 2]}"#),
    ] {
        assert_eq!(dispatch(&r, "ping", params), Ok(json!({})), "{params:?}");
    }
    assert_eq!(dispatch(&r, "ping", Some("[1]")), Err(-32602));
}

#[test]
fn struct_params_accept_meta_and_unknown_members_unless_denied() {
    let r = router();
    let meta = r#"{"a": 1, "_meta": {"progressToken": 7}, "b": 2, "other": true}"#;
    assert_eq!(dispatch(&r, "add", Some(meta)), Ok(json!({"sum": 3})));
    assert_eq!(dispatch(&r, "add", Some("[1, 2]")), Ok(json!({"sum": 3})));
    // A method that denies unknown members still takes `_meta`, wherever it is.
    assert_eq!(
        dispatch(&r, "strict", Some(r#"{"_meta": {}, "a": 5}"#)),
        Ok(json!(5))
    );
    assert_eq!(
        dispatch(&r, "strict", Some(r#"{"a": 5, "_meta": {"x": [1]}}"#)),
        Ok(json!(5))
    );
    assert_eq!(
        dispatch(&r, "strict", Some(r#"{"a": 5, "b": 1}"#)),
        Err(-32602)
    );
    let decoder = ParamsDecoder::<StrictParams>::new();
    let meta = RawValue::from_json(r#"{"_meta":1,"a":9}"#).unwrap();
    assert_eq!(decoder.decode(Some(meta)).unwrap().a, 9);
}

/// Called only: the params need only `Serialize`, the result only `Deserialize`.
#[derive(Serialize)]
struct Query<'a> {
    name: &'a str,
}
#[derive(Deserialize, Debug, PartialEq)]
struct Found {
    count: u32,
}
enum Find {}
impl Method for Find {
    const NAME: &'static str = "find";
    type Params = Query<'static>;
    type Result = Found;
}

fn sent(ep: &mut Connection) -> Vec<Value> {
    let mut buf = Vec::new();
    while ep.poll_transmit(&mut buf).is_some() {}
    let mut decoder = Decoder::new(Framing::ContentLength, &Default::default());
    assert_eq!(decoder.feed(&buf), buf.len());
    let mut out = Vec::new();
    while let Some(f) = decoder.next_frame() {
        out.push(serde_json::from_slice(f.unwrap()).unwrap());
    }
    out
}

#[test]
fn a_called_method_needs_only_serialize_params() {
    let mut ep = Connection::new(Config::default(), Instant::ZERO);
    ep.call_typed::<Find>(
        1,
        &Query { name: "x" },
        RequestOptions::default(),
        Instant::ZERO,
    )
    .unwrap();
    assert_eq!(sent(&mut ep)[0]["params"], json!({"name": "x"}));
    let result = sansrpc::method::decode_result::<Find>(Ok(RawValue::from_json(r#"{"count":2}"#)
        .unwrap()
        .into()));
    assert_eq!(result.unwrap(), Found { count: 2 });
}

#[test]
fn ids_serialize_and_deserialize_exactly() {
    for text in [
        "1",
        "-7",
        "1.0",
        "1.5",
        "1e3",
        "1180591620717411303424",
        r#""a\u0062""#,
        "null",
    ] {
        let id: Id<'static> = serde_json::from_str(text).unwrap();
        assert_eq!(id.raw(), text.trim_matches('"'), "{text}");
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            if text == r#""a\u0062""# {
                r#""ab""#
            } else {
                text
            }
        );
    }
    assert_eq!(
        serde_json::from_str::<Id<'static>>(r#""ab""#).unwrap(),
        Id::string("ab")
    );
    assert!(serde_json::from_str::<Id<'static>>("true").is_err());
    assert!(serde_json::from_str::<Id<'static>>("[1]").is_err());

    #[derive(Serialize, Deserialize)]
    struct Meta {
        #[serde(rename = "progressToken")]
        token: Id<'static>,
        data: Box<RawValue>,
    }
    let text = r#"{"progressToken":2.50,"data":{"b": [1, 2.0]}}"#;
    let meta: Meta = serde_json::from_str(text).unwrap();
    assert_eq!(meta.token.raw(), "2.50");
    assert_eq!(meta.data.get(), r#"{"b": [1, 2.0]}"#);
    assert_eq!(
        serde_json::to_string(&meta).unwrap(),
        r#"{"progressToken":2.50,"data":{"b": [1, 2.0]}}"#
    );
    // And through a `serde_json::Value`.
    let via_value: Meta =
        serde_json::from_value(json!({"progressToken": "t", "data": [1]})).unwrap();
    assert_eq!(
        (via_value.token, via_value.data.get()),
        (Id::string("t"), "[1]")
    );
}

#[test]
fn respond_typed_serializes_or_answers_internal_error() {
    let mut ep = Connection::new(Config::default(), Instant::ZERO);
    let mut wire = Vec::new();
    for id in [1, 2, 3] {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
        encode_frame(Framing::ContentLength, frame.as_bytes(), &mut wire);
    }
    ep.handle_input(&wire, Instant::ZERO)
        .expect("a byte-stream endpoint");
    let mut ids = Vec::new();
    while let Some(e) = ep.poll_event() {
        if let Event::Request { handle, .. } = e {
            ids.push(handle);
        }
    }
    assert_eq!(ep.running(), 3);
    ep.respond_typed(ids[0], Ok(&Sum { sum: 4 }));
    // A map with non-string keys does not serialize to JSON.
    let bad: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
    ep.respond_typed(ids[1], Ok(&bad));
    ep.respond_typed::<()>(ids[2], Err(&ErrorObject::new(5, "no".to_owned())));
    assert_eq!(ep.running(), 0, "each answered");
    // Answered once only: a second answer to a handle is ignored.
    ep.respond_typed(ids[0], Ok(&1));
    let out = sent(&mut ep);
    assert_eq!(out.len(), 3, "answered once only: {out:?}");
    assert_eq!(
        out[0],
        json!({"jsonrpc": "2.0", "result": {"sum": 4}, "id": 1})
    );
    assert_eq!(out[1]["error"]["code"], -32603);
    assert_eq!(out[2]["error"], json!({"code": 5, "message": "no"}));
}
