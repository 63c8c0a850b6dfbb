//! The machine with tokens: refresh before expiry (time as input) and on a 401, one flow
//! shared by concurrent requests, step-up with the union of scopes and a limit, the
//! binding of stored credentials to their issuer, and the client credentials grant.

mod common;

use std::time::Duration;

use common::*;
use sansrpc_oauth::{
    AuthMethod, Cause, Config, Credential, Credentials, HttpResponse, Output, Step, TokenSet,
    Verdict,
};
use serde_json::json;

/// Discovery again from the well-known locations, answered as before.
fn rediscover(c: &mut sansrpc_oauth::OAuthClient) {
    let id = get(c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A machine holding the token `at-1` (refresh token `rt-1`, an hour from `t0`), which
/// the resource has accepted once, with the metadata discovered and a registration with
/// `client_secret_post`.
fn authorized() -> sansrpc_oauth::OAuthClient {
    let mut c = client(config());
    authorize_fully(&mut c, "at-1", Some("rt-1"));
    assert_eq!(
        c.handle_resource_response(200, &[], Some(&bearer("at-1"))),
        Verdict::Accept
    );
    c
}

#[test]
fn a_token_about_to_expire_is_refreshed_once_and_used_meanwhile() {
    let mut c = authorized();
    // 61 s before expiry: nothing to do.
    let early = t0() + Duration::from_secs(3600 - 61);
    assert_eq!(c.credential(early), Credential::Bearer(bearer("at-1")));
    assert!(!c.is_busy());

    // Within the 60 s margin: a refresh starts (no discovery again), and the token, still
    // valid, serves the requests meanwhile.
    let late = t0() + Duration::from_secs(3600 - 30);
    assert_eq!(c.credential(late), Credential::Bearer(bearer("at-1")));
    assert_eq!(c.credential(late), Credential::Bearer(bearer("at-1")));
    let (id, request) = sent(&mut c);
    assert!(c.poll().is_none(), "one refresh only");
    assert_eq!(request.url, format!("{AS}/token"));
    let form = form_of(&request);
    assert_eq!(form["grant_type"], "refresh_token");
    assert_eq!(form["refresh_token"], "rt-1");
    assert_eq!(form["resource"], RS);
    assert_eq!(form["client_id"], "dyn-1");
    assert_eq!(form["client_secret"], "s3cret");

    // The server did not rotate the refresh token: the old one is kept.
    c.handle_response(
        id,
        ok(json!({"access_token": "at-2", "token_type": "bearer", "expires_in": 3600})),
        late,
    );
    let saved = finished(&mut c);
    let tokens = saved.last().unwrap().tokens.clone().unwrap();
    assert_eq!(tokens.access_token, "at-2");
    assert_eq!(tokens.refresh_token.as_deref(), Some("rt-1"));
    assert_eq!(tokens.expires_at, Some(1_700_000_000 + 3600 - 30 + 3600));
    assert_eq!(c.credential(late), Credential::Bearer(bearer("at-2")));
}

#[test]
fn an_expired_token_waits_for_its_refresh() {
    let mut c = authorized();
    let after = t0() + Duration::from_secs(4000);
    assert_eq!(c.credential(after), Credential::Wait);
    let (id, _) = sent(&mut c);
    c.handle_response(id, token_answer("at-2", Some("rt-2"), 3600), after);
    finished(&mut c);
    assert_eq!(c.credential(after), Credential::Bearer(bearer("at-2")));
}

#[test]
fn a_401_refreshes_once_for_every_request_that_met_it() {
    let mut c = authorized();
    let sent_with = bearer("at-1");
    let challenge = r#"Bearer error="invalid_token""#;
    // Three requests sent with at-1 meet a 401: one refresh.
    for _ in 0..3 {
        assert_eq!(
            c.handle_resource_response(401, &[challenge], Some(&sent_with)),
            Verdict::Retry
        );
    }
    assert_eq!(c.credential(t0()), Credential::Wait);
    // A 401 runs discovery again (the resource may name another server now), then the
    // refresh.
    rediscover(&mut c);
    let (id, request) = sent(&mut c);
    assert!(c.poll().is_none());
    assert_eq!(form_of(&request)["grant_type"], "refresh_token");
    c.handle_response(id, token_answer("at-2", Some("rt-2"), 3600), t0());
    finished(&mut c);
    // A late 401 to the old token: send again with the new one, no flow.
    assert_eq!(
        c.handle_resource_response(401, &[challenge], Some(&sent_with)),
        Verdict::Retry
    );
    assert!(!c.is_busy());
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-2")));
    // The new token works: answers to it stand.
    assert_eq!(
        c.handle_resource_response(200, &[], Some(&bearer("at-2"))),
        Verdict::Accept
    );
}

#[test]
fn a_refused_refresh_falls_back_to_a_new_authorization() {
    let mut c = authorized();
    assert_eq!(
        c.handle_resource_response(401, &["Bearer"], Some(&bearer("at-1"))),
        Verdict::Retry
    );
    rediscover(&mut c);
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        HttpResponse::json(
            400,
            &json!({"error": "invalid_grant", "error_description": "refresh token has expired"}),
        ),
        t0(),
    );
    // The tokens are forgotten (and kept so), and the user's part follows with the
    // registration kept.
    let mut saved = Vec::new();
    let user = loop {
        match c.poll() {
            Some(Output::Save(credentials)) => saved.push(credentials),
            Some(Output::Authorize(request)) => break request,
            other => panic!("{other:?}"),
        }
    };
    assert!(saved.last().unwrap().tokens.is_none());
    assert_eq!(query_of(&user.url)["client_id"], "dyn-1");
    c.handle_redirect(&redirect(&user, "code-2", None));
    let (id, _) = sent(&mut c);
    c.handle_response(id, token_answer("at-3", Some("rt-3"), 3600), t0());
    finished(&mut c);
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-3")));
}

#[test]
fn an_asked_refresh_that_is_refused_is_an_error_of_the_refresh_step() {
    let mut c = authorized();
    c.refresh().unwrap();
    let (id, _) = sent(&mut c);
    c.handle_response(
        id,
        HttpResponse::json(
            401,
            &json!({"error": "invalid_client", "error_description": "Invalid client_secret"}),
        ),
        t0(),
    );
    let error = loop {
        match c.poll() {
            Some(Output::Save(_)) => continue,
            Some(Output::Failed(error)) => break error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(error.step, Step::Refresh);
    assert_eq!(error.server_error().unwrap().error, "invalid_client");
    assert!(
        error.to_string().contains("OAuth refresh step failed"),
        "{error}"
    );

    // No refresh token at all.
    let mut c = client(config());
    authorize_fully(&mut c, "at-1", None);
    let error = c.refresh().unwrap_err();
    assert_eq!(
        (error.step, error.cause),
        (Step::Refresh, Cause::NoRefreshToken)
    );
}

#[test]
fn a_401_to_a_token_just_issued_fails_rather_than_loop() {
    let mut c = client(config());
    authorize_fully(&mut c, "at-1", None);
    let verdict = c.handle_resource_response(
        401,
        &[r#"Bearer error="invalid_token", error_description="wrong audience""#],
        Some(&bearer("at-1")),
    );
    let Verdict::Fail(error) = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(error.step, Step::Resource);
    assert_eq!(
        error.cause,
        Cause::Rejected {
            status: 401,
            error: Some("invalid_token".into()),
            error_description: Some("wrong audience".into())
        }
    );

    // Once the token has worked, a later 401 (it was revoked) authorizes again.
    let mut c = client(config());
    authorize_fully(&mut c, "at-1", None);
    c.handle_resource_response(200, &[], Some(&bearer("at-1")));
    assert_eq!(
        c.handle_resource_response(401, &["Bearer"], Some(&bearer("at-1"))),
        Verdict::Retry
    );
    // A 401 runs discovery again (the resource may have moved to another server).
    get(&mut c, PRM_URL);
}

#[test]
fn a_403_for_insufficient_scope_steps_up_with_the_union_of_scopes() {
    let mut c = authorized();
    c.handle_resource_response(200, &[], Some(&bearer("at-1")));
    let challenge = r#"Bearer error="insufficient_scope", scope="files:write", error_description="write needed""#;
    assert_eq!(
        c.handle_resource_response(403, &[challenge], Some(&bearer("at-1"))),
        Verdict::Retry
    );
    // The old token still serves other requests; no discovery, no refresh: the user's
    // part at once, with what was asked before and what is asked now.
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-1")));
    let user = user_part(&mut c);
    assert_eq!(
        query_of(&user.url)["scope"],
        "files:read offline_access files:write"
    );
    c.handle_redirect(&redirect(&user, "code-2", None));
    let (id, _) = sent(&mut c);
    c.handle_response(id, token_answer("at-2", Some("rt-2"), 3600), t0());
    finished(&mut c);

    // A plain 403 stands.
    assert_eq!(
        c.handle_resource_response(403, &[r#"Bearer error="forbidden""#], Some(&bearer("at-2"))),
        Verdict::Accept
    );
}

#[test]
fn step_ups_stop_at_the_limit_and_a_success_resets_the_count() {
    let mut c = client(config().max_step_ups(2));
    authorize_fully(&mut c, "at-0", None);
    let challenge = r#"Bearer error="insufficient_scope", scope="admin""#;
    for n in 1..=2 {
        let current = bearer(&format!("at-{}", n - 1));
        assert_eq!(
            c.handle_resource_response(403, &[challenge], Some(&current)),
            Verdict::Retry,
            "step-up {n}"
        );
        let user = user_part(&mut c);
        c.handle_redirect(&redirect(&user, "c", None));
        let (id, _) = sent(&mut c);
        c.handle_response(id, token_answer(&format!("at-{n}"), None, 3600), t0());
        finished(&mut c);
    }
    let verdict = c.handle_resource_response(403, &[challenge], Some(&bearer("at-2")));
    let Verdict::Fail(error) = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(error.step, Step::Resource);
    assert_eq!(
        error.cause,
        Cause::StepUpLimit {
            attempts: 2,
            scope: Some("admin".into())
        }
    );
    // An answer the token passes resets the count.
    c.handle_resource_response(200, &[], Some(&bearer("at-2")));
    assert_eq!(
        c.handle_resource_response(403, &[challenge], Some(&bearer("at-2"))),
        Verdict::Retry
    );
}

#[test]
fn stored_credentials_from_another_authorization_server_are_dropped() {
    let stored = Credentials {
        client: Some(sansrpc_oauth::store::RegisteredClient {
            client_id: "old-client".into(),
            client_secret: Some("old".into()),
            auth_method: AuthMethod::ClientSecretBasic,
            issuer: Some("https://old-auth.example.com".into()),
            source: sansrpc_oauth::store::ClientSource::Registered,
        }),
        tokens: Some(TokenSet {
            access_token: "old-at".into(),
            refresh_token: Some("old-rt".into()),
            expires_at: None,
            issued_at: None,
            scope: None,
            issuer: Some("https://old-auth.example.com".into()),
            resource: Some(RS.into()),
        }),
    };
    let mut c = client_with(config(), stored);
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("old-at")));
    // The resource refuses it and names another server now: the stored token is tried
    // for a refresh only after discovery, which finds the new issuer.
    assert_eq!(
        c.handle_resource_response(
            401,
            &[&format!(r#"Bearer resource_metadata="{PRM_URL}""#)],
            Some(&bearer("old-at"))
        ),
        Verdict::Retry
    );
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    let mut saved = Vec::new();
    let request = loop {
        match c.poll() {
            Some(Output::Save(credentials)) => saved.push(credentials),
            Some(Output::Send { request, .. }) => break request,
            other => panic!("{other:?}"),
        }
    };
    // Registration anew at the new server: nothing of the old one is shown to it.
    assert_eq!(request.url, format!("{AS}/register"));
    assert_eq!(saved.last().unwrap(), &Credentials::default());
}

#[test]
fn stored_tokens_are_used_and_refreshed_after_discovery() {
    let stored = Credentials {
        client: Some(sansrpc_oauth::store::RegisteredClient {
            client_id: "dyn-9".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            issuer: Some(AS.into()),
            source: sansrpc_oauth::store::ClientSource::Registered,
        }),
        tokens: Some(TokenSet {
            access_token: "at-9".into(),
            refresh_token: Some("rt-9".into()),
            expires_at: Some(1_700_000_000 + 10),
            issued_at: None,
            scope: Some("files:read".into()),
            issuer: Some(AS.into()),
            resource: Some(RS.into()),
        }),
    };
    let mut c = client_with(config(), stored);
    // Within the margin: a refresh, which needs the token endpoint: discovery first.
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-9")));
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    let (id, request) = sent(&mut c);
    let form = form_of(&request);
    assert_eq!(
        (form["grant_type"].as_str(), form["refresh_token"].as_str()),
        ("refresh_token", "rt-9")
    );
    assert_eq!(form["client_id"], "dyn-9");
    c.handle_response(id, token_answer("at-10", None, 3600), t0());
    finished(&mut c);
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-10")));
}

#[test]
fn the_client_credentials_grant() {
    let config = Config::client_credentials(RS, "machine-1", "m-secret")
        .unwrap()
        .scope("jobs:run");
    let mut c = client(config);
    assert_eq!(
        c.handle_resource_response(401, &["Bearer"], None),
        Verdict::Retry
    );
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    let mut meta = asm(AS);
    // No PKCE needed without a user; no offline_access for a machine.
    meta.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    c.handle_response(id, ok(meta), t0());
    let (id, request) = sent(&mut c);
    let form = form_of(&request);
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["scope"], "jobs:run");
    assert_eq!(form["resource"], RS);
    assert!(request
        .header_value("authorization")
        .is_some_and(|v| v.starts_with("Basic ")));
    c.handle_response(id, token_answer("m-at-1", None, 600), t0());
    finished(&mut c);
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("m-at-1")));

    // Near expiry, with no refresh token: the grant again, no user; the token, still
    // valid, serves meanwhile.
    let later = t0() + Duration::from_secs(590);
    assert_eq!(c.credential(later), Credential::Bearer(bearer("m-at-1")));
    let (id, request) = sent(&mut c);
    assert_eq!(form_of(&request)["grant_type"], "client_credentials");
    c.handle_response(id, token_answer("m-at-2", None, 600), later);
    finished(&mut c);
    assert_eq!(c.credential(later), Credential::Bearer(bearer("m-at-2")));
    assert_eq!(c.tokens().unwrap().remaining(later), Some(600));
}

#[test]
fn cancelling_a_flow_ends_it_with_an_error() {
    let mut c = client(config());
    unauthorized(&mut c, "");
    let _ = sent(&mut c);
    c.cancel("the driver stopped");
    let error = failed(&mut c);
    assert_eq!(error.cause, Cause::User("the driver stopped".into()));
    assert!(!c.is_busy());
    assert_eq!(c.credential(t0()), Credential::None);
    assert!(c.poll().is_none());
}

#[test]
fn a_refresh_that_fails_at_once_is_waited_for_and_reported() {
    // Stored tokens about to expire, no client identity kept, and no way to get one.
    let stored = Credentials {
        client: None,
        tokens: Some(TokenSet {
            access_token: "at-9".into(),
            refresh_token: Some("rt-9".into()),
            expires_at: Some(1_700_000_000 + 10),
            issued_at: None,
            scope: None,
            issuer: Some(AS.into()),
            resource: Some(RS.into()),
        }),
    };
    let mut c = client_with(config().without_registration(), stored);
    assert_eq!(c.credential(t0()), Credential::Bearer(bearer("at-9")));
    let id = get(&mut c, PRM_URL);
    c.handle_response(id, ok(prm(None)), t0());
    let id = get(&mut c, ASM_URL);
    c.handle_response(id, ok(asm(AS)), t0());
    assert_eq!(failed(&mut c).cause, Cause::NoClientIdentity);
    // With the metadata known the next refresh fails without a request: the caller
    // waits, and finds the failure.
    for _ in 0..3 {
        assert_eq!(c.credential(t0()), Credential::Wait);
        let error = failed(&mut c);
        assert_eq!(
            (error.step, error.cause),
            (Step::Registration, Cause::NoClientIdentity)
        );
        assert!(c.poll().is_none());
    }
}

#[test]
fn a_refresh_answered_unavailable_or_too_many_requests_keeps_the_refresh_token() {
    let busy = [
        HttpResponse::json(503, &json!({"error": "temporarily_unavailable"})),
        HttpResponse::json(429, &json!({"error": "slow_down"})),
        HttpResponse::json(500, &json!({"error": "server_error"})),
        HttpResponse::json(400, &json!({"error": "temporarily_unavailable"})),
        // Not a refusal, whatever it names: the registration stays too.
        HttpResponse::json(503, &json!({"error": "invalid_client"})),
        // A proxy's page, not the authorization server's word on the grant.
        HttpResponse::new(404)
            .with_header("content-type", "text/html")
            .with_body("<h1>Not Found</h1>"),
    ];
    for answer in busy {
        let status = answer.status;
        let mut c = authorized();
        let late = t0() + Duration::from_secs(3600 - 30);
        assert_eq!(c.credential(late), Credential::Bearer(bearer("at-1")));
        let (id, request) = sent(&mut c);
        assert_eq!(form_of(&request)["refresh_token"], "rt-1");
        c.handle_response(id, answer, late);
        // The flow fails with the server's error: no new authorization, and the tokens
        // are not saved away.
        let error = loop {
            match c.poll() {
                Some(Output::Save(credentials)) => {
                    assert!(credentials.tokens.is_some(), "{status}: tokens dropped")
                }
                Some(Output::Failed(error)) => break error,
                other => panic!("{status}: {other:?}"),
            }
        };
        assert_eq!(error.step, Step::Refresh, "{status}");
        if let Some(server) = error.server_error() {
            assert_eq!(server.status, status);
        }
        assert!(c.poll().is_none(), "{status}");
        assert!(!c.is_busy(), "{status}");
        assert_eq!(c.tokens().unwrap().refresh_token.as_deref(), Some("rt-1"));
        assert!(
            c.credentials().client.is_some(),
            "{status}: registration dropped"
        );

        // A later try sends the same refresh token, and succeeds.
        assert_eq!(c.credential(late), Credential::Bearer(bearer("at-1")));
        let (id, request) = sent(&mut c);
        let form = form_of(&request);
        assert_eq!(form["grant_type"], "refresh_token", "{status}");
        assert_eq!(form["refresh_token"], "rt-1", "{status}");
        c.handle_response(id, token_answer("at-2", Some("rt-2"), 3600), late);
        finished(&mut c);
        assert_eq!(c.credential(late), Credential::Bearer(bearer("at-2")));
    }
}

#[test]
fn a_token_shorter_lived_than_twice_the_margin_is_refreshed_after_half_its_lifetime() {
    let mut c = authorized();
    let late = t0() + Duration::from_secs(3600 - 30);
    assert_eq!(c.credential(late), Credential::Bearer(bearer("at-1")));
    let (id, _) = sent(&mut c);
    // A 60 s token (no longer than the 60 s margin): used for 30 s, not refreshed at
    // every request.
    c.handle_response(id, token_answer("at-2", None, 60), late);
    finished(&mut c);
    for s in [0, 1, 29] {
        let now = late + Duration::from_secs(s);
        assert_eq!(c.credential(now), Credential::Bearer(bearer("at-2")), "{s}");
        assert!(!c.is_busy(), "refreshed after {s} s");
        assert!(c.poll().is_none());
    }
    let half = late + Duration::from_secs(30);
    assert_eq!(c.credential(half), Credential::Bearer(bearer("at-2")));
    let (id, request) = sent(&mut c);
    assert_eq!(form_of(&request)["refresh_token"], "rt-1");

    // A 0 s token: used once (for the request that waited for it), then refreshed.
    c.handle_response(id, token_answer("at-3", None, 0), half);
    finished(&mut c);
    assert_eq!(c.credential(half), Credential::Bearer(bearer("at-3")));
    assert!(!c.is_busy());
    assert_eq!(c.credential(half), Credential::Wait);
    let (id, request) = sent(&mut c);
    assert_eq!(form_of(&request)["grant_type"], "refresh_token");
    c.handle_response(id, token_answer("at-4", None, 3600), half);
    finished(&mut c);
    assert_eq!(c.credential(half), Credential::Bearer(bearer("at-4")));
}
