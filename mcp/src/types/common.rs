//! Types shared by every part of the protocol: ids, tokens, `_meta`, `Implementation`,
//! icons, annotations, result kinds, caching hints, empty and paginated messages.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{NotificationMeta, RequestMeta, ResultMeta};

/// A JSON object (`{ [key: string]: JSONValue }`).
pub type JsonObject = Map<String, Value>;

/// The contents of an object-level `_meta` field (`MetaObject`): free-form, with keys that
/// have an `io.modelcontextprotocol/`-style prefix reserved for MCP.
pub type MetaObject = Map<String, Value>;

/// An opaque pagination cursor.
pub type Cursor = String;

/// A JSON-RPC request id: a string or an integer (never `null`).
pub type RequestId = NumberOrString;

/// A progress token: a string or an integer, chosen by the requester.
pub type ProgressToken = NumberOrString;

/// A string or an integer: the JSON type of [`RequestId`] and [`ProgressToken`].
///
/// The JSON type is kept: `"1"` and `1` are different values and serialize back as they
/// came.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NumberOrString {
    /// An integer.
    Number(i64),
    /// A string.
    String(String),
}

impl fmt::Display for NumberOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberOrString::Number(n) => write!(f, "{n}"),
            NumberOrString::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for NumberOrString {
    fn from(n: i64) -> Self {
        NumberOrString::Number(n)
    }
}

impl From<i32> for NumberOrString {
    fn from(n: i32) -> Self {
        NumberOrString::Number(n.into())
    }
}

impl From<u32> for NumberOrString {
    fn from(n: u32) -> Self {
        NumberOrString::Number(n.into())
    }
}

impl From<String> for NumberOrString {
    fn from(s: String) -> Self {
        NumberOrString::String(s)
    }
}

impl From<&str> for NumberOrString {
    fn from(s: &str) -> Self {
        NumberOrString::String(s.to_owned())
    }
}

impl Serialize for NumberOrString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NumberOrString::Number(n) => serializer.serialize_i64(*n),
            NumberOrString::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for NumberOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NumberOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(NumberOrString::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v)
                    .map(NumberOrString::Number)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(NumberOrString::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(NumberOrString::String(v))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// The sender or recipient of messages and data in a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `"user"`.
    User,
    /// `"assistant"`.
    Assistant,
}

/// Optional annotations that tell the client how to use or display an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the object is meant for (`["user", "assistant"]` = both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (entirely optional) to 1 (effectively required).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 string (e.g.
    /// `"2025-01-12T15:00:58Z"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The background an [`Icon`] is designed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// `"light"`: for light backgrounds.
    Light,
    /// `"dark"`: for dark backgrounds.
    Dark,
}

/// An optionally sized icon a user interface can display (2025-11-25 and 2026-07-28).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s):` URL or a `data:` URI with base64 image data.
    pub src: String,
    /// MIME type override, e.g. `"image/png"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes as `"WxH"` (e.g. `"48x48"`) or `"any"`; absent = any size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme the icon is designed for; absent = any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

/// Name and version of an MCP implementation (`clientInfo` / `serverInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Human-readable display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Version of the implementation.
    pub version: String,
    /// Human-readable description (2025-11-25 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for a user interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Website of the implementation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Default::default()
        }
    }
}

/// What kind of result a response carries (`resultType`, 2026-07-28).
///
/// 2026-07-28 servers MUST send it on every result. A result without it (any 2025-11-25
/// server) counts as [`Complete`](ResultType::Complete); an unknown value is kept in
/// [`Other`](ResultType::Other), which a client MUST treat as invalid unless an extension it
/// negotiated defines it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: the final result.
    #[default]
    Complete,
    /// `"input_required"`: an [`InputRequiredResult`](super::InputRequiredResult).
    InputRequired,
    /// Any other value (defined by extensions).
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    /// How a client reads an optional `resultType`: absent means complete.
    pub fn of(result_type: Option<&ResultType>) -> &ResultType {
        result_type.unwrap_or(&ResultType::Complete)
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ResultType::from(&*s))
    }
}

/// Who may cache a result (`cacheScope`, 2026-07-28), like HTTP `Cache-Control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// `"public"`: no user-specific data; shared caches may serve it across authorization
    /// contexts.
    Public,
    /// `"private"`: cache only within the same authorization context.
    Private,
}

/// Common params of a request that has no other params (`RequestParams`): `ping`,
/// `server/discover`, `roots/list`.
///
/// `_meta` is optional in 2025-11-25 and required in 2026-07-28 (with the protocol version
/// and client capabilities).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// Params of `ping` (2025-11-25 and earlier).
pub type PingRequestParams = RequestParams;

/// Common params of a notification that has no other params (`NotificationParams`): the
/// `list_changed` notifications and `notifications/initialized`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata (2026-07-28: carries the subscription id on a listen stream).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
}

/// Params of a paginated list request (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`, `tasks/list`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Where to continue: the `nextCursor` of the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// A result that carries no data (`EmptyResult`): the answer to `ping`, `logging/setLevel`,
/// `resources/subscribe` and `resources/unsubscribe`.
///
/// Serializes as `{}` in 2025-11-25; a 2026-07-28 result sets `resultType`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// 2026-07-28: `"complete"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Any other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(EmptyResult {
    meta: "_meta",
    result_type: "resultType",
});

macro_rules! string_tag {
    ($(#[$doc:meta])* $name:ident, $variant:ident, $value:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            #[doc = concat!("`\"", $value, "\"`.")]
            #[default]
            #[serde(rename = $value)]
            $variant,
        }
    };
}

string_tag!(
    /// The constant `"object"` (the `type` of a form's `requestedSchema`).
    ObjectTag, Object, "object"
);
string_tag!(
    /// The constant `"string"` (the `type` of string and single-select enum schemas).
    StringTag, String, "string"
);
string_tag!(
    /// The constant `"boolean"` (the `type` of [`BooleanSchema`](super::BooleanSchema)).
    BooleanTag, Boolean, "boolean"
);
string_tag!(
    /// The constant `"array"` (the `type` of multi-select enum schemas).
    ArrayTag, Array, "array"
);
string_tag!(
    /// The constant `"form"` (the `mode` of a form-mode elicitation).
    FormModeTag, Form, "form"
);
string_tag!(
    /// The constant `"url"` (the `mode` of a URL-mode elicitation).
    UrlModeTag, Url, "url"
);
