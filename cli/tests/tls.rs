//! `sansrpc serve --ws/--http --tls-cert --tls-key` and `sansrpc call --tls-ca`, on real
//! processes, with a certificate generated here for `localhost`: answered over `wss://` and
//! `https://` when the client trusts the certificate, refused when it does not.

mod common;

use std::time::Duration;

use common::{run, serve_logging_addr};

const LIMIT: Duration = Duration::from_secs(30);

/// A certificate for `localhost` and its key, as PEM files in `dir`.
fn certificate(dir: &std::path::Path) -> (String, String) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    (
        cert.to_str().unwrap().to_owned(),
        key.to_str().unwrap().to_owned(),
    )
}

fn serves_over_tls(transport: &str, scheme: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let (_server, addr) = serve_logging_addr(&[
        "serve",
        &format!("--{transport}"),
        "127.0.0.1:0",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    let port = addr.rsplit(':').next().unwrap();
    let url = format!("{scheme}://localhost:{port}");
    let flag = format!("--{transport}");

    let out = run(
        &["call", &flag, &url, "--tls-ca", &cert, "add", "[20, 22]"],
        LIMIT,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "42");

    // Without --tls-ca the Mozilla roots do not know the certificate.
    let out = run(&["call", &flag, &url, "add", "[1, 2]"], LIMIT);
    assert_ne!(out.status, 0, "an untrusted certificate must be refused");
}

#[test]
fn websocket_over_tls() {
    serves_over_tls("ws", "wss");
}

#[test]
fn http_over_tls() {
    serves_over_tls("http", "https");
}

#[test]
fn a_key_without_its_certificate_is_refused() {
    let out = run(
        &["serve", "--ws", "127.0.0.1:0", "--tls-key", "key.pem"],
        LIMIT,
    );
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("--tls-cert"), "{}", out.stderr);
}

#[test]
fn check_refuses_tls_urls_with_a_clear_message() {
    let out = run(&["check", "--ws", "wss://localhost:1"], LIMIT);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr.contains("ws:// and http:// only"),
        "{}",
        out.stderr
    );
}
