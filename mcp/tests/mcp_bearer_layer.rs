//! An axum app as a new user writes one (issue 60): `McpService` mounted at `/mcp` behind
//! the app's own tower layer, which refuses any request without `Authorization: Bearer
//! <token>` (401) and records every request it lets through. The sansrpc client built as
//! docs/mcp.md shows (`Connect::new(url).bearer(token)`, a static header beside it) is
//! served on every request of its session: `initialize`, each POST, the GET stream (a
//! change the server announces while serving reaches the client on it), the GET that
//! resumes a call's event stream cut by the layer (`Last-Event-ID`), and the `DELETE` that
//! ends the session. Without the token, or with a wrong one, the call fails at once
//! saying why.
//!
//! The server side of a remote deployment on the way: the state every handler shares
//! (`ServerBuilder::with_state`, read with `Context::state`), and a resource and a prompt
//! added and removed while serving, each change announced with `list_changed`.
#![cfg(not(target_arch = "wasm32"))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use sansrpc::connection::{Config, Profile};
use sansrpc_mcp::client::{ClientBuilder, ClientError};
use sansrpc_mcp::server::{Context, ListKind, McpError, ServerBuilder};
use sansrpc_mcp::tokio::{Connect, McpService};
use sansrpc_mcp::types::{GetPromptResult, Prompt, PromptMessage, Resource, ResourceContents};
use sansrpc_tokio::Builder;

const TOKEN: &str = "s3cret-token";

/// What the app's layer saw: each request it let through (its method, its `X-Team` header,
/// whether it resumed a stream with `Last-Event-ID`).
#[derive(Default)]
struct Seen(Mutex<Vec<(String, Option<String>, bool)>>);

/// The app's state, shared by the tool handlers.
#[derive(Default)]
struct Notes(Mutex<Vec<String>>);

/// Holds `chatty`'s answer until the test opens it (the app's state too).
#[derive(Default)]
struct Gate(tokio::sync::Notify);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Publish {
    /// The note's name.
    name: String,
    /// Its text.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Unpublish {
    /// The note's name.
    name: String,
}

/// The MCP server: `publish` keeps a note in the app's state and offers it as a resource
/// and a prompt, `unpublish` takes both away; each change is announced.
fn server() -> sansrpc_mcp::server::Server {
    ServerBuilder::new("bearer-app", "1")
        .with_state(Notes::default())
        .with_state(Gate::default())
        .list_changed(ListKind::Resources)
        .list_changed(ListKind::Prompts)
        .tool(
            "publish",
            "Publishes a note",
            |cx: Context, note: Publish| async move {
                let count = {
                    let mut notes = cx.state::<Notes>()?.0.lock().unwrap();
                    notes.push(note.name.clone());
                    notes.len()
                };
                let uri = format!("note://{}", note.name);
                let text = note.text.clone();
                let read_uri = uri.clone();
                cx.server()
                    .add_resource(Resource::new(&uri, &note.name), move |_, _| {
                        let (uri, text) = (read_uri.clone(), text.clone());
                        async move { Ok(vec![ResourceContents::text(uri, None, text)]) }
                    })
                    .map_err(McpError::internal)?;
                let text = note.text;
                cx.server()
                .add_prompt(Prompt::new(&note.name), move |_, _| {
                    let text = text.clone();
                    async move { Ok(GetPromptResult::new(vec![PromptMessage::user_text(text)])) }
                })
                .map_err(McpError::internal)?;
                cx.server().list_changed(ListKind::Resources);
                cx.server().list_changed(ListKind::Prompts);
                Ok(format!("{count} notes"))
            },
        )
        .tool(
            "chatty",
            "Tells, then answers",
            |cx: Context, ()| async move {
                let told = serde_json::json!({"level": "info", "data": "on the way"});
                cx.notify("notifications/message", told).await;
                cx.state::<Gate>()?.0.notified().await;
                Ok::<_, McpError>("arrived")
            },
        )
        .tool(
            "unpublish",
            "Takes a note away",
            |cx: Context, Unpublish { name }| async move {
                cx.state::<Notes>()?
                    .0
                    .lock()
                    .unwrap()
                    .retain(|n| *n != name);
                let gone = cx.server().remove_resource(&format!("note://{name}"))
                    && cx.server().remove_prompt(&name);
                cx.server().list_changed(ListKind::Resources);
                cx.server().list_changed(ListKind::Prompts);
                Ok(if gone { "gone" } else { "not there" })
            },
        )
        .build()
}

/// `response` with its body ended after its first event (an SSE event ends with a blank
/// line).
fn cut_after_first_event(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let state = (body.into_data_stream(), Vec::new(), false);
    let cut = futures::stream::unfold(state, |(mut data, mut seen, done)| async move {
        if done {
            return None;
        }
        let chunk = data.next().await?.ok()?;
        let before = seen.len();
        seen.extend_from_slice(&chunk);
        match seen.windows(2).position(|w| w == b"\n\n") {
            Some(at) => {
                let end = at + 2 - before;
                Some((
                    Ok::<_, std::io::Error>(chunk.slice(..end)),
                    (data, seen, true),
                ))
            }
            None => Some((Ok(chunk), (data, seen, false))),
        }
    });
    Response::from_parts(parts, axum::body::Body::from_stream(cut))
}

/// The app on a free port: `/mcp` behind the layer; its URL, what the layer saw, and the
/// MCP server.
async fn app() -> (String, Arc<Seen>, sansrpc_mcp::server::Server) {
    let server = server();
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(server.router());
    let mcp = McpService::new(builder, server.streamable_config());
    let seen = Arc::new(Seen::default());
    let log = Arc::clone(&seen);
    let once = Arc::new(AtomicBool::new(false));
    let require_bearer = axum::middleware::from_fn(move |request: Request, next: Next| {
        let (log, cut) = (Arc::clone(&log), Arc::clone(&once));
        async move {
            let wanted = format!("Bearer {TOKEN}");
            let authorized = request
                .headers()
                .get("authorization")
                .is_some_and(|v| v.as_bytes() == wanted.as_bytes());
            if !authorized {
                let challenge = [("www-authenticate", "Bearer error=\"invalid_token\"")];
                return (axum::http::StatusCode::UNAUTHORIZED, challenge).into_response();
            }
            let team = request
                .headers()
                .get("x-team")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let resumes = request.headers().contains_key("last-event-id");
            log.0
                .lock()
                .unwrap()
                .push((request.method().to_string(), team, resumes));
            // The first call of `chatty`: its event stream is cut after its first event, as
            // a dropped connection would (the client resumes it with `Last-Event-ID`).
            let chatty = request
                .headers()
                .get("mcp-name")
                .is_some_and(|v| v.as_bytes() == b"chatty");
            let response: Response = next.run(request).await;
            if chatty && !cut.swap(true, Ordering::SeqCst) {
                return cut_after_first_event(response);
            }
            response
        }
    });
    let app = axum::Router::new()
        .route_service("/mcp", mcp)
        .layer(require_bearer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://127.0.0.1:{port}/mcp"), seen, server)
}

#[tokio::test]
async fn a_client_built_as_the_docs_show_passes_a_bearer_layer_on_every_request() {
    let (url, seen, server) = app().await;
    // Notifications the client receives, by method.
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let notes = Arc::clone(&heard);
    let mcp = ClientBuilder::new("docs-client", "1").on_notification(move |method, _| {
        notes.lock().unwrap().push(method.to_owned());
    });
    let builder = Builder::new()
        .config(Config::for_profile(Profile::Mcp))
        .router(mcp.router());
    let conn = Connect::new(&url)
        .bearer(TOKEN)
        .header("X-Team", "research")
        .connect(builder)
        .unwrap();
    let session = mcp.initialize(&conn).await.unwrap();
    assert!(session.all_resources().await.unwrap().is_empty());

    // A change announced while serving comes on the session's GET stream.
    let published = session
        .call_tool(
            "publish",
            serde_json::json!({"name": "first", "text": "hello"}),
        )
        .await
        .unwrap();
    assert!(!published.is_error.unwrap_or(false), "{published:?}");
    let announced = |method: &'static str| {
        let heard = Arc::clone(&heard);
        async move {
            for _ in 0..200 {
                if heard.lock().unwrap().iter().any(|m| m == method) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("{method} never came: {:?}", heard.lock().unwrap());
        }
    };
    announced("notifications/resources/list_changed").await;
    announced("notifications/prompts/list_changed").await;
    let resources = session.all_resources().await.unwrap();
    assert_eq!(resources.len(), 1, "{resources:?}");
    let read = session.read_resource("note://first").await.unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents).unwrap()[0]["text"],
        "hello"
    );
    let prompt = session
        .get_prompt("first", Default::default())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages).unwrap()[0]["content"]["text"],
        "hello"
    );

    // A call's event stream cut after its first event: resumed by a GET with
    // `Last-Event-ID`, through the layer, and the answer comes.
    let calling = session.clone();
    let chatty = tokio::spawn(async move { calling.call_tool("chatty", ()).await });
    let resumed = || {
        let seen = seen.0.lock().unwrap();
        seen.iter().any(|(m, _, resumes)| m == "GET" && *resumes)
    };
    for _ in 0..400 {
        if resumed() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(resumed(), "the cut stream was not resumed");
    server.state::<Gate>().unwrap().0.notify_one();
    let chatty = chatty.await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(&chatty.content).unwrap()[0]["text"],
        "arrived"
    );

    // Taken away: neither listed nor readable.
    heard.lock().unwrap().clear();
    let gone = session
        .call_tool("unpublish", serde_json::json!({"name": "first"}))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&gone.content).unwrap()[0]["text"],
        "gone"
    );
    announced("notifications/resources/list_changed").await;
    assert!(session.all_resources().await.unwrap().is_empty());
    assert!(session.all_prompts().await.unwrap().is_empty());
    let unread = session.read_resource("note://first").await.unwrap_err();
    assert_eq!(unread.rpc().map(|e| e.code), Some(-32002), "{unread:?}");
    session.close().await;

    let seen = seen.0.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|(m, _, _)| m.as_str()).collect();
    assert!(methods.contains(&"POST"), "{seen:?}");
    assert!(
        seen.iter().any(|(m, _, resumes)| m == "GET" && !resumes),
        "the GET stream went out with the token: {seen:?}"
    );
    assert!(
        seen.iter().any(|(m, _, resumes)| m == "GET" && *resumes),
        "the resumption went out with the token: {seen:?}"
    );
    assert_eq!(methods.last(), Some(&"DELETE"), "{seen:?}");
    assert!(
        seen.iter()
            .all(|(_, team, _)| team.as_deref() == Some("research")),
        "the static header on every request: {seen:?}"
    );
}

#[tokio::test]
async fn without_the_token_or_with_a_wrong_one_the_call_says_why() {
    let (url, seen, _server) = app().await;
    for connect in [Connect::new(&url), Connect::new(&url).bearer("wrong")] {
        let mcp = ClientBuilder::new("docs-client", "1");
        let builder = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .router(mcp.router());
        let conn = connect.connect(builder).unwrap();
        let error = tokio::time::timeout(Duration::from_secs(10), mcp.initialize(&conn))
            .await
            .expect("told at once")
            .expect_err("served without the token");
        assert!(matches!(error, ClientError::Transport { .. }), "{error:?}");
        let said = error.to_string();
        assert!(
            said.contains("asks for authorization")
                || said.contains("refused the token (401 invalid_token"),
            "{said}"
        );
    }
    assert!(seen.0.lock().unwrap().is_empty());
}
