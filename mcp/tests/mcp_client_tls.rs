//! The MCP client over HTTPS (`sansrpc_mcp::tokio::Connect::tls`, rustls): against
//! this crate's own MCP server serving TLS (`ServeOptions::tls`), and against a server
//! written with the official MCP Python SDK 2.3.0 behind TLS
//! (`interop/mcp-python/http_server.py --tls`, uvicorn's); and the Python SDK's client
//! (`interop/mcp-python/http_client.py --ca`, httpx) against this crate's server over HTTPS
//! with the conformance suite's tool set. The certificates are made by the test (rcgen); a
//! client that does not trust them is not served.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/common.rs"]
mod common;
#[path = "../fixtures/everything.rs"]
mod everything;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, McpClient};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_mcp::tokio as mcp;
use sansrpc_mcp::types::ContentBlock;
use sansrpc_tokio::tls;
use sansrpc_tokio::{Builder, ServeOptions};
use serde_json::json;
use support::Running;
use tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A self-signed certificate for `localhost`: the certificate, and the generated pair.
fn certificate() -> (CertificateDer<'static>, rcgen::CertifiedKey<rcgen::KeyPair>) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    (generated.cert.der().clone(), generated)
}

fn builder(mcp: &ClientBuilder) -> Builder {
    Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router())
}

fn text(blocks: &[ContentBlock]) -> &str {
    match blocks.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

/// This crate's MCP server with the tool `add`, serving HTTPS on a free port; the port.
async fn our_server(
    cert: CertificateDer<'static>,
    generated: &rcgen::CertifiedKey<rcgen::KeyPair>,
) -> u16 {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }
    let server = ServerBuilder::new("tls-test", "1")
        .tool("add", "Adds", |_: Context, Add { a, b }| async move {
            Ok::<_, McpError>((a + b).to_string())
        })
        .build();
    serve_tls(server, cert, generated).await
}

/// `server` serving HTTPS (`ServeOptions::tls`) on a free port of 127.0.0.1; the port.
async fn serve_tls(
    server: sansrpc_mcp::server::Server,
    cert: CertificateDer<'static>,
    generated: &rcgen::CertifiedKey<rcgen::KeyPair>,
) -> u16 {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    let mut serve = ServeOptions::default();
    serve.tls = Some(tls::server_config(vec![cert], key).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let options = mcp::Options::default().serve_options(serve);
    tokio::spawn(mcp::serve_with(
        listener,
        builder,
        streamable::Config::default(),
        options,
        std::future::pending(),
    ));
    port
}

/// `add` 2 + 3 through `client`: "5".
async fn adds(client: &McpClient) {
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(text(&sum.content), "5");
}

#[tokio::test]
async fn the_client_over_https_to_our_own_server_on_both_revisions() {
    let (cert, generated) = certificate();
    let port = our_server(cert.clone(), &generated).await;
    let url = format!("https://localhost:{port}/mcp");
    let trusted = tls::client_config_with_roots([cert]).unwrap();

    // A session (2025-11-25), closed with its DELETE.
    let mcp = ClientBuilder::new("tls-client", "1");
    let conn = mcp::Connect::new(&url)
        .tls(Arc::clone(&trusted))
        .connect(builder(&mcp))
        .unwrap();
    let client = mcp.initialize(&conn).await.unwrap();
    assert_eq!(client.server_info().name, "tls-test");
    adds(&client).await;
    client.close().await;

    // The stateless revision (2026-07-28).
    let mcp = ClientBuilder::new("tls-client", "1");
    let conn = mcp::Connect::new(&url)
        .tls(trusted)
        .connect(builder(&mcp))
        .unwrap();
    let client = mcp.discover(&conn).await.unwrap();
    assert!(client.is_stateless());
    adds(&client).await;

    // The default roots (Mozilla's) do not trust the test's certificate: not served, and
    // the error says why (rustls' reason) and with whom.
    let mcp = ClientBuilder::new("tls-client", "1");
    let conn = sansrpc_mcp::tokio::connect(&url, builder(&mcp)).unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(10), mcp.initialize(&conn))
        .await
        .expect("a TLS failure is told at once");
    let error = refused.expect_err("served without trust").to_string();
    assert!(
        error.contains("TLS with localhost") && error.contains("UnknownIssuer"),
        "{error}"
    );
}

#[tokio::test]
async fn plain_http_urls_still_work_and_other_schemes_are_refused() {
    let mcp = ClientBuilder::new("tls-client", "1");
    assert!(sansrpc_mcp::tokio::connect("ftp://localhost/mcp", builder(&mcp)).is_err());
    assert!(sansrpc_mcp::tokio::connect("http://localhost:1/mcp", builder(&mcp)).is_ok());
}

#[tokio::test]
async fn the_client_over_https_to_the_python_sdk_server() {
    let (cert, generated) = certificate();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-client-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, generated.cert.pem()).unwrap();
    std::fs::write(&key_file, generated.signing_key.serialize_pem()).unwrap();
    let sdk = support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python");
    let script = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-python").join("http_server.py");
    let mut server = Running(
        Command::new("python3")
            .arg(script)
            .args(["0", "--tls"])
            .args([&cert_file, &key_file])
            .env("PYTHONPATH", sdk)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the SDK's server"),
    );
    let stdout = server.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        common::first_line(
            stdout,
            Duration::from_secs(60),
            "the Python SDK's server listens",
        )
    })
    .await
    .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let url = format!("https://localhost:{port}/mcp");
    let trusted = tls::client_config_with_roots([cert]).unwrap();
    let mcp = ClientBuilder::new("tls-client", "1");
    let conn = mcp::Connect::new(&url)
        .tls(trusted)
        .connect(builder(&mcp))
        .unwrap();
    let client = mcp.initialize(&conn).await.unwrap();
    assert_eq!(client.server_info().name, "python-sdk-http-server");
    adds(&client).await;
    tokio::time::timeout(Duration::from_secs(10), client.close())
        .await
        .expect("close is bounded");
}

/// The Python SDK's client over HTTPS against this crate's MCP server (the `everything`
/// tool set, TLS from `ServeOptions::tls`): every call of its script on both revisions,
/// trusting only the test's certificate; and refused when it trusts the system roots alone.
#[test]
fn the_python_sdk_client_over_https_to_our_server_on_both_revisions() {
    let (cert, generated) = certificate();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-python-client-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("cert.pem");
    std::fs::write(&ca, generated.cert.pem()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = everything::everything(ServerBuilder::new("tls-everything", "1")).build();
    let port = runtime.block_on(serve_tls(server, cert, &generated));
    let sdk = support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python");
    let script = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-python").join("http_client.py");
    // The certificate names `localhost`.
    let url = format!("https://localhost:{port}/mcp");
    let run = |args: &[&str]| {
        let mut client = Command::new("python3");
        client
            .arg(&script)
            .arg(&url)
            .args(args)
            .env("PYTHONPATH", &sdk);
        support::output_within(&mut client, support::CLIENT_TIMEOUT)
    };
    let ca = ca.to_str().unwrap();
    for (mode, protocol) in [("legacy", "2025-11-25"), ("2026", "2026-07-28")] {
        let out = run(&["--mode", mode, "--ca", ca]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mode}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["protocol"], protocol, "{report}");
    }
    // Without the test's certificate the SDK's client does not trust the server.
    let out = run(&["--mode", "legacy"]);
    assert!(
        !out.status.success(),
        "served without trusting the certificate"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CERTIFICATE_VERIFY_FAILED"), "{stderr}");
    drop(runtime);
}
