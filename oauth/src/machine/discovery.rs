//! Discovery: the protected resource's metadata, the authorization server's, then what
//! follows from them (the issuer binding, the client identity, the scope).

use super::*;

impl OAuthClient {
    /// Starts a flow for `purpose`; discovery runs again when `rediscover` (a 401: the
    /// resource may name another server now) or when nothing was discovered yet.
    pub(super) fn start(
        &mut self,
        purpose: Purpose,
        challenge: Option<BearerChallenge>,
        rediscover: bool,
    ) {
        self.flow = Some(Flow {
            purpose,
            challenge,
            phase: None,
        });
        let discovered = self.server_metadata.is_some() && self.issuer.is_some();
        if discovered && !rediscover {
            self.after_discovery();
        } else {
            self.discover_resource();
        }
    }

    pub(super) fn discover_resource(&mut self) {
        let mut candidates = Vec::new();
        // The challenge's metadata URL, when it is https or loopback like every other
        // URL the flow follows: a document fetched in the clear could name another
        // authorization server. One that is not is ignored, for the well-known locations
        // of the configured resource (itself https or loopback).
        let named = self
            .flow
            .as_ref()
            .and_then(|f| f.challenge.as_ref())
            .and_then(|c| c.resource_metadata.as_deref())
            .filter(|url| uri::parse_http(url).is_ok_and(|u| uri::secure_or_loopback(&u)));
        if let Some(url) = named {
            candidates.push(url.to_owned());
        }
        for url in uri::resource_metadata_urls(&self.config.resource_url) {
            if !candidates.contains(&url) {
                candidates.push(url);
            }
        }
        self.ask_resource(candidates, 0, None);
    }

    pub(super) fn ask_resource(
        &mut self,
        candidates: Vec<String>,
        next: usize,
        problem: Option<(String, Cause)>,
    ) {
        let request = self.metadata_request(&candidates[next]);
        let id = self.send(request);
        self.set_phase(Phase::Resource {
            candidates,
            next,
            id,
            problem,
        });
    }

    pub(super) fn on_resource_metadata(
        &mut self,
        candidates: Vec<String>,
        next: usize,
        problem: Option<(String, Cause)>,
        answer: HttpResponse,
    ) {
        let url = candidates[next].clone();
        let problem = match answer.status {
            200..=299 => {
                match wire::document::<ProtectedResourceMetadata>(
                    &answer.body,
                    "the protected resource metadata",
                ) {
                    Ok(metadata) if metadata.authorization_servers.is_empty() => Some((
                        url.clone(),
                        Cause::Invalid(
                            "the protected resource metadata names no authorization_servers".into(),
                        ),
                    )),
                    Ok(metadata) => return self.resource_found(url, metadata),
                    Err(cause) => Some((url.clone(), cause)),
                }
            }
            300..=499 | 502 => problem,
            _ => return self.fail(Error::at(Step::Discovery, url, wire::failure(&answer))),
        };
        if next + 1 < candidates.len() {
            return self.ask_resource(candidates, next + 1, problem);
        }
        if let Some(issuer) = self.config.authorization_server.clone() {
            self.resource_metadata = None;
            self.resource_param = self.config.resource.clone();
            return self.discover_server(issuer);
        }
        // A document found but not usable says more than "not found".
        let error = match problem {
            Some((url, cause)) => Error::at(Step::Discovery, url, cause),
            None => Error::new(Step::Discovery, Cause::NotFound { tried: candidates }),
        };
        self.fail(error)
    }

    pub(super) fn resource_found(&mut self, url: String, metadata: ProtectedResourceMetadata) {
        if !uri::resource_covers(&metadata.resource, &self.config.resource) {
            let cause = Cause::ResourceMismatch {
                expected: self.config.resource.clone(),
                found: metadata.resource,
            };
            return self.fail(Error::at(Step::Discovery, url, cause));
        }
        let issuer = metadata.authorization_servers[0].clone();
        self.resource_param = metadata.resource.clone();
        self.resource_metadata = Some(metadata);
        self.discover_server(issuer);
    }

    pub(super) fn discover_server(&mut self, issuer: String) {
        let parsed = match uri::parse_http(&issuer) {
            Ok(parsed) => parsed,
            Err(why) => return self.fail(Error::new(Step::Discovery, Cause::Invalid(why))),
        };
        if !uri::secure_or_loopback(&parsed) {
            return self.fail(Error::new(Step::Discovery, Cause::Insecure(issuer)));
        }
        let candidates = uri::authorization_server_metadata_urls(&parsed);
        self.ask_server(issuer, candidates, 0);
    }

    pub(super) fn ask_server(&mut self, issuer: String, candidates: Vec<String>, next: usize) {
        let request = self.metadata_request(&candidates[next]);
        let id = self.send(request);
        self.set_phase(Phase::Server {
            issuer,
            candidates,
            next,
            id,
        });
    }

    pub(super) fn on_server_metadata(
        &mut self,
        issuer: String,
        candidates: Vec<String>,
        next: usize,
        answer: HttpResponse,
    ) {
        let url = candidates[next].clone();
        match answer.status {
            200..=299 => {}
            300..=499 | 502 if next + 1 < candidates.len() => {
                return self.ask_server(issuer, candidates, next + 1)
            }
            300..=499 | 502 => {
                return self.fail(Error::new(
                    Step::Discovery,
                    Cause::NotFound { tried: candidates },
                ))
            }
            _ => return self.fail(Error::at(Step::Discovery, url, wire::failure(&answer))),
        }
        let metadata: AuthorizationServerMetadata =
            match wire::document(&answer.body, "the authorization server metadata") {
                Ok(metadata) => metadata,
                Err(cause) => return self.fail(Error::at(Step::Discovery, url, cause)),
            };
        if let Err(cause) = self.check_server(&issuer, &metadata) {
            return self.fail(Error::at(Step::Discovery, url, cause));
        }
        self.issuer = Some(issuer);
        self.server_metadata = Some(metadata);
        self.after_discovery();
    }

    /// RFC 8414 §3.3 (the issuer), the MCP specification's PKCE rule, and the endpoints
    /// the grant needs, each `https` or loopback.
    pub(super) fn check_server(
        &self,
        issuer: &str,
        metadata: &AuthorizationServerMetadata,
    ) -> Result<(), Cause> {
        if !uri::same_issuer(&metadata.issuer, issuer) {
            return Err(Cause::IssuerMismatch {
                expected: issuer.to_owned(),
                found: metadata.issuer.clone(),
            });
        }
        let code = matches!(self.config.grant, Grant::AuthorizationCode { .. });
        if code && !metadata.supports_s256() {
            return Err(Cause::NoPkce);
        }
        let mut needed = vec![("token_endpoint", metadata.token_endpoint.as_deref())];
        if code {
            needed.push((
                "authorization_endpoint",
                metadata.authorization_endpoint.as_deref(),
            ));
        }
        for (name, endpoint) in needed {
            let Some(endpoint) = endpoint else {
                return Err(Cause::Invalid(format!(
                    "the authorization server metadata has no {name}"
                )));
            };
            check_endpoint(endpoint)?;
        }
        if let Some(endpoint) = &metadata.registration_endpoint {
            check_endpoint(endpoint)?;
        }
        Ok(())
    }

    /// Discovery is done (now, or in an earlier flow): bind what is stored to this issuer,
    /// choose the scope and the client identity, then register, refresh or grant.
    pub(super) fn after_discovery(&mut self) {
        let issuer = self.issuer.clone().unwrap_or_default();
        self.bind_to(&issuer);
        let purpose = self.flow.as_ref().map_or(Purpose::Authorize, |f| f.purpose);
        let client = match self.identity(&issuer) {
            Ok(client) => client,
            Err(error) => return self.fail(error),
        };
        if let Purpose::Refresh { fallback } = purpose {
            let refreshable = self
                .credentials
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some());
            match &client {
                Some(client) if refreshable => {
                    self.adopt(client.clone());
                    return self.send_token(TokenGrant::Refresh { fallback }, None);
                }
                _ if fallback => self.set_purpose(Purpose::Authorize),
                _ => return self.fail(Error::new(Step::Refresh, Cause::NoRefreshToken)),
            }
        }
        self.choose_scope();
        match client {
            Some(client) => {
                self.adopt(client);
                self.grant();
            }
            None => self.register(),
        }
    }

    /// Drops a stored registration or tokens from another authorization server (MCP
    /// 2026-07-28, "Authorization Server Binding"); a CIMD client id is portable.
    pub(super) fn bind_to(&mut self, issuer: &str) {
        let mut changed = false;
        if let Some(client) = &self.credentials.client {
            let other = client
                .issuer
                .as_deref()
                .is_some_and(|i| !uri::same_issuer(i, issuer));
            if other && client.source != ClientSource::MetadataDocument {
                self.credentials.client = None;
                changed = true;
            }
        }
        if let Some(tokens) = &self.credentials.tokens {
            if tokens
                .issuer
                .as_deref()
                .is_some_and(|i| !uri::same_issuer(i, issuer))
            {
                self.credentials.tokens = None;
                changed = true;
            }
        }
        if changed {
            self.save();
        }
    }

    /// The client identity, in the MCP specification's order: pre-registered, a stored
    /// registration, a Client ID Metadata Document URL when the server supports it;
    /// `None` when dynamic registration is the way left.
    pub(super) fn identity(&self, issuer: &str) -> Result<Option<RegisteredClient>, Error> {
        let metadata = self.server_metadata.as_ref();
        if let Some(pre) = &self.config.pre_registered {
            if let Some(bound) = &pre.issuer {
                if !uri::same_issuer(bound, issuer) {
                    let cause = Cause::IssuerMismatch {
                        expected: bound.clone(),
                        found: issuer.to_owned(),
                    };
                    return Err(Error::new(Step::Registration, cause));
                }
            }
            let auth_method = pre
                .auth_method
                .unwrap_or_else(|| choose_auth_method(metadata, pre.client_secret.is_some()));
            return Ok(Some(RegisteredClient {
                client_id: pre.client_id.clone(),
                client_secret: pre.client_secret.clone(),
                auth_method,
                issuer: Some(issuer.to_owned()),
                source: ClientSource::PreRegistered,
            }));
        }
        let cimd = metadata.is_some_and(|m| m.client_id_metadata_document_supported == Some(true));
        if let Some(stored) = &self.credentials.client {
            let usable = match stored.source {
                ClientSource::Registered => true,
                ClientSource::MetadataDocument => {
                    cimd && self.config.client_metadata_url.as_deref() == Some(&stored.client_id)
                }
                ClientSource::PreRegistered => false,
            };
            if usable {
                return Ok(Some(stored.clone()));
            }
        }
        if let (true, Some(url)) = (cimd, &self.config.client_metadata_url) {
            return Ok(Some(RegisteredClient {
                client_id: url.clone(),
                client_secret: None,
                auth_method: AuthMethod::None,
                issuer: Some(issuer.to_owned()),
                source: ClientSource::MetadataDocument,
            }));
        }
        let can_register = metadata.is_some_and(|m| m.registration_endpoint.is_some())
            && self.config.registration.is_some()
            && matches!(self.config.grant, Grant::AuthorizationCode { .. });
        if can_register {
            Ok(None)
        } else {
            Err(Error::new(Step::Registration, Cause::NoClientIdentity))
        }
    }

    /// Keeps `client` as the identity (saved when it changed).
    pub(super) fn adopt(&mut self, client: RegisteredClient) {
        if self.credentials.client.as_ref() != Some(&client) {
            self.credentials.client = Some(client);
            self.save();
        }
    }

    /// The scope to ask for: a step-up's union of what was asked and granted with what
    /// the challenge asks; otherwise the challenge's, else the resource's
    /// `scopes_supported`, else the configured one, else none. `offline_access` is added
    /// when refresh tokens are wanted and the server lists it.
    pub(super) fn choose_scope(&mut self) {
        let flow = self.flow.as_ref();
        let challenged = flow
            .and_then(|f| f.challenge.as_ref())
            .and_then(|c| c.scope.clone());
        let mut scope = if flow.is_some_and(|f| f.purpose == Purpose::StepUp) {
            let granted = self
                .credentials
                .tokens
                .as_ref()
                .and_then(|t| t.scope.as_deref());
            let before = wire::union_scopes(self.requested_scope.as_deref(), granted);
            wire::union_scopes(before.as_deref(), challenged.as_deref())
        } else {
            challenged
                .or_else(|| {
                    self.resource_metadata
                        .as_ref()
                        .and_then(|m| m.scopes_supported.as_ref())
                        .filter(|s| !s.is_empty())
                        .map(|s| s.join(" "))
                })
                .or_else(|| self.config.scope.clone())
        };
        let code = matches!(self.config.grant, Grant::AuthorizationCode { .. });
        let offered = self
            .server_metadata
            .as_ref()
            .is_some_and(|m| m.supports_scope("offline_access"));
        if let Some(s) = &scope {
            if code && self.config.offline_access && offered {
                scope = wire::union_scopes(Some(s), Some("offline_access"));
            }
        }
        self.requested_scope = scope;
    }
}
