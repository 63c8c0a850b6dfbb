//! The connection machine in virtual time: two machines wired back to back.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::wire::Timeout;

/// What a driver's turn reads of the connection itself (its phase, hook, close reason,
/// whether it keeps the LSP lifecycle, its flags) lies in one cache line, right after the
/// wire (which is first: a call on it needs no offset).
#[test]
fn a_turn_reads_one_cache_line_of_the_connection_beside_the_wire() {
    use core::mem::{offset_of, size_of};
    assert_eq!(offset_of!(Connection, wire), 0);
    let line = size_of::<crate::wire::Wire>();
    assert_eq!(line % 64, 0, "the wire fills whole lines");
    for (name, at, size) in [
        ("phase", offset_of!(Connection, phase), size_of::<Phase>()),
        (
            "hook",
            offset_of!(Connection, hook),
            size_of::<Option<Box<dyn ConnectionHook>>>(),
        ),
        (
            "reason",
            offset_of!(Connection, reason),
            size_of::<Option<CloseReason>>(),
        ),
        (
            "lsp",
            offset_of!(Connection, lsp),
            size_of::<Option<Box<lsp::Lsp>>>(),
        ),
        ("input_ended", offset_of!(Connection, input_ended), 1),
        ("finished", offset_of!(Connection, finished), 1),
        ("timed", offset_of!(Connection, timed), 1),
    ] {
        assert!(
            at >= line && at + size <= line + 64,
            "{name} at {at}, the line at {line}"
        );
    }
}

fn raw(s: &str) -> &RawValue {
    RawValue::from_json(s).unwrap()
}

fn at(ms: u64) -> Instant {
    Instant::from_duration(Duration::from_millis(ms))
}

/// An owned copy of an event, to assert on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Request(IncomingId, String, Option<String>),
    Notification(String, Option<String>),
    Answer(u64, usize, Result<String, i64>, bool),
    Ended(u64, usize, EndReason, bool),
    Cancel(IncomingId),
    #[cfg(feature = "streams")]
    StreamClosed(u64),
    Other,
    Closed(CloseReason),
}

fn events(c: &mut Connection) -> Vec<Seen> {
    events_of(c, Connection::poll_event)
}

/// The events of [`Connection::poll_client_event`].
fn client_events(c: &mut Connection) -> Vec<Seen> {
    events_of(c, Connection::poll_client_event)
}

/// The events of [`Connection::poll_answering_event`].
fn answering_events(c: &mut Connection) -> Vec<Seen> {
    events_of(c, Connection::poll_answering_event)
}

fn events_of(
    c: &mut Connection,
    poll: for<'a> fn(&'a mut Connection) -> Option<Event<'a>>,
) -> Vec<Seen> {
    let mut out = Vec::new();
    while let Some(e) = poll(c) {
        out.push(match e {
            Event::Request { handle, request } => Seen::Request(
                handle,
                request.method.to_string(),
                request.params.map(|p| p.get().to_string()),
            ),
            Event::Notification(n) => {
                Seen::Notification(n.method.to_string(), n.params.map(|p| p.get().to_string()))
            }
            Event::Answer {
                token,
                index,
                result,
                last,
            } => Seen::Answer(
                token,
                index,
                result.map(|r| r.get().to_string()).map_err(|e| e.code),
                last,
            ),
            Event::Ended {
                token,
                index,
                reason,
                last,
            } => Seen::Ended(token, index, reason, last),
            Event::Cancel { handle } => Seen::Cancel(handle),
            #[cfg(feature = "streams")]
            Event::StreamClosed { stream } => Seen::StreamClosed(stream),
            Event::Closed { reason } => Seen::Closed(reason),
            _ => Seen::Other,
        });
    }
    out
}

/// Moves everything `from` has to write into `to`; the bytes moved.
fn send(from: &mut Connection, to: &mut Connection, now: Instant) -> String {
    let mut wire = Vec::new();
    while from.poll_transmit(&mut wire).is_some() {}
    from.handle_write(!wire.is_empty(), false, now);
    let taken = to.handle_input(&wire, now).unwrap();
    assert_eq!(taken, wire.len());
    String::from_utf8(wire).unwrap()
}

fn pair() -> (Connection, Connection) {
    (
        Connection::new(Config::default(), Instant::ZERO),
        Connection::new(Config::default(), Instant::ZERO),
    )
}

fn request_handle(seen: &[Seen]) -> IncomingId {
    seen.iter()
        .find_map(|s| match s {
            Seen::Request(h, ..) => Some(*h),
            _ => None,
        })
        .expect("a request")
}

#[test]
fn answers_come_back_with_the_callers_token() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(41, "a", Some(raw("[1]")), RequestOptions::default(), now)
        .unwrap();
    client
        .call(42, "b", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let seen = events(&mut server);
    assert_eq!(seen.len(), 2);
    assert_eq!(server.running(), 2);
    // Answered in the other order.
    let handles: Vec<_> = seen
        .iter()
        .map(|s| match s {
            Seen::Request(h, m, _) => (*h, m.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    server.respond(handles[1].0, Ok(raw("\"B\"")));
    server.respond(handles[0].0, Err(&ErrorObject::fixed(-1, "no")));
    assert_eq!(server.running(), 0);
    send(&mut server, &mut client, now);
    assert_eq!(
        events(&mut client),
        vec![
            Seen::Answer(42, 0, Ok("\"B\"".into()), true),
            Seen::Answer(41, 0, Err(-1), true),
        ]
    );
    assert_eq!(client.waiting_calls(), 0);
}

#[test]
fn calls_a_transport_could_not_get_answered_end_with_its_reason() {
    // A message transport: each frame goes out alone (one HTTP POST each).
    let config = Config::default().for_transport(true);
    let mut client = Connection::new(config, Instant::ZERO);
    let now = Instant::ZERO;
    let frame = |c: &mut Connection| {
        let mut frame = Vec::new();
        c.poll_transmit(&mut frame).expect("a frame");
        frame
    };
    client
        .call(1, "a", None, RequestOptions::default(), now)
        .unwrap();
    let single = frame(&mut client);
    let mut batch = client.batch(2, now);
    batch.call("b", None, RequestOptions::default()).unwrap();
    batch.notify("n", None).unwrap();
    batch.call("c", None, RequestOptions::default()).unwrap();
    batch.send().unwrap();
    let batched = frame(&mut client);
    client.notify("alone", None).unwrap();
    let notification = frame(&mut client);

    let unanswered = EndReason::Unanswered { status: Some(502) };
    assert_eq!(client.end_unanswered(&single, unanswered, now), 1);
    assert_eq!(client.end_unanswered(&notification, unanswered, now), 0);
    // The batch's body answered its first call only.
    client
        .handle_message(br#"[{"jsonrpc":"2.0","id":2,"result":7}]"#, now)
        .unwrap();
    let lost = EndReason::Unanswered { status: None };
    assert_eq!(client.end_unanswered(&batched, lost, now), 1);
    assert_eq!(client.end_unanswered(&batched, lost, now), 0, "ended once");
    assert_eq!(
        events(&mut client),
        vec![
            Seen::Ended(1, 0, unanswered, true),
            Seen::Answer(2, 0, Ok("7".into()), false),
            Seen::Ended(2, 1, lost, true),
        ]
    );
    assert_eq!(client.waiting_calls(), 0);
    // No cancellation goes out for them: the transport knows they are not coming.
    assert!(client.poll_transmit(&mut Vec::new()).is_none());
}

#[test]
fn a_batch_answers_each_call_with_its_index_and_marks_the_last() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    let mut batch = client.batch(9, now);
    batch.call("x", None, RequestOptions::default()).unwrap();
    batch.notify("n", None).unwrap();
    batch.call("y", None, RequestOptions::default()).unwrap();
    assert_eq!(batch.send(), Ok(2));
    let wire = send(&mut client, &mut server, now);
    assert!(wire.contains('['), "{wire}");
    let seen = events(&mut server);
    assert_eq!(seen.len(), 3);
    for s in &seen {
        if let Seen::Request(h, m, _) = s {
            let answer = alloc::format!("\"{m}\"");
            server.respond(*h, Ok(raw(&answer)));
        }
    }
    send(&mut server, &mut client, now);
    let mut seen = events(&mut client);
    seen.sort_by_key(|s| match s {
        Seen::Answer(_, i, ..) => *i,
        _ => 99,
    });
    assert_eq!(seen.len(), 2);
    assert!(matches!(&seen[0], Seen::Answer(9, 0, Ok(r), _) if r == "\"x\""));
    assert!(matches!(&seen[1], Seen::Answer(9, 1, Ok(r), _) if r == "\"y\""));
    // Exactly one of them is the last.
    let lasts = seen
        .iter()
        .filter(|s| matches!(s, Seen::Answer(.., true)))
        .count();
    assert_eq!(lasts, 1);

    // A batch of notifications only holds no call and waits for nothing.
    let mut batch = client.batch(10, now);
    batch.notify("n", None).unwrap();
    assert_eq!(batch.send(), Ok(0));
    assert_eq!(client.waiting_calls(), 0);
}

/// `Classifier::scanned` hands on what a classification found only for text: bytes that are
/// not (or no classification of the shape named) go on unscanned, and the connection scans
/// them (a parse error), never reading them as text. They were read as text unchecked
/// (undefined behaviour), or indexed an empty classification (a panic).
#[test]
fn scanned_bytes_that_cannot_be_those_classified_are_scanned_again() {
    use crate::message::{Classified, Classifier, Scanned};
    let frame = br#"{"jsonrpc":"2.0","method":"m","id":1}"#;
    let mut classifier = Classifier::new(Config::default().limits);
    assert!(matches!(classifier.classify(frame), Classified::Single(_)));
    let good = classifier.scanned(frame.to_vec(), false);
    assert!(good.is_scanned());
    assert!(matches!(classifier.classify(frame), Classified::Single(_)));
    let mut other = classifier.scanned(vec![0xff; frame.len()], false);
    assert!(!other.is_scanned());
    // After a rejection, and once a batch's entries were handed on: nothing to hand on.
    assert!(matches!(
        classifier.classify(b"[]"),
        Classified::Rejected(_)
    ));
    assert!(!classifier.scanned(b"[]".to_vec(), false).is_scanned());
    let batch = br#"[{"jsonrpc":"2.0","method":"m","id":1}]"#;
    assert!(matches!(classifier.classify(batch), Classified::Batch(_)));
    assert!(classifier.scanned(batch.to_vec(), true).is_scanned());
    assert!(!classifier.scanned(batch.to_vec(), true).is_scanned());
    // The connection scans what came unscanned: a parse error, answered.
    let config = Config {
        framing: Some(crate::codec::Framing::Newline),
        ..Config::default()
    };
    let mut server = Connection::new(config, Instant::ZERO);
    server
        .handle_scanned_tagged(&mut other, 0, Instant::ZERO)
        .unwrap();
    let seen = events(&mut server);
    assert!(
        !seen.iter().any(|s| matches!(s, Seen::Request(..))),
        "{seen:?}"
    );
    let mut out = Vec::new();
    while server.poll_transmit(&mut out).is_some() {}
    assert!(String::from_utf8(out).unwrap().contains(r#""code":-32700"#));
    let _: Scanned = good;
}

/// A batch whose request the peer cancels in the same batch, before it was handed out: the
/// batch's answers still go out as one array once every entry is processed (the cancelled
/// request's answer, the invalid entry's, the other request's). The array went out when
/// the cancel answered the only request registered so far, and what followed went out as
/// single objects.
#[test]
fn a_cancel_inside_a_batch_keeps_its_answers_in_one_array() {
    let config = Config {
        framing: Some(crate::codec::Framing::Newline),
        ..Config::default()
    };
    let mut server = Connection::new(config, Instant::ZERO);
    let now = Instant::ZERO;
    let batch = br#"[{"jsonrpc":"2.0","method":"work","id":1},{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}},{"jsonrpc":"2.0","method":"work","id":2},{"jsonrpc":"2.0","method":1}]"#;
    let mut wire = batch.to_vec();
    wire.push(b'\n');
    server.handle_input(&wire, now).unwrap();
    let seen = events(&mut server);
    let handle = request_handle(&seen);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let mut out = Vec::new();
    while server.poll_transmit(&mut out).is_some() {}
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    server.respond(handle, Ok(raw("\"done\"")));
    while server.poll_transmit(&mut out).is_some() {}
    let text = String::from_utf8(out).unwrap();
    let frames: Vec<&str> = text.lines().collect();
    assert_eq!(frames.len(), 1, "{text}");
    let answers: Vec<serde_json::Value> = serde_json::from_str(frames[0]).unwrap();
    assert_eq!(answers.len(), 3, "{text}");
    let of = |id: serde_json::Value| answers.iter().find(|a| a["id"] == id).cloned();
    assert_eq!(of(1.into()).unwrap()["error"]["code"], -32800);
    assert_eq!(of(2.into()).unwrap()["result"], "done");
    assert_eq!(
        of(serde_json::Value::Null).unwrap()["error"]["code"],
        -32600
    );
}

/// The last answer of a batch is told apart among calls of other tokens waiting on both
/// sides of it, whatever order the answers come in (the oldest first, or from the middle).
#[test]
fn a_batch_between_other_calls_marks_its_last_answer_only() {
    // The order the server answers in; the answers as they arrive (a batch's array goes
    // out with its last answer, in the order of its answers): method, token, index, last.
    type Arrival = (&'static str, u64, usize, bool);
    let orders: [([&str; 5], [Arrival; 5]); 2] = [
        (
            ["c", "b1", "b0", "b2", "a"],
            [
                ("c", 3, 0, true),
                ("b1", 2, 1, false),
                ("b0", 2, 0, false),
                ("b2", 2, 2, true),
                ("a", 1, 0, true),
            ],
        ),
        (
            ["a", "b0", "b2", "c", "b1"],
            [
                ("a", 1, 0, true),
                ("c", 3, 0, true),
                ("b0", 2, 0, false),
                ("b2", 2, 2, false),
                ("b1", 2, 1, true),
            ],
        ),
    ];
    for (order, arrivals) in orders {
        let (mut client, mut server) = pair();
        let now = Instant::ZERO;
        let options = RequestOptions::default;
        client.call(1, "a", None, options(), now).unwrap();
        let mut batch = client.batch(2, now);
        for method in ["b0", "b1", "b2"] {
            batch.call(method, None, options()).unwrap();
        }
        assert_eq!(batch.send(), Ok(3));
        client.call(3, "c", None, options(), now).unwrap();
        send(&mut client, &mut server, now);
        let handles: Vec<(IncomingId, String)> = events(&mut server)
            .into_iter()
            .map(|s| match s {
                Seen::Request(h, m, _) => (h, m),
                other => panic!("{other:?}"),
            })
            .collect();
        let handle = |method: &str| handles.iter().find(|(_, m)| m == method).unwrap().0;
        let mut seen = Vec::new();
        for method in order {
            server.respond(handle(method), Ok(raw(&alloc::format!("\"{method}\""))));
            send(&mut server, &mut client, now);
            seen.extend(events(&mut client));
        }
        let expected: Vec<Seen> = arrivals
            .iter()
            .map(|&(method, token, index, last)| {
                Seen::Answer(token, index, Ok(alloc::format!("\"{method}\"")), last)
            })
            .collect();
        assert_eq!(seen, expected);
        assert_eq!(client.waiting_calls(), 0);
    }
}

#[test]
fn a_deadline_ends_the_call_in_virtual_time() {
    let (mut client, _server) = pair();
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(2)));
    client
        .call(5, "slow", None, options, Instant::ZERO)
        .unwrap();
    assert_eq!(client.poll_timeout(), Some(at(2000)));
    client.handle_timeout(at(1999));
    assert!(events(&mut client).is_empty());
    client.handle_timeout(at(2000));
    assert_eq!(
        events(&mut client),
        vec![Seen::Ended(5, 0, EndReason::TimedOut, true)]
    );
}

#[test]
fn cancelling_a_call_reaches_the_running_handler_and_nothing_comes_back() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(3, "long", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let handle = request_handle(&events(&mut server));
    assert!(client.cancel_call(3, now));
    assert!(!client.cancel_call(3, now));
    assert!(
        events(&mut client).is_empty(),
        "a forgotten token gets no event"
    );
    send(&mut client, &mut server, now);
    assert_eq!(events(&mut server), vec![Seen::Cancel(handle)]);
    server.respond_cancelled(handle);
    let wire = send(&mut server, &mut client, now);
    assert!(wire.contains("-32001") || wire.contains("-32800"), "{wire}");
    assert!(events(&mut client).is_empty());
}

#[test]
fn a_peer_cancel_of_a_request_already_answered_is_not_reported() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(3, "quick", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let handle = request_handle(&events(&mut server));
    server.respond(handle, Ok(raw("1")));
    client.cancel_call(3, now);
    send(&mut client, &mut server, now);
    assert!(events(&mut server).is_empty());
}

#[test]
fn heartbeat_is_answered_inside_and_a_silent_peer_times_out() {
    let config = Config {
        heartbeat: Some(HeartbeatConfig::ping(
            Duration::from_secs(10),
            Duration::from_secs(5),
        )),
        ..Config::default()
    };
    let mut client = Connection::new(config, Instant::ZERO);
    let answer_only = Config {
        heartbeat: Some(HeartbeatConfig::answer_only()),
        ..Config::default()
    };
    let mut server = Connection::new(answer_only, Instant::ZERO);

    assert_eq!(client.poll_timeout(), Some(at(10_000)));
    client.handle_timeout(at(10_000));
    let wire = send(&mut client, &mut server, at(10_000));
    assert!(wire.contains("\"ping\""), "{wire}");
    assert!(
        events(&mut server).is_empty(),
        "ping never reaches the driver"
    );
    let wire = send(&mut server, &mut client, at(10_001));
    assert!(wire.contains("\"pong\""), "{wire}");
    assert!(
        events(&mut client).is_empty(),
        "pong never reaches the driver"
    );

    // The next ping goes unanswered.
    let next = client.poll_timeout().unwrap();
    client.handle_timeout(next);
    send(&mut client, &mut server, next);
    let dead = client.poll_timeout().unwrap();
    assert_eq!(dead, next + Duration::from_secs(5));
    client.handle_timeout(dead);
    assert_eq!(
        events(&mut client),
        vec![Seen::Closed(CloseReason::HeartbeatTimeout)]
    );
    assert!(client.is_finished(), "nothing left to write");
}

/// A client (whose heartbeat only answers pings) and a server, the client's call `add`
/// (token 1) answered `3` by the server and waiting for the client to read it.
fn a_call_answered() -> (Connection, Connection) {
    let answer_only = Config {
        heartbeat: Some(HeartbeatConfig::answer_only()),
        ..Config::default()
    };
    let mut client = Connection::new(answer_only, Instant::ZERO);
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let now = Instant::ZERO;
    client
        .call(1, "add", Some(raw("[1,2]")), RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let handle = request_handle(&events(&mut server));
    server.respond(handle, Ok(raw("3")));
    (client, server)
}

/// The server's calls 7 and 8 (method, params) to the client, a notification `news`, a
/// heartbeat ping, then a request with id `"e"` whose method name is written with an
/// `escaped` character (told only once its event is built), as the client reads them.
fn peer_traffic(
    server: &mut Connection,
    client: &mut Connection,
    calls: [(&str, Option<&str>); 2],
    escaped: &str,
) {
    let now = Instant::ZERO;
    for (token, (method, params)) in (7..).zip(calls) {
        let options = RequestOptions::default();
        server
            .call(token, method, params.map(raw), options, now)
            .unwrap();
    }
    server.notify("news", Some(raw("[\"a\"]"))).unwrap();
    server.notify(keepalive::PING, None).unwrap();
    send(server, client, now);
    let request = [r#"{"jsonrpc":"2.0","id":"e","method":""#, escaped, r#""}"#].concat();
    let length = request.len().to_string();
    let frame = ["Content-Length: ", &length, "\r\n\r\n", &request].concat();
    client.handle_input(frame.as_bytes(), now).unwrap();
}

#[test]
fn a_connection_that_only_calls_answers_the_peers_requests_itself() {
    let (mut client, mut server) = a_call_answered();
    let now = Instant::ZERO;
    // A request by its plain name, a stream pull, a method name with an escape (told only
    // once its event is built), a notification, and a heartbeat ping.
    let calls = [
        ("window/showMessage", None),
        ("rpc.stream.next", Some("[1]")),
    ];
    peer_traffic(&mut server, &mut client, calls, "\\u0061dd");
    assert_eq!(
        client_events(&mut client),
        vec![
            Seen::Answer(1, 0, Ok("3".into()), true),
            Seen::Notification("news".into(), Some("[\"a\"]".into())),
        ],
        "the requests are answered, not handed out; the ping is answered too"
    );
    assert_eq!(client.running(), 0);
    let wire = send(&mut client, &mut server, now);
    assert_eq!(wire.matches("-32601").count(), 3, "{wire}");
    assert!(wire.contains("\"id\":\"e\""), "{wire}");
    assert!(wire.contains("\"pong\""), "{wire}");
    assert_eq!(
        events(&mut server),
        vec![
            Seen::Answer(7, 0, Err(-32601), true),
            Seen::Answer(8, 0, Err(-32601), true),
            // No heartbeat here: the pong is a notification; the answer to "e" none of
            // the server's calls waits for.
            Seen::Notification("pong".into(), None),
            Seen::Other,
        ]
    );

    // Its close is as `poll_event`'s.
    client.close(now);
    assert_eq!(
        client_events(&mut client),
        vec![Seen::Closed(CloseReason::Local)]
    );
}

#[test]
fn a_client_that_answers_gets_the_peers_requests_and_their_cancellations() {
    let (mut client, mut server) = a_call_answered();
    let now = Instant::ZERO;
    // Two requests (one by a name told only once its event is built), a notification and
    // a heartbeat ping.
    let calls = [("ping", None), ("sampling/createMessage", Some("{}"))];
    peer_traffic(&mut server, &mut client, calls, "\\u0070ing");
    let seen = answering_events(&mut client);
    let handles: Vec<IncomingId> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Request(h, ..) => Some(*h),
            _ => None,
        })
        .collect();
    assert_eq!(handles.len(), 3, "{seen:?}");
    assert_eq!(
        seen,
        vec![
            Seen::Answer(1, 0, Ok("3".into()), true),
            Seen::Request(handles[0], "ping".into(), None),
            Seen::Request(
                handles[1],
                "sampling/createMessage".into(),
                Some("{}".into())
            ),
            Seen::Notification("news".into(), Some("[\"a\"]".into())),
            Seen::Request(handles[2], "ping".into(), None),
        ],
        "the requests are handed out in order; the heartbeat's ping is answered"
    );
    assert_eq!(client.running(), 3);
    client.respond(handles[0], Ok(raw("{}")));
    client.respond(handles[2], Ok(raw("{}")));
    let wire = send(&mut client, &mut server, now);
    assert!(wire.contains("\"pong\""), "{wire}");
    assert!(wire.contains("\"id\":\"e\""), "{wire}");
    assert!(!wire.contains("-32601"), "{wire}");
    // The server gives up on its sampling request: the client hears it.
    assert!(server.cancel_call(8, now));
    send(&mut server, &mut client, now);
    assert_eq!(
        answering_events(&mut client),
        vec![Seen::Cancel(handles[1])]
    );
    client.respond_cancelled(handles[1]);
    assert_eq!(client.running(), 0);
    // A cancellation of what is answered already is not reported.
    server
        .call(9, "ping", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut server, &mut client, now);
    let late = request_handle(&answering_events(&mut client));
    client.respond(late, Ok(raw("{}")));
    assert!(server.cancel_call(9, now));
    send(&mut server, &mut client, now);
    assert!(answering_events(&mut client).is_empty());
    client.close(now);
    assert_eq!(
        answering_events(&mut client),
        vec![Seen::Closed(CloseReason::Local)]
    );
}

#[test]
fn without_a_heartbeat_ping_is_an_ordinary_notification() {
    let (mut client, mut server) = pair();
    client.notify("ping", None).unwrap();
    send(&mut client, &mut server, Instant::ZERO);
    assert_eq!(
        events(&mut server),
        vec![Seen::Notification("ping".into(), None)]
    );
}

#[test]
fn shutdown_waits_for_running_handlers_then_closes_after_the_answer() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(1, "work", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let handle = request_handle(&events(&mut server));
    assert!(!server.is_closing());
    server.shutdown(Duration::from_secs(3), at(10));
    assert!(!server.wants_input());
    assert!(server.is_closing(), "no more input, for good");
    assert_eq!(server.poll_timeout(), Some(at(3010)));
    assert!(events(&mut server).is_empty(), "still draining");
    assert_eq!(
        server.call(2, "x", None, RequestOptions::default(), at(10)),
        Err(SendError::Closed)
    );
    server.respond(handle, Ok(raw("7")));
    assert_eq!(
        events(&mut server),
        vec![Seen::Closed(CloseReason::Shutdown)]
    );
    assert!(!server.is_finished(), "the answer is not written yet");
    send(&mut server, &mut client, at(20));
    assert!(server.is_finished());
    assert_eq!(
        events(&mut client),
        vec![Seen::Answer(1, 0, Ok("7".into()), true)]
    );
}

#[test]
fn a_handler_that_outlives_the_grace_is_cut_off() {
    let (mut client, mut server) = pair();
    client
        .call(1, "work", None, RequestOptions::default(), Instant::ZERO)
        .unwrap();
    send(&mut client, &mut server, Instant::ZERO);
    let handle = request_handle(&events(&mut server));
    server.shutdown(Duration::from_secs(1), Instant::ZERO);
    server.handle_timeout(at(1000));
    assert_eq!(
        events(&mut server),
        vec![Seen::Closed(CloseReason::Shutdown)]
    );
    // A late answer is ignored.
    server.respond(handle, Ok(raw("7")));
    assert_eq!(server.buffered_output(), 0);
    assert!(server.is_finished());
}

#[test]
fn requests_before_the_end_of_input_are_still_answered() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(1, "work", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    server.handle_end_of_input(now);
    assert!(!server.wants_input());
    let seen = events(&mut server);
    let handle = request_handle(&seen);
    assert_eq!(seen.len(), 1, "{seen:?}");
    server.respond(handle, Ok(raw("1")));
    assert_eq!(
        events(&mut server),
        vec![Seen::Closed(CloseReason::PeerClosed)]
    );
    send(&mut server, &mut client, now);
    assert_eq!(
        events(&mut client),
        vec![Seen::Answer(1, 0, Ok("1".into()), true)]
    );
}

#[test]
fn a_partial_frame_at_the_end_of_input_is_reported_and_the_connection_closes() {
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    server
        .handle_input(b"Content-Length: 40\r\n\r\n{\"jsonrpc\"", Instant::ZERO)
        .unwrap();
    server.handle_end_of_input(Instant::ZERO);
    assert_eq!(
        events(&mut server),
        vec![Seen::Other, Seen::Closed(CloseReason::PeerClosed)]
    );
}

#[test]
fn closing_ends_every_call_and_linger_bounds_the_output() {
    let (mut client, _server) = pair();
    client
        .call(1, "a", None, RequestOptions::default(), Instant::ZERO)
        .unwrap();
    client.close(at(5));
    assert_eq!(
        events(&mut client),
        vec![
            Seen::Ended(1, 0, EndReason::Closed, true),
            Seen::Closed(CloseReason::Local)
        ]
    );
    // The request was queued but never written: the driver holds it.
    let mut out = Vec::new();
    while client.poll_transmit(&mut out).is_some() {}
    client.handle_write(false, true, at(6));
    assert!(!client.is_finished());
    assert_eq!(client.poll_timeout(), Some(at(1005)));
    client.handle_timeout(at(1005));
    assert!(client.is_finished());
    assert_eq!(client.poll_timeout(), None);
}

#[cfg(feature = "streams")]
#[test]
fn streams_are_pulled_and_freed_through_the_connection() {
    let (mut client, mut server) = pair();
    let now = Instant::ZERO;
    client
        .call(1, "numbers", None, RequestOptions::default(), now)
        .unwrap();
    send(&mut client, &mut server, now);
    let handle = request_handle(&events(&mut server));
    assert!(server.stream_room() > 0);
    let stream = server.open_stream(handle, now).unwrap();
    send(&mut server, &mut client, now);
    let open = events(&mut client);
    let text = alloc::format!("{{\"stream\":{stream}}}");
    assert_eq!(open, vec![Seen::Answer(1, 0, Ok(text), true)]);

    let pull = alloc::format!("{{\"stream\":{stream},\"max\":2}}");
    client
        .call(
            2,
            "rpc.stream.next",
            Some(raw(&pull)),
            RequestOptions::default(),
            now,
        )
        .unwrap();
    send(&mut client, &mut server, now);
    assert!(
        events(&mut server).is_empty(),
        "pulls never reach the driver"
    );
    assert!(server.wants_items());
    let mut n = 0;
    let taken = server.produce(now, 100, |id, out, demand| {
        assert_eq!(id, stream);
        assert!(demand.front >= 1);
        n += 1;
        if n > 3 {
            return Produced::End;
        }
        out.extend_from_slice(n.to_string().as_bytes());
        Produced::Item
    });
    assert_eq!(taken, 2);
    send(&mut server, &mut client, now);
    assert_eq!(
        events(&mut client),
        vec![Seen::Answer(
            2,
            0,
            Ok("{\"items\":[1,2],\"done\":false}".into()),
            true
        )]
    );

    // The next pull gets the last item and the end; the stream is freed.
    client
        .call(
            3,
            "rpc.stream.next",
            Some(raw(&pull)),
            RequestOptions::default(),
            now,
        )
        .unwrap();
    send(&mut client, &mut server, now);
    assert!(events(&mut server).is_empty());
    server.produce(now, 100, |_, out, _| {
        n += 1;
        if n > 3 {
            return Produced::End;
        }
        out.extend_from_slice(n.to_string().as_bytes());
        Produced::Item
    });
    assert_eq!(events(&mut server), vec![Seen::StreamClosed(stream)]);
    send(&mut server, &mut client, now);
    assert_eq!(
        events(&mut client),
        vec![Seen::Answer(
            3,
            0,
            Ok("{\"items\":[3],\"done\":true}".into()),
            true
        )]
    );
}

#[cfg(feature = "streams")]
#[test]
fn an_idle_stream_is_freed_on_its_timeout() {
    let streams = StreamConfig {
        idle_timeout: Duration::from_secs(30),
        ..StreamConfig::default()
    };
    let config = Config {
        streams,
        ..Config::default()
    };
    let mut server = Connection::new(config, Instant::ZERO);
    let mut client = Connection::new(Config::default(), Instant::ZERO);
    client
        .call(1, "numbers", None, RequestOptions::default(), Instant::ZERO)
        .unwrap();
    send(&mut client, &mut server, Instant::ZERO);
    let handle = request_handle(&events(&mut server));
    let stream = server.open_stream(handle, Instant::ZERO).unwrap();
    assert_eq!(server.poll_timeout(), Some(at(30_000)));
    server.handle_timeout(at(30_000));
    assert_eq!(events(&mut server), vec![Seen::StreamClosed(stream)]);
}

/// A hook that answers `hook.echo` with its params at once and `hook.later` through its
/// drain, and counts its closes.
struct Echo {
    closes: Arc<AtomicUsize>,
    queued: Vec<String>,
    later: Vec<(u64, String)>,
}

impl ConnectionHook for Echo {
    fn request(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Option<hook::Taken> {
        let params = params.map_or("null", |p| p.get());
        match method {
            "hook.echo" => {
                out.extend_from_slice(params.as_bytes());
                self.queued.push(String::from("{\"n\":1}"));
                Some(hook::Taken::Now(Ok(())))
            }
            "hook.later" => {
                let number = 7 + self.later.len() as u64;
                self.later.push((number, params.into()));
                Some(hook::Taken::Later(number))
            }
            _ => None,
        }
    }

    fn drain(&mut self, send: &mut dyn FnMut(hook::Item<'_>) -> bool) -> bool {
        for (number, answer) in self.later.drain(..) {
            send(hook::Item::Answer(number, Ok(&answer)));
        }
        while let Some(n) = self.queued.first() {
            if !send(hook::Item::Notification("hook.note", raw(n))) {
                return true;
            }
            self.queued.remove(0);
        }
        false
    }

    fn close(&mut self) {
        self.closes.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn the_hook_answers_its_requests_and_sends_its_notifications() {
    let (mut client, mut server) = pair();
    let closes = Arc::new(AtomicUsize::new(0));
    server.set_hook(Box::new(Echo {
        closes: Arc::clone(&closes),
        queued: Vec::new(),
        later: Vec::new(),
    }));
    let now = Instant::ZERO;
    client
        .call(
            1,
            "hook.echo",
            Some(raw("[5]")),
            RequestOptions::default(),
            now,
        )
        .unwrap();
    client
        .call(2, "other", None, RequestOptions::default(), now)
        .unwrap();
    client
        .call(
            3,
            "hook.later",
            Some(raw("{\"x\":3}")),
            RequestOptions::default(),
            now,
        )
        .unwrap();
    send(&mut client, &mut server, now);
    let seen = events(&mut server);
    assert_eq!(seen.len(), 1);
    assert!(matches!(&seen[0], Seen::Request(_, m, _) if m == "other"));
    send(&mut server, &mut client, now);
    assert_eq!(
        events(&mut client),
        vec![
            Seen::Answer(1, 0, Ok("[5]".into()), true),
            Seen::Answer(3, 0, Ok("{\"x\":3}".into()), true),
            Seen::Notification("hook.note".into(), Some("{\"n\":1}".into())),
        ]
    );
    server.close(now);
    assert_eq!(events(&mut server), vec![Seen::Closed(CloseReason::Local)]);
    assert_eq!(closes.load(Ordering::Relaxed), 1);
}

#[test]
fn a_whole_message_connection_refuses_bytes() {
    let config = Config {
        framing: None,
        ..Config::default()
    };
    let mut c = Connection::new(config, Instant::ZERO);
    assert!(c.handle_input(b"{}", Instant::ZERO).is_err());
    c.handle_message(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", Instant::ZERO)
        .unwrap();
    assert_eq!(events(&mut c), vec![Seen::Notification("n".into(), None)]);
}

/// Calls answered oldest first are taken without moving the rest, and the table compacts
/// itself: whatever mix of in-order, out-of-order and forgotten calls, it holds exactly the
/// calls still waiting.
#[test]
fn the_calls_table_holds_exactly_the_calls_waiting() {
    let mut calls = Calls::default();
    let mut model: Vec<(u64, u64)> = Vec::new();
    for id in 0..200u64 {
        // Tokens: one per call, except a batch of three every 50.
        let token = if id % 50 < 3 { 1_000 + id / 50 } else { id };
        calls.insert(token, RequestId(id), 0, token >= 1_000);
        model.push((id, token));
    }
    // Oldest first for 120 (past the compaction point), then every third from the back.
    let mut order: Vec<u64> = (0..120).collect();
    order.extend((120..200).rev().step_by(3));
    for id in order {
        let at = model.iter().position(|e| e.0 == id).unwrap();
        let (_, token) = model.remove(at);
        let (got, _, last) = calls.settle(RequestId(id)).unwrap();
        assert_eq!(got, token);
        assert_eq!(last, !model.iter().any(|e| e.1 == token));
        assert!(!calls.contains(RequestId(id)));
        assert_eq!(calls.len(), model.len());
    }
    // 120 were taken from the head: without compaction it would stand at 120.
    assert!(calls.head < 120, "compacted on the way");
    for &(id, _) in &model {
        assert!(calls.contains(RequestId(id)));
    }
    let token = model[0].1;
    assert_eq!(calls.forget(token), vec![RequestId(model[0].0)]);
    model.remove(0);
    assert_eq!(calls.len(), model.len());
    assert_eq!(calls.settle(RequestId(0)), None);
}

/// The calls table against a plain list, over random mixes of calls (single and batched,
/// tokens in order or not), answers in any order and forgotten tokens: the same calls
/// waiting, the same token, index and `last` for each answer, the same ids forgotten.
#[test]
fn the_calls_table_is_the_list_it_stands_for() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..200 {
        let sorted_tokens = round % 2 == 0;
        let mut calls = Calls::default();
        // (id, token, index, batch)
        let mut model: Vec<(u64, u64, usize, bool)> = Vec::new();
        let mut next_id = 0u64;
        let mut next_token = 0u64;
        for _ in 0..400 {
            match next(10) {
                0..=3 => {
                    let token = if sorted_tokens {
                        next_token += 1;
                        next_token
                    } else {
                        next(1_000)
                    };
                    if model.iter().any(|e| e.1 == token) {
                        continue;
                    }
                    let n = if next(4) == 0 {
                        1 + next(5) as usize
                    } else {
                        1
                    };
                    for index in 0..n {
                        calls.insert(token, RequestId(next_id), index, n > 1);
                        model.push((next_id, token, index, n > 1));
                        next_id += 1;
                    }
                }
                4..=7 if !model.is_empty() => {
                    // Mostly the oldest, else any.
                    let at = if next(3) == 0 {
                        next(model.len() as u64) as usize
                    } else {
                        0
                    };
                    let (id, token, index, _) = model.remove(at);
                    let last = !model.iter().any(|e| e.1 == token);
                    assert_eq!(calls.settle(RequestId(id)), Some((token, index, last)));
                    assert_eq!(calls.settle(RequestId(id)), None, "answered once");
                }
                8 if !model.is_empty() => {
                    let token = model[next(model.len() as u64) as usize].1;
                    let mut expected: Vec<RequestId> = model
                        .iter()
                        .filter(|e| e.1 == token)
                        .map(|e| RequestId(e.0))
                        .collect();
                    model.retain(|e| e.1 != token);
                    let mut got = calls.forget(token);
                    got.sort();
                    expected.sort();
                    assert_eq!(got, expected);
                }
                _ => {}
            }
            assert_eq!(calls.len(), model.len());
        }
        for e in &model {
            assert!(calls.contains(RequestId(e.0)));
        }
        assert!(!calls.contains(RequestId(next_id)));
    }
}

/// A renewed machine is a new one: nothing of its connection before is left (a call of
/// ours waiting, a request of the peer's half-read, the end of its input), but its output
/// buffer keeps its capacity.
#[test]
fn a_renewed_machine_is_new_and_keeps_its_output_buffer() {
    /// `client` asks `server` to add `params` (call 7): the request's handle and params.
    fn add(client: &mut Connection, server: &mut Connection, params: &str) -> (IncomingId, String) {
        let options = RequestOptions::default();
        client
            .call(7, "add", Some(raw(params)), options, at(0))
            .unwrap();
        send(client, server, at(1));
        let [Seen::Request(handle, ref method, Some(ref params))] = events(server)[..] else {
            panic!("one request");
        };
        assert_eq!(method, "add");
        (handle, params.clone())
    }
    let (mut server, mut client) = pair();
    let (handle, _) = add(&mut client, &mut server, "[1,2]");
    server.respond(handle, Ok(raw("3")));
    let mut out = Vec::new();
    while server.poll_transmit(&mut out).is_some() {}
    server.handle_write(true, false, at(2));
    // Left in it: a call of ours waiting, half a request, the end of input.
    server
        .call(8, "ping", None, RequestOptions::default(), at(3))
        .unwrap();
    server
        .handle_input(b"{\"jsonrpc\":\"2.0\",\"id\":", at(3))
        .unwrap();
    server.handle_end_of_input(at(4));
    let capacity = server.output_capacity();
    assert!(capacity > 0);
    assert!(!server.is_blank());

    server.renew(Config::default(), Instant::ZERO);
    assert!(server.is_blank());
    assert_eq!(server.waiting_calls(), 0);
    assert_eq!(server.output_capacity(), capacity, "the buffer kept");
    assert!(events(&mut server).is_empty());
    assert!(
        server.poll_transmit(&mut Vec::new()).is_none(),
        "nothing queued"
    );
    // It serves the same id again, as a new connection would.
    let mut client = Connection::new(Config::default(), Instant::ZERO);
    let (handle, params) = add(&mut client, &mut server, "[2,3]");
    assert_eq!(params, "[2,3]");
    server.respond(handle, Ok(raw("5")));
    send(&mut server, &mut client, at(2));
    assert_eq!(
        client_events(&mut client),
        [Seen::Answer(7, 0, Ok("5".into()), true)]
    );
}

/// A renewed machine lets go of a buffer a large exchange grew past 4 KiB: what it keeps
/// for the next connection is bounded, whatever the last one sent.
#[test]
fn a_renewed_machine_lets_a_large_buffer_go() {
    let (mut server, mut client) = pair();
    client
        .call(1, "big", None, RequestOptions::default(), at(0))
        .unwrap();
    send(&mut client, &mut server, at(1));
    let [Seen::Request(handle, _, _)] = events(&mut server)[..] else {
        panic!("one request");
    };
    let big = alloc::format!("\"{}\"", "x".repeat(16 * 1024));
    server.respond(handle, Ok(raw(&big)));
    send(&mut server, &mut client, at(2));
    assert!(server.output_capacity() > 16 * 1024);
    server.renew(Config::default(), Instant::ZERO);
    assert!(server.is_blank());
    assert_eq!(server.output_capacity(), 0, "let go, not kept");
}

/// For a transport that carries only answers (plain HTTP), what was sent besides the
/// answers is dropped up to the next one: a notification and a call of ours before a
/// response, before a batch's array; everything when no answer is queued.
#[test]
fn the_frames_in_front_of_the_next_answer_are_skipped_for_a_transport_of_answers() {
    let now = Instant::ZERO;
    let config = Config {
        framing: None,
        ..Config::default()
    };
    let mut server = Connection::new(config, now);
    server
        .handle_message(br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, now)
        .unwrap();
    let handle = request_handle(&events(&mut server));
    server.notify("log", None).unwrap();
    server
        .call(7, "ask", None, RequestOptions::default(), now)
        .unwrap();
    server.respond(handle, Ok(raw("1")));
    server.notify("after", None).unwrap();
    assert_eq!(server.skip_to_answer(), 2);
    let mut out = Vec::new();
    server.poll_transmit(&mut out).unwrap();
    assert_eq!(out, br#"{"jsonrpc":"2.0","result":1,"id":1}"#);
    // The answer is next: nothing skipped.
    server
        .handle_message(
            br#"[{"jsonrpc":"2.0","id":2,"method":"m"},{"jsonrpc":"2.0","method":"n"}]"#,
            now,
        )
        .unwrap();
    let seen = events(&mut server);
    assert_eq!(server.skip_to_answer(), 1, "the notification `after`");
    server.notify("log", None).unwrap();
    server.respond(request_handle(&seen), Ok(raw("2")));
    assert_eq!(server.skip_to_answer(), 1);
    out.clear();
    server.poll_transmit(&mut out).unwrap();
    assert_eq!(out, br#"[{"jsonrpc":"2.0","result":2,"id":2}]"#);
    assert_eq!(server.skip_to_answer(), 0);
    // No answer queued: all of it.
    server.notify("a", None).unwrap();
    server.notify("b", None).unwrap();
    assert_eq!(server.skip_to_answer(), 2);
    assert_eq!(server.poll_transmit(&mut out), None);
}
