//! The machine's discovery step with crafted answers: the challenge's metadata URL, the
//! well-known fallbacks in order, the resource and issuer checks, PKCE, and the errors
//! that name the step.

mod common;

use common::*;
use sansrpc_oauth::{Cause, Config, Credential, HttpResponse, Method, Step, Verdict};
use serde_json::json;

#[test]
fn a_401_without_a_token_starts_discovery_at_the_challenges_metadata_url() {
    let mut c = client(config());
    assert_eq!(c.credential(t0()), Credential::None);
    unauthorized(
        &mut c,
        r#"resource_metadata="https://mcp.example.com/custom/prm", scope="files:read""#,
    );
    assert!(c.is_busy());
    assert_eq!(c.credential(t0()), Credential::Wait);
    let (_, request) = sent(&mut c);
    assert_eq!(request.method, Method::Get);
    assert_eq!(request.url, "https://mcp.example.com/custom/prm");
    assert_eq!(request.header_value("accept"), Some("application/json"));
}

#[test]
fn without_a_challenge_url_the_path_aware_location_then_the_root() {
    let mut c = client(config().discovery_header("MCP-Protocol-Version", "2025-11-25"));
    assert_eq!(
        c.handle_resource_response(401, &["Bearer"], None),
        Verdict::Retry
    );
    let (id, request) = sent(&mut c);
    assert_eq!(request.url, PRM_URL);
    // What a protocol adds to discovery requests goes on each of them.
    assert_eq!(
        request.header_value("mcp-protocol-version"),
        Some("2025-11-25")
    );
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, ok(prm(None)), t0());
    let (_, request) = sent(&mut c);
    assert_eq!(request.url, ASM_URL);
    assert_eq!(
        request.header_value("mcp-protocol-version"),
        Some("2025-11-25")
    );
}

#[test]
fn a_plain_http_challenge_url_is_ignored_for_the_well_known_locations() {
    // A metadata URL in the clear (not loopback) could be rewritten on the way: the
    // well-known locations of the (https) resource are asked instead.
    let mut c = client(config());
    unauthorized(
        &mut c,
        r#"resource_metadata="http://mcp.example.com/.well-known/oauth-protected-resource/mcp""#,
    );
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, HttpResponse::new(404), t0());
    let error = failed(&mut c);
    assert_eq!(
        error.cause,
        Cause::NotFound {
            tried: vec![PRM_URL.into(), PRM_ROOT.into()]
        }
    );

    // On a loopback host, plain http is fine (as for every other endpoint).
    let local = Config::authorization_code("http://127.0.0.1:3000/mcp", REDIRECT).unwrap();
    let mut c = client(local);
    unauthorized(
        &mut c,
        r#"resource_metadata="http://127.0.0.1:3000/custom/prm""#,
    );
    get(&mut c, "http://127.0.0.1:3000/custom/prm");
}

#[test]
fn a_failing_challenge_url_falls_back_to_the_well_known_locations() {
    let mut c = client(config());
    unauthorized(
        &mut c,
        r#"resource_metadata="https://mcp.example.com/gone""#,
    );
    let id = get(&mut c, "https://mcp.example.com/gone");
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, HttpResponse::new(404), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(
        error.cause,
        Cause::NotFound {
            tried: vec![
                "https://mcp.example.com/gone".into(),
                PRM_URL.into(),
                PRM_ROOT.into()
            ]
        }
    );
    assert!(!c.is_busy());
    assert!(
        error.to_string().starts_with("OAuth discovery step failed"),
        "{error}"
    );
}

#[test]
fn no_resource_metadata_uses_the_configured_authorization_server() {
    let mut c = client(config().authorization_server(AS).unwrap());
    assert_eq!(c.handle_resource_response(401, &[], None), Verdict::Retry);
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, HttpResponse::new(400), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    // Registration next; the resource parameter is then the canonical URI.
    let (_, request) = sent(&mut c);
    assert_eq!(request.url, format!("{AS}/register"));
}

#[test]
fn a_server_error_at_a_metadata_location_stops_discovery() {
    let mut c = client(config());
    unauthorized(&mut c, "");
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, HttpResponse::new(503).with_body("down"), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(error.url.as_deref(), Some(PRM_URL));
    assert_eq!(
        error.cause,
        Cause::Status {
            status: 503,
            body: "down".into()
        }
    );
}

#[test]
fn metadata_for_another_resource_is_refused() {
    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    let other = json!({"resource": "https://evil.example.com/mcp", "authorization_servers": [AS]});
    c.handle_response(id, ok(other), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(
        error.cause,
        Cause::ResourceMismatch {
            expected: RS.into(),
            found: "https://evil.example.com/mcp".into()
        }
    );
}

#[test]
fn metadata_naming_a_parent_resource_is_used_as_the_resource_parameter() {
    let mut c = client(config());
    let parent = json!({"resource": "https://mcp.example.com", "authorization_servers": [AS]});
    discover(&mut c, "", parent, asm(AS));
    register(&mut c, "none");
    let user = user_part(&mut c);
    assert_eq!(query_of(&user.url)["resource"], "https://mcp.example.com");
}

#[test]
fn resource_metadata_that_is_not_usable_is_an_error_naming_it() {
    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    c.handle_response(
        id,
        ok(json!({"resource": RS, "authorization_servers": []})),
        t0(),
    );
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, ok(json!({"authorization_servers": [AS]})), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(error.url.as_deref(), Some(PRM_ROOT));
    let Cause::Invalid(why) = &error.cause else {
        panic!("{error:?}")
    };
    assert!(why.contains("missing field `resource`"), "{why}");

    // A usable-looking document that was not usable, then nothing: the document's fault
    // is the one told, at its URL.
    let mut c = client(config());
    unauthorized(&mut c, "");
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(json!({"resource": RS})), t0());
    let id = get(&mut c, PRM_ROOT);
    c.handle_response(id, HttpResponse::new(404), t0());
    let error = failed(&mut c);
    assert_eq!(error.url.as_deref(), Some(PRM_URL));
    assert!(
        matches!(error.cause, Cause::Invalid(ref why) if why.contains("authorization_servers")),
        "{error:?}"
    );
}

#[test]
fn an_issuer_with_a_path_is_looked_up_in_the_specified_order() {
    let issuer = "https://auth.example.com/tenant1";
    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    c.handle_response(
        id,
        ok(json!({"resource": RS, "authorization_servers": [issuer]})),
        t0(),
    );
    let id = get(
        &mut c,
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
    );
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(
        &mut c,
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
    );
    c.handle_response(
        id,
        HttpResponse::new(302).with_header("location", "/x"),
        t0(),
    );
    let id = get(
        &mut c,
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    );
    c.handle_response(id, ok(asm(issuer)), t0());
    let (_, request) = sent(&mut c);
    assert_eq!(request.url, "https://auth.example.com/tenant1/register");

    // An issuer without a path: OAuth, then OpenID Connect, at the root; none: not found.
    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, HttpResponse::new(404), t0());
    let id = get(
        &mut c,
        "https://auth.example.com/.well-known/openid-configuration",
    );
    c.handle_response(id, HttpResponse::new(404), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert!(matches!(error.cause, Cause::NotFound { ref tried } if tried.len() == 2));
}

#[test]
fn metadata_naming_another_issuer_is_not_used() {
    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm("https://attacker.example.com")), t0());
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(error.url.as_deref(), Some(ASM_URL));
    assert_eq!(
        error.cause,
        Cause::IssuerMismatch {
            expected: AS.into(),
            found: "https://attacker.example.com".into()
        }
    );

    // The root issuer's trailing slash is the one difference allowed.
    let mut c = client(config());
    discover(
        &mut c,
        &format!(r#"resource_metadata="{PRM_URL}""#),
        prm(None),
        asm("https://auth.example.com/"),
    );
    assert_eq!(sent(&mut c).1.url, "https://auth.example.com/register");
}

#[test]
fn a_server_without_pkce_s256_is_refused() {
    for methods in [json!(null), json!(["plain"])] {
        let mut c = client(config());
        let mut meta = asm(AS);
        meta["code_challenge_methods_supported"] = methods;
        discover(
            &mut c,
            &format!(r#"resource_metadata="{PRM_URL}""#),
            prm(None),
            meta,
        );
        let error = failed(&mut c);
        assert_eq!(error.step, Step::Discovery);
        assert_eq!(error.cause, Cause::NoPkce);
    }
}

#[test]
fn endpoints_that_are_neither_https_nor_loopback_are_refused() {
    let mut c = client(config());
    let mut meta = asm(AS);
    meta["token_endpoint"] = json!("http://auth.example.com/token");
    discover(
        &mut c,
        &format!(r#"resource_metadata="{PRM_URL}""#),
        prm(None),
        meta,
    );
    let error = failed(&mut c);
    assert_eq!(
        error.cause,
        Cause::Insecure("http://auth.example.com/token".into())
    );

    let mut c = client(config());
    unauthorized(&mut c, &format!(r#"resource_metadata="{PRM_URL}""#));
    let id = get(&mut c, PRM_URL);
    let plain = json!({"resource": RS, "authorization_servers": ["http://auth.example.com"]});
    c.handle_response(id, ok(plain), t0());
    assert_eq!(
        failed(&mut c).cause,
        Cause::Insecure("http://auth.example.com".into())
    );
}

#[test]
fn transport_failures_and_oversized_answers_name_the_step_and_url() {
    let mut c = client(config());
    unauthorized(&mut c, "");
    let id = get(&mut c, PRM_URL);
    c.handle_transport_error(id, "GET https://mcp.example.com/...: connection refused");
    let error = failed(&mut c);
    assert_eq!(error.step, Step::Discovery);
    assert_eq!(error.url.as_deref(), Some(PRM_URL));
    assert!(matches!(error.cause, Cause::Transport(ref why) if why.contains("refused")));

    let mut c = client(config().max_body(100));
    unauthorized(&mut c, "");
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, HttpResponse::new(200).with_body(vec![b' '; 101]), t0());
    let error = failed(&mut c);
    assert!(matches!(error.cause, Cause::Invalid(ref why) if why.contains("100 bytes")));
}

#[test]
fn answers_to_other_requests_are_ignored() {
    let mut c = client(config());
    unauthorized(&mut c, "");
    let id = get(&mut c, PRM_URL);
    let mut c2 = client(config());
    unauthorized(&mut c2, "");
    get(&mut c2, PRM_URL);
    unauthorized(&mut c2, "");
    // A second flow is not started while one runs; an unknown id changes nothing.
    assert!(c2.poll().is_none());
    c.handle_redirect("http://127.0.0.1:8765/callback?code=x&state=y");
    assert!(c.poll().is_none());
    c.handle_response(id, ok(prm(None)), t0());
    get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    assert!(c.poll().is_none(), "a stale answer was taken");
}

#[test]
fn a_bad_configuration_is_an_error_of_its_own_step() {
    for (resource, redirect) in [
        ("mcp.example.com", REDIRECT),
        ("http://mcp.example.com/mcp", REDIRECT),
        (RS, "http://example.com/callback"),
        (RS, "not a url"),
    ] {
        let error = Config::authorization_code(resource, redirect).unwrap_err();
        assert_eq!(error.step, Step::Configuration, "{resource} {redirect}");
    }
    assert!(config()
        .client_metadata_url("https://app.example.com/")
        .is_err());
    assert!(config()
        .client_metadata_url("http://app.example.com/client.json")
        .is_err());
    assert_eq!(config().resource(), RS);
    assert_eq!(
        Config::authorization_code("HTTPS://MCP.example.com/", REDIRECT)
            .unwrap()
            .resource(),
        "https://mcp.example.com"
    );
}
