//! The LSP lifecycle kept by the connection machine under the LSP profile, in virtual
//! time: gating before `initialize` and after `shutdown`, `exit`'s status, `$/setTrace` and
//! `$/logTrace`, and the editor's process checked on a timer.

use std::time::Duration;

use sansrpc::connection::Profile;
use sansrpc::connection::{CloseReason, Config, Connection, Event, Trace};
use sansrpc::{Instant, RawValue};

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn lsp() -> Connection {
    Connection::new(Config::for_profile(Profile::Lsp), Instant::ZERO)
}

/// Everything written, as text.
fn sent(conn: &mut Connection) -> String {
    let mut out = Vec::new();
    while conn.poll_transmit(&mut out).is_some() {}
    String::from_utf8(out).unwrap()
}

/// Feeds `body` and returns what the application sees: method names of requests (answered
/// `null` at once) and notifications, and the close reason.
fn feed(conn: &mut Connection, body: &str, now: Instant) -> Vec<String> {
    conn.handle_input(&frame(body), now).unwrap();
    let mut seen = Vec::new();
    while let Some(event) = conn.poll_event() {
        match event {
            Event::Request { handle, request } => {
                seen.push(request.method.to_string());
                conn.respond(handle, Ok(RawValue::from_json("null").unwrap()));
            }
            Event::Notification(n) => {
                seen.push(n.method.to_string());
                conn.notification_done();
            }
            Event::CheckProcess { pid } => seen.push(format!("check {pid}")),
            Event::Closed { reason } => seen.push(format!("closed {reason:?}")),
            _ => {}
        }
    }
    seen
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":4242,"trace":"messages","capabilities":{"window":{"workDoneProgress":true}}}}"#;

#[test]
fn requests_before_initialize_get_server_not_initialized_and_notifications_are_dropped() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    let hover = r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}"#;
    assert!(feed(&mut conn, hover, now).is_empty());
    assert_eq!(
        sent(&mut conn),
        "Content-Length: 83\r\n\r\n{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32002,\"message\":\"Server not initialized\"},\"id\":7}"
    );
    let open = r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{}}"#;
    assert!(feed(&mut conn, open, now).is_empty());
    assert_eq!(feed(&mut conn, INITIALIZE, now), ["initialize"]);
    assert_eq!(feed(&mut conn, open, now), ["textDocument/didOpen"]);
    assert_eq!(feed(&mut conn, hover, now), ["textDocument/hover"]);
    // initialize only once.
    sent(&mut conn);
    assert!(feed(&mut conn, INITIALIZE, now).is_empty());
    assert!(sent(&mut conn).contains(r#""code":-32600"#));
}

/// LSP 3.17's `InitializeError`: a server that answers `initialize` with an error (`retry`:
/// true) lets the client send it again; until one succeeds, the server is not initialized.
/// The second `initialize` was refused "may only be sent once", and requests between went
/// to the application.
#[test]
fn initialize_answered_with_an_error_may_be_sent_again() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    conn.handle_input(&frame(INITIALIZE), now).unwrap();
    let Some(Event::Request { handle, .. }) = conn.poll_event() else {
        panic!("initialize handed out");
    };
    let retry = RawValue::from_json(r#"{"retry":true}"#).unwrap();
    let error = sansrpc::ErrorObject::new(1, "not ready").with_data(retry);
    conn.respond(handle, Err(&error));
    assert!(sent(&mut conn).contains(r#""error":{"code":1"#));
    // Not initialized: requests refused, as before the first.
    let hover = r#"{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}"#;
    assert!(feed(&mut conn, hover, now).is_empty());
    assert!(sent(&mut conn).contains(r#""code":-32002"#));
    // The retry is handed out, answered, and the server runs.
    let again = INITIALIZE.replace(r#""id":1"#, r#""id":2"#);
    assert_eq!(feed(&mut conn, &again, now), ["initialize"]);
    assert!(sent(&mut conn).contains(r#""result":null,"id":2"#));
    assert_eq!(feed(&mut conn, hover, now), ["textDocument/hover"]);
    // Now initialized: once only.
    sent(&mut conn);
    let third = INITIALIZE.replace(r#""id":1"#, r#""id":3"#);
    assert!(feed(&mut conn, &third, now).is_empty());
    assert!(sent(&mut conn).contains(r#""code":-32600"#));
}

#[test]
fn after_shutdown_requests_are_invalid_and_exit_ends_with_status_0() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    feed(&mut conn, INITIALIZE, now);
    let shutdown = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#;
    assert_eq!(feed(&mut conn, shutdown, now), ["shutdown"]);
    sent(&mut conn);
    let hover = r#"{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{}}"#;
    assert!(feed(&mut conn, hover, now).is_empty());
    assert!(sent(&mut conn).contains(
        r#"{"code":-32600,"message":"Invalid Request: the server is shutting down"},"id":3}"#
    ));
    let change = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{}}"#;
    assert!(feed(&mut conn, change, now).is_empty(), "dropped");
    assert_eq!(conn.exit_code(), None);
    let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
    assert_eq!(
        feed(&mut conn, exit, now),
        [format!("closed {:?}", CloseReason::Exit { code: 0 })]
    );
    assert_eq!(conn.exit_code(), Some(0));
}

#[test]
fn exit_without_shutdown_ends_with_status_1_even_before_initialize() {
    let mut conn = lsp();
    let exit = r#"{"jsonrpc":"2.0","method":"exit"}"#;
    assert_eq!(
        feed(&mut conn, exit, Instant::ZERO),
        [format!("closed {:?}", CloseReason::Exit { code: 1 })]
    );
    assert_eq!(conn.exit_code(), Some(1));
}

#[test]
fn the_editor_process_is_checked_on_a_timer_and_its_death_ends_the_server() {
    let mut conn = lsp();
    let t0 = Instant::ZERO;
    feed(&mut conn, INITIALIZE, t0);
    let check = t0 + Duration::from_secs(3);
    assert_eq!(conn.poll_timeout(), Some(check));
    conn.handle_timeout(check);
    assert_eq!(feed_nothing(&mut conn), ["check 4242"]);
    // Still there: asked again 3 s later.
    assert_eq!(conn.poll_timeout(), Some(check + Duration::from_secs(3)));
    conn.handle_client_gone(check);
    assert_eq!(
        feed_nothing(&mut conn),
        [format!("closed {:?}", CloseReason::Exit { code: 1 })]
    );
    assert_eq!(conn.exit_code(), Some(1));
}

fn feed_nothing(conn: &mut Connection) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = conn.poll_event() {
        match event {
            Event::CheckProcess { pid } => seen.push(format!("check {pid}")),
            Event::Closed { reason } => seen.push(format!("closed {reason:?}")),
            other => seen.push(format!("{other:?}")),
        }
    }
    seen
}

#[test]
fn set_trace_controls_log_trace() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    assert!(
        !conn.log_trace("before", None),
        "off until initialize says otherwise"
    );
    feed(&mut conn, INITIALIZE, now);
    sent(&mut conn);
    assert_eq!(conn.trace(), Trace::Messages);
    assert!(conn.client_creates_progress());
    assert!(conn.log_trace("parsing", Some("42 files")));
    assert!(sent(&mut conn)
        .ends_with(r#"{"jsonrpc":"2.0","method":"$/logTrace","params":{"message":"parsing"}}"#));
    let verbose = r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"verbose"}}"#;
    assert!(
        feed(&mut conn, verbose, now).is_empty(),
        "taken by the lifecycle"
    );
    assert!(conn.log_trace("parsing", Some("42 files")));
    assert!(sent(&mut conn).ends_with(r#"{"message":"parsing","verbose":"42 files"}}"#));
    let off = r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#;
    feed(&mut conn, off, now);
    assert!(!conn.log_trace("quiet", None));
}

/// A client that sends a whole session at once (`shutdown` and `exit` in one write, before
/// the server answered) still gets the answers to the requests read before `exit`, and the
/// status is 0; the connection closes once they are written, not before.
#[test]
fn exit_right_behind_shutdown_still_answers_what_was_read_before_it() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    let mut wire = frame(INITIALIZE);
    wire.extend(frame(
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    ));
    wire.extend(frame(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#));
    wire.extend(frame(r#"{"jsonrpc":"2.0","method":"exit"}"#));
    conn.handle_input(&wire, now).unwrap();
    // The handlers answer later (async ones would), after `exit` was read.
    let mut running = Vec::new();
    while let Some(event) = conn.poll_event() {
        match event {
            Event::Request { handle, .. } => running.push(handle),
            Event::Notification(_) => conn.notification_done(),
            Event::Closed { reason } => panic!("closed before the answers: {reason:?}"),
            _ => {}
        }
    }
    assert_eq!(running.len(), 2, "initialize and shutdown");
    assert!(!conn.is_closed());
    for handle in running {
        conn.respond(handle, Ok(RawValue::from_json("null").unwrap()));
    }
    let mut closed = None;
    while let Some(event) = conn.poll_event() {
        if let Event::Closed { reason } = event {
            closed = Some(reason);
        }
    }
    assert_eq!(closed, Some(CloseReason::Exit { code: 0 }));
    let out = sent(&mut conn);
    assert!(
        out.contains(r#""id":1"#) && out.contains(r#""id":2"#),
        "{out}"
    );
    assert_eq!(conn.exit_code(), Some(0));
}

/// What the application sees of the events polled now, answering requests `null` at once
/// but leaving every notification running (its handler has not finished).
fn poll_leaving_notifications_running(conn: &mut Connection) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = conn.poll_event() {
        match event {
            Event::Request { handle, request } => {
                seen.push(request.method.to_string());
                conn.respond(handle, Ok(RawValue::from_json("null").unwrap()));
            }
            Event::Notification(n) => seen.push(n.method.to_string()),
            Event::Closed { reason } => seen.push(format!("closed {reason:?}")),
            _ => {}
        }
    }
    seen
}

const DID_CHANGE: &str = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{}}"#;
const HOVER: &str = r#"{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{}}"#;
const SHUTDOWN: &str = r#"{"jsonrpc":"2.0","id":3,"method":"shutdown"}"#;

/// The editor's last words before its end of input: a change whose handler is still running
/// (it awaits), then a hover and `shutdown` held behind it.
fn ended_with_a_notification_running() -> Connection {
    let mut conn = lsp();
    let now = Instant::ZERO;
    assert_eq!(feed(&mut conn, INITIALIZE, now), ["initialize"]);
    let mut input = frame(DID_CHANGE);
    input.extend(frame(HOVER));
    input.extend(frame(SHUTDOWN));
    conn.handle_input(&input, now).unwrap();
    conn.handle_end_of_input(now);
    assert_eq!(
        poll_leaving_notifications_running(&mut conn),
        ["textDocument/didChange"]
    );
    conn
}

#[test]
fn at_the_end_of_input_a_running_notification_finishes_and_the_requests_behind_it_are_answered() {
    let mut conn = ended_with_a_notification_running();
    // The handler is still running: the connection waits for it, up to `end_grace`.
    assert!(!conn.is_closed());
    conn.handle_timeout(Instant::from_millis(20));
    assert!(poll_leaving_notifications_running(&mut conn).is_empty());
    assert!(!conn.is_closed());
    // It finishes (its publishDiagnostics could go out meanwhile); then the requests read
    // before the end are handed out in order and answered, and only then does it close.
    conn.notify("textDocument/publishDiagnostics", None)
        .unwrap();
    conn.notification_done();
    assert_eq!(
        poll_leaving_notifications_running(&mut conn),
        ["textDocument/hover", "shutdown", "closed PeerClosed"]
    );
    let out = sent(&mut conn);
    let diagnostics = out.find("publishDiagnostics").unwrap();
    let hover = out.find(r#""id":2"#).unwrap();
    let shutdown = out.find(r#""id":3"#).unwrap();
    assert!(diagnostics < hover && hover < shutdown, "{out}");
    // `shutdown` was answered: the process exits 0.
    assert_eq!(conn.exit_code(), Some(0));
}

#[test]
fn at_the_end_of_input_a_notification_that_never_finishes_is_given_end_grace_and_exit_is_1() {
    let mut conn = ended_with_a_notification_running();
    let grace = conn.config().end_grace;
    conn.handle_timeout(Instant::ZERO.saturating_add(grace - Duration::from_millis(1)));
    assert!(poll_leaving_notifications_running(&mut conn).is_empty());
    conn.handle_timeout(Instant::ZERO.saturating_add(grace));
    assert_eq!(
        poll_leaving_notifications_running(&mut conn),
        ["closed PeerClosed"]
    );
    // `shutdown` was read but never answered: not a clean exit.
    assert_eq!(conn.exit_code(), Some(1));
}

#[test]
fn a_shutdown_handed_out_but_never_answered_is_not_a_clean_exit() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    feed(&mut conn, INITIALIZE, now);
    conn.handle_input(&frame(SHUTDOWN), now).unwrap();
    let Some(Event::Request { request, .. }) = conn.poll_event() else {
        panic!("shutdown handed out")
    };
    assert_eq!(request.method, "shutdown");
    // The handler never answers; the editor goes away.
    conn.handle_end_of_input(now);
    assert!(conn.poll_event().is_none());
    conn.handle_timeout(now.saturating_add(conn.config().end_grace));
    assert!(matches!(
        conn.poll_event(),
        Some(Event::Closed {
            reason: CloseReason::PeerClosed
        })
    ));
    assert_eq!(conn.exit_code(), Some(1));
}

/// Zed, Emacs's eglot, LSP4IJ and Atom send `"params": null` on parameterless messages: the
/// profile reads it as absent, so `initialized`, `shutdown` and `exit` work as without it
/// and the exit is clean.
#[test]
fn null_params_on_initialized_shutdown_and_exit_are_read_as_absent_and_exit_is_0() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    assert_eq!(feed(&mut conn, INITIALIZE, now), ["initialize"]);
    sent(&mut conn);
    let initialized = r#"{"jsonrpc":"2.0","method":"initialized","params":null}"#;
    assert_eq!(feed(&mut conn, initialized, now), ["initialized"]);
    let shutdown = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown","params":null}"#;
    conn.handle_input(&frame(shutdown), now).unwrap();
    match conn.poll_event() {
        Some(Event::Request { handle, request }) => {
            assert_eq!(request.method, "shutdown");
            assert!(request.params.is_none(), "null is absent");
            conn.respond(handle, Ok(RawValue::from_json("null").unwrap()));
        }
        other => panic!("shutdown not handed out: {other:?}"),
    }
    assert_eq!(
        sent(&mut conn),
        "Content-Length: 38\r\n\r\n{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":2}"
    );
    let exit = r#"{"jsonrpc":"2.0","method":"exit","params":null}"#;
    assert_eq!(
        feed(&mut conn, exit, now),
        [format!("closed {:?}", CloseReason::Exit { code: 0 })]
    );
    assert_eq!(conn.exit_code(), Some(0));
    assert_eq!(sent(&mut conn), "", "nothing refused");
}

/// Null params on a request whose method takes params reach it as absent too (its handler
/// decides: lsp-types' params do not decode from nothing, `-32602`); with whitespace
/// around the `null`, and in a batch, the same.
#[test]
fn null_params_on_any_request_reach_the_application_as_absent() {
    let mut conn = lsp();
    let now = Instant::ZERO;
    feed(&mut conn, INITIALIZE, now);
    sent(&mut conn);
    let hover = r#"{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params": null }"#;
    conn.handle_input(&frame(hover), now).unwrap();
    match conn.poll_event() {
        Some(Event::Request { request, .. }) => assert!(request.params.is_none()),
        other => panic!("hover not handed out: {other:?}"),
    }
}

/// Outside the profile, JSON-RPC 2.0 is kept: `"params": null` is an Invalid Request.
#[test]
fn null_params_are_refused_outside_the_lsp_profile() {
    for profile in [Profile::JsonRpc, Profile::Mcp] {
        let mut config = Config::for_profile(profile);
        config.framing = Some(sansrpc::codec::Framing::ContentLength);
        let mut conn = Connection::new(config, Instant::ZERO);
        let shutdown = r#"{"jsonrpc":"2.0","id":2,"method":"shutdown","params":null}"#;
        assert!(feed(&mut conn, shutdown, Instant::ZERO).is_empty());
        assert!(
            sent(&mut conn).contains(
                r#"{"code":-32600,"message":"Invalid Request: params must be an array or an object"},"id":2}"#
            ),
            "{profile:?}"
        );
    }
}
