//! The eth_node example against Ethereum clients not written here, pinned in interop/eth:
//! viem and ethers v6 (package-lock.json), web3.py 8 (requirements.txt). Each runs its
//! script against one node process (HTTP and WebSocket on one port) and prints a report,
//! checked here whole. In burst mode the node grows by 65 blocks at once, then by 1,000
//! (a node catching up), on the library's defaults: every head and every log reaches each
//! client in order, with `eth_subscribe` registered through `#[subscription]` and by hand.

#[path = "../../../tests/support/interop.rs"]
mod interop;

use std::process::Command;

use interop::{interop, npm_ci, output_within, pip_install, Example, CLIENT_TIMEOUT};
use serde_json::{json, Value};

/// The eth_node example on a free port: the process and its port.
fn node() -> (Example, String) {
    node_with(&[])
}

/// The blocks (and logs, one a block) a burst node makes: 65 at once, then 1,000.
const BURST: u64 = 65 + 1000;

/// The eth_node example in burst mode, `eth_subscribe` mounted as `mount` says
/// (`"trait"`: `#[subscription]`; `"router"`: by hand).
fn burst_node(mount: &str) -> (Example, String) {
    node_with(&[("ETH_NODE_BURSTS", "65,1000"), ("ETH_NODE_MOUNT", mount)])
}

/// The eth_node example on a free port with `env`: the process and its port.
fn node_with(env: &[(&str, &str)]) -> (Example, String) {
    let env: Vec<(&str, &str)> = [("PORT", "0")]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    let mut node = Example::start_with_env("sansrpc-tokio", "eth_node", &env);
    let line = node.line();
    let port = line
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| node.fail(&format!("printed {line:?}, not its address")))
        .to_owned();
    (node, port)
}

/// Runs `command` and returns the JSON line it printed; fails with its output otherwise.
fn report(command: &mut Command, what: &str) -> Value {
    let out = output_within(command, CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{what} printed no report ({e}):\n{stdout}\n{stderr}"))
}

fn node_script(script: &str, port: &str) -> Value {
    node_script_with(script, &[port])
}

fn node_script_with(script: &str, args: &[&str]) -> Value {
    let dir = interop(env!("CARGO_MANIFEST_DIR"), "eth");
    npm_ci(&dir, "viem");
    npm_ci(&dir, "ethers");
    let mut node = Command::new("node");
    node.arg(dir.join(script)).args(args).current_dir(&dir);
    report(&mut node, script)
}

#[test]
fn viem_gets_every_head_and_log_of_two_bursts_in_order() {
    for mount in ["trait", "router"] {
        let (_node, port) = burst_node(mount);
        let report = node_script_with("burst_viem.mjs", &[&port, &BURST.to_string()]);
        assert_eq!(
            report,
            json!({
                "heads": BURST,
                "headsInOrder": true,
                "logs": BURST,
                "logsInOrder": true,
                // watchBlocks calls onBlock(undefined) for a notification without a result.
                "undefinedBlocks": 0,
                "errors": 0,
                "unhandled": 0,
            }),
            "eth_subscribe mounted by {mount}"
        );
    }
}

#[test]
fn ethers_gets_every_head_and_log_of_two_bursts_in_order() {
    for mount in ["trait", "router"] {
        let (_node, port) = burst_node(mount);
        let report = node_script_with("burst_ethers.mjs", &[&port, &BURST.to_string()]);
        assert_eq!(
            report,
            json!({
                "heads": BURST,
                "headsInOrder": true,
                "logs": BURST,
                "logsInOrder": true,
                "errors": 0,
                // on("block") died on an unhandled rejection at a notification without a result.
                "unhandled": 0,
            }),
            "eth_subscribe mounted by {mount}"
        );
    }
}

#[test]
fn web3py_gets_every_head_and_log_of_two_bursts_in_order() {
    let dir = interop(env!("CARGO_MANIFEST_DIR"), "eth");
    let packages = pip_install(env!("CARGO_MANIFEST_DIR"), "eth");
    for mount in ["trait", "router"] {
        let (_node, port) = burst_node(mount);
        let mut python = Command::new("python3");
        python
            .arg(dir.join("burst_web3py.py"))
            .arg(&port)
            .arg(BURST.to_string())
            .env("PYTHONPATH", &packages)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        let report = report(&mut python, "burst_web3py.py");
        assert_eq!(
            report,
            json!({
                "heads": BURST,
                "headsInOrder": true,
                "logs": BURST,
                "logsInOrder": true,
                "other": 0,
            }),
            "eth_subscribe mounted by {mount}"
        );
    }
}

#[test]
fn viem_over_http_and_websocket() {
    let (_node, port) = node();
    let report = node_script("viem.mjs", &port);
    assert_eq!(
        report,
        json!({
            "chainId": 1337,
            "blockNumberPositive": true,
            // One POST carried the three calls.
            "batch": {"chainId": 1337, "block1": 1, "netVersion": "1337", "sizes": [3]},
            // watchBlocks over eth_subscribe("newHeads"): 5 blocks, none missed.
            "blocks": 5,
            "consecutive": true,
        })
    );
}

#[test]
fn ethers_json_rpc_provider_and_websocket_provider() {
    let (_node, port) = node();
    let report = node_script("ethers.mjs", &port);
    assert_eq!(
        report,
        json!({
            "chainId": 1337,
            "blockNumberPositive": true,
            "block1": {"number": 1, "parentIsBlock0": true},
            "blocks": 5,
            "consecutive": true,
        })
    );
}

#[test]
fn web3py_async_websocket_subscribe_and_unsubscribe() {
    let (_node, port) = node();
    let dir = interop(env!("CARGO_MANIFEST_DIR"), "eth");
    let packages = pip_install(env!("CARGO_MANIFEST_DIR"), "eth");
    let mut python = Command::new("python3");
    python
        .arg(dir.join("web3py.py"))
        .arg(&port)
        .env("PYTHONPATH", packages)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let report = report(&mut python, "web3py.py");
    assert_eq!(
        report,
        json!({
            "chainId": 1337,
            "blocks": 5,
            "consecutive": true,
            "unsubscribed": true,
            "blockNumberAfter": true,
        })
    );
}

#[test]
fn the_subscriptions_guide_shows_the_new_heads_node_as_it_is() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let guide = std::fs::read_to_string(format!("{root}/docs/subscriptions.md")).unwrap();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let path = format!("{}/examples/new_heads.rs", env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(path).unwrap();
    assert!(
        guide.contains(&format!("```rust,ignore\n{example}```")),
        "docs/subscriptions.md must show examples/new_heads.rs as it is"
    );
    let lines = example.lines().count();
    for (page, text) in [("docs/subscriptions.md", &guide), ("README.md", &readme)] {
        assert!(
            text.contains(&format!("in {lines} lines"))
                || text.contains(&format!("is {lines} lines")),
            "{page} must state the example's {lines} lines"
        );
    }
}

#[test]
fn the_readme_client_follows_the_readme_node() {
    let mut node = Example::start_with_env("sansrpc-tokio", "new_heads", &[("PORT", "0")]);
    let line = node.line();
    let addr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| node.fail(&format!("printed {line:?}, not its address")))
        .to_owned();
    let url = format!("ws://{addr}");
    let client = Example::start("sansrpc-tokio", "new_heads_client", &[&url]);
    assert_eq!(
        client.finish(),
        [
            r#"block "0x0""#,
            r#"block "0x1""#,
            r#"block "0x2""#,
            "unsubscribed: true"
        ]
    );
}
