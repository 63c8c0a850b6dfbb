//! A tiny server over the classifier and the writers, answering the specification's example
//! methods, so tests can compare whole answers with the specification's.
#![allow(dead_code)]

use sansrpc::message::{write_error_response, write_result_response, BatchWriter};
use sansrpc::{Classified, Classifier, ErrorObject, Incoming, Limits, RawValue, Request};
use serde_json::Value;

/// Answers one request the way the specification's examples do.
pub fn answer(req: &Request<'_>, out: &mut Vec<u8>) {
    let params: Value = req
        .params
        .as_ref()
        .map(|p| serde_json::from_str(p.get()).unwrap())
        .unwrap_or(Value::Null);
    let result: Result<String, ErrorObject<'static>> = match &*req.method {
        "subtract" => {
            let (a, b) = match &params {
                Value::Array(a) => (a[0].as_i64().unwrap(), a[1].as_i64().unwrap()),
                Value::Object(o) => (
                    o["minuend"].as_i64().unwrap(),
                    o["subtrahend"].as_i64().unwrap(),
                ),
                _ => panic!("bad params"),
            };
            Ok((a - b).to_string())
        }
        "sum" => Ok(params
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .sum::<i64>()
            .to_string()),
        "get_data" => Ok(r#"["hello",5]"#.to_string()),
        _ => Err(ErrorObject::method_not_found()),
    };
    match result {
        Ok(r) => write_result_response(out, req.version, &req.id, RawValue::from_json(&r).unwrap()),
        Err(e) => write_error_response(out, req.version, &req.id, &e),
    }
}

/// Answers one entry; returns false when the entry gets no answer.
pub fn answer_entry(entry: &Incoming<'_>, out: &mut Vec<u8>) -> bool {
    match entry {
        Incoming::Request(req) => {
            answer(req, out);
            true
        }
        Incoming::Invalid(inv) => {
            inv.write_response(out);
            true
        }
        _ => false,
    }
}

/// Serves one frame with the given limits; `None` when nothing is to be sent back.
pub fn serve_with(limits: Limits, frame: &[u8]) -> Option<Value> {
    let mut classifier = Classifier::new(limits);
    let mut out = Vec::new();
    let wrote = match classifier.classify(frame) {
        Classified::Single(entry) => answer_entry(&entry, &mut out),
        Classified::Batch(batch) => {
            let mut w = BatchWriter::start(&mut out);
            for entry in batch {
                if entry.needs_response() {
                    w.entry(&mut out);
                    answer_entry(&entry, &mut out);
                }
            }
            w.finish(&mut out)
        }
        Classified::Rejected(r) => {
            r.write_response(&limits, &mut out);
            true
        }
    };
    assert_eq!(wrote, !out.is_empty());
    wrote.then(|| {
        serde_json::from_slice(&out).unwrap_or_else(|e| {
            panic!(
                "we wrote invalid JSON {e}: {}",
                String::from_utf8_lossy(&out)
            )
        })
    })
}

/// Serves one frame with the default limits.
pub fn serve(frame: &str) -> Option<Value> {
    serve_with(Limits::default(), frame.as_bytes())
}

/// The `error.code` of a single error response.
pub fn code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {v}"))
}

/// Sorts a batch answer by id text so comparisons ignore order (the spec allows any order).
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Array(mut a) => {
            a.sort_by_key(|e| e["id"].to_string());
            Value::Array(a)
        }
        other => other,
    }
}
