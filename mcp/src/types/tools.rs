//! Tools: `tools/list`, `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CacheScope, ContentBlock, Cursor, Icon, InputResponses, JsonObject, MetaObject, RequestMeta,
    ResultMeta, ResultType, TaskMetadata,
};

/// Definition of a tool the client can call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name (SHOULD be 1–128 characters of `[A-Za-z0-9_.-]`).
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; `"type": "object"` is required at the root. Kept
    /// verbatim: 2026-07-28 allows any JSON Schema 2020-12 keyword (and the `x-mcp-header`
    /// property annotation); 2025-11-25 documents `properties` and `required`.
    pub input_schema: JsonObject,
    /// 2025-11-25 only (experimental tasks): execution properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// JSON Schema of `structuredContent`. 2025-11-25 restricts it to `"type": "object"`;
    /// 2026-07-28 allows any schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for a user interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

impl Tool {
    /// A tool with a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
    ) -> Self {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            input_schema,
            ..Default::default()
        }
    }

    /// The arguments this tool mirrors in `Mcp-Param-*` headers (SEP-2243, 2026-07-28), from
    /// the `x-mcp-header` marks of its input schema (none: an empty list), or why the tool
    /// must be rejected: [`ParamHeader::of_tool`](crate::streamable::ParamHeader::of_tool)
    /// says the rules.
    pub fn param_headers(&self) -> Result<Vec<crate::streamable::ParamHeader>, String> {
        crate::streamable::ParamHeader::of_tool(&self.name, &self.input_schema)
    }

    /// The input schema of a tool without parameters: `{"type": "object", "properties": {}}`.
    pub fn empty_input_schema() -> JsonObject {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::from("object"));
        schema.insert("properties".into(), Value::Object(JsonObject::new()));
        schema
    }
}

/// Hints about a tool's behaviour. All of them are hints only: never trust them from an
/// untrusted server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true; meaningful when not
    /// read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeated calls with the same arguments have no additional effect (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Execution properties of a tool (2025-11-25, experimental tasks).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented execution (absent = forbidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// `ToolExecution.taskSupport` (2025-11-25).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// `"forbidden"`: no task-augmented execution (the default).
    Forbidden,
    /// `"optional"`: task-augmented execution is possible.
    Optional,
    /// `"required"`: the tool must be called task-augmented.
    Required,
}

/// Params of `tools/list`.
pub type ListToolsRequestParams = super::PaginatedRequestParams;

/// Result of `tools/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The tools (2026-07-28: SHOULD be in a deterministic order).
    pub tools: Vec<Tool>,
    /// Cursor of the next page, if there may be more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// 2026-07-28 (required there): how long in milliseconds the client may cache this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 (required there): who may cache this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ListToolsResult {
    meta: "_meta",
    result_type: "resultType",
    tools: "tools" required,
    next_cursor: "nextCursor",
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

/// Params of `tools/call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Name of the tool.
    pub name: String,
    /// Arguments of the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// 2025-11-25 only (experimental): run the call as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// 2026-07-28: the client's answers to the previous input-required result, by key. A
    /// `null` here is rejected (a protocol error), not read as absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub input_responses: Option<InputResponses>,
    /// 2026-07-28: the `requestState` of the previous input-required result, echoed exactly.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub request_state: Option<String>,
}

impl CallToolRequestParams {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Option<JsonObject>) -> Self {
        CallToolRequestParams {
            name: name.into(),
            arguments,
            ..Default::default()
        }
    }
}

/// Result of `tools/call` (for an input-required answer see
/// [`ResultOrInputRequired`](super::ResultOrInputRequired)).
///
/// Errors of the tool itself are results with `isError: true`; unknown tools and other
/// protocol failures are JSON-RPC errors.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result, conforming to the tool's `outputSchema` if it has one. 2025-11-25:
    /// an object; 2026-07-28: any JSON value, `null` included (a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub structured_content: Option<Value>,
    /// Whether the call ended in an error (absent = false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(CallToolResult {
    meta: "_meta",
    result_type: "resultType",
    content: "content" required,
    structured_content: "structuredContent" present,
    is_error: "isError",
});

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// A tool execution error (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Default::default()
        }
    }
}

/// Params of `notifications/tools/list_changed`.
pub type ToolListChangedNotificationParams = super::NotificationParams;
