//! Errors that say why (issue 60): the MCP client (`sansrpc_mcp::tokio::Connect`) against
//! this crate's own server over HTTPS with certificates that do not do, and against a port
//! nobody listens on. Each call fails at once with `ClientError::Transport`, whose text
//! names the layer, the reason and where: rustls' reason (a CA used as the end entity, as a
//! certificate from `openssl req -x509`'s defaults is; a name the certificate is not for; an
//! issuer nobody trusts; an expiry past) and the host, or the address refused; the rustls
//! error itself is among its sources. A server that asks for credentials the connection
//! was not given is said so, with its challenge.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ClientError};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable;
use sansrpc_mcp::tokio as mcp;
use sansrpc_tokio::tls;
use sansrpc_tokio::{Builder, ServeOptions};
use tls::rustls::pki_types::pem::PemObject;
use tls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

fn builder(client: &ClientBuilder) -> Builder {
    Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(client.router())
}

/// This crate's MCP server (one tool) serving HTTPS with `chain` and `key` on a free port of
/// 127.0.0.1; the port.
async fn serve_tls(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> u16 {
    let server = ServerBuilder::new("errors-test", "1")
        .tool("ping_tool", "Answers", |_: Context, ()| async move {
            Ok::<_, McpError>("pong")
        })
        .build();
    let mut serve = ServeOptions::default();
    serve.tls = Some(tls::server_config(chain, key).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    tokio::spawn(mcp::serve_with(
        listener,
        builder,
        streamable::Config::default(),
        mcp::Options::default().serve_options(serve),
        std::future::pending(),
    ));
    port
}

/// `initialize` through `connect`: it must fail at once with `ClientError::Transport`; its
/// text (with its sources), and whether a `rustls::Error` is among the sources.
async fn refused(connect: mcp::Connect) -> (String, bool) {
    let client = ClientBuilder::new("errors-client", "1");
    let conn = connect.connect(builder(&client)).unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(20), client.initialize(&conn))
        .await
        .expect("a connection that cannot be made is told at once, not waited on");
    let error = answer.expect_err("the connection was made");
    assert!(
        matches!(
            error,
            ClientError::Transport {
                method: "initialize",
                ..
            }
        ),
        "{error:?}"
    );
    let mut rustls = false;
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        rustls |= cause.downcast_ref::<tls::rustls::Error>().is_some();
        source = cause.source();
    }
    (error.to_string(), rustls)
}

/// A self-signed certificate and its key as rcgen makes them for `names`; `expired`: valid
/// only in the year 2000.
fn rcgen_certificate(
    names: &[&str],
    expired: bool,
) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2000, 12, 31);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (
        cert.der().clone(),
        PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
}

#[tokio::test]
async fn a_certificate_made_by_openssl_req_x509_defaults_is_a_ca_used_as_end_entity() {
    // `openssl req -x509` with its defaults (openssl.cnf's v3_ca: basicConstraints
    // CA:TRUE), the name given as a subjectAltName so that only the CA flag is wrong.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-client-errors");
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("openssl-cert.pem"), dir.join("openssl-key.pem"));
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs (Debian's openssl)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The PEM file loaded as the docs show (docs/mcp.md, "a private CA").
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(&key).unwrap();
    let port = serve_tls(certs.clone(), key).await;
    let trusted = tls::client_config_with_roots(certs).unwrap();
    let url = format!("https://localhost:{port}/mcp");
    let (error, rustls) = refused(mcp::Connect::new(&url).tls(trusted)).await;
    assert!(error.contains("TLS with localhost"), "{error}");
    assert!(error.contains("CaUsedAsEndEntity"), "{error}");
    assert!(rustls, "{error}");
}

#[tokio::test]
async fn a_certificate_for_another_name_is_told_with_the_host() {
    let (cert, key) = rcgen_certificate(&["mcp.example.org"], false);
    let port = serve_tls(vec![cert.clone()], key).await;
    let trusted = tls::client_config_with_roots([cert]).unwrap();
    let url = format!("https://localhost:{port}/mcp");
    let (error, rustls) = refused(mcp::Connect::new(&url).tls(trusted)).await;
    assert!(error.contains("TLS with localhost"), "{error}");
    assert!(
        error.contains("not valid for name \"localhost\""),
        "{error}"
    );
    assert!(rustls, "{error}");
}

#[tokio::test]
async fn an_issuer_nobody_trusts_is_told_with_the_host() {
    let (cert, key) = rcgen_certificate(&["localhost"], false);
    let port = serve_tls(vec![cert], key).await;
    // The default roots: Mozilla's, which never signed the test's certificate.
    let url = format!("https://localhost:{port}/mcp");
    let (error, rustls) = refused(mcp::Connect::new(&url)).await;
    assert!(error.contains("TLS with localhost"), "{error}");
    assert!(error.contains("UnknownIssuer"), "{error}");
    assert!(rustls, "{error}");
}

#[tokio::test]
async fn an_expired_certificate_is_told_with_the_host() {
    let (cert, key) = rcgen_certificate(&["localhost"], true);
    let port = serve_tls(vec![cert.clone()], key).await;
    let trusted = tls::client_config_with_roots([cert]).unwrap();
    let url = format!("https://localhost:{port}/mcp");
    let (error, rustls) = refused(mcp::Connect::new(&url).tls(trusted)).await;
    assert!(error.contains("TLS with localhost"), "{error}");
    assert!(error.contains("certificate expired"), "{error}");
    assert!(rustls, "{error}");
}

#[tokio::test]
async fn a_refused_connection_names_the_address() {
    // A port that was free a moment ago, and is closed now.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (error, _) = refused(mcp::Connect::new(&url)).await;
    assert!(
        error.contains(&format!("connecting to 127.0.0.1:{port}")),
        "{error}"
    );
    assert!(error.to_lowercase().contains("refused"), "{error}");
    // The raw connection's callers read the same cause.
    let client = ClientBuilder::new("errors-client", "1");
    let conn = mcp::connect(&url, builder(&client)).unwrap();
    let raw = conn
        .client
        .call_raw("ping", None)
        .await
        .expect_err("nobody listens");
    assert!(
        matches!(
            raw,
            sansrpc_tokio::CallError::Ended(sansrpc::connection::EndReason::Unanswered {
                status: None
            })
        ),
        "{raw:?}"
    );
    let cause = mcp::last_failure(&conn.client).expect("the cause is kept");
    assert!(
        cause.to_string().contains("client error (Connect)"),
        "{cause}"
    );
}

/// A server that wants a bearer token, and a connection without one: the call fails
/// saying the server asks for authorization, with its challenge, and how to give some.
#[tokio::test]
async fn a_server_that_asks_for_credentials_the_connection_lacks_says_so() {
    use sansrpc_mcp::streamable::{Auth, Principal};
    use sansrpc_mcp::tokio::TokenCheck;
    let server = ServerBuilder::new("errors-test", "1")
        .tool("ping_tool", "Answers", |_: Context, ()| async move {
            Ok::<_, McpError>("pong")
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut config = streamable::Config::default();
    config.auth = Some(Auth::new(
        &url,
        &format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"),
        "https://auth.example",
    ));
    let validator = |token: &str| match token {
        "right" => TokenCheck::Valid(Principal::new("someone", Vec::new())),
        _ => TokenCheck::Invalid,
    };
    let builder_server = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    tokio::spawn(mcp::serve_with(
        listener,
        builder_server,
        config,
        mcp::Options::default().validator(validator),
        std::future::pending(),
    ));
    let (error, _) = refused(mcp::Connect::new(&url)).await;
    assert!(error.contains("asks for authorization"), "{error}");
    assert!(error.contains("resource_metadata"), "{error}");
    assert!(error.contains("Connect::bearer"), "{error}");
    // A static token the server refuses: the resource step, with the server's error.
    let (error, _) = refused(mcp::Connect::new(&url).bearer("wrong")).await;
    assert!(
        error.contains("refused the token (401 invalid_token"),
        "{error}"
    );
    // The right one: served.
    let client = ClientBuilder::new("errors-client", "1");
    let conn = mcp::Connect::new(&url)
        .bearer("right")
        .connect(builder(&client))
        .unwrap();
    let session = client.initialize(&conn).await.unwrap();
    session.call_tool("ping_tool", ()).await.unwrap();
    session.close().await;
}

/// `Connect::oauth` sends the authorizer's tokens to this URL: an authorizer for another
/// resource (RFC 8707 audience) is refused at `connect`, naming both; one for the same
/// resource spelled another way (case, default port, fragment) is taken.
#[tokio::test]
async fn an_oauth_authorizer_for_another_resource_is_refused() {
    use sansrpc_mcp::tokio::oauth::driver::Authorizer;
    use sansrpc_mcp::tokio::oauth::Config as OAuthConfig;
    let redirect = "http://127.0.0.1:8765/callback";
    let authorizer = |resource: &str| {
        Authorizer::builder(OAuthConfig::authorization_code(resource, redirect).unwrap())
    };
    let client = ClientBuilder::new("errors-client", "1");
    let error = mcp::Connect::new("https://b.example/mcp")
        .oauth(authorizer("https://a.example/mcp"))
        .connect(builder(&client))
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    let text = error.to_string();
    assert!(text.contains("https://a.example/mcp"), "{text}");
    assert!(text.contains("https://b.example/mcp"), "{text}");
    // Another path of the same host is another resource too.
    let error = mcp::Connect::new("https://a.example/other")
        .oauth(authorizer("https://a.example/mcp"))
        .connect(builder(&client))
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);

    let same = mcp::Connect::new("HTTPS://A.Example:443/mcp#top")
        .oauth(authorizer("https://a.example/mcp"))
        .connect(builder(&client));
    assert!(same.is_ok(), "{:?}", same.err());
    // A resource that is the server's origin covers its endpoint; a sibling path does not.
    let origin = mcp::Connect::new("https://a.example/mcp")
        .oauth(authorizer("https://a.example"))
        .connect(builder(&client));
    assert!(origin.is_ok(), "{:?}", origin.err());
    let sibling = mcp::Connect::new("https://a.example/mcp2")
        .oauth(authorizer("https://a.example/mcp"))
        .connect(builder(&client));
    assert!(sibling.is_err());
}
