//! The machine run on tokio: an [`Authorizer`] that gives each request to a protected
//! resource its `Authorization` header and handles the 401 and 403 answers, over an
//! [`HttpTransport`] ([`HyperTransport`]: hyper-util's client with rustls), with the
//! user's part behind [`UserAgent`] ([`LoopbackBrowser`] opens the user's browser and takes
//! the redirect on a loopback port; [`HeadlessUserAgent`] follows the redirects with GETs,
//! for tests and servers that approve at once) and the tokens behind a [`TokenStore`].
//!
//! One flow runs at a time, in a task of its own: the requests that need it (a 401, a
//! token about to expire) wait for its end together, and a caller that goes away does not
//! stop it.
//!
//! A protocol client plugs in through [`CredentialProvider`]: ask
//! [`authorization`](CredentialProvider::authorization) before each request, hand each
//! answer to [`on_response`](CredentialProvider::on_response), send again on
//! [`Retry::Yes`]. [`StaticToken`] is the provider for a token the user already has.
//!
//! ```no_run
//! use sansrpc_oauth::driver::{Authorizer, HeadlessUserAgent, HyperTransport};
//! use sansrpc_oauth::{Config, HttpRequest};
//!
//! # async fn run() -> Result<(), sansrpc_oauth::Error> {
//! let config = Config::authorization_code("https://mcp.example.com/mcp", "http://127.0.0.1:8765/callback")?
//!     .discovery_header("MCP-Protocol-Version", "2025-11-25");
//! let transport = HyperTransport::new();
//! let authorizer = Authorizer::builder(config)
//!     .transport(transport.clone())
//!     // A desktop application opens a browser and listens on the redirect URI instead.
//!     .user_agent(HeadlessUserAgent::new(transport))
//!     .build()?;
//! // The first 401 runs discovery, registration and the code flow; the answer that stands.
//! let answer = authorizer.send(HttpRequest::get("https://mcp.example.com/mcp")).await?;
//! println!("{} with {:?}", answer.status, authorizer.tokens().map(|t| t.scope));
//! # Ok(())
//! # }
//! ```

mod browser;
mod headless;
mod transport;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::sync::watch;

use crate::challenge::BearerChallenge;
use crate::error::{Cause, Error, Step};
use crate::http::{HttpRequest, HttpResponse};
use crate::machine::{AuthorizationRequest, Credential, OAuthClient, Output, Verdict};
use crate::store::{MemoryStore, TokenSet, TokenStore};
use crate::Config;

pub use browser::LoopbackBrowser;
pub use headless::HeadlessUserAgent;
/// rustls, for a [`rustls::ClientConfig`] or a root certificate
/// ([`rustls::pki_types::CertificateDer`]) given to [`HyperTransport`].
pub use rustls;
pub use transport::HyperTransport;

/// A boxed future that can be sent between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends an HTTP request and reads its whole answer. The error is a sentence that names
/// the layer that failed and why (`client error (Connect): invalid peer certificate:
/// UnknownIssuer`, the connection refused, a timeout); the caller adds the URL.
pub trait HttpTransport: Send + Sync + 'static {
    /// Sends `request` as it is (no redirect followed) and returns the answer, whatever
    /// its status.
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>>;
}

impl<T: HttpTransport + ?Sized> HttpTransport for Arc<T> {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, String>> {
        (**self).send(request)
    }
}

/// The user's part of the authorization code grant: show the user `request.url` (a
/// browser), and return the URL the authorization server redirected back to (it starts
/// with `request.redirect_uri`), or why that could not be done.
pub trait UserAgent: Send + Sync + 'static {
    /// Does the user's part for `request`.
    fn authorize<'a>(
        &'a self,
        request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<String, String>>;
}

/// The user agent of an [`Authorizer`] built without one: it fails, saying so.
struct NoUserAgent;

impl UserAgent for NoUserAgent {
    fn authorize<'a>(
        &'a self,
        _request: &'a AuthorizationRequest,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async {
            Err("no user agent was given to the Authorizer (AuthorizerBuilder::user_agent)".into())
        })
    }
}

/// What to do after [`CredentialProvider::on_response`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// The answer stands.
    No,
    /// Send the request again, with a fresh [`CredentialProvider::authorization`].
    Yes,
}

/// The credentials of a protocol client: an `Authorization` value for each request, and
/// what to do with each answer. Object safe, so a client holds an
/// `Arc<dyn CredentialProvider>`.
pub trait CredentialProvider: Send + Sync {
    /// The `Authorization` header value for a request sent now (`None`: send without).
    /// May wait for a refresh or an authorization.
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, Error>>;

    /// The answer to a request that carried `sent` had `status` and these
    /// `WWW-Authenticate` field values. May wait for a refresh, an authorization or a
    /// step-up.
    fn on_response<'a>(
        &'a self,
        status: u16,
        www_authenticate: &'a [&'a str],
        sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Retry, Error>>;
}

/// A token the user already has (an API key sent as a bearer token): on every request,
/// never refreshed. A 401, or a 403 for `insufficient_scope`, is an error that says the
/// server refused it.
#[derive(Clone)]
pub struct StaticToken {
    value: String,
}

impl StaticToken {
    /// `Authorization: Bearer <token>`.
    pub fn bearer(token: &str) -> StaticToken {
        StaticToken {
            value: format!("Bearer {token}"),
        }
    }

    /// `Authorization: <value>` as given (another scheme).
    pub fn header_value(value: impl Into<String>) -> StaticToken {
        StaticToken {
            value: value.into(),
        }
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

impl CredentialProvider for StaticToken {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, Error>> {
        Box::pin(async move { Ok(Some(self.value.clone())) })
    }

    fn on_response<'a>(
        &'a self,
        status: u16,
        www_authenticate: &'a [&'a str],
        _sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Retry, Error>> {
        Box::pin(async move {
            let challenge = BearerChallenge::from_fields(www_authenticate.iter().copied());
            let refused = status == 401
                || status == 403
                    && challenge
                        .as_ref()
                        .is_some_and(BearerChallenge::is_insufficient_scope);
            if !refused {
                return Ok(Retry::No);
            }
            let (error, error_description) = challenge
                .map(|c| (c.error, c.error_description))
                .unwrap_or_default();
            Err(Error::new(
                Step::Resource,
                Cause::Rejected {
                    status,
                    error,
                    error_description,
                },
            ))
        })
    }
}

type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Builds an [`Authorizer`].
pub struct AuthorizerBuilder {
    config: Config,
    transport: Option<Arc<dyn HttpTransport>>,
    user: Option<Arc<dyn UserAgent>>,
    store: Option<Arc<dyn TokenStore>>,
    clock: Option<Clock>,
    seed: Option<[u8; 32]>,
}

impl AuthorizerBuilder {
    /// Sends the flow's requests (and [`Authorizer::send`]'s) with `transport` (default: a
    /// [`HyperTransport`] trusting Mozilla's roots).
    pub fn transport(mut self, transport: impl HttpTransport) -> AuthorizerBuilder {
        self.transport = Some(Arc::new(transport));
        self
    }

    /// Does the user's part with `user` (default: none, and an authorization code flow
    /// fails at its authorization step saying so).
    pub fn user_agent(mut self, user: impl UserAgent) -> AuthorizerBuilder {
        self.user = Some(Arc::new(user));
        self
    }

    /// Keeps credentials in `store` (default: a [`MemoryStore`]).
    pub fn store(mut self, store: impl TokenStore + 'static) -> AuthorizerBuilder {
        self.store = Some(Arc::new(store));
        self
    }

    /// Whether [`transport`](Self::transport) was given: a protocol client that builds the
    /// authorizer for its connection gives its own (the same TLS trust) only when not.
    pub fn has_transport(&self) -> bool {
        self.transport.is_some()
    }

    /// Sends this header with every metadata request ([`Config::discovery_header`]), in
    /// place of one of the same name: a protocol client adds what its specification asks
    /// (MCP: `MCP-Protocol-Version`).
    pub fn discovery_header(mut self, name: &str, value: impl Into<String>) -> AuthorizerBuilder {
        self.config = self.config.discovery_header(name, value);
        self
    }

    /// The canonical URI of the resource the authorizer is for.
    pub fn resource(&self) -> &str {
        self.config.resource()
    }

    /// Reads the time with `clock` (default: [`SystemTime::now`]); tests move it.
    pub fn clock(
        mut self,
        clock: impl Fn() -> SystemTime + Send + Sync + 'static,
    ) -> AuthorizerBuilder {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Seeds the machine with `seed` (default: 32 bytes from the operating system). Only
    /// for tests that need repeatable PKCE verifiers.
    pub fn seed(mut self, seed: [u8; 32]) -> AuthorizerBuilder {
        self.seed = Some(seed);
        self
    }

    /// The authorizer, with the credentials the store kept for the resource.
    pub fn build(self) -> Result<Authorizer, Error> {
        let store = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let key = self.config.resource().to_owned();
        let stored = store
            .load(&key)
            .map_err(|e| Error::new(Step::Store, Cause::Store(e.0)))?;
        let seed = match self.seed {
            Some(seed) => seed,
            None => {
                let mut seed = [0; 32];
                getrandom::fill(&mut seed).map_err(|e| {
                    Error::new(
                        Step::Configuration,
                        Cause::Config(format!("the operating system gave no random bytes: {e}")),
                    )
                })?;
                seed
            }
        };
        let transport = match self.transport {
            Some(transport) => transport,
            None => Arc::new(HyperTransport::new()),
        };
        let (ended, _) = watch::channel((0, Ok(())));
        Ok(Authorizer {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    machine: OAuthClient::new(self.config, stored, seed),
                    driving: false,
                    finished: 0,
                }),
                transport,
                user: self.user.unwrap_or_else(|| Arc::new(NoUserAgent)),
                store,
                key,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemTime::now)),
                ended,
            }),
        })
    }
}

struct State {
    machine: OAuthClient,
    /// A task runs the machine's outputs.
    driving: bool,
    /// How many flows have ended.
    finished: u64,
}

struct Shared {
    state: Mutex<State>,
    transport: Arc<dyn HttpTransport>,
    user: Arc<dyn UserAgent>,
    store: Arc<dyn TokenStore>,
    key: String,
    clock: Clock,
    /// The count of flows ended, and how the last one ended.
    ended: watch::Sender<(u64, Result<(), Error>)>,
}

/// The OAuth client of one protected resource, shared by every request to it (clone it:
/// the clones share one machine). Its methods run inside a tokio runtime: a flow runs on a
/// task of its own, so a caller that goes away does not stop it.
#[derive(Clone)]
pub struct Authorizer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("resource", &self.shared.key)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// A builder for the resource and grant of `config`.
    pub fn builder(config: Config) -> AuthorizerBuilder {
        AuthorizerBuilder {
            config,
            transport: None,
            user: None,
            store: None,
            clock: None,
            seed: None,
        }
    }

    /// Runs an authorization to a token now (discovery from the well-known locations, the
    /// identity, the grant), or waits for the flow already running; the tokens.
    pub async fn authorize(&self) -> Result<TokenSet, Error> {
        let target = {
            let mut state = self.lock();
            state.machine.authorize();
            self.kick(&mut state)
        };
        self.wait(target).await?;
        self.tokens().ok_or_else(|| {
            Error::new(
                Step::Token,
                Cause::Invalid("no token after the flow".into()),
            )
        })
    }

    /// Refreshes the access token now (a client credentials client gets a new one); the
    /// tokens. A refused refresh is an error here, with the server's `error`.
    pub async fn refresh(&self) -> Result<TokenSet, Error> {
        let target = {
            let mut state = self.lock();
            state.machine.refresh()?;
            self.kick(&mut state)
        };
        self.wait(target).await?;
        self.tokens().ok_or_else(|| {
            Error::new(
                Step::Refresh,
                Cause::Invalid("no token after the refresh".into()),
            )
        })
    }

    /// Waits until no flow runs (a refresh that [`authorization`](Self::authorization)
    /// started in the background, an authorization); how the last one ended, `Ok` at once
    /// when none runs. A flow ends after its tokens are handed to the store, so this is
    /// what to wait for before exiting.
    pub async fn settled(&self) -> Result<(), Error> {
        let mut result = Ok(());
        loop {
            let target = {
                let mut state = self.lock();
                if !state.machine.is_busy() && !state.machine.has_output() {
                    return result;
                }
                self.kick(&mut state)
            };
            result = self.wait(target).await;
        }
    }

    /// The tokens held now.
    pub fn tokens(&self) -> Option<TokenSet> {
        self.lock().machine.tokens().cloned()
    }

    /// The canonical URI of the resource.
    pub fn resource(&self) -> &str {
        &self.shared.key
    }

    /// The `Authorization` value for a request sent now: the token, refreshed first when it
    /// is about to expire; `None` before any authorization (send without: the 401 starts
    /// it).
    pub async fn authorization(&self) -> Result<Option<String>, Error> {
        for _ in 0..4 {
            let target = {
                let mut state = self.lock();
                let now = (self.shared.clock)();
                match state.machine.credential(now) {
                    Credential::Wait => self.kick(&mut state),
                    ready => {
                        // A refresh may have started in the background.
                        self.kick(&mut state);
                        return Ok(match ready {
                            Credential::Bearer(value) => Some(value),
                            _ => None,
                        });
                    }
                }
            };
            self.wait(target).await?;
        }
        Err(Error::new(
            Step::Authorization,
            Cause::Invalid("no usable token after four flows".into()),
        ))
    }

    /// The resource answered `status` (with these `WWW-Authenticate` values) to a request
    /// that carried `sent`: waits for the refresh, authorization or step-up it starts, and
    /// says whether to send again.
    pub async fn on_response(
        &self,
        status: u16,
        www_authenticate: &[&str],
        sent: Option<&str>,
    ) -> Result<Retry, Error> {
        let target = {
            let mut state = self.lock();
            match state
                .machine
                .handle_resource_response(status, www_authenticate, sent)
            {
                Verdict::Accept => return Ok(Retry::No),
                Verdict::Fail(error) => return Err(error),
                Verdict::Retry if !state.machine.is_busy() && !state.machine.has_output() => {
                    return Ok(Retry::Yes)
                }
                Verdict::Retry => self.kick(&mut state),
            }
        };
        self.wait(target).await?;
        Ok(Retry::Yes)
    }

    /// Sends `request` to the resource with its `Authorization` header (replacing any it
    /// has) through the authorizer's transport, handling 401 and 403 answers (sending again
    /// after a refresh, an authorization or a step-up); the answer that stands.
    pub async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error> {
        let attempts = 4 + self.lock().machine.config().max_step_ups;
        for _ in 0..attempts {
            let authorization = self.authorization().await?;
            let mut attempt = request.clone();
            attempt
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
            if let Some(value) = &authorization {
                attempt = attempt.header("authorization", value.clone());
            }
            let answer =
                self.shared.transport.send(attempt).await.map_err(|why| {
                    Error::at(Step::Resource, &request.url, Cause::Transport(why))
                })?;
            let challenges: Vec<&str> = answer.headers_named("www-authenticate").collect();
            let retry = self
                .on_response(answer.status, &challenges, authorization.as_deref())
                .await?;
            if retry == Retry::No {
                return Ok(answer);
            }
        }
        Err(Error::at(
            Step::Resource,
            &request.url,
            Cause::Invalid(format!("still refused after {attempts} attempts")),
        ))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes sure a task runs the machine's outputs when it has any or a flow runs; the
    /// count of ended flows to wait for.
    fn kick(&self, state: &mut State) -> u64 {
        if (state.machine.is_busy() || state.machine.has_output()) && !state.driving {
            state.driving = true;
            tokio::spawn(run(Arc::clone(&self.shared)));
        }
        state.finished + 1
    }

    /// Waits until `target` flows have ended; how the last ended.
    async fn wait(&self, target: u64) -> Result<(), Error> {
        let mut ended = self.shared.ended.subscribe();
        let result = match ended.wait_for(|(n, _)| *n >= target).await {
            Ok(seen) => seen.1.clone(),
            // The sender lives in `shared`, which `self` holds: never closed here.
            Err(_) => Ok(()),
        };
        result
    }
}

/// Runs the machine's outputs until it has none and no flow waits on I/O.
async fn run(shared: Arc<Shared>) {
    // A store that failed to keep what a flow got makes that flow's end an error (the
    // tokens are held in memory all the same).
    let mut store_error: Option<Error> = None;
    loop {
        let output = {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            match state.machine.poll() {
                Some(output) => output,
                None => {
                    state.driving = false;
                    return;
                }
            }
        };
        match output {
            Output::Send { id, request } => {
                let answer = shared.transport.send(request).await;
                let now = (shared.clock)();
                let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                match answer {
                    Ok(answer) => state.machine.handle_response(id, answer, now),
                    Err(why) => state.machine.handle_transport_error(id, &why),
                }
            }
            Output::Authorize(request) => {
                let redirect = shared.user.authorize(&request).await;
                let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                match redirect {
                    Ok(url) => state.machine.handle_redirect(&url),
                    Err(why) => state.machine.handle_user_error(&why),
                }
            }
            Output::Save(credentials) => {
                if let Err(e) = shared.store.save(&shared.key, &credentials) {
                    store_error = Some(Error::new(Step::Store, Cause::Store(e.0)));
                }
            }
            Output::Done => finish(&shared, store_error.take().map_or(Ok(()), Err)),
            Output::Failed(error) => {
                store_error = None;
                finish(&shared, Err(error));
            }
        }
    }
}

fn finish(shared: &Shared, result: Result<(), Error>) {
    let finished = {
        let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        state.finished += 1;
        state.finished
    };
    // The value it replaces (the previous flow's end) has been seen by its waiters.
    let _previous = shared.ended.send_replace((finished, result));
}

impl CredentialProvider for Authorizer {
    fn authorization(&self) -> BoxFuture<'_, Result<Option<String>, Error>> {
        Box::pin(Authorizer::authorization(self))
    }

    fn on_response<'a>(
        &'a self,
        status: u16,
        www_authenticate: &'a [&'a str],
        sent: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Retry, Error>> {
        Box::pin(Authorizer::on_response(
            self,
            status,
            www_authenticate,
            sent,
        ))
    }
}
