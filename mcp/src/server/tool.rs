//! Tool schemas from Rust types, and what a tool handler may return.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::McpError;
use crate::types::{CallToolResult, ContentBlock, JsonObject, Tool};

/// `A`'s JSON Schema as a tool's input schema, and whether `A` takes no arguments (`()`,
/// whose schema is not an object: the tool then declares an empty object).
pub(crate) fn input_schema<A: JsonSchema>() -> (JsonObject, bool) {
    let schema = schema_object::<A>();
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        (schema, false)
    } else {
        (Tool::empty_input_schema(), true)
    }
}

fn schema_object<T: JsonSchema>() -> JsonObject {
    match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(mut map)) => {
            drop_unknown_formats(&mut map);
            map
        }
        _ => JsonObject::new(),
    }
}

/// The number formats validators know (OpenAPI's, which Ajv's `ajv-formats` and most
/// others take); schemars' others (`uint`, `uint8`…`uint64`, `int`, `int8`, `int16`,
/// `int128`, `uint128`) make them warn or refuse the schema in strict mode.
const KNOWN_NUMBER_FORMATS: &[&str] = &["int32", "int64", "float", "double"];

/// Drops, everywhere in `schema`, a number's `format` that [`KNOWN_NUMBER_FORMATS`] does
/// not hold: the bounds schemars writes beside it (`minimum: 0` for an unsigned integer,
/// the range of a small one) say the same to every validator.
fn drop_unknown_formats(schema: &mut JsonObject) {
    let numeric = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    let is_number = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().any(numeric),
        Some(t) => numeric(t),
        None => false,
    };
    if is_number {
        let unknown = schema
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| !KNOWN_NUMBER_FORMATS.contains(&f));
        if unknown {
            schema.remove("format");
        }
    }
    for value in schema.values_mut() {
        drop_in_value(value);
    }
}

fn drop_in_value(value: &mut Value) {
    match value {
        Value::Object(map) => drop_unknown_formats(map),
        Value::Array(items) => items.iter_mut().for_each(drop_in_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Sizes {
        count: usize,
        small: u8,
        maybe: Option<u64>,
        list: Vec<u32>,
        signed: i64,
        narrow: i32,
        ratio: f64,
    }

    #[test]
    fn integer_formats_validators_do_not_know_are_dropped() {
        let schema = Value::Object(schema_object::<Sizes>());
        let properties = &schema["properties"];
        assert_eq!(properties["count"]["format"], Value::Null, "{schema}");
        assert_eq!(properties["count"]["minimum"], 0, "{schema}");
        assert_eq!(properties["small"]["format"], Value::Null, "{schema}");
        assert_eq!(properties["small"]["maximum"], 255, "{schema}");
        assert_eq!(properties["maybe"]["format"], Value::Null, "{schema}");
        assert_eq!(
            properties["list"]["items"]["format"],
            Value::Null,
            "{schema}"
        );
        assert_eq!(properties["signed"]["format"], "int64", "{schema}");
        assert_eq!(properties["narrow"]["format"], "int32", "{schema}");
        assert_eq!(properties["ratio"]["format"], "double", "{schema}");
        assert!(!schema.to_string().contains("uint"), "{schema}");
    }
}

/// What a tool handler returns: the tool's result, and its output schema when it has one.
pub trait ToolOutput: Send {
    /// The `tools/call` result.
    fn into_result(self) -> Result<CallToolResult, McpError>;
    /// The tool's `outputSchema`, declared in `tools/list` (only [`Json`] has one).
    fn output_schema() -> Option<JsonObject> {
        None
    }
}

impl ToolOutput for CallToolResult {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        Ok(self)
    }
}

impl ToolOutput for String {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::text(self))
    }
}

impl ToolOutput for &'static str {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::text(self))
    }
}

impl ToolOutput for ContentBlock {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(vec![self]))
    }
}

impl ToolOutput for Vec<ContentBlock> {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        Ok(CallToolResult::success(self))
    }
}

/// Structured tool output: `structuredContent` is `T` as JSON (with the same JSON as text,
/// for clients that read only content), and the tool declares `T`'s schema as its
/// `outputSchema`. `T` must serialize to a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + Send> ToolOutput for Json<T> {
    fn into_result(self) -> Result<CallToolResult, McpError> {
        let value = serde_json::to_value(&self.0).map_err(McpError::internal)?;
        if !value.is_object() {
            return Err(McpError::internal(
                "structured tool output must be a JSON object",
            ));
        }
        let mut result = CallToolResult::text(value.to_string());
        result.structured_content = Some(value);
        Ok(result)
    }

    fn output_schema() -> Option<JsonObject> {
        Some(schema_object::<T>())
    }
}
