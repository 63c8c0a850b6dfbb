//! Push notifications end to end (a webhook receiver this test runs, the agent's POSTs with
//! the client's token and credentials, retried after a failure), the push config methods,
//! the extended card behind the bearer validator, and `A2aService` mounted in axum beside
//! `McpService`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use sansrpc_a2a::echo::{agent_card, EchoAgent};
use sansrpc_a2a::http::Config;
use sansrpc_a2a::tokio::{A2aService, Client, Options, TokenCheck};
use sansrpc_a2a::types::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest, Message, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, TaskPushNotificationConfig,
};
use sansrpc_a2a::ErrorKind;
use sansrpc_oauth::driver::StaticToken;
use serde_json::Value;

#[derive(Default)]
struct Received {
    /// Each POST: its token header, its authorization, its body; the first is refused.
    posts: Vec<(Option<String>, Option<String>, Value)>,
    refused: usize,
}

async fn hook(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let mut r = received.lock().unwrap();
    if r.refused == 0 {
        r.refused += 1;
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let header = |n: &str| headers.get(n).map(|v| v.to_str().unwrap().to_owned());
    r.posts.push((
        header("x-a2a-notification-token"),
        header("authorization"),
        serde_json::from_str(&body).unwrap(),
    ));
    StatusCode::OK
}

async fn listen() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

#[tokio::test]
async fn push_notifications_reach_the_webhook_with_its_token_retried_after_a_failure() {
    let received = Arc::new(Mutex::new(Received::default()));
    let (hook_listener, hook_url) = listen().await;
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(Arc::clone(&received));
    tokio::spawn(async move { axum::serve(hook_listener, app).await });

    let (listener, base) = listen().await;
    let mut card = agent_card(&format!("{base}/a2a"));
    card.capabilities.push_notifications = Some(true);
    card.capabilities.extended_agent_card = Some(true);
    let mut extended = card.clone();
    extended.description = "the extended card".into();
    let options = Options::default()
        .extended_card(extended)
        .validator(|token| match token {
            "secret" => {
                TokenCheck::Valid(sansrpc::codec::http::Principal::new("client", Vec::new()))
            }
            _ => TokenCheck::Invalid,
        });
    tokio::spawn(sansrpc_a2a::tokio::serve_with(
        listener,
        EchoAgent::with_step_delay(Duration::from_millis(20)),
        card,
        Config::default(),
        options,
        std::future::pending(),
    ));

    let client = Client::resolve(&base).await.unwrap();
    let config = TaskPushNotificationConfig {
        url: format!("{hook_url}/hook"),
        token: Some("tok-1".into()),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: Some("hook-key".into()),
        }),
        ..Default::default()
    };
    let request = SendMessageRequest {
        message: Message::text(Role::User, "m-1", "slow 1"),
        configuration: Some(SendMessageConfiguration {
            task_push_notification_config: Some(config.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let SendMessageResponse::Task(task) = client.send_message(&request).await.unwrap() else {
        panic!()
    };
    // The task, step 1, the artifact, completed: every one posted, in order, the first
    // after one refusal (tried again after the backoff).
    for _ in 0..200 {
        if received.lock().unwrap().posts.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let r = std::mem::take(&mut *received.lock().unwrap());
    assert_eq!(r.refused, 1);
    let kinds: Vec<String> = r
        .posts
        .iter()
        .map(|(_, _, body)| body.as_object().unwrap().keys().next().unwrap().clone())
        .collect();
    assert_eq!(
        kinds,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    for (token, authorization, body) in &r.posts {
        assert_eq!(token.as_deref(), Some("tok-1"));
        assert_eq!(authorization.as_deref(), Some("Bearer hook-key"));
        let task_id = body["task"]["id"]
            .as_str()
            .or(body["statusUpdate"]["taskId"].as_str());
        let task_id = task_id.or(body["artifactUpdate"]["taskId"].as_str());
        assert_eq!(task_id, Some(task.id.as_str()));
    }
    assert_eq!(
        r.posts[3].2["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    drop(r);

    // The config methods.
    let listed = client
        .list_push_configs(&ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.configs.len(), 1);
    let kept = &listed.configs[0];
    assert_eq!(
        (kept.url.as_str(), kept.task_id.as_deref()),
        (config.url.as_str(), Some(task.id.as_str()))
    );
    let id = kept.id.clone().unwrap();
    let get = GetTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: id.clone(),
        ..Default::default()
    };
    assert_eq!(&client.get_push_config(&get).await.unwrap(), kept);
    let mut second = config.clone();
    second.task_id = Some(task.id.clone());
    second.id = Some("mine".into());
    let made = client.create_push_config(&second).await.unwrap();
    assert_eq!(made.id.as_deref(), Some("mine"));
    client
        .delete_push_config(&DeleteTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id,
            ..Default::default()
        })
        .await
        .unwrap();
    let e = client.get_push_config(&get).await.unwrap_err();
    assert_eq!(e.a2a().unwrap().kind(), ErrorKind::TaskNotFound);
    let mut bad = second.clone();
    bad.url = "ftp://x".into();
    let e = client.create_push_config(&bad).await.unwrap_err();
    assert_eq!(e.a2a().unwrap().kind(), ErrorKind::InvalidParams);

    // The extended card: only with a valid token (the client's credentials).
    let e = client.extended_card().await.unwrap_err();
    assert!(
        matches!(e, sansrpc_a2a::tokio::ClientError::Http { status: 401, .. }),
        "{e}"
    );
    let with_token = Client::resolve_with(&base, Some(Arc::new(StaticToken::bearer("secret"))))
        .await
        .unwrap();
    assert_eq!(
        with_token.extended_card().await.unwrap().description,
        "the extended card"
    );
    let wrong = Client::resolve_with(&base, Some(Arc::new(StaticToken::bearer("wrong"))))
        .await
        .unwrap();
    let e = wrong.extended_card().await.unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
}

#[tokio::test]
async fn an_agent_mounted_beside_mcp_in_axum() {
    use sansrpc::connection::{Config as ConnConfig, Profile};
    use sansrpc_tokio::{AsyncRouter, Builder};

    let (listener, base) = listen().await;
    let card = agent_card(&format!("{base}/a2a"));
    let a2a = A2aService::new(EchoAgent::new(), card, Config::default());
    let mcp = sansrpc_mcp::tokio::McpService::new(
        Builder::new()
            .config(ConnConfig::for_profile(Profile::Mcp))
            .router(AsyncRouter::new()),
        sansrpc_mcp::streamable::Config::default(),
    );
    let app = axum::Router::new()
        .route_service("/a2a", a2a.clone())
        .route_service("/.well-known/agent-card.json", a2a)
        .route_service("/mcp", mcp)
        .route("/healthz", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = Client::resolve(&base).await.unwrap();
    let request = SendMessageRequest {
        message: Message::text(Role::User, "m-1", "echo over axum"),
        ..Default::default()
    };
    let SendMessageResponse::Task(task) = client.send_message(&request).await.unwrap() else {
        panic!()
    };
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("over axum"));
    let mut stream = client
        .send_streaming_message(&SendMessageRequest {
            message: Message::text(Role::User, "m-2", "slow 2"),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut n = 0;
    while let Some(event) = stream.next().await {
        event.unwrap();
        n += 1;
    }
    assert_eq!(n, 5);
}

/// Was a bug: an agent whose run panics left its task working for ever (its blocking caller
/// waiting, its follow-ups queued, the task never evicted). The task fails, and the caller
/// gets it.
#[tokio::test]
async fn an_agent_that_panics_fails_its_task() {
    use sansrpc_a2a::agent::{BoxFuture, Publisher};
    use sansrpc_a2a::machine::Run;
    let (listener, base) = listen().await;
    let card = agent_card(&format!("{base}/a2a"));
    let agent = |_run: Run, _events: Publisher| -> BoxFuture<()> {
        Box::pin(async { panic!("an agent's bug") })
    };
    tokio::spawn(sansrpc_a2a::tokio::serve_with(
        listener,
        agent,
        card,
        Config::default(),
        Options::default(),
        std::future::pending(),
    ));
    let client = Client::resolve(&base).await.unwrap();
    let request = SendMessageRequest {
        message: Message::text(Role::User, "m-panic", "anything"),
        ..Default::default()
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), client.send_message(&request))
        .await
        .expect("answered, not left waiting")
        .unwrap();
    let SendMessageResponse::Task(task) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(task.status.state, sansrpc_a2a::types::TaskState::Failed);
}
