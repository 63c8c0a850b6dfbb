//! The MCP client the official conformance suite drives (`conformance client --command …`):
//! the server's URL is the last argument and `MCP_CONFORMANCE_SCENARIO` names the scenario.
//! It connects over Streamable HTTP with the typed client of `sansrpc_mcp::client`,
//! initializes, lists the tools and calls what the scenario asks for:
//!
//! - `initialize`: the handshake only;
//! - `tools_call`: `add_numbers` with two numbers;
//! - `elicitation-sep1034-client-defaults`: `test_client_elicitation_defaults`, accepting
//!   the server's form with the defaults it declares (SEP-1034);
//! - `sse-retry`: `test_reconnection`, whose event stream the server closes; the answer comes
//!   on the stream resumed with `Last-Event-ID` after the server's `retry` delay;
//! - `http-standard-headers`: every tool called, every resource read, every prompt got
//!   (each POST carries `Mcp-Method`, and `Mcp-Name` where the request names something);
//! - `http-custom-headers`: the calls `MCP_CONFORMANCE_CONTEXT` names (`toolCalls`, with
//!   their arguments); each carries the `Mcp-Param-*` headers of the tool's `x-mcp-header`
//!   arguments (SEP-2243), plain or `=?base64?…?=`, none for a null argument;
//! - `http-invalid-tool-headers`: every tool listed called, and the listing leaves out the
//!   tools whose `x-mcp-header` marks break the rules, so they are never called;
//! - `json-schema-2020-12-preservation`: `json_schema_echo` called with the input schema of
//!   `json_schema_2020_12_tool` as it came (`$schema`, `$defs`, `$anchor`, `allOf`, `if`…);
//! - `json-schema-ref-no-deref`: the tools listed, nothing called (and the schema's network
//!   `$ref` never fetched: the client keeps schemas as JSON, unresolved);
//! - `auth/*`: OAuth 2.1 through `Connect::oauth` (`sansrpc_oauth`): discovery from the
//!   401, a Client ID Metadata Document URL where the server takes one, else dynamic
//!   registration, or the pre-registered client of `MCP_CONFORMANCE_CONTEXT`; the code flow
//!   with PKCE done by a headless user agent (the suite's authorization server approves at
//!   once); then every tool called. A refused flow (an `iss` or resource mismatch, a
//!   step-up that never ends) exits non-zero with the OAuth step and the server's error.
//!
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` picks the revision: 2026-07-28 starts with
//! `server/discover` and sends `_meta` on every request (`ClientBuilder::discover`),
//! answering `input_required` rounds with the same handlers; the others initialize.
//!
//! Any other scenario calls every tool the server lists without arguments. Prints one JSON
//! line with what it saw; exits non-zero when a call fails.
//!
//! `bash interop/mcp-conformance/run.sh client --command "target/debug/examples/everything_client" --scenario tools_call`

use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::ClientBuilder;
use sansrpc_mcp::tokio::oauth::driver::{
    Authorizer, AuthorizerBuilder, HeadlessUserAgent, HyperTransport,
};
use sansrpc_mcp::tokio::oauth::{ClientMetadata, PreRegistered};
use sansrpc_mcp::tokio::Connect;
use sansrpc_mcp::types::{version, CreateMessageResult, ElicitResult};
use sansrpc_tokio::{sansrpc, Builder};
use serde_json::{json, Value};

/// The Client ID Metadata Document URL the suite expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Where the authorization server sends the user agent back (never fetched: the headless
/// user agent stops at it).
const REDIRECT_URI: &str = "http://127.0.0.1:3000/callback";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run().await {
        // The error and its sources, said whole (an OAuth step and the server's error, a
        // TLS failure and its reason).
        let mut said = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            if !said.contains(&cause.to_string()) {
                said = format!("{said}: {cause}");
            }
            source = cause.source();
        }
        eprintln!("everything_client: {said}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .skip(1)
        .next_back()
        .ok_or("usage: everything_client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();

    let mcp = ClientBuilder::new("sansrpc-everything-client", env!("CARGO_PKG_VERSION"))
        .on_elicitation(|request| async move { Ok(ElicitResult::accept(request.defaults())) })
        // A canned model and no roots: the client declares every capability it can answer.
        .on_sampling(|_| async {
            let answer = json!({"role": "assistant", "model": "sansrpc-canned",
                "content": {"type": "text", "text": "A canned answer."}});
            serde_json::from_value::<CreateMessageResult>(answer)
                .map_err(|e| sansrpc::ErrorObject::new(-32603, e.to_string()))
        })
        .roots(Vec::new());
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    // Each `tools/call` POST carries the `Mcp-Param-*` headers of the tools listed.
    let headers = mcp.param_headers();
    let mut connect = Connect::new(&url).headers_for(move |frame| headers.for_frame(frame));
    if scenario.starts_with("auth/") {
        connect = connect
            .oauth(authorizer(&url)?)
            .protocol_version(if revision.is_empty() {
                version::LATEST
            } else {
                &revision
            });
    }
    let conn = connect.connect(builder)?;
    // The stateless revision has no handshake: `server/discover`, then `_meta` on every
    // request. The session revisions initialize.
    let server = if version::is_stateless(&revision) {
        mcp.discover(conn.client.clone()).await?
    } else {
        mcp.initialize(conn.client.clone()).await?
    };

    let mut calls = Vec::new();
    if scenario != "initialize" {
        let tools = server.all_tools().await?;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let named = |name: &str, arguments: Value| vec![(name.to_owned(), arguments)];
        let wanted: Vec<(String, Value)> = match scenario.as_str() {
            "tools_call" => named("add_numbers", json!({"a": 5, "b": 3})),
            "elicitation-sep1034-client-defaults" => {
                named("test_client_elicitation_defaults", json!({}))
            }
            "sse-retry" => named("test_reconnection", json!({})),
            "http-custom-headers" => context_calls()?,
            "json-schema-2020-12-preservation" => {
                let focal = tools
                    .iter()
                    .find(|t| t.name == "json_schema_2020_12_tool")
                    .ok_or("the server lists no json_schema_2020_12_tool")?;
                named("json_schema_echo", json!({"schema": focal.input_schema}))
            }
            "json-schema-ref-no-deref" => Vec::new(),
            _ => names.iter().map(|&n| (n.to_owned(), json!({}))).collect(),
        };
        for (name, arguments) in wanted {
            let name = name.as_str();
            if !names.contains(&name) {
                return Err(format!("the server lists no tool {name:?} (it has {names:?})").into());
            }
            let result = server.call_tool(name, arguments).await?;
            calls.push(json!({"tool": name, "result": result}));
        }
        // Every kind of named request (its POST carries `Mcp-Name`): each resource read
        // and each prompt got, where the server offers them.
        if scenario == "http-standard-headers" {
            let caps = &server.initialize_result().capabilities;
            if caps.resources.is_some() {
                for resource in server.all_resources().await? {
                    let read = server.read_resource(&resource.uri).await?;
                    calls.push(json!({"resource": resource.uri, "result": read}));
                }
            }
            if caps.prompts.is_some() {
                for prompt in server.all_prompts().await? {
                    let got = server.get_prompt(&prompt.name, Default::default()).await?;
                    calls.push(json!({"prompt": prompt.name, "result": got}));
                }
            }
        }
    }
    println!(
        "{}",
        json!({
            "scenario": scenario,
            "server": server.server_info().name,
            "protocolVersion": server.protocol_version(),
            "calls": calls,
        })
    );
    drop(server);
    conn.shutdown.shutdown(std::time::Duration::from_secs(1));
    conn.driver.await??;
    Ok(())
}

/// The OAuth client of the `auth/*` scenarios for the resource `url`: pre-registered when
/// the scenario's context gives a client, else a CIMD URL or dynamic registration; the
/// user's part headless.
fn authorizer(url: &str) -> Result<AuthorizerBuilder, Box<dyn std::error::Error>> {
    let mut config = sansrpc_mcp::tokio::oauth::Config::authorization_code(url, REDIRECT_URI)?
        .client_metadata_url(CLIENT_METADATA_URL)?
        .registration(ClientMetadata::new("sansrpc-everything-client"));
    if let Ok(context) = std::env::var("MCP_CONFORMANCE_CONTEXT") {
        let context: Value = serde_json::from_str(&context)?;
        if let Some(id) = context["client_id"].as_str() {
            let mut client = PreRegistered::new(id);
            if let Some(secret) = context["client_secret"].as_str() {
                client = client.secret(secret);
            }
            config = config.pre_registered(client);
        }
    }
    let transport = HyperTransport::new();
    Ok(Authorizer::builder(config)
        .transport(transport.clone())
        .user_agent(HeadlessUserAgent::new(transport)))
}

/// The calls the scenario's context names: `{"toolCalls": [{"name", "arguments"}, …]}` in
/// `MCP_CONFORMANCE_CONTEXT`.
fn context_calls() -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let context: Value = serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT")?)?;
    let calls = context["toolCalls"]
        .as_array()
        .ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    calls
        .iter()
        .map(|call| {
            let name = call["name"].as_str().ok_or("a tool call without a name")?;
            Ok((name.to_owned(), call["arguments"].clone()))
        })
        .collect()
}
