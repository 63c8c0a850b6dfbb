//! Message-level benchmarks: each workload is measured beside a serde_json floor, in the
//! same run and the same criterion group.
//!
//! The floor is what a minimal hand-rolled server built on serde_json does for the same
//! frame: `serde_json::from_slice` into a borrowed typed envelope, the application work,
//! then `serde_json::to_writer` of the response into a reused `Vec<u8>`. "Ours" is
//! `Classifier::classify` (one classifier, reused) → the application work → the crate's
//! writers into a reused `Vec<u8>`. The application work is the same function on both sides.
//!
//! Before measuring, every workload checks that both sides write byte-identical answers.

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use sansrpc::message::{write_result_response, BatchWriter};
use sansrpc::{Classified, Classifier, Incoming, RawValue};

#[path = "common/floor.rs"]
mod floor;

use floor::{Envelope, ResultResponse};

// ---------------------------------------------------------------------------------------
// Application work, shared by both sides.

/// `add`: decode `[a, b]` and sum. Both sides decode with serde_json from the params text.
#[inline(never)]
fn add_params(params: &str) -> i64 {
    let (a, b): (i64, i64) = serde_json::from_str(params).expect("add params");
    a + b
}

/// Formats `n` into `buf`; returns the decimal text.
#[inline]
fn fmt_i64(buf: &mut [u8; 20], n: i64) -> &str {
    let mut i = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    // Only ASCII digits and '-' were written.
    std::str::from_utf8(&buf[i..]).expect("ascii")
}

// ---------------------------------------------------------------------------------------
// The two servers.

/// Floor: one request answered with the sum of its params.
#[inline(never)]
fn floor_add(frame: &[u8], out: &mut Vec<u8>) {
    let env: Envelope<'_> = serde_json::from_slice(frame).expect("floor parse");
    assert!(env.jsonrpc == "2.0");
    let id = env.id.expect("a request");
    let sum = match env.method {
        "add" => add_params(env.params.expect("params").get()),
        _ => unreachable!(),
    };
    out.clear();
    serde_json::to_writer(
        &mut *out,
        &ResultResponse {
            jsonrpc: "2.0",
            result: sum,
            id,
        },
    )
    .expect("write");
}

/// Ours: one request answered with the sum of its params.
#[inline(never)]
fn ours_add(classifier: &mut Classifier, frame: &[u8], out: &mut Vec<u8>) {
    match classifier.classify(frame) {
        Classified::Single(Incoming::Request(req)) => {
            let sum = match &*req.method {
                "add" => add_sum(req.params.as_deref()),
                _ => unreachable!(),
            };
            out.clear();
            let mut buf = [0u8; 20];
            let result = RawValue::from_json(fmt_i64(&mut buf, sum)).expect("a number");
            write_result_response(out, req.version, &req.id, result);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[inline]
fn add_sum(params: Option<&RawValue>) -> i64 {
    let (a, b) = params
        .expect("params")
        .deserialize::<(i64, i64)>()
        .expect("add params");
    a + b
}

/// Floor: a batch of `add` requests answered with one array.
#[inline(never)]
fn floor_batch(frame: &[u8], out: &mut Vec<u8>) {
    let envs: Vec<Envelope<'_>> = serde_json::from_slice(frame).expect("floor parse");
    out.clear();
    out.push(b'[');
    for (i, env) in envs.iter().enumerate() {
        assert!(env.jsonrpc == "2.0");
        let id = env.id.expect("a request");
        let sum = match env.method {
            "add" => add_params(env.params.expect("params").get()),
            _ => unreachable!(),
        };
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(
            &mut *out,
            &ResultResponse {
                jsonrpc: "2.0",
                result: sum,
                id,
            },
        )
        .expect("write");
    }
    out.push(b']');
}

/// Ours: a batch of `add` requests answered with one array.
#[inline(never)]
fn ours_batch(classifier: &mut Classifier, frame: &[u8], out: &mut Vec<u8>) {
    match classifier.classify(frame) {
        Classified::Batch(batch) => {
            out.clear();
            let mut w = BatchWriter::start(out);
            for entry in batch {
                match entry {
                    Incoming::Request(req) => {
                        let sum = match &*req.method {
                            "add" => add_sum(req.params.as_deref()),
                            _ => unreachable!(),
                        };
                        w.entry(out);
                        let mut buf = [0u8; 20];
                        let result = RawValue::from_json(fmt_i64(&mut buf, sum)).expect("a number");
                        write_result_response(out, req.version, &req.id, result);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            w.finish(out);
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Floor: an LSP `didOpen`-like request with large params, answered with `null`.
#[inline(never)]
fn floor_did_open(frame: &[u8], out: &mut Vec<u8>) {
    let env: Envelope<'_> = serde_json::from_slice(frame).expect("floor parse");
    assert!(env.jsonrpc == "2.0");
    let id = env.id.expect("a request");
    match env.method {
        "textDocument/didOpen" => black_box(env.params),
        _ => unreachable!(),
    };
    out.clear();
    serde_json::to_writer(
        &mut *out,
        &ResultResponse {
            jsonrpc: "2.0",
            result: (),
            id,
        },
    )
    .expect("write");
}

/// Ours: an LSP `didOpen`-like request with large params, answered with `null`.
#[inline(never)]
fn ours_did_open(classifier: &mut Classifier, frame: &[u8], out: &mut Vec<u8>) {
    match classifier.classify(frame) {
        Classified::Single(Incoming::Request(req)) => {
            match &*req.method {
                "textDocument/didOpen" => black_box(&req.params),
                _ => unreachable!(),
            };
            out.clear();
            write_result_response(out, req.version, &req.id, RawValue::NULL);
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Floor: a notification; the params are decoded, nothing is written.
#[inline(never)]
fn floor_notify(frame: &[u8]) -> i64 {
    let env: Envelope<'_> = serde_json::from_slice(frame).expect("floor parse");
    assert!(env.jsonrpc == "2.0");
    assert!(env.id.is_none(), "a notification");
    match env.method {
        "notify" => add_params(env.params.expect("params").get()),
        _ => unreachable!(),
    }
}

/// Ours: a notification; the params are decoded, nothing is written.
#[inline(never)]
fn ours_notify(classifier: &mut Classifier, frame: &[u8]) -> i64 {
    match classifier.classify(frame) {
        Classified::Single(Incoming::Notification(n)) => match &*n.method {
            "notify" => add_sum(n.params.as_deref()),
            _ => unreachable!(),
        },
        other => panic!("unexpected {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Frames.

fn add_request(id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{id}}}"#)
}

fn batch_frame(n: usize) -> String {
    let entries: Vec<String> = (1..=n).map(|i| add_request(&i.to_string())).collect();
    format!("[{}]", entries.join(","))
}

/// About 64 KiB of Rust-like source: newlines, quotes, backslashes and a few non-ASCII
/// characters, as an editor would send in `textDocument/didOpen`.
fn source_text(target: usize) -> String {
    let mut text = String::with_capacity(target + 512);
    text.push_str("//! Generated module — benchmarks only.\n\nuse std::collections::HashMap;\n\n");
    let mut i = 0usize;
    while text.len() < target {
        text.push_str(&format!(
            "/// Returns the {i}th entry; see \"Notes\" in the crate docs.\n\
             pub fn entry_{i}(map: &HashMap<String, u64>, key: &str) -> Option<u64> {{\n\
             \x20   let path = \"C:\\\\data\\\\{i}.bin\";\n\
             \x20   if key.is_empty() {{\n\
             \x20       eprintln!(\"empty key at {{}}: {{:?}}\\n\", path, key);\n\
             \x20       return None;\n\
             \x20   }}\n\
             \x20   let v = map.get(key).copied().unwrap_or({i});\n\
             \x20   debug_assert!(v >= 0, \"{}\");\n\
             \x20   Some(v.wrapping_mul(31) ^ 0x{i:04x})\n\
             }}\n\n",
            if i % 16 == 0 {
                "naïve → ∑ résumé ✓"
            } else {
                "non-negative"
            },
        ));
        i += 1;
    }
    text
}

fn did_open_frame(text: &str) -> String {
    let text_json = serde_json::to_string(text).expect("encode text");
    format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"file:///src/main.rs","languageId":"rust","version":1,"text":{text_json}}}}},"id":1}}"#
    )
}

// ---------------------------------------------------------------------------------------
// Criterion.

fn configure(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: usize) {
    group
        .throughput(Throughput::Bytes(bytes as u64))
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
}

/// Checks that both sides answer with the same bytes before anything is measured.
fn same_answer(name: &str, floor: &[u8], ours: &[u8]) {
    assert_eq!(
        String::from_utf8_lossy(floor),
        String::from_utf8_lossy(ours),
        "{name}: floor and ours answer differently"
    );
}

fn w1_single(c: &mut Criterion) {
    let frame = add_request("1");
    let frame = frame.as_bytes();
    let mut classifier = Classifier::default();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    floor_add(frame, &mut a);
    ours_add(&mut classifier, frame, &mut b);
    same_answer("W1", &a, &b);

    let mut group = c.benchmark_group("W1_single_add");
    configure(&mut group, frame.len());
    let mut out = Vec::with_capacity(256);
    group.bench_function("floor", |bn| {
        bn.iter(|| {
            floor_add(black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.bench_function("ours", |bn| {
        bn.iter(|| {
            ours_add(&mut classifier, black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.finish();
}

fn w2_batch(c: &mut Criterion) {
    let frame = batch_frame(100);
    let frame = frame.as_bytes();
    let mut classifier = Classifier::default();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    floor_batch(frame, &mut a);
    ours_batch(&mut classifier, frame, &mut b);
    same_answer("W2", &a, &b);

    let mut group = c.benchmark_group("W2_batch_100");
    configure(&mut group, frame.len());
    let mut out = Vec::with_capacity(8192);
    group.bench_function("floor", |bn| {
        bn.iter(|| {
            floor_batch(black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.bench_function("ours", |bn| {
        bn.iter(|| {
            ours_batch(&mut classifier, black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.finish();
}

fn w3_large_params(c: &mut Criterion) {
    let text = source_text(64 * 1024);
    let frame = did_open_frame(&text);
    let frame = frame.as_bytes();
    let mut classifier = Classifier::default();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    floor_did_open(frame, &mut a);
    ours_did_open(&mut classifier, frame, &mut b);
    same_answer("W3", &a, &b);

    let mut group = c.benchmark_group("W3_did_open_64k");
    configure(&mut group, frame.len());
    let mut out = Vec::with_capacity(256);
    group.bench_function("floor", |bn| {
        bn.iter(|| {
            floor_did_open(black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.bench_function("ours", |bn| {
        bn.iter(|| {
            ours_did_open(&mut classifier, black_box(frame), &mut out);
            black_box(&out);
        })
    });
    group.finish();
}

fn w4_notification(c: &mut Criterion) {
    let frame = br#"{"jsonrpc":"2.0","method":"notify","params":[1,2]}"#;
    let frame = &frame[..];
    let mut classifier = Classifier::default();
    assert_eq!(floor_notify(frame), ours_notify(&mut classifier, frame));

    let mut group = c.benchmark_group("W4_notification");
    configure(&mut group, frame.len());
    group.bench_function("floor", |bn| bn.iter(|| floor_notify(black_box(frame))));
    group.bench_function("ours", |bn| {
        bn.iter(|| ours_notify(&mut classifier, black_box(frame)))
    });
    group.finish();
}

// W5 (Content-Length decoding of 10,000 framed messages) goes here once the codec lands.

fn w6_id_echo(c: &mut Criterion) {
    let mut classifier = Classifier::default();
    let mut group = c.benchmark_group("W6_id_echo");
    let mut out = Vec::with_capacity(256);
    for (label, id) in [("string", r#""req-4f2a""#), ("fractional", "1.5")] {
        let frame = add_request(id);
        let frame = frame.as_bytes();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        floor_add(frame, &mut a);
        ours_add(&mut classifier, frame, &mut b);
        same_answer("W6", &a, &b);
        assert!(
            b.ends_with(format!(r#""id":{id}}}"#).as_bytes()),
            "the id is echoed as sent"
        );

        configure(&mut group, frame.len());
        group.bench_function(BenchmarkId::new("floor", label), |bn| {
            bn.iter(|| {
                floor_add(black_box(frame), &mut out);
                black_box(&out);
            })
        });
        group.bench_function(BenchmarkId::new("ours", label), |bn| {
            bn.iter(|| {
                ours_add(&mut classifier, black_box(frame), &mut out);
                black_box(&out);
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    w1_single,
    w2_batch,
    w3_large_params,
    w4_notification,
    w6_id_echo
);
criterion_main!(benches);
