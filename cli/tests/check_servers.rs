//! `sansrpc check` against two small real servers with the faults ganache showed (in
//! `tests/`, Python's standard library only): one that dies on the input `null` (over
//! HTTP), and one that answers every unknown method with -32700 (over WebSocket). The
//! report names the case after which the server stopped and whether its process is gone
//! or it only closed the connection; a refused connection is no advisory failure; each
//! case judges the rule it is filed under.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(180);

/// Starts `tests/<script>` with `args` on a free port: the process and its port.
fn python_server(script: &str, args: &[&str]) -> (Server, String) {
    let path = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new("python3")
        .arg(&path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 {path}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let port = first_line(stdout, Duration::from_secs(30), script);
    (server, port.trim().to_owned())
}

/// The JSON report's case `id`.
fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

#[test]
fn a_server_that_dies_is_named_after_the_case_that_killed_it_and_said_gone() {
    let (mut server, port) = python_server("exiting_server.py", &[]);
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&["check", "--http", &url, "--timeout", "2"], LIMIT);
    assert_eq!(out.status, 1, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stdout;
    // The case that killed it, and what became of the server: gone, not "closed".
    assert!(
        text.contains("  FAIL invalid.null: null instead of an object"),
        "{text}"
    );
    assert!(
        text.contains("the server is gone: nothing accepts connections at 127.0.0.1:"),
        "{text}"
    );
    assert!(
        text.contains("the run ended early: the server is gone after case invalid.null: nothing accepts connections at"),
        "{text}"
    );
    assert!(!text.contains("could not restore"), "{text}");
    // The robustness cases could not connect: not run, not advice.
    let robustness = text.lines().find(|l| l.starts_with("Robustness")).unwrap();
    assert!(robustness.contains(" not run"), "{robustness}");
    assert!(!text.contains("WARN slowloris"), "{text}");
    assert!(
        !text.contains("advisory failed") || text.contains(" 0 advisory failed"),
        "{text}"
    );
    // What came before it passed.
    let request = text
        .lines()
        .find(|l| l.starts_with("§5.1 Error object"))
        .unwrap();
    assert!(
        request.contains("passed") && !request.contains("failed"),
        "{request}"
    );
    assert_eq!(
        wait_exit(&mut server, LIMIT, "the server exits").code(),
        Some(3)
    );

    // The same in JSON: where it stopped, and how.
    let (_server, port) = python_server("exiting_server.py", &[]);
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&["check", "--http", &url, "--json"], LIMIT);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report["stopped"],
        serde_json::json!({"after": "invalid.null", "server": "gone"})
    );
    assert_eq!(case(&report, "slowloris")["status"], "fail");
    assert!(
        case(&report, "slowloris")["why"]
            .as_str()
            .unwrap()
            .starts_with("not run: the server is gone after case invalid.null"),
        "{}",
        case(&report, "slowloris")
    );
}

#[test]
fn a_server_that_only_closes_the_connection_is_said_to_live_on() {
    let (_server, port) = python_server("exiting_server.py", &["--close"]);
    let url = format!("http://127.0.0.1:{port}/");
    let out = run(&["check", "--http", &url, "-v", "--close-wait", "1"], LIMIT);
    assert_eq!(out.status, 1, "{}\n{}", out.stdout, out.stderr);
    let text = &out.stdout;
    assert!(text.contains("  FAIL invalid.null: "), "{text}");
    assert!(
        text.contains("the server closed the connection (it accepts new ones: the process lives)"),
        "{text}"
    );
    // It lives on: the run goes on, the cases after it are run and pass.
    assert!(!text.contains("the run ended early"), "{text}");
    assert!(text.contains("PASS invalid.empty-object"), "{text}");
    assert!(text.contains(" 0 not run;"), "{text}");
}

#[test]
fn unknown_methods_answered_minus_32700_fail_the_error_code_cases_only() {
    let (_server, port) = python_server("parse_error_server.py", &[]);
    let url = format!("ws://127.0.0.1:{port}/");
    let out = run(
        &["check", "--ws", &url, "--json", "--close-wait", "1"],
        LIMIT,
    );
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    // The id comes back right: every id case passes, judged on the id alone.
    let cases = report["cases"].as_array().unwrap();
    let ids: Vec<&Value> = cases.iter().filter(|c| c["section"] == "5").collect();
    assert_eq!(ids.len(), 20);
    for c in &ids {
        assert_eq!(c["status"], "pass", "{c}");
    }
    // The wrong code is reported under the error-code cases, and nowhere else.
    let failed: Vec<&str> = report["failed_required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "method.unknown",
            "method.empty-name",
            "method.reserved-unknown"
        ],
        "{report:#}"
    );
    for id in failed {
        let why = case(&report, id)["why"].as_str().unwrap();
        assert_eq!(why, "error code -32700, expected -32601", "{id}");
    }
    for id in ["batch.one-request", "batch.mixed", "batch.same-value-ids"] {
        assert_eq!(case(&report, id)["status"], "pass", "{id}");
    }
    assert!(report["stopped"].is_null(), "{report:#}");
}
