//! Typed methods, the router, middleware and `rpc.discover`.

use std::sync::{Arc, Mutex};

use sansrpc::connection::{Config, RequestOptions, SendError};
use sansrpc::method::{decode_result, CallError, Method, NotificationMethod};
#[cfg(feature = "discover")]
use sansrpc::router::MethodDoc;
use sansrpc::router::{Call, Layer, Next, Outcome, RegisterError, Reply, Router};
use sansrpc::Connection;
use sansrpc::{ErrorObject, Id, Instant, RawValue, Request, Version};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Sub {
    minuend: i64,
    subtrahend: i64,
}

enum Subtract {}
impl Method for Subtract {
    const NAME: &'static str = "subtract";
    type Params = Sub;
    type Result = i64;
}

#[derive(Debug, Serialize, Deserialize)]
struct Greet {
    name: String,
    #[serde(default)]
    greeting: Option<String>,
}

enum Hello {}
impl Method for Hello {
    const NAME: &'static str = "hello";
    type Params = Greet;
    type Result = String;
}

enum Now {}
impl Method for Now {
    const NAME: &'static str = "now";
    type Params = ();
    type Result = u64;
}

enum Log {}
impl NotificationMethod for Log {
    const NAME: &'static str = "log";
    type Params = (String,);
}

fn router() -> Router {
    let mut r = Router::new();
    r.method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend))
        .unwrap();
    r.method::<Hello, _>(|p| {
        Ok(format!(
            "{}, {}",
            p.greeting.as_deref().unwrap_or("hello"),
            p.name
        ))
    })
    .unwrap();
    r.method::<Now, _>(|()| Ok(42)).unwrap();
    r
}

fn request(method: &str, params: Option<&str>) -> Request<'static> {
    Request {
        id: Id::number(1),
        method: method.to_owned().into(),
        params: params.map(|p| RawValue::from_string(p.to_owned()).unwrap().into()),
        version: Version::V2,
    }
}

fn dispatch(r: &Router, method: &str, params: Option<&str>) -> Result<Value, ErrorObject<'static>> {
    let mut reply = Reply::default();
    r.dispatch(&request(method, params), &mut reply);
    match reply.error() {
        Some(e) => Err(e.clone()),
        None => Ok(serde_json::from_str(reply.result_json().unwrap()).unwrap()),
    }
}

#[test]
fn params_by_position_or_by_name_decode_into_the_same_type() {
    let r = router();
    assert_eq!(dispatch(&r, "subtract", Some("[42, 23]")), Ok(json!(19)));
    assert_eq!(
        dispatch(&r, "subtract", Some(r#"{"subtrahend": 23, "minuend": 42}"#)),
        Ok(json!(19))
    );
}

#[test]
fn optional_params_may_be_absent() {
    let r = router();
    assert_eq!(
        dispatch(&r, "hello", Some(r#"{"name": "ada"}"#)),
        Ok(json!("hello, ada"))
    );
    assert_eq!(
        dispatch(&r, "hello", Some(r#"["ada"]"#)),
        Ok(json!("hello, ada"))
    );
    assert_eq!(
        dispatch(&r, "hello", Some(r#"["ada", "hi"]"#)),
        Ok(json!("hi, ada"))
    );
    assert_eq!(dispatch(&r, "now", None), Ok(json!(42)));
    assert_eq!(dispatch(&r, "now", Some("[]")), Ok(json!(42)));
}

#[test]
fn wrong_params_give_a_helpful_invalid_params() {
    let r = router();
    for (params, needle) in [
        (
            Some(r#"["a", 1]"#),
            // serde_json names the value; the core's own decoder only its type.
            if cfg!(feature = "serde-json-params") {
                "invalid type: string \"a\", expected i64"
            } else {
                "invalid type: string, expected i64"
            },
        ),
        (Some(r#"{"minuend": 1}"#), "missing field `subtrahend`"),
        (Some("[1, 2, 3]"), "expected at most 2 params, got 3"),
        // A required param left out is named, by position as by name.
        (Some("[1]"), "missing field `subtrahend`"),
        (Some("[]"), "missing field `minuend`"),
        (None, "missing field `minuend`"),
    ] {
        let e = dispatch(&r, "subtract", params).unwrap_err();
        assert_eq!(e.code, -32602, "{params:?}");
        assert!(e.message.starts_with("Invalid params: "), "{}", e.message);
        assert!(e.message.contains(needle), "{params:?}: {}", e.message);
        assert!(
            !e.message.contains("line"),
            "no position in a text the caller never saw: {}",
            e.message
        );
        assert!(!e.message.contains(".rs"), "no source paths: {}", e.message);
    }
}

#[test]
fn unknown_methods_and_registration_rules() {
    let mut r = router();
    assert_eq!(dispatch(&r, "nope", None).unwrap_err().code, -32601);
    assert_eq!(
        r.method::<Subtract, _>(|_| Ok(0)),
        Err(RegisterError::Duplicate("subtract".into()))
    );
    assert_eq!(
        r.raw_method("rpc.mine", |_, _| Ok(())),
        Err(RegisterError::Reserved("rpc.mine".into()))
    );
    let mut math = r.group("math");
    math.method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend))
        .unwrap();
    assert_eq!(
        math.method::<Subtract, _>(|_| Ok(0)),
        Err(RegisterError::Duplicate("math.subtract".into()))
    );
    assert_eq!(dispatch(&r, "math.subtract", Some("[3, 1]")), Ok(json!(2)));
    assert_eq!(
        r.method_names().collect::<Vec<_>>(),
        ["hello", "math.subtract", "now", "subtract"]
    );
}

#[test]
fn handler_errors_carry_code_message_and_data() {
    let mut r = Router::new();
    r.method::<Subtract, _>(|p| {
        if p.subtrahend == 0 {
            Err(ErrorObject::new(1100, "subtrahend must not be zero")
                .with_data(RawValue::from_string(r#"{"field":"subtrahend"}"#.into()).unwrap()))
        } else {
            Ok(p.minuend - p.subtrahend)
        }
    })
    .unwrap();
    let e = dispatch(&r, "subtract", Some("[1, 0]")).unwrap_err();
    assert_eq!((e.code, &*e.message), (1100, "subtrahend must not be zero"));
    assert_eq!(e.data.unwrap().get(), r#"{"field":"subtrahend"}"#);
}

/// With `std` only: catching a panic needs the standard library (without it a panicking
/// handler panics, as any code does there).
#[cfg(feature = "std")]
#[test]
fn a_panicking_handler_is_an_internal_error_that_shows_nothing() {
    let mut r = Router::new();
    r.raw_method("boom", |_, _| {
        panic!("secret detail at /home/me/src/lib.rs")
    })
    .unwrap();
    let e = dispatch(&r, "boom", None).unwrap_err();
    assert_eq!(e, ErrorObject::internal_error());
    assert!(e.data.is_none());
    // The router keeps working.
    r.raw_method("ok", |_, out| {
        out.extend_from_slice(b"true");
        Ok(())
    })
    .unwrap();
    assert_eq!(dispatch(&r, "ok", None), Ok(json!(true)));
}

#[test]
fn raw_handlers_get_raw_json_and_their_output_is_checked() {
    let mut r = Router::new();
    r.raw_method("echo", |params, out| {
        out.extend_from_slice(params.map_or("null", RawValue::get).as_bytes());
        Ok(())
    })
    .unwrap();
    r.raw_method("broken", |_, out| {
        out.extend_from_slice(b"{not json");
        Ok(())
    })
    .unwrap();
    assert_eq!(
        dispatch(&r, "echo", Some(r#"{"a":[1,{"b":null}]}"#)),
        Ok(json!({"a":[1,{"b":null}]}))
    );
    assert_eq!(dispatch(&r, "broken", None).unwrap_err().code, -32603);
}

/// Records the order layers run in, and answers early when told to.
struct Trace {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
}

impl Layer for Trace {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} in {}", self.name, call.method));
        let outcome = next.run(call, out);
        self.log.lock().unwrap().push(format!("{} out", self.name));
        outcome
    }
}

struct Auth;

impl Layer for Auth {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let token_ok = call.params.is_some_and(|p| p.get().contains("\"token\""));
        if token_ok {
            next.run(call, out)
        } else {
            // The same answer whether the method exists or not (seed 000 §18.5).
            Err(ErrorObject::new(1000, "Unauthorized"))
        }
    }
}

/// Allows `limit` calls, then answers -32002 Server busy.
struct RateLimit {
    left: Mutex<u32>,
}

impl Layer for RateLimit {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let mut left = self.left.lock().unwrap();
        if *left == 0 {
            return Err(ErrorObject::new(-32002, "Server busy"));
        }
        *left -= 1;
        drop(left);
        next.run(call, out)
    }
}

/// Observes timing with its own clock (here a counter standing in for one).
struct Timing {
    clock: Arc<Mutex<u64>>,
    spans: Arc<Mutex<Vec<(String, u64)>>>,
}

impl Layer for Timing {
    fn call(&self, call: &Call<'_>, out: &mut Vec<u8>, next: Next<'_>) -> Outcome {
        let start = *self.clock.lock().unwrap();
        let outcome = next.run(call, out);
        let end = *self.clock.lock().unwrap();
        self.spans
            .lock()
            .unwrap()
            .push((call.method.to_owned(), end - start));
        outcome
    }
}

#[test]
fn layers_run_in_order_in_and_reverse_out() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut r = router();
    r.layer(Trace {
        name: "outer",
        log: log.clone(),
    });
    r.layer(Trace {
        name: "inner",
        log: log.clone(),
    });
    assert_eq!(dispatch(&r, "subtract", Some("[2, 1]")), Ok(json!(1)));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "outer in subtract",
            "inner in subtract",
            "inner out",
            "outer out"
        ]
    );
    // Notifications go through the layers too.
    log.lock().unwrap().clear();
    r.notify(&sansrpc::Notification {
        method: "log".into(),
        params: None,
        version: Version::V2,
    });
    assert_eq!(log.lock().unwrap().len(), 4);
}

#[test]
fn layers_answer_early_and_hide_which_methods_exist() {
    let mut r = router();
    r.layer(Auth);
    let known = dispatch(&r, "subtract", Some("[2, 1]")).unwrap_err();
    let unknown = dispatch(&r, "no.such.method", Some("[2, 1]")).unwrap_err();
    assert_eq!(known, unknown);
    assert_eq!(known.code, 1000);
    assert_eq!(
        dispatch(
            &r,
            "subtract",
            Some(r#"{"minuend":2,"subtrahend":1,"token":"t"}"#)
        ),
        Ok(json!(1))
    );
}

#[test]
fn rate_limiting_layer_answers_server_busy() {
    let mut r = router();
    r.layer(RateLimit {
        left: Mutex::new(2),
    });
    assert!(dispatch(&r, "now", None).is_ok());
    assert!(dispatch(&r, "now", None).is_ok());
    assert_eq!(dispatch(&r, "now", None).unwrap_err().code, -32002);
}

#[test]
fn layers_observe_timing() {
    let clock = Arc::new(Mutex::new(0u64));
    let spans = Arc::new(Mutex::new(Vec::new()));
    let mut r = Router::new();
    let tick = clock.clone();
    r.method::<Now, _>(move |()| {
        *tick.lock().unwrap() += 7;
        Ok(1)
    })
    .unwrap();
    r.layer(Timing {
        clock,
        spans: spans.clone(),
    });
    dispatch(&r, "now", None).unwrap();
    assert_eq!(*spans.lock().unwrap(), [("now".to_owned(), 7)]);
}

#[cfg(feature = "discover")]
#[test]
fn rpc_discover_describes_the_registered_methods() {
    let mut r = router();
    r.info("calculator", "1.2.3");
    r.document(
        "subtract",
        MethodDoc::summary("a minus b")
            .params_schema(json!({"type":"object","properties":{"minuend":{"type":"integer"},"subtrahend":{"type":"integer"}}}))
            .result_schema(json!({"type":"integer"})),
    )
    .unwrap();
    assert_eq!(
        r.document("nope", MethodDoc::default()),
        Err(RegisterError::Unknown("nope".into()))
    );
    let doc = dispatch(&r, "rpc.discover", None).unwrap();
    assert_eq!(doc["openrpc"], "1.2.6");
    assert_eq!(doc["info"], json!({"title":"calculator","version":"1.2.3"}));
    let methods = doc["methods"].as_array().unwrap();
    assert_eq!(
        methods
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["hello", "now", "subtract"]
    );
    let sub = &methods[2];
    assert_eq!(sub["summary"], "a minus b");
    assert_eq!(
        sub["params"],
        json!([{"name":"minuend","schema":{"type":"integer"}},{"name":"subtrahend","schema":{"type":"integer"}}])
    );
    assert_eq!(
        sub["result"],
        json!({"name":"result","schema":{"type":"integer"}})
    );
    assert_eq!(methods[0]["params"][1]["name"], "greeting");
    // Extension providers answer `rpc.` names before user methods; switched off, system
    // names are unknown.
    r.extension("rpc.ping", |_, out| {
        out.extend_from_slice(b"\"pong\"");
        Ok(())
    })
    .unwrap();
    assert_eq!(
        r.extension("ping", |_, _| Ok(())),
        Err(RegisterError::NotReserved("ping".into()))
    );
    assert_eq!(
        r.extension("rpc.discover", |_, _| Ok(())),
        Err(RegisterError::Duplicate("rpc.discover".into()))
    );
    assert_eq!(dispatch(&r, "rpc.ping", None), Ok(json!("pong")));
    r.extensions(false);
    assert_eq!(dispatch(&r, "rpc.discover", None).unwrap_err().code, -32601);
    assert_eq!(dispatch(&r, "rpc.ping", None).unwrap_err().code, -32601);
}

#[test]
fn typed_calls_over_two_connections() {
    let server_router = router();
    let logged = Arc::new(Mutex::new(Vec::new()));
    let mut server_router = server_router;
    let sink = logged.clone();
    server_router
        .notification::<Log, _>(move |(line,)| sink.lock().unwrap().push(line))
        .unwrap();
    let mut client = Connection::new(Config::default(), Instant::ZERO);
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let now = Instant::ZERO;
    let sub = Sub {
        minuend: 5,
        subtrahend: 3,
    };
    client
        .call_typed::<Subtract>(1, &sub, RequestOptions::default(), now)
        .unwrap();
    client
        .notify_typed::<Log>(&("started".to_owned(),))
        .unwrap();
    let greet = Greet {
        name: "x".into(),
        greeting: None,
    };
    client
        .call_typed::<Hello>(2, &greet, RequestOptions::default(), now)
        .unwrap();
    let mut wire = Vec::new();
    while client.poll_transmit(&mut wire).is_some() {}
    server.handle_input(&wire, now).unwrap();
    let mut reply = Reply::default();
    server_router.serve(&mut server, &mut reply, |e| panic!("unexpected {e:?}"));
    assert_eq!(*logged.lock().unwrap(), ["started"]);
    wire.clear();
    while server.poll_transmit(&mut wire).is_some() {}
    client.handle_input(&wire, now).unwrap();
    let mut results = Vec::new();
    while let Some(event) = client.poll_event() {
        let sansrpc::Event::Answer { token, result, .. } = event else {
            panic!("{event:?}")
        };
        if token == 1 {
            results.push(format!("{:?}", decode_result::<Subtract>(result).unwrap()));
        } else {
            assert_eq!(token, 2);
            // "hello" answers a string; decoding it as Subtract's i64 is a typed error.
            assert!(matches!(
                decode_result::<Subtract>(result),
                Err(CallError::Decode(_))
            ));
            results.push("decode error".into());
        }
    }
    assert_eq!(results, ["2", "decode error"]);
}

#[test]
fn a_typed_answer_is_written_as_serialized_and_one_that_fails_is_an_internal_error() {
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let input = frame(r#"{"jsonrpc":"2.0","method":"a","id":1}"#)
        + &frame(r#"{"jsonrpc":"2.0","method":"b","id":2}"#);
    server
        .handle_input(input.as_bytes(), Instant::ZERO)
        .unwrap();
    let mut handles = Vec::new();
    while let Some(event) = server.poll_event() {
        if let sansrpc::Event::Request { handle, .. } = event {
            handles.push(handle);
        }
    }
    server.respond_typed(handles[0], Ok(&json!({"sum": [1, 2]})));
    // A map with non-string keys does not serialize to JSON.
    let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    server.respond_typed(handles[1], Ok(&bad));
    let mut out = Vec::new();
    while server.poll_transmit(&mut out).is_some() {}
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(r#"{"jsonrpc":"2.0","result":{"sum":[1,2]},"id":1}"#),
        "{out}"
    );
    assert!(
        out.contains(r#""code":-32603"#) && out.ends_with(r#""id":2}"#),
        "{out}"
    );
}

#[test]
fn typed_params_must_serialize_to_an_array_or_object() {
    enum Scalar {}
    impl Method for Scalar {
        const NAME: &'static str = "scalar";
        type Params = i64;
        type Result = ();
    }
    let mut conn = Connection::new(Config::default(), Instant::ZERO);
    assert_eq!(
        conn.call_typed::<Scalar>(1, &5, RequestOptions::default(), Instant::ZERO),
        Err(SendError::InvalidParams)
    );
    assert_eq!(conn.waiting_calls(), 0);
    assert_eq!(conn.unanswered_requests(), 0);
}

#[test]
fn a_subscriber_handles_pub_sub_deliveries_but_no_other_rpc_name() {
    let mut r = Router::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for name in sansrpc::router::PEER_NOTIFICATIONS {
        let seen = seen.clone();
        r.raw_notification(name, move |params| {
            seen.lock()
                .unwrap()
                .push(format!("{name} {}", params.map_or("", RawValue::get)));
        })
        .unwrap();
    }
    let err = r.raw_method("rpc.notification", |_, _| Ok(())).unwrap_err();
    assert!(matches!(
        err,
        RegisterError::Duplicate(_) | RegisterError::Reserved(_)
    ));
    assert!(matches!(
        r.raw_notification("rpc.other", |_| {}),
        Err(RegisterError::Reserved(_))
    ));
    let params = r#"{"topic":"a.b","data":1}"#;
    r.notify(&sansrpc::Notification {
        method: "rpc.notification".into(),
        params: Some(RawValue::from_string(params.to_owned()).unwrap().into()),
        version: Version::V2,
    });
    assert_eq!(
        *seen.lock().unwrap(),
        [format!("rpc.notification {params}")]
    );
    // Sent as a request, a delivery name has no answer to give.
    let answer = dispatch(&r, "rpc.notification", Some(params));
    assert_eq!(answer.unwrap_err().code, -32601);
    assert_eq!(dispatch(&r, "rpc.other", None).unwrap_err().code, -32601);
}

#[test]
fn every_registered_name_is_found_among_names_of_the_same_length_and_prefix() {
    // Names as an LSP server has them: long shared prefixes, many of the same length, and
    // names that differ only in their last byte.
    let mut names: Vec<String> = Vec::new();
    for prefix in ["textDocument/", "workspace/", "window/", "$/", ""] {
        for stem in [
            "didOpen", "didClose", "hover", "hoven", "a", "b", "ab", "ba",
        ] {
            names.push(format!("{prefix}{stem}"));
        }
    }
    let mut r = Router::new();
    // Registered in an order that is neither sorted by name nor by length.
    for (i, name) in names.iter().enumerate().rev() {
        r.raw_method(name, move |_, out| {
            out.extend_from_slice(i.to_string().as_bytes());
            Ok(())
        })
        .unwrap();
    }
    for (i, name) in names.iter().enumerate() {
        assert_eq!(dispatch(&r, name, None).unwrap(), json!(i), "{name}");
    }
    for missing in [
        "textDocument/hovez",
        "textDocument/",
        "hove",
        "c",
        "workspace/didopen",
        "",
    ] {
        assert_eq!(
            dispatch(&r, missing, None).unwrap_err().code,
            -32601,
            "{missing:?}"
        );
    }
    assert!(matches!(
        r.raw_method("window/hoven", |_, _| Ok(())),
        Err(RegisterError::Duplicate(_))
    ));
    // Listed in alphabetical order, whatever the order of registration and lookup.
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(r.method_names().collect::<Vec<_>>(), sorted);
}

/// Answers with a result of its own, as a caching layer would: `body` as it is.
struct Answering {
    body: &'static [u8],
}

impl Layer for Answering {
    fn call(&self, _call: &Call<'_>, out: &mut Vec<u8>, _next: Next<'_>) -> Outcome {
        out.extend_from_slice(self.body);
        Ok(())
    }
}

/// The answer a server sends for one `subtract` request through `router`.
fn answer_through(router: &Router) -> String {
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    server
        .handle_input(frame.as_bytes(), Instant::ZERO)
        .unwrap();
    let mut reply = Reply::default();
    while let Some(event) = server.poll_event() {
        if let sansrpc::Event::Request { handle, request } = event {
            router.dispatch(&request, &mut reply);
            reply.answer(&mut server, handle);
        }
    }
    let mut out = Vec::new();
    while server.poll_transmit(&mut out).is_some() {}
    let out = String::from_utf8(out).unwrap();
    out[out.find("\r\n\r\n").unwrap() + 4..].to_owned()
}

#[test]
fn a_result_a_layer_writes_is_checked_as_text_and_a_handlers_is_sent_as_written() {
    let mut plain = Router::new();
    plain
        .method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend))
        .unwrap();
    assert_eq!(
        answer_through(&plain),
        r#"{"jsonrpc":"2.0","result":19,"id":1}"#
    );
    for (body, sent) in [
        (&b"\"cached\""[..], "\"cached\""),
        (&b"\xff\xfe"[..], "null"),
    ] {
        let mut layered = Router::new();
        layered
            .method::<Subtract, _>(|p| Ok(p.minuend - p.subtrahend))
            .unwrap();
        layered.layer(Answering { body });
        let expected = format!(r#"{{"jsonrpc":"2.0","result":{sent},"id":1}}"#);
        assert_eq!(answer_through(&layered), expected);
    }
}

/// Without the `discover` feature the router has no built-in `rpc.discover`: the name is
/// unknown, and an application may provide it as an extension of its own.
#[cfg(not(feature = "discover"))]
#[test]
fn without_the_discover_feature_rpc_discover_is_unknown_and_free() {
    let mut r = router();
    assert_eq!(dispatch(&r, "rpc.discover", None).unwrap_err().code, -32601);
    r.extension("rpc.discover", |_, out| {
        out.extend_from_slice(b"{}");
        Ok(())
    })
    .unwrap();
    assert_eq!(dispatch(&r, "rpc.discover", None), Ok(json!({})));
}

/// A staged method: its first part runs at `stage` (when a driver hands the request out),
/// the rest at `run_staged`; `dispatch` runs both at once; its output is checked like a raw
/// method's; with a layer, `stage` declines and `dispatch` goes through the layer.
#[test]
fn a_staged_method_runs_its_parts_when_handed_out_and_when_run() {
    let state = Arc::new(Mutex::new(1));
    let mut r = router();
    let seen = state.clone();
    r.raw_staged_method("staged", move |params| {
        // What the first part reads is what it saw when staged.
        let at_stage = *seen.lock().unwrap();
        let params = params.map(|p| p.get().to_owned());
        Box::new(move |out: &mut Vec<u8>| {
            let params = params.unwrap_or_default();
            out.extend_from_slice(format!("[{at_stage}, {params}]").as_bytes());
            Ok(())
        })
    })
    .unwrap();
    r.raw_staged_method("broken", |_| {
        Box::new(|out: &mut Vec<u8>| {
            out.extend_from_slice(b"{not json");
            Ok(())
        })
    })
    .unwrap();

    let staged = r
        .stage(&request("staged", Some("\"x\"")))
        .expect("a staged method");
    *state.lock().unwrap() = 2; // A notification handled after the request was handed out.
    let mut reply = Reply::default();
    r.run_staged(staged, &mut reply);
    assert_eq!(reply.result_json(), Some("[1, \"x\"]"));
    // Dispatched at once: both parts now.
    assert_eq!(dispatch(&r, "staged", Some("3")), Ok(json!([2, 3])));
    // Not a staged method: none.
    assert!(r.stage(&request("subtract", Some("[2, 1]"))).is_none());
    // Output that is not JSON is answered -32603, as from a raw method.
    let broken = r.stage(&request("broken", None)).unwrap();
    r.run_staged(broken, &mut reply);
    assert_eq!(reply.error().map(|e| e.code), Some(-32603));
    assert_eq!(dispatch(&r, "broken", None).unwrap_err().code, -32603);

    // With a layer, the whole call goes through it: `stage` declines.
    let log = Arc::new(Mutex::new(Vec::new()));
    r.layer(Trace {
        name: "outer",
        log: log.clone(),
    });
    assert!(r.stage(&request("staged", None)).is_none());
    assert_eq!(dispatch(&r, "staged", Some("4")), Ok(json!([2, 4])));
    assert_eq!(log.lock().unwrap().len(), 2);
}
