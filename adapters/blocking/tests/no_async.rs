//! The adapter's promise: no async runtime anywhere in its dependency tree.

use std::process::Command;
use std::time::Duration;

#[path = "../../../tests/support/processes.rs"]
mod processes;

const FORBIDDEN: &[&str] = &["tokio", "futures", "async-std", "smol", "async-io", "mio"];

#[test]
fn no_async_runtime_in_the_dependency_tree() {
    let output = processes::output_within(
        Command::new(env!("CARGO"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["tree", "-p", "sansrpc-blocking", "-e", "normal"])
            .args(["--prefix", "none", "--format", "{p}"]),
        Duration::from_secs(300),
    );
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8(output.stdout).unwrap();
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.contains(&"sansrpc"),
        "unexpected cargo tree output:\n{tree}"
    );
    let runtimes: Vec<&&str> = crates
        .iter()
        .filter(|c| {
            c.starts_with("async-")
                || FORBIDDEN
                    .iter()
                    .any(|f| *c == f || c.starts_with(&format!("{f}-")))
        })
        .collect();
    assert!(
        runtimes.is_empty(),
        "async crates in the tree: {runtimes:?}\n{tree}"
    );
}
