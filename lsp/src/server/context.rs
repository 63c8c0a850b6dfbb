//! What a handler knows and how it reaches the editor: [`Context`], over the [`Peer`]
//! (`sansrpc_runtime::Peer`) an adapter gives it.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lsp_types::notification::{
    LogMessage, Notification, Progress, PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{Request, WorkDoneProgressCreate};
use lsp_types::{
    ClientCapabilities, Diagnostic, InitializeParams, LogMessageParams, MessageType,
    ProgressParams, ProgressParamsValue, ProgressToken, PublishDiagnosticsParams,
    ShowMessageParams, Uri, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};
use serde::Serialize;

use super::session::Session;
use super::versions::{self, Signal};
use super::LspError;
use crate::document::{Documents, PositionEncoding, TextDocument};

/// The driver's side of a handler: `sansrpc_runtime::Peer`, which every adapter
/// implements once (`sansrpc_futures`, `sansrpc_blocking`) and the MCP and A2A crates use
/// too.
pub use sansrpc_runtime::{BoxFuture, Peer};

/// The progress tokens a request carried (`workDoneToken`, `partialResultToken`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    pub work_done: Option<ProgressToken>,
    pub partial_result: Option<ProgressToken>,
}

/// What a handler knows about its request or notification, and how it reaches the editor:
/// notifications (diagnostics, log and show messages), calls (configuration, applyEdit,
/// showMessageRequest, registerCapability), work-done progress and partial results, the
/// documents the server keeps, in the negotiated position encoding, and, for requests,
/// the editor's cancellation. Cheap to clone; give a clone to a task that outlives the
/// handler.
///
/// Its documents are those its request or notification saw: every change that arrived
/// before it applied, none that arrived after, however long the handler runs (a position
/// in a request means a place in that text).
#[derive(Clone)]
pub struct Context {
    host: Arc<dyn Peer>,
    session: Arc<Session>,
    documents: Arc<Documents>,
    tokens: Arc<Tokens>,
    /// In the analysis of a document's version ([`ServerBuilder::on_change`](super::ServerBuilder::on_change)): set once a
    /// newer version arrives or the document closes.
    superseded: Option<Signal>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("encoding", &self.encoding())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Tokens of the progress a server creates (`window/workDoneProgress/create`), unique in
/// the process.
static CREATED: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// The editor's side of the connection, as the driver gives it.
    pub(crate) fn host(&self) -> &dyn Peer {
        &*self.host
    }

    /// The context of a request or notification handed out now: the documents as they are
    /// now (for a document notification, once it is applied).
    pub(crate) fn new(host: Arc<dyn Peer>, tokens: Tokens) -> Self {
        let session = host.locals().get::<Session>();
        let documents = session.documents_now();
        Context {
            host,
            session,
            documents,
            tokens: Arc::new(tokens),
            superseded: None,
        }
    }

    /// This context, for the analysis of a version that `superseded` ends.
    pub(crate) fn for_version(mut self, superseded: Signal) -> Self {
        self.superseded = Some(superseded);
        self
    }

    /// The connection's session: documents, the negotiated encoding, the client's
    /// capabilities.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The position encoding negotiated at `initialize` (UTF-16 before it).
    pub fn encoding(&self) -> PositionEncoding {
        self.session.encoding()
    }

    /// A snapshot of the open document `uri` as this request or notification saw it (cheap:
    /// no copy of the text): with every change that arrived before it, none after; `None`
    /// when it was not open. The latest text is
    /// [`session().document(uri)`](Session::document).
    pub fn document(&self, uri: &Uri) -> Option<TextDocument> {
        self.documents.snapshot(uri)
    }

    /// The client's `initialize` params (`None` before `initialize`).
    pub fn initialize_params(&self) -> Option<Arc<InitializeParams>> {
        self.session.initialize_params()
    }

    /// The client's capabilities (`None` before `initialize`).
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.initialize_params().map(|p| p.capabilities.clone())
    }

    /// True once the editor cancelled this request (`$/cancelRequest`); a handler that
    /// stops answers with [`LspError::cancelled`]. In the analysis of a document's version
    /// ([`ServerBuilder::on_change`](super::ServerBuilder::on_change)): true once a newer version arrived or the document
    /// closed, and the analysis is wasted. Always false in a notification.
    pub fn is_cancelled(&self) -> bool {
        self.host.is_cancelled() || self.superseded.as_ref().is_some_and(Signal::is_set)
    }

    /// Resolves when [`is_cancelled`](Self::is_cancelled) turns true (never, in a
    /// notification).
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        match &self.superseded {
            Some(signal) => signal.wait(),
            None => self.host.cancelled(),
        }
    }

    /// Waits `pause`, unless cancelled first ([`is_cancelled`](Self::is_cancelled)): true
    /// when the pause passed and the work is still wanted. The debounce of an analysis
    /// that should not run on every keystroke:
    /// `if !cx.debounce(Duration::from_millis(100)).await { return }`. On tokio's timer
    /// inside a tokio runtime; else on the timer of the executor the driver was given (in a
    /// browser: `setTimeout`); elsewhere (threads, smol) on a thread that sleeps `pause`.
    pub async fn debounce(&self, pause: std::time::Duration) -> bool {
        if self.is_cancelled() {
            return false;
        }
        let pause = versions::sleep(&*self.host, pause);
        versions::first_of(pause, Box::pin(self.cancelled())).await && !self.is_cancelled()
    }

    /// The value `compute` makes of `doc`, computed once per version of the document and
    /// kept while it is open (one value per type `T`, of the latest version asked for):
    /// the parse an analysis, a hover and a completion of one version share. Two handlers
    /// asking at once may both compute it; one value is kept.
    pub fn cached<T: Send + Sync + 'static>(
        &self,
        doc: &TextDocument,
        compute: impl FnOnce(&TextDocument) -> T,
    ) -> Arc<T> {
        let text = match self.session.cached::<T>(doc.uri(), doc.version()) {
            Ok(value) => return value,
            Err(text) => text,
        };
        let value = Arc::new(compute(doc));
        if let Some(text) = text {
            self.session
                .cache(doc.uri(), doc.version(), Arc::clone(&value), &text);
        }
        value
    }

    /// Sends the editor the notification `N`; false when the connection is gone or the
    /// params do not serialize.
    pub async fn notify<N: Notification>(&self, params: N::Params) -> bool {
        match super::to_raw(&params) {
            Ok(params) => self.host.notify(N::METHOD, params).await,
            Err(_) => false,
        }
    }

    /// Calls the editor with the request `R`: `workspace/configuration`,
    /// `workspace/applyEdit`, `window/showMessageRequest`, `client/registerCapability`…
    pub async fn call<R: Request>(&self, params: R::Params) -> Result<R::Result, LspError> {
        let params = super::to_raw(&params)
            .map_err(|e| LspError::internal(format!("{}: {e}", R::METHOD)))?;
        let result = self
            .host
            .call(R::METHOD, params)
            .await
            .map_err(LspError::from)?;
        serde_json::from_str(result.get())
            .map_err(|e| LspError::internal(format!("the editor's answer to {}: {e}", R::METHOD)))
    }

    /// Publishes the diagnostics of `uri` (`textDocument/publishDiagnostics`), for the
    /// document's `version` when given. In the analysis of a version that was superseded
    /// (a newer one arrived, or the document closed), nothing is sent: false.
    pub async fn publish_diagnostics(
        &self,
        uri: Uri,
        diagnostics: Vec<Diagnostic>,
        version: Option<i32>,
    ) -> bool {
        if self.superseded.as_ref().is_some_and(Signal::is_set) {
            return false;
        }
        let params = PublishDiagnosticsParams::new(uri, diagnostics, version);
        self.notify::<PublishDiagnostics>(params).await
    }

    /// Logs `message` in the editor (`window/logMessage`).
    pub async fn log_message(&self, typ: MessageType, message: impl Into<String>) -> bool {
        let params = LogMessageParams {
            typ,
            message: message.into(),
        };
        self.notify::<LogMessage>(params).await
    }

    /// Shows `message` to the user (`window/showMessage`).
    pub async fn show_message(&self, typ: MessageType, message: impl Into<String>) -> bool {
        let params = ShowMessageParams {
            typ,
            message: message.into(),
        };
        self.notify::<ShowMessage>(params).await
    }

    /// Starts work-done progress titled `title`: on the request's own `workDoneToken` when
    /// it carried one, else on a token created with `window/workDoneProgress/create` when
    /// the client supports it. `None` when neither: report nothing then.
    pub async fn work_done(&self, title: impl Into<String>) -> Option<WorkDone> {
        let token = match &self.tokens.work_done {
            Some(token) => token.clone(),
            None => {
                let creates = self
                    .client_capabilities()
                    .and_then(|c| c.window)
                    .and_then(|w| w.work_done_progress)
                    .unwrap_or(false);
                if !creates {
                    return None;
                }
                let n = CREATED.fetch_add(1, Ordering::Relaxed);
                let token = ProgressToken::String(format!("sansrpc-lsp-{n}"));
                let params = WorkDoneProgressCreateParams {
                    token: token.clone(),
                };
                self.call::<WorkDoneProgressCreate>(params).await.ok()?;
                token
            }
        };
        let done = WorkDone {
            cx: self.clone(),
            token,
            ended: false,
        };
        let begin = WorkDoneProgressBegin {
            title: title.into(),
            ..WorkDoneProgressBegin::default()
        };
        done.send(WorkDoneProgress::Begin(begin)).await;
        Some(done)
    }

    /// Sends `value` as a partial result of this request on its `partialResultToken`
    /// (`$/progress`); false when the request carried none (answer with the whole result
    /// then).
    pub async fn partial_result<T: Serialize>(&self, value: &T) -> bool {
        let Some(token) = self.tokens.partial_result.clone() else {
            return false;
        };
        #[derive(Serialize)]
        struct Partial<'a, T> {
            token: ProgressToken,
            value: &'a T,
        }
        match super::to_raw(&Partial { token, value }) {
            Ok(params) => self.host.notify(Progress::METHOD, params).await,
            Err(_) => false,
        }
    }
}

/// Work-done progress under way ([`Context::work_done`]): report, then end it. Dropped
/// without [`end`](Self::end) (a handler that returns early, with `?` or cancelled), it is
/// ended all the same, so the editor's indicator does not spin for ever (LSP: begin,
/// reports, end on each token).
#[derive(Debug)]
pub struct WorkDone {
    cx: Context,
    token: ProgressToken,
    ended: bool,
}

impl WorkDone {
    /// The token the progress goes on.
    pub fn token(&self) -> &ProgressToken {
        &self.token
    }

    /// Reports `message` and, when known, the `percentage` done.
    pub async fn report(&self, message: Option<String>, percentage: Option<u32>) -> bool {
        let report = WorkDoneProgressReport {
            message,
            percentage,
            ..WorkDoneProgressReport::default()
        };
        self.send(WorkDoneProgress::Report(report)).await
    }

    /// Ends the progress with a last `message`.
    pub async fn end(mut self, message: Option<String>) -> bool {
        self.ended = true;
        self.send(WorkDoneProgress::End(WorkDoneProgressEnd { message }))
            .await
    }

    fn params(&self, value: WorkDoneProgress) -> ProgressParams {
        ProgressParams {
            token: self.token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        }
    }

    async fn send(&self, value: WorkDoneProgress) -> bool {
        self.cx.notify::<Progress>(self.params(value)).await
    }
}

impl Drop for WorkDone {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let end = WorkDoneProgress::End(WorkDoneProgressEnd { message: None });
        // Queued as it is made (a drop cannot wait for the send).
        if let Ok(params) = super::to_raw(&self.params(end)) {
            self.cx.host.notifier().notify(Progress::METHOD, params);
        }
    }
}
