//! The hyper driver against a real authorization server: one built from the official MCP
//! Python SDK's own `mcp.server.auth` routes and provider interface (mcp 2.3.0 from PyPI,
//! pinned in interop/mcp-python/requirements.txt; the server is
//! interop/mcp-python/oauth_server.py), serving protected-resource metadata, its metadata,
//! dynamic registration, an authorization endpoint that approves at once, token, refresh and
//! revocation, and a resource behind the SDK's bearer middleware, over HTTPS with a CA and
//! a certificate this test makes (rcgen).
//!
//! The headless user agent follows the authorization redirect; the tests go from the first
//! 401 to a token, refresh it before and after its expiry (the driver's clock moved) and on
//! a 401 (the token revoked), and check that failures name their step and carry the
//! server's `error` and `error_description`: a wrong client secret at the token and
//! refresh steps, a bad code, and a certificate nobody trusts.

#[path = "../../tests/support/oauth_as.rs"]
mod oauth_as;
#[path = "../../tests/support/interop.rs"]
mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sansrpc_oauth::driver::rustls::pki_types::CertificateDer;
use sansrpc_oauth::driver::{
    Authorizer, BoxFuture, HeadlessUserAgent, HttpTransport, HyperTransport, LoopbackBrowser,
    UserAgent,
};
use sansrpc_oauth::store::{ClientSource, MemoryStore, TokenStore};
use sansrpc_oauth::{
    AuthMethod, AuthorizationRequest, Cause, ClientMetadata, Config, HttpRequest, PreRegistered,
    Step,
};
use serde_json::Value;

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// The SDK's authorization server on a free port, serving HTTPS with a certificate for
/// 127.0.0.1 issued by a CA made here; the CA's certificate.
struct Server {
    running: oauth_as::AuthServer,
    ca: CertificateDer<'static>,
}

impl Server {
    fn start(name: &str) -> Server {
        let ca = oauth_as::TestCa::new("sansrpc-oauth test CA");
        let running = oauth_as::AuthServer::start(
            env!("CARGO_MANIFEST_DIR"),
            &format!("oauth-{name}"),
            &ca,
            &[],
        );
        Server {
            running,
            ca: CertificateDer::from(ca.der),
        }
    }

    fn url(&self, path: &str) -> String {
        self.running.url(path)
    }

    fn transport(&self) -> HyperTransport {
        HyperTransport::with_roots([self.ca.clone()]).unwrap()
    }

    async fn stats(&self) -> Value {
        let answer = self
            .transport()
            .send(HttpRequest::get(self.url("/stats")))
            .await
            .unwrap();
        serde_json::from_slice(&answer.body).unwrap()
    }
}

/// A clock `offset` seconds ahead of the system's.
fn clock(offset: &Arc<AtomicU64>) -> impl Fn() -> SystemTime + Send + Sync + 'static {
    let offset = Arc::clone(offset);
    move || SystemTime::now() + Duration::from_secs(offset.load(Ordering::SeqCst))
}

/// GET /mcp through `authorizer`: the JSON the resource answers about the token.
async fn whoami(server: &Server, authorizer: &Authorizer) -> Value {
    let answer = authorizer
        .send(HttpRequest::get(server.url("/mcp")))
        .await
        .unwrap();
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    serde_json::from_slice(&answer.body).unwrap()
}

/// `n` GETs of /mcp at once, each on a task of its own; the answers.
async fn at_once(server: &Server, authorizer: &Authorizer, n: usize) -> Vec<Value> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let authorizer = authorizer.clone();
            let url = server.url("/mcp");
            tokio::spawn(async move { authorizer.send(HttpRequest::get(url)).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        let answer = task.await.unwrap().unwrap();
        assert_eq!(
            answer.status,
            200,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        answers.push(serde_json::from_slice(&answer.body).unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_the_first_401_to_a_token_then_refreshed_before_expiry_after_it_and_on_a_401() {
    let server = Server::start("flow");
    let store = Arc::new(MemoryStore::new());
    let offset = Arc::new(AtomicU64::new(0));
    let config = Config::authorization_code(&server.url("/mcp"), REDIRECT).unwrap();
    let authorizer = Authorizer::builder(config)
        .transport(server.transport())
        .user_agent(HeadlessUserAgent::new(server.transport()))
        .store(Arc::clone(&store))
        .clock(clock(&offset))
        .build()
        .unwrap();
    assert_eq!(authorizer.authorization().await.unwrap(), None);

    // The 401 names the metadata; discovery, registration (the server chose
    // client_secret_post), the code flow with PKCE, the token bound to the resource.
    let me = whoami(&server, &authorizer).await;
    assert_eq!(me["resource"], server.url("/mcp"));
    assert_eq!(
        me["scopes"],
        serde_json::json!(["mcp:read", "offline_access"])
    );
    let kept = store.load(&server.url("/mcp")).unwrap().unwrap();
    let client = kept.client.clone().unwrap();
    assert_eq!(me["client_id"], client.client_id.as_str());
    assert_eq!(client.source, ClientSource::Registered);
    assert_eq!(client.auth_method, AuthMethod::ClientSecretPost);
    assert_eq!(client.issuer.as_deref(), Some(server.url("").as_str()));
    let first = kept.tokens.clone().unwrap();
    assert!(first.refresh_token.is_some());
    assert_eq!(
        server.stats().await,
        serde_json::json!({"registrations": 1, "authorizations": 1, "code_exchanges": 1, "refreshes": 0})
    );

    // 30 s before expiry: the token still serves while the refresh it started runs in
    // the background; that refresh rotates both tokens and keeps them in the store.
    offset.store(3600 - 30, Ordering::SeqCst);
    let during = authorizer.authorization().await.unwrap().unwrap();
    assert_eq!(during, format!("Bearer {}", first.access_token));
    authorizer.settled().await.unwrap();
    let background = authorizer.tokens().unwrap();
    assert_ne!(background.access_token, first.access_token);
    assert_ne!(background.refresh_token, first.refresh_token);
    assert_eq!(
        store.load(&server.url("/mcp")).unwrap().unwrap().tokens,
        Some(background.clone())
    );
    assert_eq!(server.stats().await["refreshes"], 1);
    // Settled, nothing runs: at once.
    authorizer.settled().await.unwrap();

    // A refresh asked for with none running is one more.
    let second = authorizer.refresh().await.unwrap();
    assert_ne!(second.access_token, background.access_token);
    assert_ne!(second.refresh_token, background.refresh_token);
    assert_eq!(server.stats().await["refreshes"], 2);
    assert_eq!(
        whoami(&server, &authorizer).await["client_id"],
        me["client_id"]
    );

    // Past its expiry: eight requests at once wait for one refresh.
    offset.store(3600 - 30 + 4000, Ordering::SeqCst);
    for answer in at_once(&server, &authorizer, 8).await {
        assert_eq!(answer["resource"], server.url("/mcp"));
    }
    assert_ne!(
        authorizer.tokens().unwrap().access_token,
        second.access_token
    );

    // The server revokes the access token: eight requests meet a 401, one refresh follows
    // (after discovery again), and they go through, with no new registration or
    // authorization.
    let tokens = authorizer.tokens().unwrap();
    let revoke = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", &tokens.access_token)
        .append_pair("client_id", &client.client_id)
        .append_pair("client_secret", client.client_secret.as_deref().unwrap())
        .finish();
    let answer = server
        .transport()
        .send(
            HttpRequest::post(server.url("/revoke"), revoke.into_bytes())
                .header("content-type", "application/x-www-form-urlencoded"),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    at_once(&server, &authorizer, 8).await;
    assert_ne!(
        authorizer.tokens().unwrap().access_token,
        tokens.access_token
    );
    assert_eq!(
        server.stats().await,
        serde_json::json!({"registrations": 1, "authorizations": 1, "code_exchanges": 1, "refreshes": 4})
    );
}

#[tokio::test]
async fn client_secret_basic_and_a_wrong_secret_at_the_token_and_refresh_steps() {
    let server = Server::start("secrets");
    let store = Arc::new(MemoryStore::new());
    let resource = server.url("/mcp");
    let config = Config::authorization_code(&resource, REDIRECT)
        .unwrap()
        .registration(
            ClientMetadata::new("sansrpc-oauth test").auth_method(AuthMethod::ClientSecretBasic),
        );
    let authorizer = Authorizer::builder(config)
        .transport(server.transport())
        .user_agent(HeadlessUserAgent::new(server.transport()))
        .store(Arc::clone(&store))
        .build()
        .unwrap();
    let tokens = authorizer.authorize().await.unwrap();
    assert!(tokens.refresh_token.is_some());
    let client = store.load(&resource).unwrap().unwrap().client.unwrap();
    assert_eq!(client.auth_method, AuthMethod::ClientSecretBasic);
    whoami(&server, &authorizer).await;

    // The same client id, pre-registered with a wrong secret: the token step fails with
    // the server's invalid_client.
    let wrong = Config::authorization_code(&resource, REDIRECT)
        .unwrap()
        .pre_registered(
            PreRegistered::new(&client.client_id)
                .secret("not-the-secret")
                .auth_method(AuthMethod::ClientSecretBasic),
        );
    let error = Authorizer::builder(wrong)
        .transport(server.transport())
        .user_agent(HeadlessUserAgent::new(server.transport()))
        .build()
        .unwrap()
        .authorize()
        .await
        .unwrap_err();
    println!("{error}");
    assert_eq!(error.step, Step::Token, "{error}");
    assert_eq!(error.url.as_deref(), Some(server.url("/token").as_str()));
    let refused = error.server_error().unwrap();
    assert_eq!(
        (refused.status, refused.error.as_str()),
        (401, "invalid_client")
    );
    assert_eq!(
        refused.error_description.as_deref(),
        Some("Invalid client_secret")
    );
    assert!(
        error.to_string().contains("OAuth token step failed")
            && error
                .to_string()
                .contains("invalid_client: Invalid client_secret"),
        "{error}"
    );

    // The stored registration with a wrong secret: the refresh step fails the same way.
    let mut kept = store.load(&resource).unwrap().unwrap();
    kept.client.as_mut().unwrap().client_secret = Some("not-the-secret".into());
    let tampered = Arc::new(MemoryStore::new());
    tampered.save(&resource, &kept).unwrap();
    let error = Authorizer::builder(Config::authorization_code(&resource, REDIRECT).unwrap())
        .transport(server.transport())
        .store(tampered)
        .build()
        .unwrap()
        .refresh()
        .await
        .unwrap_err();
    println!("{error}");
    assert_eq!(error.step, Step::Refresh, "{error}");
    assert_eq!(error.server_error().unwrap().error, "invalid_client");
}

/// A user agent that comes back with another code than the server gave.
struct SwapsTheCode(HeadlessUserAgent);

impl UserAgent for SwapsTheCode {
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let back = self.0.authorize(request).await?;
            let mut url = url::Url::parse(&back).unwrap();
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k == "code" {
                        "not-a-code".into()
                    } else {
                        v.into_owned()
                    };
                    (k.into_owned(), v)
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
            Ok(url.into())
        })
    }
}

#[tokio::test]
async fn a_bad_code_and_an_untrusted_certificate_name_their_steps() {
    let server = Server::start("errors");
    let config = Config::authorization_code(&server.url("/mcp"), REDIRECT).unwrap();
    let error = Authorizer::builder(config.clone())
        .transport(server.transport())
        .user_agent(SwapsTheCode(HeadlessUserAgent::new(server.transport())))
        .build()
        .unwrap()
        .authorize()
        .await
        .unwrap_err();
    println!("{error}");
    assert_eq!(error.step, Step::Token, "{error}");
    let refused = error.server_error().unwrap();
    assert_eq!(refused.error, "invalid_grant");
    assert_eq!(
        refused.error_description.as_deref(),
        Some("authorization code does not exist")
    );

    // Mozilla's roots do not include the test's CA: discovery fails, saying why.
    let error = Authorizer::builder(config)
        .transport(HyperTransport::new())
        .build()
        .unwrap()
        .authorize()
        .await
        .unwrap_err();
    println!("{error}");
    assert_eq!(error.step, Step::Discovery, "{error}");
    let Cause::Transport(why) = &error.cause else {
        panic!("{error:?}")
    };
    assert!(
        why.contains("invalid peer certificate") && why.contains("UnknownIssuer"),
        "{why}"
    );
    assert!(
        error
            .url
            .as_deref()
            .is_some_and(|u| u.starts_with(&server.url("/.well-known/"))),
        "{error}"
    );
}

/// The user's part in a browser (`LoopbackBrowser`): the authorizer listens on the redirect
/// URI's loopback port and "opens" the authorization URL in a browser that follows its
/// redirects with GETs, the last one to that port, which answers it a page saying the
/// window may be closed; the code it carried gets the token. A redirect URI a browser
/// could not bring back here is refused, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_part_in_a_browser_comes_back_on_a_loopback_port() {
    let server = Server::start("browser");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (shown, mut page) = tokio::sync::mpsc::unbounded_channel::<String>();
    let transport = server.transport();
    let browser = LoopbackBrowser::with_opener(move |url| {
        let (transport, shown) = (transport.clone(), shown.clone());
        let mut at = url::Url::parse(url).map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            for _ in 0..5 {
                let answer = transport.send(HttpRequest::get(at.as_str())).await.unwrap();
                match answer.header("location") {
                    Some(location) => at = at.join(location).unwrap(),
                    None => {
                        let _ = shown.send(String::from_utf8_lossy(&answer.body).into_owned());
                        return;
                    }
                }
            }
        });
        Ok(())
    });
    let config = Config::authorization_code(&server.url("/mcp"), &redirect).unwrap();
    let authorizer = Authorizer::builder(config)
        .transport(server.transport())
        .user_agent(browser)
        .build()
        .unwrap();
    let me = whoami(&server, &authorizer).await;
    assert_eq!(me["resource"], server.url("/mcp"));
    let page = page.recv().await.unwrap();
    assert!(page.contains("You may close this window"), "{page}");

    // Not loopback (nor with a port): the flow fails at the user's part, saying why.
    let far =
        Config::authorization_code(&server.url("/mcp"), "https://app.example/callback").unwrap();
    let authorizer = Authorizer::builder(far)
        .transport(server.transport())
        .user_agent(LoopbackBrowser::with_opener(|_| Ok(())))
        .build()
        .unwrap();
    let error = authorizer.authorize().await.unwrap_err();
    assert_eq!(error.step, Step::Authorization, "{error}");
    assert!(
        error
            .to_string()
            .contains("not http on a loopback address with a port"),
        "{error}"
    );
}
