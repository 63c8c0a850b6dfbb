//! The rules that keep an LSP (or any) server correct while it holds the peer's calls back,
//! in virtual time on the connection machine: a notification is a barrier for the calls
//! behind it, held input is still read for answers and cancellations, and only a bound on
//! held bytes stops the input.

use sansrpc::connection::{Config, Connection, Event};
use sansrpc::connection::{Profile, RequestOptions};
use sansrpc::{Instant, RawValue};

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn request(id: u64, method: &str) -> Vec<u8> {
    frame(&format!(
        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}},"id":{id}}}"#
    ))
}

fn notification(method: &str) -> Vec<u8> {
    frame(&format!(
        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{}}}}"#
    ))
}

/// A connection in `profile` (without the LSP lifecycle: these requests need no
/// `initialize` first).
fn connection(profile: Profile, f: impl FnOnce(&mut Config)) -> Connection {
    let mut c = Config::for_profile(profile);
    f(&mut c);
    let mut config = c;
    config.lsp_lifecycle = false;
    Connection::new(config, Instant::ZERO)
}

/// What the connection hands out, in order, until it has nothing more.
#[derive(Debug, PartialEq)]
enum Seen {
    Request(String, sansrpc::connection::IncomingId),
    Notification(String),
    Answer(u64, String),
}

fn drain(conn: &mut Connection) -> Vec<Seen> {
    let mut seen = Vec::new();
    while let Some(event) = conn.poll_event() {
        seen.push(match event {
            Event::Request { handle, request } => {
                Seen::Request(request.method.into_owned(), handle)
            }
            Event::Notification(n) => Seen::Notification(n.method.into_owned()),
            Event::Answer { token, result, .. } => {
                Seen::Answer(token, result.unwrap().get().to_owned())
            }
            other => panic!("unexpected {other:?}"),
        });
    }
    seen
}

fn names(seen: &[Seen]) -> Vec<&str> {
    seen.iter()
        .map(|s| match s {
            Seen::Request(m, _) | Seen::Notification(m) => m.as_str(),
            Seen::Answer(..) => "answer",
        })
        .collect()
}

fn handle(seen: &Seen) -> sansrpc::connection::IncomingId {
    match seen {
        Seen::Request(_, h) => *h,
        other => panic!("not a request: {other:?}"),
    }
}

/// `didChange` then `hover`: the hover is handed out only once the didChange's handler
/// reported it finished, however long it awaits; two requests in a row both run at once.
#[test]
fn a_notification_is_a_barrier_for_the_calls_behind_it_under_lsp() {
    let mut conn = connection(Profile::Lsp, |_| {});
    let now = Instant::ZERO;
    let mut input = notification("textDocument/didChange");
    input.extend_from_slice(&request(1, "textDocument/hover"));
    input.extend_from_slice(&request(2, "textDocument/definition"));
    input.extend_from_slice(&notification("textDocument/didChange"));
    input.extend_from_slice(&request(3, "textDocument/hover"));
    assert_eq!(conn.handle_input(&input, now).unwrap(), input.len());
    assert_eq!(names(&drain(&mut conn)), ["textDocument/didChange"]);
    // The handler awaits something: nothing more, however often the driver asks.
    assert!(drain(&mut conn).is_empty());
    conn.notification_done();
    let seen = drain(&mut conn);
    assert_eq!(
        names(&seen),
        [
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/didChange"
        ],
        "the two requests run together, the next notification does not wait for them"
    );
    assert!(drain(&mut conn).is_empty());
    conn.notification_done();
    assert_eq!(names(&drain(&mut conn)), ["textDocument/hover"]);
}

/// Without the option (the default profile), calls are handed out as they come.
#[test]
fn without_ordering_a_request_does_not_wait_for_a_notification() {
    let mut conn = connection(Profile::JsonRpc, |_| {});
    let mut input = notification("didChange");
    input.extend_from_slice(&request(1, "hover"));
    conn.handle_input(&input, Instant::ZERO).unwrap();
    assert_eq!(names(&drain(&mut conn)), ["didChange", "hover"]);
}

/// One handler running (the in-flight bound is 1) waits on a call to the peer: the
/// peer's next request is held, but the answer behind it is read and handed out, so the
/// handler finishes and the held request runs. (Before, holding stopped all input: the
/// answer was never read, a deadlock.)
#[test]
fn answers_are_read_while_requests_are_held() {
    let mut conn = connection(Profile::Lsp, |c| c.max_inflight_incoming = 1);
    let now = Instant::ZERO;
    conn.handle_input(&request(1, "custom/greet"), now).unwrap();
    let running = drain(&mut conn);
    assert_eq!(names(&running), ["custom/greet"]);
    // The handler asks the client; our call's id is 1.
    let items = RawValue::from_json(r#"{"items":[]}"#).unwrap();
    conn.call(
        77,
        "workspace/configuration",
        Some(items),
        RequestOptions::default(),
        now,
    )
    .unwrap();
    let mut out = Vec::new();
    while conn.poll_transmit(&mut out).is_some() {}
    // The client sends another request, then the answer.
    let mut input = request(2, "textDocument/hover");
    input.extend_from_slice(&frame(r#"{"jsonrpc":"2.0","result":["Hi"],"id":1}"#));
    assert_eq!(conn.handle_input(&input, now).unwrap(), input.len());
    assert_eq!(drain(&mut conn), [Seen::Answer(77, r#"["Hi"]"#.into())]);
    conn.respond(
        handle(&running[0]),
        Ok(RawValue::from_json("\"Hi, you!\"").unwrap()),
    );
    assert_eq!(names(&drain(&mut conn)), ["textDocument/hover"]);
}

/// A held request the peer cancels is answered as cancelled at once and never handed out.
#[test]
fn a_held_request_cancelled_is_answered_at_once() {
    let mut conn = connection(Profile::Lsp, |c| c.max_inflight_incoming = 1);
    let now = Instant::ZERO;
    let mut input = request(1, "slow");
    input.extend_from_slice(&request(2, "held"));
    input.extend_from_slice(&frame(
        r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}"#,
    ));
    conn.handle_input(&input, now).unwrap();
    let running = drain(&mut conn);
    assert_eq!(names(&running), ["slow"]);
    let mut out = Vec::new();
    while conn.poll_transmit(&mut out).is_some() {}
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.ends_with(
            r#"{"jsonrpc":"2.0","error":{"code":-32800,"message":"Request cancelled"},"id":2}"#
        ),
        "{out}"
    );
    conn.respond(handle(&running[0]), Ok(RawValue::from_json("1").unwrap()));
    assert!(
        drain(&mut conn).is_empty(),
        "the cancelled request never runs"
    );
}

/// Held input is bounded: past `max_held_bytes` the connection takes no more input (a
/// socket's back-pressure), and takes it again once the held calls go out.
#[test]
fn held_input_stops_at_its_bound() {
    let mut conn = connection(Profile::JsonRpc, |c| {
        c.max_inflight_incoming = 1;
        c.max_held_bytes = 1024;
    });
    let now = Instant::ZERO;
    let mut input = Vec::new();
    for id in 1..=100 {
        input.extend_from_slice(&request(id, "work"));
    }
    // Offered as a socket delivers it, 500 bytes a read, until the connection takes none.
    let mut held = 0;
    let mut running = Vec::new();
    loop {
        let piece = &input[held..(held + 500).min(input.len())];
        let n = conn.handle_input(piece, now).unwrap();
        held += n;
        running.extend(drain(&mut conn));
        if n == 0 {
            break;
        }
    }
    assert_eq!(running.len(), 1);
    assert!(conn.is_holding());
    assert!(held < 1024 + 500, "{held} bytes taken");
    // About 1 KiB of request bodies (55 bytes each) kept, besides the one running.
    assert!(conn.requests_in_flight() <= 22);
    assert!(!conn.wants_input());
    // Answering lets the held requests out one by one, and the input in again.
    let mut answered = 0;
    let mut next = running;
    let mut offset = held;
    while answered < 100 {
        let h = handle(&next[0]);
        conn.respond(h, Ok(RawValue::from_json("1").unwrap()));
        answered += 1;
        offset += conn.handle_input(&input[offset..], now).unwrap();
        next = drain(&mut conn);
        assert!(next.len() <= 1, "one at a time: {next:?}");
        if answered < 100 {
            assert_eq!(next.len(), 1, "after {answered}");
        }
    }
    assert_eq!(offset, input.len());
}
