//! Model Context Protocol (MCP) support for sansrpc.
//!
//! [`types`] holds the MCP message types (request params, results, notification params,
//! capabilities, content blocks, error data) for protocol revisions **2025-11-25** (the
//! `initialize` handshake era) and **2026-07-28** (stateless, per-request `_meta`), as serde
//! types that follow the schema's JSON names exactly. [`streamable`] is the Streamable HTTP
//! transport as a sans-I/O machine (sessions, JSON or Server-Sent Events, resumption, the
//! header rules of each revision, Host/Origin checks, the OAuth resource-server answers).
//! Its transports are behind features: the module `tokio` serves and calls it on tokio
//! (feature `tokio`), the module `wasm` calls it from a browser page with `fetch` (feature
//! `wasm`, for `wasm32-unknown-unknown`).
//!
//! ```
//! use sansrpc_mcp::types::{CallToolResult, ContentBlock};
//!
//! let wire = r#"{"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}}"#;
//! let result: CallToolResult = serde_json::from_str(wire).unwrap();
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "3"));
//! // Written back with the schema's names, nothing added.
//! let back = serde_json::to_value(&result).unwrap();
//! assert_eq!(back, serde_json::from_str::<serde_json::Value>(wire).unwrap());
//! ```

#![deny(missing_docs)]

#[cfg(feature = "futures")]
pub mod client;
pub mod server;
pub mod streamable;
#[cfg(feature = "tokio")]
pub mod tokio;
pub mod types;
#[cfg(feature = "wasm")]
pub mod wasm;

/// A value as raw JSON, for the adapters' raw handlers and calls (the MCP types and
/// `serde_json` values always serialise).
#[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
/// `value` as JSON text: what its `Display` writes (`{}`), through the writer every other
/// JSON text of the crate is written with (a browser page then carries one instantiation of
/// `Value`'s writer, not three: `Display`'s compact and pretty ones cost the MCP page 3.0 KB).
pub(crate) fn json_text(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("a JSON value serializes")
}

pub(crate) fn raw_json(value: &impl serde::Serialize) -> Box<sansrpc::RawValue> {
    // What serde_json writes is one JSON value: not scanned again.
    with_scratch(|out| {
        sansrpc::RawValue::from_serialize_in(value, out).expect("MCP types serialize")
    })
}

/// A `tools/call` result as raw JSON: the same text [`raw_json`] writes for it, written here
/// without serde when the result is text blocks alone (with `resultType` and `isError` at
/// most), as most tools answer; through serde when it is anything else.
#[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
pub(crate) fn raw_tool_result(reply: &server::ToolReply) -> Box<sansrpc::RawValue> {
    use server::ToolReply;
    let result = match reply {
        ToolReply::Text(text) => {
            return with_scratch(|out| text_result(out, None, [text.as_str()], None));
        }
        ToolReply::Result(result) => result,
    };
    let texts = result.content.iter().map(|block| match block {
        types::ContentBlock::Text(types::TextContent {
            text,
            annotations: None,
            meta: None,
        }) => Some(text.as_str()),
        _ => None,
    });
    let plain = result.meta.is_none()
        && result.structured_content.is_none()
        && result.extra.is_empty()
        && texts.clone().all(|t| t.is_some());
    match plain {
        true => with_scratch(|out| {
            text_result(
                out,
                result.result_type.as_ref(),
                texts.flatten(),
                result.is_error,
            )
        }),
        false => raw_json(result),
    }
}

/// A result of text blocks `texts` written into `out` as serde writes a
/// [`CallToolResult`](types::CallToolResult) of them.
#[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
fn text_result<'a>(
    out: &mut Vec<u8>,
    result_type: Option<&types::ResultType>,
    texts: impl IntoIterator<Item = &'a str>,
    is_error: Option<bool>,
) -> Box<sansrpc::RawValue> {
    // The members in the order of the type's fields, as its derived `Serialize` writes them.
    let written = sansrpc::RawValue::write_object(out, |o| {
        if let Some(kind) = result_type {
            o.string("resultType", kind.as_str());
        }
        o.array("content", |a| {
            for text in texts {
                a.object(|o| {
                    o.string("type", "text");
                    o.string("text", text);
                    Ok(())
                })?;
            }
            Ok(())
        })?;
        match is_error {
            Some(is_error) => o.value("isError", &is_error),
            None => Ok(()),
        }
    });
    // Strings and a bool always serialize.
    written.unwrap_or_else(|_| sansrpc::RawValue::NULL.to_owned())
}

/// Runs `write` with this thread's scratch buffer, where a value is written before its one
/// copy of the exact size is taken (a `String` grown as serde_json writes, then shrunk,
/// would be allocated twice or more).
#[cfg_attr(not(any(feature = "futures", feature = "blocking")), allow(dead_code))]
fn with_scratch<R>(write: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    std::thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let write = |out: &mut Vec<u8>| {
        let written = write(out);
        // A large value's room is not held on to.
        if out.capacity() > 64 * 1024 {
            *out = Vec::new();
        }
        written
    };
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut out) => write(&mut out),
        // Written from inside a serialization (never by the MCP types): a buffer of its own.
        Err(_) => write(&mut Vec::new()),
    })
}

#[cfg(all(test, any(feature = "futures", feature = "blocking")))]
mod tests {
    use crate::types::{Annotations, CallToolResult, ContentBlock, ResultType};

    /// A tool result is the same text whether written without serde or through it.
    #[test]
    fn a_tool_result_is_written_as_serde_writes_it() {
        let texts = [
            "3",
            "",
            "a \"quoted\" \\ line\nand a tab\t",
            "é ✓ 😀",
            "\u{1}\u{1f}",
        ];
        let mut results = vec![CallToolResult::default()];
        for text in texts {
            results.push(CallToolResult::text(text));
            results.push(CallToolResult::error(text));
            results.push(CallToolResult {
                result_type: Some(ResultType::Complete),
                is_error: Some(false),
                ..CallToolResult::success(vec![ContentBlock::text(text), ContentBlock::text("b")])
            });
        }
        // Shapes written through serde: each member the direct path does not write.
        let mut annotated = CallToolResult::text("x");
        if let ContentBlock::Text(t) = &mut annotated.content[0] {
            t.annotations = Some(Annotations::default());
        }
        let mut extra = CallToolResult::text("x");
        extra.extra.insert("k".into(), serde_json::json!(1));
        results.extend([
            annotated,
            extra,
            CallToolResult {
                structured_content: Some(serde_json::Value::Null),
                ..CallToolResult::text("x")
            },
            CallToolResult::success(vec![ContentBlock::image("AA==", "image/png")]),
            CallToolResult {
                result_type: Some(ResultType::Other("later".into())),
                ..CallToolResult::text("x")
            },
        ]);
        for result in &results {
            let reply = crate::server::ToolReply::Result(result.clone());
            let direct = super::raw_tool_result(&reply);
            assert_eq!(
                direct.get(),
                serde_json::to_string(result).unwrap(),
                "{result:?}"
            );
        }
        // A `String` handler's text, never made a result, is written as its result is.
        for text in texts {
            let reply = crate::server::ToolReply::Text(text.to_owned());
            let expected = serde_json::to_string(&CallToolResult::text(text)).unwrap();
            assert_eq!(super::raw_tool_result(&reply).get(), expected);
        }
        // Only a `String` is kept as text; any other output is made its result.
        use crate::server::ToolReply;
        assert!(matches!(ToolReply::of(String::from("3")), Ok(ToolReply::Text(t)) if t == "3"));
        assert!(
            matches!(ToolReply::of("3"), Ok(ToolReply::Result(r)) if r == CallToolResult::text("3"))
        );
    }
}
