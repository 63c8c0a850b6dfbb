//! Classifies arbitrary bytes under default and tiny limits. Checks: no panic; every answer
//! we would write is valid JSON; a frame is refused as a parse error exactly when serde_json
//! also refuses it (numbers beyond f64, which JSON allows, aside); the limits hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sansrpc::message::{write_error_response, BatchWriter, Rejection};
use sansrpc::{Classified, Classifier, ErrorObject, Incoming, Limits};

/// serde_json's verdict on a JSON text, decoded into a `Value` so that strings are checked
/// for UTF-8 (serde_json skips that when ignoring a value).
fn serde_verdict(data: &[u8]) -> Option<bool> {
    match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(_) => Some(true),
        // serde_json stops at depth 128, at f64 overflow and at lone surrogates in escapes,
        // which the JSON grammar allows; no verdict on those.
        Err(e) => {
            let msg = e.to_string();
            let no_verdict = [
                "number out of range",
                "recursion limit exceeded",
                "surrogate",
                "end of hex escape",
            ];
            // An object keyed `$serde_json::private::RawValue` is serde_json's own raw-value
            // marker, read as that and not as JSON.
            let marker = has_serde_marker(data);
            if marker || no_verdict.iter().any(|m| msg.contains(m)) {
                None
            } else {
                Some(false)
            }
        }
    }
}

fn has_serde_marker(data: &[u8]) -> bool {
    const MARKER: &[u8] = b"$serde_json::private::";
    data.windows(MARKER.len()).any(|w| w == MARKER)
}

fn answer(limits: Limits, data: &[u8]) -> Option<Rejection> {
    let mut c = Classifier::new(limits);
    let mut out = Vec::new();
    let rejection = match c.classify(data) {
        Classified::Single(entry) => {
            respond(&entry, &mut out);
            None
        }
        Classified::Batch(batch) => {
            assert!(batch.len() <= limits.max_batch_len);
            let mut w = BatchWriter::start(&mut out);
            for entry in batch {
                if entry.needs_response() {
                    w.entry(&mut out);
                    respond(&entry, &mut out);
                }
            }
            w.finish(&mut out);
            None
        }
        Classified::Rejected(r) => {
            r.write_response(&limits, &mut out);
            Some(r)
        }
    };
    if !out.is_empty() {
        assert!(
            serde_json::from_slice::<serde_json::Value>(&out).is_ok()
                || serde_verdict(&out).is_none(),
            "wrote invalid JSON: {}",
            String::from_utf8_lossy(&out)
        );
    }
    rejection
}

fn respond(entry: &Incoming<'_>, out: &mut Vec<u8>) {
    match entry {
        Incoming::Request(req) => {
            assert!(req.id.raw().len() <= 256);
            // Echo the method back as the error message: exercises escaping of decoded text.
            write_error_response(
                out,
                req.version,
                &req.id,
                &ErrorObject::new(-32601, req.method.clone()),
            );
        }
        Incoming::Invalid(inv) => inv.write_response(out),
        Incoming::Notification(n) => {
            let _ = n.params.as_ref().map(|p| p.get().len());
        }
        Incoming::Response(r) => {
            let _ = r.result.as_ref().map(|v| v.get().len());
        }
        Incoming::BadResponse { .. } => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let parse_error = answer(Limits::default(), data) == Some(Rejection::Parse);
    if let Some(accepted) = serde_verdict(data) {
        assert_eq!(
            !parse_error,
            accepted,
            "parse verdict differs from serde_json on {:?}",
            String::from_utf8_lossy(data)
        );
    }
    let mut tiny = Limits::default();
    tiny.max_depth = 3;
    tiny.max_batch_len = 2;
    tiny.max_id_len = 4;
    tiny.max_frame_bytes = 512;
    tiny.accept_v1 = data.first().is_some_and(|b| b & 1 == 1);
    answer(tiny, data);
});
