//! The grant: dynamic registration, the user's part and its redirect, and the token
//! requests (code, client credentials, refresh).

use super::*;

impl OAuthClient {
    pub(super) fn register(&mut self) {
        let (Some(metadata), Some(client), Grant::AuthorizationCode { redirect_uri, raw }) = (
            &self.server_metadata,
            &self.config.registration,
            &self.config.grant,
        ) else {
            return self.fail(Error::new(Step::Registration, Cause::NoClientIdentity));
        };
        let url = metadata.registration_endpoint.clone().unwrap_or_default();
        let mut body = Map::new();
        body.insert("redirect_uris".into(), json!([raw]));
        body.insert("client_name".into(), json!(client.client_name));
        let mut grants = vec!["authorization_code"];
        if self.config.offline_access {
            grants.push("refresh_token");
        }
        body.insert("grant_types".into(), json!(grants));
        body.insert("response_types".into(), json!(["code"]));
        if let Some(method) = client.auth_method {
            body.insert("token_endpoint_auth_method".into(), json!(method.as_str()));
        }
        // MCP 2026-07-28: `native` for a loopback redirect, `web` for a remote one.
        let application_type = client.application_type.clone().unwrap_or_else(|| {
            let kind = if uri::is_loopback(redirect_uri) {
                "native"
            } else {
                "web"
            };
            kind.to_owned()
        });
        body.insert("application_type".into(), json!(application_type));
        for (name, value) in [
            ("client_uri", &client.client_uri),
            ("software_id", &client.software_id),
            ("software_version", &client.software_version),
        ] {
            if let Some(value) = value {
                body.insert(name.into(), json!(value));
            }
        }
        if let Some(scope) = &self.requested_scope {
            body.insert("scope".into(), json!(scope));
        }
        let request = HttpRequest::post(&url, Value::Object(body).to_string().into_bytes())
            .header("content-type", "application/json")
            .header("accept", "application/json");
        let id = self.send(request);
        self.set_phase(Phase::Register { id, url });
    }

    pub(super) fn on_registration(&mut self, url: String, answer: HttpResponse) {
        if !answer.is_success() {
            return self.fail(Error::at(Step::Registration, url, wire::failure(&answer)));
        }
        let registered: RegistrationAnswer =
            match wire::document(&answer.body, "the registration answer") {
                Ok(r) => r,
                Err(cause) => return self.fail(Error::at(Step::Registration, url, cause)),
            };
        let auth_method = match registered.token_endpoint_auth_method.as_deref() {
            Some(name) => match AuthMethod::from_name(name) {
                Some(method) => method,
                None => {
                    let why = format!(
                        "the server registered the client for token_endpoint_auth_method \
                         `{name}`, which this client cannot use"
                    );
                    return self.fail(Error::at(Step::Registration, url, Cause::Invalid(why)));
                }
            },
            // RFC 7591 §2: omitted means client_secret_basic.
            None if registered.client_secret.is_some() => AuthMethod::ClientSecretBasic,
            None => AuthMethod::None,
        };
        if auth_method != AuthMethod::None && registered.client_secret.is_none() {
            let why = format!(
                "the server registered the client for `{}` but issued no client_secret",
                auth_method.as_str()
            );
            return self.fail(Error::at(Step::Registration, url, Cause::Invalid(why)));
        }
        let client = RegisteredClient {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            auth_method,
            issuer: self.issuer.clone(),
            source: ClientSource::Registered,
        };
        self.adopt(client);
        self.grant();
    }

    /// With an identity: the user's part (authorization code) or the token request
    /// (client credentials).
    pub(super) fn grant(&mut self) {
        match &self.config.grant {
            Grant::ClientCredentials => self.send_token(TokenGrant::ClientCredentials, None),
            Grant::AuthorizationCode { .. } => self.ask_user(),
        }
    }

    pub(super) fn ask_user(&mut self) {
        let endpoint = self
            .server_metadata
            .as_ref()
            .and_then(|m| m.authorization_endpoint.clone())
            .unwrap_or_default();
        let (Some(client), Some(redirect_uri)) =
            (&self.credentials.client, self.config.redirect_uri())
        else {
            return self.fail(Error::new(Step::Authorization, Cause::NoClientIdentity));
        };
        let mut url = match Url::parse(&endpoint) {
            Ok(url) => url,
            Err(e) => {
                let why = format!("the authorization_endpoint `{endpoint}` is not a URL: {e}");
                return self.fail(Error::new(Step::Authorization, Cause::Invalid(why)));
            }
        };
        let pkce = self.secrets.pkce();
        let state = self.secrets.state();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(scope) = &self.requested_scope {
                query.append_pair("scope", scope);
                // OpenID Connect Core §11: offline_access needs the consent prompt.
                if scope
                    .split_ascii_whitespace()
                    .any(|s| s == "offline_access")
                {
                    query.append_pair("prompt", "consent");
                }
            }
            query.append_pair("resource", &self.resource_param);
        }
        let request = AuthorizationRequest {
            url: url.into(),
            redirect_uri: redirect_uri.to_owned(),
            state: state.clone(),
        };
        self.set_phase(Phase::Redirect { pkce, state });
        self.outputs.push_back(Output::Authorize(request));
    }

    /// The code in `redirect`, after the checks: the redirect URI, `state`, RFC 9207's
    /// `iss` (before anything else in the answer is believed), then an `error`.
    pub(super) fn read_redirect(&self, redirect: &str, state: &str) -> Result<String, Cause> {
        // Errors are displayed and logged: the code and state in `redirect` are not.
        let url = Url::parse(redirect).map_err(|e| {
            let redirect = uri::redacted(redirect);
            Cause::Invalid(format!("the redirect `{redirect}` is not a URL: {e}"))
        })?;
        if let Grant::AuthorizationCode { redirect_uri, .. } = &self.config.grant {
            if !uri::same_endpoint(&url, redirect_uri) {
                let redirect = uri::redacted(redirect);
                return Err(Cause::Invalid(format!(
                    "the user agent came back to `{redirect}`, not to the redirect URI `{redirect_uri}`"
                )));
            }
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for (name, value) in url.query_pairs() {
            if params.iter().any(|(n, _)| *n == name) {
                return Err(Cause::Invalid(format!(
                    "the redirect carries `{name}` more than once"
                )));
            }
            params.push((name.into_owned(), value.into_owned()));
        }
        let param = |name: &str| {
            params
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        if param("state") != Some(state) {
            return Err(Cause::StateMismatch);
        }
        if let Some(metadata) = &self.server_metadata {
            match param("iss") {
                Some(iss) if iss != metadata.issuer => {
                    return Err(Cause::IssuerMismatch {
                        expected: metadata.issuer.clone(),
                        found: iss.to_owned(),
                    })
                }
                None if metadata.authorization_response_iss_parameter_supported == Some(true) => {
                    return Err(Cause::IssuerMismatch {
                        expected: metadata.issuer.clone(),
                        found: String::new(),
                    })
                }
                _ => {}
            }
        }
        if let Some(error) = param("error") {
            return Err(Cause::Server(crate::error::ServerError {
                status: 0,
                error: error.to_owned(),
                error_description: param("error_description").map(str::to_owned),
                error_uri: param("error_uri").map(str::to_owned),
            }));
        }
        match param("code") {
            Some(code) if !code.is_empty() => Ok(code.to_owned()),
            _ => Err(Cause::Invalid("the redirect carries no code".into())),
        }
    }

    /// A token request: the grant's own parameters, `resource`, and the client's
    /// authentication.
    pub(super) fn send_token(&mut self, grant: TokenGrant, code: Option<(&str, &str)>) {
        let step = token_step(grant);
        let Some(url) = self
            .server_metadata
            .as_ref()
            .and_then(|m| m.token_endpoint.clone())
        else {
            let why = "the authorization server metadata has no token_endpoint".to_owned();
            return self.fail(Error::new(step, Cause::Invalid(why)));
        };
        let Some(client) = self.credentials.client.clone() else {
            return self.fail(Error::new(step, Cause::NoClientIdentity));
        };
        let mut pairs: Vec<(&str, String)> = Vec::new();
        match grant {
            TokenGrant::Code => {
                let (code, verifier) = code.unwrap_or_default();
                pairs.push(("grant_type", "authorization_code".into()));
                pairs.push(("code", code.to_owned()));
                pairs.push((
                    "redirect_uri",
                    self.config.redirect_uri().unwrap_or_default().to_owned(),
                ));
                pairs.push(("code_verifier", verifier.to_owned()));
            }
            TokenGrant::ClientCredentials => {
                pairs.push(("grant_type", "client_credentials".into()));
                if let Some(scope) = &self.requested_scope {
                    pairs.push(("scope", scope.clone()));
                }
            }
            TokenGrant::Refresh { .. } => {
                let refresh = self
                    .credentials
                    .tokens
                    .as_ref()
                    .and_then(|t| t.refresh_token.clone())
                    .unwrap_or_default();
                pairs.push(("grant_type", "refresh_token".into()));
                pairs.push(("refresh_token", refresh));
            }
        }
        pairs.push(("resource", self.resource_param.clone()));
        // The client id goes in the body whatever the method: RFC 6749 §3.2.1 allows it,
        // and servers (the MCP Python SDK's among them) look the client up by it.
        pairs.push(("client_id", client.client_id.clone()));
        let mut authorization = None;
        match (client.auth_method, &client.client_secret) {
            (AuthMethod::ClientSecretBasic, Some(secret)) => {
                authorization = Some(basic(&client.client_id, secret));
            }
            (AuthMethod::ClientSecretPost, Some(secret)) => {
                pairs.push(("client_secret", secret.clone()));
            }
            _ => {}
        }
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let mut request = HttpRequest::post(&url, form(&borrowed))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let id = self.send(request);
        self.set_phase(Phase::Token { id, url, grant });
    }

    pub(super) fn on_token(
        &mut self,
        url: String,
        grant: TokenGrant,
        answer: HttpResponse,
        now: SystemTime,
    ) {
        let step = token_step(grant);
        if !answer.is_success() {
            let cause = wire::failure(&answer);
            let refused = refuses_grant(answer.status, &cause);
            // Only a refusal says the registration is gone (not a 5xx that names the error).
            let invalid_client =
                refused && matches!(&cause, Cause::Server(e) if e.error == "invalid_client");
            if invalid_client
                && self
                    .credentials
                    .client
                    .as_ref()
                    .is_some_and(|c| c.source == ClientSource::Registered)
            {
                // A registration the server no longer knows: register anew next time.
                self.credentials.client = None;
                self.save();
            }
            if let TokenGrant::Refresh { fallback } = grant {
                if refused {
                    self.credentials.tokens = None;
                    self.save();
                    if fallback {
                        self.set_purpose(Purpose::Authorize);
                        return self.after_discovery();
                    }
                }
            }
            return self.fail(Error::at(step, url, cause));
        }
        let (answer, expires_in) = match TokenAnswer::parse(&answer.body) {
            Ok(parsed) => parsed,
            Err(cause) => return self.fail(Error::at(step, url, cause)),
        };
        let expires_at = expires_in.map(|s| unix_seconds(now).saturating_add(s));
        let previous = self.credentials.tokens.take();
        let refreshed = matches!(grant, TokenGrant::Refresh { .. });
        let tokens = TokenSet {
            access_token: answer.access_token,
            refresh_token: answer.refresh_token.or_else(|| {
                refreshed
                    .then(|| previous.as_ref().and_then(|t| t.refresh_token.clone()))
                    .flatten()
            }),
            expires_at,
            issued_at: Some(unix_seconds(now)),
            scope: answer.scope.or_else(|| {
                if refreshed {
                    previous.as_ref().and_then(|t| t.scope.clone())
                } else {
                    self.requested_scope.clone()
                }
            }),
            issuer: self.issuer.clone(),
            resource: Some(self.resource_param.clone()),
        };
        self.credentials.tokens = Some(tokens);
        self.origin = if refreshed {
            Origin::Refreshed
        } else {
            Origin::Authorized
        };
        self.proven = false;
        self.rejected = false;
        self.unused = true;
        self.save();
        self.flow = None;
        self.outputs.push_back(Output::Done);
    }
}

/// Whether a failed token answer says the grant is not usable (RFC 6749 §5.2: errors are
/// 400, or 401 for the client's authentication): a 400 or 401, or another 4xx but 408 and
/// 429 that carries an OAuth error object, whose `error` is not `temporarily_unavailable`
/// or `server_error`. A 5xx, a 408, a 429, such an `error`, or another 4xx without an
/// error object (a proxy's 403 or 404 page) says nothing of the grant: the refresh token
/// stays, and a later try may succeed.
fn refuses_grant(status: u16, cause: &Cause) -> bool {
    let (oauth, busy) = match cause {
        Cause::Server(e) => (
            true,
            matches!(e.error.as_str(), "temporarily_unavailable" | "server_error"),
        ),
        _ => (false, false),
    };
    let said = matches!(status, 400 | 401) || (oauth && (400..500).contains(&status));
    said && !matches!(status, 408 | 429) && !busy
}
