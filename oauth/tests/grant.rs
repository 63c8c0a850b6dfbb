//! The machine's identity, registration, authorization and token steps with crafted
//! answers: the specification's order of client identities, the three token-endpoint
//! authentication methods, PKCE, `state`, `iss`, `resource`, scope selection, and errors
//! that carry the server's `error` and `error_description`.

mod common;

use base64::Engine;
use common::*;
use sansrpc_oauth::{
    AuthMethod, Cause, ClientMetadata, Config, Credential, HttpResponse, Output, Pkce,
    PreRegistered, Step,
};
use serde_json::json;

const CHALLENGE: &str = r#"resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read""#;

#[test]
fn the_whole_code_flow_with_dynamic_registration() {
    let mut c = client(
        config().registration(ClientMetadata::new("the tests").software("sansrpc-tests", "1.0")),
    );
    discover(
        &mut c,
        CHALLENGE,
        prm(Some(&["files:read", "files:write"])),
        asm(AS),
    );

    // Registration (RFC 7591): the redirect URI, both grants, the challenge's scope with
    // offline_access (the server lists it), a native application (a loopback redirect).
    let request = register(&mut c, "client_secret_basic");
    assert_eq!(
        request.header_value("content-type"),
        Some("application/json")
    );
    let body = json_of(&request);
    assert_eq!(body["redirect_uris"], json!([REDIRECT]));
    assert_eq!(
        body["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(body["response_types"], json!(["code"]));
    assert_eq!(body["scope"], "files:read offline_access");
    assert_eq!(body["application_type"], "native");
    assert_eq!(body["client_name"], "the tests");
    assert_eq!(body["software_id"], "sansrpc-tests");
    assert!(body.get("token_endpoint_auth_method").is_none());

    // The user's part: PKCE S256, state, scope, resource (RFC 8707), prompt=consent.
    let user = user_part(&mut c);
    assert_eq!(user.redirect_uri, REDIRECT);
    assert!(user.url.starts_with("https://auth.example.com/authorize?"));
    let q = query_of(&user.url);
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "dyn-1");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["state"], user.state);
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["scope"], "files:read offline_access");
    assert_eq!(q["prompt"], "consent");
    assert_eq!(q["resource"], RS);
    assert_eq!(c.credential(t0()), Credential::Wait);

    // The code exchange: the verifier of the challenge sent, Basic authentication.
    c.handle_redirect(&redirect(&user, "the-code", Some(AS)));
    let (id, request) = sent(&mut c);
    assert_eq!(request.url, format!("{AS}/token"));
    assert_eq!(
        request.header_value("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let form = form_of(&request);
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "the-code");
    assert_eq!(form["redirect_uri"], REDIRECT);
    assert_eq!(form["resource"], RS);
    assert_eq!(form["client_id"], "dyn-1");
    assert!(!form.contains_key("client_secret"));
    assert_eq!(
        Pkce::from_verifier(form["code_verifier"].clone()).challenge,
        q["code_challenge"]
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("dyn-1:s3cret");
    assert_eq!(
        request.header_value("authorization"),
        Some(format!("Basic {basic}").as_str())
    );

    c.handle_response(id, token_answer("at-1", Some("rt-1"), 3600), t0());
    let kept = finished(&mut c);
    let last = kept.last().unwrap();
    let tokens = last.tokens.as_ref().unwrap();
    assert_eq!(tokens.access_token, "at-1");
    assert_eq!(tokens.refresh_token.as_deref(), Some("rt-1"));
    assert_eq!(tokens.scope.as_deref(), Some("files:read offline_access"));
    assert_eq!(tokens.issuer.as_deref(), Some(AS));
    assert_eq!(tokens.resource.as_deref(), Some(RS));
    assert_eq!(tokens.expires_at, Some(1_700_000_000 + 3600));
    let client = last.client.as_ref().unwrap();
    assert_eq!(client.client_id, "dyn-1");
    assert_eq!(client.auth_method, AuthMethod::ClientSecretBasic);
    assert_eq!(client.issuer.as_deref(), Some(AS));
    // The secrets stay out of the debug output.
    assert!(!format!("{last:?}").contains("s3cret"));
    assert!(!format!("{last:?}").contains("at-1"));
    assert_eq!(c.credential(t0()), Credential::Bearer("Bearer at-1".into()));
    assert!(!c.is_busy());
}

#[test]
fn a_pre_registered_client_comes_first() {
    let mut meta = asm(AS);
    meta["client_id_metadata_document_supported"] = json!(true);
    let mut c = client(
        config()
            .pre_registered(PreRegistered::new("pre-1").secret("pw"))
            .client_metadata_url("https://app.example.com/client.json")
            .unwrap(),
    );
    discover(&mut c, CHALLENGE, prm(None), meta);
    let user = user_part(&mut c);
    assert_eq!(query_of(&user.url)["client_id"], "pre-1");
    c.handle_redirect(&redirect(&user, "c", None));
    let (_, request) = sent(&mut c);
    // Basic first when the server offers it.
    assert!(request
        .header_value("authorization")
        .is_some_and(|v| v.starts_with("Basic ")));
}

#[test]
fn a_client_id_metadata_document_when_the_server_supports_it() {
    let cimd = "https://app.example.com/oauth/client.json";
    let mut meta = asm(AS);
    meta["client_id_metadata_document_supported"] = json!(true);
    let mut c = client(config().client_metadata_url(cimd).unwrap());
    discover(&mut c, CHALLENGE, prm(None), meta);
    let user = user_part(&mut c);
    assert_eq!(query_of(&user.url)["client_id"], cimd);
    c.handle_redirect(&redirect(&user, "c", None));
    let (_, request) = sent(&mut c);
    let form = form_of(&request);
    assert_eq!(form["client_id"], cimd);
    assert!(!form.contains_key("client_secret"));
    assert!(request.header_value("authorization").is_none());

    // Not supported: dynamic registration instead.
    let mut c = client(config().client_metadata_url(cimd).unwrap());
    discover(&mut c, CHALLENGE, prm(None), asm(AS));
    assert_eq!(sent(&mut c).1.url, format!("{AS}/register"));
}

#[test]
fn no_way_to_identify_the_client_is_a_registration_error() {
    let mut meta = asm(AS);
    meta.as_object_mut()
        .unwrap()
        .remove("registration_endpoint");
    let mut c = client(config());
    discover(&mut c, CHALLENGE, prm(None), meta);
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Registration);
    assert_eq!(error.cause, Cause::NoClientIdentity);

    let mut c = client(config().without_registration());
    discover(&mut c, CHALLENGE, prm(None), asm(AS));
    assert_eq!(failed(&mut c).cause, Cause::NoClientIdentity);
}

#[test]
fn pre_registered_credentials_bound_to_another_server_are_not_shown_to_this_one() {
    let mut c = client(
        config().pre_registered(
            PreRegistered::new("pre-1")
                .secret("pw")
                .issuer("https://old-auth.example.com"),
        ),
    );
    discover(&mut c, CHALLENGE, prm(None), asm(AS));
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Registration);
    assert_eq!(
        error.cause,
        Cause::IssuerMismatch {
            expected: "https://old-auth.example.com".into(),
            found: AS.into()
        }
    );
}

#[test]
fn the_three_token_endpoint_authentication_methods() {
    for (method, header, secret_in_body) in [
        ("client_secret_basic", true, false),
        ("client_secret_post", false, true),
        ("none", false, false),
    ] {
        let mut c = client(config());
        discover(&mut c, CHALLENGE, prm(None), asm(AS));
        let (id, _) = sent(&mut c);
        let mut registered = json!({"client_id": "dyn-1", "token_endpoint_auth_method": method});
        if method != "none" {
            registered["client_secret"] = json!("s3cret");
        }
        c.handle_response(id, HttpResponse::json(201, &registered), t0());
        let user = user_part(&mut c);
        c.handle_redirect(&redirect(&user, "c", None));
        let (_, request) = sent(&mut c);
        let form = form_of(&request);
        assert_eq!(form["client_id"], "dyn-1", "{method}");
        assert_eq!(
            request.header_value("authorization").is_some(),
            header,
            "{method}"
        );
        assert_eq!(
            form.get("client_secret").map(String::as_str),
            secret_in_body.then_some("s3cret"),
            "{method}"
        );
    }
}

#[test]
fn registration_failures_carry_the_servers_error() {
    let mut c = client(config());
    discover(&mut c, CHALLENGE, prm(None), asm(AS));
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        HttpResponse::json(
            400,
            &json!({"error": "invalid_redirect_uri", "error_description": "loopback only"}),
        ),
        t0(),
    );
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Registration);
    assert_eq!(
        error.url.as_deref(),
        Some("https://auth.example.com/register")
    );
    let server = error.server_error().unwrap();
    assert_eq!(server.status, 400);
    assert_eq!(server.error, "invalid_redirect_uri");
    assert_eq!(server.error_description.as_deref(), Some("loopback only"));
    assert!(
        error
            .to_string()
            .contains("invalid_redirect_uri: loopback only"),
        "{error}"
    );

    // A registration this client cannot use.
    for registered in [
        json!({"client_id": "x", "token_endpoint_auth_method": "private_key_jwt"}),
        json!({"client_id": "x", "token_endpoint_auth_method": "client_secret_post"}),
        json!({"client_secret": "x"}),
    ] {
        let mut c = client(config());
        discover(&mut c, CHALLENGE, prm(None), asm(AS));
        let (id, _) = sent(&mut c);
        c.handle_response(id, HttpResponse::json(201, &registered), t0());
        let error = failed(&mut c);
        assert_eq!(error.step, Step::Registration, "{registered}");
        assert!(matches!(error.cause, Cause::Invalid(_)), "{error:?}");
    }
}

/// A flow waiting for its redirect, registered as a public client, the server advertising
/// `iss` in redirects when `iss_supported`.
fn at_the_redirect(
    iss_supported: bool,
) -> (
    sansrpc_oauth::OAuthClient,
    sansrpc_oauth::AuthorizationRequest,
) {
    let mut c = client(config());
    let mut meta = asm(AS);
    if iss_supported {
        meta["authorization_response_iss_parameter_supported"] = json!(true);
    }
    discover(&mut c, CHALLENGE, prm(None), meta);
    register(&mut c, "client_secret_post");
    let user = user_part(&mut c);
    (c, user)
}

#[test]
fn the_redirects_state_is_checked() {
    let (mut c, _) = at_the_redirect(false);
    c.handle_redirect(&format!("{REDIRECT}?code=c&state=forged"));
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Authorization);
    assert_eq!(error.cause, Cause::StateMismatch);

    let (mut c, _) = at_the_redirect(false);
    c.handle_redirect(&format!("{REDIRECT}?code=c"));
    assert_eq!(failed(&mut c).cause, Cause::StateMismatch);
}

#[test]
fn the_redirects_iss_is_checked_as_rfc_9207_and_the_mcp_table_say() {
    // Advertised and present: compared as strings (no normalization).
    let (mut c, user) = at_the_redirect(true);
    c.handle_redirect(&redirect(&user, "c", Some("https://auth.example.com/")));
    assert_eq!(
        failed(&mut c).cause,
        Cause::IssuerMismatch {
            expected: AS.into(),
            found: "https://auth.example.com/".into()
        }
    );
    // Advertised and absent: refused.
    let (mut c, user) = at_the_redirect(true);
    c.handle_redirect(&redirect(&user, "c", None));
    assert_eq!(
        failed(&mut c).cause,
        Cause::IssuerMismatch {
            expected: AS.into(),
            found: String::new()
        }
    );
    // Not advertised but present: compared all the same.
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&redirect(&user, "c", Some("https://evil.example.com")));
    assert!(matches!(failed(&mut c).cause, Cause::IssuerMismatch { .. }));
    // Not advertised and absent: the code is exchanged.
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&redirect(&user, "c", None));
    assert_eq!(form_of(&sent(&mut c).1)["code"], "c");
}

#[test]
fn an_error_on_the_redirect_is_believed_only_after_its_iss() {
    let (mut c, user) = at_the_redirect(true);
    c.handle_redirect(&format!(
        "{REDIRECT}?error=access_denied&error_description=the+user+said+no&state={}&iss={}",
        user.state, "https%3A%2F%2Fauth.example.com"
    ));
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Authorization);
    let server = error.server_error().unwrap();
    assert_eq!(server.error, "access_denied");
    assert_eq!(
        server.error_description.as_deref(),
        Some("the user said no")
    );

    let (mut c, user) = at_the_redirect(true);
    c.handle_redirect(&format!(
        "{REDIRECT}?error=access_denied&state={}&iss=https%3A%2F%2Fevil.example.com",
        user.state
    ));
    assert!(matches!(failed(&mut c).cause, Cause::IssuerMismatch { .. }));
}

#[test]
fn a_refused_redirect_is_told_without_its_code_and_state() {
    // Errors are displayed and logged: the code and the state in the redirect are not.
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&format!(
        "http://127.0.0.1:8765/other?code=secret-code-1&state={}",
        user.state
    ));
    let text = failed(&mut c).to_string();
    assert!(!text.contains("secret-code-1"), "{text}");
    assert!(!text.contains(&user.state), "{text}");
    assert!(text.contains("http://127.0.0.1:8765/other?code="), "{text}");

    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&format!(
        "127.0.0.1:8765/callback?state={}&code=secret-code-2#x",
        user.state
    ));
    let text = failed(&mut c).to_string();
    assert!(!text.contains("secret-code-2"), "{text}");
    assert!(!text.contains(&user.state), "{text}");
    assert!(text.contains("is not a URL"), "{text}");
}

#[test]
fn a_redirect_elsewhere_or_with_repeated_parameters_is_refused() {
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&format!(
        "http://127.0.0.1:8765/other?code=c&state={}",
        user.state
    ));
    assert_eq!(failed(&mut c).step, Step::Authorization);

    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&format!("{REDIRECT}?code=a&code=b&state={}", user.state));
    assert!(
        matches!(failed(&mut c).cause, Cause::Invalid(ref why) if why.contains("`code` more than once"))
    );

    let (mut c, _) = at_the_redirect(false);
    c.handle_user_error("the browser could not be opened");
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Authorization);
    assert_eq!(
        error.cause,
        Cause::User("the browser could not be opened".into())
    );
}

#[test]
fn token_failures_carry_the_servers_error_and_a_stale_registration_is_dropped() {
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&redirect(&user, "bad-code", None));
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        HttpResponse::json(400, &json!({"error": "invalid_grant", "error_description": "authorization code does not exist"})),
        t0(),
    );
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Token);
    assert_eq!(error.url.as_deref(), Some("https://auth.example.com/token"));
    assert_eq!(error.server_error().unwrap().error, "invalid_grant");
    assert!(c.credentials().client.is_some());

    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&redirect(&user, "c", None));
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        HttpResponse::json(
            401,
            &json!({"error": "invalid_client", "error_description": "Invalid client_secret"}),
        ),
        t0(),
    );
    // The registration the server does not know is forgotten (and kept so), then the
    // failure.
    match c.poll() {
        Some(Output::Save(kept)) => assert!(kept.client.is_none()),
        other => panic!("{other:?}"),
    }
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Token);
    let server = error.server_error().unwrap();
    assert_eq!(
        (server.status, server.error.as_str()),
        (401, "invalid_client")
    );
    assert_eq!(
        server.error_description.as_deref(),
        Some("Invalid client_secret")
    );
    assert!(c.credentials().client.is_none());
}

#[test]
fn a_token_answer_that_is_not_a_bearer_token_is_refused() {
    let (mut c, user) = at_the_redirect(false);
    c.handle_redirect(&redirect(&user, "c", None));
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        ok(json!({"access_token": "x", "token_type": "DPoP"})),
        t0(),
    );
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Token);
    assert!(matches!(error.cause, Cause::Invalid(ref why) if why.contains("DPoP")));
}

#[test]
fn scope_from_the_challenge_else_the_resource_else_the_configuration_else_none() {
    let scope_of = |challenge: &str, scopes: Option<&[&str]>, config: Config| {
        let mut c = client(config.offline_access(false));
        discover(&mut c, challenge, prm(scopes), asm(AS));
        register(&mut c, "none");
        query_of(&user_part(&mut c).url).get("scope").cloned()
    };
    assert_eq!(
        scope_of(CHALLENGE, Some(&["files:read", "files:write"]), config()).as_deref(),
        Some("files:read")
    );
    assert_eq!(
        scope_of("", Some(&["files:read", "files:write"]), config()).as_deref(),
        Some("files:read files:write")
    );
    assert_eq!(
        scope_of("", None, config().scope("mine")).as_deref(),
        Some("mine")
    );
    assert_eq!(scope_of("", None, config()), None);
}

#[test]
fn offline_access_only_when_the_server_lists_it() {
    let mut meta = asm(AS);
    meta["scopes_supported"] = json!(["files:read"]);
    let mut c = client(config());
    discover(&mut c, CHALLENGE, prm(None), meta);
    register(&mut c, "none");
    let q = query_of(&user_part(&mut c).url);
    assert_eq!(q["scope"], "files:read");
    assert!(!q.contains_key("prompt"));
}

#[test]
fn each_authorization_has_its_own_state_and_verifier() {
    let (mut c, first) = at_the_redirect(false);
    c.handle_user_error("closed");
    failed(&mut c);
    unauthorized(&mut c, CHALLENGE);
    let id = sent(&mut c).0;
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    // The registration is kept: straight to the user's part.
    let second = user_part(&mut c);
    assert_ne!(first.state, second.state);
    assert_ne!(
        query_of(&first.url)["code_challenge"],
        query_of(&second.url)["code_challenge"]
    );
    // The same seed gives the same sequence: the machine is deterministic.
    let (_, again) = at_the_redirect(false);
    assert_eq!(again.state, first.state);
}
