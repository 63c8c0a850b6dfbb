//! A real child process (a Python JSON-RPC server) shut down the way MCP's stdio transport
//! asks: close its stdin, read until it exits or the grace period ends, then kill it.

use std::time::{Duration, Instant};

use sansrpc::connection::{Config, Profile};
use sansrpc_tokio::{spawn_child, Builder};
use tokio::process::Command;

fn python(args: &[&str]) -> Command {
    let mut command = Command::new("python3");
    command
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/slow_child.py"
        ))
        .args(args)
        .kill_on_drop(true);
    command
}

fn builder() -> Builder {
    Builder::new().config(Config::for_profile(Profile::Mcp))
}

/// A builder whose router reports the child's `started` notification (sent when a `work`
/// request arrived) on the returned channel.
fn builder_with_started() -> (Builder, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut router = sansrpc_tokio::AsyncRouter::new();
    router
        .raw_notification("started", move |_| {
            let _ = tx.send(());
            async {}
        })
        .unwrap();
    (builder().router(router), rx)
}

#[tokio::test]
async fn shutdown_lets_the_child_finish_its_work_and_returns_exit_status_0() {
    let (builder, mut started) = builder_with_started();
    let child = spawn_child(builder, &mut python(&[])).unwrap();
    let client = child.client.clone();
    let params = sansrpc::RawValue::from_json(r#"{"ms": 400}"#)
        .unwrap()
        .to_owned();
    let call = tokio::spawn(async move { client.call_raw("work", Some(&params)).await });
    // The request reached the child before its stdin closes.
    tokio::time::timeout(Duration::from_secs(30), started.recv())
        .await
        .expect("the child saw the request within 30 s")
        .expect("the router is alive");
    let status = child.shutdown(Duration::from_secs(10)).await.unwrap();
    assert!(status.success(), "{status:?}");
    let answer = call.await.unwrap().unwrap();
    assert_eq!(
        answer.get(),
        r#""done""#,
        "the answer after stdin closed was read"
    );
}

#[tokio::test]
async fn a_child_that_does_not_exit_is_killed_after_the_grace_period() {
    let child = spawn_child(builder(), &mut python(&["--ignore-eof"])).unwrap();
    let client = child.client.clone();
    let params = sansrpc::RawValue::from_json(r#"{"ms": 10}"#)
        .unwrap()
        .to_owned();
    assert_eq!(
        client.call_raw("work", Some(&params)).await.unwrap().get(),
        r#""done""#
    );
    let started = Instant::now();
    let status = child.shutdown(Duration::from_millis(500)).await.unwrap();
    assert!(!status.success(), "killed: {status:?}");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(client.call_raw("work", None).await.unwrap_err().is_closed());
}
