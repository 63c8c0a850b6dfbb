use core::time::Duration;
use std::borrow::ToOwned;
use std::string::String;
use std::string::ToString;
use std::vec::Vec;
use std::{format, vec};

use super::*;
use sansrpc::codec::http::{HttpStep, RequestDecoder};

/// A head and body as a client would send them.
fn request(method: &str, headers: &[(&str, &str)], body: &str) -> (Head, Vec<u8>) {
    let mut wire = format!("{method} /mcp HTTP/1.1\r\nhost: 127.0.0.1:3000\r\n");
    for (name, value) in headers {
        wire.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        wire.push_str("content-type: application/json\r\n");
        wire.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    wire.push_str("\r\n");
    let mut bytes = wire.into_bytes();
    let mut decoder = RequestDecoder::keeping_fields(1 << 20);
    let Ok(HttpStep::Head(_, head)) = decoder.decode(&mut bytes) else {
        panic!("a head")
    };
    (head, body.as_bytes().to_vec())
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// Not random, but never the same twice (a server refuses to reuse a session id).
fn entropy(bytes: &mut [u8]) {
    static NEXT: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
    let n = NEXT
        .fetch_add(1, core::sync::atomic::Ordering::Relaxed)
        .to_le_bytes();
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(17) ^ n[i % 4];
    }
}

fn post(server: &mut Endpoint, headers: &[(&str, &str)], body: &str, now: Instant) -> Verdict {
    let mut all = vec![ACCEPT];
    all.extend_from_slice(headers);
    let (head, body) = request("POST", &all, body);
    server.handle_request(&head, &body, Authorized::NotRequired, now, &mut entropy)
}

/// Everything `stream` writes now, as text, and whether it ended.
fn drain(server: &mut Endpoint, stream: u64) -> (String, Step) {
    let mut out = Vec::new();
    let mut step;
    loop {
        step = server.poll_stream(stream, &mut out);
        if step != Step::Data {
            break;
        }
    }
    (String::from_utf8(out).unwrap(), step)
}

/// Progress notification `n` of token 1.
fn progress(n: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":{n}}}}}"#
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// Opens a session; its id.
fn session(server: &mut Endpoint, now: Instant) -> (u64, String) {
    let Verdict::Open {
        session,
        stream,
        new_session: true,
    } = post(server, &[], INITIALIZE, now)
    else {
        panic!("a new session")
    };
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    server.handle_outgoing(session, result.as_bytes(), stream, now);
    let (text, step) = drain(server, stream);
    assert_eq!(step, Step::End);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("content-type: application/json\r\n"));
    assert!(text.ends_with(result), "{text}");
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .to_owned();
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    (session, id)
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Finishes session `id`'s handshake with `notifications/initialized`.
fn initialized(server: &mut Endpoint, id: &str, now: Instant) {
    let verdict = post(server, &[("mcp-session-id", id)], INITIALIZED, now);
    assert!(
        matches!(&verdict, Verdict::Deliver { response, .. } if response.status == 202),
        "{verdict:?}"
    );
}

/// The sessions the machine told the adapter to stop.
fn ended(server: &mut Endpoint) -> Vec<u64> {
    let mut ended = Vec::new();
    while let Some(Event::SessionEnded { session }) = server.poll_event() {
        ended.push(session);
    }
    ended
}

#[test]
fn a_session_answers_json_then_sse_when_progress_comes_first() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let (key, id) = session(&mut server, now);
    let version = ("mcp-protocol-version", "2025-11-25");
    let sid = ("mcp-session-id", id.as_str());
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let Verdict::Deliver { session, response } = post(&mut server, &[sid, version], note, now)
    else {
        panic!()
    };
    assert_eq!((session, response.status), (key, 202));
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":7}}}"#;
    let Verdict::Open {
        stream,
        new_session: false,
        ..
    } = post(&mut server, &[sid, version], call, now)
    else {
        panic!()
    };
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#;
    server.handle_outgoing(key, progress.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::Wait);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(text.contains("content-type: text/event-stream\r\n"));
    assert!(text.contains("transfer-encoding: chunked\r\n"));
    assert!(
        text.contains(&format!("id: {stream}.0\nretry: 1000\ndata: \n\n")),
        "priming: {text}"
    );
    assert!(
        text.contains(&format!(
            "id: {stream}.1\nevent: message\ndata: {progress}\n\n"
        )) || text.contains(&format!(
            "event: message\nid: {stream}.1\ndata: {progress}\n\n"
        )),
        "{text}"
    );
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    server.handle_outgoing(key, answer.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(
        text.contains(answer) && text.ends_with("0\r\n\r\n"),
        "{text}"
    );
}

#[test]
fn session_rules_missing_unknown_and_deleted() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let Verdict::Respond(r) = post(&mut server, &[], list, now) else {
        panic!()
    };
    assert_eq!(r.status, 400);
    let Verdict::Respond(r) = post(&mut server, &[("mcp-session-id", "nope")], list, now) else {
        panic!()
    };
    assert_eq!(r.status, 404);
    let (key, id) = session(&mut server, now);
    let Verdict::Respond(r) = post(
        &mut server,
        &[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "1999-01-01"),
        ],
        list,
        now,
    ) else {
        panic!()
    };
    assert_eq!(r.status, 400, "an unsupported version");
    let (head, _) = request("DELETE", &[("mcp-session-id", &id)], "");
    let verdict = server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy);
    assert!(matches!(verdict, Verdict::Ended { session, .. } if session == key));
    let Verdict::Respond(r) = post(&mut server, &[("mcp-session-id", &id)], list, now) else {
        panic!()
    };
    assert_eq!(r.status, 404, "a terminated session");
    assert_eq!(server.sessions(), 0);
}

#[test]
fn the_session_and_stream_tables_give_their_room_back_after_a_burst() {
    let mut server = Endpoint::new(Config {
        max_sessions: 2_000,
        ..Config::default()
    });
    let now = Instant::ZERO;
    let ids: Vec<(u64, String)> = (0..1_000)
        .map(|_| {
            let (key, id) = session(&mut server, now);
            initialized(&mut server, &id, now);
            (key, id)
        })
        .collect();
    let full = server.sessions.capacity();
    assert!(full >= 1_000);
    for (key, id) in &ids[..990] {
        let (head, _) = request("DELETE", &[("mcp-session-id", id)], "");
        let verdict = server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy);
        assert!(matches!(verdict, Verdict::Ended { session, .. } if session == *key));
    }
    assert_eq!(server.sessions(), 10);
    // A table that held 1,000 sessions keeps room for few more than the 10 left.
    let kept = server.sessions.capacity();
    assert!(kept <= 64, "{kept} of {full} places kept for 10 sessions");
    assert!(
        server.streams.capacity() <= 64,
        "{}",
        server.streams.capacity()
    );
    // The 10 left still answer.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    for (key, id) in &ids[990..] {
        let verdict = post(&mut server, &[("mcp-session-id", id)], list, now);
        assert!(
            matches!(verdict, Verdict::Open { session, .. } if session == *key),
            "{verdict:?}"
        );
    }
}

#[test]
fn hosts_origins_methods_and_media_types() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let mut bytes = b"POST /mcp HTTP/1.1\r\nhost: evil.example.com\r\norigin: http://evil.example.com\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n".to_vec();
    let Ok(HttpStep::Head(_, head)) = RequestDecoder::keeping_fields(100).decode(&mut bytes) else {
        panic!()
    };
    let Verdict::Respond(r) =
        server.handle_request(&head, b"{}", Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 403);
    let Verdict::Respond(r) = post(
        &mut server,
        &[("origin", "http://evil.example.com")],
        INITIALIZE,
        now,
    ) else {
        panic!()
    };
    assert_eq!(r.status, 403);
    assert!(matches!(
        post(
            &mut server,
            &[("origin", "http://127.0.0.1:3000")],
            INITIALIZE,
            now
        ),
        Verdict::Open { .. }
    ));
    let (head, body) = request("POST", &[("accept", "application/json")], INITIALIZE);
    let Verdict::Respond(r) =
        server.handle_request(&head, &body, Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 406);
    let (head, _) = request("PUT", &[], "");
    let Verdict::Respond(r) =
        server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 405);
    let Verdict::Respond(r) = post(&mut server, &[], "{not json", now) else {
        panic!()
    };
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&r.body).contains("-32700"));
}

fn meta(version: &str) -> String {
    format!(
        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
    )
}

#[test]
fn stateless_header_rules_come_in_the_revisions_order() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let v = ("mcp-protocol-version", "2026-07-28");
    let discover = ("mcp-method", "server/discover");
    let code = |verdict: Verdict| match verdict {
        Verdict::Respond(r) => {
            let body = String::from_utf8(r.body).unwrap();
            let code = body
                .split("\"code\":")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .to_owned();
            (r.status, code)
        }
        other => panic!("{other:?}"),
    };
    let no_meta = r#"{"jsonrpc":"2.0","id":101,"method":"server/discover","params":{}}"#;
    assert_eq!(
        code(post(&mut server, &[v, discover], no_meta, now)),
        (400, "-32602".into())
    );
    let mismatch = format!(
        r#"{{"jsonrpc":"2.0","id":302,"method":"server/discover","params":{{{}}}}}"#,
        meta("v999.0.0")
    );
    assert_eq!(
        code(post(&mut server, &[v, discover], &mismatch, now)),
        (400, "-32020".into())
    );
    let unsupported = ("mcp-protocol-version", "v999.0.0");
    let (status, c) = code(post(&mut server, &[unsupported, discover], &mismatch, now));
    assert_eq!((status, c.as_str()), (400, "-32022"));
    let ok = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"add",{}}}}}"#,
        meta("2026-07-28")
    );
    let call = ("mcp-method", "tools/call");
    assert_eq!(
        code(post(&mut server, &[v, call], &ok, now)),
        (400, "-32020".into()),
        "no Mcp-Name"
    );
    assert_eq!(
        code(post(
            &mut server,
            &[v, call, ("mcp-name", "other")],
            &ok,
            now
        )),
        (400, "-32020".into())
    );
    assert_eq!(
        code(post(
            &mut server,
            &[v, ("mcp-method", "tools/list"), ("mcp-name", "add")],
            &ok,
            now
        )),
        (400, "-32020".into())
    );
    assert!(matches!(
        post(&mut server, &[v, call, ("mcp-name", "  add  ")], &ok, now),
        Verdict::Stateless { .. }
    ));
    assert!(matches!(
        post(
            &mut server,
            &[v, call, ("mcp-name", "=?base64?YWRk?=")],
            &ok,
            now
        ),
        Verdict::Stateless { .. }
    ));
}

#[test]
fn a_stateless_answer_is_json_with_404_for_an_unknown_method_and_sse_after_progress() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let v = ("mcp-protocol-version", "2026-07-28");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":601,"method":"unknown/method","params":{{{}}}}}"#,
        meta("2026-07-28")
    );
    let Verdict::Stateless { stream } = post(
        &mut server,
        &[v, ("mcp-method", "unknown/method")],
        &body,
        now,
    ) else {
        panic!()
    };
    let error =
        r#"{"jsonrpc":"2.0","id":601,"error":{"code":-32601,"message":"Method not found"}}"#;
    server.handle_stream_output(stream, error.as_bytes(), now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(
        text.starts_with("HTTP/1.1 404 Not Found\r\n") && text.ends_with(error),
        "{text}"
    );

    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{}}}}}"#,
        meta("2026-07-28")
    );
    let Verdict::Stateless { stream } =
        post(&mut server, &[v, ("mcp-method", "tools/list")], &body, now)
    else {
        panic!()
    };
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
    server.handle_stream_output(stream, progress.as_bytes(), now);
    let (text, _) = drain(&mut server, stream);
    assert!(
        text.contains("text/event-stream") && !text.contains("id: "),
        "no ids in 2026: {text}"
    );
    // The client goes away: the request is cancelled, nothing more goes out.
    assert_eq!(server.handle_stream_closed(stream, now), Closed::Cancel);
    assert_eq!(server.streams(), 0);
}

#[test]
fn a_dropped_stream_is_resumed_with_last_event_id_and_loses_nothing() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let (key, id) = session(&mut server, now);
    let sid = ("mcp-session-id", id.as_str());
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#;
    let Verdict::Open { stream, .. } = post(&mut server, &[sid], call, now) else {
        panic!()
    };
    let note = progress;
    server.handle_outgoing(key, note(1).as_bytes(), stream, now);
    let (first, _) = drain(&mut server, stream);
    assert!(first.contains(&note(1)));
    assert_eq!(server.handle_stream_closed(stream, now), Closed::Detached);
    server.handle_outgoing(key, note(2).as_bytes(), stream, now);
    server.handle_outgoing(key, note(3).as_bytes(), stream, now);
    let (head, _) = request(
        "GET",
        &[
            sid,
            ("accept", "text/event-stream"),
            ("last-event-id", &format!("{stream}.1")),
        ],
        "",
    );
    let Verdict::Listen { stream: resumed } =
        server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(resumed, stream);
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
    server.handle_outgoing(key, answer.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(!text.contains(&note(1)), "already seen");
    let (two, three, end) = (text.find(&note(2)), text.find(&note(3)), text.find(answer));
    assert!(two < three && three < end && two.is_some(), "{text}");
}

#[test]
fn messages_for_no_request_wait_for_the_get_stream() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let (key, id) = session(&mut server, now);
    let changed = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    server.handle_outgoing(key, changed.as_bytes(), 0, now);
    let (head, _) = request(
        "GET",
        &[("mcp-session-id", &id), ("accept", "text/event-stream")],
        "",
    );
    let Verdict::Listen { stream } =
        server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::Wait);
    assert!(
        text.contains("text/event-stream") && text.contains(changed),
        "{text}"
    );
    // One GET stream at a time.
    let Verdict::Respond(r) =
        server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 409);
}

#[test]
fn a_slow_answer_gets_an_sse_stream_with_keep_alives() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let (_, id) = session(&mut server, now);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#;
    let Verdict::Open { stream, .. } = post(&mut server, &[("mcp-session-id", &id)], call, now)
    else {
        panic!()
    };
    assert_eq!(drain(&mut server, stream).1, Step::Wait);
    let window = server.poll_timeout().unwrap();
    assert_eq!(window, now + Duration::from_secs(1));
    server.handle_timeout(window);
    let (text, _) = drain(&mut server, stream);
    assert!(
        text.contains("text/event-stream") && text.contains("retry: 1000"),
        "{text}"
    );
    let next = window + Duration::from_secs(15);
    server.handle_timeout(next);
    let (text, _) = drain(&mut server, stream);
    assert!(text.contains(": keep-alive"), "{text}");
}

#[test]
fn bounds_sessions_streams_and_unread_responses() {
    let mut server = Endpoint::new(Config {
        max_sessions: 2,
        max_streams_per_session: 2,
        max_stream_buffer: 4096,
        max_queued_events: 4,
        ..Config::default()
    });
    let now = Instant::ZERO;
    let (key, id) = session(&mut server, now);
    initialized(&mut server, &id, now);
    let (_, other) = session(&mut server, now);
    initialized(&mut server, &other, now);
    // Both initialized and busy: nothing to evict.
    let Verdict::Respond(r) = post(&mut server, &[], INITIALIZE, now) else {
        panic!()
    };
    assert_eq!(r.status, 503);
    let sid = ("mcp-session-id", id.as_str());
    let call = |n: u32| format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"slow"}}"#);
    let Verdict::Open { stream, .. } = post(&mut server, &[sid], &call(2), now) else {
        panic!()
    };
    assert!(matches!(
        post(&mut server, &[sid], &call(3), now),
        Verdict::Open { .. }
    ));
    let Verdict::Respond(r) = post(&mut server, &[sid], &call(4), now) else {
        panic!()
    };
    assert_eq!(r.status, 429);
    // Nobody reads `stream`'s response: past its buffer it is cut.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}"#;
    for _ in 0..100 {
        server.handle_outgoing(key, note.as_bytes(), stream, now);
    }
    let mut out = Vec::new();
    assert_eq!(server.poll_stream(stream, &mut out), Step::Abort);
    assert!(out.is_empty());
    // Waiting for a GET stream: at most four.
    for _ in 0..10 {
        server.handle_outgoing(key, note.as_bytes(), 0, now);
    }
    assert_eq!(server.sessions.get(&key).unwrap().waiting.len(), 4);
}

/// A server that asks every request for a token of `https://auth.example.com`.
fn protected() -> Endpoint {
    Endpoint::new(Config {
        auth: Some(Auth::new(
            "http://127.0.0.1:3000/mcp",
            "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp",
            "https://auth.example.com",
        )),
        ..Config::default()
    })
}

#[test]
fn tokens_and_the_protected_resource_metadata() {
    let mut server = protected();
    let now = Instant::ZERO;
    let (head, body) = request("POST", &[ACCEPT], INITIALIZE);
    let Verdict::Respond(r) =
        server.handle_request(&head, &body, Authorized::Missing, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 401);
    assert_eq!(
        r.headers,
        [
            ("content-type", String::from("application/json")),
            (
                "www-authenticate",
                String::from(
                    r#"Bearer resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp""#
                )
            ),
        ]
    );
    let Verdict::Respond(r) = server.handle_request(
        &head,
        &body,
        Authorized::InsufficientScope("tools:call".into()),
        now,
        &mut entropy,
    ) else {
        panic!()
    };
    assert_eq!(r.status, 403);
    assert!(r.headers[1]
        .1
        .contains(r#"error="insufficient_scope", scope="tools:call""#));
    assert!(matches!(
        server.handle_request(&head, &body, Authorized::Valid, now, &mut entropy),
        Verdict::Open { .. }
    ));
    let mut wire =
        b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nhost: 127.0.0.1:3000\r\n\r\n"
            .to_vec();
    let Ok(HttpStep::Head(_, head)) = RequestDecoder::keeping_fields(100).decode(&mut wire) else {
        panic!()
    };
    let Verdict::Respond(r) =
        server.handle_request(&head, &[], Authorized::Missing, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 200);
    assert_eq!(
        String::from_utf8(r.body).unwrap(),
        r#"{"resource":"http://127.0.0.1:3000/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"]}"#
    );
}

/// SEP-2243: a tool argument declared as mirrored in an `Mcp-Param-` header must agree with
/// it (plain or `=?base64?…?=`); a missing, undecodable or different header is 400 with
/// `-32020`, and other tools are not checked.
#[test]
fn arguments_mirrored_in_headers_must_agree() {
    let config = Config {
        param_headers: vec![ParamHeader::new("weather", "Region", "region")],
        ..Config::default()
    };
    let mut server = Endpoint::new(config);
    let now = Instant::ZERO;
    let call = |tool: &str, region: Option<&str>| {
        let args = region.map_or(String::new(), |r| format!(r#""region":"{r}""#));
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"{tool}","arguments":{{{args}}},{}}}}}"#,
            meta("2026-07-28")
        )
    };
    let mut send = |tool: &str, region: Option<&str>, header: Option<&str>| {
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ];
        if let Some(h) = header {
            headers.push(("mcp-param-region", h));
        }
        match post(&mut server, &headers, &call(tool, region), now) {
            Verdict::Stateless { .. } => None,
            Verdict::Respond(r) => {
                let body = String::from_utf8(r.body).unwrap();
                assert!(body.contains("\"code\":-32020"), "{body}");
                Some(r.status)
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(send("weather", Some("Hello"), Some("Hello")), None);
    assert_eq!(
        send("weather", Some("Hello"), Some("=?base64?SGVsbG8=?=")),
        None
    );
    assert_eq!(
        send("weather", Some("SGVsbG8="), Some("SGVsbG8=")),
        None,
        "no wrapper: literal"
    );
    assert_eq!(send("weather", None, None), None, "neither");
    assert_eq!(
        send("weather", Some("Hello"), Some("=?base64?SGVsbG8?=")),
        Some(400)
    );
    assert_eq!(
        send("weather", Some("Hello"), Some("=?base64?SGVs!!!bG8=?=")),
        Some(400)
    );
    assert_eq!(send("weather", Some("Hello"), Some("Bye")), Some(400));
    assert_eq!(
        send("weather", Some("test-value"), None),
        Some(400),
        "header missing"
    );
    assert_eq!(
        send("weather", None, Some("Hello")),
        Some(400),
        "no argument"
    );
    assert_eq!(
        send("other", Some("x"), None),
        None,
        "another tool is not checked"
    );
}

/// A store shared between two servers, standing for a durable one across a restart: the
/// memory store's events plus the owners and the last stream a durable store keeps.
#[derive(Clone)]
struct Kept(std::sync::Arc<std::sync::Mutex<Durable>>);

/// The events, and the owner of each stream.
type Durable = (MemoryEventStore, BTreeMap<u64, Vec<u8>>);

impl Kept {
    fn with<R>(&self, f: impl FnOnce(&mut Durable) -> R) -> R {
        f(&mut self.0.lock().unwrap())
    }
}

impl Default for Kept {
    fn default() -> Self {
        let events = MemoryEventStore::new(1 << 20, Duration::from_secs(600));
        Kept(std::sync::Arc::new(std::sync::Mutex::new((
            events,
            BTreeMap::new(),
        ))))
    }
}

impl EventStore for Kept {
    fn append(&mut self, stream: u64, seq: u64, event: &[u8], now: Instant) {
        self.with(|(m, _)| m.append(stream, seq, event, now))
    }
    fn replay(&mut self, stream: u64, after: u64, each: &mut dyn FnMut(u64, &[u8])) -> bool {
        self.with(|(m, _)| m.replay(stream, after, each))
    }
    fn remove(&mut self, stream: u64) {
        self.with(|(m, o)| {
            m.remove(stream);
            o.remove(&stream);
        })
    }
    fn expire(&mut self, now: Instant) {
        self.with(|(m, _)| m.expire(now))
    }
    fn owner(&self, stream: u64) -> Option<Vec<u8>> {
        self.with(|(_, o)| o.get(&stream).cloned())
    }
    fn set_owner(&mut self, stream: u64, owner: &[u8]) {
        self.with(|(_, o)| o.insert(stream, owner.to_vec()));
    }
    fn last_stream(&self) -> u64 {
        self.with(|(_, o)| o.keys().next_back().copied().unwrap_or(0))
    }
}

#[test]
fn after_a_restart_a_durable_store_replays_what_a_stream_missed_to_its_session_only() {
    let kept = Kept::default();
    let now = Instant::ZERO;
    let mut before = Endpoint::with_store(Config::default(), Box::new(kept.clone()));
    let (key, id) = session(&mut before, now);
    let sid = ("mcp-session-id", id.as_str());
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}"#;
    let Verdict::Open { stream, .. } = post(&mut before, &[sid], call, now) else {
        panic!()
    };
    let note = progress;
    before.handle_outgoing(key, note(1).as_bytes(), stream, now);
    let (seen, _) = drain(&mut before, stream);
    assert!(seen.contains(&note(1)));
    // The connection drops; the answer comes; then the server goes down.
    assert_eq!(before.handle_stream_closed(stream, now), Closed::Detached);
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
    before.handle_outgoing(key, note(2).as_bytes(), stream, now);
    before.handle_outgoing(key, answer.as_bytes(), stream, now);
    before.flush_store();
    drop(before);

    let mut after = Endpoint::with_store(Config::default(), Box::new(kept.clone()));
    let get = |server: &mut Endpoint, session: &str, last: &str| {
        let (head, _) = request(
            "GET",
            &[
                ("mcp-session-id", session),
                ("accept", "text/event-stream"),
                ("last-event-id", last),
            ],
            "",
        );
        server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy)
    };
    // Another client (another session id) gets nothing of it.
    let Verdict::Respond(refused) = get(&mut after, &"0".repeat(32), &format!("{stream}.1")) else {
        panic!()
    };
    assert_eq!(refused.status, 404);
    let Verdict::Listen { stream: replay } = get(&mut after, &id, &format!("{stream}.1")) else {
        panic!()
    };
    assert!(
        replay > stream,
        "new streams are numbered after the kept ones"
    );
    let (text, step) = drain(&mut after, replay);
    assert_eq!(step, Step::End);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains("content-type: text/event-stream\r\n"));
    assert!(!text.contains(&note(1)), "already seen: {text}");
    let (two, end) = (text.find(&note(2)), text.find(answer));
    assert!(two.is_some() && two < end, "{text}");
    assert!(
        text.contains(&format!("id: {stream}.3\nevent: message\ndata: {answer}")),
        "the old ids, to resume again: {text}"
    );
    assert!(text.ends_with("0\r\n\r\n"), "it ends: {text}");
    assert_eq!(after.streams(), 0, "nothing stays");
    // The session is gone: its next POST is 404 (the client starts a new one).
    let Verdict::Respond(gone) = post(&mut after, &[sid], call, now) else {
        panic!()
    };
    assert_eq!(gone.status, 404);
    // Resuming again from the answer's id gives the rest: nothing.
    let Verdict::Listen { stream: again } = get(&mut after, &id, &format!("{stream}.3")) else {
        panic!()
    };
    let (text, step) = drain(&mut after, again);
    assert_eq!(step, Step::End);
    assert!(!text.contains("data: {"), "{text}");
}

/// SEP-2243: a number mirrored in a header compares as a number: `42.0` in the body and
/// `42` in the header agree (the form a client sends), `43` does not, nor does text.
#[test]
fn a_mirrored_number_compares_as_a_number() {
    let config = Config {
        param_headers: vec![ParamHeader::new("queue", "Priority", "priority")],
        ..Config::default()
    };
    let mut server = Endpoint::new(config);
    let mut send = |value: &str, header: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"queue","arguments":{{"priority":{value}}},{}}}}}"#,
            meta("2026-07-28")
        );
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "queue"),
            ("mcp-param-priority", header),
        ];
        match post(&mut server, &headers, &body, Instant::ZERO) {
            Verdict::Stateless { .. } => 200,
            Verdict::Respond(r) => r.status,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(send("42", "42"), 200);
    assert_eq!(send("42.0", "42"), 200);
    assert_eq!(send("4.2e1", "42"), 200);
    assert_eq!(send("42", "43"), 400);
    assert_eq!(send("42", "forty-two"), 400);
    assert_eq!(send(r#""42.0""#, "42"), 400, "a string compares as text");
}

/// The ids of a body's calls, as the machine read them, for a transport that records per
/// call what its handler sees: calls only (not notifications), in order, kinds kept;
/// nothing after a request with no body.
#[test]
fn the_ids_of_a_bodys_calls_are_read_once_by_the_machine() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let (_, id) = session(&mut server, now);
    let sid = ("mcp-session-id", id.as_str());
    let batch = r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"7","method":"ping"}]"#;
    let Verdict::Open { .. } = post(&mut server, &[sid], batch, now) else {
        panic!()
    };
    assert_eq!(
        server.request_ids(),
        &[Id::number(7), Id::from("7").to_owned_id()]
    );
    let (head, _) = request("GET", &[sid, ("accept", "text/event-stream")], "");
    server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy);
    assert!(server.request_ids().is_empty());
}

/// `json_window` zero: an answer that is ready at once still goes on an SSE stream (not a
/// JSON body), with no timer due before the first keep-alive.
#[test]
fn with_no_json_window_every_answer_is_an_event_stream() {
    let config = Config {
        json_window: Duration::ZERO,
        ..Config::default()
    };
    let keepalive = config.keepalive;
    let mut server = Endpoint::new(config);
    let now = Instant::ZERO;
    let Verdict::Open {
        session: key,
        stream,
        new_session: true,
    } = post(&mut server, &[], INITIALIZE, now)
    else {
        panic!("a new session")
    };
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    server.handle_outgoing(key, result.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(
        text.contains("content-type: text/event-stream\r\n"),
        "{text}"
    );
    assert!(text.contains(&format!("data: {result}\n")), "{text}");
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("the session id on the stream's head")
        .to_owned();
    let sid = ("mcp-session-id", id.as_str());
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add"}}"#;
    let Verdict::Open { stream, .. } = post(&mut server, &[sid], call, now) else {
        panic!()
    };
    assert!(
        server
            .poll_timeout()
            .is_some_and(|at| at >= now + keepalive),
        "no timer before the first keep-alive"
    );
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
    server.handle_outgoing(key, answer.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(
        text.contains("content-type: text/event-stream\r\n"),
        "{text}"
    );
    assert!(text.contains(&format!("data: {answer}\n")), "{text}");
}

#[test]
fn a_finished_stream_leaves_nothing_in_the_store() {
    let kept = Kept::default();
    let now = Instant::ZERO;
    let mut server = Endpoint::with_store(Config::default(), Box::new(kept.clone()));
    let (key, id) = session(&mut server, now);
    let sid = ("mcp-session-id", id.as_str());
    for n in 2..202 {
        let call = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{}}}}"#);
        let Verdict::Open { stream, .. } = post(&mut server, &[sid], &call, now) else {
            panic!()
        };
        // Progress first, so that the answer goes on an event stream.
        server.handle_outgoing(key, progress(1).as_bytes(), stream, now);
        let answer = format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{}}}}"#);
        server.handle_outgoing(key, answer.as_bytes(), stream, now);
        let (text, step) = drain(&mut server, stream);
        assert_eq!(step, Step::End);
        assert!(text.contains(&answer), "{text}");
        assert!(
            text.contains("content-type: text/event-stream\r\n"),
            "{text}"
        );
    }
    // Two hundred requests answered on event streams: none of their events is kept, and
    // no entry per stream either (the store used to keep one per request until the
    // session ended).
    let (bytes, owners) = kept.with(|(m, o)| (m.bytes(), o.len()));
    assert_eq!((bytes, owners), (0, 0));
    assert!(!kept.with(|(m, _)| m.replay(2, 0, &mut |_, _| {})));
    assert_eq!(server.streams(), 0);
}

#[test]
fn a_half_open_session_ends_at_its_handshake_deadline_an_initialized_one_lives_on() {
    let mut server = Endpoint::new(Config::default());
    let t0 = Instant::ZERO;
    let (half, _) = session(&mut server, t0);
    let (by_note, note_id) = session(&mut server, t0);
    let (by_call, call_id) = session(&mut server, t0);
    let (by_get, get_id) = session(&mut server, t0);
    let later = t0 + Duration::from_secs(9);
    initialized(&mut server, &note_id, later);
    // A request (no notification first) finishes the handshake too, and so does a GET.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let Verdict::Open { stream, .. } =
        post(&mut server, &[("mcp-session-id", &call_id)], call, later)
    else {
        panic!()
    };
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}"#;
    server.handle_outgoing(by_call, answer.as_bytes(), stream, later);
    assert_eq!(drain(&mut server, stream).1, Step::End);
    let (head, _) = request(
        "GET",
        &[("mcp-session-id", &get_id), ("accept", "text/event-stream")],
        "",
    );
    let verdict = server.handle_request(&head, &[], Authorized::NotRequired, later, &mut entropy);
    let Verdict::Listen { stream: get } = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(
        server.handle_stream_closed(get, later),
        Closed::Detached,
        "the GET stream goes; the session stays"
    );
    // The deadline: 10 s after `initialize`.
    let deadline = server.poll_timeout().expect("a deadline");
    assert_eq!(deadline, t0 + Duration::from_secs(10));
    server.handle_timeout(t0 + Duration::from_millis(9_999));
    assert_eq!(server.sessions(), 4);
    server.handle_timeout(deadline);
    assert_eq!(
        ended(&mut server),
        [half],
        "only the half-open session ends"
    );
    assert_eq!(server.sessions(), 3);
    // The others live until the idle timeout (10 min after their last request).
    server.handle_timeout(later + Duration::from_secs(599));
    assert_eq!(server.sessions(), 3);
    server.handle_timeout(later + Duration::from_secs(600));
    let mut gone = ended(&mut server);
    gone.sort_unstable();
    assert_eq!(gone, [by_note, by_call, by_get]);
}

#[test]
fn a_full_table_evicts_the_oldest_half_open_session_then_the_idlest_past_the_floor() {
    let mut server = Endpoint::new(Config {
        max_sessions: 3,
        ..Config::default()
    });
    let t0 = Instant::ZERO;
    let (a, a_id) = session(&mut server, t0);
    initialized(&mut server, &a_id, t0);
    let (b, b_id) = session(&mut server, t0 + Duration::from_secs(1));
    let (c, _) = session(&mut server, t0 + Duration::from_secs(2));
    assert!(ended(&mut server).is_empty());
    // Full: the new session takes the place of the oldest half-open one (b). Not while its
    // `initialize` is still being answered: then nothing can go (a is initialized and busy
    // within the floor).
    let late = Config {
        max_sessions: 2,
        ..Config::default()
    };
    let mut other = Endpoint::new(late);
    let (_, x_id) = session(&mut other, t0);
    initialized(&mut other, &x_id, t0);
    let Verdict::Open {
        stream: answering, ..
    } = post(&mut other, &[], INITIALIZE, t0)
    else {
        panic!()
    };
    let Verdict::Respond(r) = post(&mut other, &[], INITIALIZE, t0) else {
        panic!("the session being initialized stays")
    };
    assert_eq!(r.status, 503);
    assert_eq!(
        drain(&mut other, answering).1,
        Step::Wait,
        "still answering"
    );
    let (d, d_id) = session(&mut server, t0 + Duration::from_secs(3));
    assert_eq!(ended(&mut server), [b]);
    assert_eq!(server.sessions(), 3);
    let Verdict::Respond(r) = post(&mut server, &[("mcp-session-id", &b_id)], INITIALIZED, t0)
    else {
        panic!()
    };
    assert_eq!(r.status, 404, "the evicted session is gone");
    // Then c (the only half-open one left).
    initialized(&mut server, &d_id, t0 + Duration::from_secs(3));
    let (e, e_id) = session(&mut server, t0 + Duration::from_secs(4));
    assert_eq!(ended(&mut server), [c]);
    initialized(&mut server, &e_id, t0 + Duration::from_secs(4));
    // All three initialized and active within the floor (60 s): 503.
    let Verdict::Respond(r) = post(&mut server, &[], INITIALIZE, t0 + Duration::from_secs(30))
    else {
        panic!()
    };
    assert_eq!(r.status, 503);
    assert!(String::from_utf8_lossy(&r.body).contains("too many sessions"));
    // Past the floor, the longest idle (a, last active at 0 s) gives way.
    let _ = session(&mut server, t0 + Duration::from_secs(61));
    assert_eq!(ended(&mut server), [a]);
    let mut left: Vec<u64> = server.sessions.keys().copied().collect();
    left.sort_unstable();
    assert_eq!(&left[..2], [d, e]);
}

#[test]
fn a_peer_at_its_session_limit_displaces_its_own_half_open_sessions_only() {
    let mut server = Endpoint::new(Config {
        max_sessions_per_peer: Some(2),
        ..Config::default()
    });
    let t0 = Instant::ZERO;
    let one = IpAddr::from([10, 0, 0, 1]);
    let two = IpAddr::from([10, 0, 0, 2]);
    let (head, body) = request("POST", &[ACCEPT], INITIALIZE);
    let init = |server: &mut Endpoint, peer: IpAddr| {
        let verdict = server.handle_request_from(
            &head,
            &body,
            Authorized::NotRequired,
            Some(peer),
            t0,
            &mut entropy,
        );
        match verdict {
            Verdict::Open {
                session, stream, ..
            } => {
                let result = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
                server.handle_outgoing(session, result.as_bytes(), stream, t0);
                let (text, _) = drain(server, stream);
                let id = text
                    .lines()
                    .find_map(|l| l.strip_prefix("mcp-session-id: "))
                    .unwrap()
                    .to_owned();
                Ok((session, id))
            }
            Verdict::Respond(r) => Err(r.status),
            other => panic!("{other:?}"),
        }
    };
    let (first, _) = init(&mut server, one).unwrap();
    let _ = init(&mut server, one).unwrap();
    // At its limit: its oldest half-open session goes.
    let _ = init(&mut server, one).unwrap();
    assert_eq!(ended(&mut server), [first]);
    // Another peer is not counted with it.
    let (other, other_id) = init(&mut server, two).unwrap();
    initialized(&mut server, &other_id, t0);
    assert!(ended(&mut server).is_empty());
    // Once its sessions are initialized, a peer at its limit is refused (429).
    let ids: Vec<String> = server
        .sessions
        .values()
        .filter(|s| s.peer == Some(one))
        .map(|s| String::from_utf8(s.id.to_vec()).unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    for id in &ids {
        initialized(&mut server, id, t0);
    }
    assert_eq!(init(&mut server, one), Err(429));
    assert!(ended(&mut server).is_empty());
    assert!(server.sessions.contains_key(&other));
    // Ending a session frees a place.
    let (head, _) = request("DELETE", &[("mcp-session-id", &ids[0])], "");
    let verdict = server.handle_request(&head, &[], Authorized::NotRequired, t0, &mut entropy);
    assert!(matches!(verdict, Verdict::Ended { .. }));
    assert!(init(&mut server, one).is_ok());
}

/// The JSON-RPC error of a refusal's body: its id, code and message.
fn error_of(r: &Response) -> (String, i64, String) {
    assert_eq!(
        r.headers
            .iter()
            .find(|(n, _)| *n == "content-type")
            .map(|(_, v)| v.as_str()),
        Some("application/json"),
        "{r:?}"
    );
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["jsonrpc"], "2.0");
    (
        v["id"].to_string(),
        v["error"]["code"].as_i64().unwrap(),
        v["error"]["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn every_refusal_carries_a_json_rpc_error_with_a_null_id() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    // 404: another path.
    let mut wire = Vec::from(&b"GET /other HTTP/1.1\r\nhost: 127.0.0.1:3000\r\n\r\n"[..]);
    let mut decoder = RequestDecoder::keeping_fields(1 << 20);
    let Ok(HttpStep::Head(_, head)) = decoder.decode(&mut wire) else {
        panic!()
    };
    let verdict = server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy);
    let Verdict::Respond(r) = verdict else {
        panic!()
    };
    assert_eq!(r.status, 404);
    let (id, _, message) = error_of(&r);
    assert_eq!(id, "null");
    assert!(message.contains("Not Found"), "{message}");
    // 405: a method the endpoint does not take.
    let (head, _) = request("PUT", &[], "");
    let verdict = server.handle_request(&head, &[], Authorized::NotRequired, now, &mut entropy);
    let Verdict::Respond(r) = verdict else {
        panic!()
    };
    assert_eq!(r.status, 405);
    assert!(r
        .headers
        .iter()
        .any(|(n, v)| *n == "allow" && v == "GET, POST, DELETE"));
    let (id, _, message) = error_of(&r);
    assert_eq!(id, "null");
    assert!(message.contains("Method Not Allowed"), "{message}");
    // 413, 431 (and the other faults an adapter meets reading a request).
    for (fault, status, named) in [
        (HttpFault::BodyTooLarge, 413, "Payload Too Large"),
        (
            HttpFault::HeadTooLarge,
            431,
            "Request Header Fields Too Large",
        ),
        (HttpFault::BadRequest, 400, "Bad Request"),
    ] {
        let r = refusal(fault);
        assert_eq!(r.status, status);
        assert!(r
            .headers
            .iter()
            .any(|(n, v)| *n == "connection" && v == "close"));
        let (id, code, message) = error_of(&r);
        assert_eq!((id.as_str(), code), ("null", -32600));
        assert!(message.starts_with(named), "{message}");
        let mut out = Vec::new();
        r.write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(&format!("content-length: {}\r\n", r.body.len())),
            "{text}"
        );
    }
}

#[test]
fn initialize_in_a_batch_is_refused_naming_the_fault() {
    let mut server = Endpoint::new(Config::default());
    let now = Instant::ZERO;
    let two = format!(
        "[{INITIALIZE},{}]",
        INITIALIZE.replace("\"id\":1", "\"id\":2")
    );
    let Verdict::Respond(r) = post(&mut server, &[], &two, now) else {
        panic!()
    };
    assert_eq!(r.status, 400);
    let (_, code, message) = error_of(&r);
    assert_eq!(code, -32600);
    assert!(message.contains("more than one initialize"), "{message}");
    assert!(!message.contains("Mcp-Session-Id"), "{message}");
    let one = format!(r#"[{INITIALIZE},{{"jsonrpc":"2.0","id":3,"method":"tools/list"}}]"#);
    let Verdict::Respond(r) = post(&mut server, &[], &one, now) else {
        panic!()
    };
    assert_eq!(r.status, 400);
    assert!(error_of(&r)
        .2
        .contains("initialize must not be part of a batch"));
    assert_eq!(server.sessions(), 0);
    // A batch without initialize still needs its session.
    let calls = r#"[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]"#;
    let Verdict::Respond(r) = post(&mut server, &[], calls, now) else {
        panic!()
    };
    assert!(error_of(&r).2.contains("Mcp-Session-Id header is required"));
}

/// A frame's top-level keys tell what it is, as the whole classification does, or the
/// frame is classified whole.
#[test]
fn peeking_at_an_answer_agrees_with_classifying_it() {
    let mut server = Endpoint::new(Config::default());
    let frames: [&[u8]; 9] = [
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"8"}]}}"#,
        br#" { "id" : "a\"b" , "jsonrpc":"2.0", "result": [1, {"x": null}] }"#,
        br#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#,
        br#"[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"result":2}]"#,
        br#"{}"#,
        br#"{"jsonrpc":"2.0","id":4,"re\u0073ult":5}"#,
        br#"not json"#,
    ];
    for frame in frames {
        let whole = {
            let mut classifier = Classifier::new(Limits::default());
            match classifier.classify(frame) {
                Classified::Single(Incoming::Response(r)) => {
                    (1, r.result.as_ref().err().map(|e| e.code))
                }
                Classified::Single(Incoming::BadResponse { .. }) => (1, None),
                Classified::Batch(batch) => (
                    batch
                        .filter(|e| {
                            matches!(e, Incoming::Response(_) | Incoming::BadResponse { .. })
                        })
                        .count(),
                    None,
                ),
                _ => (0, None),
            }
        };
        if let Some(peeked) = peek_single(frame) {
            assert_eq!(peeked, whole, "{}", String::from_utf8_lossy(frame));
        }
        assert_eq!(
            server.answers(frame),
            whole,
            "{}",
            String::from_utf8_lossy(frame)
        );
    }
    // The frames the peek reads alone: results and messages with a method.
    assert!(peek_single(frames[0]).is_some() && peek_single(frames[3]).is_some());
    assert!(peek_single(frames[2]).is_none() && peek_single(frames[5]).is_none());
}

/// Everything `stream` gives now as parts: its head when it comes, its body bytes appended.
fn drain_parts(
    server: &mut Endpoint,
    stream: u64,
    head: &mut Option<StreamHead>,
    body: &mut Vec<u8>,
) -> Step {
    loop {
        let step = server.poll_stream_parts(stream, head, body);
        if step != Step::Data {
            return step;
        }
    }
}

/// The head and body [`Endpoint::poll_stream_parts`] gives are the response
/// [`Endpoint::poll_stream`] writes as HTTP/1.1, read back: a JSON answer naming its session,
/// an SSE answer naming it (no JSON window), and a call's events up to their end.
#[test]
fn the_parts_of_a_response_are_the_response_poll_stream_writes() {
    use sansrpc::codec::http::Unframer;
    let now = Instant::ZERO;
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":7}}}"#;
    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    for window in [Config::default().json_window, Duration::ZERO] {
        let config = Config {
            json_window: window,
            ..Config::default()
        };
        let (mut wire, mut parts) = (Endpoint::new(config.clone()), Endpoint::new(config));
        // Each response on both: the bytes written, read back; and the parts given.
        let mut ids = Vec::new();
        for turn in 0..2 {
            let mut sides = Vec::new();
            for (i, server) in [&mut wire, &mut parts].into_iter().enumerate() {
                let (session, stream) = if turn == 0 {
                    let Verdict::Open {
                        session, stream, ..
                    } = post(server, &[], INITIALIZE, now)
                    else {
                        panic!("a new session")
                    };
                    server.handle_outgoing(session, result.as_bytes(), stream, now);
                    (session, stream)
                } else {
                    let id: &String = &ids[i];
                    initialized(server, id, now);
                    let version = ("mcp-protocol-version", "2025-11-25");
                    let headers = [("mcp-session-id", id.as_str()), version];
                    let Verdict::Open {
                        session, stream, ..
                    } = post(server, &headers, call, now)
                    else {
                        panic!("a call")
                    };
                    server.handle_outgoing(session, progress.as_bytes(), stream, now);
                    (session, stream)
                };
                let (mut head, mut body, mut bytes) = (None, Vec::new(), Vec::new());
                let mut steps = Vec::new();
                for _ in 0..2 {
                    let step = if i == 0 {
                        let (text, step) = drain(server, stream);
                        bytes.extend_from_slice(text.as_bytes());
                        step
                    } else {
                        drain_parts(server, stream, &mut head, &mut body)
                    };
                    steps.push(step);
                    if step == Step::End {
                        break;
                    }
                    server.handle_outgoing(session, answer.as_bytes(), stream, now);
                }
                if i == 0 {
                    let mut read = Vec::new();
                    let parts = Unframer::new().push(&bytes, &mut read).unwrap().unwrap();
                    let mut headers = parts.headers.clone();
                    headers.retain(|(n, _)| n != "transfer-encoding" && n != "content-length");
                    sides.push((parts.status, headers, read, steps));
                } else {
                    let head = head.expect("a head");
                    let mut headers: Vec<(String, Vec<u8>)> = head
                        .fields()
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                        .collect();
                    if let Some(id) = &head.session_id {
                        headers.push(("mcp-session-id".to_string(), id.clone()));
                    }
                    sides.push((head.status, headers, body, steps));
                }
            }
            let (parts_side, wire_side) = (sides.pop().unwrap(), sides.pop().unwrap());
            let (status, mut wire_headers, wire_body, wire_steps) = wire_side;
            let (parts_status, mut parts_headers, parts_body, parts_steps) = parts_side;
            assert_eq!(
                (status, &wire_body, &wire_steps),
                (parts_status, &parts_body, &parts_steps)
            );
            assert!(String::from_utf8_lossy(&parts_body).contains(if turn == 0 {
                result
            } else {
                answer
            }));
            // Each names its own session (their ids differ), at the same place.
            if turn == 0 {
                for headers in [&mut wire_headers, &mut parts_headers] {
                    let at = headers.iter().position(|(n, _)| n == "mcp-session-id");
                    let (_, id) = headers.remove(at.expect("the session named"));
                    ids.push(String::from_utf8(id).unwrap());
                }
            }
            wire_headers.sort();
            parts_headers.sort();
            assert_eq!(
                wire_headers, parts_headers,
                "window {window:?}, turn {turn}"
            );
        }
    }
}

/// Answers `id` in session `key` on `stream` (the connection's frame back to the machine).
fn answer(server: &mut Endpoint, key: u64, stream: u64, id: u32, now: Instant) {
    let frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
    server.handle_outgoing(key, frame.as_bytes(), stream, now);
}

#[test]
fn json_windows_answered_in_time_leave_no_deadline_and_a_slow_one_still_turns_to_sse() {
    let mut server = Endpoint::new(Config::default());
    let t0 = Instant::ZERO;
    let (key, id) = session(&mut server, t0);
    initialized(&mut server, &id, t0);
    let sid = ("mcp-session-id", id.as_str());
    let idle = server.poll_timeout();
    let call = |n: u32| format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call"}}"#);
    // A slow call first, then many answered within their windows behind it.
    let Verdict::Open { stream: slow, .. } = post(&mut server, &[sid], &call(2), t0) else {
        panic!()
    };
    for n in 3..503 {
        let now = t0 + Duration::from_millis(n.into());
        let Verdict::Open { stream, .. } = post(&mut server, &[sid], &call(n), now) else {
            panic!()
        };
        answer(&mut server, key, stream, n, now);
        let (text, step) = drain(&mut server, stream);
        assert_eq!(step, Step::End, "{text}");
        assert!(text.contains("application/json"), "{text}");
    }
    // Answered ones are stale behind the slow one, and the queue stays bounded.
    assert!(server.windows.len() <= 2 * server.streams.len() + 64);
    // The slow call's window is the next deadline, and then it is an event stream.
    let window = t0 + Duration::from_secs(1);
    assert_eq!(server.poll_timeout(), Some(window));
    server.handle_timeout(t0 + Duration::from_millis(999));
    assert_eq!(drain(&mut server, slow).1, Step::Wait);
    server.handle_timeout(window);
    let (text, _) = drain(&mut server, slow);
    assert!(text.contains("text/event-stream"), "{text}");
    assert!(server.windows.is_empty());
    // Then its keep-alive; once it is answered, only the session's own deadline is left.
    let keepalive = window + Duration::from_secs(15);
    assert_eq!(server.poll_timeout(), Some(keepalive));
    answer(&mut server, key, slow, 2, keepalive);
    assert_eq!(drain(&mut server, slow).1, Step::End);
    assert_eq!(server.poll_timeout(), idle);
}

#[test]
fn a_clock_that_goes_back_still_gets_every_window_in_order() {
    let mut server = Endpoint::new(Config::default());
    let t0 = Instant::from_millis(10_000);
    let (_, id) = session(&mut server, t0);
    initialized(&mut server, &id, t0);
    let sid = ("mcp-session-id", id.as_str());
    let call = |n: u32| format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call"}}"#);
    let Verdict::Open { stream: late, .. } = post(&mut server, &[sid], &call(2), t0) else {
        panic!()
    };
    // An earlier `now` than the last request's: its window is due first.
    let back = Instant::from_millis(9_500);
    let Verdict::Open { stream: early, .. } = post(&mut server, &[sid], &call(3), back) else {
        panic!()
    };
    let second = Duration::from_secs(1);
    assert_eq!(server.poll_timeout(), Some(back + second));
    server.handle_timeout(back + second);
    assert!(drain(&mut server, early).0.contains("text/event-stream"));
    assert_eq!(drain(&mut server, late).1, Step::Wait);
    assert_eq!(server.poll_timeout(), Some(t0 + second));
    server.handle_timeout(t0 + second);
    assert!(drain(&mut server, late).0.contains("text/event-stream"));
}

#[test]
fn a_closed_response_forgets_its_window() {
    let mut server = Endpoint::new(Config::default());
    let t0 = Instant::ZERO;
    let (_, id) = session(&mut server, t0);
    initialized(&mut server, &id, t0);
    let idle = server.poll_timeout();
    let sid = ("mcp-session-id", id.as_str());
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#;
    let Verdict::Open { stream, .. } = post(&mut server, &[sid], call, t0) else {
        panic!()
    };
    assert_eq!(server.poll_timeout(), Some(t0 + Duration::from_secs(1)));
    assert_eq!(server.handle_stream_closed(stream, t0), Closed::Detached);
    // Detached: no window and no keep-alive for a response nobody reads.
    assert_eq!(server.poll_timeout(), idle);
    server.handle_timeout(t0 + Duration::from_secs(1));
    assert_eq!(server.poll_timeout(), idle);
}

/// The value of header `name` in `headers`, when present.
fn field<'a>(headers: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn a_page_of_an_allowed_origin_gets_cors_and_reads_the_session() {
    // A token is required: the preflight, which carries none, is answered all the same.
    let mut server = protected();
    let now = Instant::ZERO;
    let page = ("origin", "http://localhost:5173");
    let (head, _) = request(
        "OPTIONS",
        &[
            page,
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type, mcp-session-id",
            ),
        ],
        "",
    );
    let Verdict::Respond(r) =
        server.handle_request(&head, &[], Authorized::Missing, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 204);
    let h = &r.headers;
    assert_eq!(
        field(h, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    assert_eq!(
        field(h, "access-control-allow-methods"),
        Some("GET, POST, DELETE")
    );
    assert_eq!(
        field(h, "access-control-allow-headers"),
        Some("content-type, mcp-session-id")
    );
    assert_eq!(field(h, "access-control-max-age"), Some("600"));
    assert_eq!(field(h, "vary"), Some("Origin"));

    // The page's POST without a token: the 401 lets the page read the challenge.
    let (head, body) = request("POST", &[ACCEPT, page], INITIALIZE);
    let Verdict::Respond(r) =
        server.handle_request(&head, &body, Authorized::Missing, now, &mut entropy)
    else {
        panic!()
    };
    assert_eq!(r.status, 401);
    assert_eq!(
        field(&r.headers, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let exposed = field(&r.headers, "access-control-expose-headers").unwrap();
    assert!(exposed.contains("www-authenticate") && exposed.contains("mcp-session-id"));

    // With its token, the page's initialize opens a session whose answer names it, and
    // the page may read that name.
    let Verdict::Open {
        session,
        stream,
        new_session: true,
    } = server.handle_request(&head, &body, Authorized::Valid, now, &mut entropy)
    else {
        panic!("a new session")
    };
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    server.handle_outgoing(session, result.as_bytes(), stream, now);
    let (text, step) = drain(&mut server, stream);
    assert_eq!(step, Step::End);
    assert!(text.contains("mcp-session-id: "), "{text}");
    assert!(
        text.contains("access-control-allow-origin: http://localhost:5173\r\n"),
        "{text}"
    );
    assert!(
        text.contains("access-control-expose-headers: mcp-session-id, mcp-protocol-version, www-authenticate\r\n"),
        "{text}"
    );
    assert!(text.contains("vary: Origin\r\n"), "{text}");
}

/// The machine's answer to a bodiless `method` request with `headers` (no token needed).
fn answer_to(server: &mut Endpoint, method: &str, headers: &[(&str, &str)]) -> Response {
    let (head, _) = request(method, headers, "");
    let verdict = server.handle_request(
        &head,
        &[],
        Authorized::NotRequired,
        Instant::ZERO,
        &mut entropy,
    );
    let Verdict::Respond(r) = verdict else {
        panic!("{verdict:?}")
    };
    r
}

#[test]
fn cors_goes_only_to_allowed_origins() {
    let mut server = Endpoint::new(Config::default());
    let asks = ("access-control-request-method", "POST");
    // Another site: refused before anything, with no CORS field (the browser hides it).
    let r = answer_to(
        &mut server,
        "OPTIONS",
        &[("origin", "https://evil.example"), asks],
    );
    assert_eq!(r.status, 403);
    assert_eq!(field(&r.headers, "access-control-allow-origin"), None);
    // No Origin (not a browser): no CORS fields, and OPTIONS is no method of MCP's.
    let r = answer_to(&mut server, "OPTIONS", &[asks]);
    assert_eq!(r.status, 405);
    assert_eq!(field(&r.headers, "access-control-allow-origin"), None);
    // An allowed page on a stateless server is told POST only.
    let mut stateless = Endpoint::new(Config {
        sessions: false,
        ..Config::default()
    });
    let r = answer_to(
        &mut stateless,
        "OPTIONS",
        &[("origin", "http://127.0.0.1:8080"), asks],
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        field(&r.headers, "access-control-allow-methods"),
        Some("POST")
    );
    assert_eq!(
        field(&r.headers, "access-control-allow-headers"),
        Some(
            "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, \
             last-event-id, mcp-method, mcp-name"
        )
    );
}
