//! The JSON shapes against a2a-sdk 1.3.0 (PyPI), both ways: a2a-sdk and everything it
//! needs, installed with pip from `interop/a2a-python/requirements.txt` (every package
//! pinned) into the target folder, then `interop/a2a-python/shapes.py`:
//!
//! - `emit`: a sample of every A2A type built with the SDK's own types (every field set
//!   somewhere) and written as its server writes them, which we decode and encode again;
//!   the SDK then reads our encoding strictly (an unknown member or a wrong type fails) and
//!   finds it equal to its own sample;
//! - our own samples (what the task machine and the echo agent put on the wire, and values
//!   at ProtoJSON's edges) read strictly by the SDK, written back, and decoded by us into
//!   the same values;
//! - the JSON-RPC error object of every A2A error as the SDK's server writes it, read by
//!   us as the same error; ours read by the SDK's client as the same exception with the
//!   same metadata.

#[path = "../../tests/support/interop.rs"]
mod interop;
mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::shapes::{class_of, normalized, our_errors, own_samples, read_error, reencode};

fn shapes(site: &std::path::Path, args: &[&str]) -> Value {
    let script = interop::interop(env!("CARGO_MANIFEST_DIR"), "a2a-python").join("shapes.py");
    let out = interop::output_within(
        Command::new("python3")
            .arg(script)
            .args(args)
            .env("PYTHONPATH", site)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        interop::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "shapes.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a2a_sdk_reads_what_we_write_and_we_read_what_it_writes() {
    let site = interop::pip_install(env!("CARGO_MANIFEST_DIR"), "a2a-python");
    let emitted = shapes(&site, &["emit"]);

    // Theirs, decoded and written again by us.
    let mut samples = Vec::new();
    for sample in emitted["samples"].as_array().unwrap() {
        let (name, ty) = (
            sample["name"].as_str().unwrap(),
            sample["type"].as_str().unwrap(),
        );
        let ours = reencode(ty, &sample["json"]).unwrap_or_else(|e| panic!("{name} ({ty}): {e}"));
        samples.push(json!({"name": name, "type": ty, "json": ours}));
    }
    assert!(samples.len() >= 30, "{} samples", samples.len());
    // Ours.
    let own = own_samples();
    for (name, ty, value) in &own {
        samples.push(json!({"name": name, "type": ty, "json": value}));
    }
    let input = json!({"samples": samples, "errors": our_errors()});
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("a2a-python-shapes-{}.json", std::process::id()));
    std::fs::write(&path, input.to_string()).unwrap();
    let checked = shapes(&site, &["check", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();

    let results = checked["samples"].as_array().unwrap();
    assert_eq!(results.len(), samples.len());
    let mut compared = 0;
    for (result, sample) in results.iter().zip(&samples) {
        let name = sample["name"].as_str().unwrap();
        assert_eq!(
            result["ok"], true,
            "a2a-sdk refused our {name}: {}",
            result["error"]
        );
        if let Some(equal) = result.get("equal") {
            assert_eq!(
                equal, true,
                "our {name} is not the SDK's: {}",
                sample["json"]
            );
            compared += 1;
        } else {
            // Ours: what the SDK wrote back decodes to what we sent.
            let ty = sample["type"].as_str().unwrap();
            let back = reencode(ty, &result["json"]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(normalized(&back), normalized(&sample["json"]), "{name}");
        }
    }
    assert_eq!(compared, samples.len() - own.len());

    // Errors, theirs read by us.
    let errors = emitted["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 13);
    for e in errors {
        let class = e["class"].as_str().unwrap();
        let ours = read_error(&e["error"]).unwrap_or_else(|| panic!("{class}: not an A2A error"));
        assert_eq!(class_of(ours.kind()), class);
        assert_eq!(ours.message(), "why");
        assert_eq!(ours.metadata()["taskId"], "t-1");
    }
    // Ours read by their client.
    for e in checked["errors"].as_array().unwrap() {
        let kind = e["kind"].as_str().unwrap();
        assert_eq!(e["class"], format!("{kind}Error"));
        assert_eq!(e["message"], "ours");
        assert_eq!(e["data"], json!({"taskId": "t-9"}), "{kind}");
    }
}
