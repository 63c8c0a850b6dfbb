//! Resources: `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe` / `resources/unsubscribe` (2025-11-25) and their notifications.

use serde::{Deserialize, Serialize};

use super::{
    Annotations, CacheScope, Cursor, Icon, InputResponses, JsonObject, MetaObject,
    NotificationMeta, RequestMeta, ResourceContents, ResultMeta, ResultType,
};

/// A resource the server can read. Also the body of a `resource_link` content block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// URI of the resource.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource represents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Size of the raw content in bytes, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for a user interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

impl Resource {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// A template for resources available on the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the template is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of every matching resource, if they all share one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Optional annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons for a user interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// Params of `resources/list`.
pub type ListResourcesRequestParams = super::PaginatedRequestParams;

/// Params of `resources/templates/list`.
pub type ListResourceTemplatesRequestParams = super::PaginatedRequestParams;

/// Result of `resources/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The resources.
    pub resources: Vec<Resource>,
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

deserialize_with_extra!(ListResourcesResult {
    meta: "_meta",
    result_type: "resultType",
    resources: "resources" required,
    next_cursor: "nextCursor",
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

/// Result of `resources/templates/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The templates.
    pub resource_templates: Vec<ResourceTemplate>,
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

deserialize_with_extra!(ListResourceTemplatesResult {
    meta: "_meta",
    result_type: "resultType",
    resource_templates: "resourceTemplates" required,
    next_cursor: "nextCursor",
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

/// Params of `resources/read`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// URI of the resource.
    pub uri: String,
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

impl ReadResourceRequestParams {
    /// A read of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceRequestParams {
            uri: uri.into(),
            ..Default::default()
        }
    }
}

/// Result of `resources/read`.
///
/// A resource that does not exist is a JSON-RPC error, not an empty `contents`: `-32602`
/// in 2026-07-28, `-32002` before, both with [`ResourceNotFoundData`](super::ResourceNotFoundData).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The contents.
    pub contents: Vec<ResourceContents>,
    /// 2026-07-28 (required there for complete results): cache lifetime in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 (required there for complete results): who may cache this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ReadResourceResult {
    meta: "_meta",
    result_type: "resultType",
    contents: "contents" required,
    ttl_ms: "ttlMs",
    cache_scope: "cacheScope",
});

/// Params of `resources/subscribe` and `resources/unsubscribe` (2025-11-25 and earlier;
/// 2026-07-28 uses `subscriptions/listen`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// URI of the resource.
    pub uri: String,
}

/// Params of `resources/unsubscribe` (2025-11-25 and earlier).
pub type UnsubscribeRequestParams = SubscribeRequestParams;

/// Params of `notifications/resources/updated`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// Notification metadata (2026-07-28: the subscription id).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// URI of the updated resource (possibly a sub-resource of the subscribed one).
    pub uri: String,
}

/// Params of `notifications/resources/list_changed`.
pub type ResourceListChangedNotificationParams = super::NotificationParams;

impl ResourceTemplate {
    /// A template `uri_template` (RFC 6570) called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}
