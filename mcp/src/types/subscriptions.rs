//! Subscriptions (2026-07-28): `subscriptions/listen` and its acknowledgement. They replace
//! the HTTP GET stream and `resources/subscribe` / `resources/unsubscribe`.

use serde::{Deserialize, Serialize};

use super::{JsonObject, NotificationMeta, RequestId, RequestMeta, ResultMeta, ResultType};

/// The notification types a client opts in to on a listen stream (all opt-in: the server
/// MUST NOT send types not requested here).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these resource URIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Other notification types (defined by extensions).
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(SubscriptionFilter {
    tools_list_changed: "toolsListChanged",
    prompts_list_changed: "promptsListChanged",
    resources_list_changed: "resourcesListChanged",
    resource_subscriptions: "resourceSubscriptions",
});

/// Params of `subscriptions/listen`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// What to deliver on the stream.
    pub notifications: SubscriptionFilter,
}

/// Params of `notifications/subscriptions/acknowledged`: the first message of a listen
/// stream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Notification metadata: the subscription id.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The requested types the server will honour (unsupported ones left out).
    pub notifications: SubscriptionFilter,
}

/// Result of `subscriptions/listen`: sent only when the server ends the subscription
/// gracefully; otherwise empty. Its `_meta` carries the subscription id (the listen
/// request's id).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// Result metadata (required: the subscription id).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(SubscriptionsListenResult {
    meta: "_meta",
    result_type: "resultType",
});

impl SubscriptionsListenResult {
    /// The result that closes the subscription opened by request `subscription_id`.
    pub fn closed(subscription_id: RequestId) -> Self {
        SubscriptionsListenResult {
            meta: Some(ResultMeta {
                subscription_id: Some(subscription_id),
                ..Default::default()
            }),
            result_type: Some(ResultType::Complete),
            extra: JsonObject::new(),
        }
    }
}
