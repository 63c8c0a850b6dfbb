//! The machine alone, with virtual time: each rule of the client, and bad input.

use super::*;
use crate::streamable::encode_header_value;

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn machine() -> HttpClient {
    HttpClient::new(ClientConfig::default())
}

fn requests(m: &mut HttpClient) -> Vec<ClientRequest> {
    core::iter::from_fn(|| m.poll_request()).collect()
}

fn one(m: &mut HttpClient) -> ClientRequest {
    let mut all = requests(m);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

fn events(m: &mut HttpClient) -> Vec<ClientEvent> {
    core::iter::from_fn(|| m.poll_event()).collect()
}

fn message(text: &str) -> ClientEvent {
    ClientEvent::Message(text.as_bytes().to_vec())
}

fn ended(frame: &str, status: Option<u16>) -> ClientEvent {
    ClientEvent::Ended {
        frame: frame.as_bytes().to_vec(),
        status,
    }
}

fn send(m: &mut HttpClient, frame: &str, now: Instant) {
    m.send_frame(frame.as_bytes().to_vec(), Vec::new(), now);
}

/// `frame` sent, and the one request it makes at once.
fn post(m: &mut HttpClient, frame: &str, now: Instant) -> ClientRequest {
    send(m, frame, now);
    one(m)
}

/// The head of an answer.
fn head(m: &mut HttpClient, exchange: u64, status: u16, headers: &[(&str, &str)]) {
    let fields = headers.iter().map(|(n, v)| (*n, v.as_bytes()));
    m.handle_head(exchange, status, fields, at(0));
}

/// A machine with `config` changed by `change`, and the exchange of one call sent.
fn calling(change: impl FnOnce(&mut ClientConfig)) -> (HttpClient, ClientRequest) {
    let mut config = ClientConfig::default();
    change(&mut config);
    let mut m = HttpClient::new(config);
    let call = post(&mut m, CALL, at(0));
    (m, call)
}

/// The rest of an answer: its body, its end.
fn rest(m: &mut HttpClient, exchange: u64, body: &[u8]) {
    m.handle_body(exchange, body, at(0));
    m.handle_end(exchange, at(0));
}

/// A whole answer: head, body, end.
fn answer(m: &mut HttpClient, exchange: u64, status: u16, headers: &[(&str, &str)], body: &str) {
    let now = at(0);
    m.handle_head(
        exchange,
        status,
        headers.iter().map(|(n, v)| (*n, v.as_bytes())),
        now,
    );
    m.handle_body(exchange, body.as_bytes(), now);
    m.handle_end(exchange, now);
}

const JSON: (&str, &str) = ("Content-Type", "application/json");
const SSE: (&str, &str) = ("content-type", "text/event-stream");
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INIT_OK: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"añadir","arguments":{}}}"#;
const CALL_OK: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;

/// A machine with session `s1` on 2025-06-18, its GET stream open (exchange returned).
fn in_session(m: &mut HttpClient) -> u64 {
    send(m, INIT, at(0));
    let init = one(m);
    answer(
        m,
        init.exchange,
        200,
        &[JSON, ("mcp-session-id", "s1")],
        INIT_OK,
    );
    send(m, INITIALIZED, at(0));
    let initialized = one(m);
    answer(m, initialized.exchange, 202, &[], "");
    let get = one(m);
    m.handle_head(
        get.exchange,
        200,
        [("content-type", &b"text/event-stream"[..])],
        at(0),
    );
    events(m);
    get.exchange
}

#[test]
fn initialize_carries_no_session_and_its_answer_sets_session_and_version() {
    let mut m = machine();
    let init = post(&mut m, INIT, at(0));
    assert_eq!(init.method, HttpMethod::Post);
    assert_eq!(init.body.as_deref(), Some(INIT.as_bytes()));
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("mcp-method"), Some("initialize"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    answer(
        &mut m,
        init.exchange,
        200,
        &[JSON, ("Mcp-Session-Id", "s1")],
        INIT_OK,
    );
    assert_eq!(events(&mut m), [message(INIT_OK), ended(INIT, Some(200))]);
    assert_eq!(m.session_id(), Some("s1"));
    assert_eq!(m.protocol_version(), Some("2025-06-18"));
    assert_eq!(m.exchanges(), 0);

    // Every later request carries both; a new `initialize` does not carry the old id.
    let call = post(&mut m, CALL, at(0));
    assert_eq!(call.header("mcp-session-id"), Some("s1"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(
        call.header("mcp-name"),
        Some(encode_header_value("añadir").as_str())
    );
    send(&mut m, INIT, at(0));
    assert_eq!(one(&mut m).header("mcp-session-id"), None);
}

#[test]
fn own_and_extra_headers_go_on_the_requests() {
    let mut config = ClientConfig::default();
    config.headers.push(("X-Tenant".into(), "blue".into()));
    let mut m = HttpClient::new(config);
    m.send_frame(
        CALL.as_bytes().to_vec(),
        vec![("Mcp-Param-Region".into(), "eu".into())],
        at(0),
    );
    let call = one(&mut m);
    assert_eq!(call.header("x-tenant"), Some("blue"));
    assert_eq!(call.header("mcp-param-region"), Some("eu"));
    assert!(call.header("last-event-id").is_none());
}

#[test]
fn initialized_opens_the_get_stream_and_later_posts_wait_for_it() {
    let mut m = machine();
    let init = post(&mut m, INIT, at(0));
    answer(
        &mut m,
        init.exchange,
        200,
        &[JSON, ("mcp-session-id", "s1")],
        INIT_OK,
    );
    events(&mut m);
    let initialized = post(&mut m, INITIALIZED, at(10));
    assert_eq!(initialized.header("mcp-session-id"), Some("s1"));
    send(&mut m, CALL, at(20));
    assert!(
        requests(&mut m).is_empty(),
        "the call waits for the GET stream"
    );
    assert_eq!(m.poll_timeout(), Some(at(10_010)));
    answer(&mut m, initialized.exchange, 202, &[], "");
    let get = one(&mut m);
    assert_eq!(get.method, HttpMethod::Get);
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("content-type"), None);
    assert_eq!(get.header("mcp-session-id"), Some("s1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-06-18"));
    assert!(requests(&mut m).is_empty());
    head(&mut m, get.exchange, 200, &[SSE]);
    let call = one(&mut m);
    assert_eq!(call.body.as_deref(), Some(CALL.as_bytes()));
    // Messages for no request arrive on it.
    m.handle_body(
        get.exchange,
        b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        at(40),
    );
    assert_eq!(
        events(&mut m),
        [message(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
        )]
    );
    // Cut without ids: opened again, a new stream, after the retry delay (a second).
    assert!(!m.handle_failure(get.exchange, ExchangeFailure::Cut, at(50)));
    assert!(requests(&mut m).is_empty());
    // A second `notifications/initialized` in the same session opens nothing.
    let again = post(&mut m, INITIALIZED, at(60));
    answer(&mut m, again.exchange, 202, &[], "");
    assert!(requests(&mut m).is_empty());
    m.handle_timeout(at(1_050));
    let reopened = one(&mut m);
    assert_eq!(reopened.method, HttpMethod::Get);
    assert_eq!(reopened.header("last-event-id"), None);
    assert_eq!(reopened.header("mcp-session-id"), Some("s1"));
}

/// Was a bug: the session's GET stream was not opened again once it ended. A server MAY
/// close it at any time (2025-11-25), and the client reconnects after `retry`: with its
/// last event id when it gave ids; else as a new stream. Notifications and requests of the
/// server (`list_changed`, sampling) were lost for the rest of the session.
#[test]
fn the_get_stream_is_opened_again_when_the_server_ends_it() {
    let mut m = machine();
    let get = in_session(&mut m);
    let changed = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    // Ended cleanly after an event with an id and a retry of 300 ms: resumed from it.
    let event = format!("id: g1\nretry: 300\ndata: {changed}\n\n");
    rest(&mut m, get, event.as_bytes());
    assert_eq!(events(&mut m), [message(changed)]);
    assert!(requests(&mut m).is_empty());
    m.handle_timeout(at(300));
    let resumed = one(&mut m);
    assert_eq!(resumed.method, HttpMethod::Get);
    assert_eq!(resumed.header("last-event-id"), Some("g1"));
    // Each time it ends after a message, again; ended five times with nothing: given up.
    let event = format!("data: {changed}\n\n");
    answer(&mut m, resumed.exchange, 200, &[SSE], &event);
    assert_eq!(events(&mut m), [message(changed)]);
    let mut now = 300;
    for _ in 0..5 {
        now += 300;
        m.handle_timeout(at(now));
        let again = one(&mut m);
        assert_eq!(again.header("last-event-id"), Some("g1"));
        answer(&mut m, again.exchange, 200, &[SSE], ": keep-alive\n\n");
    }
    m.handle_timeout(at(now + 300));
    assert!(requests(&mut m).is_empty());
    assert_eq!(m.poll_timeout(), None);
}

/// Closing the session does not open the GET stream again when it ends.
#[test]
fn a_closing_session_does_not_open_its_get_stream_again() {
    let mut m = machine();
    let get = in_session(&mut m);
    m.close(at(10));
    let delete = one(&mut m);
    assert_eq!(delete.method, HttpMethod::Delete);
    m.handle_end(get, at(20));
    m.handle_timeout(at(5_000));
    assert!(requests(&mut m).iter().all(|r| r.method != HttpMethod::Get));
}

#[test]
fn the_gate_opens_by_itself_when_the_server_never_answers() {
    let mut m = machine();
    let _initialized = post(&mut m, INITIALIZED, at(0));
    send(&mut m, CALL, at(1));
    assert!(requests(&mut m).is_empty());
    m.handle_timeout(at(9_999));
    assert!(requests(&mut m).is_empty());
    assert_eq!(m.poll_timeout(), Some(at(10_000)));
    m.handle_timeout(at(10_000));
    assert_eq!(one(&mut m).body.as_deref(), Some(CALL.as_bytes()));
    assert_eq!(m.poll_timeout(), None);
}

#[test]
fn a_refused_initialized_or_a_failed_get_opens_the_gate() {
    let mut m = machine();
    let initialized = post(&mut m, INITIALIZED, at(0));
    send(&mut m, CALL, at(0));
    head(&mut m, initialized.exchange, 400, &[]);
    assert_eq!(one(&mut m).body.as_deref(), Some(CALL.as_bytes()));
    // The refusal's body (an error with no id) is not handed on.
    rest(
        &mut m,
        initialized.exchange,
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}"#,
    );
    assert!(events(&mut m).is_empty());

    let mut m = machine();
    let initialized = post(&mut m, INITIALIZED, at(0));
    send(&mut m, CALL, at(0));
    answer(&mut m, initialized.exchange, 202, &[], "");
    let get = one(&mut m);
    assert!(!m.handle_failure(get.exchange, ExchangeFailure::Unsent, at(0)));
    assert_eq!(one(&mut m).body.as_deref(), Some(CALL.as_bytes()));
    assert_eq!(m.exchanges(), 1);
}

#[test]
fn an_sse_answer_dropped_is_resumed_after_the_servers_retry() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(100));
    head(&mut m, call.exchange, 200, &[SSE]);
    m.handle_body(call.exchange, b"id: e1\nretry: 250\ndata:\n\n", at(100));
    // Cut in the middle of the next event: resumed from e1, after 250 ms.
    m.handle_body(call.exchange, b"id: e2\ndata: {\"jsonrpc\"", at(100));
    assert!(!m.handle_failure(call.exchange, ExchangeFailure::Cut, at(200)));
    assert!(events(&mut m).is_empty());
    assert_eq!(m.poll_timeout(), Some(at(450)));
    m.handle_timeout(at(449));
    assert!(requests(&mut m).is_empty());
    m.handle_timeout(at(450));
    let resume = one(&mut m);
    assert_eq!(resume.method, HttpMethod::Get);
    assert_eq!(resume.header("last-event-id"), Some("e1"));
    assert_eq!(resume.header("mcp-session-id"), Some("s1"));
    assert_eq!(resume.body, None);
    // What the old exchange still says is not read.
    m.handle_body(call.exchange, b"data: {}\n\n", at(450));
    head(&mut m, resume.exchange, 200, &[]);
    m.handle_body(
        resume.exchange,
        format!("id: e2\ndata: {CALL_OK}\n\n").as_bytes(),
        at(460),
    );
    m.handle_end(resume.exchange, at(470));
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(200))]);
    assert_eq!(m.exchanges(), 1, "only the GET stream is left");
}

#[test]
fn a_stream_closed_before_its_answer_is_polled_again() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 200, &[SSE], "id: p\ndata:\n\n");
    assert!(events(&mut m).is_empty());
    m.handle_timeout(at(1_000));
    assert_eq!(one(&mut m).header("last-event-id"), Some("p"));
}

#[test]
fn resumptions_are_counted_and_need_event_ids() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 200, &[SSE], "id: p\ndata:\n\n");
    let mut now = 0;
    for _ in 0..5 {
        now += 1_000;
        m.handle_timeout(at(now));
        let resume = one(&mut m);
        answer(&mut m, resume.exchange, 200, &[], ": nothing yet\n\n");
    }
    assert_eq!(events(&mut m), [ended(CALL, None)]);
    assert_eq!(m.poll_timeout(), None);

    // No id: nothing to resume from.
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 200, &[SSE], ": a comment\n\n");
    assert_eq!(events(&mut m), [ended(CALL, None)]);
}

#[test]
fn a_resumption_refused_or_unsent_gives_the_calls_up() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 200, &[SSE], "id: p\ndata:\n\n");
    m.handle_timeout(at(1_000));
    let resume = one(&mut m);
    // The server lost the session mid-stream: a 404 to the resumption.
    m.handle_head(resume.exchange, 404, [], at(1_000));
    assert_eq!(events(&mut m), [ended(CALL, None)]);
    assert_eq!(m.poll_abort(), Some(resume.exchange));

    // A resumption that could not be sent (the server restarting) is tried again, as long
    // as the resumptions are not used up; so is one answered 5xx.
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 200, &[SSE], "id: p\ndata:\n\n");
    m.handle_timeout(at(2_000));
    let resume = one(&mut m);
    assert!(!m.handle_failure(resume.exchange, ExchangeFailure::Unsent, at(2_000)));
    assert_eq!(events(&mut m), []);
    m.handle_timeout(at(3_000));
    let resume = one(&mut m);
    m.handle_head(resume.exchange, 503, [], at(3_000));
    assert_eq!(m.poll_abort(), Some(resume.exchange));
    assert_eq!(events(&mut m), []);
    let mut now = 3_000;
    for _ in 0..3 {
        now += 1_000;
        m.handle_timeout(at(now));
        let resume = one(&mut m);
        assert_eq!(resume.header("last-event-id"), Some("p"));
        assert!(!m.handle_failure(resume.exchange, ExchangeFailure::Unsent, at(now)));
    }
    assert_eq!(
        events(&mut m),
        [ended(CALL, None)],
        "five tries that brought nothing"
    );
    assert_eq!(m.poll_timeout(), None);
}

/// A server may close a call's event stream after each event and let the client poll
/// (SEP-1699, 2025-11-25): followed for as long as events come. The resumptions were counted
/// over the stream's life, and the sixth poll gave the call up while the server worked on.
#[test]
fn a_stream_closed_to_be_polled_is_followed_while_its_events_come() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    answer(
        &mut m,
        call.exchange,
        200,
        &[SSE],
        "id: 1\nretry: 500\ndata:\n\n",
    );
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1}}"#;
    let mut now = 0;
    for n in 2..14 {
        now += 500;
        m.handle_timeout(at(now));
        let resume = one(&mut m);
        let last = (n - 1).to_string();
        assert_eq!(resume.header("last-event-id"), Some(last.as_str()));
        let body = format!("id: {n}\ndata: {progress}\n\n");
        answer(&mut m, resume.exchange, 200, &[SSE], &body);
        assert_eq!(events(&mut m), [message(progress)], "poll {n}");
    }
    now += 500;
    m.handle_timeout(at(now));
    let resume = one(&mut m);
    answer(
        &mut m,
        resume.exchange,
        200,
        &[SSE],
        &format!("id: 14\ndata: {CALL_OK}\n\n"),
    );
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(200))]);
    assert_eq!(m.poll_timeout(), None);
}

/// The session is the one the answer to `initialize` names: a late answer to an old request
/// that still carries the old session's id (servers echo it on every answer) does not move
/// the client back to it, and an `initialize` answered with no id leaves none.
#[test]
fn only_the_answer_to_initialize_names_the_session() {
    let mut m = machine();
    in_session(&mut m);
    let old = post(&mut m, CALL, at(0));
    let init = post(&mut m, INIT, at(0));
    answer(
        &mut m,
        init.exchange,
        200,
        &[JSON, ("mcp-session-id", "s2")],
        INIT_OK,
    );
    answer(
        &mut m,
        old.exchange,
        200,
        &[JSON, ("mcp-session-id", "s1")],
        CALL_OK,
    );
    events(&mut m);
    let next = post(&mut m, CALL, at(0));
    assert_eq!(next.header("mcp-session-id"), Some("s2"));
    answer(&mut m, next.exchange, 200, &[JSON], CALL_OK);
    let init = post(&mut m, INIT, at(0));
    answer(&mut m, init.exchange, 200, &[JSON], INIT_OK);
    events(&mut m);
    let next = post(&mut m, CALL, at(0));
    assert_eq!(next.header("mcp-session-id"), None);
}

/// A call cancelled on a session revision: its cancellation is POSTed, and its own stream
/// is ended (a server need not answer a cancelled request, nor end its stream: it was read
/// for the rest of the session, a connection and a task each).
#[test]
fn a_cancelled_calls_stream_is_ended_once_its_cancellation_is_posted() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    head(&mut m, call.exchange, 200, &[SSE]);
    m.handle_body(call.exchange, b"id: 1\ndata:\n\n", at(0));
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;
    let sent = post(&mut m, cancel, at(10));
    assert_eq!(sent.body.as_deref(), Some(cancel.as_bytes()));
    assert_eq!(m.poll_abort(), Some(call.exchange));
    answer(&mut m, sent.exchange, 202, &[], "");
    // Nothing of the call is told again (the connection ended it as cancelled).
    assert_eq!(events(&mut m), []);
    assert_eq!(m.exchanges(), 1, "only the GET stream is left");
}

/// A media type is case-insensitive (RFC 9110 §8.3.1): `Text/Event-Stream` is read as events.
#[test]
fn an_event_stream_named_in_any_case_is_read_as_events() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    let sse = ("Content-Type", "Text/Event-Stream; charset=UTF-8");
    answer(
        &mut m,
        call.exchange,
        200,
        &[sse],
        &format!("id: 1\ndata: {CALL_OK}\n\n"),
    );
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(200))]);
}

#[test]
fn no_resumption_once_on_another_session() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    head(&mut m, call.exchange, 200, &[SSE]);
    m.handle_body(call.exchange, b"id: p\ndata:\n\n", at(0));
    let init = post(&mut m, INIT, at(0));
    answer(
        &mut m,
        init.exchange,
        200,
        &[JSON, ("mcp-session-id", "s2")],
        INIT_OK,
    );
    events(&mut m);
    m.handle_failure(call.exchange, ExchangeFailure::Cut, at(0));
    assert_eq!(events(&mut m), [ended(CALL, None)]);
    assert_eq!(m.poll_timeout(), None);
}

/// A stream cut on one session and due for resumption after the connection moved to
/// another: its calls end, as when the cut came after the move. Resumed, the GET carried
/// the new session with an event id of the old one.
#[test]
fn no_resumption_due_after_a_move_to_another_session() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    head(&mut m, call.exchange, 200, &[SSE]);
    m.handle_body(call.exchange, b"id: p\nretry: 100\ndata:\n\n", at(0));
    m.handle_failure(call.exchange, ExchangeFailure::Cut, at(0));
    assert_eq!(m.poll_timeout(), Some(at(100)));
    let init = post(&mut m, INIT, at(10));
    answer(
        &mut m,
        init.exchange,
        200,
        &[JSON, ("mcp-session-id", "s2")],
        INIT_OK,
    );
    events(&mut m);
    m.handle_timeout(at(100));
    let sent = requests(&mut m);
    assert!(
        sent.iter().all(|r| r.header("last-event-id").is_none()),
        "no resumption on s2 of s1's stream: {sent:?}"
    );
    assert_eq!(events(&mut m), [ended(CALL, None)]);
}

#[test]
fn a_404_with_a_session_ends_the_calls_without_reading_the_body() {
    let mut m = machine();
    in_session(&mut m);
    let call = post(&mut m, CALL, at(0));
    head(&mut m, call.exchange, 404, &[JSON]);
    assert_eq!(events(&mut m), [ended(CALL, Some(404))]);
    assert_eq!(m.poll_abort(), Some(call.exchange));
    rest(
        &mut m,
        call.exchange,
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"gone"}}"#,
    );
    assert!(events(&mut m).is_empty());

    // Without a session a 404 is an answer like another: its body is read.
    let mut m = machine();
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 404, &[JSON], CALL_OK);
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(404))]);
}

#[test]
fn unauthorized_without_credentials_is_said_and_with_them_is_read() {
    let mut m = machine();
    let call = post(&mut m, CALL, at(0));
    answer(
        &mut m,
        call.exchange,
        401,
        &[JSON, ("www-authenticate", "Bearer resource_metadata=\"x\"")],
        r#"{"error":"unauthorized"}"#,
    );
    let got = events(&mut m);
    assert_eq!(got[1], ended(CALL, Some(401)));
    let ClientEvent::Fault(fault) = &got[0] else {
        panic!("{got:?}");
    };
    let text = fault.to_string();
    assert!(
        text.contains("401")
            && text.contains("resource_metadata")
            && text.contains("Connect::bearer"),
        "{text}"
    );

    // A 403 without a challenge is an answer.
    let mut m = machine();
    let call = post(&mut m, CALL, at(0));
    answer(&mut m, call.exchange, 403, &[JSON], CALL_OK);
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(403))]);

    let (mut m, call) = calling(|c| {
        c.credentials = true;
    });
    answer(&mut m, call.exchange, 401, &[JSON], CALL_OK);
    assert_eq!(events(&mut m), [message(CALL_OK), ended(CALL, Some(401))]);
}

#[test]
fn failures_end_the_calls_and_say_whether_to_record_a_cause() {
    for (kind, status, record) in [
        (ExchangeFailure::Unsent, None, true),
        (ExchangeFailure::Unauthorized(Some(403)), Some(403), true),
        (ExchangeFailure::Unauthorized(None), Some(401), true),
        (ExchangeFailure::Cut, None, false),
    ] {
        let mut m = machine();
        let call = post(&mut m, CALL, at(0));
        assert_eq!(m.handle_failure(call.exchange, kind, at(0)), record);
        assert_eq!(events(&mut m), [ended(CALL, status)]);
        assert_eq!(m.exchanges(), 0);
    }
    // A notification has no calls to end.
    let mut m = machine();
    send(
        &mut m,
        r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
        at(0),
    );
    let note = one(&mut m);
    assert!(!m.handle_failure(note.exchange, ExchangeFailure::Unsent, at(0)));
    assert!(events(&mut m).is_empty());
    // A JSON body cut off ends its calls with no status.
    let mut m = machine();
    let call = post(&mut m, CALL, at(0));
    head(&mut m, call.exchange, 200, &[]);
    m.handle_body(call.exchange, b"{\"jsonrpc\":", at(0));
    m.handle_failure(call.exchange, ExchangeFailure::Cut, at(0));
    assert_eq!(events(&mut m), [ended(CALL, None)]);
    // A batch waits for its answers like a request.
    let batch = format!("[{CALL}]");
    let sent = post(&mut m, &batch, at(0));
    m.handle_failure(sent.exchange, ExchangeFailure::Unsent, at(0));
    assert_eq!(events(&mut m), [ended(&batch, None)]);
}

const STATELESS_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;

#[test]
fn a_stateless_request_is_cancelled_by_closing_its_stream() {
    let mut m = machine();
    let call = post(&mut m, STATELESS_CALL, at(0));
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-name"), Some("slow"));
    head(&mut m, call.exchange, 200, &[SSE]);
    send(
        &mut m,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        at(0),
    );
    assert!(
        requests(&mut m).is_empty(),
        "the cancellation is not POSTed"
    );
    assert_eq!(m.poll_abort(), Some(call.exchange));
    m.handle_body(
        call.exchange,
        format!("data: {CALL_OK}\n\n").as_bytes(),
        at(0),
    );
    m.handle_failure(call.exchange, ExchangeFailure::Cut, at(0));
    assert!(
        events(&mut m).is_empty(),
        "no end is told for a cancelled call"
    );
    assert_eq!(m.exchanges(), 0);

    // A cancellation of what is not open is POSTed, with the revision the requests named.
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}"#;
    let sent = post(&mut m, cancel, at(0));
    assert_eq!(sent.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(sent.body.as_deref(), Some(cancel.as_bytes()));
}

#[test]
fn an_answer_of_a_megabyte_on_one_sse_line_arrives() {
    // Servers (ours, the SDKs) write each message as one data line: with the default
    // limits an answer over the line limit (64 KiB) was skipped and the call lost.
    let (mut m, call) = calling(|_| {});
    head(&mut m, call.exchange, 200, &[SSE]);
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":2,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        "t".repeat(1 << 20)
    );
    let wire = format!("id: 1\nevent: message\ndata: {answer}\n\n");
    for piece in wire.as_bytes().chunks(16 * 1024) {
        m.handle_body(call.exchange, piece, at(0));
    }
    m.handle_end(call.exchange, at(0));
    assert_eq!(events(&mut m).first(), Some(&message(&answer)));
}

#[test]
fn a_huge_or_malformed_event_is_a_fault_and_bounded() {
    let (mut m, call) = calling(|c| {
        c.sse.max_event = 1024;
        c.sse.max_line = 2048;
    });
    head(&mut m, call.exchange, 200, &[SSE]);
    m.handle_body(call.exchange, b"id: 1\ndata:\n\n", at(0));
    // An event of 1 MiB in lines of 1000 bytes: dropped as it grows.
    let line = format!("data: {}\n", "x".repeat(1000));
    for _ in 0..1024 {
        m.handle_body(call.exchange, line.as_bytes(), at(0));
    }
    m.handle_body(call.exchange, b"\n", at(0));
    // A line with no end, 1 MiB of it.
    let garbage = vec![0xff; 4096];
    for _ in 0..256 {
        m.handle_body(call.exchange, &garbage, at(0));
    }
    let got = events(&mut m);
    assert_eq!(
        got,
        [
            ClientEvent::Fault(ClientFault::Sse(sse::SseError::EventTooLarge)),
            ClientEvent::Fault(ClientFault::Sse(sse::SseError::LineTooLong)),
        ]
    );
    assert!(got[0].clone() != got[1] && !format!("{:?}", m).contains("xxxxxxxxxx"));
    // The stream then ends without the answer: resumed from the last whole event.
    m.handle_end(call.exchange, at(0));
    m.handle_timeout(at(1_000));
    assert_eq!(one(&mut m).header("last-event-id"), Some("1"));
}

#[test]
fn a_json_answer_over_the_limit_is_cut_off() {
    let (mut m, call) = calling(|c| {
        c.max_body = 100;
    });
    head(&mut m, call.exchange, 200, &[JSON]);
    m.handle_body(call.exchange, &[b' '; 60], at(0));
    m.handle_body(call.exchange, &[b' '; 60], at(0));
    assert_eq!(
        events(&mut m),
        [
            ClientEvent::Fault(ClientFault::BodyTooLarge { limit: 100 }),
            ended(CALL, None)
        ]
    );
    assert_eq!(m.poll_abort(), Some(call.exchange));
    rest(&mut m, call.exchange, &[b' '; 60]);
    assert!(events(&mut m).is_empty());
}

#[test]
fn no_session_id_means_no_session_header_and_no_delete() {
    let mut m = machine();
    let init = post(&mut m, INIT, at(0));
    // A session id that is not text is not taken either.
    m.handle_head(
        init.exchange,
        200,
        [
            ("content-type", &b"application/json"[..]),
            ("mcp-session-id", &b"s\xff1"[..]),
        ],
        at(0),
    );
    rest(&mut m, init.exchange, INIT_OK.as_bytes());
    assert_eq!(m.session_id(), None);
    let call = post(&mut m, CALL, at(0));
    assert_eq!(call.header("mcp-session-id"), None);
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-06-18"));
    m.close(at(0));
    assert!(m.is_closed());
    assert!(requests(&mut m).is_empty());
}

#[test]
fn close_deletes_the_session_and_waits_at_most_close_wait() {
    let mut m = machine();
    in_session(&mut m);
    m.close(at(100));
    assert!(!m.is_closed());
    let delete = one(&mut m);
    assert_eq!(delete.method, HttpMethod::Delete);
    assert_eq!(delete.header("mcp-session-id"), Some("s1"));
    assert_eq!(delete.header("mcp-protocol-version"), Some("2025-06-18"));
    head(&mut m, delete.exchange, 200, &[]);
    assert!(m.is_closed());

    let mut m = machine();
    in_session(&mut m);
    m.close(at(100));
    let delete = one(&mut m);
    assert_eq!(m.poll_timeout(), Some(at(1_100)));
    m.handle_timeout(at(1_100));
    assert!(m.is_closed());
    assert_eq!(m.poll_abort(), Some(delete.exchange));
}

#[test]
fn a_flood_backs_up_until_the_connection_takes_its_messages() {
    let (mut m, call) = calling(|c| {
        c.max_events = 3;
    });
    head(&mut m, call.exchange, 200, &[SSE]);
    for _ in 0..3 {
        assert!(!m.is_backed_up());
        m.handle_body(call.exchange, b"data: {}\n\n", at(0));
    }
    assert!(m.is_backed_up());
    m.poll_event();
    assert!(!m.is_backed_up());
}

#[test]
fn unknown_exchanges_and_nonsense_are_ignored() {
    let mut m = machine();
    head(&mut m, 99, 200, &[]);
    rest(&mut m, 99, b"data: x\n\n");
    assert!(!m.handle_failure(99, ExchangeFailure::Cut, at(0)));
    let sent = post(&mut m, "not json", at(0));
    assert_eq!(sent.header("mcp-method"), None);
    answer(&mut m, sent.exchange, 200, &[JSON], "{oops");
    // What does not parse is the connection's to judge; nothing waits for it here.
    assert_eq!(events(&mut m), [message("{oops")]);
    assert_eq!(m.exchanges(), 0);
}

/// Any order of inputs, for exchanges known or not, with bodies of any bytes: no panic,
/// and nothing kept once every exchange is over and the timers have run.
#[test]
fn arbitrary_inputs_never_panic_and_leave_nothing_behind() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let frames = [INIT, INITIALIZED, CALL, STATELESS_CALL, "[1]", "{", ""];
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#;
    let bodies: [&[u8]; 6] = [
        b"id: 1\nretry: 5\ndata:\n\n",
        CALL_OK.as_bytes(),
        INIT_OK.as_bytes(),
        b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n",
        b"\xff\xfe\r\n\r:\n",
        b"",
    ];
    let statuses = [200, 202, 401, 403, 404, 500];
    // What the rounds reached, so that the test shows it went through the rules.
    let (mut resumed, mut messages, mut ended) = (0, 0, 0);
    for round in 0..200 {
        let mut m = machine();
        let mut open: Vec<u64> = Vec::new();
        let mut now = 0;
        for _ in 0..60 {
            now += next(3_000);
            let pick = next(open.len().max(1) as u64) as usize;
            let exchange = open.get(pick).copied();
            match next(12) {
                0 | 1 => send(&mut m, frames[next(frames.len() as u64) as usize], at(now)),
                2 => send(&mut m, cancel, at(now)),
                3 if round % 7 == 0 => m.close(at(now)),
                4..=6 => {
                    let status = statuses[next(6) as usize];
                    let kind = if next(3) == 0 { JSON } else { SSE };
                    let id = ("mcp-session-id", if next(2) == 0 { "a" } else { "b" });
                    let fields = [kind, id].map(|(n, v)| (n, v.as_bytes()));
                    m.handle_head(exchange.unwrap_or(1_000), status, fields, at(now));
                }
                7..=9 => {
                    let body = bodies[next(6) as usize];
                    m.handle_body(exchange.unwrap_or(1_000), body, at(now));
                }
                10 => {
                    if let Some(e) = exchange {
                        open.remove(pick);
                        m.handle_end(e, at(now));
                    }
                }
                _ => {
                    if let Some(e) = exchange {
                        open.remove(pick);
                        let kind =
                            [ExchangeFailure::Unsent, ExchangeFailure::Cut][next(2) as usize];
                        m.handle_failure(e, kind, at(now));
                    }
                }
            }
            m.handle_timeout(at(now));
            for request in requests(&mut m) {
                resumed += usize::from(request.header("last-event-id").is_some());
                open.push(request.exchange);
            }
            while let Some(e) = m.poll_abort() {
                open.retain(|&o| o != e);
            }
            for event in events(&mut m) {
                match event {
                    ClientEvent::Message(_) => messages += 1,
                    ClientEvent::Ended { .. } => ended += 1,
                    _ => {}
                }
            }
        }
        // Every exchange ends; the timers run out.
        for _ in 0..20 {
            for e in core::mem::take(&mut open) {
                m.handle_failure(e, ExchangeFailure::Unsent, at(now));
            }
            now += 60_000;
            m.handle_timeout(at(now));
            open.extend(requests(&mut m).iter().map(|r| r.exchange));
            while m.poll_abort().is_some() {}
            events(&mut m);
        }
        assert!(open.is_empty(), "round {round}: {open:?}");
        assert_eq!(m.exchanges(), 0, "round {round}: {m:?}");
        let tables = (
            m.wires.len(),
            m.open_calls.len(),
            m.ready.len(),
            m.gated.len(),
        );
        assert_eq!(tables, (0, 0, 0, 0), "round {round}: {m:?}");
        assert_eq!(m.poll_timeout(), None, "round {round}");
    }
    assert!(
        resumed >= 10 && messages >= 50 && ended >= 100,
        "{resumed} {messages} {ended}"
    );
}

/// The readers of the frames sent and the answers got (`wire`'s `describe`, `is_response`,
/// `init_version`) read what serde's derived decoding of the same shapes read, which they
/// replace (kept here as the reference; `rules::stateless` is the server's, still derived).
mod derived {
    use serde_json::value::RawValue as Json;

    use crate::streamable::rules::{json_of, stateless};

    pub(super) fn describe(frame: &[u8]) -> String {
        #[derive(serde::Deserialize)]
        struct Cancel<'a> {
            #[serde(borrow)]
            params: Option<CancelParams<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct CancelParams<'a> {
            #[serde(rename = "requestId", borrow)]
            request_id: Option<&'a Json>,
        }
        let sent = match frame.trim_ascii_start().first() {
            Some(b'[') => None,
            _ => stateless(frame),
        };
        let Some(sent) = sent else {
            let none: Option<&str> = None;
            let request = frame.first() == Some(&b'[');
            return format!("{:?}", (request, none, none, none, none, none));
        };
        let request = sent.method.is_some() && sent.id.is_some();
        let cancels = match sent.method {
            Some("notifications/cancelled") => json_of::<Cancel<'_>>(frame)
                .and_then(|c| c.params?.request_id)
                .map(|id| id.get().to_owned()),
            _ => None,
        };
        format!(
            "{:?}",
            (
                request,
                sent.method,
                sent.name,
                sent.version,
                sent.id.filter(|_| request),
                cancels
            )
        )
    }

    pub(super) fn is_response(message: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Shape<'a> {
            #[serde(borrow)]
            method: Option<&'a str>,
            #[serde(borrow)]
            result: Option<&'a Json>,
            #[serde(borrow)]
            error: Option<&'a Json>,
        }
        json_of::<Shape<'_>>(message)
            .is_some_and(|s| s.method.is_none() && (s.result.is_some() || s.error.is_some()))
    }

    pub(super) fn init_version(message: &[u8]) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Option<InitResult>,
        }
        #[derive(serde::Deserialize)]
        struct InitResult {
            #[serde(rename = "protocolVersion")]
            version: Option<String>,
        }
        json_of::<Answer>(message)?.result?.version
    }
}

#[test]
fn frames_and_answers_read_as_serde_derived_read_them() {
    let described = |frame: &[u8]| {
        let f = wire::describe(frame);
        format!(
            "{:?}",
            (
                f.request,
                f.method.as_deref(),
                f.name,
                f.version,
                f.id.as_deref(),
                f.cancels
            )
        )
    };
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let frames: Vec<String> = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"add","arguments":{"a":1}}}"#.into(),
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"_meta":{meta},"name":"a\u00e9\n","arguments":{{}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{{"_meta":{meta},"uri":"file:///x","name":"n"}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{{"name":"p","uri":"u","_meta":{meta}}}}}"#),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v","io.modelcontextprotocol/protocolVersion":"w"}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v","io.modelcontextprotocol/clientCapabilities":1,"io.modelcontextprotocol/clientCapabilities":2}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":"text"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":null}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":3,"_meta":{"io.modelcontextprotocol/protocolVersion":"v"}}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":1,"arguments":2,"name":"a"}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"na\u006de":"a","x":1,"x":2}}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"text"}"#.into(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":null}"#.into(),
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"pi\u006eg"}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":null}"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
        r#"  {"jsonrpc":"2.0","id":1,"method":"ping"}  "#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x\"","reason":"r"}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#.into(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#.into(),
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(),
        r#"  [1]"#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping""#.into(),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#.into(),
        r#""text""#.into(),
        "".into(),
        "{}".into(),
    ];
    // Not two readers that read nothing: a 2026-07-28 call is read whole.
    assert_eq!(
        described(frames[3].as_bytes()),
        r#"(true, Some("tools/call"), Some("aé\n"), Some("2026-07-28"), Some("7"), None)"#
    );
    for frame in &frames {
        assert_eq!(
            described(frame.as_bytes()),
            derived::describe(frame.as_bytes()),
            "{frame}"
        );
    }
    let invalid_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffg\"}";
    assert_eq!(described(invalid_utf8), derived::describe(invalid_utf8));
    let answers = [
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025\u002d06-18"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"a","protocolVersion":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":null}"#,
        r#"{"jsonrpc":"2.0","method":"ping","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"p\u0069ng","result":1}"#,
        r#"{"jsonrpc":"2.0","method":null,"result":1}"#,
        r#"{"jsonrpc":"2.0","method":3,"result":1}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1}]"#,
        r#""result""#,
        "",
    ];
    for answer in answers {
        let bytes = answer.as_bytes();
        assert_eq!(
            wire::is_response(bytes),
            derived::is_response(bytes),
            "{answer}"
        );
        assert_eq!(
            wire::init_version(bytes),
            derived::init_version(bytes),
            "{answer}"
        );
    }
}
