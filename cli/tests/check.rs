//! `sansrpc check` against our own server on every transport, and against a deliberately
//! broken one.

mod common;

use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(120);

/// Protection timeouts short enough that the robustness cases end in seconds (with the
/// network defaults, 30 s, each waits about half a minute for the abuser to be closed).
const QUICK: [&str; 4] = ["--frame-timeout", "2s", "--write-stall-timeout", "2s"];

fn assert_all_pass(out: &Output, what: &str) {
    assert_eq!(
        out.status, 0,
        "{what}: exit status {}\n{}\n{}",
        out.status, out.stdout, out.stderr
    );
    assert!(
        out.stdout.contains("PASS: every required case passed"),
        "{what}: {}",
        out.stdout
    );
    assert!(!out.stdout.contains("  FAIL "), "{what}: {}", out.stdout);
    // Our own server echoes every id byte for byte: not even advice.
    assert!(
        !out.stdout.contains("the same value written differently"),
        "{what}: {}",
        out.stdout
    );
    assert!(out.stdout.contains(" 0 not run;"), "{what}: {}", out.stdout);
}

#[test]
fn our_server_over_stdio_started_by_check() {
    let out = run(
        &["check", "--spec-methods", "--fuzz", "200", "--seed", "1"],
        LIMIT,
    );
    assert_all_pass(&out, "no target");
    for heading in [
        "§4 Request object",
        "§4.1 Notification",
        "§4.2 Parameter structures",
        "§5 Response object",
        "§5.1 Error object",
        "§6 Batch",
        "§7 Examples",
        "Robustness: hostile input",
        "Fuzz (--fuzz): seed 1, 200 generated messages, 200 answered as required, 0 violations",
    ] {
        assert!(
            out.stdout.contains(heading),
            "missing {heading:?}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn our_server_over_stdio_as_a_command_with_newline_framing() {
    let command = serve_stdio_command("newline");
    let out = run(
        &[
            "check",
            "--stdio",
            &command,
            "--framing",
            "newline",
            "--spec-methods",
            "--fuzz",
            "200",
            "--seed",
            "1",
        ],
        LIMIT,
    );
    assert_all_pass(&out, "stdio, newline");
}

#[test]
fn our_server_over_tcp() {
    for framing in ["content-length", "newline"] {
        let (_server, addr) = serve_logging_addr(
            &[
                &["serve", "--tcp", "127.0.0.1:0", "--framing", framing],
                &QUICK[..],
            ]
            .concat(),
        );
        let out = run(
            &[
                "check",
                "--tcp",
                &addr,
                "--framing",
                framing,
                "--spec-methods",
                "--fuzz",
                "200",
                "--seed",
                "1",
            ],
            LIMIT,
        );
        assert_all_pass(&out, &format!("tcp, {framing}"));
    }
}

#[test]
fn our_server_over_a_unix_socket() {
    let path = socket_path("check");
    let _server = serve_unix_with(&path, &QUICK);
    let out = run(
        &[
            "check",
            "--unix",
            path.to_str().unwrap(),
            "--spec-methods",
            "--fuzz",
            "200",
            "--seed",
            "1",
        ],
        LIMIT,
    );
    assert_all_pass(&out, "unix");
}

#[test]
fn json_output_of_a_passing_run() {
    let out = run(&["check", "--json", "--fuzz", "20", "--seed", "3"], LIMIT);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON report");
    assert_eq!(report["ok"], true);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["fuzz"]["messages"], 20);
    assert_eq!(report["fuzz"]["seed"], 3);
    assert!(report["cases"].as_array().unwrap().len() > 60);
}

#[test]
fn a_broken_server_fails_with_the_reasons() {
    let server = broken_server();
    let args = [
        "check",
        "--stdio",
        &server,
        "--framing",
        "newline",
        "--timeout",
        "0.5",
        "-v",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 1, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stdout;
    // Ids echoed as the same value written differently: advice.
    assert!(text.contains("WARN id.exponent"), "{text}");
    assert!(text.contains("id echoed as 1000.0, sent as 1e3"), "{text}");
    assert!(text.contains("WARN id.escaped-backslash"), "{text}");
    // Ids echoed as another value (2^64 through a double): a failure.
    assert!(text.contains("FAIL id.beyond-u64"), "{text}");
    assert!(
        text.contains("id is 1.8446744073709552e+19, expected 18446744073709551616"),
        "{text}"
    );
    // Notifications answered.
    assert!(text.contains("FAIL notification.unknown"), "{text}");
    assert!(
        text.contains("answered, but nothing may be answered"),
        "{text}"
    );
    assert!(text.contains("FAIL batch.all-notifications"), "{text}");
    // An empty batch never answered: a timeout, not a hang.
    assert!(text.contains("FAIL batch.empty"), "{text}");
    assert!(text.contains("timed out: no answer within 0.5 s"), "{text}");
    // Deep nesting kills it; the checker says so and starts it again.
    assert!(text.contains("FAIL hostile.deep-array"), "{text}");
    assert!(text.contains("FAIL hostile.deep-unclosed"), "{text}");
    assert!(text.contains("the server exited"), "{text}");
    assert!(text.contains("RecursionError"), "{text}");
    // NaN accepted by Python's json module.
    assert!(text.contains("FAIL parse.nan"), "{text}");
    // What it gets right still passes, after the restarts.
    assert!(text.contains("PASS parse.spec-example"), "{text}");
    assert!(text.contains("PASS id.string"), "{text}");
    assert!(
        text.contains("FAIL: see the cases marked FAIL above"),
        "{text}"
    );
}

#[test]
fn a_broken_server_in_json_with_fuzz_violations_shrunk() {
    let server = broken_server();
    let args = [
        "check",
        "--stdio",
        &server,
        "--framing",
        "newline",
        "--timeout",
        "0.5",
        "--json",
        "--fuzz",
        "25",
        "--seed",
        "1",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 1, "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON report");
    assert_eq!(report["ok"], false);
    let failed: Vec<&str> = report["failed_required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for id in [
        "id.big-integer",
        "id.beyond-u64",
        "notification.unknown",
        "batch.empty",
        "batch.all-notifications",
        "hostile.deep-array",
        "parse.nan",
    ] {
        assert!(failed.contains(&id), "{id} not in {failed:?}");
    }
    let case = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "id.integer")
        .unwrap();
    // 1 echoed as 1.0: the same value, so advice, not a required failure.
    assert_eq!(case["status"], "fail");
    assert_eq!(case["required"], false);
    assert!(!failed.contains(&"id.integer"), "{failed:?}");
    assert_eq!(case["section"], "5");
    assert!(case["received"][0].as_str().unwrap().contains("1.0"));
    let violations = report["fuzz"]["violations"].as_array().unwrap();
    assert!(!violations.is_empty());
    for v in violations {
        let (original, minimal) = (&v["original"], &v["minimal"]);
        assert_eq!(original["status"], "fail");
        assert_eq!(minimal["status"], "fail");
        assert!(minimal["sent_bytes"].as_u64() <= original["sent_bytes"].as_u64());
    }
    // A notification with params shrinks to one without.
    assert!(
        violations
            .iter()
            .any(|v| v["minimal"]["sent_bytes"].as_u64() < v["original"]["sent_bytes"].as_u64()),
        "nothing shrank: {violations:#?}"
    );
}

#[test]
fn a_target_that_does_not_answer_is_a_clear_error() {
    let out = run(&["check", "--stdio", "sleep 30", "--timeout", "0.5"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr.contains("did not answer a plain request"),
        "{}",
        out.stderr
    );
    let out = run(&["check", "--stdio", "true"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("the server exited"), "{}", out.stderr);
}

#[test]
fn our_server_over_websocket_and_http() {
    for transport in ["ws", "http"] {
        let flag = format!("--{transport}");
        let (_server, addr) =
            serve_logging_addr(&[&["serve", flag.as_str(), "127.0.0.1:0"], &QUICK[..]].concat());
        let url = format!("{transport}://{addr}/");
        let out = run(
            &[
                "check",
                &format!("--{transport}"),
                &url,
                "--spec-methods",
                "--fuzz",
                "200",
                "--seed",
                "1",
            ],
            LIMIT,
        );
        assert_all_pass(&out, transport);
        assert!(
            out.stdout.contains("Fuzz (--fuzz): seed 1, 200 generated messages, 200 answered as required, 0 violations"),
            "{transport}: {}",
            out.stdout
        );
    }
}

/// A hand-written HTTP server on a free port: `respond` turns each POST body into the
/// whole response.
fn http_server(respond: fn(&[u8]) -> Vec<u8>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Read, Write};
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                loop {
                    let mut length = 0;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(n) = lower.strip_prefix("content-length:") {
                            length = n.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let _ = (&stream).write_all(&respond(&body));
                }
            });
        }
    });
    addr
}

const NO_CONTENT: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";

#[test]
fn http_no_content_for_a_plain_request_is_a_clear_error() {
    let addr = http_server(|_| NO_CONTENT.to_vec());
    let out = run(&["check", "--http", &addr], LIMIT);
    assert_eq!(out.status, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("the server had no response (HTTP 204) to a plain request"),
        "{}",
        out.stderr
    );
}

#[test]
fn http_no_content_and_other_statuses_are_judged() {
    // Probes are answered; batches refused with 400; everything else gets 204: right for
    // notifications, wrong for requests.
    let addr = http_server(|body| {
        let text = String::from_utf8_lossy(body);
        if text.contains("sansrpc.check.probe") {
            let id = text.rsplit("\"id\":").next().unwrap().trim_end_matches('}');
            let answer = format!(r#"{{"jsonrpc":"2.0","result":null,"id":{id}}}"#);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                answer.len()
            );
            return [head.into_bytes(), answer.into_bytes()].concat();
        }
        if text.trim_start().starts_with('[') {
            return b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\n\r\nno batches".to_vec();
        }
        NO_CONTENT.to_vec()
    });
    // This server never closes a slowloris: waiting 1 s for it, not 35 s.
    let url = format!("http://{addr}/rpc");
    let out = run(&["check", "--http", &url, "-v", "--close-wait", "1"], LIMIT);
    assert_eq!(out.status, 1, "{}\n{}", out.stdout, out.stderr);
    for expected in [
        "PASS notification.unknown",
        "no response (HTTP 204 No Content), but one is required",
        "refused instead of answering: HTTP 400 Bad Request: no batches",
        "refused (allowed for hostile input): HTTP 400 Bad Request: no batches",
    ] {
        assert!(
            out.stdout.contains(expected),
            "missing {expected:?}:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("timed out"), "{}", out.stdout);
}

#[test]
fn the_default_report_is_one_line_per_section_and_verbose_shows_every_case() {
    let out = run(&["check"], LIMIT);
    assert_all_pass(&out, "default report");
    let lines = out.stdout.lines().count();
    assert!(lines <= 20, "{lines} lines:\n{}", out.stdout);
    assert!(!out.stdout.contains("PASS id."), "{}", out.stdout);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("§6 Batch") && l.contains("9/9")),
        "{}",
        out.stdout
    );
    let out = run(&["check", "-v"], LIMIT);
    assert_all_pass(&out, "verbose report");
    assert!(
        out.stdout.contains("  PASS id.exponent: "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.lines().count() > 200, "{}", out.stdout);
}

#[test]
fn a_server_that_stops_answering_is_detected_once_and_the_rest_is_not_run() {
    let server = format!("{} --hang", broken_server());
    let args = [
        "check",
        "--stdio",
        &server,
        "--framing",
        "newline",
        "--timeout",
        "0.5",
        "--fuzz",
        "20",
        "--seed",
        "1",
    ];
    let out = run(&args, LIMIT);
    assert_eq!(out.status, 1, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stdout;
    // The failures are in full, the passes not listed.
    assert!(text.contains("  FAIL hostile.deep-array: "), "{text}");
    assert!(text.contains("       sent:     [[[["), "{text}");
    assert!(!text.contains("PASS "), "{text}");
    // Detected once: no restart, every later case not run, no generated message sent.
    assert!(text.contains(", 0 restarts/reconnections"), "{text}");
    assert!(
        text.contains(
            "the run ended early: the server stopped answering after case hostile.deep-array"
        ),
        "{text}"
    );
    let robustness = text.lines().find(|l| l.starts_with("Robustness")).unwrap();
    assert!(robustness.contains(" not run"), "{robustness}");
    assert!(!text.contains("NOT RUN"), "{text}");
    assert!(
        text.contains("seed 1, 0 generated messages, 0 answered as required, 0 violations"),
        "{text}"
    );
}

#[test]
fn the_mcp_profile_does_not_require_what_mcp_forbids() {
    let out = run(&["check", "--profile", "mcp", "-v"], LIMIT);
    assert_all_pass(&out, "mcp profile");
    assert!(out.stdout.contains("framing newline"), "{}", out.stdout);
    for id in ["id.null", "id.fraction", "batch.mixed", "spec.batch"] {
        assert!(
            out.stdout.contains(&format!("PASS {id}: ")),
            "{id}: {}",
            out.stdout
        );
    }
    assert!(
        out.stdout.contains("(advice: MCP forbids it)"),
        "{}",
        out.stdout
    );
    // The Python server echoes ids as floats (advice) and answers batches wrongly: with
    // the MCP profile its batch failures are advice, not failures.
    let server = broken_server();
    let out = run(
        &[
            "check",
            "--stdio",
            &server,
            "--profile",
            "mcp",
            "--timeout",
            "0.5",
        ],
        LIMIT,
    );
    assert_eq!(out.status, 1, "{}", out.stdout);
    assert!(!out.stdout.contains("FAIL batch."), "{}", out.stdout);
    assert!(out.stdout.contains("WARN batch.mixed"), "{}", out.stdout);
}
