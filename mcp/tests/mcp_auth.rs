//! MCP over Streamable HTTP as an OAuth 2.1 resource server (`sansrpc_mcp::tokio::serve_with`
//! and its token validator), over a real socket on loopback with raw HTTP/1.1: no token,
//! an invalid one and one without the scope are refused (401, 401 `invalid_token`, 403
//! `insufficient_scope`, each with `WWW-Authenticate` naming the metadata document); the
//! RFC 9728 metadata document is served; a valid token's principal and the request's
//! header fields reach the tool's handler (`Context::http`), on a 2025-11-25 session and on
//! a stateless 2026-07-28 request; the `Authorization` field itself is not handed on. The
//! same with the tower service mounted in an axum app.
#![cfg(not(target_arch = "wasm32"))]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable::{self, Auth, Principal};
use sansrpc_mcp::tokio::McpService;
use sansrpc_mcp::tokio::{Options, TokenCheck};
use sansrpc_tokio::{sansrpc, Builder};

const METADATA: &str = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp";

/// The server on a free port: the standalone one, or (`mounted`) the same service mounted
/// in an axum app at `/mcp` and at the metadata document's path.
fn start(mounted: bool) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let server = ServerBuilder::new("auth-test", "1")
                .tool("whoami", "Who asks", |cx: Context, ()| async move {
                    let http = cx.http().ok_or_else(|| McpError::tool("no HTTP request"))?;
                    let who = http.principal.as_ref().map_or("nobody", |p| &p.subject);
                    let tenant = http.header("x-tenant").unwrap_or("none");
                    let auth = http.header("authorization").is_some();
                    Ok::<_, McpError>(format!("{who} {tenant} authorization:{auth}"))
                })
                .build();
            let builder = Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(server.router());
            let mut config = streamable::Config::default();
            let mut auth = Auth::new("http://127.0.0.1/mcp", METADATA, "https://auth.example");
            auth.scopes = vec!["mcp".into()];
            config.auth = Some(auth);
            let options = Options::default().validator(|token| match token {
                "good" => TokenCheck::Valid(Principal::new("alice", vec!["mcp".into()])),
                "weak" => TokenCheck::InsufficientScope("mcp".into()),
                _ => TokenCheck::Invalid,
            });
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            if mounted {
                let mcp = McpService::with_options(builder, config, options);
                let app = axum::Router::new()
                    .route_service("/mcp", mcp.clone())
                    .route_service("/.well-known/oauth-protected-resource/mcp", mcp);
                return axum::serve(listener, app).await;
            }
            let forever = std::future::pending::<()>();
            sansrpc_mcp::tokio::serve_with(listener, builder, config, options, forever).await
        })
    });
    port
}

/// One request on a new connection; the whole answer (head and body) as text.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{e}: {}", String::from_utf8_lossy(&answer)),
        }
        // A streamed answer ends with the response's event; the connection stays open.
        let text = String::from_utf8_lossy(&answer);
        if text.contains("text/event-stream") && text.contains("\"result\"") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const WHOAMI: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

#[test]
fn tokens_are_checked_and_the_principal_and_headers_reach_the_handler() {
    tokens_are_checked(start(false));
}

#[test]
fn the_mounted_service_checks_tokens_and_serves_the_metadata_alike() {
    tokens_are_checked(start(true));
}

fn tokens_are_checked(port: u16) {
    // Wait for the server to listen (it binds before the thread starts serving).
    let refused = |token: Option<&str>| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("Authorization", a)])
            .unwrap_or_default();
        http(port, "POST", "/mcp", &headers, INIT)
    };
    let none = refused(None);
    assert!(none.starts_with("HTTP/1.1 401"), "{none}");
    let challenge = header(&none, "www-authenticate").unwrap();
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
    let bad = refused(Some("forged"));
    assert!(bad.starts_with("HTTP/1.1 401"), "{bad}");
    assert!(header(&bad, "www-authenticate")
        .unwrap()
        .contains("error=\"invalid_token\""));
    let weak = refused(Some("weak"));
    assert!(weak.starts_with("HTTP/1.1 403"), "{weak}");
    let challenge = header(&weak, "www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\", scope=\"mcp\""),
        "{challenge}"
    );

    // The protected-resource metadata, without a token.
    let metadata = http(
        port,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    );
    assert!(metadata.starts_with("HTTP/1.1 200"), "{metadata}");
    assert!(
        metadata.contains(r#""resource":"http://127.0.0.1/mcp""#),
        "{metadata}"
    );
    assert!(metadata.contains("https://auth.example"), "{metadata}");

    // A session with a valid token: the handler sees alice and the tenant header.
    let good = [("Authorization", "Bearer good"), ("X-Tenant", "acme")];
    let init = http(port, "POST", "/mcp", &good, INIT);
    assert!(init.starts_with("HTTP/1.1 200"), "{init}");
    let session = header(&init, "mcp-session-id").unwrap().to_owned();
    let with_session = [
        ("Authorization", "Bearer good"),
        ("X-Tenant", "acme"),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let accepted = http(port, "POST", "/mcp", &with_session, initialized);
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    let called = http(port, "POST", "/mcp", &with_session, WHOAMI);
    assert!(
        called.contains("alice acme authorization:false"),
        "{called}"
    );
    // The same session without the token: refused, though the session exists.
    let no_token = [("Mcp-Session-Id", session.as_str())];
    let refused = http(port, "POST", "/mcp", &no_token, WHOAMI);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");

    // A stateless 2026-07-28 request with the token.
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let stateless = format!(
        r#"{{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{{"name":"whoami","arguments":{{}},{meta}}}}}"#
    );
    let headers = [
        ("Authorization", "Bearer good"),
        ("X-Tenant", "globex"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "whoami"),
    ];
    let called = http(port, "POST", "/mcp", &headers, &stateless);
    assert!(
        called.contains("alice globex authorization:false"),
        "{called}"
    );
}
