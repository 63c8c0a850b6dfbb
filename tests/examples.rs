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

/// The bound every child-process and interop test runs under (`output_within`): a command
/// that never finishes, or one that exits but leaves a grandchild holding its output open,
/// is killed with everything it started, and the test fails saying so, within the limit.
#[test]
fn a_command_past_its_limit_is_killed_with_what_it_started() {
    use std::process::Command;
    use std::time::{Duration, Instant};
    let out = interop::output_within(
        Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        (&out.stdout[..], &out.stderr[..]),
        (&b"out\n"[..], &b"err\n"[..])
    );

    for (n, (script, says)) in [
        ("echo started; exec sleep 60", "did not finish"),
        ("sleep 60 & echo started", "exited but left its output open"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("output-within-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("pid");
        let script = format!("sleep 60 & echo $! > {}; {script}", pidfile.display());
        let start = Instant::now();
        let failed = std::panic::catch_unwind(|| {
            interop::output_within(
                Command::new("sh").args(["-c", &script]),
                Duration::from_millis(500),
            )
        })
        .expect_err("past its limit");
        assert!(start.elapsed() < Duration::from_secs(20));
        let message = failed.downcast_ref::<String>().unwrap();
        assert!(message.contains(says), "{message}");
        assert!(message.contains("started"), "{message}");
        // The background `sleep` (a grandchild) was killed too.
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let gone = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{}", pid.trim())).exists() {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
            // A zombie waiting for its (init) parent counts as killed.
            if stat.is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z")) {
                break;
            }
            assert!(Instant::now() < gone, "the grandchild {pid} lives on");
            std::thread::yield_now();
        }
    }
}
