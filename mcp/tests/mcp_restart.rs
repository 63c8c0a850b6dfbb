//! Resumability across a server restart: the `everything_server` example keeps its SSE
//! events in a redb file (`MCP_EVENT_STORE`). A client whose `slow` call's stream drops
//! reads the rest by resuming it; then the server is killed (SIGKILL: no clean shutdown)
//! and started again on the same file, and the same resumption gets the same events, byte
//! for byte, from the new process, to that session only. The session itself is gone: its
//! next POST is 404 (the client starts a new one).
#![cfg(not(target_arch = "wasm32"))]

#[path = "../../tests/support/interop.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::Running;

/// The server on a free port with its events in `store`; its address.
fn server(store: &std::path::Path) -> (Running, String) {
    let store = store.to_str().unwrap();
    let env = [("PORT", "0"), ("MCP_EVENT_STORE", store)];
    let (server, line) = support::start_example("sansrpc-mcp", "everything_server", &env);
    let url = line
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{line:?}"));
    (server, url.trim_end_matches("/mcp").to_owned())
}

/// A response: status, header fields (names in lower case), and the reader of its body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: BufReader<TcpStream>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A body of `content-length` bytes.
    fn text(mut self) -> String {
        let len: usize = self.header("content-length").unwrap().parse().unwrap();
        let mut body = vec![0; len];
        self.body.read_exact(&mut body).unwrap();
        String::from_utf8(body).unwrap()
    }

    /// The next SSE event of a chunked event stream with a `data` line: its id and data;
    /// `None` at the end of the stream. (The server writes each event as one chunk.)
    fn event(&mut self) -> Option<(String, String)> {
        let (mut id, mut data) = (String::new(), None);
        loop {
            let mut line = String::new();
            assert!(self.body.read_line(&mut line).unwrap() > 0, "cut short");
            let line = line.trim_end_matches(['\r', '\n']);
            if line == "0" {
                return None;
            }
            if let Some(v) = line.strip_prefix("id: ") {
                id = v.to_owned();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = Some(v.to_owned());
            } else if line.is_empty() {
                if let Some(data) = data.take().filter(|d| !d.is_empty()) {
                    return Some((id, data));
                }
            }
        }
    }
}

/// Sends one request on a new connection; reads the head of its response.
fn request(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut wire = format!("{method} /mcp HTTP/1.1\r\nhost: {addr}\r\n");
    wire.push_str("accept: application/json, text/event-stream\r\n");
    for (name, value) in headers {
        wire.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        wire.push_str("content-type: application/json\r\n");
        wire.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    wire.push_str("\r\n");
    wire.push_str(body);
    socket.write_all(wire.as_bytes()).unwrap();
    let mut body = BufReader::new(socket);
    let mut line = String::new();
    body.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        body.read_line(&mut line).unwrap();
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Response {
        status,
        headers,
        body,
    }
}

const VERSION: (&str, &str) = ("mcp-protocol-version", "2025-11-25");

/// Resumes the stream of `last` in `session`: every event it gives, to its end.
fn resume(addr: &str, session: &str, last: &str) -> Result<Vec<(String, String)>, u16> {
    let headers = [
        ("mcp-session-id", session),
        ("last-event-id", last),
        VERSION,
    ];
    let mut stream = request(addr, "GET", &headers, "");
    if stream.status != 200 {
        return Err(stream.status);
    }
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    Ok(std::iter::from_fn(|| stream.event()).collect())
}

#[test]
fn a_stream_is_resumed_after_the_server_is_killed_and_started_again() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mcp-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("events.redb");

    let (first, addr) = server(&store);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"restart","version":"1"}}}"#;
    let answer = request(&addr, "POST", &[VERSION], init);
    assert_eq!(answer.status, 200);
    let session = answer.header("mcp-session-id").unwrap().to_owned();
    assert!(answer.text().contains("protocolVersion"));
    let sid = ("mcp-session-id", session.as_str());
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(
        request(&addr, "POST", &[sid, VERSION], initialized).status,
        202
    );

    // A call whose stream drops after its second progress notification.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":1},"_meta":{"progressToken":"p"}}}"#;
    let mut stream = request(&addr, "POST", &[sid, VERSION], call);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(stream.event().expect("progress"));
    }
    assert!(seen
        .iter()
        .all(|(_, d)| d.contains("notifications/progress")));
    drop(stream);
    let last = seen[1].0.clone();

    // Resumed on the same server: the rest, to the answer.
    let rest = resume(&addr, &session, &last).unwrap();
    let (id, result) = rest.last().unwrap();
    assert!(
        result.contains(r#""id":2"#) && result.contains("slept 1 s"),
        "{rest:?}"
    );
    assert_eq!(rest.len(), 9, "progress 3 to 10, then the answer: {rest:?}");
    assert!(!id.is_empty());

    // Killed, and started again on the same file.
    drop(first);
    let (_second, addr) = server(&store);
    assert_eq!(
        resume(&addr, &session, &last).unwrap(),
        rest,
        "the same events, from the store"
    );
    // From the answer's own id: nothing more.
    assert_eq!(resume(&addr, &session, id).unwrap(), Vec::new());
    // Another session id gets nothing of it.
    assert_eq!(resume(&addr, &"0".repeat(32), &last), Err(404));
    // The session is gone: its next POST is 404.
    assert_eq!(request(&addr, "POST", &[sid, VERSION], call).status, 404);
    let _ = std::fs::remove_dir_all(&dir);
}
