//! Roots: `roots/list` (a server → client request in 2025-11-25, an input request in
//! 2026-07-28; deprecated there) and `notifications/roots/list_changed` (2025-11-25).

use serde::{Deserialize, Serialize};

use super::{JsonObject, MetaObject, ResultMeta};

/// A root directory or file the server may operate on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// URI of the root (currently `file://` only).
    pub uri: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<MetaObject>,
}

/// Params of `roots/list`.
pub type ListRootsRequestParams = super::RequestParams;

/// Result of `roots/list` (sent by the client; in 2026-07-28 an input response, with no
/// `resultType`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ListRootsResult {
    /// Result metadata (2025-11-25).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// The roots.
    pub roots: Vec<Root>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ListRootsResult {
    meta: "_meta",
    roots: "roots" required,
});

/// Params of `notifications/roots/list_changed` (2025-11-25 and earlier).
pub type RootsListChangedNotificationParams = super::NotificationParams;
