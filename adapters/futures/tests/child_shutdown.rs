//! A real child process (the Python JSON-RPC server of the tokio tests) shut down the way
//! MCP's stdio transport asks, on smol: close its stdin, read until it exits, then kill.

mod common;

use std::time::{Duration, Instant};

use common::{within, LIMIT};
use sansrpc::connection::{Config, Profile};
use sansrpc::RawValue;
use sansrpc_futures::{child_process, AsyncIoTimer, Builder};

fn python(args: &[&str]) -> async_process::Command {
    let mut command = async_process::Command::new("python3");
    command
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tokio/tests/fixtures/slow_child.py"
        ))
        .args(args)
        .kill_on_drop(true);
    command
}

#[test]
fn shutdown_reads_the_last_answer_and_returns_exit_status_0() {
    smol::block_on(within(LIMIT, async {
        let (child, transport) = child_process(&mut python(&[])).unwrap();
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .connect(transport, AsyncIoTimer);
        let driver = smol::spawn(driver);
        let params = RawValue::from_json(r#"{"ms": 400}"#).unwrap();
        let call = client.call_raw("work", Some(params));
        let call = smol::spawn(call);
        async_io::Timer::after(Duration::from_millis(100)).await;
        let status = child.shutdown(Duration::from_secs(10)).await.unwrap();
        assert!(status.success(), "{status:?}");
        assert_eq!(call.await.unwrap().get(), r#""done""#);
        driver.await.unwrap();
    }));
}

#[test]
fn a_child_that_stays_is_killed_after_the_grace_period() {
    smol::block_on(within(LIMIT, async {
        let (child, transport) = child_process(&mut python(&["--ignore-eof"])).unwrap();
        let (client, driver) = Builder::new()
            .config(Config::for_profile(Profile::Mcp))
            .connect(transport, AsyncIoTimer);
        let driver = smol::spawn(driver);
        let params = RawValue::from_json(r#"{"ms": 10}"#).unwrap();
        assert_eq!(
            client.call_raw("work", Some(params)).await.unwrap().get(),
            r#""done""#
        );
        let started = Instant::now();
        let status = child.shutdown(Duration::from_millis(500)).await.unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(started.elapsed() >= Duration::from_millis(500));
        driver.await.unwrap();
        assert!(client.call_raw("work", None).await.unwrap_err().is_closed());
    }));
}
