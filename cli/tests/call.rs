//! `sansrpc call`: a request, a notification, a batch, an error, `--raw`, steps in order
//! against a stateful server, cancellation per profile, on real processes.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

fn stdout_json(out: &Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", out.stdout))
}

#[test]
fn a_request_over_stdio_by_position_and_by_name() {
    let server = serve_stdio_command("content-length");
    let out = run(&["call", "--stdio", &server, "subtract", "[42, 23]"], LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "19\n");
    let named = r#"{"subtrahend": 23, "minuend": 42}"#;
    let out = run(&["call", "--stdio", &server, "subtract", named], LIMIT);
    assert_eq!(out.stdout, "19\n");
    let out = run(&["call", "--stdio", &server, "get_data"], LIMIT);
    assert_eq!(stdout_json(&out), json!(["hello", 5]));
}

#[test]
fn an_error_object_is_printed_and_exits_1() {
    let server = serve_stdio_command("newline");
    let args = [
        "call",
        "--stdio",
        &server,
        "--framing",
        "newline",
        "divide",
        "[1, 0]",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 1);
    assert_eq!(
        stdout_json(&out),
        json!({"code": 1, "message": "division by zero"})
    );
    let out = run(
        &["call", "--stdio", &server, "--framing", "newline", "nope"],
        LIMIT,
    );
    assert_eq!(out.status, 1);
    assert_eq!(stdout_json(&out)["code"], -32601);
}

#[test]
fn a_notification_then_a_request_over_tcp() {
    let (_server, addr) = serve_tcp("content-length");
    let out = run(
        &["call", "--tcp", &addr, "--notify", "sink", r#"["hello"]"#],
        LIMIT,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "", "a notification prints nothing");
    let out = run(&["call", "--tcp", &addr, "sink_count"], LIMIT);
    assert_eq!(out.stdout, "1\n");
}

#[test]
fn a_batch_from_arguments_and_from_a_file_over_a_unix_socket() {
    let path = socket_path("call");
    let _server = serve_unix(&path);
    let socket = path.to_str().unwrap();
    let args = [
        "call",
        "--unix",
        socket,
        "--call",
        "sum",
        "[1, 2, 4]",
        "--call",
        "get_data",
        "[]",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(
        stdout_json(&out),
        json!([
            {"method": "sum", "result": 7},
            {"method": "get_data", "result": ["hello", 5]},
        ])
    );

    let file = std::env::temp_dir().join(format!("sansrpc-batch-{}.json", std::process::id()));
    std::fs::write(
        &file,
        r#"[{"method": "add", "params": {"a": 1, "b": 2}},
            {"method": "sink", "params": ["x"], "notification": true},
            {"method": "divide", "params": [1, 0]}]"#,
    )
    .unwrap();
    let out = run(
        &["call", "--unix", socket, "--batch", file.to_str().unwrap()],
        LIMIT,
    );
    std::fs::remove_file(&file).unwrap();
    assert_eq!(out.status, 1, "an error inside the batch exits 1");
    assert_eq!(
        stdout_json(&out),
        json!([
            {"method": "add", "result": 3},
            {"method": "divide", "error": {"code": 1, "message": "division by zero"}},
        ])
    );
}

#[test]
fn raw_shows_the_frames_on_stderr() {
    let server = serve_stdio_command("content-length");
    let out = run(
        &["call", "--stdio", &server, "--raw", "add", "[2, 3]"],
        LIMIT,
    );
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "5\n");
    assert!(
        out.stderr
            .contains(r#"--> {"jsonrpc":"2.0","method":"add","params":[2, 3],"id":1}"#),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(r#"<-- {"jsonrpc":"2.0","result":5,"id":1}"#),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_arguments_and_unreachable_targets_exit_2() {
    let out = run(&["call", "--tcp", "127.0.0.1:1", "add", "[1, 2]"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("cannot connect"), "{}", out.stderr);
    let server = serve_stdio_command("content-length");
    let out = run(&["call", "--stdio", &server, "add", "7"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("array or object"), "{}", out.stderr);
}

#[test]
fn a_server_that_never_answers_times_out() {
    let out = run(
        &[
            "call",
            "--stdio",
            "sleep 30",
            "--timeout",
            "0.5",
            "add",
            "[1, 2]",
        ],
        LIMIT,
    );
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("no answer"), "{}", out.stderr);
}

#[test]
fn a_request_a_notification_and_a_batch_over_http_and_websocket() {
    for transport in ["http", "ws"] {
        let (_server, addr) = serve_web(transport);
        let flag = format!("--{transport}");
        let out = run(&["call", &flag, &addr, "subtract", "[42, 23]"], LIMIT);
        assert_eq!(out.status, 0, "{transport}: {}", out.stderr);
        assert_eq!(out.stdout, "19\n", "{transport}");
        let url = format!("{transport}://{addr}/");
        let out = run(&["call", &flag, &url, "--notify", "sink", "[1]"], LIMIT);
        assert_eq!((out.status, out.stdout.as_str()), (0, ""), "{}", out.stderr);
        let out = run(
            &[
                "call",
                &flag,
                &url,
                "--call",
                "sink_count",
                "[]",
                "--call",
                "divide",
                "[1, 0]",
            ],
            LIMIT,
        );
        assert_eq!(out.status, 1, "{transport}: {}", out.stderr);
        assert_eq!(
            stdout_json(&out),
            json!([
                {"method": "sink_count", "result": 1},
                {"method": "divide", "error": {"code": 1, "message": "division by zero"}}
            ]),
            "{transport}"
        );
    }
}

#[test]
fn a_stream_prints_its_items_as_they_arrive() {
    let (_server, addr) = serve_tcp("content-length");
    let out = run(
        &["call", "--tcp", &addr, "count", r#"{"to": 5}"#, "--stream"],
        LIMIT,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "1\n2\n3\n4\n5\n");
    let server = serve_stdio_command("content-length");
    let args = [
        "call", "--stdio", &server, "count", "[1000]", "--stream", "--window", "1",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let items: Vec<u64> = out.stdout.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(items, (1..=1000).collect::<Vec<_>>());
    // Bad params: the error object, exit 1.
    let out = run(
        &["call", "--tcp", &addr, "count", r#"{"to": -1}"#, "--stream"],
        LIMIT,
    );
    assert_eq!(out.status, 1, "{}", out.stderr);
    assert_eq!(stdout_json(&out)["code"], -32602);
    // A method that does not return a stream: no answer to print as one, exit 2.
    let out = run(&["call", "--tcp", &addr, "get_data", "--stream"], LIMIT);
    assert_eq!(out.status, 2, "{}", out.stdout);
}

const INITIALIZE: &str = r#"{"protocolVersion":"2025-06-18"}"#;

/// `sansrpc call` on a stateful server command over stdio: initialize it (`initialize`, then
/// the `notifications/initialized` notification), then the steps in `then`.
fn initialized(server: &str, options: &[&str], then: &[&str]) -> Output {
    let mut args = vec!["call", "--stdio", server];
    args.extend_from_slice(options);
    args.extend([
        "--call",
        "initialize",
        INITIALIZE,
        "--notify",
        "notifications/initialized",
    ]);
    args.extend_from_slice(then);
    run(&args, LIMIT)
}

#[test]
fn steps_run_in_order_on_one_connection_against_a_stateful_server_over_stdio() {
    let then = [
        "--call",
        "tools/list",
        "--call",
        "echo",
        "--call",
        "echo",
        "[]",
    ];
    let out = initialized(&stateful_server(), &["--profile", "mcp"], &then);
    assert_eq!(out.status, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        stdout_json(&out),
        json!([
            {"method": "initialize", "result": {"serverInfo": {"name": "stateful"}}},
            {"method": "tools/list", "result": {"tools": [{"name": "add"}]}},
            // No params given: no params member; `[]` given: `[]` sent.
            {"method": "echo", "result": {"has_params": false, "params": null}},
            {"method": "echo", "result": {"has_params": true, "params": []}},
        ])
    );
    // The positional METHOD is a step like the others, in its place.
    let server = stateful_server();
    let args = [
        "call",
        "--stdio",
        &server,
        "--profile",
        "mcp",
        "initialize",
        "--notify",
        "notifications/initialized",
        "--call",
        "echo",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(stdout_json(&out)[1]["result"]["has_params"], false);
    // Without initialize the server refuses: the error object, exit 1.
    let out = run(
        &["call", "--stdio", &server, "--profile", "mcp", "tools/list"],
        LIMIT,
    );
    assert_eq!(out.status, 1, "{}", out.stderr);
    assert_eq!(stdout_json(&out)["code"], -32002);
}

#[test]
fn follow_over_stdio_awaits_each_answer_and_prints_what_the_server_sends() {
    let out = initialized(
        &stateful_server(),
        &["--profile", "mcp"],
        &["--call", "tools/list", "--follow", "0.5"],
    );
    assert_eq!(out.status, 0, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[1]["method"], "notifications/tools/list_changed");
    assert_eq!(lines[2]["result"]["tools"][0]["name"], "add");
}

#[test]
fn a_timed_out_call_is_cancelled_the_way_the_profile_says() {
    let server = stateful_server();
    for (profile, framing, server, cancel) in [
        (
            "mcp",
            "newline",
            server.clone(),
            r#"cancel: notifications/cancelled {"reason": "timed out", "requestId": 2}"#,
        ),
        (
            "lsp",
            "content-length",
            format!("{server} --content-length"),
            r#"cancel: $/cancelRequest {"id": 2}"#,
        ),
        (
            "plain",
            "content-length",
            format!("{server} --content-length"),
            r#"cancel: $/cancelRequest {"id": 2}"#,
        ),
    ] {
        // The timeout covers `initialize` too, which waits for a Python interpreter to
        // start: 0.5 s was too short for it on a loaded machine. `slow` is never answered,
        // so the timeout is what this costs.
        let options = ["--profile", profile, "--framing", framing, "--timeout", "3"];
        let out = initialized(&server, &options, &["--call", "slow"]);
        assert_eq!(out.status, 2, "{profile}: {}", out.stderr);
        assert!(
            out.stderr.contains("call 2 (slow): no answer within 3 s"),
            "{profile}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(cancel), "{profile}: {}", out.stderr);
        // What was answered before is printed.
        assert_eq!(stdout_json(&out)[0]["method"], "initialize", "{profile}");
    }
}

#[test]
fn no_byte_back_names_the_other_framing() {
    // A newline-framed server that ignores what is not JSON, called with Content-Length.
    let server = stateful_server();
    let args = ["call", "--stdio", &server, "--timeout", "0.5", "initialize"];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "not a byte came back with --framing content-length: does the server use --framing newline?"
        ),
        "{}",
        out.stderr
    );
    // And the other way round.
    let server = format!("{} --content-length", stateful_server());
    let args = [
        "call",
        "--stdio",
        &server,
        "--framing",
        "newline",
        "--timeout",
        "0.5",
        "initialize",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("does the server use --framing content-length?"),
        "{}",
        out.stderr
    );
}

#[test]
fn batch_sends_the_steps_as_one_batch() {
    let server = serve_stdio_command("content-length");
    let args = [
        "call",
        "--stdio",
        &server,
        "--raw",
        "--call",
        "sum",
        "[1, 2, 4]",
        "--notify",
        "sink",
        r#"["x"]"#,
        "--call",
        "get_data",
        "--batch",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(
        stdout_json(&out),
        json!([
            {"method": "sum", "result": 7},
            {"method": "get_data", "result": ["hello", 5]},
        ])
    );
    let sent: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("--> "))
        .collect();
    assert_eq!(sent.len(), 1, "{}", out.stderr);
    assert!(
        sent[0].starts_with(r#"--> [{"jsonrpc":"2.0","method":"sum","params":[1, 2, 4],"id":1}"#),
        "{}",
        out.stderr
    );
    assert!(
        sent[0].contains(r#"{"jsonrpc":"2.0","method":"get_data","id":"#),
        "no params member: {}",
        out.stderr
    );
}
