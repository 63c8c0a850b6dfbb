//! The JSON shapes against @a2a-js/sdk 1.3.0 (npm), both ways: the SDK installed with
//! `npm ci` from `interop/a2a-js/package-lock.json`, then `interop/a2a-js/shapes.mjs`:
//!
//! - `emit`: a sample of every A2A type as the SDK writes it (every field set somewhere),
//!   which we decode and encode again; the SDK reads our encoding with its own `fromJSON`
//!   and writes it with `toJSON` (a member it does not know is dropped on the way), and
//!   the result decodes to the same values as its own sample;
//! - our own samples (the task machine's and the echo agent's output, ProtoJSON's edges)
//!   through the SDK the same way, decoding to the same values;
//! - the JSON-RPC error objects of the SDK's server read by us as the same errors; ours
//!   read by its client as the error it raises for that code.
//!
//! One difference is asserted rather than hidden: the SDK reads a part's `"data": null`
//! (a JSON null, which ProtoJSON and a2a-sdk keep as data) as a part with no content.

#[path = "../../tests/support/interop.rs"]
mod interop;
mod support;

use std::process::Command;

use sansrpc_a2a::ErrorKind;
use serde_json::{json, Value};
use support::shapes::{normalized, our_errors, own_samples, read_error, reencode};

fn shapes(args: &[&str]) -> Value {
    let dir = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-js");
    interop::npm_ci(&dir, "@a2a-js/sdk");
    let out = interop::output_within(
        Command::new("node").arg(dir.join("shapes.mjs")).args(args),
        interop::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "shapes.mjs {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `json` as @a2a-js/sdk reads it: parts whose data is `null` lose their content.
fn as_js_reads_it(json: &Value) -> Value {
    match json {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("parts", Value::Array(parts)) => {
                        let parts = parts
                            .iter()
                            .map(|part| {
                                let mut part = as_js_reads_it(part);
                                if part.get("data").is_some_and(Value::is_null) {
                                    part.as_object_mut().unwrap().remove("data");
                                }
                                part
                            })
                            .collect();
                        (k.clone(), Value::Array(parts))
                    }
                    _ => (k.clone(), as_js_reads_it(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(as_js_reads_it).collect()),
        other => other.clone(),
    }
}

/// Decoded by us, written by us, numbers as floats: equal when the values are.
fn value_of(ty: &str, json: &Value, what: &str) -> Value {
    normalized(&reencode(ty, json).unwrap_or_else(|e| panic!("{what}: {e}: {json}")))
}

#[test]
fn a2a_js_reads_what_we_write_and_we_read_what_it_writes() {
    let emitted = shapes(&["emit"]);
    let mut samples = Vec::new();
    let mut theirs = Vec::new();
    for sample in emitted["samples"].as_array().unwrap() {
        let (name, ty) = (
            sample["name"].as_str().unwrap(),
            sample["type"].as_str().unwrap(),
        );
        let ours = reencode(ty, &sample["json"]).unwrap_or_else(|e| panic!("{name} ({ty}): {e}"));
        samples.push(json!({"name": name, "type": ty, "json": ours}));
        theirs.push(sample["json"].clone());
    }
    assert!(samples.len() >= 27, "{} samples", samples.len());
    let own = own_samples();
    let mut null_data = 0;
    for (name, ty, value) in &own {
        samples.push(json!({"name": name, "type": ty, "json": value}));
        if as_js_reads_it(value) != *value {
            null_data += 1;
        }
    }
    assert!(
        null_data > 0,
        "no sample has null data: the difference is not exercised"
    );
    let input = json!({"samples": samples, "errors": our_errors()});
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("a2a-js-shapes-{}.json", std::process::id()));
    std::fs::write(&path, input.to_string()).unwrap();
    let checked = shapes(&["check", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();

    let results = checked["samples"].as_array().unwrap();
    assert_eq!(results.len(), samples.len());
    for (i, (result, sample)) in results.iter().zip(&samples).enumerate() {
        let (name, ty) = (
            sample["name"].as_str().unwrap(),
            sample["type"].as_str().unwrap(),
        );
        assert_eq!(
            result["ok"], true,
            "@a2a-js/sdk failed on our {name}: {}",
            result["error"]
        );
        match theirs.get(i) {
            // Theirs: what the SDK made of our encoding is what it wrote in the first place.
            Some(original) => {
                assert_eq!(
                    value_of(ty, &result["json"], name),
                    value_of(ty, original, name),
                    "{name}"
                )
            }
            // Ours: the same values...
            None if as_js_reads_it(&sample["json"]) == sample["json"] => assert_eq!(
                value_of(ty, &result["json"], name),
                value_of(ty, &sample["json"], name),
                "{name}"
            ),
            // ...but for the known difference, which leaves a part we do not decode (it
            // has no content): compared as JSON.
            None => assert_eq!(
                normalized(&result["json"]),
                normalized(&as_js_reads_it(&sample["json"])),
                "{name}"
            ),
        }
    }

    // Their server's errors, read by us.
    let errors = emitted["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 10);
    for e in errors {
        let class = e["class"].as_str().unwrap();
        let ours = read_error(&e["error"]).unwrap_or_else(|| panic!("{class}: not an A2A error"));
        let want = match class {
            "RequestMalformedError" => ErrorKind::InvalidParams,
            _ => ErrorKind::ALL
                .into_iter()
                .find(|k| format!("{k:?}Error") == class)
                .unwrap_or_else(|| panic!("{class}")),
        };
        assert_eq!(ours.kind(), want);
        assert_eq!(ours.message(), "why");
        assert_eq!(ours.metadata()["taskId"], "t-1");
    }
    // Ours, read by their client: by code, so JSON-RPC's own errors are "malformed
    // request" (-32602, -32600, -32601) or a transport error (-32603).
    for e in checked["errors"].as_array().unwrap() {
        let kind = e["kind"].as_str().unwrap();
        let want = match kind {
            "InvalidParams" | "InvalidRequest" | "MethodNotFound" => {
                "RequestMalformedError".to_owned()
            }
            "Internal" => "JsonRpcTransportError".to_owned(),
            _ => format!("{kind}Error"),
        };
        assert_eq!(e["class"], want.as_str(), "{kind}");
        if kind != "Internal" {
            assert_eq!(e["message"], "ours");
            assert_eq!(e["data"][0]["metadata"]["taskId"], "t-9", "{kind}");
        }
    }
}
