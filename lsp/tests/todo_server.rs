//! The `todo_server` example as an editor runs it, and `todo_server_threads` (the same server
//! on the blocking adapter), each a child process on stdio, driven with
//! Content-Length frames written by hand (no LSP library on this side), every frame it
//! writes back parsed and checked whole.
//!
//! - `initialize` negotiates `positionEncoding` from the client's
//!   `general.positionEncodings` (utf-8, utf-16 or utf-32 offered first; an unknown one
//!   skipped; none offered is UTF-16), and the capabilities are exactly the example's:
//!   incremental sync with open and close, hover.
//! - In each encoding, a document with non-BMP characters (😀, 𝄞), CJK, a ✓ and CRLF line
//!   endings, changed by one `didChange` carrying four incremental edits (one splits a line
//!   with a CRLF, one deletes a CRLF), each given in that encoding's code units: every
//!   `publishDiagnostics` is checked whole (version, one warning per `TODO`, its range in
//!   the encoding's units, written out below by hand), and hovers answer
//!   `version V: LINE` (the line without its CRLF), `null` past the last line.
//! - A hover sees the changes sent before it and none sent after (five didChange + hover
//!   pairs written at once).
//! - The README and docs/lsp.md show the example as it is (within 60 lines of code).
//! - A file past the 8 MiB frame limit: its didOpen refused (`-32004`), the server goes on.
//! - The end of input: once `initialize` is answered, initialized, didOpen, didChange,
//!   hover, shutdown written at once and stdin closed without `exit`: the diagnostics of
//!   both versions arrive, the hover (seeing the change) and `shutdown` are answered in
//!   order, and the process exits 0; without `shutdown`, the same arrives and it exits 1.
//! - `"params": null` on `initialized`, `shutdown` and `exit` (as Zed and eglot send them):
//!   `shutdown` answered, and `exit` ends the process with status 0, stdin still open.

#[path = "../../tests/support/processes.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// How long the server may take to write its next frame, or to exit.
const ANSWER: Duration = Duration::from_secs(20);
const URI: &str = "file:///tmp/sansrpc-todo/notes.txt";

/// The `todo_server` example (or `todo_server_threads`) running as a child process.
struct TodoServer {
    stdin: Option<ChildStdin>,
    frames: Receiver<Result<Value, String>>,
    exited: Receiver<ExitStatus>,
    pid: u32,
    status: Option<ExitStatus>,
    stderr: Arc<Mutex<String>>,
}

impl TodoServer {
    /// Starts the example `example`.
    fn start(example: &str) -> TodoServer {
        let exe = support::built_example("sansrpc-lsp", example);
        let mut child: Child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start the {example} example: {e}"));
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || read_frames(stdout, tx));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut pipe, kept) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            let mut chunk = [0; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                kept.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let pid = child.id();
        let (tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = tx.send(status);
            }
        });
        TodoServer {
            stdin,
            frames,
            exited,
            pid,
            status: None,
            stderr,
        }
    }

    /// Writes `message` as one Content-Length frame.
    fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        if let Err(e) = stdin
            .write_all(frame.as_bytes())
            .and_then(|()| stdin.flush())
        {
            self.fail(&format!("write failed: {e}"));
        }
    }

    /// Writes `bytes` as they are.
    fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        if let Err(e) = stdin.write_all(bytes).and_then(|()| stdin.flush()) {
            self.fail(&format!("write failed: {e}"));
        }
    }

    /// Sends the request `id` (`params` left out when null, as for `shutdown`).
    fn request(&mut self, id: i64, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(message);
    }

    /// Sends the notification `method` (`params` left out when null, as for `exit`).
    fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(message);
    }

    /// Closes the server's stdin: the end of its input.
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// The next frame the server writes, within [`ANSWER`]; `due` says what it should be.
    fn next(&mut self, due: &str) -> Value {
        match self.frames.recv_timeout(ANSWER) {
            Ok(Ok(message)) => message,
            Ok(Err(e)) => self.fail(&format!("wrote a bad frame where {due} was due: {e}")),
            Err(RecvTimeoutError::Timeout) => {
                self.fail(&format!("wrote nothing in time where {due} was due"))
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.fail(&format!("closed its stdout where {due} was due"))
            }
        }
    }

    /// The answer to request `id`, which must be the next frame.
    fn response(&mut self, id: i64) -> Value {
        let message = self.next(&format!("the answer to {id}"));
        if message["id"] != id || message.get("method").is_some() {
            self.fail(&format!(
                "answered {message} where the answer to {id} was due"
            ));
        }
        assert_eq!(message["jsonrpc"], "2.0");
        message
    }

    /// The result of request `id`, which must be the next frame.
    fn result(&mut self, id: i64) -> Value {
        let message = self.response(id);
        match message.get("result") {
            Some(result) => result.clone(),
            None => self.fail(&format!("answered {id} without a result: {message}")),
        }
    }

    /// The results of the requests `ids` (in the order of `ids`) and the params of the
    /// `publishDiagnostics` among them (in the order they came), reading until every result
    /// and at least `diagnostics` publications are in. Any other frame fails.
    fn answers_and_diagnostics(
        &mut self,
        ids: &[i64],
        diagnostics: usize,
    ) -> (Vec<Value>, Vec<Value>) {
        let mut answers = vec![None; ids.len()];
        let mut published = Vec::new();
        while answers.iter().any(Option::is_none) || published.len() < diagnostics {
            let message = self.next(&format!("the results to {ids:?} and diagnostics"));
            if message["method"] == "textDocument/publishDiagnostics" {
                published.push(message["params"].clone());
                continue;
            }
            let at = ids.iter().position(|id| message["id"] == *id);
            match (at, message.get("result")) {
                (Some(i), Some(result)) if answers[i].is_none() => {
                    answers[i] = Some(result.clone())
                }
                _ => self.fail(&format!(
                    "wrote {message} where results to {ids:?} were due"
                )),
            }
        }
        (published, answers.into_iter().flatten().collect())
    }

    /// The params of the next frame, which must be the notification `method`.
    fn notification(&mut self, method: &str) -> Value {
        let message = self.next(method);
        if message["method"] != method || message.get("id").is_some() {
            self.fail(&format!("wrote {message} where {method} was due"));
        }
        message["params"].clone()
    }

    /// `initialize` offering `encodings` (`None`: no `general` capabilities at all), then
    /// `initialized`; the result.
    fn initialize(&mut self, encodings: Option<&[&str]>) -> Value {
        let capabilities = match encodings {
            Some(offered) => json!({"general": {"positionEncodings": offered}}),
            None => json!({}),
        };
        self.request(
            1,
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities}),
        );
        let result = self.result(1);
        self.notify("initialized", json!({}));
        result
    }

    /// `shutdown` (answered `null`), then `exit`: the process exits 0.
    fn shut_down(mut self, id: i64) {
        self.request(id, "shutdown", Value::Null);
        assert_eq!(self.result(id), Value::Null);
        self.notify("exit", Value::Null);
        self.close_stdin();
        assert_eq!(self.exit_code(), Some(0));
    }

    /// Waits (within [`ANSWER`]) for the process to exit; its status code. Everything it
    /// wrote must have been read already.
    fn exit_code(&mut self) -> Option<i32> {
        self.exit_code_after(|_| false)
    }

    /// As [`exit_code`](Self::exit_code), reading on over the frames `late` accepts (an
    /// analysis that ends as the input does).
    fn exit_code_after(&mut self, late: impl Fn(&Value) -> bool) -> Option<i32> {
        loop {
            match self.frames.recv_timeout(ANSWER) {
                Err(RecvTimeoutError::Disconnected) => break,
                Ok(Ok(frame)) if late(&frame) => {}
                Ok(frame) => self.fail(&format!("wrote {frame:?} after the last frame expected")),
                Err(RecvTimeoutError::Timeout) => self.fail("did not close its stdout in time"),
            }
        }
        match self.exited.recv_timeout(ANSWER) {
            Ok(status) => {
                self.status = Some(status);
                status.code()
            }
            Err(_) => self.fail("closed its stdout but did not exit in time"),
        }
    }

    fn fail(&mut self, what: &str) -> ! {
        self.kill();
        panic!(
            "todo_server {what}\n--- its stderr:\n{}",
            self.stderr.lock().unwrap()
        )
    }

    fn kill(&mut self) {
        if self.status.is_none() && self.exited.try_recv().is_err() {
            // The shell's own `kill`: no procps needed. The waiting thread reaps it.
            let _ = Command::new("sh")
                .args(["-c", &format!("kill -9 {}", self.pid)])
                .status();
        }
    }
}

impl Drop for TodoServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads Content-Length frames from `stdout` until it closes; a frame that is not exactly
/// `Content-Length: N` (and optionally `Content-Type`) headers and a JSON body is an error.
fn read_frames(mut stdout: impl BufRead, tx: mpsc::Sender<Result<Value, String>>) {
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match stdout.read_line(&mut line) {
                Ok(0) if length.is_none() => return,
                Ok(0) => {
                    let _ = tx.send(Err("the stream ended inside a header".into()));
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                    return;
                }
            }
            let Some(header) = line.strip_suffix("\r\n") else {
                let _ = tx.send(Err(format!("a header line without CRLF: {line:?}")));
                return;
            };
            if header.is_empty() {
                break;
            }
            match header.split_once(": ") {
                Some(("Content-Length", n)) => length = n.parse::<usize>().ok(),
                Some(("Content-Type", _)) => {}
                _ => {
                    let _ = tx.send(Err(format!("an unexpected header: {header:?}")));
                    return;
                }
            }
        }
        let Some(length) = length else {
            let _ = tx.send(Err("a frame without Content-Length".into()));
            return;
        };
        let mut body = vec![0; length];
        if let Err(e) = stdout.read_exact(&mut body) {
            let _ = tx.send(Err(format!("a body shorter than its Content-Length: {e}")));
            return;
        }
        let message = serde_json::from_slice(&body)
            .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&body)));
        if tx.send(message).is_err() {
            return;
        }
    }
}

/// The README's quick start and the LSP guide show the example whole, as it is, and say how
/// long it is; and it stays at most 45 lines of code (comments and blank lines aside).
#[test]
fn the_readme_and_the_lsp_guide_show_the_example_in_full() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let example = std::fs::read_to_string(format!(
        "{}/examples/todo_server.rs",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let code = example
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .count();
    assert!(
        code <= 45,
        "todo_server.rs has {code} lines of code, more than 45"
    );
    let lines = example.lines().count();
    for page in ["README.md", "docs/lsp.md"] {
        let text = std::fs::read_to_string(format!("{root}/{page}")).unwrap();
        assert!(
            text.contains(&format!("```rust,ignore\n{example}```")),
            "{page} must show lsp/examples/todo_server.rs as it is"
        );
        assert!(
            text.contains(&format!("in {lines} lines")),
            "{page} must state the example's {lines} lines"
        );
    }
}

/// The LSP guide's excerpt of `todo_server_threads` (its `main` on the blocking adapter) is
/// taken from the file as it is, and the rest of that file is `todo_server`'s definition:
/// the module it mounts is `todo_server.rs` itself, so no handler is written twice.
#[test]
fn the_lsp_guide_shows_the_threads_example_as_it_is() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let threads =
        std::fs::read_to_string(format!("{dir}/examples/todo_server_threads.rs")).unwrap();
    let guide = std::fs::read_to_string(format!("{dir}/../docs/lsp.md")).unwrap();
    let section = guide
        .split("## On threads")
        .nth(1)
        .expect("the guide's threads section");
    let excerpt = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the section's code");
    assert!(
        threads.contains(excerpt),
        "docs/lsp.md must show todo_server_threads.rs's main as it is:\n{excerpt}"
    );
    let code: Vec<&str> = threads
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .collect();
    assert_eq!(code[0], "#[path = \"todo_server.rs\"]", "{threads}");
    assert!(
        code.len() <= 8,
        "only a main beside the shared server: {threads}"
    );
}

/// The capabilities the example must declare, in `encoding`.
fn capabilities(encoding: &str) -> Value {
    json!({
        "positionEncoding": encoding,
        "textDocumentSync": {"openClose": true, "change": 2},
        "hoverProvider": true,
    })
}

fn initialize_takes_the_first_encoding_offered_and_declares_the_capabilities(example: &str) {
    let cases: [(Option<&[&str]>, &str); 6] = [
        (Some(&["utf-8", "utf-16", "utf-32"]), "utf-8"),
        (Some(&["utf-16", "utf-8", "utf-32"]), "utf-16"),
        (Some(&["utf-32", "utf-8"]), "utf-32"),
        // A name the server does not know is passed over.
        (Some(&["utf-7", "utf-32", "utf-8"]), "utf-32"),
        // None offered: UTF-16, as LSP 3.17 says.
        (Some(&[]), "utf-16"),
        (None, "utf-16"),
    ];
    for (offered, negotiated) in cases {
        let mut server = TodoServer::start(example);
        let result = server.initialize(offered);
        assert_eq!(
            result,
            json!({
                "capabilities": capabilities(negotiated),
                "serverInfo": {"name": "todo", "version": "1.0"},
            }),
            "offered {offered:?}"
        );
        server.shut_down(2);
    }
}

/// A range on one line, from `start` to `end` code units.
fn range(line: u32, start: u32, end: u32) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
}

/// The diagnostic of a `TODO` at `range`.
fn todo(range: Value) -> Value {
    json!({"range": range, "severity": 2, "source": "todo", "message": "TODO found"})
}

/// `textDocument/hover` at `line` (character 0): its params.
fn hover_at(line: u32) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": 0}})
}

fn hover_answer(value: &str) -> Value {
    json!({"contents": {"kind": "plaintext", "value": value}})
}

const OPENED: &str = "😀 TODO 𝄞TODO\r\n日本語 TODOTODO\r\n\r\nend 😀";

/// The positions the test needs, in one encoding's code units, worked out by hand:
/// 😀 and 𝄞 are 4 UTF-8 bytes, 2 UTF-16 units, 1 UTF-32 unit; 日, 本, 語 and ✓ are 3
/// bytes and 1 unit in UTF-16 and UTF-32.
struct Units {
    encoding: &'static str,
    /// Line 0 of `OPENED`, "😀 TODO 𝄞TODO": its TODOs.
    open_0: [(u32, u32); 2],
    /// Line 1, "日本語 TODOTODO": its TODOs (side by side, not overlapping).
    open_1: [(u32, u32); 2],
    /// After the edits, line 0 "😀 done ✓ 𝄞TODO": its TODO.
    changed_0: (u32, u32),
    /// Line 1 "日本語 TODO": its TODO.
    changed_1: (u32, u32),
    /// Line 3 "𝄞 TODOend 😀": its TODO.
    changed_3: (u32, u32),
    /// The end of "𝄞 TODO" (line 2 after the split, before the CRLF deletion).
    end_of_inserted: u32,
}

const UTF8: Units = Units {
    encoding: "utf-8",
    open_0: [(5, 9), (14, 18)],
    open_1: [(10, 14), (14, 18)],
    changed_0: (18, 22),
    changed_1: (10, 14),
    changed_3: (5, 9),
    end_of_inserted: 9,
};

const UTF16: Units = Units {
    encoding: "utf-16",
    open_0: [(3, 7), (10, 14)],
    open_1: [(4, 8), (8, 12)],
    changed_0: (12, 16),
    changed_1: (4, 8),
    changed_3: (3, 7),
    end_of_inserted: 7,
};

const UTF32: Units = Units {
    encoding: "utf-32",
    open_0: [(2, 6), (8, 12)],
    open_1: [(4, 8), (8, 12)],
    changed_0: (10, 14),
    changed_1: (4, 8),
    changed_3: (2, 6),
    end_of_inserted: 6,
};

/// The same hand-worked positions, counted again from the text by std's own encoders: the
/// table above has no typo.
#[test]
fn the_hand_worked_positions_agree_with_std() {
    fn units(s: &str, encoding: &str) -> u32 {
        let n = match encoding {
            "utf-8" => s.len(),
            "utf-16" => s.encode_utf16().count(),
            _ => s.chars().count(),
        };
        n as u32
    }
    fn todos(line: &str, encoding: &str) -> Vec<(u32, u32)> {
        let at = |(byte, _): (usize, &str)| {
            let start = units(&line[..byte], encoding);
            (start, start + 4)
        };
        line.match_indices("TODO").map(at).collect()
    }
    for u in [UTF8, UTF16, UTF32] {
        let e = u.encoding;
        assert_eq!(todos("😀 TODO 𝄞TODO", e), u.open_0, "{e}");
        assert_eq!(todos("日本語 TODOTODO", e), u.open_1, "{e}");
        assert_eq!(todos("😀 done ✓ 𝄞TODO", e), [u.changed_0], "{e}");
        assert_eq!(todos("日本語 TODO", e), [u.changed_1], "{e}");
        assert_eq!(todos("𝄞 TODOend 😀", e), [u.changed_3], "{e}");
        assert_eq!(units("𝄞 TODO", e), u.end_of_inserted, "{e}");
    }
}

/// One `didChange` of four edits, each applied to the text the one before left:
/// 1. "done ✓" replaces the first TODO of line 0;
/// 2. "𝄞 TODO" goes into the empty line 2;
/// 3. a CRLF splits line 1 between its TODOs (the inserted line is now line 3);
/// 4. the CRLF at the end of line 3 is deleted, joining it with "end 😀".
fn the_edits(u: &Units) -> Value {
    let [(todo_start, todo_end), _] = u.open_0;
    let [(_, between), _] = u.open_1;
    let eol = u.end_of_inserted;
    json!({
        "textDocument": {"uri": URI, "version": 2},
        "contentChanges": [
            {"range": range(0, todo_start, todo_end), "text": "done ✓"},
            {"range": range(2, 0, 0), "text": "𝄞 TODO"},
            {"range": range(1, between, between), "text": "\r\n"},
            {"range": {"start": {"line": 3, "character": eol},
                       "end": {"line": 4, "character": 0}}, "text": ""},
        ],
    })
}

fn documents_diagnostics_and_hovers_in_each_encoding(example: &str) {
    for u in [UTF8, UTF16, UTF32] {
        let mut server = TodoServer::start(example);
        let offered = [u.encoding, "utf-16"];
        let result = server.initialize(Some(&offered));
        assert_eq!(result["capabilities"], capabilities(u.encoding));

        server.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
                   "text": OPENED}}),
        );
        let [a, b] = u.open_0;
        let [c, d] = u.open_1;
        let opened = json!({"uri": URI, "version": 1, "diagnostics": [
            todo(range(0, a.0, a.1)), todo(range(0, b.0, b.1)),
            todo(range(1, c.0, c.1)), todo(range(1, d.0, d.1)),
        ]});
        assert_eq!(
            server.notification("textDocument/publishDiagnostics"),
            opened,
            "{}",
            u.encoding
        );
        server.request(10, "textDocument/hover", hover_at(1));
        assert_eq!(
            server.result(10),
            hover_answer("version 1: 日本語 TODOTODO")
        );

        server.notify("textDocument/didChange", the_edits(&u));
        // Sent at once: the hovers wait for the change's analysis, and see its text.
        for (id, line) in [(11, 0), (12, 1), (13, 2), (14, 3), (15, 4), (16, 99)] {
            server.request(id, "textDocument/hover", hover_at(line));
        }
        let (e, f, g) = (u.changed_0, u.changed_1, u.changed_3);
        let changed = json!({"uri": URI, "version": 2, "diagnostics": [
            todo(range(0, e.0, e.1)), todo(range(1, f.0, f.1)),
            todo(range(2, 0, 4)), todo(range(3, g.0, g.1)),
        ]});
        // The analysis runs beside the hovers: its diagnostics come among their answers.
        let (published, answers) = server.answers_and_diagnostics(&[11, 12, 13, 14, 15, 16], 1);
        assert_eq!(published, [changed], "{}", u.encoding);
        let lines = ["😀 done ✓ 𝄞TODO", "日本語 TODO", "TODO", "𝄞 TODOend 😀"];
        let mut expected: Vec<Value> = lines
            .iter()
            .map(|line| hover_answer(&format!("version 2: {line}")))
            .collect();
        // Past the last line (4 lines: 0 to 3): null.
        expected.extend([Value::Null, Value::Null]);
        assert_eq!(answers, expected, "{}", u.encoding);
        server.shut_down(20);
    }
}

fn a_hover_sees_the_changes_sent_before_it_and_none_after(example: &str) {
    let mut server = TodoServer::start(example);
    server.initialize(Some(&["utf-16"]));
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
               "text": "v1"}}),
    );
    // Written at once: each hover answers for the text as it was when it arrived, as a
    // position in it means: not the next version. The analyses of the versions that were
    // superseded within the debounce are cancelled: what is published is the last version's
    // diagnostics, and never an older version's after a newer one's.
    let versions = 2..=6;
    for version in versions.clone() {
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version},
                   "contentChanges": [{"range": range(0, 0, 2), "text": format!("v{version}")}]}),
        );
        server.request(i64::from(version), "textDocument/hover", hover_at(0));
    }
    let mut hovers = Vec::new();
    let mut published = Vec::new();
    while hovers.len() < 5 || published.last() != Some(&6) {
        let message = server.next("diagnostics and hovers");
        if message.get("id").is_some() {
            hovers.push((message["id"].clone(), message["result"].clone()));
        } else {
            assert_eq!(message["method"], "textDocument/publishDiagnostics");
            assert_eq!(message["params"]["diagnostics"], json!([]));
            published.push(message["params"]["version"].as_i64().unwrap());
        }
    }
    assert!(published.windows(2).all(|w| w[0] < w[1]), "{published:?}");
    hovers.sort_by_key(|(id, _)| id.as_i64());
    let expected: Vec<_> = versions
        .map(|v| (json!(v), hover_answer(&format!("version {v}: v{v}"))))
        .collect();
    assert_eq!(hovers, expected);
    server.shut_down(20);
}

/// A file past the default 8 MiB frame limit (`Limits::max_frame_bytes`): its didOpen is
/// refused unread (`-32004`, id null, and a warning in the editor's log), the document is not open (a hover on it answers
/// null, a change to it is a warning), and the server goes on.
fn a_document_past_the_frame_limit_is_refused_and_the_server_goes_on(example: &str) {
    let mut server = TodoServer::start(example);
    server.initialize(Some(&["utf-16"]));
    let big = "TODO ".repeat(9 * 1024 * 1024 / 5);
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
               "text": big}}),
    );
    let refused = server.next("the refusal of the didOpen");
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    // And told in the editor's log (and on stderr).
    let told = server.notification("window/logMessage");
    assert_eq!(told["type"], 2, "a warning: {told}");
    assert!(
        told["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the limit"),
        "{told}"
    );
    server.request(2, "textDocument/hover", hover_at(0));
    assert_eq!(server.result(2), Value::Null);
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": [{"range": range(0, 0, 0), "text": "x"}]}),
    );
    let warning = server.notification("window/logMessage");
    assert_eq!(warning["type"], 2, "a warning: {warning}");
    // A file within the limit still opens.
    let small = "file:///tmp/sansrpc-todo/small.txt";
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": small, "languageId": "plaintext", "version": 1,
               "text": "TODO"}}),
    );
    let published = server.notification("textDocument/publishDiagnostics");
    assert_eq!(published["uri"], small);
    assert_eq!(published["diagnostics"], json!([todo(range(0, 0, 4))]));
    server.shut_down(3);
}

/// What the end-of-input tests write before closing stdin: initialize, and once it is
/// answered (an editor sends nothing before, as LSP says: on threads its answer comes from
/// a worker, and may follow the diagnostics of a didOpen sent right behind it),
/// initialized, a didOpen without TODO, a didChange adding two, a hover; `shutdown` when
/// asked.
fn write_session(server: &mut TodoServer, shutdown: bool) {
    server.request(
        1,
        "initialize",
        json!({"processId": null, "rootUri": null,
               "capabilities": {"general": {"positionEncodings": ["utf-16"]}}}),
    );
    assert_eq!(server.result(1)["capabilities"], capabilities("utf-16"));
    server.notify("initialized", json!({}));
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
               "text": "😀 first\r\nsecond"}}),
    );
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": [{"range": range(0, 3, 3), "text": "TODO 𝄞 TODO "}]}),
    );
    server.request(2, "textDocument/hover", hover_at(0));
    if shutdown {
        server.request(3, "shutdown", Value::Null);
    }
    server.close_stdin();
}

/// What a server writes back for `write_session`: the hover's answer (and `shutdown`'s,
/// when it was sent), and perhaps diagnostics: the analyses run beside the connection,
/// which does not wait for them at the end of its input, but whatever is published is
/// right for its version and never older than what came before it.
fn read_session(server: &mut TodoServer, shutdown: bool) {
    let opened = json!({"uri": URI, "version": 1, "diagnostics": []});
    // "😀 TODO 𝄞 TODO first": 😀 is two UTF-16 units, 𝄞 too.
    let changed = json!({"uri": URI, "version": 2, "diagnostics": [
        todo(range(0, 3, 7)), todo(range(0, 11, 15)),
    ]});
    let answer = hover_answer("version 2: 😀 TODO 𝄞 TODO first");
    let ids: &[i64] = if shutdown { &[2, 3] } else { &[2] };
    let (published, results) = server.answers_and_diagnostics(ids, 0);
    assert!(
        published.is_empty() || published == [changed.clone()] || published == [opened, changed],
        "{published:?}"
    );
    assert_eq!(results[0], answer);
    if shutdown {
        assert_eq!(results[1], Value::Null, "shutdown's answer");
    }
}

/// A publication of version 2's diagnostics, late or not.
fn version_2(frame: &Value) -> bool {
    frame["method"] == "textDocument/publishDiagnostics" && frame["params"]["version"] == 2
}

fn at_the_end_of_input_everything_sent_is_answered_in_order_and_shutdown_exits_0(example: &str) {
    let mut server = TodoServer::start(example);
    write_session(&mut server, true);
    read_session(&mut server, true);
    assert_eq!(server.exit_code_after(version_2), Some(0));
}

fn at_the_end_of_input_without_shutdown_everything_is_answered_and_it_exits_1(example: &str) {
    let mut server = TodoServer::start(example);
    write_session(&mut server, false);
    read_session(&mut server, false);
    assert_eq!(server.exit_code_after(version_2), Some(1));
}

/// `"params": null` on `initialized`, `shutdown` and `exit`, as Zed, Emacs's eglot, LSP4IJ
/// and Atom send them: read as absent, so `shutdown` is answered `null` and `exit` ends
/// the process with status 0 at once, its stdin still open.
fn null_params_on_initialized_shutdown_and_exit_end_with_status_0(example: &str) {
    let mut server = TodoServer::start(example);
    server.request(
        1,
        "initialize",
        json!({"processId": null, "capabilities": {}}),
    );
    server.result(1);
    server.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": null}));
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}));
    assert_eq!(server.result(2), Value::Null, "shutdown answered");
    server.send(json!({"jsonrpc": "2.0", "method": "exit", "params": null}));
    // Stdin stays open: only `exit` can end the process.
    assert_eq!(server.exit_code(), Some(0));
}

/// Bytes that are no frame (stray output before a header) make the connection drop them:
/// told on stderr, and, once the editor initialized, in its log (`window/logMessage`), at
/// most five in ten seconds (the rest counted); the frames after them are read as ever.
fn dropped_frames_reach_stderr_and_the_editors_log_rate_limited(example: &str) {
    let mut server = TodoServer::start(example);
    server.write_raw(b"stray output\r\n");
    // Before initialize: stderr only; the answer to initialize is the next frame.
    server.initialize(Some(&["utf-16"]));
    let stray: String = (1..=8)
        .map(|n| {
            let body = json!({"jsonrpc": "2.0", "id": 100 + n, "method": "textDocument/hover",
                              "params": hover_at(0)});
            let body = body.to_string();
            format!("junk {n}\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        })
        .collect();
    server.write_raw(stray.as_bytes());
    server.request(20, "shutdown", Value::Null);
    // The warnings come among the answers, in an order of the driver's.
    let (mut told, mut answered) = (Vec::new(), 0);
    let is_log = |message: &Value| message["method"] == "window/logMessage";
    while answered < 9 {
        let message = server.next("hovers, shutdown and log messages");
        if is_log(&message) {
            assert_eq!(message["params"]["type"], 2, "a warning: {message}");
            told.push(message["params"]["message"].as_str().unwrap().to_owned());
        } else {
            // The hovers on a document not open, and shutdown: all `null`.
            assert_eq!(message["result"], Value::Null, "{message}");
            answered += 1;
        }
    }
    server.notify("exit", Value::Null);
    server.close_stdin();
    let late = std::sync::Mutex::new(Vec::new());
    let status = server.exit_code_after(|message| {
        let log = is_log(message);
        if log {
            late.lock()
                .unwrap()
                .push(message["params"]["message"].to_string());
        }
        log
    });
    assert_eq!(status, Some(0));
    told.extend(late.into_inner().unwrap());
    // Written at once, read within far less than the ten seconds of the window: of the
    // nine dropped (one before initialize, told on stderr only), five told at most.
    assert!((1..=4).contains(&told.len()), "{told:?}");
    assert!(told[0].contains("a frame was dropped"), "{told:?}");
    let stderr = server.stderr.lock().unwrap().clone();
    let lines = stderr.matches("sansrpc-lsp: a frame was dropped").count();
    assert_eq!(lines, told.len() + 1, "{stderr}");
}

/// Every scenario above, against each example: `todo_server` (tokio) and
/// `todo_server_threads` (the same server on the blocking adapter's threads).
macro_rules! on_each_example {
    ($($name:ident),* $(,)?) => {
        mod tokio {
            $(#[test]
            fn $name() {
                super::$name("todo_server");
            })*
        }
        mod threads {
            $(#[test]
            fn $name() {
                super::$name("todo_server_threads");
            })*
        }
    };
}

on_each_example!(
    initialize_takes_the_first_encoding_offered_and_declares_the_capabilities,
    documents_diagnostics_and_hovers_in_each_encoding,
    a_hover_sees_the_changes_sent_before_it_and_none_after,
    a_document_past_the_frame_limit_is_refused_and_the_server_goes_on,
    at_the_end_of_input_everything_sent_is_answered_in_order_and_shutdown_exits_0,
    at_the_end_of_input_without_shutdown_everything_is_answered_and_it_exits_1,
    null_params_on_initialized_shutdown_and_exit_end_with_status_0,
    dropped_frames_reach_stderr_and_the_editors_log_rate_limited
);
