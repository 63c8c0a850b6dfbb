//! `sansrpc serve --stdio` writes nothing on stdout but protocol frames, even with every
//! log level on; the logs go to stderr.

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::Limits;

#[test]
fn stdout_carries_only_frames() {
    for (name, framing) in [
        ("content-length", Framing::ContentLength),
        ("newline", Framing::Newline),
    ] {
        let mut child = Command::new(common::exe())
            .args(["serve", "--stdio", "--framing", name])
            .env("RUST_LOG", "trace")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = Vec::new();
        for body in [
            r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#,
            r#"{"jsonrpc":"2.0","method":"sink","params":["logged"]}"#,
            r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":2},{"jsonrpc":"2.0","method":"update","params":[1]}]"#,
            "not json",
            r#"{"jsonrpc":"2.0","method":"rpc.discover","id":3}"#,
        ] {
            encode_frame(framing, body.as_bytes(), &mut input);
        }
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&input).unwrap();
        drop(stdin);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "serve did not exit at the end of stdin"
            );
            std::thread::sleep(Duration::from_millis(10));
        }

        let mut decoder = Decoder::new(framing, &Limits::default());
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while !rest.is_empty() {
            let n = decoder.feed(rest);
            rest = &rest[n..];
            while let Some(frame) = decoder.next_frame() {
                let frame = frame.unwrap_or_else(|e| panic!("stdout is not only frames: {e}"));
                frames.push(serde_json::from_slice::<serde_json::Value>(frame).unwrap());
            }
        }
        assert_eq!(decoder.finish(), None, "stdout ends with a whole frame");
        // Requests run on a worker pool: answers come in any order.
        assert_eq!(frames.len(), 4, "{frames:?}");
        let by_id = |id: serde_json::Value| {
            frames
                .iter()
                .find(|f| f["id"] == id || f[0]["id"] == id)
                .unwrap_or_else(|| panic!("no answer with id {id}: {frames:?}"))
        };
        assert_eq!(by_id(1.into())["result"], 3);
        assert_eq!(by_id(2.into())[0]["result"], 7);
        assert_eq!(by_id(serde_json::Value::Null)["error"]["code"], -32700);
        assert_eq!(by_id(3.into())["result"]["openrpc"], "1.2.6");
        let err = String::from_utf8_lossy(&err);
        assert!(err.contains("serving on stdio"), "{err}");
        assert!(err.contains("sink") && err.contains("logged"), "{err}");
    }
}
