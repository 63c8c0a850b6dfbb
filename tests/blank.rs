//! `Connection::is_blank`: the rule by which a server whose exchanges are independent (one
//! HTTP POST at a time on a connection) may hand any exchange to whichever blank machine it
//! used last. Blank between exchanges, never in the middle of one, and never while the
//! connection holds state of its own across them.

use std::time::Duration;

use sansrpc::connection::{Config, Connection, Event, Profile, RateLimit, RequestOptions};
use sansrpc::{Instant, RawValue};

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

/// A message transport's connection (an HTTP server's), with `f` applied to its config.
fn machine(f: impl FnOnce(&mut Config)) -> Connection {
    let mut config = Config::default();
    config.framing = None;
    config.idle_timeout = None;
    config.frame_timeout = None;
    f(&mut config);
    Connection::new(config, Instant::ZERO)
}

/// Writes out everything the connection has to send.
fn write_out(conn: &mut Connection) -> String {
    let mut out = Vec::new();
    while conn.poll_transmit(&mut out).is_some() {}
    String::from_utf8(out).unwrap()
}

/// One request handed in, handed out, answered and written, checking at each step.
fn exchange(conn: &mut Connection, id: u32, now: Instant) {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"add","params":[1,2]}}"#);
    conn.handle_message(body.as_bytes(), now).unwrap();
    assert!(!conn.is_blank(), "a request queued");
    let Some(Event::Request { handle, .. }) = conn.poll_event() else {
        panic!("the request")
    };
    assert!(!conn.is_blank(), "a request handed out and not answered");
    conn.respond(handle, Ok(RawValue::from_json("3").unwrap()));
    assert!(!conn.is_blank(), "an answer not written");
    let answer = write_out(conn);
    assert_eq!(
        answer,
        format!(r#"{{"jsonrpc":"2.0","result":3,"id":{id}}}"#)
    );
    assert!(conn.poll_event().is_none());
}

#[test]
fn a_connection_is_blank_between_independent_exchanges_and_only_then() {
    let mut conn = machine(|_| {});
    assert!(conn.is_blank(), "new");
    exchange(&mut conn, 1, ms(1));
    assert!(conn.is_blank(), "answered and written");
    exchange(&mut conn, 2, ms(2));
    assert!(conn.is_blank());

    // A notification's handler may still run: the driver's side knows that, not the
    // connection. Under ordered notifications the connection waits for it too.
    let mut ordered = machine(|c| c.ordered_notifications = true);
    ordered
        .handle_message(br#"{"jsonrpc":"2.0","method":"note"}"#, ms(1))
        .unwrap();
    assert!(!ordered.is_blank(), "a notification queued");
    assert!(matches!(ordered.poll_event(), Some(Event::Notification(_))));
    assert!(!ordered.is_blank(), "its handler not done");
    ordered.notification_done();
    assert!(ordered.is_blank());

    // A call of ours in flight: its answer is this connection's.
    let mut calling = machine(|_| {});
    let options = RequestOptions::default();
    calling.call(7, "ping", None, options, ms(1)).unwrap();
    write_out(&mut calling);
    assert!(!calling.is_blank(), "our call waits for its answer");
    calling
        .handle_message(br#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#, ms(2))
        .unwrap();
    while calling.poll_client_event().is_some() {}
    assert!(calling.is_blank(), "answered");

    // Input held back by a full connection, or the end of it.
    let mut ended = machine(|_| {});
    ended.handle_end_of_input(ms(1));
    assert!(!ended.is_blank(), "its input ended");
    let mut closing = machine(|_| {});
    closing.shutdown(Duration::from_secs(1), ms(1));
    assert!(!closing.is_blank(), "shutting down");
}

#[test]
fn state_a_connection_keeps_across_exchanges_makes_it_never_blank() {
    // Each rule below is the connection's own across exchanges: handed to another
    // connection's exchange, it would count that connection's requests, time its silence,
    // or answer its pings.
    let limited = machine(|c| c.rate_limit = Some(RateLimit::new(10, 10)));
    assert!(!limited.is_blank(), "a rate limit's bucket");
    let idle = machine(|c| c.idle_timeout = Some(Duration::from_secs(5)));
    assert!(!idle.is_blank(), "an idle timeout");
    let lsp = machine(|c| c.profile = Profile::Lsp);
    assert!(!lsp.is_blank(), "an LSP lifecycle");

    // A frame partly received (a byte stream's), and a framed connection with nothing.
    let mut framed = Connection::new(Config::default(), Instant::ZERO);
    let config = framed.config();
    assert!(config.framing.is_some());
    let timed = config.idle_timeout.is_some() || config.frame_timeout.is_some();
    assert_eq!(framed.is_blank(), !timed);
    framed
        .handle_input(b"Content-Length: 40\r\n\r\n{\"jsonrpc\"", ms(1))
        .unwrap();
    assert!(!framed.is_blank(), "a frame partly received");
}
