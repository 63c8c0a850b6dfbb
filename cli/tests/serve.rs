//! `sansrpc serve --stdio` writes nothing on stdout but protocol frames, even with every
//! log level on; the logs go to stderr.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::Limits;

#[test]
fn stdout_carries_only_frames() {
    for (name, framing) in [
        ("content-length", Framing::ContentLength),
        ("newline", Framing::Newline),
    ] {
        let mut child = common::Server(
            Command::new(common::exe())
                .args(["serve", "--stdio", "--framing", name])
                .env("RUST_LOG", "trace")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
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
        // Read on threads of their own: a server that does not exit fails the wait below
        // (and is killed), never a read that blocks for good.
        let out = common::read_all(child.0.stdout.take().unwrap());
        let err = common::read_all(child.0.stderr.take().unwrap());
        let mut stdin = child.0.stdin.take().unwrap();
        stdin.write_all(&input).unwrap();
        drop(stdin);
        common::wait_exit(
            &mut child,
            Duration::from_secs(20),
            "serve exits at the end of stdin",
        );
        let (out, err) = (out.join().unwrap().into_bytes(), err.join().unwrap());

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
        assert!(err.contains("serving on stdio"), "{err}");
        assert!(err.contains("sink") && err.contains("logged"), "{err}");
    }
}
