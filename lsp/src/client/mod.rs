//! A typed language client: it starts a language server as a child process, initializes
//! it, keeps the documents it opens in the same [`Documents`] store a server keeps (so the
//! client's text and the server's agree by construction, in the negotiated position
//! encoding), sends lsp-types' own requests and notifications, collects the diagnostics the
//! server publishes per document and version, and shuts the server down, giving its exit
//! status. On tokio (`sansrpc_tokio::spawn_child`), with the `client` feature.
//!
//! ```no_run
//! use std::time::Duration;
//! use sansrpc_lsp::client::{capabilities, Command, LanguageClient};
//! use sansrpc_lsp::lsp_types::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = LanguageClient::builder(capabilities::neovim())
//!     .start(&mut Command::new("pylsp"))
//!     .await?;
//! let uri: Uri = "file:///tmp/a.py".parse()?;
//! client.open(uri.clone(), "python", "import os\n").await?;
//! // "é = 1" at the end of the text, as an incremental change in the negotiated encoding.
//! let end = client.document(&uri).unwrap().end_position();
//! let version = client.edit(&uri, Range::new(end, end), "é = 1\n").await?;
//! let diagnostics = client.diagnostics(&uri, version).await?;
//! let hover = client.hover(&uri, Position::new(0, 8)).await?;
//! let status = client.shutdown(Duration::from_secs(5)).await?;
//! assert!(status.success());
//! # let _ = (diagnostics, hover);
//! # Ok(())
//! # }
//! ```
//!
//! A server of this crate's can be driven the same way in the test's own process, with no
//! binary: [`ClientBuilder::start_in_process`].
//!
//! What the client answers the server by itself: `workspace/configuration` (one `null` per
//! item, or what [`ClientBuilder::configuration`] gives), `window/workDoneProgress/create`,
//! `client/registerCapability` and `client/unregisterCapability` (`null`),
//! `window/showMessageRequest` (`null`: no action chosen) and `workspace/applyEdit`
//! (`applied: false`). It keeps `window/logMessage` and `window/showMessage`
//! ([`LanguageClient::messages`]) and ignores `$/progress`.

pub mod capabilities;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Exit, Initialized,
    LogMessage, Notification, PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    ApplyWorkspaceEdit, Completion, DocumentDiagnosticRequest, DocumentSymbolRequest, Formatting,
    GotoDefinition, HoverRequest, Initialize, RegisterCapability, Request, ShowDocument,
    ShowMessageRequest, Shutdown, UnregisterCapability, WorkDoneProgressCreate,
    WorkspaceConfiguration, WorkspaceFoldersRequest,
};
use lsp_types::{
    ApplyWorkspaceEditResponse, ClientCapabilities, ClientInfo, CompletionContext,
    CompletionParams, CompletionResponse, CompletionTriggerKind, ConfigurationItem,
    ConfigurationParams, Diagnostic, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DocumentDiagnosticParams, DocumentDiagnosticReportResult,
    DocumentFormattingParams, DocumentSymbolParams, DocumentSymbolResponse, FormattingOptions,
    GotoDefinitionParams, GotoDefinitionResponse, Hover, HoverParams, InitializeParams,
    InitializeResult, InitializedParams, LogMessageParams, MessageType, PartialResultParams,
    Position, PublishDiagnosticsParams, Range, ServerCapabilities, ShowDocumentResult,
    ShowMessageParams, TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem,
    TextDocumentPositionParams, TextDocumentSyncCapability, TextDocumentSyncKind, TextEdit, Uri,
    VersionedTextDocumentIdentifier, WorkDoneProgressParams, WorkspaceFolder,
};
use sansrpc::method::CallError;
use sansrpc::{Config, ErrorObject, RawValue};
use sansrpc_tokio::{AsyncRouter, Builder, ChildProcess, RequestContext};
use serde_json::Value;
/// tokio's `Command`, which [`ClientBuilder::start`] takes (no need to turn on tokio's
/// `process` feature yourself).
pub use tokio::process::Command;
use tokio::sync::watch;

use crate::document::{DocumentError, Documents, PositionEncoding, TextDocument};

/// How many of the server's `window/logMessage` and `window/showMessage` are kept.
const MESSAGES_KEPT: usize = 1000;

/// How often a wait for diagnostics looks whether the connection is still open (nothing
/// else wakes it when the server dies).
const CLOSED_POLL: Duration = Duration::from_millis(50);

/// What went wrong talking to the server.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The server could not be started, or waiting for its exit failed.
    Io(io::Error),
    /// A request failed: the server answered an error ([`CallError::Rpc`]), the connection
    /// closed, or the request timed out.
    Call(CallError),
    /// The server's answer to `method` does not decode into its lsp-types result type.
    Decode {
        /// The request.
        method: &'static str,
        /// Why.
        error: serde_json::Error,
    },
    /// A document operation the store refused (changing or closing a document that is not
    /// open); nothing was sent.
    Document(DocumentError),
    /// The connection to the server is closed.
    Closed,
    /// The server's command could not be started (a missing binary, say).
    Start {
        /// The command, as it would be typed.
        command: String,
        /// Why.
        error: io::Error,
    },
    /// The server ended (its output closed) while the client waited for `during`.
    Exited {
        /// The command, as it would be typed (or the in-process server's name).
        command: String,
        /// What the client was waiting for (`initialize`, a request's method).
        during: String,
        /// The process's exit status, when it had one within a second.
        status: Option<ExitStatus>,
        /// The last lines it wrote to stderr (at most [`STDERR_KEPT`] bytes).
        stderr: String,
    },
    /// The server did not answer `initialize` within
    /// [`ClientBuilder::initialize_timeout`]; it was shut down.
    InitializeTimeout {
        /// The command, as it would be typed.
        command: String,
        /// The timeout.
        timeout: Duration,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
}

/// How much of a server's stderr the client keeps for its errors: the last 4 KiB.
pub const STDERR_KEPT: usize = 4096;

/// `stderr`'s tail, introduced, or nothing when it is empty.
fn stderr_tail(stderr: &str) -> String {
    match stderr.trim_end() {
        "" => String::from("; it wrote nothing to stderr"),
        tail => format!("; the end of its stderr:\n{tail}"),
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Io(e) => write!(f, "the language server process: {e}"),
            ClientError::Call(e) => write!(f, "{e}"),
            ClientError::Decode { method, error } => {
                write!(f, "the server's answer to {method}: {error}")
            }
            ClientError::Document(e) => write!(f, "{e}"),
            ClientError::Closed => f.write_str("the connection to the language server is closed"),
            ClientError::Start { command, error } => {
                write!(
                    f,
                    "the language server `{command}` could not be started: {error}"
                )
            }
            ClientError::Exited {
                command,
                during,
                status,
                stderr,
            } => {
                let status = match status {
                    Some(status) => status.to_string(),
                    None => "no exit status yet".to_owned(),
                };
                write!(
                    f,
                    "the language server `{command}` ended during {during} ({status}){}",
                    stderr_tail(stderr)
                )
            }
            ClientError::InitializeTimeout {
                command,
                timeout,
                stderr,
            } => write!(
                f,
                "the language server `{command}` did not answer initialize within {timeout:?} \
                 (ClientBuilder::initialize_timeout){}",
                stderr_tail(stderr)
            ),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Io(e) => Some(e),
            ClientError::Call(e) => Some(e),
            ClientError::Decode { error, .. } => Some(error),
            ClientError::Document(e) => Some(e),
            ClientError::Start { error, .. } => Some(error),
            ClientError::Closed
            | ClientError::Exited { .. }
            | ClientError::InitializeTimeout { .. } => None,
        }
    }
}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        ClientError::Io(e)
    }
}

impl From<DocumentError> for ClientError {
    fn from(e: DocumentError) -> Self {
        ClientError::Document(e)
    }
}

/// The diagnostics a server published for a document, as [`LanguageClient`] keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The document version the server said they are for (`None` when it did not say).
    pub version: Option<i32>,
    /// The client's version of the document when they arrived (`None` when it was not
    /// open): what a publication without a version is taken to be for.
    pub received_at: Option<i32>,
    /// The diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

impl Published {
    /// True when they are for `version`: the server said so, or, when it gave no version,
    /// they arrived while the client's document was at `version`.
    pub fn is_for(&self, version: i32) -> bool {
        self.version.or(self.received_at) == Some(version)
    }
}

/// A message the server showed or logged (`window/showMessage`, `window/logMessage`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerMessage {
    /// True for `window/showMessage`, false for `window/logMessage`.
    pub shown: bool,
    /// Its type (error, warning, info, log).
    pub typ: MessageType,
    /// Its text.
    pub message: String,
}

type ConfigurationFn = dyn Fn(&ConfigurationItem) -> Value + Send + Sync;

/// Declares how a [`LanguageClient`] starts: its capabilities, workspace, and the
/// connection's config.
pub struct ClientBuilder {
    capabilities: ClientCapabilities,
    info: ClientInfo,
    root: Option<Uri>,
    initialization_options: Option<Value>,
    configuration: Arc<ConfigurationFn>,
    config: Config,
    initialize_timeout: Duration,
    forward_stderr: bool,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A client that tells the server `capabilities` (see [`capabilities`] for VS Code's
    /// and Neovim's), called `sansrpc-lsp`.
    pub fn new(capabilities: ClientCapabilities) -> Self {
        ClientBuilder {
            capabilities,
            info: ClientInfo {
                name: "sansrpc-lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            },
            root: None,
            initialization_options: None,
            configuration: Arc::new(|_| Value::Null),
            config: Config::default(),
            initialize_timeout: INITIALIZE_TIMEOUT,
            forward_stderr: true,
        }
    }

    /// How long the server may take to answer `initialize` (default 30 s): past it,
    /// [`start`](Self::start) shuts it down and fails with
    /// [`ClientError::InitializeTimeout`].
    pub fn initialize_timeout(mut self, timeout: Duration) -> Self {
        self.initialize_timeout = timeout;
        self
    }

    /// Whether the server's stderr is copied to this process's stderr as it comes (default
    /// on); either way its last [`STDERR_KEPT`] bytes are kept for the errors.
    pub fn forward_stderr(mut self, on: bool) -> Self {
        self.forward_stderr = on;
        self
    }

    /// The name (and version) the client gives in `initialize`'s `clientInfo`.
    pub fn client_info(mut self, name: impl Into<String>, version: Option<String>) -> Self {
        self.info = ClientInfo {
            name: name.into(),
            version,
        };
        self
    }

    /// The workspace: `rootUri` and the one workspace folder (default none).
    pub fn root(mut self, root: Uri) -> Self {
        self.root = Some(root);
        self
    }

    /// The workspace folders: the root's, when there is one (`initialize` names them, and
    /// `workspace/workspaceFolders` is answered with them).
    fn folders(&self) -> Option<Vec<WorkspaceFolder>> {
        let uri = self.root.clone()?;
        let name = "root".into();
        Some(vec![WorkspaceFolder { name, uri }])
    }

    /// `initialize`'s `initializationOptions` (default none).
    pub fn initialization_options(mut self, options: Value) -> Self {
        self.initialization_options = Some(options);
        self
    }

    /// What the client answers for each item of the server's `workspace/configuration`
    /// (default `null`: nothing configured).
    pub fn configuration(
        mut self,
        answer: impl Fn(&ConfigurationItem) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.configuration = Arc::new(answer);
        self
    }

    /// The connection's config (default [`Config::default`]: Content-Length framing, the
    /// limits and deadlines of every connection; LSP's `$/cancelRequest` and
    /// `$/progress`). Not `Profile::Lsp`: that is the server's side of the lifecycle.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Starts `command` (with piped stdin, stdout and stderr: its stderr is copied to this
    /// process's as it comes, see [`forward_stderr`](Self::forward_stderr), and its end
    /// kept for errors) and initializes it: `initialize` with the capabilities, then
    /// `initialized`. Fails, naming the command, when the process does not start
    /// ([`ClientError::Start`]), ends before it is initialized ([`ClientError::Exited`],
    /// with its exit status and the end of its stderr), or does not answer `initialize` in
    /// time ([`ClientError::InitializeTimeout`]); the process is shut down then. The
    /// process is killed if the client is dropped without
    /// [`shutdown`](LanguageClient::shutdown) (`kill_on_drop`).
    pub async fn start(self, command: &mut Command) -> Result<LanguageClient, ClientError> {
        let name = describe(command);
        let shared = Arc::new(Shared::default());
        let router = client_router(&shared, &self.configuration, self.folders());
        let builder = Builder::new().config(self.config.clone()).router(router);
        command
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child =
            sansrpc_tokio::spawn_child(builder, command).map_err(|error| ClientError::Start {
                command: name.clone(),
                error,
            })?;
        let stderr = Arc::new(Tail::default());
        if let Some(pipe) = child.take_stderr() {
            tokio::spawn(Arc::clone(&stderr).keep(pipe, self.forward_stderr));
        }
        let conn = child.client.clone();
        self.initialize(conn, Peer::Child(child), name, shared, stderr)
            .await
    }

    /// Serves `server` in this process, on the current tokio runtime, and connects to it
    /// over an in-memory stream (Content-Length frames, as on stdio, under the server's LSP
    /// profile), initialized: the way to unit-test a server with the client's typed calls,
    /// its document sync and its diagnostics, with no process. [`LanguageClient::shutdown`]
    /// gives the status the server's `serve` returned.
    pub async fn start_in_process(
        self,
        server: &crate::server::Server,
    ) -> Result<LanguageClient, ClientError> {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(theirs);
        let server = server.clone();
        let served =
            tokio::spawn(async move { server.serve(sansrpc_tokio::stream(read, write)).await });
        let shared = Arc::new(Shared::default());
        let router = client_router(&shared, &self.configuration, self.folders());
        let builder = Builder::new().config(self.config.clone()).router(router);
        let (read, write) = tokio::io::split(ours);
        let spawned = sansrpc_tokio::spawn(builder, sansrpc_tokio::stream(read, write));
        let conn = spawned.client.clone();
        let peer = Peer::InProcess { served, spawned };
        let name = "in-process server".to_owned();
        let stderr = Arc::new(Tail::default());
        self.initialize(conn, peer, name, shared, stderr).await
    }

    /// `initialize` and `initialized` on `conn`; on failure, `peer` is ended.
    async fn initialize(
        self,
        conn: sansrpc_tokio::Client,
        peer: Peer,
        command: String,
        shared: Arc<Shared>,
        stderr: Arc<Tail>,
    ) -> Result<LanguageClient, ClientError> {
        #[allow(deprecated)] // root_uri: servers still read it (pylsp does).
        let params = InitializeParams {
            process_id: Some(std::process::id()),
            root_uri: self.root.clone(),
            workspace_folders: self.folders(),
            initialization_options: self.initialization_options,
            capabilities: self.capabilities,
            client_info: Some(self.info),
            ..InitializeParams::default()
        };
        let answered =
            tokio::time::timeout(self.initialize_timeout, call::<Initialize>(&conn, &params)).await;
        let failed = match answered {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ClientError::Call(e))) if e.is_closed() => Err(None),
            Ok(Err(e)) => Err(Some(e)),
            Err(_) => Err(Some(ClientError::InitializeTimeout {
                command: command.clone(),
                timeout: self.initialize_timeout,
                stderr: String::new(),
            })),
        };
        let result = match failed {
            Ok(result) => result,
            Err(error) => {
                let status = peer.end(Duration::from_secs(1)).await;
                let stderr = stderr.text().await;
                return Err(match error {
                    Some(ClientError::InitializeTimeout {
                        command, timeout, ..
                    }) => ClientError::InitializeTimeout {
                        command,
                        timeout,
                        stderr,
                    },
                    Some(e) => e,
                    None => ClientError::Exited {
                        command,
                        during: Initialize::METHOD.to_owned(),
                        status,
                        stderr,
                    },
                });
            }
        };
        // The server's choice, or UTF-16 when it makes none (LSP 3.17).
        let encoding = result
            .capabilities
            .position_encoding
            .as_ref()
            .and_then(PositionEncoding::from_kind)
            .unwrap_or(PositionEncoding::Utf16);
        shared.lock().documents.set_encoding(encoding);
        if let Err(e) = notify::<Initialized>(&conn, &InitializedParams {}).await {
            let _ = peer.end(Duration::from_secs(1)).await;
            return Err(e);
        }
        Ok(LanguageClient {
            sync: SyncKind::of(&result.capabilities),
            conn,
            peer: tokio::sync::Mutex::new(Some(peer)),
            command,
            stderr,
            shared,
            params,
            result,
            encoding,
        })
    }
}

/// How long a server may take to answer `initialize`, unless told otherwise.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// `command` as it would be typed: the program and its arguments.
fn describe(command: &Command) -> String {
    let command = command.as_std();
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The server the client talks to: a child process, or a server in this process.
enum Peer {
    Child(ChildProcess),
    InProcess {
        served: tokio::task::JoinHandle<i32>,
        spawned: sansrpc_tokio::Spawned,
    },
}

impl Peer {
    /// Ends it (closes its input; waits `grace`, then kills or aborts it); its status.
    async fn end(self, grace: Duration) -> Option<ExitStatus> {
        match self {
            Peer::Child(child) => child.shutdown(grace).await.ok(),
            Peer::InProcess { served, spawned } => {
                spawned.shutdown.shutdown(grace);
                let code = match tokio::time::timeout(grace, served).await {
                    Ok(Ok(code)) => code,
                    _ => 1,
                };
                Some(exit_status(code))
            }
        }
    }

    /// Its status if it has ended, waiting up to a second for it.
    async fn status(&mut self) -> Option<ExitStatus> {
        for _ in 0..20 {
            match self {
                Peer::Child(child) => {
                    if let Ok(Some(status)) = child.try_status() {
                        return Some(status);
                    }
                }
                Peer::InProcess { served, .. } if served.is_finished() => {
                    return (&mut *served).await.ok().map(exit_status);
                }
                Peer::InProcess { .. } => {}
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

/// An exit status with `code`, for a server that ran in this process.
fn exit_status(code: i32) -> ExitStatus {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw((code & 0xff) << 8)
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::ExitStatusExt;
        ExitStatus::from_raw(code as u32)
    }
}

/// The end of a server's stderr, kept as it comes.
#[derive(Default)]
struct Tail {
    kept: Mutex<VecDeque<u8>>,
    /// Set once the pipe has ended.
    done: tokio::sync::Notify,
    ended: std::sync::atomic::AtomicBool,
}

impl Tail {
    /// Reads `pipe` to its end, keeping its last [`STDERR_KEPT`] bytes (and copying it to
    /// this process's stderr when `forward`).
    async fn keep(self: Arc<Self>, mut pipe: tokio::process::ChildStderr, forward: bool) {
        use std::io::Write;
        use tokio::io::AsyncReadExt;
        let mut chunk = [0; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
            if forward {
                let _ = std::io::stderr().write_all(&chunk[..n]);
            }
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            kept.extend(&chunk[..n]);
            let over = kept.len().saturating_sub(STDERR_KEPT);
            kept.drain(..over);
        }
        self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
        self.done.notify_waiters();
    }

    /// What is kept, once the pipe ended (or after a second: a grandchild may hold it).
    async fn text(&self) -> String {
        let ended = self.done.notified();
        if !self.ended.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tokio::time::timeout(Duration::from_secs(1), ended).await;
        }
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: Vec<u8> = kept.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// What the server asked to be sent of the documents: `textDocumentSync`.
#[derive(Debug, Clone, Copy)]
struct SyncKind {
    open_close: bool,
    change: TextDocumentSyncKind,
}

impl SyncKind {
    fn of(capabilities: &ServerCapabilities) -> SyncKind {
        match &capabilities.text_document_sync {
            // The kind alone: open and close are sent (LSP 3.17, `TextDocumentSyncKind`).
            Some(TextDocumentSyncCapability::Kind(kind)) => SyncKind {
                open_close: true,
                change: *kind,
            },
            Some(TextDocumentSyncCapability::Options(options)) => SyncKind {
                open_close: options.open_close.unwrap_or(false),
                change: options.change.unwrap_or(TextDocumentSyncKind::NONE),
            },
            None => SyncKind {
                open_close: false,
                change: TextDocumentSyncKind::NONE,
            },
        }
    }
}

/// What the client's handlers and its methods share.
struct Shared {
    state: Mutex<State>,
    /// Bumped on every publication, for the waits.
    published: watch::Sender<u64>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            state: Mutex::default(),
            published: watch::channel(0).0,
        }
    }
}

#[derive(Default)]
struct State {
    documents: Documents,
    diagnostics: BTreeMap<Uri, Published>,
    messages: VecDeque<ServerMessage>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, params: PublishDiagnosticsParams) {
        let mut state = self.lock();
        let received_at = state.documents.get(&params.uri).map(TextDocument::version);
        let published = Published {
            version: params.version,
            received_at,
            diagnostics: params.diagnostics,
        };
        state.diagnostics.insert(params.uri, published);
        drop(state);
        self.published.send_modify(|n| *n += 1);
    }

    fn message(&self, message: ServerMessage) {
        let mut state = self.lock();
        if state.messages.len() == MESSAGES_KEPT {
            state.messages.pop_front();
        }
        state.messages.push_back(message);
    }
}

/// The client's side of the connection: what it answers the server, and the notifications
/// it keeps.
fn client_router(
    shared: &Arc<Shared>,
    configuration: &Arc<ConfigurationFn>,
    folders: Option<Vec<WorkspaceFolder>>,
) -> AsyncRouter {
    let mut router = AsyncRouter::new();
    // What both capability sets say the client answers: its folders (those `initialize`
    // named), and `window/showDocument`, which it cannot do (`success: false`, as it
    // applies no workspace edit). They were answered -32601.
    answer_with::<WorkspaceFoldersRequest>(&mut router, move |()| folders.clone());
    answer_with::<ShowDocument>(&mut router, |_| ShowDocumentResult { success: false });
    let answer = configuration.clone();
    answer_with::<WorkspaceConfiguration>(&mut router, move |p: ConfigurationParams| {
        p.items.iter().map(|item| answer(item)).collect()
    });
    answer_with::<WorkDoneProgressCreate>(&mut router, |_| ());
    answer_with::<RegisterCapability>(&mut router, |_| ());
    answer_with::<UnregisterCapability>(&mut router, |_| ());
    answer_with::<ShowMessageRequest>(&mut router, |_| None);
    answer_with::<ApplyWorkspaceEdit>(&mut router, |_| ApplyWorkspaceEditResponse {
        applied: false,
        failure_reason: Some("sansrpc-lsp's client applies no workspace edits".into()),
        failed_change: None,
    });
    let keep = shared.clone();
    keep_with::<PublishDiagnostics>(&mut router, move |p| keep.publish(p));
    let keep = shared.clone();
    keep_with::<LogMessage>(&mut router, move |p: LogMessageParams| {
        keep.message(ServerMessage {
            shown: false,
            typ: p.typ,
            message: p.message,
        });
    });
    let keep = shared.clone();
    keep_with::<ShowMessage>(&mut router, move |p: ShowMessageParams| {
        keep.message(ServerMessage {
            shown: true,
            typ: p.typ,
            message: p.message,
        });
    });
    keep_with::<lsp_types::notification::Progress>(&mut router, |_| {});
    router
}

/// Answers the server's request `R` with `f` (params that do not decode: `-32602`).
fn answer_with<R: Request>(
    router: &mut AsyncRouter,
    f: impl Fn(R::Params) -> R::Result + Send + Sync + 'static,
) {
    let f = Arc::new(f);
    let registered = router.raw_method_with_context(R::METHOD, move |_: RequestContext, params| {
        let answer = crate::server::decode::<R::Params>(params).and_then(|p| {
            crate::server::to_raw(&f(p))
                .map_err(|e| ErrorObject::new(-32603, format!("{}: {e}", R::METHOD)))
        });
        std::future::ready(answer)
    });
    registered.unwrap_or_else(|e| unreachable!("{}: {e}", R::METHOD));
}

/// Handles the server's notification `N` with `f` (params that do not decode: dropped).
fn keep_with<N: Notification>(
    router: &mut AsyncRouter,
    f: impl Fn(N::Params) + Send + Sync + 'static,
) {
    let registered = router.raw_notification_with_context(N::METHOD, move |_, params| {
        if let Ok(p) = crate::server::decode::<N::Params>(params.as_deref()) {
            f(p);
        }
        std::future::ready(())
    });
    registered.unwrap_or_else(|e| unreachable!("{}: {e}", N::METHOD));
}

/// Calls `R` on `conn` and decodes its result.
async fn call<R: Request>(
    conn: &sansrpc_tokio::Client,
    params: &R::Params,
) -> Result<R::Result, ClientError> {
    let params = raw(params)?;
    let result = conn
        .call_raw(R::METHOD, params.as_deref())
        .await
        .map_err(ClientError::Call)?;
    serde_json::from_str(result.get()).map_err(|error| ClientError::Decode {
        method: R::METHOD,
        error,
    })
}

/// Sends `N` on `conn`.
async fn notify<N: Notification>(
    conn: &sansrpc_tokio::Client,
    params: &N::Params,
) -> Result<(), ClientError> {
    let params = raw(params)?;
    conn.notify_raw(N::METHOD, params.as_deref())
        .await
        .map_err(ClientError::Call)
}

/// `params` as JSON; none for lsp-types' `()` params (`shutdown`, `exit`): JSON-RPC's
/// params are an array or an object, never `null`.
fn raw<T: serde::Serialize>(params: &T) -> Result<Option<Box<RawValue>>, ClientError> {
    let raw = crate::server::to_raw(params)
        .map_err(|e| ClientError::Call(CallError::Rpc(ErrorObject::new(-32602, e))))?;
    Ok((raw.get() != "null").then_some(raw))
}

/// A language server started as a child process, initialized, and its documents.
///
/// Documents: [`open`](Self::open), [`edit`](Self::edit) / [`change`](Self::change) and
/// [`close`](Self::close) apply each change to the client's own [`Documents`] store
/// (exactly as a sansrpc-lsp server applies it) and send the server what its
/// `textDocumentSync` asks for (the changes themselves when it syncs incrementally, the
/// whole new text when it syncs fully, nothing when it syncs nothing), in the order the
/// store took them. [`document`](Self::document) is the client's copy, with every position
/// conversion in the negotiated encoding.
pub struct LanguageClient {
    conn: sansrpc_tokio::Client,
    peer: tokio::sync::Mutex<Option<Peer>>,
    /// The server's command, for errors.
    command: String,
    stderr: Arc<Tail>,
    shared: Arc<Shared>,
    sync: SyncKind,
    params: InitializeParams,
    result: InitializeResult,
    encoding: PositionEncoding,
}

impl fmt::Debug for LanguageClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LanguageClient")
            .field("server", &self.result.server_info)
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl LanguageClient {
    /// A [`ClientBuilder`] with `capabilities`.
    pub fn builder(capabilities: ClientCapabilities) -> ClientBuilder {
        ClientBuilder::new(capabilities)
    }

    /// The server's answer to `initialize`: its capabilities and `serverInfo`.
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.result
    }

    /// The `initialize` params the client sent.
    pub fn initialize_params(&self) -> &InitializeParams {
        &self.params
    }

    /// The position encoding every position counts in: the server's `positionEncoding`,
    /// UTF-16 when it gave none.
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// The connection, for what this type does not wrap (raw calls, batches).
    pub fn connection(&self) -> &sansrpc_tokio::Client {
        &self.conn
    }

    /// Sends the request `R` and decodes its result. When the server has ended, the error
    /// says so, with its exit status and the end of its stderr ([`ClientError::Exited`]).
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result, ClientError> {
        match call::<R>(&self.conn, &params).await {
            Err(ClientError::Call(e)) if e.is_closed() => Err(self.ended(R::METHOD).await),
            answer => answer,
        }
    }

    /// The error for a server found ended while waiting for `during`: [`ClientError::Closed`]
    /// after [`shutdown`](Self::shutdown), else [`ClientError::Exited`].
    async fn ended(&self, during: &str) -> ClientError {
        let status = match self.peer.lock().await.as_mut() {
            Some(peer) => peer.status().await,
            None => return ClientError::Closed,
        };
        ClientError::Exited {
            command: self.command.clone(),
            during: during.to_owned(),
            status,
            stderr: self.stderr.text().await,
        }
    }

    /// `textDocument/hover` at `position` of `uri`.
    pub async fn hover(&self, uri: &Uri, position: Position) -> Result<Option<Hover>, ClientError> {
        self.request::<HoverRequest>(HoverParams {
            text_document_position_params: at(uri, position),
            work_done_progress_params: WorkDoneProgressParams::default(),
        })
        .await
    }

    /// `textDocument/definition` at `position` of `uri`.
    pub async fn definition(
        &self,
        uri: &Uri,
        position: Position,
    ) -> Result<Option<GotoDefinitionResponse>, ClientError> {
        self.request::<GotoDefinition>(GotoDefinitionParams {
            text_document_position_params: at(uri, position),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await
    }

    /// `textDocument/completion` at `position` of `uri` (invoked, no trigger character).
    pub async fn completion(
        &self,
        uri: &Uri,
        position: Position,
    ) -> Result<Option<CompletionResponse>, ClientError> {
        self.request::<Completion>(CompletionParams {
            text_document_position: at(uri, position),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
            context: Some(CompletionContext {
                trigger_kind: CompletionTriggerKind::INVOKED,
                trigger_character: None,
            }),
        })
        .await
    }

    /// `textDocument/documentSymbol` of `uri`.
    pub async fn document_symbols(
        &self,
        uri: &Uri,
    ) -> Result<Option<DocumentSymbolResponse>, ClientError> {
        self.request::<DocumentSymbolRequest>(DocumentSymbolParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await
    }

    /// `textDocument/formatting` of `uri` with `options`: the edits, in the negotiated
    /// encoding (apply them with [`change`](Self::change) to keep the copies in step).
    pub async fn formatting(
        &self,
        uri: &Uri,
        options: FormattingOptions,
    ) -> Result<Option<Vec<TextEdit>>, ClientError> {
        self.request::<Formatting>(DocumentFormattingParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
            options,
            work_done_progress_params: WorkDoneProgressParams::default(),
        })
        .await
    }

    /// Pull diagnostics (`textDocument/diagnostic`, LSP 3.17) of `uri`: the server's report
    /// now, for servers that answer it rather than publish.
    pub async fn pull_diagnostics(
        &self,
        uri: &Uri,
    ) -> Result<DocumentDiagnosticReportResult, ClientError> {
        self.request::<DocumentDiagnosticRequest>(DocumentDiagnosticParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
            identifier: None,
            previous_result_id: None,
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        })
        .await
    }

    /// Sends the notification `N` (for the documents, use [`open`](Self::open),
    /// [`change`](Self::change) and [`close`](Self::close): they keep the client's copy).
    pub async fn notify<N: Notification>(&self, params: N::Params) -> Result<(), ClientError> {
        notify::<N>(&self.conn, &params).await
    }

    /// The client's copy of the open document `uri` (a snapshot: no copy of its text).
    pub fn document(&self, uri: &Uri) -> Option<TextDocument> {
        self.shared.lock().documents.snapshot(uri)
    }

    /// Opens `uri` at version 1 with `text` (`textDocument/didOpen`). Opening it again
    /// replaces it, as a server's store does.
    pub async fn open(
        &self,
        uri: Uri,
        language_id: &str,
        text: impl Into<String>,
    ) -> Result<TextDocument, ClientError> {
        let params = DidOpenTextDocumentParams {
            text_document: TextDocumentItem::new(uri.clone(), language_id.into(), 1, text.into()),
        };
        let (sent, doc) = {
            let mut state = self.shared.lock();
            state.documents.did_open(&params);
            let doc = state.documents.snapshot(&uri);
            let sent = self
                .sync
                .open_close
                .then(|| self.send::<DidOpenTextDocument>(&params));
            (sent, doc)
        };
        if let Some(sent) = sent {
            sent?.await.map_err(ClientError::Call)?;
        }
        // Just opened: the store has it.
        doc.ok_or(ClientError::Document(DocumentError::NotOpen { uri }))
    }

    /// Replaces `range` of `uri` (in the negotiated encoding) with `text`: one incremental
    /// change. The document's new version.
    pub async fn edit(&self, uri: &Uri, range: Range, text: &str) -> Result<i32, ClientError> {
        let change = TextDocumentContentChangeEvent {
            range: Some(range),
            range_length: None,
            text: text.into(),
        };
        self.change(uri, vec![change]).await
    }

    /// Applies `changes` to `uri` in order, each to the text the one before left (a change
    /// without a range replaces the whole text), as one `textDocument/didChange` at the
    /// next version, which it returns. What goes to the server follows its
    /// `textDocumentSync`: these changes (incremental), the resulting text (full), or
    /// nothing.
    pub async fn change(
        &self,
        uri: &Uri,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Result<i32, ClientError> {
        let (sent, version) = {
            let mut state = self.shared.lock();
            let version = state
                .documents
                .get(uri)
                .map(|d| d.version().saturating_add(1))
                .ok_or_else(|| DocumentError::NotOpen { uri: uri.clone() })?;
            let mut params = DidChangeTextDocumentParams {
                text_document: VersionedTextDocumentIdentifier::new(uri.clone(), version),
                content_changes: changes,
            };
            state.documents.did_change(&params)?;
            let sent = match self.sync.change {
                TextDocumentSyncKind::INCREMENTAL => Some(params),
                TextDocumentSyncKind::FULL => {
                    let text = state
                        .documents
                        .get(uri)
                        .map(TextDocument::to_string)
                        .unwrap_or_default();
                    params.content_changes = vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text,
                    }];
                    Some(params)
                }
                _ => None,
            };
            // Queued in the order the store took the changes.
            let sent = sent.map(|p| self.send::<DidChangeTextDocument>(&p));
            (sent, version)
        };
        if let Some(sent) = sent {
            sent?.await.map_err(ClientError::Call)?;
        }
        Ok(version)
    }

    /// Closes `uri` (`textDocument/didClose`); its diagnostics are forgotten.
    pub async fn close(&self, uri: &Uri) -> Result<(), ClientError> {
        let params = DidCloseTextDocumentParams {
            text_document: TextDocumentIdentifier::new(uri.clone()),
        };
        let sent = {
            let mut state = self.shared.lock();
            state.documents.did_close(&params)?;
            state.diagnostics.remove(uri);
            self.sync
                .open_close
                .then(|| self.send::<DidCloseTextDocument>(&params))
        };
        if let Some(sent) = sent {
            sent?.await.map_err(ClientError::Call)?;
        }
        Ok(())
    }

    /// Queues `N` now (the connection keeps the order of the calls); the future waits
    /// for it to go out.
    fn send<N: Notification>(
        &self,
        params: &N::Params,
    ) -> Result<impl std::future::Future<Output = Result<(), CallError>>, ClientError> {
        let params = raw(params)?;
        Ok(self.conn.notify_raw(N::METHOD, params.as_deref()))
    }

    /// The latest diagnostics the server published for `uri`, if any.
    pub fn published(&self, uri: &Uri) -> Option<Published> {
        self.shared.lock().diagnostics.get(uri).cloned()
    }

    /// Waits for diagnostics of `uri` for `version` (see [`Published::is_for`]) and gives
    /// them; at once when the latest publication already is. Wrap it in a timeout: a
    /// server may never publish for a version it skipped. [`ClientError::Closed`] when the
    /// connection closes first.
    pub async fn diagnostics(
        &self,
        uri: &Uri,
        version: i32,
    ) -> Result<Vec<Diagnostic>, ClientError> {
        self.diagnostics_where(uri, version, |_| true).await
    }

    /// Waits, as [`diagnostics`](Self::diagnostics) does, for a publication for `version`
    /// whose diagnostics satisfy `wanted`: for servers that publish in stages (syntax
    /// first, types later).
    pub async fn diagnostics_where(
        &self,
        uri: &Uri,
        version: i32,
        wanted: impl Fn(&[Diagnostic]) -> bool,
    ) -> Result<Vec<Diagnostic>, ClientError> {
        let mut published = self.shared.published.subscribe();
        loop {
            if let Some(p) = self.published(uri) {
                if p.is_for(version) && wanted(&p.diagnostics) {
                    return Ok(p.diagnostics);
                }
            }
            if self.conn.is_closed() {
                return Err(self.ended(PublishDiagnostics::METHOD).await);
            }
            tokio::select! {
                changed = published.changed() => {
                    if changed.is_err() {
                        return Err(self.ended(PublishDiagnostics::METHOD).await);
                    }
                }
                () = tokio::time::sleep(CLOSED_POLL) => {}
            }
        }
    }

    /// The server's `window/logMessage` and `window/showMessage` so far (the last 1000).
    pub fn messages(&self) -> Vec<ServerMessage> {
        self.shared.lock().messages.iter().cloned().collect()
    }

    /// Shuts the server down as LSP says: `shutdown`, then `exit`, then waits up to `grace`
    /// for the process to end (it is killed after that) and gives its exit status (0
    /// from a server that honours the lifecycle; for an in-process server, the status its
    /// `serve` returned). When `shutdown` fails, `exit` is still sent and the process still
    /// ended; the error is given.
    pub async fn shutdown(&self, grace: Duration) -> Result<ExitStatus, ClientError> {
        let peer = self.peer.lock().await.take().ok_or(ClientError::Closed)?;
        let answered = call::<Shutdown>(&self.conn, &()).await;
        let _ = notify::<Exit>(&self.conn, &()).await;
        let status = peer.end(grace).await;
        match (answered, status) {
            (Ok(()), Some(status)) => Ok(status),
            (Ok(()), None) => Err(ClientError::Io(io::Error::other(format!(
                "the language server `{}`: no exit status",
                self.command
            )))),
            (Err(ClientError::Call(e)), status) if e.is_closed() => Err(ClientError::Exited {
                command: self.command.clone(),
                during: Shutdown::METHOD.to_owned(),
                status,
                stderr: self.stderr.text().await,
            }),
            (Err(e), _) => Err(e),
        }
    }
}

/// The text document position `position` of `uri`.
fn at(uri: &Uri, position: Position) -> TextDocumentPositionParams {
    TextDocumentPositionParams::new(TextDocumentIdentifier::new(uri.clone()), position)
}

#[cfg(test)]
mod tests {
    use lsp_types::{SaveOptions, TextDocumentSyncOptions, TextDocumentSyncSaveOptions};

    use super::*;

    #[test]
    fn a_publication_is_for_the_version_it_names_else_the_one_it_arrived_at() {
        let named = |version, received_at| Published {
            version,
            received_at,
            diagnostics: Vec::new(),
        };
        assert!(named(Some(3), Some(4)).is_for(3));
        assert!(!named(Some(3), Some(4)).is_for(4));
        assert!(named(None, Some(4)).is_for(4));
        assert!(!named(None, None).is_for(1));
    }

    #[test]
    fn what_is_sent_follows_text_document_sync() {
        let with = |sync| {
            SyncKind::of(&ServerCapabilities {
                text_document_sync: sync,
                ..ServerCapabilities::default()
            })
        };
        let kind = with(Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::FULL,
        )));
        assert!(kind.open_close);
        assert_eq!(kind.change, TextDocumentSyncKind::FULL);
        let options = with(Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: None,
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(
                    SaveOptions::default(),
                )),
                ..TextDocumentSyncOptions::default()
            },
        )));
        // Options without `openClose`: no open or close notifications (LSP 3.17).
        assert!(!options.open_close);
        assert_eq!(options.change, TextDocumentSyncKind::INCREMENTAL);
        let none = with(None);
        assert!(!none.open_close);
        assert_eq!(none.change, TextDocumentSyncKind::NONE);
    }
}
