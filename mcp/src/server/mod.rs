//! An MCP server: tools, resources, resource templates, prompts, completion and logging,
//! for the 2025-11-25 session revision (and 2025-06-18, 2025-03-26 clients) and the
//! stateless 2026-07-28 one, with the same handler code.
//!
//! [`ServerBuilder`] declares what the server offers; tool input (and output) schemas come
//! from the Rust types of the handlers' parameters through [`schemars`]. The protocol
//! logic ([`Server::handle`]) is a function of the request and a [`Peer`], the adapter's
//! way to the client for that request: it never does I/O itself, so the same server runs
//! on tokio, on smol or async-std, and on plain threads. With the `futures` feature,
//! [`Server::router`] mounts it on a `sansrpc_futures::AsyncRouter` (re-exported by
//! sansrpc-tokio), for stdio, Streamable HTTP, or any other transport.
//!
//! ```
//! use sansrpc_mcp::server::{Context, McpError, ServerBuilder};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add {
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! }
//!
//! let server = ServerBuilder::new("calculator", "1.0.0")
//!     .tool("add", "Adds two numbers", |_cx: Context, Add { a, b }| async move {
//!         let sum = a.checked_add(b).ok_or_else(|| McpError::tool("the sum overflows"))?;
//!         Ok(sum.to_string())
//!     })
//!     .build();
//! # let _ = server;
//! ```

mod app_state;
#[cfg(feature = "blocking")]
mod blocking;
mod catalog;
mod context;
mod fanout;
#[cfg(feature = "futures")]
mod futures;
mod listen;
pub mod state;
mod tool;
mod uri_template;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use crate::streamable::{self, ParamHeader};
use sansrpc::ErrorObject;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

pub use catalog::{AddError, MAX_ADDED_ENTRIES};
pub use context::{BoxFuture, Context, Peer};
pub use fanout::{Change, Fanout, RESYNC_META};
pub use state::{Notifier, Session};
pub use tool::{Json, ToolOutput};
pub use uri_template::UriTemplate;

use catalog::Entries;
use context::{Inner, McpPeer};
use listen::Listeners;
use state::{Carried, Sealer, Sessions, MAX_INPUT_RESPONSES, MAX_SUBSCRIPTIONS};

use crate::types::{
    error_codes, methods, notifications, version, CacheScope, ClientCapabilities,
    CompleteRequestParams, Completion, GetPromptResult, Implementation, InitializeRequestParams,
    JsonObject, LoggingLevel, NotificationMeta, Prompt, PromptsCapability, Reference, RequestMeta,
    Resource, ResourceContents, ResourceTemplate, ResourcesCapability, ServerCapabilities,
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult, Tool, ToolsCapability,
};

/// The longest URI `resources/read` and `resources/subscribe` take (longer is -32602).
pub const MAX_URI: usize = 8 * 1024;

/// The most tools [`Server::add_tool`] adds to a server while it serves.
pub const MAX_ADDED_TOOLS: usize = 1024;

/// Why a handler did not give its result.
#[derive(Debug, Clone)]
pub enum McpError {
    /// A JSON-RPC error answers the request.
    Rpc(ErrorObject<'static>),
    /// A tool failed in a way the model should see: the result says `isError: true` with
    /// this text (outside tools, an internal error).
    Tool(String),
    /// The client did not declare a capability the handler needs (`"sampling"`,
    /// `"elicitation"`, `"roots"`): -32021 with `requiredCapabilities` in its data.
    MissingCapability(&'static str),
    /// Stateless revision: the handler asked the client for input it does not have yet
    /// (see [`Context::elicit`]); the server answers with an `InputRequiredResult`.
    InputRequired,
}

impl McpError {
    /// -32602, invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        McpError::Rpc(ErrorObject::new(
            error_codes::INVALID_PARAMS,
            message.into(),
        ))
    }

    /// -32603, internal error.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        McpError::Rpc(ErrorObject::new(
            error_codes::INTERNAL_ERROR,
            message.to_string(),
        ))
    }

    /// A tool error: a result with `isError: true` and `message`.
    pub fn tool(message: impl Into<String>) -> Self {
        McpError::Tool(message.into())
    }

    /// The answer as the protocol gives it, for a request outside `tools/call`.
    fn into_error(self, stateless: bool) -> ErrorObject<'static> {
        match self {
            McpError::Rpc(e) => e,
            McpError::Tool(message) => ErrorObject::new(error_codes::INTERNAL_ERROR, message),
            McpError::MissingCapability(name) => {
                let data = json!({"requiredCapabilities": {name: {}}});
                error_with_data(
                    error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    format!("the client did not declare the {name} capability"),
                    &data,
                )
            }
            McpError::InputRequired => ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                if stateless {
                    "this request cannot ask the client for input"
                } else {
                    "input required outside the stateless revision"
                },
            ),
        }
    }
}

impl From<ErrorObject<'static>> for McpError {
    fn from(e: ErrorObject<'static>) -> Self {
        McpError::Rpc(e)
    }
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpError::Rpc(e) => write!(f, "{} ({})", e.message, e.code),
            McpError::Tool(m) => f.write_str(m),
            McpError::MissingCapability(c) => write!(f, "the client lacks the {c} capability"),
            McpError::InputRequired => f.write_str("input required"),
        }
    }
}

impl std::error::Error for McpError {}

fn error_with_data(code: i64, message: String, data: &Value) -> ErrorObject<'static> {
    let data = sansrpc::RawValue::from_string(data.to_string()).expect("JSON");
    ErrorObject::new(code, message).with_data(data)
}

type ToolFn =
    Arc<dyn Fn(Context, Arguments) -> BoxFuture<Result<ToolReply, McpError>> + Send + Sync>;

/// What a tool's handler returned: a result, or (a handler returning a `String`) the one
/// text block of one, written as JSON without a result made of it first.
// Moved once, from the handler's future to where it is written: a boxed result would cost
// an allocation per call.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ToolReply {
    Result(crate::types::CallToolResult),
    Text(String),
}

impl ToolReply {
    /// The reply of a handler's `output`: its text when `R` is `String`, else its result.
    pub(crate) fn of<R: ToolOutput + 'static>(output: R) -> Result<Self, McpError> {
        // `R` is known where this is made: the check is decided as it is compiled, and the
        // `None` below never comes (the text is only taken when returned).
        let mut output = Some(output);
        if let Some(text) = (&mut output as &mut dyn std::any::Any).downcast_mut::<Option<String>>()
        {
            return Ok(ToolReply::Text(text.take().unwrap_or_default()));
        }
        match output {
            Some(output) => output.into_result().map(ToolReply::Result),
            None => Err(McpError::internal("a tool's output taken twice")),
        }
    }

    /// As a result.
    fn into_result(self) -> crate::types::CallToolResult {
        match self {
            ToolReply::Result(result) => result,
            ToolReply::Text(text) => crate::types::CallToolResult::text(text),
        }
    }
}
type ReadFn = Arc<
    dyn Fn(
            Context,
            String,
            BTreeMap<String, String>,
        ) -> BoxFuture<Result<Vec<ResourceContents>, McpError>>
        + Send
        + Sync,
>;
type PromptFn = Arc<
    dyn Fn(Context, BTreeMap<String, String>) -> BoxFuture<Result<GetPromptResult, McpError>>
        + Send
        + Sync,
>;
type CompleteFn = Arc<
    dyn Fn(Context, CompleteRequestParams) -> BoxFuture<Result<Completion, McpError>> + Send + Sync,
>;

struct ToolEntry {
    tool: Tool,
    call: ToolFn,
}

struct ResourceEntry {
    resource: Resource,
    read: ReadFn,
}

struct TemplateEntry {
    template: ResourceTemplate,
    parsed: UriTemplate,
    read: ReadFn,
}

struct PromptEntry {
    prompt: Prompt,
    get: PromptFn,
}

/// What a server offers, as [`ServerBuilder`] declared it.
struct Declared {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolEntry>,
    /// The tools [`Server::add_tool`] added while serving (after `tools` in the list).
    added: std::sync::RwLock<Vec<ToolEntry>>,
    /// The resources, templates and prompts: the builder's, then what was added while
    /// serving ([`Server::add_resource`] and the others).
    resources: Entries<ResourceEntry>,
    templates: Entries<TemplateEntry>,
    prompts: Entries<PromptEntry>,
    /// How many resources, templates and prompts the builder declared.
    declared_counts: [usize; 3],
    /// What [`ServerBuilder::with_state`] gave the handlers.
    state: app_state::AppState,
    completion: Option<CompleteFn>,
    page_size: usize,
    cache: (u64, CacheScope),
    /// The `Mcp-Param-*` headers of the tools' `x-mcp-header` marks (SEP-2243).
    param_headers: Vec<ParamHeader>,
    /// The lists whose changes the server announces ([`ServerBuilder::list_changed`]):
    /// tools, resources, prompts.
    list_changes: [bool; 3],
    /// Clients may subscribe to resource updates ([`ServerBuilder::resource_subscriptions`]).
    subscriptions: bool,
}

impl Declared {
    /// True when the server has a tool, declared or added.
    fn has_tools(&self) -> bool {
        !self.tools.is_empty() || !self.added_tools().is_empty()
    }

    /// The tools added while serving, read.
    fn added_tools(&self) -> std::sync::RwLockReadGuard<'_, Vec<ToolEntry>> {
        self.added.read().unwrap_or_else(|e| e.into_inner())
    }

    /// True when the server offers list `kind`: it has such items, or declared that the
    /// list changes while it serves (it may be empty now).
    fn offers(&self, kind: ListKind) -> bool {
        self.list_changes[kind as usize]
            || match kind {
                ListKind::Tools => self.has_tools(),
                ListKind::Resources => !self.resources.is_empty() || !self.templates.is_empty(),
                ListKind::Prompts => !self.prompts.is_empty(),
            }
    }

    /// True when the server announces changes of list `kind` (declared with
    /// [`ServerBuilder::list_changed`]).
    fn announces(&self, kind: ListKind) -> bool {
        self.list_changes[kind as usize]
    }

    /// True when clients may subscribe to resource updates (declared, and it offers
    /// resources).
    fn subscribable(&self) -> bool {
        self.subscriptions && self.offers(ListKind::Resources)
    }
}

/// Declares an MCP server: its name, tools, resources, templates, prompts and completion.
pub struct ServerBuilder {
    declared: Declared,
    sealer: Option<Sealer>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.declared.info)
            .field("tools", &self.declared.tools.len())
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// A server that calls itself `name` at `version`, offering nothing yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerBuilder {
            declared: Declared {
                info: Implementation::new(name, version),
                instructions: None,
                tools: Vec::new(),
                added: Default::default(),
                resources: Entries::default(),
                templates: Entries::default(),
                prompts: Entries::default(),
                declared_counts: [0; 3],
                state: Default::default(),
                completion: None,
                page_size: 100,
                cache: (0, CacheScope::Public),
                param_headers: Vec::new(),
                list_changes: [false; 3],
                subscriptions: false,
            },
            sealer: None,
        }
    }

    /// Instructions for the model, sent at `initialize` and `server/discover`.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.declared.instructions = Some(text.into());
        self
    }

    /// Announces changes of list `kind`: the server declares `listChanged` for it, and
    /// [`Server::list_changed`] then notifies the sessions and the `subscriptions/listen`
    /// streams that asked. Call it for a list the application changes while serving
    /// (what a handler lists depends on state); without it the capability says the list
    /// is fixed, and `list_changed` of that kind sends nothing.
    pub fn list_changed(mut self, kind: ListKind) -> Self {
        self.declared.list_changes[kind as usize] = true;
        self
    }

    /// Lets clients subscribe to resource updates: the server declares
    /// `resources.subscribe`, answers `resources/subscribe` on sessions and honours
    /// `resourceSubscriptions` in a `subscriptions/listen` filter, and
    /// [`Server::resource_updated`] notifies the subscribers. Without it `resources/subscribe`
    /// is -32601 (method not found) and `resource_updated` reaches no one.
    pub fn resource_subscriptions(mut self) -> Self {
        self.declared.subscriptions = true;
        self
    }

    /// How many items a list answer holds before it gives a `nextCursor` (default 100).
    pub fn page_size(mut self, n: usize) -> Self {
        self.declared.page_size = n.max(1);
        self
    }

    /// The key that seals `requestState` (2026-07-28 multi round-trip requests). By
    /// default a random key per process; servers behind a load balancer share one.
    pub fn state_key(mut self, key: [u8; 32]) -> Self {
        self.sealer = Some(Sealer::new(key));
        self
    }

    /// How long 2026-07-28 clients may cache list and read results (`ttlMs`, default 0)
    /// and for whom (`cacheScope`, default public).
    pub fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.declared.cache = (ttl_ms, scope);
        self
    }

    /// A tool whose arguments are `A`: its input schema is `A`'s JSON Schema (draft
    /// 2020-12, from [`schemars`]); arguments that do not decode into `A` are a tool error
    /// the model sees, and the handler is not called. `A = ()` takes no arguments. The
    /// handler's output is anything [`ToolOutput`]: text, content blocks, a whole
    /// `CallToolResult`, or [`Json`] for structured content with an output schema.
    ///
    /// A property marked `x-mcp-header` (SEP-2243) is mirrored in an `Mcp-Param-*` header
    /// on 2026-07-28 calls over HTTP, checked with [`Server::streamable_config`].
    ///
    /// # Panics
    /// When the schema's `x-mcp-header` marks break SEP-2243's rules (a programming error:
    /// every client would refuse the tool; [`Tool::param_headers`] says why).
    pub fn tool<A, R, F, Fut>(mut self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: ToolOutput + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, McpError>> + Send + 'static,
    {
        let (declared, call) = typed_tool(name, description, handler);
        self.add_tool(declared, call);
        self
    }

    /// A tool declared in full (its schemas written by hand), whose handler gets the raw
    /// `arguments` object (`{}` when the client sent none).
    ///
    /// # Panics
    /// As [`tool`](Self::tool), when the input schema's `x-mcp-header` marks break
    /// SEP-2243's rules.
    pub fn tool_with<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Context, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<crate::types::CallToolResult, McpError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let call: ToolFn = Arc::new(move |cx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let arguments = match arguments.into_value() {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                handler(cx, arguments).await.map(ToolReply::Result)
            })
        });
        self.add_tool(tool, call);
        self
    }

    /// Declares `tool`, and the headers its marks mirror.
    fn add_tool(&mut self, tool: Tool, call: ToolFn) {
        let mirrored = tool
            .param_headers()
            .unwrap_or_else(|e| panic!("tool {:?}: {e}", tool.name));
        self.declared.param_headers.extend(mirrored);
        self.declared.tools.push(ToolEntry { tool, call });
    }

    /// A resource at a fixed URI; `read` gets the URI and returns its contents.
    pub fn resource<F, Fut>(mut self, resource: Resource, read: F) -> Self
    where
        F: Fn(Context, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        let read = catalog::resource_reader(read);
        self.declared
            .resources
            .push(ResourceEntry { resource, read });
        self.declared.declared_counts[0] += 1;
        self
    }

    /// A resource template (RFC 6570 `{var}` and `{+var}` expressions): `read` gets the
    /// URI asked for and the values of the template's variables in it, as the client wrote
    /// them (not percent-decoded; a `{+var}` value may hold `../`: check it before using it
    /// as a path).
    ///
    /// # Panics
    /// When the template's `uriTemplate` does not parse (a programming error).
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(Context, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, McpError>> + Send + 'static,
    {
        let parsed = UriTemplate::parse(&template.uri_template)
            .unwrap_or_else(|e| panic!("resource template {:?}: {e}", template.uri_template));
        let read = catalog::template_reader(read);
        self.declared.templates.push(TemplateEntry {
            template,
            parsed,
            read,
        });
        self.declared.declared_counts[1] += 1;
        self
    }

    /// A prompt; `get` gets its arguments (the required ones checked present).
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, get: F) -> Self
    where
        F: Fn(Context, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, McpError>> + Send + 'static,
    {
        let get = catalog::prompt_getter(get);
        self.declared.prompts.push(PromptEntry { prompt, get });
        self.declared.declared_counts[2] += 1;
        self
    }

    /// Completion of prompt and resource-template arguments (`completion/complete`);
    /// declares the `completions` capability. At most 100 values are sent; more set
    /// `hasMore`.
    pub fn completion<F, Fut>(mut self, complete: F) -> Self
    where
        F: Fn(Context, CompleteRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, McpError>> + Send + 'static,
    {
        let complete = Arc::new(complete);
        self.declared.completion = Some(Arc::new(move |cx, params| Box::pin(complete(cx, params))));
        self
    }

    /// The server, ready to mount on a transport.
    pub fn build(self) -> Server {
        Server {
            shared: Arc::new(Shared {
                declared: self.declared,
                sealer: self.sealer.unwrap_or_else(Sealer::random),
                sessions: Sessions::default(),
                listeners: Listeners::default(),
                fanout: Mutex::new(None),
            }),
        }
    }
}

/// A tool whose arguments are `A` and whose result is `R` ([`ServerBuilder::tool`]): its
/// declaration and its handler on the raw arguments.
fn typed_tool<A, R, F, Fut>(name: &str, description: &str, handler: F) -> (Tool, ToolFn)
where
    A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    R: ToolOutput + 'static,
    F: Fn(Context, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, McpError>> + Send + 'static,
{
    let (schema, unit) = tool::input_schema::<A>();
    let mut declared = Tool::new(name, description, schema);
    declared.output_schema = R::output_schema();
    let handler = Arc::new(handler);
    let call: ToolFn = Arc::new(move |cx, arguments| {
        let handler = Arc::clone(&handler);
        Box::pin(async move {
            let arguments = if unit {
                Arguments::Value(Value::Null)
            } else {
                arguments
            };
            let args: A = match arguments.decode() {
                Ok(args) => args,
                Err(e) => {
                    return Ok(ToolReply::Result(crate::types::CallToolResult::error(
                        format!("invalid arguments: {e}"),
                    )))
                }
            };
            ToolReply::of(handler(cx, args).await?)
        })
    });
    (declared, call)
}

/// Why [`Server::add_tool`] added no tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddToolError {
    /// The server has a tool of that name already.
    Exists,
    /// The server has added [`MAX_ADDED_TOOLS`] tools already.
    TooMany,
    /// The tool's input schema marks a property `x-mcp-header` (SEP-2243): the headers a
    /// transport checks were fixed when it started serving ([`Server::streamable_config`]),
    /// so such a tool is declared with the builder.
    HeaderMarks,
}

impl std::fmt::Display for AddToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AddToolError::Exists => "the server has a tool of that name",
            AddToolError::TooMany => "the server has added as many tools as it may",
            AddToolError::HeaderMarks => {
                "a tool added while serving cannot mark x-mcp-header properties"
            }
        })
    }
}

impl std::error::Error for AddToolError {}

struct Shared {
    declared: Declared,
    sealer: Sealer,
    sessions: Sessions,
    /// Open `subscriptions/listen` requests (2026-07-28).
    listeners: Listeners,
    /// Where announced changes go to reach the other processes ([`Server::set_fanout`]).
    fanout: Mutex<Option<Arc<dyn Fanout>>>,
}

impl std::ops::Deref for Shared {
    type Target = Declared;

    fn deref(&self) -> &Declared {
        &self.declared
    }
}

/// An MCP server: what [`ServerBuilder`] declared, and the sessions it serves. Cheap to
/// clone (one shared server).
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.shared.info)
            .field("tools", &self.shared.tools.len())
            .field("sessions", &self.shared.sessions.len())
            .finish_non_exhaustive()
    }
}

/// Which list changed, for [`Server::list_changed`] and [`ServerBuilder::list_changed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools = 0,
    /// `notifications/resources/list_changed`.
    Resources = 1,
    /// `notifications/prompts/list_changed`.
    Prompts = 2,
}

impl ListKind {
    /// Its list-changed notification's method.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => notifications::TOOLS_LIST_CHANGED,
            ListKind::Resources => notifications::RESOURCES_LIST_CHANGED,
            ListKind::Prompts => notifications::PROMPTS_LIST_CHANGED,
        }
    }

    /// Whether a `subscriptions/listen` filter asked for this kind.
    pub(crate) fn wanted(self, filter: &SubscriptionFilter) -> bool {
        let wanted = match self {
            ListKind::Tools => filter.tools_list_changed,
            ListKind::Resources => filter.resources_list_changed,
            ListKind::Prompts => filter.prompts_list_changed,
        };
        wanted == Some(true)
    }
}

/// The request methods a server answers (an adapter registers each).
pub const REQUESTS: &[&str] = &[
    methods::INITIALIZE,
    methods::SERVER_DISCOVER,
    methods::PING,
    methods::TOOLS_LIST,
    methods::TOOLS_CALL,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
    methods::PROMPTS_LIST,
    methods::PROMPTS_GET,
    methods::COMPLETION_COMPLETE,
    methods::LOGGING_SET_LEVEL,
    methods::SUBSCRIPTIONS_LISTEN,
];

/// A request's params as the server reads them: a JSON value, and a call's `arguments`
/// apart when they came as raw text (decoded once, into the tool's own type, with no
/// `Value` tree in between).
#[derive(Default)]
pub(crate) struct Params {
    value: Option<Value>,
    arguments: Option<Box<sansrpc::RawValue>>,
    /// The `name` member, kept apart (a call's tool or prompt: no entry in the map made
    /// only to be taken out again).
    name: Option<Value>,
}

impl From<Option<Value>> for Params {
    fn from(value: Option<Value>) -> Self {
        Params {
            value,
            arguments: None,
            name: None,
        }
    }
}

/// A request's raw params as the server reads them (an object's `arguments` kept as text);
/// -32602 when they are not JSON (the adapters' routers hand them on unchecked).
///
/// An object is read member by member from its text ([`sansrpc::RawValue::members`]): a
/// call's `name` and `arguments` are taken as they are written, and only the other members
/// (`_meta`, a prompt's or a resource's own) become values. A member named twice: the last
/// one, as in a `Value`.
#[cfg(any(feature = "futures", feature = "blocking"))]
pub(crate) fn read_params(
    params: Option<&sansrpc::RawValue>,
) -> Result<Params, ErrorObject<'static>> {
    let not_json = |_| ErrorObject::new(-32602, "params are not JSON");
    let Some(params) = params else {
        return Ok(Params::default());
    };
    let Some(object) = params.members() else {
        return serde_json::from_str(params.get())
            .map(|v| Params::from(Some(v)))
            .map_err(not_json);
    };
    let (mut members, mut arguments, mut name) = (Map::new(), None, None);
    for (key, value) in object {
        if key == "arguments" {
            arguments = Some(value.to_owned());
        } else if key == "name" {
            name = Some(string_or_value(value).map_err(not_json)?);
        } else {
            let value = serde_json::from_str(value.get()).map_err(not_json)?;
            members.insert(key.decoded().into_owned(), value);
        }
    }
    Ok(Params {
        value: Some(Value::Object(members)),
        arguments,
        name,
    })
}

/// A value, a string without escapes taken from the text as it is.
#[cfg(any(feature = "futures", feature = "blocking"))]
fn string_or_value(value: &sansrpc::RawValue) -> serde_json::Result<Value> {
    let text = value.get();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(plain) if !plain.contains('\\') => Ok(Value::String(plain.to_owned())),
        _ => serde_json::from_str(text),
    }
}

/// A call's `arguments`: raw JSON text, or a value.
pub(crate) enum Arguments {
    Raw(Box<sansrpc::RawValue>),
    Value(Value),
}

impl Arguments {
    fn into_value(self) -> Option<Value> {
        match self {
            // Valid JSON: checked as it was read.
            Arguments::Raw(raw) => serde_json::from_str(raw.get()).ok(),
            Arguments::Value(value) => Some(value),
        }
    }

    fn is_null(&self) -> bool {
        match self {
            Arguments::Raw(raw) => raw.get().trim() == "null",
            Arguments::Value(value) => value.is_null(),
        }
    }

    fn is_object(&self) -> bool {
        match self {
            Arguments::Raw(raw) => raw.get().trim_start().starts_with('{'),
            Arguments::Value(value) => value.is_object(),
        }
    }

    /// Decodes them into `A`.
    fn decode<A: DeserializeOwned>(self) -> Result<A, serde_json::Error> {
        match self {
            Arguments::Raw(raw) => serde_json::from_str(raw.get()),
            Arguments::Value(value) => serde_json::from_value(value),
        }
    }
}

/// A JSON-RPC id as MCP's `RequestId` (a string or an integer; `None` for others).
pub(crate) fn request_id(id: &sansrpc::Id<'_>) -> Option<crate::types::RequestId> {
    let mut json = Vec::new();
    id.write_json(&mut json);
    serde_json::from_slice(&json).ok()
}

/// `method` as the entry of [`REQUESTS`] it names (no copy per request); `""` for any
/// other, which every step after treats as it treated the unknown name (-32601).
fn known_method(method: &str) -> &'static str {
    REQUESTS
        .iter()
        .copied()
        .find(|m| *m == method)
        .unwrap_or("")
}

/// The notifications a server takes: `initialize` already settled what they announce, so
/// they change nothing (an adapter registers them so they are not reported as unknown).
pub const NOTIFICATIONS: &[&str] = &[
    notifications::INITIALIZED,
    notifications::ROOTS_LIST_CHANGED,
];

/// A request as the server reads it before dispatch.
struct Request {
    params: Map<String, Value>,
    /// A call's `name` (a tool's or prompt's), when it came apart from the params.
    name: Option<Value>,
    /// The call's `arguments` (moved out of the params).
    arguments: Option<Arguments>,
    /// Boxed: most requests carry none, and the futures that hold a request stay small.
    meta: Option<Box<RequestMeta>>,
    stateless: bool,
    /// One of `version::SUPPORTED` (no copy per request).
    version: &'static str,
    capabilities: Option<Arc<ClientCapabilities>>,
    client: Option<Arc<Implementation>>,
}

/// A method's result: a `Value` to finish, or JSON text written straight from a typed
/// result (a session's tool call).
enum Reply {
    Value(Value),
    Raw(Box<sansrpc::RawValue>),
}

impl Reply {
    fn into_value(self) -> Value {
        match self {
            Reply::Value(v) => v,
            Reply::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
        }
    }

    #[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
    fn into_raw(self) -> Box<sansrpc::RawValue> {
        match self {
            Reply::Value(v) => crate::raw_json(&v),
            Reply::Raw(raw) => raw,
        }
    }
}

impl Server {
    /// The name and version the server gives at `initialize` and `server/discover`.
    pub fn info(&self) -> &Implementation {
        &self.shared.info
    }

    /// The `Mcp-Param-*` headers of this server's tools: every property their input schemas
    /// mark `x-mcp-header` (SEP-2243), as the Streamable HTTP machine checks them
    /// ([`streamable::Config::param_headers`](crate::streamable::Config::param_headers)).
    pub fn param_headers(&self) -> &[ParamHeader] {
        &self.shared.param_headers
    }

    /// A Streamable HTTP configuration for this server: the defaults, with the
    /// `Mcp-Param-*` headers of its tools ([`param_headers`](Self::param_headers)) checked
    /// on 2026-07-28 calls. Set the other fields on it (hosts, origins, auth, bounds).
    pub fn streamable_config(&self) -> streamable::Config {
        streamable::Config {
            param_headers: self.param_headers().to_vec(),
            ..Default::default()
        }
    }

    /// Adds a tool while the server serves, as [`ServerBuilder::tool`] declares one: it is
    /// listed after the declared tools from the next `tools/list` on, and callable from the
    /// next `tools/call` on, in this process (the other processes of a cluster have their
    /// own tools). Nothing is announced: call [`list_changed`](Self::list_changed) with
    /// [`ListKind::Tools`] after it (the builder's [`ServerBuilder::list_changed`] declares
    /// that the list changes). A tool added this way has no `x-mcp-header` marks (the
    /// checked headers are fixed when serving starts). At most [`MAX_ADDED_TOOLS`].
    pub fn add_tool<A, R, F, Fut>(
        &self,
        name: &str,
        description: &str,
        handler: F,
    ) -> Result<(), AddToolError>
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: ToolOutput + 'static,
        F: Fn(Context, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, McpError>> + Send + 'static,
    {
        let (tool, call) = typed_tool(name, description, handler);
        if !tool.param_headers().is_ok_and(|marks| marks.is_empty()) {
            return Err(AddToolError::HeaderMarks);
        }
        let shared = &self.shared;
        let mut added = shared.added.write().unwrap_or_else(|e| e.into_inner());
        let named = |t: &ToolEntry| t.tool.name == name;
        if shared.tools.iter().any(named) || added.iter().any(named) {
            return Err(AddToolError::Exists);
        }
        if added.len() >= MAX_ADDED_TOOLS {
            return Err(AddToolError::TooMany);
        }
        added.push(ToolEntry { tool, call });
        Ok(())
    }

    /// Answers one request: the result, or the error object. `host` is the adapter's way
    /// to the client for this request. Methods not in [`REQUESTS`] (or not offered, such
    /// as `completion/complete` without a completion handler) are -32601.
    pub fn handle(
        &self,
        method: &str,
        params: Option<Value>,
        host: Arc<dyn Peer>,
    ) -> BoxFuture<Result<Value, ErrorObject<'static>>> {
        let method = known_method(method);
        Box::pin(
            self.clone()
                .respond(method, Params::from(params), host, Reply::into_value),
        )
    }

    /// [`handle`](Server::handle) with the result as JSON text, what the adapters send: a
    /// tool's result on a session is written straight from its Rust value, with no
    /// `Value` tree in between. Not boxed: the adapter's router boxes the handler's future
    /// (one allocation for the whole call, not one per layer), and not wrapped in a future
    /// of its own (which would hold its arguments beside the one it awaits).
    #[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
    pub(crate) fn handle_raw(
        &self,
        method: &str,
        params: Params,
        host: Arc<dyn Peer>,
    ) -> impl std::future::Future<Output = Result<Box<sansrpc::RawValue>, ErrorObject<'static>>>
           + Send
           + 'static {
        self.clone()
            .respond(known_method(method), params, host, Reply::into_raw)
    }

    /// Answers `method`, the answer made what the adapter sends by `into`.
    async fn respond<R>(
        self,
        method: &'static str,
        params: Params,
        host: Arc<dyn Peer>,
        into: fn(Reply) -> R,
    ) -> Result<R, ErrorObject<'static>> {
        let request = match self.read(method, params, &*host) {
            Ok(r) => r,
            Err(e) => return Err(e.into_error(false)),
        };
        let stateless = request.stateless;
        let outcome = match method {
            // The calls (most of the traffic) go straight to their future; every other
            // method's is boxed, so that a call's future carries no room for theirs. This
            // is where the calls are routed: `dispatch` has the other methods.
            methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ => {
                self.asking(method, request, host).await
            }
            _ => Box::pin(self.dispatch(method, request, host)).await,
        };
        outcome.map(into).map_err(|e| e.into_error(stateless))
    }

    /// Sends `notifications/resources/updated` for `uri` to every session subscribed to
    /// it and every `subscriptions/listen` stream that asked for it; returns how many it
    /// reached in this process. With a fan-out ([`set_fanout`](Self::set_fanout)), the
    /// change then goes to the other processes too (when clients may subscribe at all).
    pub fn resource_updated(&self, uri: &str) -> usize {
        let reached = self.deliver_resource_updated(uri);
        if self.shared.subscribable() {
            self.fan_out(Change::ResourceUpdated(uri.to_owned()));
        }
        reached
    }

    /// `notifications/resources/updated` for `uri` to this process's subscribers.
    fn deliver_resource_updated(&self, uri: &str) -> usize {
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let shared = &self.shared;
        let sessions = shared.sessions.broadcast(
            notifications::RESOURCES_UPDATED,
            &Value::Object(params.clone()),
            |s| s.is_subscribed(uri),
        );
        let streams = shared
            .listeners
            .deliver(notifications::RESOURCES_UPDATED, &params, |f| {
                f.resource_subscriptions
                    .as_ref()
                    .is_some_and(|uris| uris.iter().any(|u| u == uri))
            });
        sessions + streams
    }

    /// Sends a list-changed notification to every session and every
    /// `subscriptions/listen` stream that asked for that kind; returns how many it reached
    /// in this process. With a fan-out ([`set_fanout`](Self::set_fanout)), the change then
    /// goes to the other processes too.
    /// Nothing is sent for a kind the builder did not declare
    /// ([`ServerBuilder::list_changed`]): the server told its clients that list is fixed.
    pub fn list_changed(&self, kind: ListKind) -> usize {
        if !self.shared.announces(kind) {
            return 0;
        }
        let reached = self.deliver_list_changed(kind, false);
        self.fan_out(Change::ListChanged(kind));
        reached
    }

    /// A list-changed notification of `kind` to this process's listeners (marked with
    /// [`RESYNC_META`] for a resync).
    fn deliver_list_changed(&self, kind: ListKind, resync: bool) -> usize {
        if !self.shared.announces(kind) {
            return 0;
        }
        let mut params = Map::new();
        if resync {
            params.insert("_meta".into(), json!({ RESYNC_META: true }));
        }
        let shared = &self.shared;
        let sessions =
            shared
                .sessions
                .broadcast(kind.method(), &Value::Object(params.clone()), |_| true);
        let streams = shared
            .listeners
            .deliver(kind.method(), &params, |f| kind.wanted(f));
        sessions + streams
    }

    /// Ends every open `subscriptions/listen` stream gracefully (at shutdown, say): each
    /// listen request is answered with a `complete` result carrying its subscription id,
    /// which closes its stream. Returns how many there were.
    pub fn end_subscriptions(&self) -> usize {
        self.shared.listeners.end_all()
    }

    /// How many `subscriptions/listen` streams are open.
    pub fn open_subscriptions(&self) -> usize {
        self.shared.listeners.len()
    }

    /// `subscriptions/listen`: acknowledges the part of the filter this server can honour,
    /// then stays pending, delivering what was asked for, until the client cancels it or
    /// the server ends it.
    async fn listen(&self, request: Request, host: Arc<dyn Peer>) -> Result<Value, McpError> {
        let params: SubscriptionsListenRequestParams =
            serde_json::from_value(Value::Object(request.params))
                .map_err(|e| McpError::invalid_params(format!("subscriptions/listen: {e}")))?;
        let asked = params.notifications;
        let shared = &self.shared;
        let honour =
            |asked: Option<bool>, kind: ListKind| asked.filter(|&a| a && shared.announces(kind));
        let uris = asked
            .resource_subscriptions
            .filter(|_| shared.subscribable());
        if let Some(uris) = &uris {
            if uris.len() > MAX_SUBSCRIPTIONS {
                return Err(McpError::invalid_params(format!(
                    "a subscription holds at most {MAX_SUBSCRIPTIONS} resource URIs"
                )));
            }
            if uris.iter().any(|u| u.len() > MAX_URI) {
                return Err(McpError::invalid_params(format!(
                    "a URI is at most {MAX_URI} bytes"
                )));
            }
        }
        let filter = SubscriptionFilter {
            tools_list_changed: honour(asked.tools_list_changed, ListKind::Tools),
            prompts_list_changed: honour(asked.prompts_list_changed, ListKind::Prompts),
            resources_list_changed: honour(asked.resources_list_changed, ListKind::Resources),
            resource_subscriptions: uris,
            extra: JsonObject::new(),
        };
        let id = host
            .mcp_request_id()
            .ok_or_else(|| McpError::internal("this transport gives no request id"))?;
        // The acknowledgment first: nothing goes on the stream before it.
        let ack = SubscriptionsAcknowledgedNotificationParams {
            meta: Some(NotificationMeta::subscription(id.clone())),
            notifications: filter.clone(),
        };
        let ack = serde_json::to_value(ack).map_err(McpError::internal)?;
        // The adapters queue a notification when its future is made: the acknowledgment is
        // queued, then the listener registered, so a change from then on goes out after
        // the acknowledgment and none falls between the two.
        let acknowledged = host.notify_value(notifications::SUBSCRIPTIONS_ACKNOWLEDGED, &ack);
        let registered = shared.listeners.register(id.clone(), filter, host.clone());
        if !acknowledged.await {
            return Err(McpError::internal("the connection is gone"));
        }
        let ended = registered.listener.ended();
        if listen::first_of(ended, host.cancelled()).await {
            let result = SubscriptionsListenResult::closed(id);
            return serde_json::to_value(result).map_err(McpError::internal);
        }
        // Cancelled: the client closed the stream; the answer is not sent.
        Err(McpError::internal("subscription cancelled"))
    }

    /// The capabilities this server declares, on a session or on the stateless revision:
    /// what it has, `listChanged` only for the lists it announces changes of
    /// ([`ServerBuilder::list_changed`]), `resources.subscribe` only when clients may
    /// subscribe ([`ServerBuilder::resource_subscriptions`]); `logging` on a session
    /// (`logging/setLevel`), not in the 2026-07-28 discover answer (that revision removed
    /// `logging/setLevel` and deprecated the capability: a request names its log level).
    /// Both revisions deliver changes: sessions on their GET stream, 2026-07-28 on the
    /// `subscriptions/listen` streams.
    pub fn capabilities(&self, stateless: bool) -> ServerCapabilities {
        let shared = &self.shared;
        let announces = |kind| shared.announces(kind).then_some(true);
        ServerCapabilities {
            tools: shared.offers(ListKind::Tools).then(|| ToolsCapability {
                list_changed: announces(ListKind::Tools),
                ..Default::default()
            }),
            resources: shared
                .offers(ListKind::Resources)
                .then(|| ResourcesCapability {
                    subscribe: shared.subscribable().then_some(true),
                    list_changed: announces(ListKind::Resources),
                    ..Default::default()
                }),
            prompts: shared.offers(ListKind::Prompts).then(|| PromptsCapability {
                list_changed: announces(ListKind::Prompts),
                ..Default::default()
            }),
            logging: (!stateless).then(JsonObject::new),
            completions: shared.completion.is_some().then(JsonObject::new),
            ..Default::default()
        }
    }

    fn read(&self, method: &str, params: Params, host: &dyn Peer) -> Result<Request, McpError> {
        let Params {
            value,
            arguments,
            name,
        } = params;
        let mut params = match value {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(McpError::invalid_params("params must be an object")),
        };
        // Kept apart for the methods that take it out; back in the map for the others.
        let name = match name {
            Some(name) if matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET) => {
                Some(name)
            }
            Some(name) => {
                params.insert(String::from("name"), name);
                None
            }
            None => None,
        };
        let arguments = match arguments {
            Some(raw) => Some(Arguments::Raw(raw)),
            None => params.remove("arguments").map(Arguments::Value),
        };
        let meta = match params.get("_meta") {
            None | Some(Value::Null) => None,
            Some(meta) => Some(Box::new(
                serde_json::from_value::<RequestMeta>(meta.clone())
                    .map_err(|e| McpError::invalid_params(format!("_meta: {e}")))?,
            )),
        };
        let stateless = meta.as_ref().is_some_and(|m| m.protocol_version.is_some());
        if stateless {
            let asked = meta
                .as_ref()
                .and_then(|m| m.protocol_version.clone())
                .unwrap_or_default();
            let known = version::STATELESS_VERSIONS
                .iter()
                .find(|v| **v == asked.as_str());
            let Some(&known) = known else {
                let data = json!({"supported": version::STATELESS_VERSIONS, "requested": asked});
                return Err(McpError::Rpc(error_with_data(
                    error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                    format!("unsupported protocol version {asked:?}"),
                    &data,
                )));
            };
            // The methods 2026-07-28 removed.
            if methods::REMOVED_IN_2026_07_28.contains(&method) {
                return Err(McpError::Rpc(ErrorObject::method_not_found()));
            }
            let meta_ref = meta.as_ref();
            return Ok(Request {
                version: known,
                capabilities: meta_ref.and_then(|m| m.client_capabilities.clone().map(Arc::new)),
                client: meta_ref.and_then(|m| m.client_info.clone().map(Arc::new)),
                params,
                name,
                arguments,
                meta,
                stateless,
            });
        }
        // Sessions (2025-11-25) have the GET stream and resources/subscribe instead.
        if method == methods::SUBSCRIPTIONS_LISTEN {
            return Err(McpError::Rpc(ErrorObject::method_not_found()));
        }
        let session = host.session();
        let s = session.lock();
        Ok(Request {
            version: s.version.unwrap_or(version::LATEST),
            capabilities: s.capabilities.clone(),
            client: s.client.clone(),
            params,
            name,
            arguments,
            meta,
            stateless,
        })
    }

    fn context(&self, request: &Request, host: Arc<dyn Peer>, may_ask: bool) -> Context {
        Context {
            inner: Arc::new(Inner {
                host,
                server: self.clone(),
                meta: request.meta.clone(),
                version: request.version,
                stateless: request.stateless,
                capabilities: request.capabilities.clone(),
                client: request.client.clone(),
                responses: BTreeMap::new(),
                state: None,
                may_ask,
                asked: Mutex::new(BTreeMap::new()),
                next_state: Mutex::new(None),
            }),
        }
    }

    /// Answers every method but the calls (`tools/call`, `prompts/get`, `resources/read`),
    /// which [`respond`](Self::respond) hands to [`asking`](Self::asking) itself.
    async fn dispatch(
        &self,
        method: &str,
        request: Request,
        host: Arc<dyn Peer>,
    ) -> Result<Reply, McpError> {
        let shared = &self.shared;
        let stateless = request.stateless;
        let mut value = match method {
            methods::INITIALIZE => return self.initialize(request, &*host).map(Reply::Value),
            methods::SERVER_DISCOVER => {
                let mut result = json!({
                    "supportedVersions": version::STATELESS_VERSIONS,
                    "capabilities": self.capabilities(true),
                    "serverInfo": shared.info,
                    "_meta": {"io.modelcontextprotocol/serverInfo": shared.info},
                });
                if let Some(text) = &shared.instructions {
                    result["instructions"] = json!(text);
                }
                return Ok(Reply::Value(self.finish(result, stateless, true)));
            }
            methods::PING => json!({}),
            methods::TOOLS_LIST => {
                let added = shared.added_tools();
                let tools = shared.tools.iter().chain(added.iter());
                let tools: Vec<&Tool> = tools.map(|t| &t.tool).collect();
                return self.page(&request, "tools", &tools).map(Reply::Value);
            }
            methods::RESOURCES_LIST => {
                let resources = shared.resources.read();
                let list: Vec<&Resource> = resources.iter().map(|r| &r.resource).collect();
                return self.page(&request, "resources", &list).map(Reply::Value);
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                let templates = shared.templates.read();
                let list: Vec<&ResourceTemplate> = templates.iter().map(|t| &t.template).collect();
                return self
                    .page(&request, "resourceTemplates", &list)
                    .map(Reply::Value);
            }
            methods::PROMPTS_LIST => {
                let prompts = shared.prompts.read();
                let list: Vec<&Prompt> = prompts.iter().map(|p| &p.prompt).collect();
                return self.page(&request, "prompts", &list).map(Reply::Value);
            }
            methods::SUBSCRIPTIONS_LISTEN => {
                // Boxed: its future is the largest of any method's, and every call's future
                // would carry its room.
                return Box::pin(self.listen(request, host)).await.map(Reply::Value);
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                if !shared.subscribable() {
                    return Err(McpError::Rpc(ErrorObject::method_not_found()));
                }
                let uri = string_param(&request.params, "uri")?;
                if uri.len() > MAX_URI {
                    return Err(McpError::invalid_params(format!(
                        "a URI is at most {MAX_URI} bytes"
                    )));
                }
                let session = host.session();
                let mut s = session.lock();
                if method == methods::RESOURCES_UNSUBSCRIBE {
                    s.subscriptions.remove(&uri);
                } else if s.subscriptions.contains(&uri) {
                } else if s.subscriptions.len() >= MAX_SUBSCRIPTIONS {
                    return Err(McpError::invalid_params(format!(
                        "a session holds at most {MAX_SUBSCRIPTIONS} subscriptions"
                    )));
                } else {
                    s.subscriptions.insert(uri);
                    if !s.registered {
                        s.registered = true;
                        drop(s);
                        shared.sessions.register(&session, host.session_notifier());
                    }
                }
                json!({})
            }
            methods::LOGGING_SET_LEVEL => {
                let level = request.params.get("level").cloned().unwrap_or(Value::Null);
                let level: LoggingLevel = serde_json::from_value(level)
                    .map_err(|_| McpError::invalid_params("level must be a logging level"))?;
                host.session().lock().level = Some(level);
                json!({})
            }
            methods::COMPLETION_COMPLETE => {
                let Some(complete) = &shared.completion else {
                    return Err(McpError::Rpc(ErrorObject::method_not_found()));
                };
                let params: CompleteRequestParams =
                    serde_json::from_value(Value::Object(request.params.clone()))
                        .map_err(|e| McpError::invalid_params(e.to_string()))?;
                let known = match &params.reference {
                    Reference::Prompt(p) => shared
                        .prompts
                        .read()
                        .iter()
                        .any(|e| e.prompt.name == p.name),
                    Reference::Resource(r) => shared
                        .templates
                        .read()
                        .iter()
                        .any(|t| t.template.uri_template == r.uri),
                };
                if !known {
                    return Err(McpError::invalid_params(
                        "completion/complete: no such prompt or resource template",
                    ));
                }
                let cx = self.context(&request, host, false);
                let mut completion = complete(cx, params).await?;
                if completion.values.len() > 100 {
                    let total = completion.values.len() as u64;
                    completion.values.truncate(100);
                    completion.has_more = Some(true);
                    completion.total = Some(completion.total.unwrap_or(total));
                }
                json!({ "completion": completion })
            }
            _ => return Err(McpError::Rpc(ErrorObject::method_not_found())),
        };
        value = self.finish(value, stateless, false);
        Ok(Reply::Value(value))
    }

    fn initialize(&self, request: Request, host: &dyn Peer) -> Result<Value, McpError> {
        let params: InitializeRequestParams = serde_json::from_value(Value::Object(request.params))
            .map_err(|e| McpError::invalid_params(format!("initialize: {e}")))?;
        let asked = params.protocol_version.as_str();
        let chosen = version::SUPPORTED
            .iter()
            .copied()
            .find(|v| *v == asked && !version::STATELESS_VERSIONS.contains(v))
            .unwrap_or(version::LATEST);
        let session = host.session();
        {
            let mut s = session.lock();
            s.version = Some(chosen);
            s.capabilities = Some(Arc::new(params.capabilities));
            s.client = Some(Arc::new(params.client_info));
            if !s.registered {
                s.registered = true;
                drop(s);
                self.shared
                    .sessions
                    .register(&session, host.session_notifier());
            }
        }
        let mut result = json!({
            "protocolVersion": chosen,
            "capabilities": self.capabilities(false),
            "serverInfo": self.shared.info,
        });
        if let Some(text) = &self.shared.instructions {
            result["instructions"] = json!(text);
        }
        Ok(result)
    }

    /// A result as the revision wants it: 2026-07-28 results say `resultType`, and the
    /// lists and reads say how long they may be cached.
    fn finish(&self, mut value: Value, stateless: bool, cacheable: bool) -> Value {
        if stateless {
            value["resultType"] = json!("complete");
            if cacheable {
                value["ttlMs"] = json!(self.shared.cache.0);
                value["cacheScope"] = json!(self.shared.cache.1);
            }
        }
        value
    }

    fn page<T: serde::Serialize>(
        &self,
        request: &Request,
        name: &str,
        all: &[T],
    ) -> Result<Value, McpError> {
        let start = match request.params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => c
                .strip_prefix('p')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= all.len())
                .ok_or_else(|| McpError::invalid_params("invalid cursor"))?,
            Some(_) => return Err(McpError::invalid_params("cursor must be a string")),
        };
        let end = start.saturating_add(self.shared.page_size).min(all.len());
        let mut value = json!({ name: &all[start..end] });
        if end < all.len() {
            value["nextCursor"] = json!(format!("p{end}"));
        }
        Ok(self.finish(value, request.stateless, true))
    }

    /// `tools/call`, `prompts/get` and `resources/read`: the methods that may ask the
    /// client for input on the stateless revision.
    async fn asking(
        &self,
        method: &str,
        mut request: Request,
        host: Arc<dyn Peer>,
    ) -> Result<Reply, McpError> {
        // Moved out of the params (no copy): nothing after reads them there.
        let name = match method {
            methods::RESOURCES_READ => take_string_param(&mut request.params, "uri")?,
            _ => match request.name.take() {
                Some(Value::String(name)) => name,
                Some(_) => return Err(McpError::invalid_params("name must be a string")),
                None => take_string_param(&mut request.params, "name")?,
            },
        };
        // The state is bound to the request: its method, its tool, prompt or URI, and its
        // arguments (a state issued for one call is refused on a call with other ones).
        // Only the stateless revision carries state: a session's call skips the digest.
        let request_key = if request.stateless {
            // Read as a value once (for the digest, then for the call): the key order and
            // spacing the client chose do not count.
            if let Some(Arguments::Raw(_)) = &request.arguments {
                let value = request.arguments.take().and_then(Arguments::into_value);
                request.arguments = value.map(Arguments::Value);
            }
            let arguments = match &request.arguments {
                Some(Arguments::Value(value)) => value.to_string(),
                _ => String::new(),
            };
            format!("{method}:{name}:{}", state::digest(arguments.as_bytes()))
        } else {
            String::new()
        };
        let mut cx = self.context(&request, Arc::clone(&host), request.stateless);
        if request.stateless {
            let inner = Arc::get_mut(&mut cx.inner).expect("not shared yet");
            self.carry(&request, &request_key, inner)?;
        }
        // Moved out too: the request key above was the last to read them in place.
        let arguments = request.arguments.take();
        let outcome = match method {
            methods::TOOLS_CALL => {
                self.call_tool(&name, arguments, request.stateless, cx.clone())
                    .await
            }
            methods::PROMPTS_GET => self
                .get_prompt(&name, arguments.and_then(Arguments::into_value), cx.clone())
                .await
                .map(Reply::Value),
            _ => self
                .read_resource(&name, cx.clone())
                .await
                .map(Reply::Value),
        };
        match outcome {
            Ok(Reply::Value(value)) => Ok(Reply::Value(self.finish(
                value,
                request.stateless,
                method == methods::RESOURCES_READ,
            ))),
            // Written already (a session's tool result: `finish` changes nothing there).
            Ok(raw) => Ok(raw),
            Err(McpError::InputRequired) if request.stateless => {
                let asked =
                    std::mem::take(&mut *cx.inner.asked.lock().unwrap_or_else(|e| e.into_inner()));
                if asked.is_empty() {
                    return Err(McpError::internal("input required, but nothing was asked"));
                }
                let state = cx
                    .inner
                    .next_state
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .or_else(|| cx.inner.state.clone());
                let carried = Carried {
                    request: request_key,
                    responses: cx.inner.responses.clone(),
                    state,
                };
                let sealed = self
                    .shared
                    .sealer
                    .seal(&carried)
                    .ok_or_else(|| McpError::internal("requestState would exceed 64 KiB"))?;
                Ok(Reply::Value(json!({
                    "resultType": "input_required",
                    "inputRequests": asked,
                    "requestState": sealed,
                })))
            }
            Err(McpError::Tool(message)) if method == methods::TOOLS_CALL => {
                let result = crate::types::CallToolResult::error(message);
                Ok(Reply::Value(self.finish(
                    serde_json::to_value(result).map_err(McpError::internal)?,
                    request.stateless,
                    false,
                )))
            }
            Err(e) => Err(e),
        }
    }

    /// Reads `inputResponses` and `requestState` into the context: the answers of this
    /// round over those of the rounds before.
    fn carry(
        &self,
        request: &Request,
        request_key: &str,
        inner: &mut Inner,
    ) -> Result<(), McpError> {
        match request.params.get("requestState") {
            None | Some(Value::Null) => {}
            Some(Value::String(sealed)) => {
                let carried = self
                    .shared
                    .sealer
                    .open(sealed, request_key)
                    .map_err(|e| McpError::invalid_params(e.message()))?;
                inner.responses = carried.responses;
                inner.state = carried.state;
            }
            Some(_) => return Err(McpError::invalid_params("requestState must be a string")),
        }
        match request.params.get("inputResponses") {
            None | Some(Value::Null) => {}
            Some(Value::Object(answers)) => {
                if answers.len() > MAX_INPUT_RESPONSES {
                    return Err(McpError::invalid_params(format!(
                        "at most {MAX_INPUT_RESPONSES} inputResponses"
                    )));
                }
                for (key, answer) in answers {
                    if !answer.is_object() {
                        return Err(McpError::invalid_params(format!(
                            "inputResponses[{key:?}] must be an object"
                        )));
                    }
                    // An answer carried in the sealed state stands: a later round cannot
                    // replace it.
                    inner
                        .responses
                        .entry(key.clone())
                        .or_insert_with(|| answer.clone());
                }
            }
            Some(_) => return Err(McpError::invalid_params("inputResponses must be an object")),
        }
        Ok(())
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Arguments>,
        stateless: bool,
        cx: Context,
    ) -> Result<Reply, McpError> {
        let named = |t: &&ToolEntry| t.tool.name == name;
        let added: ToolFn;
        let call = match self.shared.tools.iter().find(named) {
            Some(entry) => &entry.call,
            // Not declared: added while serving (its handler taken out of the lock), or
            // unknown.
            None => match self.shared.added_tools().iter().find(named) {
                Some(entry) => {
                    added = Arc::clone(&entry.call);
                    &added
                }
                None => return Err(McpError::invalid_params(format!("Unknown tool: {name}"))),
            },
        };
        let arguments = match arguments {
            None => Arguments::Value(Value::Object(Map::new())),
            Some(a) if a.is_null() => Arguments::Value(Value::Object(Map::new())),
            Some(a) if a.is_object() => a,
            Some(_) => return Err(McpError::invalid_params("arguments must be an object")),
        };
        let reply = call(cx, arguments).await?;
        if stateless {
            // `finish` adds the revision's fields to it.
            serde_json::to_value(reply.into_result())
                .map(Reply::Value)
                .map_err(McpError::internal)
        } else {
            Ok(Reply::Raw(crate::raw_tool_result(&reply)))
        }
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Value>,
        cx: Context,
    ) -> Result<Value, McpError> {
        let found = {
            let prompts = self.shared.prompts.read();
            prompts
                .iter()
                .find(|p| p.prompt.name == name)
                .map(|p| (p.prompt.arguments.clone(), Arc::clone(&p.get)))
        };
        let Some((wanted, get)) = found else {
            return Err(McpError::invalid_params(format!("Unknown prompt: {name}")));
        };
        let args: BTreeMap<String, String> = match arguments {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(v) => serde_json::from_value(v).map_err(|_| {
                McpError::invalid_params("prompt arguments must be an object of strings")
            })?,
        };
        for wanted in wanted.iter().flatten() {
            if wanted.required == Some(true) && !args.contains_key(&wanted.name) {
                return Err(McpError::invalid_params(format!(
                    "missing required argument {:?}",
                    wanted.name
                )));
            }
        }
        let result = get(cx, args).await?;
        serde_json::to_value(result).map_err(McpError::internal)
    }

    async fn read_resource(&self, uri: &str, cx: Context) -> Result<Value, McpError> {
        if uri.len() > MAX_URI {
            return Err(McpError::invalid_params(format!(
                "a URI is at most {MAX_URI} bytes"
            )));
        }
        let shared = &self.shared;
        let fixed = shared
            .resources
            .read()
            .iter()
            .find(|r| r.resource.uri == uri)
            .map(|entry| (Arc::clone(&entry.read), BTreeMap::new()));
        let found = fixed.or_else(|| {
            shared.templates.read().iter().find_map(|t| {
                t.parsed
                    .matches(uri)
                    .map(|vars| (Arc::clone(&t.read), vars))
            })
        });
        let Some((read, vars)) = found else {
            let data = json!({ "uri": uri });
            // 2025-11-25 says -32002 for an unknown resource; 2026-07-28 (SEP-2164) -32602.
            let code = if cx.is_stateless() {
                error_codes::INVALID_PARAMS
            } else {
                error_codes::RESOURCE_NOT_FOUND
            };
            return Err(McpError::Rpc(error_with_data(
                code,
                "Resource not found".into(),
                &data,
            )));
        };
        let contents = read(cx, uri.to_owned(), vars).await?;
        Ok(json!({ "contents": contents }))
    }
}

/// [`string_param`], moved out of `params`.
fn take_string_param(params: &mut Map<String, Value>, name: &str) -> Result<String, McpError> {
    match params.remove(name) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(McpError::invalid_params(format!("{name} must be a string"))),
    }
}

fn string_param(params: &Map<String, Value>, name: &str) -> Result<String, McpError> {
    match params.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(McpError::invalid_params(format!("{name} must be a string"))),
    }
}
