//! OAuth 2.1 end to end (issue 60), over HTTPS with a CA and certificates this test makes
//! (rcgen), through a real authorization server: the one built from the MCP Python SDK's
//! own `mcp.server.auth` routes and provider interface (interop/mcp-python/oauth_server.py,
//! mcp 2.3.0 pinned in interop/mcp-python/requirements.txt), issuing its access tokens as
//! HS256 JWTs for the resource they were asked for.
//!
//! The resource server is this crate's own OAuth-protected MCP server
//! (`sansrpc_mcp::tokio::serve_with` with `streamable::Config::auth` naming the Python
//! authorization server, and a validator that checks each JWT's signature, audience, issuer,
//! expiry and scope, as a resource server in another process would).
//!
//! - The sansrpc client (`Connect::oauth`, the headless user agent) from the first 401 to
//!   the tool's answer on both revisions: discovery (the server's challenge, its RFC 9728
//!   metadata, the authorization server's RFC 8414 metadata), dynamic registration, the
//!   code flow with PKCE, `resource` and `iss`; the credentials kept in a `TokenStore` serve
//!   a second connection with no new registration or authorization; a wrong client secret
//!   fails the call naming the token step and the server's `invalid_client`.
//! - The Python SDK's own OAuth client (`OAuthClientProvider`) against the same protected
//!   server, on both revisions (interop/mcp-python/oauth_client.py).
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/oauth_as.rs"]
mod oauth_as;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{Hmac, Mac};
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ClientError};
use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
use sansrpc_mcp::streamable::{Auth, Principal};
use sansrpc_mcp::tokio::oauth::driver::{
    Authorizer, HeadlessUserAgent, HttpTransport, HyperTransport,
};
use sansrpc_mcp::tokio::oauth::store::{ClientSource, MemoryStore, TokenStore};
use sansrpc_mcp::tokio::oauth::{AuthMethod, HttpRequest, PreRegistered, Step};
use sansrpc_mcp::tokio::{self as mcp, TokenCheck};
use sansrpc_mcp::types::ContentBlock;
use sansrpc_tokio::tls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sansrpc_tokio::{tls, Builder, ServeOptions};
use serde_json::Value;
use sha2::Sha256;

/// Shared by the authorization server (it signs) and the resource server (it checks).
const SECRET: &str = "sansrpc-mcp-oauth-end-to-end-secret";

/// Where the authorization server sends the user agent back (never fetched).
const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// The scope the protected server asks for.
const SCOPE: &str = "mcp:read";

/// The resource server's check of a token: an HS256 JWT signed with [`SECRET`] by `issuer`,
/// for `resource`, not expired, with [`SCOPE`].
fn check(token: &str, issuer: &str, resource: &str) -> TokenCheck {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = token.split('.');
    let (Some(head), Some(body), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return TokenCheck::Invalid;
    };
    let Ok(signature) = b64.decode(signature) else {
        return TokenCheck::Invalid;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(head.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    if mac.verify_slice(&signature).is_err() {
        return TokenCheck::Invalid;
    }
    let Some(claims) = b64
        .decode(body)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return TokenCheck::Invalid;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let for_us = match &claims["aud"] {
        Value::String(aud) => aud == resource,
        Value::Array(auds) => auds.iter().any(|a| a == resource),
        _ => false,
    };
    let live = matches!(claims["exp"].as_u64(), Some(exp) if exp > now);
    if !for_us || claims["iss"] != issuer || !live {
        return TokenCheck::Invalid;
    }
    let scopes: Vec<String> = claims["scope"]
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if !scopes.iter().any(|s| s == SCOPE) {
        return TokenCheck::InsufficientScope(SCOPE.to_owned());
    }
    let subject = claims["sub"].as_str().unwrap_or_default();
    TokenCheck::Valid(Principal::new(subject, scopes))
}

/// The protected MCP server over HTTPS (a certificate `ca` issued), whose tokens come from
/// the authorization server `issuer`; its URL.
async fn protected_server(ca: &oauth_as::TestCa, issuer: &str) -> String {
    let server = ServerBuilder::new("protected", "1")
        .tool("whoami", "Who asks", |cx: Context, ()| async move {
            let http = cx.http().ok_or_else(|| McpError::tool("no HTTP request"))?;
            let principal = http
                .principal
                .as_ref()
                .ok_or_else(|| McpError::tool("no principal"))?;
            Ok::<_, McpError>(format!(
                "{} {}",
                principal.subject,
                principal.scopes.join(",")
            ))
        })
        .build();
    let issued = ca.issue();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("https://127.0.0.1:{port}/mcp");
    let mut config = server.streamable_config();
    let mut auth = Auth::new(
        &url,
        &format!("https://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"),
        issuer,
    );
    auth.scopes = vec![SCOPE.to_owned()];
    config.auth = Some(auth);
    let mut serve = ServeOptions::default();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(issued.key_der));
    let chain = vec![
        CertificateDer::from(issued.leaf_der),
        CertificateDer::from(ca.der.clone()),
    ];
    serve.tls = Some(tls::server_config(chain, key).unwrap());
    let (issuer, resource) = (issuer.to_owned(), url.clone());
    let options = mcp::Options::default()
        .validator(move |token| check(token, &issuer, &resource))
        .serve_options(serve);
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    tokio::spawn(mcp::serve_with(
        listener,
        builder,
        config,
        options,
        std::future::pending(),
    ));
    url
}

fn text(blocks: &[ContentBlock]) -> &str {
    match blocks.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

/// The authorization server's counts (registrations, authorizations, code exchanges,
/// refreshes).
async fn stats(server: &oauth_as::AuthServer, ca: &oauth_as::TestCa) -> Value {
    let transport = HyperTransport::with_roots([CertificateDer::from(ca.der.clone())]).unwrap();
    let answer = transport
        .send(HttpRequest::get(server.url("/stats")))
        .await
        .unwrap();
    serde_json::from_slice(&answer.body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sansrpc_client_authorizes_through_the_python_sdk_authorization_server() {
    let ca = oauth_as::TestCa::new("sansrpc-mcp oauth test CA");
    let as_ = oauth_as::AuthServer::start(
        env!("CARGO_MANIFEST_DIR"),
        "mcp-oauth-sansrpc-client",
        &ca,
        &["--jwt-secret", SECRET],
    );
    let issuer = as_.url("");
    let url = protected_server(&ca, &issuer).await;
    let root = CertificateDer::from(ca.der.clone());
    let trusted = tls::client_config_with_roots([root.clone()]).unwrap();
    let store = Arc::new(MemoryStore::new());
    let headless = || HeadlessUserAgent::new(HyperTransport::with_roots([root.clone()]).unwrap());
    let oauth_config =
        || sansrpc_mcp::tokio::oauth::Config::authorization_code(&url, REDIRECT).unwrap();

    // A session (2025-11-25): the first 401 runs the whole flow, then every request of the
    // session carries the token.
    let client = ClientBuilder::new("oauth-e2e", "1");
    let conn = mcp::Connect::new(&url)
        .tls(Arc::clone(&trusted))
        .oauth(
            Authorizer::builder(oauth_config())
                .store(Arc::clone(&store))
                .user_agent(headless()),
        )
        .connect(
            Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(client.router()),
        )
        .unwrap();
    let session = client.initialize(&conn).await.unwrap();
    assert_eq!(session.server_info().name, "protected");
    let me = session.call_tool("whoami", ()).await.unwrap();
    let kept = store.load(&url).unwrap().expect("the credentials are kept");
    let registered = kept.client.expect("the client registered");
    assert_eq!(registered.source, ClientSource::Registered);
    assert_eq!(registered.issuer.as_deref(), Some(issuer.as_str()));
    let tokens = kept.tokens.expect("the tokens are kept");
    assert_eq!(tokens.resource.as_deref(), Some(url.as_str()));
    assert!(tokens.refresh_token.is_some(), "offline_access was offered");
    assert!(
        text(&me.content).starts_with(&registered.client_id),
        "{me:?}"
    );
    assert!(text(&me.content).contains(SCOPE), "{me:?}");
    session.close().await;

    // The stateless revision (2026-07-28) on a second connection: the token the store kept
    // serves it, with no new registration or authorization.
    let client = ClientBuilder::new("oauth-e2e", "1");
    let authorizer =
        Authorizer::builder(oauth_config().discovery_header("MCP-Protocol-Version", "2026-07-28"))
            .store(Arc::clone(&store))
            .transport(HyperTransport::with_roots([root.clone()]).unwrap())
            .user_agent(headless())
            .build()
            .unwrap();
    let conn = mcp::Connect::new(&url)
        .tls(Arc::clone(&trusted))
        .auth(authorizer)
        .connect(
            Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(client.router()),
        )
        .unwrap();
    let stateless = client.discover(&conn).await.unwrap();
    let me = stateless.call_tool("whoami", ()).await.unwrap();
    assert!(text(&me.content).contains(SCOPE), "{me:?}");
    let counts = stats(&as_, &ca).await;
    assert_eq!(counts["registrations"], 1, "{counts}");
    assert_eq!(counts["authorizations"], 1, "{counts}");
    assert_eq!(counts["code_exchanges"], 1, "{counts}");

    // The registered client with a wrong secret: the call fails naming the token step and
    // the authorization server's error.
    let client = ClientBuilder::new("oauth-e2e", "1");
    let wrong = PreRegistered::new(registered.client_id.clone())
        .secret("not-the-secret")
        .auth_method(AuthMethod::ClientSecretPost);
    let conn = mcp::Connect::new(&url)
        .tls(trusted)
        .oauth(Authorizer::builder(oauth_config().pre_registered(wrong)).user_agent(headless()))
        .connect(
            Builder::new()
                .config(Config::for_profile(Profile::Mcp))
                .router(client.router()),
        )
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), client.initialize(&conn))
        .await
        .expect("a failed authorization is told, not waited on")
        .expect_err("a wrong secret got a token");
    let ClientError::Transport { method, cause } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*method, "initialize");
    let oauth = cause
        .downcast_ref::<sansrpc_mcp::tokio::oauth::Error>()
        .unwrap_or_else(|| panic!("not an OAuth error: {error}"));
    assert_eq!(oauth.step, Step::Token, "{error}");
    assert_eq!(oauth.url.as_deref(), Some(as_.url("/token").as_str()));
    assert_eq!(
        oauth.server_error().map(|e| e.error.as_str()),
        Some("invalid_client"),
        "{error}"
    );
    let said = error.to_string();
    assert!(
        said.contains("OAuth token step failed") && said.contains("invalid_client"),
        "{said}"
    );
}

#[test]
fn the_python_sdk_oauth_client_reaches_our_protected_server() {
    let ca = oauth_as::TestCa::new("sansrpc-mcp oauth test CA");
    let as_ = oauth_as::AuthServer::start(
        env!("CARGO_MANIFEST_DIR"),
        "mcp-oauth-python-client",
        &ca,
        &["--jwt-secret", SECRET],
    );
    let issuer = as_.url("");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(protected_server(&ca, &issuer));
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-oauth-python-client");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let sdk = support::pip_install(env!("CARGO_MANIFEST_DIR"), "mcp-python");
    let script = support::interop(env!("CARGO_MANIFEST_DIR"), "mcp-python").join("oauth_client.py");
    for (mode, protocol) in [("legacy", "2025-11-25"), ("2026", "2026-07-28")] {
        let mut client = Command::new("python3");
        client
            .arg(&script)
            .arg(&url)
            .arg("--ca")
            .arg(&ca_file)
            .args(["--mode", mode])
            .env("PYTHONPATH", &sdk);
        let out = support::output_within(&mut client, support::CLIENT_TIMEOUT);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mode}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["protocol"], protocol, "{report}");
        assert_eq!(report["resource"], url.as_str(), "{report}");
        assert_eq!(report["iss"], issuer.as_str(), "{report}");
        assert_eq!(report["first"]["status"], 401, "{report}");
        assert_eq!(report["first"]["authorization"], false, "{report}");
        assert_eq!(report["later_with_token"], true, "{report}");
        assert_eq!(report["later_refused"], serde_json::json!([]), "{report}");
        // The tool saw the principal the validator read from the token: the client the
        // Python SDK registered, with the scope.
        let client_id = report["client_id"].as_str().unwrap();
        let whoami = report["whoami"].as_str().unwrap();
        assert!(
            whoami.starts_with(&format!("{client_id} ")) && whoami.contains(SCOPE),
            "{report}"
        );
    }
    drop(runtime);
}

/// An HS256 JWT as the authorization server issues them: for `audience`, by `issuer`, for
/// `subject` with [`SCOPE`], valid an hour. A token the user already has.
fn jwt(issuer: &str, audience: &str, subject: &str) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let head = b64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": issuer, "aud": audience, "sub": subject, "scope": SCOPE, "exp": now + 3600,
    });
    let body = b64.encode(claims.to_string());
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{head}.{body}").as_bytes());
    let signature = b64.encode(mac.finalize().into_bytes());
    format!("{head}.{body}.{signature}")
}

/// docs/mcp.md's first hour for a protected remote server, run: the `remote_client`
/// example trusting the test's CA from its PEM file, with a token the user already has;
/// with OAuth in a browser (`$BROWSER`: a program that opens the authorization URL and
/// follows its redirect to the example's loopback port, as a browser does); and with its
/// own `TokenStore` (a file), whose second run needs no browser at all.
#[test]
fn the_remote_client_example_three_ways() {
    let ca = oauth_as::TestCa::new("sansrpc-mcp oauth test CA");
    let as_ = oauth_as::AuthServer::start(
        env!("CARGO_MANIFEST_DIR"),
        "mcp-oauth-remote-client",
        &ca,
        &["--jwt-secret", SECRET],
    );
    let issuer = as_.url("");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(protected_server(&ca, &issuer));
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-oauth-remote-client");
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let ca_path = ca_file.to_str().unwrap();
    let example = support::built_example("sansrpc-mcp", "remote_client");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let run = |args: &[&str], browser: &std::path::Path| {
        let mut command = Command::new(&example);
        command
            .arg(&url)
            .args(["--ca", ca_path])
            .args(args)
            .env("BROWSER", browser);
        let out = support::output_within(&mut command, support::CLIENT_TIMEOUT);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    // A browser: fetches the authorization URL (trusting the test's CA) and follows its
    // redirects, the last one to the example's loopback redirect URI.
    let browser = dir.join("browser.py");
    std::fs::write(
        &browser,
        format!(
            "#!/usr/bin/env python3\nimport ssl, sys, urllib.request\n\
             context = ssl.create_default_context(cafile={ca_path:?})\n\
             urllib.request.urlopen(sys.argv[1], context=context, timeout=30).read()\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let no_browser = std::path::Path::new("/bin/false");

    // A token the user already has.
    let token = jwt(&issuer, &url, "someone-with-a-token");
    let printed = run(&["--token", &token], no_browser);
    assert_eq!(
        printed,
        [
            r#"tools: ["whoami"]"#.to_owned(),
            format!("whoami: someone-with-a-token {SCOPE}"),
        ]
    );

    // OAuth in the browser, the credentials kept in a file.
    let store = dir.join("credentials.json");
    let _ = std::fs::remove_file(&store);
    let store_path = store.to_str().unwrap();
    let oauth = ["--oauth", "--store", store_path, "--port", &port];
    let printed = run(&oauth, &browser);
    assert_eq!(printed[0], r#"tools: ["whoami"]"#, "{printed:?}");
    let kept: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    let client_id = kept[url.as_str()]["client"]["client_id"].as_str().unwrap();
    assert!(
        printed[1].starts_with(&format!("whoami: {client_id} ")) && printed[1].contains(SCOPE),
        "{printed:?}"
    );
    // Again: the file's token serves, no browser is opened (it would fail).
    let again = run(&oauth, no_browser);
    assert_eq!(again, printed);
    let counts = runtime.block_on(stats(&as_, &ca));
    assert_eq!(counts["authorizations"], 1, "{counts}");
    drop(runtime);
}
