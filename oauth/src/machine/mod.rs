//! The OAuth client machine: one per protected resource. It holds the client identity and
//! the tokens, decides what credential a request carries, reads the resource's 401 and
//! 403 answers, and runs one flow at a time (discovery, registration, the user's part,
//! token requests, refresh) as HTTP requests out and HTTP answers in.

use std::collections::VecDeque;
use std::time::SystemTime;

use serde_json::{json, Map, Value};
use url::Url;

use crate::challenge::BearerChallenge;
use crate::config::{Config, Grant};
use crate::error::{Cause, Error, Step};
use crate::http::{form, HttpRequest, HttpResponse};
use crate::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::pkce::{basic, Pkce, Secrets};
use crate::store::{
    unix_seconds, AuthMethod, ClientSource, Credentials, RegisteredClient, TokenSet,
};
use crate::uri;
use crate::wire::{self, RegistrationAnswer, TokenAnswer};

mod discovery;
mod grant;

/// Names one HTTP request the machine emitted; its answer is handed back with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestId(u64);

/// The credential a request to the resource carries now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// Send `Authorization: <this>` (`Bearer …`).
    Bearer(String),
    /// A flow is running (a refresh, an authorization): wait for its `Done` or `Failed`,
    /// then ask again.
    Wait,
    /// No token yet: send the request without one; its 401 starts the authorization.
    None,
}

/// What to do with the resource's answer to a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The answer stands: hand it to the caller.
    Accept,
    /// Send the request again with [`OAuthClient::credential`]: the credential changed
    /// since it was sent, or a flow is running (wait for its end first).
    Retry,
    /// Give up with this error.
    Fail(Error),
}

/// The user's part of the authorization code grant: open `url` in a browser (or follow it
/// headlessly), and hand back the URL the authorization server redirects to, which starts
/// with `redirect_uri`, through [`OAuthClient::handle_redirect`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationRequest {
    /// The authorization URL, with its query (client id, PKCE challenge, `state`, scope,
    /// `resource`).
    pub url: String,
    /// The redirect URI the answer comes back to.
    pub redirect_uri: String,
    /// The `state` sent (the redirect must carry it back).
    pub state: String,
}

/// What the machine asks of its driver, in order.
#[derive(Debug)]
pub enum Output {
    /// Send this request; hand its answer to [`OAuthClient::handle_response`] (or its
    /// failure to [`OAuthClient::handle_transport_error`]).
    Send {
        /// Names the request.
        id: RequestId,
        /// The request.
        request: HttpRequest,
    },
    /// Do the user's part; hand back the redirect (or why not).
    Authorize(AuthorizationRequest),
    /// Keep these credentials (they changed): [`crate::store::TokenStore::save`].
    Save(Credentials),
    /// The flow ended with a token: [`OAuthClient::credential`] gives it.
    Done,
    /// The flow ended without one.
    Failed(Error),
}

/// How the current access token came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Loaded from the store.
    Stored,
    /// From a code or client credentials grant.
    Authorized,
    /// From a refresh.
    Refreshed,
}

/// Why a flow runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// Get a token: discovery, identity, the grant.
    Authorize,
    /// Get a token with more scope (403 `insufficient_scope`).
    StepUp,
    /// Refresh; on a refused refresh, authorize anew when `fallback`.
    Refresh { fallback: bool },
}

/// Which token request is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenGrant {
    Code,
    ClientCredentials,
    Refresh { fallback: bool },
}

#[derive(Debug)]
enum Phase {
    /// Protected-resource metadata: `candidates[next]` asked.
    Resource {
        candidates: Vec<String>,
        next: usize,
        id: RequestId,
        /// The last document found but not usable, and where.
        problem: Option<(String, Cause)>,
    },
    /// Authorization-server metadata for `issuer`: `candidates[next]` asked.
    Server {
        issuer: String,
        candidates: Vec<String>,
        next: usize,
        id: RequestId,
    },
    /// Dynamic registration at `url`.
    Register { id: RequestId, url: String },
    /// Waiting for the user's part.
    Redirect { pkce: Pkce, state: String },
    /// A token request to `url`.
    Token {
        id: RequestId,
        url: String,
        grant: TokenGrant,
    },
}

#[derive(Debug)]
struct Flow {
    purpose: Purpose,
    challenge: Option<BearerChallenge>,
    phase: Option<Phase>,
}

/// The OAuth 2.1 client machine for one protected resource.
///
/// It reads no clock (every input that needs the time takes `now`), no random source (its
/// PKCE verifiers and `state` values derive from the seed given to [`new`](Self::new)),
/// and does no I/O: it emits [`Output`]s and takes answers.
///
/// # The calling contract
/// - Before a request to the resource, ask [`credential`](Self::credential): send with
///   the `Bearer` value it gives, without one for `None`, or wait for the running flow on
///   `Wait`.
/// - Hand every answer of the resource to
///   [`handle_resource_response`](Self::handle_resource_response) with the
///   `Authorization` value the request carried; on `Retry`, wait for the running flow (if
///   any) and send again.
/// - After any input, drain [`poll`](Self::poll): send each request and hand its answer
///   to [`handle_response`](Self::handle_response); do the user's part of an `Authorize`
///   and hand the redirect to [`handle_redirect`](Self::handle_redirect); keep each
///   `Save`; wake the waiters on `Done` and `Failed`.
///
/// One flow runs at a time: concurrent requests that meet a 401 or an expiring token
/// share it (the first starts it, the others see `Wait` or `Retry`).
///
/// ```
/// use std::time::SystemTime;
/// use sansrpc_oauth::{Config, Credential, HttpResponse, Method, OAuthClient, Output, Verdict};
///
/// let config = Config::authorization_code("https://mcp.example.com/mcp", "http://127.0.0.1:8765/callback")?;
/// let mut client = OAuthClient::new(config, None, [7; 32]);
/// let now = SystemTime::now();
/// assert_eq!(client.credential(now), Credential::None);
///
/// // The resource's 401 starts discovery at the metadata URL its challenge names.
/// let challenge = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#;
/// assert_eq!(client.handle_resource_response(401, &[challenge], None), Verdict::Retry);
/// let Some(Output::Send { id, request }) = client.poll() else { panic!() };
/// assert_eq!(request.method, Method::Get);
/// assert_eq!(request.url, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
///
/// // A resource with no metadata anywhere: the flow fails, naming the step.
/// client.handle_response(id, HttpResponse::new(404), now);
/// let Some(Output::Send { id, .. }) = client.poll() else { panic!() };
/// client.handle_response(id, HttpResponse::new(404), now);
/// let Some(Output::Failed(error)) = client.poll() else { panic!() };
/// assert_eq!(error.step, sansrpc_oauth::Step::Discovery);
/// # Ok::<(), sansrpc_oauth::Error>(())
/// ```
#[derive(Debug)]
pub struct OAuthClient {
    config: Config,
    credentials: Credentials,
    origin: Origin,
    /// The resource accepted the current token at least once.
    proven: bool,
    /// The resource answered 401 to the current token.
    rejected: bool,
    /// The current token came from a flow and no request has been given it or sent it
    /// yet: it is given once before its expiry is judged (a token issued with
    /// `expires_in` 0 serves the request that waited for it, rather than start another
    /// flow at once).
    unused: bool,
    resource_metadata: Option<ProtectedResourceMetadata>,
    server_metadata: Option<AuthorizationServerMetadata>,
    /// The issuer chosen, as the resource's metadata (or the configuration) names it.
    issuer: Option<String>,
    /// The `resource` parameter sent.
    resource_param: String,
    requested_scope: Option<String>,
    step_ups: u32,
    flow: Option<Flow>,
    next_id: u64,
    outputs: VecDeque<Output>,
    secrets: Secrets,
}

impl OAuthClient {
    /// A machine for `config`'s resource, with the credentials a store kept for it
    /// (`stored`), deriving its secrets from `seed` (32 bytes from the operating system's
    /// random source, used by this machine only).
    pub fn new(config: Config, stored: Option<Credentials>, seed: [u8; 32]) -> OAuthClient {
        let resource_param = config.resource.clone();
        let requested_scope = stored
            .as_ref()
            .and_then(|c| c.tokens.as_ref())
            .and_then(|t| t.scope.clone());
        OAuthClient {
            config,
            credentials: stored.unwrap_or_default(),
            origin: Origin::Stored,
            proven: false,
            rejected: false,
            unused: false,
            resource_metadata: None,
            server_metadata: None,
            issuer: None,
            resource_param,
            requested_scope,
            step_ups: 0,
            flow: None,
            next_id: 0,
            outputs: VecDeque::new(),
            secrets: Secrets::new(seed),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The credentials held now (what the last `Save` carried).
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The tokens held now.
    pub fn tokens(&self) -> Option<&TokenSet> {
        self.credentials.tokens.as_ref()
    }

    /// The protected resource's metadata, once discovered.
    pub fn resource_metadata(&self) -> Option<&ProtectedResourceMetadata> {
        self.resource_metadata.as_ref()
    }

    /// The authorization server's metadata, once discovered.
    pub fn server_metadata(&self) -> Option<&AuthorizationServerMetadata> {
        self.server_metadata.as_ref()
    }

    /// The scope the last authorization asked for.
    pub fn requested_scope(&self) -> Option<&str> {
        self.requested_scope.as_deref()
    }

    /// Whether a flow is running.
    pub fn is_busy(&self) -> bool {
        self.flow.is_some()
    }

    /// Whether [`poll`](Self::poll) has something to give.
    pub fn has_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The credential for a request sent at `now`. A token that expires within the
    /// configured margin (at most half its lifetime) starts a refresh (or, with no refresh
    /// token, a new grant when the token is past its expiry or the grant needs no user); a
    /// token still valid is used while a refresh or a step-up runs. A token a flow just
    /// obtained is given to one request before its expiry is judged.
    pub fn credential(&mut self, now: SystemTime) -> Credential {
        let Some(tokens) = &self.credentials.tokens else {
            return if self.flow.is_some() {
                Credential::Wait
            } else {
                Credential::None
            };
        };
        let expired = tokens.remaining(now) == Some(0);
        // A token the resource has not refused and that has not expired serves while a
        // flow runs (a refresh before expiry, a step-up for another request).
        let usable = !self.rejected && !expired;
        // A token just obtained serves its first request, even one expiring now (not
        // one past its expiry).
        let past = tokens.expires_at.is_some_and(|at| unix_seconds(now) > at);
        let first_use = std::mem::take(&mut self.unused) && self.flow.is_none() && !past;
        if self.flow.is_none()
            && !first_use
            && tokens.expires_within(now, self.config.refresh_margin)
        {
            let refreshable = tokens.refresh_token.is_some();
            let unattended = matches!(self.config.grant, Grant::ClientCredentials);
            if refreshable {
                self.start(Purpose::Refresh { fallback: true }, None, false);
            } else if expired || unattended {
                self.start(Purpose::Authorize, None, false);
            }
            // A flow that failed at once left its failure queued: the caller waits for it.
            if self.flow.is_none() && self.has_output() {
                return Credential::Wait;
            }
        }
        let tokens = self.credentials.tokens.as_ref();
        match tokens {
            Some(tokens) if usable || self.flow.is_none() => {
                Credential::Bearer(tokens.authorization())
            }
            _ => Credential::Wait,
        }
    }

    /// The resource answered `status` to a request that carried `sent` (its
    /// `Authorization` value, `None` if it had none), with these `WWW-Authenticate` field
    /// values.
    ///
    /// A 401 to the current token starts a refresh (when there is a refresh token that
    /// has not just failed the same way) or an authorization; a 403 with
    /// `insufficient_scope` starts a step-up, up to the configured limit; a 401 to a token
    /// the flow had just obtained fails, rather than loop. Any other answer stands, and an
    /// answer other than 401/403 to the current token proves it (and resets the step-ups).
    pub fn handle_resource_response(
        &mut self,
        status: u16,
        www_authenticate: &[&str],
        sent: Option<&str>,
    ) -> Verdict {
        let current = self
            .credentials
            .tokens
            .as_ref()
            .map(TokenSet::authorization);
        let for_current = sent.is_some() && sent == current.as_deref();
        if for_current {
            self.unused = false;
        }
        if status != 401 && status != 403 {
            if for_current {
                self.proven = true;
                self.step_ups = 0;
            }
            return Verdict::Accept;
        }
        let challenge = BearerChallenge::from_fields(www_authenticate.iter().copied());
        let step_up = challenge
            .as_ref()
            .is_some_and(BearerChallenge::is_insufficient_scope);
        if status == 403 && !step_up {
            return Verdict::Accept;
        }
        if status == 401 && for_current {
            self.rejected = true;
        }
        if self.flow.is_some() || (current.is_some() && !for_current) {
            return Verdict::Retry;
        }
        if status == 401 {
            let Some(tokens) = &self.credentials.tokens else {
                self.start(Purpose::Authorize, challenge, true);
                return Verdict::Retry;
            };
            if !self.proven && self.origin == Origin::Authorized {
                let (error, error_description) = challenge
                    .map(|c| (c.error, c.error_description))
                    .unwrap_or_default();
                return Verdict::Fail(Error::new(
                    Step::Resource,
                    Cause::Rejected {
                        status,
                        error,
                        error_description,
                    },
                ));
            }
            let refresh_failed_before = self.origin == Origin::Refreshed && !self.proven;
            if tokens.refresh_token.is_some() && !refresh_failed_before {
                self.start(Purpose::Refresh { fallback: true }, challenge, true);
            } else {
                self.start(Purpose::Authorize, challenge, true);
            }
            return Verdict::Retry;
        }
        if self.step_ups >= self.config.max_step_ups {
            let scope = challenge.and_then(|c| c.scope);
            return Verdict::Fail(Error::new(
                Step::Resource,
                Cause::StepUpLimit {
                    attempts: self.step_ups,
                    scope,
                },
            ));
        }
        self.step_ups += 1;
        self.start(Purpose::StepUp, challenge, false);
        Verdict::Retry
    }

    /// Starts an authorization now, without a 401 first (discovery from the well-known
    /// locations). Does nothing while a flow runs (its end serves).
    pub fn authorize(&mut self) {
        if self.flow.is_none() {
            self.start(Purpose::Authorize, None, true);
        }
    }

    /// Starts a refresh now. Without a refresh token, a client credentials client gets a
    /// new token and any other fails at once. Does nothing while a flow runs.
    pub fn refresh(&mut self) -> Result<(), Error> {
        if self.flow.is_some() {
            return Ok(());
        }
        let refreshable = self
            .credentials
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh_token.is_some());
        if refreshable {
            self.start(Purpose::Refresh { fallback: false }, None, false);
        } else if matches!(self.config.grant, Grant::ClientCredentials) {
            self.start(Purpose::Authorize, None, false);
        } else {
            return Err(Error::new(Step::Refresh, Cause::NoRefreshToken));
        }
        Ok(())
    }

    /// Ends the running flow with `Failed` (its driver went away, the user gave up).
    pub fn cancel(&mut self, reason: &str) {
        if self.flow.is_some() {
            self.fail(Error::new(
                Step::Authorization,
                Cause::User(reason.to_owned()),
            ));
        }
    }

    /// The answer to the request `id`. An answer to a request that is not the one
    /// awaited is ignored.
    pub fn handle_response(&mut self, id: RequestId, answer: HttpResponse, now: SystemTime) {
        let Some(phase) = self.flow.as_mut().and_then(|f| f.phase.take()) else {
            return;
        };
        if phase_id(&phase) != Some(id) {
            self.put_back(phase);
            return;
        }
        if answer.body.len() > self.config.max_body {
            let (step, url) = phase_place(&phase);
            let why = format!(
                "the answer's body is longer than {} bytes",
                self.config.max_body
            );
            return self.fail(Error::at(step, url, Cause::Invalid(why)));
        }
        match phase {
            Phase::Resource {
                candidates,
                next,
                problem,
                ..
            } => self.on_resource_metadata(candidates, next, problem, answer),
            Phase::Server {
                issuer,
                candidates,
                next,
                ..
            } => self.on_server_metadata(issuer, candidates, next, answer),
            Phase::Register { url, .. } => self.on_registration(url, answer),
            Phase::Token { url, grant, .. } => self.on_token(url, grant, answer, now),
            // Never here: a redirect phase has no request id.
            phase @ Phase::Redirect { .. } => self.put_back(phase),
        }
    }

    /// The request `id` could not be sent or its answer not read; `reason` says why (the
    /// TLS error and its reason, the address refused, the timeout). Ends the flow.
    pub fn handle_transport_error(&mut self, id: RequestId, reason: &str) {
        let Some(phase) = self.flow.as_ref().and_then(|f| f.phase.as_ref()) else {
            return;
        };
        if phase_id(phase) != Some(id) {
            return;
        }
        let (step, url) = phase_place(phase);
        self.fail(Error::at(step, url, Cause::Transport(reason.to_owned())));
    }

    /// The user's part ended at `redirect` (the URL the authorization server sent the user
    /// agent to). Ignored unless the flow waits for it.
    pub fn handle_redirect(&mut self, redirect: &str) {
        let Some(Phase::Redirect { pkce, state }) =
            self.take_phase_if(|p| matches!(p, Phase::Redirect { .. }))
        else {
            return;
        };
        match self.read_redirect(redirect, &state) {
            Ok(code) => self.send_token(TokenGrant::Code, Some((&code, &pkce.verifier))),
            Err(cause) => self.fail(Error::new(Step::Authorization, cause)),
        }
    }

    /// The user's part failed (`reason`: the browser could not open, the user closed it, a
    /// headless agent met a login page). Ignored unless the flow waits for it.
    pub fn handle_user_error(&mut self, reason: &str) {
        if self
            .take_phase_if(|p| matches!(p, Phase::Redirect { .. }))
            .is_some()
        {
            self.fail(Error::new(
                Step::Authorization,
                Cause::User(reason.to_owned()),
            ));
        }
    }

    // Plumbing, for the flow's modules.

    fn metadata_request(&self, url: &str) -> HttpRequest {
        let mut request = HttpRequest::get(url).header("accept", "application/json");
        for (name, value) in &self.config.discovery_headers {
            request = request.header(name, value.clone());
        }
        request
    }

    fn send(&mut self, request: HttpRequest) -> RequestId {
        self.next_id += 1;
        let id = RequestId(self.next_id);
        self.outputs.push_back(Output::Send { id, request });
        id
    }

    fn set_phase(&mut self, phase: Phase) {
        if let Some(flow) = &mut self.flow {
            flow.phase = Some(phase);
        }
    }

    fn put_back(&mut self, phase: Phase) {
        self.set_phase(phase);
    }

    fn set_purpose(&mut self, purpose: Purpose) {
        if let Some(flow) = &mut self.flow {
            flow.purpose = purpose;
        }
    }

    fn take_phase_if(&mut self, wanted: impl Fn(&Phase) -> bool) -> Option<Phase> {
        let flow = self.flow.as_mut()?;
        if flow.phase.as_ref().is_some_and(wanted) {
            flow.phase.take()
        } else {
            None
        }
    }

    fn save(&mut self) {
        self.outputs
            .push_back(Output::Save(self.credentials.clone()));
    }

    fn fail(&mut self, error: Error) {
        self.flow = None;
        self.outputs.push_back(Output::Failed(error));
    }
}

fn phase_id(phase: &Phase) -> Option<RequestId> {
    match phase {
        Phase::Resource { id, .. }
        | Phase::Server { id, .. }
        | Phase::Register { id, .. }
        | Phase::Token { id, .. } => Some(*id),
        Phase::Redirect { .. } => None,
    }
}

/// The step a phase belongs to, and the URL of its request.
fn phase_place(phase: &Phase) -> (Step, String) {
    match phase {
        Phase::Resource {
            candidates, next, ..
        }
        | Phase::Server {
            candidates, next, ..
        } => (Step::Discovery, candidates[*next].clone()),
        Phase::Register { url, .. } => (Step::Registration, url.clone()),
        Phase::Token { url, grant, .. } => (token_step(*grant), url.clone()),
        Phase::Redirect { .. } => (Step::Authorization, String::new()),
    }
}

fn token_step(grant: TokenGrant) -> Step {
    match grant {
        TokenGrant::Refresh { .. } => Step::Refresh,
        _ => Step::Token,
    }
}

fn check_endpoint(endpoint: &str) -> Result<(), Cause> {
    let url = uri::parse_http(endpoint).map_err(Cause::Invalid)?;
    if uri::secure_or_loopback(&url) {
        Ok(())
    } else {
        Err(Cause::Insecure(endpoint.to_owned()))
    }
}

/// A pre-registered client's method when the application named none: for a client with a
/// secret `client_secret_basic` if offered, else `client_secret_post` if offered, else
/// `client_secret_basic` (RFC 6749 §2.3.1 makes every server support it); `none` without
/// a secret.
fn choose_auth_method(metadata: Option<&AuthorizationServerMetadata>, secret: bool) -> AuthMethod {
    if !secret {
        return AuthMethod::None;
    }
    let offered = metadata
        .map(AuthorizationServerMetadata::auth_methods)
        .unwrap_or_default();
    if offered.contains(&"client_secret_post") && !offered.contains(&"client_secret_basic") {
        AuthMethod::ClientSecretPost
    } else {
        AuthMethod::ClientSecretBasic
    }
}
