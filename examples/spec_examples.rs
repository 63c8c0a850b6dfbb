//! Runs every example of the JSON-RPC 2.0 specification through sansrpc's classifier and
//! writers, prints each request beside the answer sansrpc gives, and fails unless every
//! answer is the expected one, byte for byte.
//!
//! ```text
//! cargo run --example spec_examples
//! ```
//!
//! It serves the specification's example methods (`subtract`, `sum`, `get_data`; the
//! notifications `update`, `notify_hello`, `notify_sum`, `foobar`) with no runtime at all:
//! bytes in, bytes out.

use sansrpc::message::{write_error_response, write_result_response, BatchWriter};
use sansrpc::{Classified, Classifier, ErrorObject, Incoming, Limits, RawValue, Request};

/// Each example: what it shows, the request, and the answer sansrpc must give, byte for
/// byte (the specification's answer: its codes, ids and results; the error messages are
/// sansrpc's, which say more than the specification's). An empty answer: nothing is sent.
const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "positional parameters",
        r#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#,
        r#"{"jsonrpc":"2.0","result":19,"id":1}"#,
    ),
    (
        "positional parameters",
        r#"{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}"#,
        r#"{"jsonrpc":"2.0","result":-19,"id":2}"#,
    ),
    (
        "named parameters",
        r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#,
        r#"{"jsonrpc":"2.0","result":19,"id":3}"#,
    ),
    (
        "a notification",
        r#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#,
        r#""#,
    ),
    (
        "a non-existent method",
        r#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}"#,
    ),
    (
        "invalid JSON",
        r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
    ),
    (
        "an invalid Request object",
        r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: method must be a string"},"id":null}"#,
    ),
    (
        "a batch with invalid JSON",
        r#"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method"]"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
    ),
    (
        "an empty array",
        "[]",
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: empty batch"},"id":null}"#,
    ),
    (
        "an invalid batch, not empty",
        "[1]",
        r#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null}]"#,
    ),
    (
        "an invalid batch",
        "[1,2,3]",
        r#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null}]"#,
    ),
    (
        "a mixed batch",
        r#"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}, {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"}, {"foo": "boo"}, {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"}, {"jsonrpc": "2.0", "method": "get_data", "id": "9"}]"#,
        r#"[{"jsonrpc":"2.0","result":7,"id":"1"},{"jsonrpc":"2.0","result":19,"id":"2"},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: missing method"},"id":null},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"5"},{"jsonrpc":"2.0","result":["hello",5],"id":"9"}]"#,
    ),
    (
        "a batch of notifications",
        r#"[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]}, {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]"#,
        r#""#,
    ),
    (
        "ids echoed exactly",
        r#"{"jsonrpc":"2.0","method":"get_data","id":1.50}"#,
        r#"{"jsonrpc":"2.0","result":["hello",5],"id":1.50}"#,
    ),
    (
        "a big integer id",
        r#"{"jsonrpc":"2.0","method":"get_data","id":123456789012345678901234567890}"#,
        r#"{"jsonrpc":"2.0","result":["hello",5],"id":123456789012345678901234567890}"#,
    ),
];

fn main() {
    let limits = Limits::default();
    let mut classifier = Classifier::new(limits);
    let mut out = Vec::new();
    for (title, frame, expected) in EXAMPLES {
        out.clear();
        match classifier.classify(frame.as_bytes()) {
            Classified::Single(entry) => {
                respond(&entry, &mut out);
            }
            Classified::Batch(batch) => {
                let mut w = BatchWriter::start(&mut out);
                for entry in batch.filter(Incoming::needs_response) {
                    w.entry(&mut out);
                    respond(&entry, &mut out);
                }
                w.finish(&mut out);
            }
            Classified::Rejected(r) => r.write_response(&limits, &mut out),
        }
        println!("# {title}\n--> {frame}");
        if out.is_empty() {
            println!("<-- (nothing: notifications are never answered)\n");
        } else {
            println!("<-- {}\n", String::from_utf8_lossy(&out));
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            *expected,
            "the answer to {title}"
        );
    }
}

fn respond(entry: &Incoming<'_>, out: &mut Vec<u8>) {
    match entry {
        Incoming::Request(req) => match call(req) {
            Ok(result) => write_result_response(out, req.version, &req.id, &result),
            Err(e) => write_error_response(out, req.version, &req.id, &e),
        },
        Incoming::Invalid(invalid) => invalid.write_response(out),
        // Notifications run but are not answered; responses are for clients.
        Incoming::Notification(_) | Incoming::Response(_) | Incoming::BadResponse { .. } => {}
    }
}

fn call(req: &Request<'_>) -> Result<Box<RawValue>, ErrorObject<'static>> {
    let params = req.params.as_deref();
    let number =
        |n: i64| RawValue::from_string(n.to_string()).map_err(|_| ErrorObject::internal_error());
    match &*req.method {
        "subtract" => {
            #[derive(serde::Deserialize)]
            struct Named {
                minuend: i64,
                subtrahend: i64,
            }
            let p = params.ok_or_else(ErrorObject::invalid_params)?;
            let (a, b) = p
                .deserialize::<(i64, i64)>()
                .or_else(|_| p.deserialize::<Named>().map(|n| (n.minuend, n.subtrahend)))
                .map_err(|_| ErrorObject::invalid_params())?;
            number(a - b)
        }
        "sum" => {
            let p = params.ok_or_else(ErrorObject::invalid_params)?;
            let values: Vec<i64> = p.deserialize().map_err(|_| ErrorObject::invalid_params())?;
            number(values.iter().sum())
        }
        "get_data" => RawValue::from_string(r#"["hello",5]"#.to_string())
            .map_err(|_| ErrorObject::internal_error()),
        _ => Err(ErrorObject::method_not_found()),
    }
}
