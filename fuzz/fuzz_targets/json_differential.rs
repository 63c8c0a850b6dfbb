//! Differential test of the JSON scanner against serde_json: the same verdict on any text,
//! and the same characters out of any string (method names are decoded by the classifier);
//! and of the core's own decoder (`sansrpc::de`, typed params without serde_json): the same
//! value out of any text serde_json reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::{Classified, Classifier, Incoming, RawValue};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = RawValue::from_json(text);
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(theirs) => {
            assert!(ours.is_ok(), "serde_json accepts, we refuse: {text:?}");
            if !text.contains("$serde_json::private::") {
                let decoded = sansrpc::de::from_str::<serde_json::Value>(text);
                let decoded = decoded.unwrap_or_else(|e| panic!("sansrpc::de: {e}: {text:?}"));
                assert!(same(&decoded, &theirs), "{decoded} != {theirs}: {text:?}");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            // No verdict where serde_json is stricter than the JSON grammar: numbers beyond
            // f64, depth beyond 128, unpaired surrogates in \u escapes.
            let no_verdict = [
                "number out of range",
                "recursion limit exceeded",
                "surrogate",
                "end of hex escape",
            ];
            // serde_json's Value reads an object keyed `$serde_json::private::RawValue` as
            // its own raw-value marker, not as JSON: no verdict on its refusal there.
            let marker = text.contains("$serde_json::private::");
            if !marker && !no_verdict.iter().any(|m| msg.contains(m)) {
                assert!(
                    ours.is_err(),
                    "serde_json refuses ({msg}), we accept: {text:?}"
                );
            }
        }
    }
    // Strings: put the text in as a method name, compare the decoding with serde_json's.
    if text.starts_with('"') {
        if let Ok(expected) =
            serde_json::from_str::<String>(text.trim_matches([' ', '\t', '\n', '\r']))
        {
            let frame = format!(r#"{{"jsonrpc":"2.0","method":{text},"id":1}}"#);
            let mut c = Classifier::default();
            match c.classify(frame.as_bytes()) {
                Classified::Single(Incoming::Request(req)) => assert_eq!(req.method, expected),
                other => panic!("{frame:?} -> {other:?}"),
            }
        }
    }
});

/// Equal values, floats within a few units in the last place (serde_json's default float
/// parser is not always correctly rounded; `core`'s is).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
        }
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Object(x), Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
