//! When a call may be sent again: after the server lost the session (HTTP 404), and after
//! the connection was cut before the answer. The rules, for the typed client and for any
//! other driver of MCP calls:
//!
//! - **Session lost** ([`Loss::Session`]): a request that carried an `Mcp-Session-Id` was
//!   answered HTTP 404 (2025-11-25: the server ended the session, or the process that held
//!   it is gone). The server did not run the request, so sending it again is safe for
//!   every method. The client starts a new session once (`initialize` without the id,
//!   `notifications/initialized`) and sends the call again. A second 404 right after that
//!   fails the call ([`ClientError::SessionLost`]): one new session per call, no loop.
//! - **Answer lost** ([`Loss::Answer`]): the exchange that carried the request was cut
//!   before its answer (the connection reset or closed, as when the server process died;
//!   a proxy's `502 Bad Gateway` or `504 Gateway Timeout`). The server may or may not have
//!   run it. The call is sent again, once, only when running it twice does no harm: the
//!   read-only methods ([`READ_ONLY_METHODS`]) and a `tools/call` of a tool the client
//!   listed with `annotations.idempotentHint: true`. Anything else fails with
//!   [`ClientError::OutcomeUnknown`], never silently sent again. When the second sending
//!   meets a lost session (404: the process that answers now never knew it), the session
//!   rule applies on top.
//!
//! [`Attempts`] keeps the count of one call; [`Loss::of`] reads what happened from the
//! call's error ([`EndReason::Unanswered`], which `sansrpc_mcp::tokio` gives).

use super::*;
use sansrpc::connection::EndReason;

/// The methods sent again after a cut connection: they only read (list, get, read, complete)
/// or do nothing (`ping`). `tools/call` is not among them: a tool is sent again only when
/// the client knows it is idempotent (see the [module](self)).
pub const READ_ONLY_METHODS: &[&str] = &[
    methods::PING,
    methods::TOOLS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
    methods::PROMPTS_LIST,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
];

/// True for a method of [`READ_ONLY_METHODS`].
pub fn is_read_only(method: &str) -> bool {
    READ_ONLY_METHODS.contains(&method)
}

/// What became of a call that got no answer, when the rules above apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// HTTP 404 to a request that carried a session id: the session is gone, the request
    /// was not run.
    Session,
    /// The exchange was cut before the answer (no status, or a proxy's 502 or 504): the
    /// request may have run.
    Answer,
}

impl Loss {
    /// Which loss `error` is, if any: [`EndReason::Unanswered`] with status 404 is
    /// [`Loss::Session`] (the Streamable HTTP client ends a call so only when its request
    /// carried a session id), with no status, 502 or 504 [`Loss::Answer`]. Every other
    /// error is the call's own answer.
    pub fn of(error: &CallError) -> Option<Loss> {
        match error {
            CallError::Ended(EndReason::Unanswered { status: Some(404) }) => Some(Loss::Session),
            CallError::Ended(EndReason::Unanswered {
                status: None | Some(502 | 504),
            }) => Some(Loss::Answer),
            _ => None,
        }
    }
}

/// What to do after a [`Loss`] ([`Attempts::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Start a new session, then send the call again.
    Renew,
    /// Send the call again as it is.
    Resend,
    /// Give up: [`ClientError::SessionLost`] after a [`Loss::Session`],
    /// [`ClientError::OutcomeUnknown`] after a [`Loss::Answer`].
    Fail,
}

/// The retry count of one call: at most one new session and at most one sending again after
/// a cut connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempts {
    renewed: bool,
    resent: bool,
}

impl Attempts {
    /// What follows `loss` for a call that is `idempotent` (a read-only method, or a tool
    /// listed with `idempotentHint: true`); counts what it answers.
    pub fn next(&mut self, loss: Loss, idempotent: bool) -> Next {
        match loss {
            Loss::Session if !self.renewed => {
                self.renewed = true;
                Next::Renew
            }
            Loss::Answer if idempotent && !self.resent => {
                self.resent = true;
                Next::Resend
            }
            _ => Next::Fail,
        }
    }
}

/// What [`ClientBuilder::on_session_renewed`] is given.
pub(super) type RenewedFn = dyn Fn(&InitializeResult) + Send + Sync;

/// What a session client keeps to start a new session: shared by its clones.
pub(super) struct Renewal {
    /// Who the client is: `initialize` again.
    pub(super) builder: ClientBuilder,
    /// How many sessions replaced the first (also what a call saw before it was sent).
    pub(super) generation: AtomicU64,
    /// One renewal at a time; calls that lost the same session wait for it.
    pub(super) renewing: futures::lock::Mutex<()>,
    /// The resources subscribed (`resources/subscribe`), subscribed again on a new session.
    pub(super) subscribed: Mutex<BTreeSet<String>>,
    /// The last `logging/setLevel`, set again on a new session.
    pub(super) level: Mutex<Option<LoggingLevel>>,
    pub(super) renewed: Option<Arc<RenewedFn>>,
}

impl fmt::Debug for Renewal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Renewal")
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish()
    }
}

impl Renewal {
    pub(super) fn new(builder: &ClientBuilder) -> Self {
        Renewal {
            builder: builder.clone(),
            generation: AtomicU64::new(0),
            renewing: futures::lock::Mutex::new(()),
            subscribed: Mutex::default(),
            level: Mutex::default(),
            renewed: builder.renewed.clone(),
        }
    }

    /// Starts a new session on `client`, unless another call already did since `seen`:
    /// the handshake, then the subscriptions and the log level of the old session (each
    /// best-effort: one the new server refuses is left out). Tells the application.
    pub(super) async fn renew(
        &self,
        client: &Client,
        method: &'static str,
        seen: u64,
    ) -> Result<(), ClientError> {
        let _one = self.renewing.lock().await;
        if self.generation.load(Ordering::Acquire) != seen {
            return Ok(());
        }
        let init = self
            .builder
            .handshake(client)
            .await
            .map_err(|e| ClientError::SessionLost {
                method,
                cause: Some(Box::new(e)),
            })?;
        let level = *self.level.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(level) = level {
            let params = raw_json(&serde_json::json!({ "level": level }));
            let _ = client
                .call_raw(methods::LOGGING_SET_LEVEL, Some(&params))
                .await;
        }
        let subscribed: Vec<String> = self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        for uri in subscribed {
            let params = raw_json(&serde_json::json!({ "uri": uri }));
            let _ = client
                .call_raw(methods::RESOURCES_SUBSCRIBE, Some(&params))
                .await;
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Some(renewed) = &self.renewed {
            renewed(&init);
        }
        Ok(())
    }
}

/// The tools listed with `idempotentHint: true`, by name (shared by a client's clones).
#[derive(Debug, Default)]
pub(super) struct Idempotent(Mutex<Names>);

/// Names kept sorted, a few (the tools a server lists): a `HashSet` brought a browser
/// page's MCP client its hashing.
#[derive(Default)]
pub(super) struct Names(Vec<String>);

/// As a set prints: `{"a", "b"}`.
impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(&self.0).finish()
    }
}

impl Names {
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|n| n.as_str().cmp(name))
    }
}

impl Idempotent {
    /// Remembers what `tools` say; `all`: they are every tool (the others are forgotten).
    pub(super) fn learn(&self, tools: &[Tool], all: bool) {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if all {
            known.0.clear();
        }
        for tool in tools {
            let hint = tool.annotations.as_ref().and_then(|a| a.idempotent_hint);
            match (known.find(&tool.name), hint == Some(true)) {
                (Err(at), true) => known.0.insert(at, tool.name.clone()),
                (Ok(at), false) => drop(known.0.remove(at)),
                _ => {}
            }
        }
    }

    pub(super) fn contains(&self, tool: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .find(tool)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_renewal_and_one_resend_per_call() {
        let mut a = Attempts::default();
        assert_eq!(a.next(Loss::Answer, false), Next::Fail);
        let mut a = Attempts::default();
        assert_eq!(a.next(Loss::Answer, true), Next::Resend);
        assert_eq!(a.next(Loss::Session, true), Next::Renew);
        assert_eq!(a.next(Loss::Session, true), Next::Fail);
        assert_eq!(a.next(Loss::Answer, true), Next::Fail);
    }

    #[test]
    fn losses_are_read_from_the_end_reason() {
        let ended = |status| CallError::Ended(EndReason::Unanswered { status });
        assert_eq!(Loss::of(&ended(Some(404))), Some(Loss::Session));
        assert_eq!(Loss::of(&ended(None)), Some(Loss::Answer));
        assert_eq!(Loss::of(&ended(Some(502))), Some(Loss::Answer));
        assert_eq!(Loss::of(&ended(Some(503))), None);
        assert_eq!(Loss::of(&CallError::Ended(EndReason::TimedOut)), None);
        assert!(is_read_only("tools/list") && !is_read_only("tools/call"));
    }
}
