//! Shared by the machine's tests: a resource, an authorization server and a redirect URI
//! (none of them reached: the tests craft every answer), and helpers that drive the
//! machine through the steps a test is not about.
#![allow(dead_code)]

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sansrpc_oauth::{
    AuthorizationRequest, Config, Credentials, Error, HttpRequest, HttpResponse, OAuthClient,
    Output, RequestId, Verdict,
};
use serde_json::{json, Value};

pub const RS: &str = "https://mcp.example.com/mcp";
pub const AS: &str = "https://auth.example.com";
pub const REDIRECT: &str = "http://127.0.0.1:8765/callback";
pub const PRM_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
pub const PRM_ROOT: &str = "https://mcp.example.com/.well-known/oauth-protected-resource";
pub const ASM_URL: &str = "https://auth.example.com/.well-known/oauth-authorization-server";

/// A fixed instant (the tests move it by hand).
pub fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

pub fn config() -> Config {
    Config::authorization_code(RS, REDIRECT).unwrap()
}

pub fn client(config: Config) -> OAuthClient {
    OAuthClient::new(config, None, [1; 32])
}

pub fn client_with(config: Config, stored: Credentials) -> OAuthClient {
    OAuthClient::new(config, Some(stored), [1; 32])
}

/// The next output that is not a `Save`.
pub fn next(c: &mut OAuthClient) -> Output {
    loop {
        match c.poll() {
            Some(Output::Save(_)) => continue,
            Some(output) => return output,
            None => panic!("the machine has nothing to do"),
        }
    }
}

/// Every output left, which must be `Save`s then `Done`; the saved credentials.
pub fn finished(c: &mut OAuthClient) -> Vec<Credentials> {
    let mut saved = Vec::new();
    loop {
        match c.poll() {
            Some(Output::Save(credentials)) => saved.push(credentials),
            Some(Output::Done) => break,
            other => panic!("expected saves then the end of the flow, got {other:?}"),
        }
    }
    assert!(c.poll().is_none());
    saved
}

/// The next request the machine sends.
pub fn sent(c: &mut OAuthClient) -> (RequestId, HttpRequest) {
    match next(c) {
        Output::Send { id, request } => (id, request),
        other => panic!("expected a request, got {other:?}"),
    }
}

/// The next request, checked to be a GET of `url`; its id.
pub fn get(c: &mut OAuthClient, url: &str) -> RequestId {
    let (id, request) = sent(c);
    assert_eq!(request.method, sansrpc_oauth::Method::Get, "{request:?}");
    assert_eq!(request.url, url);
    id
}

/// The flow's failure.
pub fn failed(c: &mut OAuthClient) -> Error {
    match next(c) {
        Output::Failed(error) => error,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The user's part asked for.
pub fn user_part(c: &mut OAuthClient) -> AuthorizationRequest {
    match next(c) {
        Output::Authorize(request) => request,
        other => panic!("expected the user's part, got {other:?}"),
    }
}

pub fn done(c: &mut OAuthClient) {
    match next(c) {
        Output::Done => {}
        other => panic!("expected the end of the flow, got {other:?}"),
    }
}

pub fn ok(v: Value) -> HttpResponse {
    HttpResponse::json(200, &v)
}

pub fn prm(scopes: Option<&[&str]>) -> Value {
    let mut v = json!({"resource": RS, "authorization_servers": [AS]});
    if let Some(scopes) = scopes {
        v["scopes_supported"] = json!(scopes);
    }
    v
}

/// Authorization-server metadata for `issuer` with every endpoint, PKCE S256,
/// registration, `offline_access` among its scopes.
pub fn asm(issuer: &str) -> Value {
    let base = issuer.trim_end_matches('/');
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "scopes_supported": ["files:read", "files:write", "offline_access"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
    })
}

/// The pairs of a form body or query, first value of each name.
pub fn pairs(s: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(s.as_bytes()) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    out
}

pub fn form_of(request: &HttpRequest) -> HashMap<String, String> {
    pairs(std::str::from_utf8(&request.body).unwrap())
}

pub fn query_of(url: &str) -> HashMap<String, String> {
    pairs(url::Url::parse(url).unwrap().query().unwrap_or(""))
}

pub fn json_of(request: &HttpRequest) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

/// A 401 with `challenge` (a Bearer challenge's parameters) to a request without a token:
/// the flow starts.
pub fn unauthorized(c: &mut OAuthClient, challenge: &str) {
    let field = format!("Bearer {challenge}");
    assert_eq!(
        c.handle_resource_response(401, &[field.as_str()], None),
        Verdict::Retry
    );
}

/// Discovery from a 401 naming the path-aware metadata URL, answered with `prm` and
/// `asm`, up to the next step's output (left queued).
pub fn discover(c: &mut OAuthClient, challenge: &str, prm: Value, asm: Value) {
    unauthorized(c, challenge);
    let id = sent(c).0;
    c.handle_response(id, ok(prm), t0());
    let id = get(c, ASM_URL);
    c.handle_response(id, ok(asm), t0());
}

/// The registration answered with a confidential client using `method`.
pub fn register(c: &mut OAuthClient, method: &str) -> HttpRequest {
    let (id, request) = sent(c);
    assert_eq!(request.url, format!("{AS}/register"));
    c.handle_response(
        id,
        HttpResponse::json(
            201,
            &json!({"client_id": "dyn-1", "client_secret": "s3cret", "token_endpoint_auth_method": method}),
        ),
        t0(),
    );
    request
}

/// The redirect back for `request` with `code` (and `iss` when given).
pub fn redirect(request: &AuthorizationRequest, code: &str, iss: Option<&str>) -> String {
    let mut url = url::Url::parse(&request.redirect_uri).unwrap();
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("code", code)
            .append_pair("state", &request.state);
        if let Some(iss) = iss {
            q.append_pair("iss", iss);
        }
    }
    url.into()
}

pub fn token_answer(access: &str, refresh: Option<&str>, expires_in: u64) -> HttpResponse {
    let mut v = json!({"access_token": access, "token_type": "Bearer", "expires_in": expires_in});
    if let Some(refresh) = refresh {
        v["refresh_token"] = json!(refresh);
    }
    ok(v)
}

/// A whole authorization from the 401 to the token `access` (refresh token `refresh`,
/// an hour), through dynamic registration with `client_secret_post`.
pub fn authorize_fully(c: &mut OAuthClient, access: &str, refresh: Option<&str>) {
    discover(
        c,
        &format!(r#"resource_metadata="{PRM_URL}", scope="files:read""#),
        prm(None),
        asm(AS),
    );
    register(c, "client_secret_post");
    let user = user_part(c);
    c.handle_redirect(&redirect(&user, "code-1", Some(AS)));
    let (id, request) = sent(c);
    assert_eq!(form_of(&request)["grant_type"], "authorization_code");
    c.handle_response(id, token_answer(access, refresh, 3600), t0());
    done(c);
}
