//! `Mcp-Param-*` headers (SEP-2243, revision 2026-07-28): a tool's input schema marks an
//! argument with `"x-mcp-header": "<Name>"`, and a `tools/call` over Streamable HTTP sends
//! the argument's value in the header `Mcp-Param-<Name>` too. One model for both sides:
//! the server reads its tools' marks into [`Config::param_headers`](super::Config) and the
//! machine checks each call against them; a client reads the marks of the tools it lists
//! and writes each call's headers with [`ParamHeader::header_text`] and
//! [`encode_header_value`](super::encode_header_value).

use std::borrow::Cow;
use std::borrow::ToOwned;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use serde_json::{Map, Value};

/// A tool argument mirrored in an HTTP header: a 2026-07-28 `tools/call` of `tool` sends
/// `Mcp-Param-<header>` with the argument's value (plain, or `=?base64?…?=`), and the two
/// must agree; otherwise the server answers 400 with `-32020`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The tool's name.
    pub tool: String,
    /// The header's name after `Mcp-Param-`, as the schema spells it.
    pub header: String,
    /// Where the argument is: the chain of `properties` keys from the schema's root (one
    /// key for a top-level argument).
    pub path: Vec<String>,
}

/// The JSON Schema keywords whose value is a schema (or an array of schemas): a mark under
/// one of them is not statically reachable.
const SUBSCHEMA: &[&str] = &[
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
];

/// The keywords whose value maps names to schemas (`properties` aside).
const SCHEMA_MAP: &[&str] = &[
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// The largest integer a header carries: 2^53 − 1 (exact in IEEE 754 double precision).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

impl ParamHeader {
    /// `tool`'s top-level argument `param`, mirrored in `Mcp-Param-<header>`.
    pub fn new(tool: &str, header: &str, param: &str) -> Self {
        ParamHeader {
            tool: String::from(tool),
            header: String::from(header),
            path: std::vec![String::from(param)],
        }
    }

    /// The arguments `tool` mirrors in headers, from the `x-mcp-header` marks of its
    /// `input_schema` (none: an empty list), or why the tool must be rejected. The rules of
    /// revision 2026-07-28 (`server/tools#x-mcp-header`, `basic/transports/streamable-http`,
    /// "Custom Headers from Tool Parameters"): a mark is a non-empty string of HTTP token
    /// characters (RFC 9110 `tchar`: no space, colon, control or non-ASCII character); the
    /// marks of one schema differ case-insensitively; a marked property has `"type"`
    /// `string`, `integer` or `boolean` (or one of them with `"null"`; not `number`,
    /// `object`, `array` or `null` alone, nor no type); and it is reached from the root
    /// through `properties` keys alone (not through `items`, `allOf`/`anyOf`/`oneOf`/`not`,
    /// `if`/`then`/`else`, `$defs`, `additionalProperties`, …, nor the root itself).
    pub fn of_tool(tool: &str, input_schema: &Map<String, Value>) -> Result<Vec<Self>, String> {
        let mut out = Vec::new();
        for (key, value) in input_schema {
            marks_under(tool, key, value, Some(&[]), &mut out)?;
        }
        if input_schema.contains_key("x-mcp-header") {
            return Err("x-mcp-header on the schema's root, not on a property".into());
        }
        let mut seen: Vec<String> = Vec::with_capacity(out.len());
        for mark in &out {
            let lower = mark.header.to_ascii_lowercase();
            if seen.contains(&lower) {
                return Err(format!(
                    "x-mcp-header {:?} appears twice (names are case-insensitive)",
                    mark.header
                ));
            }
            seen.push(lower);
        }
        Ok(out)
    }

    /// The argument's value in a call's `arguments`, if there is one.
    pub fn argument<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        rest.iter()
            .try_fold(arguments.get(first)?, |value, key| value.get(key))
    }

    /// An argument's value as its header gives it (before
    /// [`encode_header_value`](super::encode_header_value)): a string as it is, a boolean as
    /// `true`/`false`, an integer within ±(2^53−1) in decimal. `Ok(None)`: null, no header;
    /// `Err`: no header can carry it (another number, an array, an object).
    #[allow(clippy::result_unit_err)]
    pub fn header_text(value: &Value) -> Result<Option<Cow<'_, str>>, ()> {
        match value {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(Cow::Borrowed(s))),
            Value::Bool(b) => Ok(Some(Cow::Borrowed(if *b { "true" } else { "false" }))),
            Value::Number(n) => {
                let integer = n.as_i64().or_else(|| {
                    let f = n.as_f64()?;
                    // 42.0 is the integer 42; 2^63 and beyond fail the range check below.
                    let max = MAX_SAFE_INTEGER as f64;
                    let whole = (f as i64) as f64 == f;
                    (whole && (-max..=max).contains(&f)).then_some(f as i64)
                });
                match integer {
                    Some(i) if i.abs() <= MAX_SAFE_INTEGER => Ok(Some(Cow::Owned(i.to_string()))),
                    _ => Err(()),
                }
            }
            Value::Array(_) | Value::Object(_) => Err(()),
        }
    }

    /// Checks the header a call sent (`header`: its value, decoded; `Some(None)` when it
    /// claims the base64 form and is not) against the call's `arguments`: both absent, or
    /// both present and equal (a string as it is, anything else as its JSON text; a number
    /// as a number, so `42.0` in the body and `42` in the header agree, SEP-2243's SHOULD).
    pub(super) fn check(
        &self,
        header: Option<Option<String>>,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<(), &'static str> {
        let argument = arguments.and_then(|a| self.argument(a));
        let number = match argument {
            Some(Value::Number(n)) => n.as_f64(),
            _ => None,
        };
        let argument = match argument {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
            Some(other) => serde_json::to_string(other).ok().map(Cow::Owned),
        };
        match (header, argument) {
            (None, None) => Ok(()),
            (Some(None), _) => Err("Header mismatch: an Mcp-Param header is not valid base64"),
            (None, Some(_)) => Err("Header mismatch: an Mcp-Param header is missing"),
            (Some(Some(_)), None) => Err("Header mismatch: an Mcp-Param header has no argument"),
            (Some(Some(h)), Some(a)) if h == a => Ok(()),
            (Some(Some(h)), Some(_))
                if number.is_some() && h.trim().parse::<f64>().ok() == number =>
            {
                Ok(())
            }
            (Some(Some(_)), Some(_)) => {
                Err("Header mismatch: an Mcp-Param header differs from its argument")
            }
        }
    }
}

/// The marks under keyword `key` (of value `value`) of a schema at `path` (`None`: not
/// statically reachable).
fn marks_under(
    tool: &str,
    key: &str,
    value: &Value,
    path: Option<&[String]>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match (key, value) {
        ("properties", Value::Object(properties)) => {
            for (name, schema) in properties {
                let child = path.map(|p| {
                    let mut child = p.to_vec();
                    child.push(name.clone());
                    child
                });
                marks_in(tool, schema, child.as_deref(), out)?;
            }
        }
        (k, Value::Array(schemas)) if SUBSCHEMA.contains(&k) => {
            for schema in schemas {
                marks_in(tool, schema, None, out)?;
            }
        }
        (k, schema) if SUBSCHEMA.contains(&k) => marks_in(tool, schema, None, out)?,
        (k, Value::Object(schemas)) if SCHEMA_MAP.contains(&k) => {
            for schema in schemas.values() {
                marks_in(tool, schema, None, out)?;
            }
        }
        // Anything else (`enum`, `const`, `default`, `examples`, …) is data, not a schema.
        _ => {}
    }
    Ok(())
}

/// The marks of one (sub)schema at `path` (`None`: not statically reachable).
fn marks_in(
    tool: &str,
    schema: &Value,
    path: Option<&[String]>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Ok(());
    };
    if let Some(mark) = schema.get("x-mcp-header") {
        let at = path.map_or_else(
            || "a subschema".to_owned(),
            |p| format!("{:?}", p.join(".")),
        );
        let Some(path) = path else {
            return Err(format!(
                "x-mcp-header on {at} not reached through `properties` alone"
            ));
        };
        let Value::String(header) = mark else {
            return Err(format!("x-mcp-header on {at} is not a string"));
        };
        if header.is_empty() {
            return Err(format!("x-mcp-header on {at} is empty"));
        }
        if !header.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {header:?} on {at} is not an HTTP token (RFC 9110 tchar)"
            ));
        }
        if !is_primitive(schema.get("type")) {
            return Err(format!(
                "x-mcp-header {header:?} on {at}, whose type is not string, integer or boolean"
            ));
        }
        out.push(ParamHeader {
            tool: String::from(tool),
            header: header.clone(),
            path: path.to_vec(),
        });
    }
    for (key, value) in schema {
        marks_under(tool, key, value, path, out)?;
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `"type"` is `string`, `integer` or `boolean`, or an array of one of them and `"null"`.
fn is_primitive(kind: Option<&Value>) -> bool {
    const PRIMITIVE: [&str; 3] = ["string", "integer", "boolean"];
    match kind {
        Some(Value::String(kind)) => PRIMITIVE.contains(&kind.as_str()),
        Some(Value::Array(kinds)) => {
            let mut kinds = kinds.iter().filter(|k| k.as_str() != Some("null"));
            match (kinds.next(), kinds.next()) {
                (Some(Value::String(kind)), None) => PRIMITIVE.contains(&kind.as_str()),
                _ => false,
            }
        }
        _ => false,
    }
}
