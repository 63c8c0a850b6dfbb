//! A language server: lsp-types' own request and notification types registered as they
//! are, a [`Context`] in every handler (notifications included) that reaches the editor,
//! the capabilities that follow from what is registered, and the text documents kept in
//! the negotiated position encoding.
//!
//! [`ServerBuilder`] declares the handlers; [`Server`] is the protocol logic, a function of
//! a request and a [`Peer`] (the adapter's way to the editor), so one definition runs on
//! tokio and on the futures driver (smol, async-std) with the `futures` feature
//! (`Server::router`), and on the blocking adapter's threads with the `blocking` feature
//! (`Server::blocking_router`). `Server::serve_stdio` (`tokio` feature) and
//! `Server::serve_stdio_blocking` serve it on stdio under `Profile::Lsp` and return the
//! exit status; a connection of your own needs `sansrpc::Config::for_profile(Profile::Lsp)`
//! (without it the server says so at `initialize`): the lifecycle (requests before
//! `initialize` refused, `exit`'s status, the editor's process watched), ordered
//! notifications and `$/cancelRequest` are the connection machine's.
//!
//! What the server answers itself:
//! - `initialize`: the position encoding negotiated from the client's
//!   `general.positionEncodings` (its first choice the server supports; UTF-16 when it
//!   offers none), the capabilities of the registered handlers (see
//!   [`ServerBuilder::capabilities`]) and the server's name and version;
//! - `shutdown` (`null`, after the application's handler when it registered one);
//! - `textDocument/didOpen`, `didChange` and `didClose`, applied to the [`Session`]'s
//!   documents in arrival order before the application's handler for them runs (unless
//!   [`ServerBuilder::keep_documents`] is off).
//!
//! ```
//! use sansrpc_lsp::lsp_types::request::HoverRequest;
//! use sansrpc_lsp::lsp_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind};
//! use sansrpc_lsp::server::{Context, LspError, ServerBuilder};
//!
//! async fn hover(cx: Context, params: HoverParams) -> Result<Option<Hover>, LspError> {
//!     let at = params.text_document_position_params;
//!     let Some(doc) = cx.document(&at.text_document.uri) else { return Ok(None) };
//!     let line = doc.line(at.position.line).unwrap_or_default().into_owned();
//!     let contents = HoverContents::Markup(MarkupContent { kind: MarkupKind::PlainText, value: line });
//!     Ok(Some(Hover { contents, range: None }))
//! }
//!
//! let server = ServerBuilder::new("lines", "1.0").request::<HoverRequest, _, _>(hover).build();
//! assert!(server.capabilities().hover_provider.is_some());
//! ```

mod capabilities;
mod context;
#[cfg(any(feature = "tokio", feature = "blocking"))]
mod frames;
mod serve;
mod session;
mod versions;

#[cfg(feature = "blocking")]
mod blocking;
#[cfg(feature = "futures")]
mod futures;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification,
};
use lsp_types::request::{Initialize, Request, Shutdown};
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    InitializeParams, InitializeResult, MessageType, ProgressToken, ServerCapabilities, ServerInfo,
};
use sansrpc::{ErrorObject, RawValue};
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub use context::{BoxFuture, Context, Peer, WorkDone};
pub use session::Session;

use crate::document::{PositionEncoding, TextDocument, Warning};
use context::Tokens;

/// Why a handler did not give its result: the JSON-RPC error that answers the request.
#[derive(Debug, Clone, PartialEq)]
pub struct LspError(pub ErrorObject<'static>);

impl LspError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        LspError(ErrorObject::new(code, message.into()))
    }

    /// `-32602` Invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        LspError::new(-32602, message)
    }

    /// `-32603` Internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        LspError::new(-32603, message)
    }

    /// `-32803` RequestFailed (LSP 3.17): the request was valid and failed.
    pub fn request_failed(message: impl Into<String>) -> Self {
        LspError::new(-32803, message)
    }

    /// `-32801` ContentModified: the document changed under the request.
    pub fn content_modified() -> Self {
        LspError::new(-32801, "Content modified")
    }

    /// `-32800` RequestCancelled: what a handler answers once it sees
    /// [`Context::is_cancelled`].
    pub fn cancelled() -> Self {
        LspError::new(-32800, "Request cancelled")
    }
}

impl fmt::Display for LspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.0.message, self.0.code)
    }
}

impl std::error::Error for LspError {}

impl From<ErrorObject<'static>> for LspError {
    fn from(e: ErrorObject<'static>) -> Self {
        LspError(e)
    }
}

type RequestFn = dyn Fn(Context, Option<&RawValue>) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>>
    + Send
    + Sync;
type NotificationFn = dyn Fn(Context, Option<&RawValue>) -> BoxFuture<()> + Send + Sync;
type CapabilitiesFn = dyn Fn(&mut ServerCapabilities) + Send + Sync;
type ChangeFn = dyn Fn(Context, TextDocument) -> BoxFuture<()> + Send + Sync;

/// Declares a language server: its handlers, capabilities and position encodings.
pub struct ServerBuilder {
    info: ServerInfo,
    requests: BTreeMap<&'static str, Box<RequestFn>>,
    notifications: BTreeMap<&'static str, Box<NotificationFn>>,
    encodings: Vec<PositionEncoding>,
    documents: bool,
    capabilities: Option<Box<CapabilitiesFn>>,
    on_change: Option<Box<ChangeFn>>,
    clear_on_close: bool,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .field("requests", &self.requests.keys().collect::<Vec<_>>())
            .field(
                "notifications",
                &self.notifications.keys().collect::<Vec<_>>(),
            )
            .field("encodings", &self.encodings)
            .field("documents", &self.documents)
            .finish()
    }
}

/// The methods the server answers itself; registering them is a mistake.
const OWN_REQUESTS: [&str; 1] = [Initialize::METHOD];
/// What the connection machine takes (the lifecycle, cancellation, tracing).
const MACHINE_NOTIFICATIONS: [&str; 3] = ["exit", "$/cancelRequest", "$/setTrace"];

impl ServerBuilder {
    /// A server called `name`, at `version`, that keeps documents and speaks every position
    /// encoding (UTF-8, UTF-16, UTF-32: the client's first choice wins).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerBuilder {
            info: ServerInfo {
                name: name.into(),
                version: Some(version.into()),
            },
            requests: BTreeMap::new(),
            notifications: BTreeMap::new(),
            encodings: PositionEncoding::ALL.to_vec(),
            documents: true,
            capabilities: None,
            on_change: None,
            clear_on_close: true,
        }
    }

    /// Handles the request `R` (an lsp-types request type, or your own declared the same
    /// way) with `handler`; its capability follows (see [`capabilities`](Self::capabilities)).
    /// Params that do not decode are answered `-32602` without running it.
    ///
    /// # Panics
    /// When `R` is `initialize` (the server answers it) or is registered twice.
    pub fn request<R, F, Fut>(mut self, handler: F) -> Self
    where
        R: Request,
        F: Fn(Context, R::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Result, LspError>> + Send + 'static,
    {
        assert!(
            !OWN_REQUESTS.contains(&R::METHOD),
            "{} is answered by the server",
            R::METHOD
        );
        let run = move |cx: Context, params: Option<&RawValue>| -> BoxFuture<_> {
            match decode::<R::Params>(params) {
                Ok(params) => {
                    let answer = handler(cx, params);
                    Box::pin(async move {
                        let result = answer.await.map_err(|e| e.0)?;
                        to_raw(&result).map_err(|e| {
                            ErrorObject::new(-32603, format!("{}'s result: {e}", R::METHOD))
                        })
                    })
                }
                Err(e) => Box::pin(std::future::ready(Err(e))),
            }
        };
        let old = self.requests.insert(R::METHOD, Box::new(run));
        assert!(old.is_none(), "{} is registered twice", R::METHOD);
        self
    }

    /// Handles the notification `N` with `handler`, which gets a [`Context`] to reach the
    /// editor. Notifications run one at a time in arrival order, each before any request
    /// that came after it. For `didOpen`, `didChange` and `didClose` the document is
    /// already updated when the handler runs. Params that do not decode are dropped, with
    /// one `window/logMessage` warning to the editor (for those three, the documents'
    /// warning: the handler does not run).
    ///
    /// # Panics
    /// When `N` is `exit`, `$/cancelRequest` or `$/setTrace` (the connection machine takes
    /// them) or is registered twice.
    pub fn notification<N, F, Fut>(mut self, handler: F) -> Self
    where
        N: Notification,
        F: Fn(Context, N::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        assert!(
            !MACHINE_NOTIFICATIONS.contains(&N::METHOD),
            "{} is taken by the connection",
            N::METHOD
        );
        let run = move |cx: Context, params: Option<&RawValue>| -> BoxFuture<()> {
            match decode::<N::Params>(params) {
                Ok(params) => Box::pin(handler(cx, params)),
                Err(e) => Box::pin(async move {
                    let message = format!("{}: {}", N::METHOD, e.message);
                    cx.log_message(MessageType::WARNING, message).await;
                }),
            }
        };
        let old = self.notifications.insert(N::METHOD, Box::new(run));
        assert!(old.is_none(), "{} is registered twice", N::METHOD);
        self
    }

    /// Runs `hook` on every new version of a document (a `didOpen`, a `didChange`), with
    /// the document as that version left it: the one place for an analysis that publishes
    /// diagnostics. It runs beside the connection, which reads on meanwhile (on the tokio
    /// runtime when the server runs in one; else on the executor the driver was given, as
    /// `sansrpc-wasm`'s in a browser; otherwise, on the blocking adapter or smol, on a
    /// thread of its own), after the notification's own handler was started.
    ///
    /// A version that is superseded (a newer one arrives, or the document closes) cancels
    /// its analysis: the hook's [`Context::is_cancelled`] turns true, [`Context::cancelled`]
    /// resolves, [`Context::debounce`] returns false, and its
    /// [`publish_diagnostics`](Context::publish_diagnostics) sends nothing, so diagnostics
    /// of an old version never overwrite a newer one's. A hook that waits for a pause in
    /// typing first:
    ///
    /// ```
    /// use std::time::Duration;
    /// use sansrpc_lsp::server::ServerBuilder;
    ///
    /// let server = ServerBuilder::new("lint", "1.0")
    ///     .on_change(|cx, doc| async move {
    ///         if !cx.debounce(Duration::from_millis(100)).await {
    ///             return; // a newer version came within 100 ms
    ///         }
    ///         let diagnostics = Vec::new(); // the analysis of `doc`
    ///         cx.publish_diagnostics(doc.uri().clone(), diagnostics, Some(doc.version())).await;
    ///     })
    ///     .build();
    /// ```
    ///
    /// Runs only while the server keeps documents ([`keep_documents`](Self::keep_documents)).
    /// At the end of the connection an analysis still running is not waited for.
    pub fn on_change<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(Context, TextDocument) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_change = Some(Box::new(move |cx, doc| Box::pin(hook(cx, doc))));
        self
    }

    /// Whether a `didClose` clears the document's diagnostics in the editor (default on):
    /// the server publishes an empty list for it, as LSP asks of a server whose diagnostics
    /// are about open documents only. Off for a server that reports on files whether they
    /// are open or not.
    pub fn clear_diagnostics_on_close(mut self, on: bool) -> Self {
        self.clear_on_close = on;
        self
    }

    /// The position encodings the server supports (default all three); the client's first
    /// choice among them is used, UTF-16 when there is none (as LSP 3.17 says).
    pub fn position_encodings(mut self, supported: &[PositionEncoding]) -> Self {
        self.encodings = supported.to_vec();
        self
    }

    /// Keeps the client's text documents (default on): `didOpen`, `didChange` (full and
    /// incremental) and `didClose` are applied in order, [`Context::document`] reads
    /// them, and `textDocumentSync` says so (`openClose`, incremental changes). Off, the
    /// server keeps none and declares the sync of its own handlers only.
    pub fn keep_documents(mut self, on: bool) -> Self {
        self.documents = on;
        self
    }

    /// Changes the capabilities the registered handlers imply before they are sent:
    /// options a method needs beyond "provided" (completion trigger characters, a semantic
    /// tokens legend, the commands of `workspace/executeCommand`), or anything else.
    /// `positionEncoding` is set after it, as negotiated.
    pub fn capabilities(
        mut self,
        change: impl Fn(&mut ServerCapabilities) + Send + Sync + 'static,
    ) -> Self {
        self.capabilities = Some(Box::new(change));
        self
    }

    /// The server.
    pub fn build(self) -> Server {
        let mut capabilities = capabilities::implied(
            self.requests
                .keys()
                .chain(self.notifications.keys())
                .copied(),
            self.documents,
        );
        if let Some(change) = &self.capabilities {
            change(&mut capabilities);
        }
        Server(Arc::new(Inner {
            info: self.info,
            requests: self.requests,
            notifications: self.notifications,
            encodings: self.encodings,
            documents: self.documents,
            capabilities,
            on_change: self.on_change,
            clear_on_close: self.clear_on_close,
        }))
    }
}

struct Inner {
    info: ServerInfo,
    requests: BTreeMap<&'static str, Box<RequestFn>>,
    notifications: BTreeMap<&'static str, Box<NotificationFn>>,
    encodings: Vec<PositionEncoding>,
    documents: bool,
    capabilities: ServerCapabilities,
    on_change: Option<Box<ChangeFn>>,
    clear_on_close: bool,
}

/// A language server, built by [`ServerBuilder`]: the protocol logic, for any adapter.
/// Cheap to clone (shared).
#[derive(Clone)]
pub struct Server(Arc<Inner>);

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.0.info.name)
            .field("requests", &self.0.requests.keys().collect::<Vec<_>>())
            .field(
                "notifications",
                &self.0.notifications.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The tokens of a request's params, read before its handler runs.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct TokenParams {
    work_done_token: Option<ProgressToken>,
    partial_result_token: Option<ProgressToken>,
}

impl Server {
    /// The capabilities sent at `initialize` (before `positionEncoding`, which depends on
    /// the client).
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.0.capabilities
    }

    /// The request methods the server answers: its own and the registered ones.
    pub fn request_methods(&self) -> impl Iterator<Item = &'static str> + '_ {
        let own = [Initialize::METHOD, Shutdown::METHOD];
        own.into_iter().chain(
            self.0
                .requests
                .keys()
                .copied()
                .filter(move |m| !own.contains(m)),
        )
    }

    /// The notification methods the server handles: the registered ones and, when it
    /// keeps documents, `didOpen`, `didChange` and `didClose`.
    pub fn notification_methods(&self) -> impl Iterator<Item = &'static str> + '_ {
        let documents = [
            DidOpenTextDocument::METHOD,
            DidChangeTextDocument::METHOD,
            DidCloseTextDocument::METHOD,
        ];
        let kept = self.0.documents.then_some(documents).into_iter().flatten();
        kept.chain(
            self.0
                .notifications
                .keys()
                .copied()
                .filter(move |m| !(self.0.documents && documents.contains(m))),
        )
    }

    /// Answers the request `method` for a driver: the result JSON or the error object. Call
    /// it when the request is handed out: its [`Context`] keeps the documents as of then.
    pub fn handle_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        host: Arc<dyn Peer>,
    ) -> BoxFuture<Result<Box<RawValue>, ErrorObject<'static>>> {
        let tokens = params
            .and_then(|p| serde_json::from_str::<TokenParams>(p.get()).ok())
            .unwrap_or_default();
        let cx = Context::new(
            host,
            Tokens {
                work_done: tokens.work_done_token,
                partial_result: tokens.partial_result_token,
            },
        );
        match method {
            m if m == Initialize::METHOD => {
                Box::pin(std::future::ready(self.initialize(&cx, params)))
            }
            m if m == Shutdown::METHOD => match self.0.requests.get(m) {
                Some(handler) => {
                    let answer = handler(cx, params);
                    Box::pin(async move { answer.await.map(|_| null()) })
                }
                None => Box::pin(std::future::ready(Ok(null()))),
            },
            m => match self.0.requests.get(m) {
                Some(handler) => handler(cx, params),
                None => Box::pin(std::future::ready(Err(ErrorObject::method_not_found()))),
            },
        }
    }

    /// Handles the notification `method` for a driver. The documents change here, at once,
    /// in the order the driver calls it (arrival order); the future it returns runs the
    /// application's handler.
    ///
    /// A driver calls this and [`handle_request`](Self::handle_request) as it hands each
    /// message out, in arrival order: a request's [`Context`] keeps the documents as they
    /// were then.
    pub fn handle_notification(
        &self,
        method: &str,
        params: Option<&RawValue>,
        host: Arc<dyn Peer>,
    ) -> BoxFuture<()> {
        let session = host.locals().get::<Session>();
        let applied = if self.0.documents {
            self.apply_document(&session, method, params)
        } else {
            Applied::default()
        };
        let decoded = applied.decoded;
        let warnings = applied.warnings;
        // After the change: the handler's documents include it.
        let cx = Context::new(host, Tokens::default());
        let mut cleared = None;
        match applied.version {
            Some(Version::New(uri)) => {
                let signal = session.supersede(&uri);
                if let (Some(hook), Some(doc)) = (&self.0.on_change, cx.document(&uri)) {
                    let cx = cx.clone().for_version(signal);
                    let analysis = hook(cx.clone(), doc);
                    versions::run_beside(cx.host(), analysis);
                }
            }
            Some(Version::Closed(uri)) => {
                session.closed(&uri);
                cleared = self.0.clear_on_close.then_some(uri);
            }
            None => {}
        }
        // Params the documents could not decode are warned about once, above: the
        // application's handler of the same notification would fail on them too.
        let handler = self
            .0
            .notifications
            .get(method)
            .filter(|_| decoded)
            .map(|h| h(cx.clone(), params));
        Box::pin(async move {
            for warning in warnings {
                cx.log_message(MessageType::WARNING, warning).await;
            }
            if let Some(uri) = cleared {
                cx.publish_diagnostics(uri, Vec::new(), None).await;
            }
            if let Some(handler) = handler {
                handler.await;
            }
        })
    }

    /// Applies a document notification to the session's documents: what is worth a
    /// warning (past the spec's clamps: a malformed edit, a document not open), whether its
    /// params decoded (not: the warning says why, and nothing changed), and which document
    /// has a new version or was closed.
    fn apply_document(
        &self,
        session: &Session,
        method: &str,
        params: Option<&RawValue>,
    ) -> Applied {
        let warn = |warnings: Vec<Warning>| -> Vec<String> {
            warnings
                .into_iter()
                .filter(|w| !w.is_spec_clamp())
                .map(|w| format!("{method}: {w}"))
                .collect()
        };
        let undecoded = |e: ErrorObject<'static>| Applied {
            warnings: vec![format!("{method}: {}", e.message)],
            decoded: false,
            version: None,
        };
        let failed = |e: crate::document::DocumentError| Applied {
            warnings: vec![format!("{method}: {e}")],
            ..Applied::default()
        };
        match method {
            m if m == DidOpenTextDocument::METHOD => {
                match decode::<DidOpenTextDocumentParams>(params) {
                    Ok(p) => Applied {
                        warnings: warn(session.with_documents(|d| d.did_open(&p))),
                        decoded: true,
                        version: Some(Version::New(p.text_document.uri)),
                    },
                    Err(e) => undecoded(e),
                }
            }
            m if m == DidChangeTextDocument::METHOD => {
                match decode::<DidChangeTextDocumentParams>(params) {
                    Ok(p) => match session.with_documents(|d| d.did_change(&p)) {
                        Ok(warnings) => Applied {
                            warnings: warn(warnings),
                            decoded: true,
                            version: Some(Version::New(p.text_document.uri)),
                        },
                        Err(e) => failed(e),
                    },
                    Err(e) => undecoded(e),
                }
            }
            m if m == DidCloseTextDocument::METHOD => {
                match decode::<DidCloseTextDocumentParams>(params) {
                    Ok(p) => match session.with_documents(|d| d.did_close(&p)) {
                        Ok(_) => Applied {
                            version: Some(Version::Closed(p.text_document.uri)),
                            ..Applied::default()
                        },
                        Err(e) => failed(e),
                    },
                    Err(e) => undecoded(e),
                }
            }
            _ => Applied::default(),
        }
    }

    fn initialize(
        &self,
        cx: &Context,
        params: Option<&RawValue>,
    ) -> Result<Box<RawValue>, ErrorObject<'static>> {
        let params: InitializeParams = decode(params)?;
        let encoding =
            PositionEncoding::from_client_capabilities(&params.capabilities, &self.0.encodings);
        cx.session().initialized(Arc::new(params), encoding);
        let mut capabilities = self.0.capabilities.clone();
        capabilities.position_encoding = Some(encoding.kind());
        let result = InitializeResult {
            capabilities,
            server_info: Some(self.0.info.clone()),
        };
        to_raw(&result).map_err(|e| ErrorObject::new(-32603, format!("initialize's result: {e}")))
    }
}

/// What applying a document notification did.
struct Applied {
    /// What to warn the editor about.
    warnings: Vec<String>,
    /// Whether its params decoded.
    decoded: bool,
    /// The document it gave a new version, or closed.
    version: Option<Version>,
}

impl Default for Applied {
    fn default() -> Self {
        Applied {
            warnings: Vec::new(),
            decoded: true,
            version: None,
        }
    }
}

enum Version {
    New(lsp_types::Uri),
    Closed(lsp_types::Uri),
}

/// `value` as JSON text (serde_json writes it, so it is valid).
pub(crate) fn to_raw<T: serde::Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, String> {
    let json = serde_json::to_string(value).map_err(|e| e.to_string())?;
    RawValue::from_string(json).map_err(|e| e.to_string())
}

/// `null`, as a result.
fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

/// Decodes params (absent reads as `null`, as lsp-types' `()` params expect).
pub(crate) fn decode<T: DeserializeOwned>(
    params: Option<&RawValue>,
) -> Result<T, ErrorObject<'static>> {
    let text = params.map_or("null", RawValue::get);
    serde_json::from_str(text).map_err(|e| ErrorObject::new(-32602, format!("Invalid params: {e}")))
}
