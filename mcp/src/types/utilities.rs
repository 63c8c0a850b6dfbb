//! Progress and cancellation notifications.

use serde::{Deserialize, Serialize};

use super::{NotificationMeta, ProgressToken, RequestId};

/// Params of `notifications/progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far; must increase with each notification.
    #[serde(serialize_with = "super::serde_util::f64_js")]
    pub progress: f64,
    /// Total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub total: Option<f64>,
    /// What is happening.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ProgressNotificationParams {
    /// Progress for `token`.
    pub fn new(token: impl Into<ProgressToken>, progress: f64, total: Option<f64>) -> Self {
        ProgressNotificationParams {
            meta: None,
            progress_token: token.into(),
            progress,
            total,
            message: None,
        }
    }
}

/// Params of `notifications/cancelled`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Id of the request to cancel. Required in 2026-07-28; optional in 2025-11-25 (where
    /// tasks are cancelled with `tasks/cancel` instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`.
    pub fn new(request_id: impl Into<RequestId>, reason: Option<String>) -> Self {
        CancelledNotificationParams {
            meta: None,
            request_id: Some(request_id.into()),
            reason,
        }
    }
}
