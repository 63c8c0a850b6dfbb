//! The example the README names (`cargo run --example spec_examples`), run: every answer it
//! prints compared with the specification's, so a broken example fails here (it also
//! checks them itself, and would exit with a failure).

#[path = "support/interop.rs"]
mod interop;

/// The answers (`<-- …` lines) `spec_examples` prints, in order: one per example of the
/// specification, byte for byte.
const ANSWERS: &[&str] = &[
    r#"{"jsonrpc":"2.0","result":19,"id":1}"#,
    r#"{"jsonrpc":"2.0","result":-19,"id":2}"#,
    r#"{"jsonrpc":"2.0","result":19,"id":3}"#,
    "(nothing: notifications are never answered)",
    r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: method must be a string"},"id":null}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
    r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: empty batch"},"id":null}"#,
    r#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null}]"#,
    r#"[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: expected a request object"},"id":null}]"#,
    r#"[{"jsonrpc":"2.0","result":7,"id":"1"},{"jsonrpc":"2.0","result":19,"id":"2"},{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: missing method"},"id":null},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"5"},{"jsonrpc":"2.0","result":["hello",5],"id":"9"}]"#,
    "(nothing: notifications are never answered)",
    r#"{"jsonrpc":"2.0","result":["hello",5],"id":1.50}"#,
    r#"{"jsonrpc":"2.0","result":["hello",5],"id":123456789012345678901234567890}"#,
];

#[test]
fn spec_examples_prints_the_specifications_answers() {
    let lines = interop::run_example("sansrpc", "spec_examples", &[]);
    let requests = lines.iter().filter(|l| l.starts_with("--> ")).count();
    let answers: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("<-- "))
        .collect();
    for (n, (answer, expected)) in answers.iter().zip(ANSWERS).enumerate() {
        assert_eq!(answer, expected, "answer {} of {lines:#?}", n + 1);
    }
    assert_eq!(answers.len(), ANSWERS.len(), "answers in {lines:#?}");
    assert_eq!(
        requests,
        ANSWERS.len(),
        "one request per answer: {lines:#?}"
    );
}
