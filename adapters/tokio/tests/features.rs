//! `ws`, `http` and `tower` are cargo features: a stdio server built without them pulls
//! neither hyper nor tungstenite (read from `cargo tree`), and the HTTP client alone no
//! HTTP/2 server.

use std::process::Command;
use std::time::Duration;

#[path = "../../../tests/support/processes.rs"]
mod processes;

fn tree(args: &[&str]) -> String {
    let out = processes::output_within(
        Command::new(env!("CARGO"))
            .args([
                "tree",
                "-p",
                "sansrpc-tokio",
                "-e",
                "normal",
                "--prefix",
                "none",
            ])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn has(tree: &str, name: &str) -> bool {
    tree.lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

#[test]
fn without_default_features_neither_hyper_nor_tungstenite_is_built() {
    let lean = tree(&["--no-default-features"]);
    for heavy in [
        "hyper",
        "hyper-util",
        "tungstenite",
        "tokio-tungstenite",
        "http-body-util",
    ] {
        assert!(!has(&lean, heavy), "{heavy} in:\n{lean}");
    }
    assert!(has(&lean, "tokio") && has(&lean, "sansrpc-futures"));

    let full = tree(&[]);
    assert!(
        has(&full, "hyper") && has(&full, "tokio-tungstenite"),
        "{full}"
    );
    let ws = tree(&["--no-default-features", "--features", "ws"]);
    assert!(has(&ws, "tokio-tungstenite") && !has(&ws, "hyper"));
    let http = tree(&["--no-default-features", "--features", "http"]);
    assert!(has(&http, "hyper") && !has(&http, "tungstenite"));
    // The tower services bring hyper's server and HTTP/2; the HTTP client alone does not.
    assert!(!has(&http, "h2"), "{http}");
    assert!(has(&full, "h2"), "{full}");
    let tower = tree(&["--no-default-features", "--features", "tower"]);
    assert!(has(&tower, "h2") && !has(&tower, "tungstenite"), "{tower}");
}
