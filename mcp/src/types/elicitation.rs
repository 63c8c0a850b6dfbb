//! Elicitation: `elicitation/create` (a server → client request in 2025-11-25, an input
//! request in 2026-07-28) and the restricted JSON Schema of form mode (SEP-1034 defaults,
//! SEP-1330 enums).

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use super::{
    ArrayTag, BooleanTag, FormModeTag, JsonObject, NotificationMeta, ObjectTag, RequestMeta,
    ResultMeta, StringTag, TaskMetadata, UrlModeTag,
};

/// Params of `elicitation/create`: form mode or URL mode, chosen by `mode` (absent =
/// form).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode: ask for structured, non-sensitive data.
    Form(ElicitRequestFormParams),
    /// URL mode (2025-11-25 and later): send the user to a URL.
    Url(ElicitRequestUrlParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = JsonObject::deserialize(deserializer)?;
        let url = match map.get("mode") {
            None => false,
            Some(Value::String(m)) if m == "form" => false,
            Some(Value::String(m)) if m == "url" => true,
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "unknown elicitation mode {other}"
                )))
            }
        };
        let value = Value::Object(map);
        if url {
            serde_json::from_value(value).map(ElicitRequestParams::Url)
        } else {
            serde_json::from_value(value).map(ElicitRequestParams::Form)
        }
        .map_err(de::Error::custom)
    }
}

impl ElicitRequestParams {
    /// A form-mode request (without an explicit `mode`).
    pub fn form(message: impl Into<String>, requested_schema: ElicitationSchema) -> Self {
        ElicitRequestParams::Form(ElicitRequestFormParams {
            meta: None,
            task: None,
            mode: None,
            message: message.into(),
            requested_schema,
        })
    }

    /// The defaults the form's fields declare (SEP-1034), to accept the form as the server
    /// filled it in: `ElicitResult::accept(request.defaults())`. Empty for URL mode.
    pub fn defaults(&self) -> BTreeMap<String, ElicitValue> {
        match self {
            ElicitRequestParams::Form(f) => f.requested_schema.defaults(),
            ElicitRequestParams::Url(_) => BTreeMap::new(),
        }
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequestParams::Form(f) => &f.message,
            ElicitRequestParams::Url(u) => &u.message,
        }
    }
}

/// Params of a form-mode `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// 2025-11-25: request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// 2025-11-25 only (experimental): run the request as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `"form"`, or absent (which also means form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormModeTag>,
    /// What is asked, for the user.
    pub message: String,
    /// The form: a flat object schema of primitive properties.
    pub requested_schema: ElicitationSchema,
}

/// Params of a URL-mode `elicitation/create` (2025-11-25 and later); also the items of
/// [`UrlElicitationRequiredData`](super::UrlElicitationRequiredData).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// 2025-11-25: request metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// 2025-11-25 only (experimental): run the request as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `"url"`.
    pub mode: UrlModeTag,
    /// Why the user should go there.
    pub message: String,
    /// 2025-11-25 only (required there): id of the elicitation, echoed by
    /// `notifications/elicitation/complete`. Removed in 2026-07-28 (correlate with
    /// `requestState`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// The URL to open.
    pub url: String,
}

/// The `requestedSchema` of a form: `{"type": "object", "properties": {…}, "required": […]}`
/// with only primitive, top-level properties.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// `$schema` dialect URI.
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// `"object"`.
    #[serde(rename = "type")]
    pub type_: ObjectTag,
    /// The fields, by name.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// Names of the required fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
}

impl ElicitationSchema {
    /// Each field's default (SEP-1034), by field name; fields without one are left out. An
    /// integral number default is an integer (`30`, not `30.0`).
    pub fn defaults(&self) -> BTreeMap<String, ElicitValue> {
        self.properties
            .iter()
            .filter_map(|(name, field)| Some((name.clone(), field.default_value()?)))
            .collect()
    }
}

impl PrimitiveSchemaDefinition {
    /// The field's default (SEP-1034), if it declares one.
    pub fn default_value(&self) -> Option<ElicitValue> {
        use PrimitiveSchemaDefinition as P;
        match self {
            P::String(s) => s.default.clone().map(ElicitValue::String),
            P::Number(n) => {
                let v = n.default?;
                let integral = v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15;
                let number = if integral {
                    Number::from(v as i64)
                } else {
                    Number::from_f64(v)?
                };
                Some(ElicitValue::Number(number))
            }
            P::Boolean(b) => b.default.map(ElicitValue::Bool),
            P::UntitledSingleSelectEnum(e) => e.default.clone().map(ElicitValue::String),
            P::TitledSingleSelectEnum(e) => e.default.clone().map(ElicitValue::String),
            P::LegacyTitledEnum(e) => e.default.clone().map(ElicitValue::String),
            P::UntitledMultiSelectEnum(e) => e.default.clone().map(ElicitValue::StringArray),
            P::TitledMultiSelectEnum(e) => e.default.clone().map(ElicitValue::StringArray),
        }
    }
}

/// A field of a form (`PrimitiveSchemaDefinition`): string, number, boolean or one of the
/// enum schemas.
///
/// Read by shape: `type` picks the family; for strings `oneOf` means titled single-select,
/// `enum` with `enumNames` the legacy titled enum, `enum` alone untitled single-select, and
/// neither a plain string; for arrays `items.anyOf` means titled multi-select, otherwise
/// untitled multi-select.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// `{"type": "string", …}`.
    String(StringSchema),
    /// `{"type": "number" | "integer", …}`.
    Number(NumberSchema),
    /// `{"type": "boolean", …}`.
    Boolean(BooleanSchema),
    /// `{"type": "string", "enum": […]}`.
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// `{"type": "string", "oneOf": [{"const", "title"}…]}`.
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// `{"type": "string", "enum": […], "enumNames": […]}` (legacy).
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// `{"type": "array", "items": {"type": "string", "enum": […]}}`.
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// `{"type": "array", "items": {"anyOf": [{"const", "title"}…]}}`.
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        let map = JsonObject::deserialize(deserializer)?;
        let ty = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(other) => {
                return Err(de::Error::custom(format_args!(
                    "unsupported primitive schema type {other}"
                )))
            }
            None => return Err(de::Error::missing_field("type")),
        };
        let value = Value::Object(map);
        let has = |key: &str| value.get(key).is_some();
        let parsed = match ty.as_str() {
            "string" if has("oneOf") => {
                serde_json::from_value(value).map(P::TitledSingleSelectEnum)
            }
            "string" if has("enum") && has("enumNames") => {
                serde_json::from_value(value).map(P::LegacyTitledEnum)
            }
            "string" if has("enum") => {
                serde_json::from_value(value).map(P::UntitledSingleSelectEnum)
            }
            "string" => serde_json::from_value(value).map(P::String),
            "number" | "integer" => serde_json::from_value(value).map(P::Number),
            "boolean" => serde_json::from_value(value).map(P::Boolean),
            "array" if value.get("items").and_then(|i| i.get("anyOf")).is_some() => {
                serde_json::from_value(value).map(P::TitledMultiSelectEnum)
            }
            "array" => serde_json::from_value(value).map(P::UntitledMultiSelectEnum),
            other => {
                return Err(de::Error::custom(format_args!(
                    "unsupported primitive schema type {other:?}"
                )))
            }
        };
        parsed.map_err(de::Error::custom)
    }
}

/// A string field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// `"string"`.
    #[serde(rename = "type")]
    pub type_: StringTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// `StringSchema.format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// `"email"`.
    Email,
    /// `"uri"`.
    Uri,
    /// `"date"`.
    Date,
    /// `"date-time"`.
    DateTime,
}

/// `NumberSchema.type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// `"number"`.
    #[default]
    Number,
    /// `"integer"`.
    Integer,
}

/// A number or integer field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub type_: NumberType,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub minimum: Option<f64>,
    /// Maximum.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub maximum: Option<f64>,
    /// Default value (SEP-1034).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::serde_util::opt_f64_js"
    )]
    pub default: Option<f64>,
}

/// A boolean field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// `"boolean"`.
    #[serde(rename = "type")]
    pub type_: BooleanTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// A single-select enum without display titles (SEP-1330).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// `"string"`.
    #[serde(rename = "type")]
    pub type_: StringTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
    /// Default value (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A value with a display title (`{"const": …, "title": …}`), an option of the titled
/// enum schemas.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub const_: String,
    /// Its display title.
    pub title: String,
}

impl EnumOption {
    /// An option.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption {
            const_: value.into(),
            title: title.into(),
        }
    }
}

/// A single-select enum with display titles (SEP-1330).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// `"string"`.
    #[serde(rename = "type")]
    pub type_: StringTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<EnumOption>,
    /// Default value (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The legacy titled enum (`enum` + non-standard `enumNames`); use
/// [`TitledSingleSelectEnumSchema`] instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// `"string"`.
    #[serde(rename = "type")]
    pub type_: StringTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
    /// Display names of the values, in the same order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default value (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A multi-select enum without display titles (SEP-1330).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// `"array"`.
    #[serde(rename = "type")]
    pub type_: ArrayTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of selections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// `{"type": "string", "enum": […]}`.
    pub items: UntitledEnumItems,
    /// Default selection (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// `UntitledMultiSelectEnumSchema.items`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// `"string"`.
    #[serde(rename = "type")]
    pub type_: StringTag,
    /// The values.
    #[serde(rename = "enum")]
    pub enum_: Vec<String>,
}

/// A multi-select enum with display titles (SEP-1330).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// `"array"`.
    #[serde(rename = "type")]
    pub type_: ArrayTag,
    /// Label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum number of selections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum number of selections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// `{"anyOf": [{"const", "title"}…]}`.
    pub items: TitledEnumItems,
    /// Default selection (SEP-1034).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// `TitledMultiSelectEnumSchema.items`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<EnumOption>,
}

/// The user's answer to an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// `"accept"`: submitted the form or confirmed.
    Accept,
    /// `"decline"`: explicitly declined.
    Decline,
    /// `"cancel"`: dismissed without choosing.
    Cancel,
}

/// A submitted form value: string, number, boolean or (multi-select) array of strings.
///
/// Numbers are kept as [`serde_json::Number`], so `30` and `88.0` come back as sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A string.
    String(String),
    /// A number.
    Number(Number),
    /// A boolean.
    Bool(bool),
    /// The selected values of a multi-select enum.
    StringArray(Vec<String>),
}

impl From<&str> for ElicitValue {
    fn from(s: &str) -> Self {
        ElicitValue::String(s.to_owned())
    }
}

impl From<String> for ElicitValue {
    fn from(s: String) -> Self {
        ElicitValue::String(s)
    }
}

impl From<bool> for ElicitValue {
    fn from(b: bool) -> Self {
        ElicitValue::Bool(b)
    }
}

impl From<i64> for ElicitValue {
    fn from(n: i64) -> Self {
        ElicitValue::Number(n.into())
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(v: Vec<String>) -> Self {
        ElicitValue::StringArray(v)
    }
}

/// Result of `elicitation/create` (sent by the client; in 2026-07-28 an input response,
/// with no `resultType`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElicitResult {
    /// 2025-11-25: result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted form data (only for `accept` in form mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// Other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

deserialize_with_extra!(ElicitResult {
    meta: "_meta",
    action: "action" required,
    content: "content",
});

impl ElicitResult {
    /// An `accept` with form data.
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        ElicitResult {
            meta: None,
            action: ElicitAction::Accept,
            content: Some(content),
            extra: JsonObject::new(),
        }
    }

    /// A result with no content (`decline`, `cancel`, or a URL-mode `accept`).
    pub fn action(action: ElicitAction) -> Self {
        ElicitResult {
            meta: None,
            action,
            content: None,
            extra: JsonObject::new(),
        }
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Id of the URL-mode elicitation that completed.
    pub elicitation_id: String,
}
