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
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
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
