//! The adapter over Unix sockets: the calculator, a batch, several connections, the socket
//! file removed at shutdown; and the tap seeing every byte of a connection.
#![cfg(unix)]

#[path = "../examples/calculator/mod.rs"]
mod calculator;
mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use calculator::*;
use common::within;
use sansrpc::codec::{Decoder, Framing};
use sansrpc::method::CallError;
use sansrpc::Timeout;
use sansrpc::{Limits, RawValue};
use sansrpc_blocking::{connect_tcp, connect_unix, serve_tcp, serve_unix, Direction, Options, Tap};

const LIMIT: Duration = Duration::from_secs(20);
const T: Timeout = Timeout::After(Duration::from_secs(5));

fn socket_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sansrpc-unix-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    dir
}

#[test]
fn calculator_over_a_unix_socket() {
    within(LIMIT, || {
        let path = socket_path("calc");
        let server = serve_unix(&path, Arc::new(calculator::router()), Options::default()).unwrap();
        assert_eq!(server.path(), path);
        let client = connect_unix(&path, Options::default()).unwrap();
        assert_eq!(
            client
                .call_with::<Add>(&Operands { a: 2, b: 3 }, T)
                .unwrap(),
            5
        );
        assert_eq!(
            client.call_with::<SubtractPositional>(&(10, 4), T).unwrap(),
            6
        );
        match client.call_with::<Divide>(&(1.0, 0.0), T) {
            Err(CallError::Rpc(e)) => assert_eq!(e.code, DIVISION_BY_ZERO),
            other => panic!("expected the division error, got {other:?}"),
        }

        let second = connect_unix(&path, Options::default()).unwrap();
        let mut batch = second.batch();
        batch.call_raw("add", Some(RawValue::from_json("[1,2]").unwrap()));
        batch.notify_raw("log", Some(RawValue::from_json(r#"["hi"]"#).unwrap()));
        batch.call_raw("logged", None);
        let results = batch.send_with(T).unwrap();
        assert_eq!(results.len(), 2);
        let mut results = results.into_iter();
        assert_eq!(results.next().unwrap().unwrap().get(), "3");
        // `logged` answers what the notification before it logged.
        assert_eq!(results.next().unwrap().unwrap().get(), r#"["hi"]"#);

        client.close();
        second.close();
        server.shutdown();
        assert!(!path.exists(), "the socket file is removed at shutdown");
    });
}

#[test]
fn binding_over_an_existing_file_fails() {
    let path = socket_path("taken");
    std::fs::write(&path, b"").unwrap();
    let result = serve_unix(&path, Arc::new(calculator::router()), Options::default());
    assert!(result.is_err());
    std::fs::remove_file(&path).unwrap();
}

/// Frames seen by a tap, per direction, decoded again.
fn frames(bytes: &[u8]) -> Vec<String> {
    let mut decoder = Decoder::new(Framing::ContentLength, &Limits::default());
    let mut out = Vec::new();
    let mut input = bytes;
    while !input.is_empty() {
        let n = decoder.feed(input);
        input = &input[n..];
        while let Some(frame) = decoder.next_frame() {
            out.push(String::from_utf8(frame.unwrap().to_vec()).unwrap());
        }
    }
    out
}

#[test]
fn the_tap_sees_every_byte_both_ways() {
    within(LIMIT, || {
        let server = serve_tcp(
            "127.0.0.1:0",
            Arc::new(calculator::router()),
            Options::default(),
        )
        .unwrap();
        let seen = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let record = Arc::clone(&seen);
        let mut config = Options::default();
        config.tap = Some(Tap::new(move |direction, bytes| {
            let mut seen = record.lock().unwrap();
            match direction {
                Direction::Sent => seen.0.extend_from_slice(bytes),
                Direction::Received => seen.1.extend_from_slice(bytes),
            }
        }));
        let client = connect_tcp(server.local_addr(), config).unwrap();
        assert_eq!(
            client
                .call_with::<Add>(&Operands { a: 40, b: 2 }, T)
                .unwrap(),
            42
        );
        client.close();
        server.shutdown();

        let seen = seen.lock().unwrap();
        assert_eq!(
            frames(&seen.0),
            [r#"{"jsonrpc":"2.0","method":"add","params":{"a":40,"b":2},"id":1}"#]
        );
        assert_eq!(frames(&seen.1), [r#"{"jsonrpc":"2.0","result":42,"id":1}"#]);
    });
}
