//! The README's MCP server: the `weather` example is the README's snippet word for word,
//! and run as a child process over stdio it declares its tool with the schema derived from
//! its Rust type and answers a call, to a sansrpc client under the MCP profile.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::time::Duration;

use sansrpc::connection::{Config, Profile};
use sansrpc::RawValue;
use sansrpc_tokio::{spawn_child, Builder};
use serde_json::{json, Value};

#[test]
fn the_readme_shows_the_weather_example_in_full() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!(
        "{}/examples/weather.rs",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let lines = example.lines().count();
    assert!(
        readme.contains(&format!("```rust,ignore\n{example}```")),
        "README.md must show examples/weather.rs as it is"
    );
    assert!(
        readme.contains(&format!("in {lines} lines")),
        "README.md must state the example's {lines} lines"
    );
}

#[tokio::test]
async fn the_weather_example_serves_its_tool_over_stdio() {
    let exe = support::example("sansrpc-mcp", "weather");
    let builder = Builder::new().config(Config::for_profile(Profile::Mcp));
    let child = spawn_child(builder, &mut tokio::process::Command::new(exe)).unwrap();
    let client = child.client.clone();
    let call = |method: &'static str, params: Value| {
        let client = client.clone();
        async move {
            let params = RawValue::from_string(params.to_string()).unwrap();
            let result = tokio::time::timeout(
                Duration::from_secs(20),
                client.call_raw(method, Some(&params)),
            )
            .await
            .expect("answered within 20 s")
            .unwrap();
            serde_json::from_str::<Value>(result.get()).unwrap()
        }
    };
    let init = call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}),
    )
    .await;
    assert_eq!(init["serverInfo"]["name"], "weather");
    let tools = call("tools/list", json!({})).await;
    let schema = &tools["tools"][0]["inputSchema"];
    assert_eq!(
        schema["properties"]["city"]["description"],
        "The city to forecast."
    );
    assert_eq!(schema["properties"]["days"]["minimum"], 0);
    assert_eq!(schema["required"], json!(["city", "days"]));
    let answer = call(
        "tools/call",
        json!({"name": "forecast",
        "arguments": {"city": "Oslo", "days": 3}}),
    )
    .await;
    assert_eq!(answer["content"][0]["text"], "Oslo: sunny for 3 days");
    // Out of range for a u8: a tool error, and the server goes on.
    let wrong = call(
        "tools/call",
        json!({"name": "forecast",
        "arguments": {"city": "Oslo", "days": 300}}),
    )
    .await;
    assert_eq!(wrong["isError"], true);
    let again = call(
        "tools/call",
        json!({"name": "forecast",
        "arguments": {"city": "Rome", "days": 1}}),
    )
    .await;
    assert_eq!(again["content"][0]["text"], "Rome: sunny for 1 days");
    let status = child.shutdown(Duration::from_secs(5)).await.unwrap();
    assert!(status.success(), "{status:?}");
}
