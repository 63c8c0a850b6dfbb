//! Sampling: `sampling/createMessage` (a server → client request in 2025-11-25, an input
//! request in 2026-07-28; deprecated there).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    AudioContent, ContentBlock, ImageContent, JsonObject, MetaObject, RequestMeta, ResultMeta,
    Role, TaskMetadata, TextContent, Tool,
};

/// Params of `sampling/createMessage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// 2025-11-25: request metadata (an input request of 2026-07-28 has none).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// 2025-11-25 only (experimental): run the request as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences (the client may ignore them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt (the client may change or omit it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context to include (default `"none"`; the other values are deprecated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub temperature: Option<f64>,
    /// Maximum number of tokens to sample.
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata passed to the LLM provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// 2025-11-25 and later: tools the model may use (needs the client's `sampling.tools`
    /// capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// 2025-11-25 and later: how the model uses tools (default `{"mode": "auto"}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl CreateMessageRequestParams {
    /// A request with these messages and a token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            max_tokens,
            ..Default::default()
        }
    }
}

/// `CreateMessageRequestParams.includeContext`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// `"none"` (the default).
    None,
    /// `"thisServer"` (deprecated).
    ThisServer,
    /// `"allServers"` (deprecated).
    AllServers,
}

/// How the model uses tools during sampling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode (default `"auto"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// `ToolChoice.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// `"auto"`: the model decides.
    Auto,
    /// `"required"`: the model must use at least one tool.
    Required,
    /// `"none"`: the model must not use tools.
    None,
}

/// A message to or from an LLM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContent,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

impl SamplingMessage {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage {
            role: Role::User,
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                text,
            ))),
            meta: None,
        }
    }
}

/// The `content` of a sampling message: one block or an array of blocks (the form is kept
/// on a round trip).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// A single block.
    Single(SamplingMessageContentBlock),
    /// An array of blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever form they came in.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

/// A content block of a sampling message, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SamplingMessageContentBlock {
    /// `"text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"`.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"tool_use"` (2025-11-25 and later).
    #[serde(rename = "tool_use")]
    ToolUse(ToolUseContent),
    /// `"tool_result"` (2025-11-25 and later).
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultContent),
}

/// The model asks to call a tool (`type: "tool_use"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Id of this tool use, matched by the tool result.
    pub id: String,
    /// Name of the tool.
    pub name: String,
    /// Arguments, conforming to the tool's input schema.
    pub input: JsonObject,
    /// Metadata (clients SHOULD preserve it in follow-up requests).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// The result of a tool use (`type: "tool_result"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// Id of the tool use this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result (2025-11-25: an object; 2026-07-28: any JSON value).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::serde_util::present"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed (absent = false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// The server's model preferences (advisory).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, evaluated in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// Weight of cost, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub cost_priority: Option<f64>,
    /// Weight of speed, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub speed_priority: Option<f64>,
    /// Weight of intelligence, 0 to 1.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint (a substring of a model name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelHint {
    /// The hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Result of `sampling/createMessage` (sent by the client; in 2026-07-28 an input
/// response, with no `resultType`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Who says it (normally `"assistant"`).
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// Name of the model that generated it.
    pub model: String,
    /// Why sampling stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(CreateMessageResult {
    meta: "_meta",
    role: "role" required,
    content: "content" required,
    model: "model" required,
    stop_reason: "stopReason",
});

/// Why sampling stopped; an open set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// `"endTurn"`.
    EndTurn,
    /// `"stopSequence"`.
    StopSequence,
    /// `"maxTokens"`.
    MaxTokens,
    /// `"toolUse"` (2025-11-25 and later).
    ToolUse,
    /// A provider-specific reason.
    Other(String),
}

impl StopReason {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "endTurn",
            StopReason::StopSequence => "stopSequence",
            StopReason::MaxTokens => "maxTokens",
            StopReason::ToolUse => "toolUse",
            StopReason::Other(s) => s,
        }
    }
}

impl From<&str> for StopReason {
    fn from(s: &str) -> Self {
        match s {
            "endTurn" => StopReason::EndTurn,
            "stopSequence" => StopReason::StopSequence,
            "maxTokens" => StopReason::MaxTokens,
            "toolUse" => StopReason::ToolUse,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(StopReason::from(&*s))
    }
}
