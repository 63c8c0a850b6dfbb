//! The Language Server Protocol's lifecycle, kept by the connection machine under
//! [`Profile::Lsp`](crate::wire::Profile::Lsp), so that no LSP server writes it again:
//!
//! - before `initialize`, a request is answered `-32002` ServerNotInitialized and a
//!   notification dropped (`exit` excepted);
//! - a second `initialize` is answered `-32600`, unless the application answered the
//!   first with an error (LSP's `InitializeError` with `retry`: the client may send it
//!   again), which leaves the server uninitialized;
//! - after `shutdown`, a request is answered `-32600` InvalidRequest and a notification
//!   dropped (`exit` excepted);
//! - `exit` closes the connection ([`CloseReason::Exit`](super::CloseReason::Exit)) with
//!   status 0 after `shutdown`, 1 without; the drivers return it;
//! - `$/setTrace` (and `initialize`'s `trace`) set the trace level
//!   [`Connection::log_trace`](super::Connection::log_trace) sends `$/logTrace` at;
//! - `"params": null` on any request or notification is read as no params
//!   ([`Limits::null_params_as_absent`](crate::Limits::null_params_as_absent)): editors send
//!   it on `shutdown` and `exit`, and the LSP ecosystem reads it so;
//! - the `processId` of `initialize` is checked on a timer
//!   ([`Event::CheckProcess`](super::Event::CheckProcess)): a server whose editor died
//!   exits with status 1.
//!
//! `initialize` and `shutdown` still reach the application, which answers them (its
//! capabilities, its clean-up).

use core::time::Duration;

use serde::Deserialize;

use crate::error::{code, ErrorObject};
use crate::raw::RawValue;
use crate::time::Instant;
use crate::wire::IncomingId;

pub use crate::config::PROCESS_CHECK;

/// Where an LSP connection is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Uninitialized,
    Running,
    ShutDown,
}

/// The trace level the client asked for (`$/setTrace`, `initialize`'s `trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Trace {
    /// No `$/logTrace` (the default).
    #[default]
    Off,
    /// `$/logTrace` with messages.
    Messages,
    /// `$/logTrace` with messages and their verbose details.
    Verbose,
}

impl Trace {
    fn parse(value: &str) -> Option<Trace> {
        match value {
            "off" => Some(Trace::Off),
            "messages" => Some(Trace::Messages),
            "verbose" => Some(Trace::Verbose),
            _ => None,
        }
    }
}

/// The lifecycle state of one LSP connection.
#[derive(Debug)]
pub(super) struct Lsp {
    pub state: State,
    pub trace: Trace,
    /// The editor's process, from `initialize`.
    pub pid: Option<u32>,
    /// When to check it next, and whether a check is due for the driver.
    pub next_check: Option<Instant>,
    pub check_due: bool,
    pub check_every: Duration,
    /// The client said it handles `window/workDoneProgress/create`.
    pub work_done_progress: bool,
    /// The `initialize` request handed to the application, until it is answered: an error
    /// leaves the server uninitialized (the client may retry).
    pub initializing: Option<IncomingId>,
    /// The `shutdown` request handed to the application, until it is answered.
    pub shutdown: Option<IncomingId>,
    /// `shutdown` was answered: only then is the exit clean (status 0).
    pub shutdown_answered: bool,
}

impl Lsp {
    pub(super) fn new(check_every: Duration) -> Self {
        Lsp {
            state: State::Uninitialized,
            trace: Trace::Off,
            pid: None,
            next_check: None,
            check_due: false,
            check_every,
            work_done_progress: false,
            initializing: None,
            shutdown: None,
            shutdown_answered: false,
        }
    }

    /// The application answered request `handle` (`ok`: with a result, not an error).
    pub(super) fn answered(&mut self, handle: IncomingId, ok: bool) {
        if self.initializing == Some(handle) {
            self.initializing = None;
            if !ok && self.state == State::Running {
                self.state = State::Uninitialized;
            }
        }
        if self.shutdown == Some(handle) {
            self.shutdown = None;
            self.shutdown_answered = true;
        }
    }

    /// The names the lifecycle looks at in its present state (every call before
    /// `initialize` and after `shutdown`).
    pub(super) fn takes(&self, request: bool, method: &str) -> bool {
        self.state != State::Running
            || match method {
                "initialize" | "shutdown" => request,
                "exit" | "$/setTrace" => !request,
                _ => false,
            }
    }

    /// What to do with a request of the peer.
    pub(super) fn request(&self, method: &str) -> Gate {
        match (self.state, method) {
            (State::Uninitialized, "initialize") => Gate::Initialize,
            (State::Uninitialized, _) => Gate::Refuse(ErrorObject::fixed(
                code::LSP_SERVER_NOT_INITIALIZED,
                "Server not initialized",
            )),
            (State::Running, "initialize") => Gate::Refuse(ErrorObject::fixed(
                code::INVALID_REQUEST,
                "Invalid Request: initialize may only be sent once",
            )),
            (State::Running, "shutdown") => Gate::Shutdown,
            (State::Running, _) => Gate::Pass,
            (State::ShutDown, _) => Gate::Refuse(ErrorObject::fixed(
                code::INVALID_REQUEST,
                "Invalid Request: the server is shutting down",
            )),
        }
    }

    /// What to do with a notification of the peer.
    pub(super) fn notification(&self, method: &str, params: Option<&RawValue>) -> Gate {
        match (self.state, method) {
            (_, "exit") => Gate::Exit(if self.state == State::ShutDown { 0 } else { 1 }),
            (State::Running, "$/setTrace") => {
                #[derive(Deserialize)]
                struct SetTrace<'a> {
                    value: &'a str,
                }
                let value = params
                    .and_then(|p| crate::de::from_str::<SetTrace<'_>>(p.get()).ok())
                    .and_then(|t| Trace::parse(t.value));
                match value {
                    Some(trace) => Gate::SetTrace(trace),
                    None => Gate::Drop,
                }
            }
            (State::Running, _) => Gate::Pass,
            _ => Gate::Drop,
        }
    }

    /// `initialize` came (request `handle`): the client's process, trace level and progress
    /// capability.
    pub(super) fn initialize(
        &mut self,
        handle: IncomingId,
        params: Option<&RawValue>,
        now: Instant,
    ) {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Window {
            #[serde(default)]
            work_done_progress: bool,
        }
        #[derive(Deserialize, Default)]
        struct Capabilities {
            #[serde(default)]
            window: Option<Window>,
        }
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            #[serde(default)]
            process_id: Option<u32>,
            #[serde(default, borrow)]
            trace: Option<&'a str>,
            #[serde(default)]
            capabilities: Option<Capabilities>,
        }
        let params: Params<'_> = params
            .and_then(|p| crate::de::from_str(p.get()).ok())
            .unwrap_or_default();
        self.state = State::Running;
        self.initializing = Some(handle);
        self.pid = params.process_id;
        self.trace = params.trace.and_then(Trace::parse).unwrap_or_default();
        self.work_done_progress = params
            .capabilities
            .and_then(|c| c.window)
            .is_some_and(|w| w.work_done_progress);
        if self.pid.is_some() {
            self.next_check = Some(now + self.check_every);
        }
    }

    /// The check timer fired: the driver is asked to look at the process.
    pub(super) fn handle_timeout(&mut self, now: Instant) {
        if let Some(at) = self.next_check.filter(|&at| at <= now) {
            self.check_due = true;
            self.next_check = Some(at.max(now) + self.check_every);
        }
    }
}

/// What the lifecycle does with a call.
#[derive(Debug)]
pub(super) enum Gate {
    /// Hand it to the application.
    Pass,
    /// `initialize`: note its params, then hand it out.
    Initialize,
    /// `shutdown`: from now on requests are refused; hand it out.
    Shutdown,
    /// Answer the request with this error.
    Refuse(ErrorObject<'static>),
    /// Drop the notification.
    Drop,
    /// `exit`, with the process's status.
    Exit(i32),
    /// `$/setTrace`.
    SetTrace(Trace),
}
