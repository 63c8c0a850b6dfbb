//! Prompts: `prompts/list`, `prompts/get`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    CacheScope, ContentBlock, Cursor, Icon, InputResponses, JsonObject, MetaObject, RequestMeta,
    ResultMeta, ResultType, Role,
};

/// A prompt or prompt template the server offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments for templating the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons for a user interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// An argument a prompt accepts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be provided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// Params of `prompts/list`.
pub type ListPromptsRequestParams = super::PaginatedRequestParams;

/// Result of `prompts/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The prompts.
    pub prompts: Vec<Prompt>,
    /// Cursor of the next page, if there may be more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// 2026-07-28 (required there): cache lifetime in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 (required there): who may cache this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ListPromptsResult {
    meta: "_meta",
    result_type: "resultType",
    prompts: "prompts" required,
    next_cursor: "nextCursor",
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

/// Params of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Name of the prompt.
    pub name: String,
    /// Arguments for templating the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// 2026-07-28: answers to the previous input-required result (see
    /// [`CallToolRequestParams::input_responses`](super::CallToolRequestParams::input_responses)).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub input_responses: Option<InputResponses>,
    /// 2026-07-28: the `requestState` of the previous input-required result.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub request_state: Option<String>,
}

/// Result of `prompts/get` (for an input-required answer see
/// [`ResultOrInputRequired`](super::ResultOrInputRequired)).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Description of the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(GetPromptResult {
    meta: "_meta",
    result_type: "resultType",
    description: "description",
    messages: "messages" required,
});

/// A message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::User,
            content: ContentBlock::text(text),
        }
    }
}

/// Params of `notifications/prompts/list_changed`.
pub type PromptListChangedNotificationParams = super::NotificationParams;

impl Prompt {
    /// A prompt named `name`, with no description or arguments yet.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            ..Default::default()
        }
    }

    /// The prompt, described by `text`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The prompt with `argument` after the ones it has.
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

impl PromptArgument {
    /// An optional argument named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            name: name.into(),
            ..Default::default()
        }
    }

    /// A required argument named `name` (`"required": true`).
    pub fn required(name: impl Into<String>) -> Self {
        PromptArgument {
            required: Some(true),
            ..PromptArgument::new(name)
        }
    }

    /// The argument, described by `text`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }
}

impl GetPromptResult {
    /// The prompt's messages, nothing else.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            messages,
            ..Default::default()
        }
    }
}
