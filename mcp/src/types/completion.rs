//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{JsonObject, RequestMeta, ResultMeta, ResultType};

/// Params of `completion/complete`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// The prompt or resource template whose argument is completed.
    #[serde(rename = "ref")]
    pub reference: Reference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Additional context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

/// What a completion refers to, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Reference {
    /// `"ref/prompt"`: a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `"ref/resource"`: a resource or resource template.
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

/// Identifies a prompt (`type: "ref/prompt"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptReference {
    /// Name of the prompt.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Identifies a resource or resource template (`type: "ref/resource"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI or URI template.
    pub uri: String,
}

/// `CompleteRequestParams.argument`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Name of the argument.
    pub name: String,
    /// Value typed so far.
    pub value: String,
}

/// `CompleteRequestParams.context`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Already-resolved arguments of the prompt or URI template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Result of `completion/complete`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The completions.
    pub completion: Completion,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(CompleteResult {
    meta: "_meta",
    result_type: "resultType",
    completion: "completion" required,
});

/// `CompleteResult.completion`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Completion values (at most 100).
    pub values: Vec<String>,
    /// Total number of options available, possibly more than `values`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more options than `values`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}
