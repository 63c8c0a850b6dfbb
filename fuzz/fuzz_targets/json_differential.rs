//! Differential test of the JSON scanner against serde_json: the same verdict on any text,
//! and the same characters out of any string (method names are decoded by the classifier).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::{Classified, Classifier, Incoming, RawValue};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = RawValue::from_json(text);
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(_) => assert!(ours.is_ok(), "serde_json accepts, we refuse: {text:?}"),
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
