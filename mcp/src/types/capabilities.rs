//! Client and server capabilities.
//!
//! 2025-11-25 exchanges them once (`initialize`); 2026-07-28 sends the client's on every
//! request (`_meta["io.modelcontextprotocol/clientCapabilities"]`) and the server's in the
//! `server/discover` result. Neither set is closed: unknown members are kept in `extra`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::JsonObject;

/// Capabilities a client may support.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// Present if the client supports listing roots (deprecated in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Present if the client supports sampling from an LLM (deprecated in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Present if the client supports elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// 2025-11-25 only (experimental): task-augmented requests the client accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ClientTasksCapability>,
    /// 2026-07-28: extensions the client supports, by extension id (e.g.
    /// `"io.modelcontextprotocol/ui"`), each with its settings object (`{}` = no settings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ClientCapabilities {
    experimental: "experimental",
    roots: "roots",
    sampling: "sampling",
    elicitation: "elicitation",
    tasks: "tasks",
    extensions: "extensions",
});

impl ClientCapabilities {
    /// Whether the client declared `roots`.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Whether the client declared `sampling`.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether the client declared `sampling.tools` (tool use in sampling).
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether the client accepts form-mode elicitation: `elicitation` with `form`, or an
    /// empty `elicitation` object (which means form only).
    pub fn supports_elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// Whether the client accepts URL-mode elicitation (`elicitation.url`).
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// Whether the client declared the extension `id` (2026-07-28).
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }
}

/// `ClientCapabilities.roots`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// 2025-11-25: whether the client sends `notifications/roots/list_changed` (the
    /// notification and this flag are gone in 2026-07-28, where `roots` is `{}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(RootsCapability {
    list_changed: "listChanged",
});

/// `ClientCapabilities.sampling`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SamplingCapability {
    /// Present if the client supports `includeContext` values other than `"none"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Present if the client supports `tools` and `toolChoice` in sampling requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(SamplingCapability {
    context: "context",
    tools: "tools",
});

/// `ClientCapabilities.elicitation`. An empty object means form mode only.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ElicitationCapability {
    /// Present if the client supports form-mode elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// Present if the client supports URL-mode elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ElicitationCapability {
    form: "form",
    url: "url",
});

/// `ClientCapabilities.tasks` (2025-11-25, experimental).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClientTasksCapability {
    /// Present if the client supports `tasks/list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the client supports `tasks/cancel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which server → client requests may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequests>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ClientTasksCapability {
    list: "list",
    cancel: "cancel",
    requests: "requests",
});

/// `ClientCapabilities.tasks.requests` (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClientTaskRequests {
    /// `{"createMessage": {}}`: task-augmented `sampling/createMessage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<JsonObject>,
    /// `{"create": {}}`: task-augmented `elicitation/create`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<JsonObject>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ClientTaskRequests {
    sampling: "sampling",
    elicitation: "elicitation",
});

/// Capabilities a server may support.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<BTreeMap<String, JsonObject>>,
    /// Present if the server sends log messages (deprecated in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Present if the server supports `completion/complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Present if the server offers prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Present if the server offers resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Present if the server offers tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// 2025-11-25 only (experimental): task-augmented requests the server accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// 2026-07-28: extensions the server supports, by extension id (e.g.
    /// `"io.modelcontextprotocol/tasks"`), each with its settings object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, JsonObject>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ServerCapabilities {
    experimental: "experimental",
    logging: "logging",
    completions: "completions",
    prompts: "prompts",
    resources: "resources",
    tools: "tools",
    tasks: "tasks",
    extensions: "extensions",
});

impl ServerCapabilities {
    /// Whether the server offers the extension `id` (2026-07-28).
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }
}

/// `ServerCapabilities.prompts`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(PromptsCapability {
    list_changed: "listChanged",
});

/// `ServerCapabilities.resources`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the server supports resource subscriptions (`resources/subscribe` in
    /// 2025-11-25, `resourceSubscriptions` of `subscriptions/listen` in 2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ResourcesCapability {
    subscribe: "subscribe",
    list_changed: "listChanged",
});

/// `ServerCapabilities.tools`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ToolsCapability {
    list_changed: "listChanged",
});

/// `ServerCapabilities.tasks` (2025-11-25, experimental).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerTasksCapability {
    /// Present if the server supports `tasks/list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<JsonObject>,
    /// Present if the server supports `tasks/cancel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<JsonObject>,
    /// Which client → server requests may be task-augmented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ServerTasksCapability {
    list: "list",
    cancel: "cancel",
    requests: "requests",
});

/// `ServerCapabilities.tasks.requests` (2025-11-25).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerTaskRequests {
    /// `{"call": {}}`: task-augmented `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ServerTaskRequests { tools: "tools" });
