//! The connection's wire protocol: correlation, deadlines, cancellation, batches, null-id
//! errors, close and back-pressure, driven as a pair over an in-memory link with a virtual
//! clock. (Ported from the inner `Endpoint` to `Connection`: a call is known by its token,
//! and its wire id is read off the wire.)

mod pair;

use pair::{raw, Ev, Pair, Side};
use sansrpc::codec::Framing;
use sansrpc::connection::{
    CloseReason, Config, EndReason, Event, NotAByteStream, NullIdPolicy, RequestOptions, SendError,
    Timeout,
};
use sansrpc::{Instant, RawValue};
use std::time::Duration;

fn opts() -> RequestOptions {
    RequestOptions::default()
}

fn config(f: impl FnOnce(&mut Config)) -> Config {
    let mut c = Config::default();
    f(&mut c);
    c
}

#[test]
fn request_and_response_round_trip() {
    let mut p = Pair::new();
    let id = p.a.call("add", Some(raw("[1,2]")), opts(), p.now).unwrap();
    p.drive();
    let events = p.b.take_events();
    let [Ev::Request {
        id: incoming,
        method,
        params,
        wire_id,
    }] = &events[..]
    else {
        panic!("{events:?}")
    };
    assert_eq!(
        (method.as_str(), params.as_deref(), wire_id.as_str()),
        ("add", Some("[1,2]"), "1")
    );
    p.b.respond(*incoming, "3");
    p.drive();
    assert_eq!(p.a.take_events(), vec![pair::answer(id, "3")]);
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
}

#[test]
fn responses_match_in_any_order_and_split_anywhere() {
    let mut p = Pair::new();
    p.chunk = 1;
    let ids: Vec<_> = (0..5)
        .map(|i| {
            p.a.call("echo", Some(raw(&format!("[{i}]"))), opts(), p.now)
                .unwrap()
        })
        .collect();
    p.drive();
    let events = p.b.take_events();
    let incoming: Vec<_> = events
        .iter()
        .map(|e| match e {
            Ev::Request { id, params, .. } => (*id, params.clone().unwrap()),
            other => panic!("{other:?}"),
        })
        .collect();
    for (id, params) in incoming.iter().rev() {
        p.b.respond(*id, params);
    }
    p.drive();
    let mut got: Vec<_> =
        p.a.take_events()
            .into_iter()
            .map(|e| match e {
                Ev::Response {
                    token,
                    index: 0,
                    result,
                } => (token, result.unwrap()),
                other => panic!("{other:?}"),
            })
            .collect();
    got.sort();
    let expected: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, format!("[{i}]")))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn both_sides_send_requests() {
    let mut p = Pair::new();
    let from_a = p.a.call("a.m", None, opts(), p.now).unwrap();
    let from_b = p.b.call("b.m", None, opts(), p.now).unwrap();
    p.drive();
    let wire_ids = |events: &[Ev]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Ev::Request { wire_id, .. } => Some(wire_id.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(wire_ids(&p.b.events), ["1"]);
    assert_eq!(
        wire_ids(&p.a.events),
        ["1"],
        "each side numbers its own requests"
    );
    let (ra, rb) = (p.a.requests(), p.b.requests());
    p.a.respond(ra[0], "\"from a\"");
    p.b.respond(rb[0], "\"from b\"");
    p.drive();
    assert!(p.a.events.contains(&pair::answer(from_a, "\"from b\"")));
    assert!(p.b.events.contains(&pair::answer(from_b, "\"from a\"")));
}

#[test]
fn ids_are_sequential_and_never_reused_while_pending() {
    let mut ep = Side::new(Config::default());
    // The ids on the wire of the requests sent since the last look.
    let wire_ids = |ep: &mut Side| -> Vec<u64> {
        transmitted(ep)
            .iter()
            .filter(|f| f["method"] == "m")
            .map(|f| f["id"].as_u64().unwrap())
            .collect()
    };
    for _ in 0..100 {
        ep.call("m", None, opts(), Instant::ZERO).unwrap();
    }
    assert_eq!(wire_ids(&mut ep), (1..=100).collect::<Vec<_>>());
    let cancelled = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert!(ep.cancel_call(cancelled, Instant::ZERO));
    assert_eq!(wire_ids(&mut ep), [101]);
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(wire_ids(&mut ep), [102]);
}

fn feed(ep: &mut Side, frames: &[&str]) -> Vec<Ev> {
    let mut wire = Vec::new();
    for f in frames {
        sansrpc::codec::encode_frame(Framing::ContentLength, f.as_bytes(), &mut wire);
    }
    assert_eq!(ep.handle_input(&wire, Instant::ZERO).unwrap(), wire.len());
    let mut out = Vec::new();
    while let Some(e) = ep.poll_event() {
        out.push(pair::copy(e));
    }
    out
}

fn transmitted(ep: &mut Side) -> Vec<serde_json::Value> {
    let mut frames = Vec::new();
    let mut decoder = sansrpc::codec::Decoder::new(Framing::ContentLength, &Default::default());
    let mut buf = Vec::new();
    while ep.poll_transmit(&mut buf).is_some() {}
    assert_eq!(decoder.feed(&buf), buf.len());
    while let Some(f) = decoder.next_frame() {
        frames.push(serde_json::from_slice(f.unwrap()).unwrap());
    }
    frames
}

#[test]
fn unknown_and_late_responses() {
    let mut ep = Side::new(config(|c| c.cancellation = false));
    let id = ep
        .call(
            "m",
            None,
            RequestOptions::timeout(Timeout::After(Duration::from_secs(1))),
            Instant::ZERO,
        )
        .unwrap();
    let other = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    transmitted(&mut ep);
    // An id we never sent is reported, and otherwise ignored.
    assert_eq!(
        feed(&mut ep, &[r#"{"jsonrpc":"2.0","result":1,"id":99}"#]),
        vec![Ev::Unknown("99".into())]
    );
    assert_eq!(
        feed(&mut ep, &[r#"{"jsonrpc":"2.0","result":1,"id":"x"}"#]),
        vec![Ev::Unknown("\"x\"".into())]
    );
    // Timed out, then answered late: the late answer is dropped silently.
    ep.handle_timeout(Instant::from_millis(1000));
    let events: Vec<_> = std::iter::from_fn(|| ep.poll_event().map(pair::copy)).collect();
    assert_eq!(events, vec![pair::ended(id, EndReason::TimedOut)]);
    assert_eq!(
        feed(&mut ep, &[r#"{"jsonrpc":"2.0","result":1,"id":1}"#]),
        vec![]
    );
    // Cancelled, then answered late: dropped too.
    assert!(ep.cancel_call(other, Instant::from_millis(1000)));
    // A call cancelled is forgotten: no event for it (the endpoint gave `Ended(Cancelled)`).
    assert_eq!(ep.poll_event().map(pair::copy), None);
    assert_eq!(ep.waiting_calls(), 0);
    assert_eq!(
        feed(&mut ep, &[r#"{"jsonrpc":"2.0","result":1,"id":2}"#]),
        vec![]
    );
    assert!(
        transmitted(&mut ep).is_empty(),
        "responses are never answered"
    );
    assert!(ep.is_idle());
}

#[test]
fn a_peer_reusing_an_in_flight_id_gets_an_error_and_the_first_request_stands() {
    let mut ep = Side::new(Config::default());
    let events = feed(
        &mut ep,
        &[
            r#"{"jsonrpc":"2.0","method":"slow","id":7}"#,
            r#"{"jsonrpc":"2.0","method":"again","id":7}"#,
        ],
    );
    assert_eq!(events.len(), 1, "only the first surfaces: {events:?}");
    let out = transmitted(&mut ep);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["error"]["code"], -32600);
    assert_eq!(out[0]["id"], 7);
    let Ev::Request { id, .. } = &events[0] else {
        panic!()
    };
    ep.respond_with(*id, Ok(raw("\"done\""))).unwrap();
    assert_eq!(
        transmitted(&mut ep),
        vec![serde_json::json!({"jsonrpc":"2.0","result":"done","id":7})]
    );
    // Once answered, the id may be used again.
    assert_eq!(
        feed(&mut ep, &[r#"{"jsonrpc":"2.0","method":"again","id":7}"#]).len(),
        1
    );
    // Responding twice is the caller's mistake, reported as such.
    assert!(ep.respond_with(*id, Ok(raw("1"))).is_err());
}

#[test]
fn deadlines() {
    let mut ep = Side::new(config(|c| c.cancel_on_timeout = false));
    let t0 = Instant::from_millis(500);
    let default = ep.call("m", None, opts(), t0).unwrap();
    let short = ep
        .call(
            "m",
            None,
            RequestOptions::timeout(Timeout::After(Duration::from_secs(2))),
            t0,
        )
        .unwrap();
    let never = ep
        .call("m", None, RequestOptions::timeout(Timeout::Never), t0)
        .unwrap();
    transmitted(&mut ep);
    assert_eq!(ep.poll_timeout(), Some(t0 + Duration::from_secs(2)));
    // Before any deadline, nothing changes.
    ep.handle_timeout(t0 + Duration::from_millis(1999));
    assert!(ep.poll_event().is_none());
    assert_eq!(ep.unanswered_requests(), 3);
    ep.handle_timeout(t0 + Duration::from_secs(2));
    assert_eq!(
        ep.poll_event().map(pair::copy),
        Some(pair::ended(short, EndReason::TimedOut))
    );
    assert_eq!(
        ep.poll_timeout(),
        Some(t0 + Duration::from_secs(30)),
        "30 s by default"
    );
    ep.handle_timeout(t0 + Duration::from_secs(3600));
    assert_eq!(
        ep.poll_event().map(pair::copy),
        Some(pair::ended(default, EndReason::TimedOut))
    );
    assert!(ep.poll_event().is_none());
    assert_eq!(ep.unanswered_requests(), 1);
    assert_eq!(ep.poll_timeout(), None);
    assert!(ep.cancel_call(never, t0));
}

#[test]
fn timing_out_sends_a_cancel_by_default() {
    let mut p = Pair::new();
    let id =
        p.a.call(
            "slow",
            None,
            RequestOptions::timeout(Timeout::After(Duration::from_secs(5))),
            p.now,
        )
        .unwrap();
    p.drive();
    let incoming = p.b.requests()[0];
    assert!(p.step_timeout());
    assert_eq!(
        p.a.take_events(),
        vec![pair::ended(id, EndReason::TimedOut)]
    );
    assert!(p.b.events.contains(&Ev::PeerCancelled(incoming)));
}

#[test]
fn cancelling_an_outgoing_request() {
    let mut p = Pair::new();
    let id = p.a.call("slow", None, opts(), p.now).unwrap();
    p.drive();
    let incoming = p.b.requests()[0];
    assert!(p.a.conn.cancel_call(id, p.now));
    assert!(!p.a.conn.cancel_call(id, p.now), "only once");
    p.drive();
    // A call cancelled is forgotten: no event for it (the endpoint gave `Ended(Cancelled)`).
    assert_eq!(p.a.take_events(), vec![]);
    assert_eq!(p.a.conn.waiting_calls(), 0);
    let last_sent = String::from_utf8(p.a.sent.last().unwrap().clone()).unwrap();
    assert!(
        last_sent.ends_with(r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#),
        "{last_sent}"
    );
    // The server is told and answers with the cancelled code; the client ignores the answer.
    assert!(p.b.events.contains(&Ev::PeerCancelled(incoming)));
    p.b.respond_cancelled(incoming).unwrap();
    p.drive();
    let answer = String::from_utf8(p.b.sent.last().unwrap().clone()).unwrap();
    assert!(
        answer.ends_with(
            r#"{"jsonrpc":"2.0","error":{"code":-32800,"message":"Request cancelled"},"id":1}"#
        ),
        "{answer}"
    );
    assert!(p.a.take_events().is_empty());
    assert!(p.a.conn.is_idle() && p.b.conn.is_idle());
}

#[test]
fn a_cancel_that_arrives_first_is_remembered_bounded_in_count_and_time() {
    let mut ep = Side::new(config(|c| {
        c.early_cancel_capacity = 2;
        c.early_cancel_ttl = Duration::from_secs(10);
    }));
    let cancel = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#)
    };
    assert!(feed(&mut ep, &[&cancel("1"), &cancel("\"two\""), &cancel("3")]).is_empty());
    assert_eq!(
        ep.poll_timeout(),
        Some(Instant::ZERO + Duration::from_secs(10))
    );
    // "1" was pushed out by the capacity of 2; "two" and 3 are remembered.
    let events = feed(
        &mut ep,
        &[
            r#"{"jsonrpc":"2.0","method":"m","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":"two"}"#,
            r#"{"jsonrpc":"2.0","method":"m","id":3}"#,
        ],
    );
    assert_eq!(events.len(), 1, "{events:?}");
    let out = transmitted(&mut ep);
    assert_eq!(out.len(), 2);
    for (frame, id) in out
        .iter()
        .zip([serde_json::json!("two"), serde_json::json!(3)])
    {
        assert_eq!(frame["error"]["code"], -32800);
        assert_eq!(frame["id"], id);
    }
    // After the time to live, a remembered cancel is forgotten.
    feed(&mut ep, &[&cancel("4")]);
    ep.handle_timeout(Instant::ZERO + Duration::from_secs(11));
    let events = feed(&mut ep, &[r#"{"jsonrpc":"2.0","method":"m","id":4}"#]);
    assert!(matches!(events[..], [Ev::Request { .. }]), "{events:?}");
    // A cancel for nothing known, with junk params, is ignored.
    assert!(feed(
        &mut ep,
        &[r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":[1]}"#]
    )
    .is_empty());
    assert!(feed(
        &mut ep,
        &[r#"{"jsonrpc":"2.0","method":"$/cancelRequest"}"#]
    )
    .is_empty());
}

/// Frames that leave no event (here cancellations of requests not seen yet) must not fill
/// the endpoint's room for events: found by the `endpoint` fuzz target, where such frames,
/// buffered in the decoder behind a partial one, filled the arena again on every drain, and
/// the endpoint stopped taking input with no event to hand out.
#[test]
fn frames_that_leave_no_event_never_stop_the_input() {
    let mut ep = Side::new(config(|c| {
        c.limits.max_frame_bytes = 256;
        c.early_cancel_capacity = 2;
    }));
    let mut wire = Vec::new();
    for id in 100..160 {
        let cancel =
            format!(r#"{{"jsonrpc":"2.0","method":"$/cancelRequest","params":{{"id":{id}}}}}"#);
        sansrpc::codec::encode_frame(Framing::ContentLength, cancel.as_bytes(), &mut wire);
    }
    let request = r#"{"jsonrpc":"2.0","method":"m","id":1}"#;
    sansrpc::codec::encode_frame(Framing::ContentLength, request.as_bytes(), &mut wire);
    // A partial frame first, so the rest goes through the decoder's buffer.
    let mut offset = ep.handle_input(&wire[..10], Instant::ZERO).unwrap();
    assert_eq!(offset, 10);
    let mut events = Vec::new();
    for _ in 0..1000 {
        while let Some(e) = ep.poll_event() {
            events.push(pair::copy(e));
        }
        if offset == wire.len() {
            break;
        }
        assert!(
            ep.wants_input(),
            "no event to hand out and no input taken, at byte {offset} of {}",
            wire.len()
        );
        offset += ep.handle_input(&wire[offset..], Instant::ZERO).unwrap();
    }
    while let Some(e) = ep.poll_event() {
        events.push(pair::copy(e));
    }
    assert_eq!(offset, wire.len());
    assert!(matches!(events[..], [Ev::Request { .. }]), "{events:?}");
    assert!(ep.wants_input());
}

#[test]
fn incoming_batch_is_answered_once_all_are_answered_in_any_order() {
    let mut ep = Side::new(Config::default());
    let events = feed(
        &mut ep,
        &[
            r#"[{"jsonrpc":"2.0","method":"a","id":1},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","method":"b","id":2},5]"#,
        ],
    );
    assert_eq!(events.len(), 3);
    let reqs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Ev::Request { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    ep.respond_with(reqs[1], Ok(raw("\"b\""))).unwrap();
    assert!(
        transmitted(&mut ep).is_empty(),
        "held until the whole batch is answered"
    );
    ep.respond_with(reqs[0], Ok(raw("\"a\""))).unwrap();
    let out = transmitted(&mut ep);
    assert_eq!(out.len(), 1);
    let arr = out[0].as_array().unwrap();
    assert_eq!(arr.len(), 3);
    assert_eq!(
        arr[0]["error"]["code"], -32600,
        "the invalid entry, answered at once"
    );
    assert_eq!(
        arr[1],
        serde_json::json!({"jsonrpc":"2.0","result":"b","id":2})
    );
    assert_eq!(
        arr[2],
        serde_json::json!({"jsonrpc":"2.0","result":"a","id":1})
    );
    // All notifications: nothing at all.
    let events = feed(
        &mut ep,
        &[r#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","method":"m"}]"#],
    );
    assert_eq!(events.len(), 2);
    assert!(transmitted(&mut ep).is_empty());
    assert!(ep.is_idle());
}

#[test]
fn outgoing_batch_handles_match_by_id() {
    let mut p = Pair::new();
    // The batch's calls are told apart by their index under its token.
    let token = p.a.token();
    let mut batch = p.a.conn.batch(token, p.now);
    batch.call("x", Some(raw("[1]")), opts()).unwrap();
    batch.notify("note", None).unwrap();
    batch.call("y", None, opts()).unwrap();
    assert_eq!(batch.send().unwrap(), 2);
    assert_eq!(p.a.conn.unanswered_requests(), 2);
    p.drive();
    assert_eq!(p.a.sent.len(), 1, "one frame for the whole batch");
    let reqs = p.b.requests();
    assert_eq!(reqs.len(), 2);
    assert!(p
        .b
        .events
        .iter()
        .any(|e| matches!(e, Ev::Notification { method, .. } if method == "note")));
    p.b.respond(reqs[1], "\"Y\"");
    p.b.respond(reqs[0], "\"X\"");
    p.drive();
    let mut got = p.a.take_events();
    got.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        got,
        vec![
            Ev::Response {
                token,
                index: 0,
                result: Ok("\"X\"".into())
            },
            Ev::Response {
                token,
                index: 1,
                result: Ok("\"Y\"".into())
            }
        ]
    );
    // A batch dropped unsent registers nothing.
    let token = p.a.token();
    let mut dropped = p.a.conn.batch(token, p.now);
    dropped.call("z", None, opts()).unwrap();
    drop(dropped);
    assert_eq!(p.a.conn.unanswered_requests(), 0);
    assert_eq!(p.a.conn.waiting_calls(), 0);
    assert_eq!(p.a.conn.buffered_output(), 0);
}

#[test]
fn error_with_null_id_policies() {
    let null_error =
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#;
    // FailSingle (default): one pending request takes the error.
    let mut ep = Side::new(Config::default());
    let id = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        feed(&mut ep, &[null_error]),
        vec![Ev::Response {
            token: id,
            index: 0,
            result: Err((-32700, "Parse error".into()))
        }]
    );
    assert_eq!(ep.unanswered_requests(), 0);
    // With two pending it cannot be attributed: reported only.
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        feed(&mut ep, &[null_error]),
        vec![Ev::ErrorWithoutId(-32700)]
    );
    assert_eq!(ep.unanswered_requests(), 2);
    // Report never fails anything.
    let mut ep = Side::new(config(|c| c.null_id_policy = NullIdPolicy::Report));
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        feed(&mut ep, &[null_error]),
        vec![Ev::ErrorWithoutId(-32700)]
    );
    assert_eq!(ep.unanswered_requests(), 1);
    // FailAll ends everything.
    let mut ep = Side::new(config(|c| c.null_id_policy = NullIdPolicy::FailAll));
    let a = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    let b = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        feed(&mut ep, &[null_error]),
        vec![
            Ev::ErrorWithoutId(-32700),
            pair::ended(a, EndReason::PeerError),
            pair::ended(b, EndReason::PeerError)
        ]
    );
    assert!(
        transmitted(&mut ep).len() == 2,
        "only our two requests went out; the error was not answered"
    );
}

#[test]
fn close_ends_everything_exactly_once_and_empties_every_table() {
    let mut p = Pair::new();
    let ids: Vec<_> = (0..3)
        .map(|_| p.a.call("m", None, opts(), p.now).unwrap())
        .collect();
    p.b.call("from_b", None, opts(), p.now).unwrap();
    p.drive();
    let incoming = p.a.requests();
    assert_eq!(incoming.len(), 1);
    p.a.conn.close(p.now);
    p.a.conn.close(p.now);
    p.drive();
    let events = p.a.take_events();
    let ended: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Ev::Ended {
                    reason: EndReason::Closed,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(ended.len(), 3);
    for id in &ids {
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Ev::Ended { token: x, .. } if x == id))
                .count(),
            1
        );
    }
    let closed = Ev::Closed(CloseReason::Local);
    assert_eq!(events.last(), Some(&closed));
    assert_eq!(events.iter().filter(|e| **e == closed).count(), 1);
    // The unanswered incoming request is dropped without a write.
    assert!(p.a.respond_with(incoming[0], Ok(raw("1"))).is_err());
    assert_eq!(p.a.conn.buffered_output(), 0);
    assert!(p.a.conn.is_idle());
    assert_eq!(p.a.call("m", None, opts(), p.now), Err(SendError::Closed));
    assert_eq!(p.a.conn.notify("m", None), Err(SendError::Closed));
}

#[test]
fn end_of_input_reports_a_partial_frame_and_closes() {
    let mut ep = Side::new(Config::default());
    let id = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        ep.handle_input(b"Content-Length: 50\r\n\r\n{\"json", Instant::ZERO)
            .unwrap(),
        28
    );
    // The connection lets handlers running answer first (none here), then closes.
    ep.handle_end_of_input(Instant::ZERO);
    let events: Vec<_> = std::iter::from_fn(|| ep.poll_event().map(pair::copy)).collect();
    assert!(
        matches!(&events[0], Ev::Frame(m) if m.contains("ended inside a frame")),
        "{events:?}"
    );
    assert_eq!(
        events[1..],
        [
            pair::ended(id, EndReason::Closed),
            Ev::Closed(CloseReason::PeerClosed)
        ]
    );
    assert_eq!(
        transmitted(&mut ep).len(),
        1,
        "output queued before the end can still be drained"
    );
    assert!(ep.is_idle());
}

#[test]
fn bounded_pending_in_flight_and_output() {
    let mut ep = Side::new(config(|c| {
        c.max_pending_outgoing = 2;
        c.max_inflight_incoming = 1;
        c.hold_when_busy = false;
        c.max_buffered_output = 200;
    }));
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    ep.call("m", None, opts(), Instant::ZERO).unwrap();
    assert_eq!(
        ep.call("m", None, opts(), Instant::ZERO),
        Err(SendError::TooManyPending)
    );
    transmitted(&mut ep);
    // Beyond the in-flight bound, a request is answered -32002 at once and never surfaces.
    let events = feed(
        &mut ep,
        &[
            r#"{"jsonrpc":"2.0","method":"a","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"b","id":2}"#,
        ],
    );
    assert_eq!(events.len(), 1);
    let out = transmitted(&mut ep);
    assert_eq!(out[0]["error"]["code"], -32002);
    assert_eq!(out[0]["id"], 2);
    // Output beyond its bound refuses sends until drained.
    let big = RawValue::from_string(format!("[\"{}\"]", "x".repeat(300))).unwrap();
    ep.notify("n", Some(&big)).unwrap();
    assert_eq!(ep.notify("n", None), Err(SendError::OutputFull));
    // ...and leaves input unprocessed (back-pressure), until the output is drained.
    let mut wire = Vec::new();
    sansrpc::codec::encode_frame(
        Framing::ContentLength,
        br#"{"jsonrpc":"2.0","method":"n"}"#,
        &mut wire,
    );
    let taken = ep.handle_input(&wire, Instant::ZERO).unwrap();
    assert!(ep.poll_event().is_none());
    transmitted(&mut ep);
    assert_eq!(
        taken + ep.handle_input(&wire[taken..], Instant::ZERO).unwrap(),
        wire.len()
    );
    assert!(matches!(ep.poll_event(), Some(Event::Notification(_))));
}

#[test]
fn input_beyond_unpolled_events_is_pushed_back() {
    let mut limits = sansrpc::Limits::default();
    limits.max_frame_bytes = 256;
    let mut ep = Side::new(config(|c| c.limits = limits));
    let mut wire = Vec::new();
    // About 75 KB: far more than the decoder's bound of frame + header limits (8.4 KB).
    for i in 0..1000 {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"note","params":[{i}]}}"#);
        sansrpc::codec::encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    let mut rest = &wire[..];
    let mut seen = 0;
    let mut rounds = 0;
    while !rest.is_empty() {
        let taken = ep.handle_input(rest, Instant::ZERO).unwrap();
        let bound = sansrpc::codec::Decoder::new(Framing::ContentLength, &limits).max_buffered();
        assert!(taken <= bound, "took {taken}, bound {bound}");
        rest = &rest[taken..];
        while let Some(e) = ep.poll_event() {
            assert!(matches!(e, Event::Notification(_)));
            seen += 1;
        }
        rounds += 1;
    }
    assert_eq!(seen, 1000);
    assert!(
        rounds > 1,
        "unpolled events bound how much input is taken at once"
    );
}

#[test]
fn handle_input_on_a_message_endpoint_is_an_error_not_a_panic() {
    let mut server = Side::new(config(|c| c.framing = None));
    let request = br#"{"jsonrpc":"2.0","method":"m","id":1}"#;
    assert_eq!(
        server.handle_input(request, Instant::ZERO),
        Err(NotAByteStream)
    );
    assert!(server.poll_event().is_none(), "nothing was taken");
    // The endpoint is unharmed: the same message, handed in whole, is a request.
    server.handle_message(request, Instant::ZERO).unwrap();
    assert!(matches!(server.poll_event(), Some(Event::Request { .. })));
}

#[test]
fn message_transports_use_handle_message() {
    let mut server = Side::new(config(|c| c.framing = None));
    server
        .handle_message(
            br#"{"jsonrpc":"2.0","method":"m","params":[1],"id":"w"}"#,
            Instant::ZERO,
        )
        .unwrap();
    let Some(Event::Request {
        handle: id,
        request,
    }) = server.poll_event()
    else {
        panic!()
    };
    assert_eq!(request.params.unwrap().get(), "[1]");
    server.respond_with(id, Ok(raw("true"))).unwrap();
    let mut out = Vec::new();
    server.poll_transmit(&mut out).unwrap();
    assert_eq!(
        out, br#"{"jsonrpc":"2.0","result":true,"id":"w"}"#,
        "unframed"
    );
    // Garbage is answered, and the endpoint goes on.
    server.handle_message(b"{oops", Instant::ZERO).unwrap();
    assert!(matches!(server.poll_event(), Some(Event::Rejected(_))));
    out.clear();
    server.poll_transmit(&mut out).unwrap();
    assert_eq!(
        out,
        br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#
    );
    // Oversize: -32004, id null.
    let mut limits = sansrpc::Limits::default();
    limits.max_frame_bytes = 16;
    let mut small = Side::new(config(|c| {
        c.framing = None;
        c.limits = limits;
    }));
    small
        .handle_message(br#"{"jsonrpc":"2.0","method":"mmmmmmmmmm"}"#, Instant::ZERO)
        .unwrap();
    assert!(matches!(small.poll_event(), Some(Event::FrameError(_))));
    out.clear();
    small.poll_transmit(&mut out).unwrap();
    assert!(out.starts_with(br#"{"jsonrpc":"2.0","error":{"code":-32004"#));
}

#[test]
fn garbage_on_a_stream_is_reported_and_the_stream_goes_on() {
    let mut p = Pair::new();
    p.a_to_b.extend_from_slice(b"junk before the header\r\n");
    let id = p.a.call("m", None, opts(), p.now).unwrap();
    p.drive();
    assert!(p.b.events.iter().any(|e| matches!(e, Ev::Frame(_))));
    let r = p.b.requests()[0];
    p.b.respond(r, "1");
    p.drive();
    assert_eq!(p.a.take_events(), vec![pair::answer(id, "1")]);
}

#[test]
fn malformed_response_to_a_pending_request_ends_it() {
    let mut ep = Side::new(Config::default());
    let id = ep.call("m", None, opts(), Instant::ZERO).unwrap();
    let events = feed(
        &mut ep,
        &[r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"x"},"id":1}"#],
    );
    assert_eq!(
        events,
        vec![pair::ended(
            id,
            EndReason::MalformedResponse(sansrpc::ProtocolError::ResultAndError)
        )]
    );
    let events = feed(
        &mut ep,
        &[r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":"x"},"id":8}"#],
    );
    assert_eq!(events, vec![Ev::Protocol]);
    assert!(
        transmitted(&mut ep).len() == 1,
        "only our request: malformed responses are never answered"
    );
}

/// Found by the model (`tests/model.rs`): frames `handle_input` reported as taken sat in the
/// decoder while the output was over its bound, and nothing told the caller to come back, so
/// a caller following the contract once (transmit, events, transmit) left them unanswered.
#[test]
fn frames_taken_are_processed_even_past_the_output_bound() {
    let mut ep = Side::new(config(|c| {
        c.max_inflight_incoming = 1;
        c.max_buffered_output = 100;
    }));
    let mut wire = Vec::new();
    for i in 1..=6 {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{i}}}"#);
        sansrpc::codec::encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    let note = br#"{"jsonrpc":"2.0","method":"note"}"#;
    sansrpc::codec::encode_frame(Framing::ContentLength, note, &mut wire);
    assert_eq!(ep.handle_input(&wire, Instant::ZERO).unwrap(), wire.len());
    // The calling contract, once: transmit, events (answering them), transmit.
    let ids = |frames: Vec<serde_json::Value>| frames.into_iter().map(|f| f["id"].clone());
    let mut answered: Vec<_> = ids(transmitted(&mut ep)).collect();
    let mut notes = 0;
    while let Some(e) = ep.poll_event() {
        match e {
            Event::Request { handle: id, .. } => ep.respond_with(id, Ok(raw("null"))).unwrap(),
            Event::Notification(_) => notes += 1,
            other => panic!("{other:?}"),
        }
    }
    answered.extend(ids(transmitted(&mut ep)));
    answered.sort_by_key(|id| id.as_u64());
    let expected: Vec<_> = (1..=6).map(serde_json::Value::from).collect();
    assert_eq!(answered, expected);
    assert_eq!(notes, 1);
    assert!(ep.is_idle());
}

/// With `hold_when_busy` (the default), a burst beyond the in-flight bound waits in the
/// decoder and then in the caller's input, instead of being answered -32002: every request
/// is answered, in order, as room frees.
#[test]
fn a_burst_beyond_the_in_flight_bound_waits_and_is_answered() {
    let mut ep = Side::new(config(|c| c.max_inflight_incoming = 2));
    let mut wire = Vec::new();
    for i in 1..=50 {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"m","id":{i}}}"#);
        sansrpc::codec::encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    let mut offered = &wire[..];
    let mut answered = Vec::new();
    let mut rounds = 0;
    while answered.len() < 50 {
        rounds += 1;
        assert!(rounds < 1000, "no progress: {answered:?}");
        let taken = ep.handle_input(offered, Instant::ZERO).unwrap();
        offered = &offered[taken..];
        let mut handles = Vec::new();
        while let Some(event) = ep.poll_event() {
            match event {
                Event::Request { handle: id, .. } => handles.push(id),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(handles.len() <= 2, "never more than the bound in flight");
        for id in handles {
            ep.respond_with(id, Ok(RawValue::from_json("true").unwrap()))
                .unwrap();
        }
        for frame in transmitted(&mut ep) {
            assert_eq!(frame["result"], true, "{frame}");
            answered.push(frame["id"].as_u64().unwrap());
        }
    }
    assert_eq!(answered, (1..=50).collect::<Vec<_>>());
    assert!(offered.is_empty());
}

/// Holding input while the in-flight table is full, with the input offered in chunks cut
/// anywhere (as a socket delivers it) and answers given a few at a time: nothing is lost,
/// misparsed or answered twice.
#[test]
fn held_input_offered_in_odd_chunks_is_decoded_intact() {
    let mut ep = Side::new(config(|c| c.max_inflight_incoming = 8));
    let mut wire = Vec::new();
    for i in 0..2_000 {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"add","params":[{i},1],"id":{i}}}"#);
        sansrpc::codec::encode_frame(Framing::ContentLength, body.as_bytes(), &mut wire);
    }
    let mut chunks: std::collections::VecDeque<(Vec<u8>, usize)> =
        wire.chunks(997).map(|c| (c.to_vec(), 0)).collect();
    let mut waiting = std::collections::VecDeque::new();
    let mut answered = 0u64;
    let mut rounds = 0;
    while answered < 2_000 {
        rounds += 1;
        assert!(rounds < 100_000, "no progress at {answered}");
        while let Some((chunk, taken)) = chunks.front_mut() {
            *taken += ep.handle_input(&chunk[*taken..], Instant::ZERO).unwrap();
            if *taken < chunk.len() {
                break;
            }
            chunks.pop_front();
        }
        while let Some(event) = ep.poll_event() {
            match event {
                Event::Request { handle: id, .. } => waiting.push_back(id),
                other => panic!("unexpected {other:?}"),
            }
        }
        // Answer the three oldest, as a pool of handlers would, a few at a time.
        for _ in 0..3 {
            if let Some(id) = waiting.pop_front() {
                ep.respond_with(id, Ok(RawValue::from_json("1").unwrap()))
                    .unwrap();
            }
        }
        for frame in transmitted(&mut ep) {
            assert_eq!(frame["id"], answered, "{frame}");
            answered += 1;
        }
    }
}

/// sansrpc's own codes in the server-error range move out of it under MCP, which assigns
/// codes there itself (`-32002` is its "resource not found"); the standard codes and an
/// application's own errors are never changed, and other profiles keep sansrpc's codes.
#[test]
fn under_mcp_sansrpcs_own_codes_leave_the_server_error_range() {
    use sansrpc::connection::{write_refusal, Profile};
    use sansrpc::ErrorObject;
    for (profile, shift) in [
        (Profile::JsonRpc, 0),
        (Profile::Lsp, 0),
        (Profile::Mcp, 1000),
    ] {
        let mut c = Config::for_profile(profile);
        c.framing = Some(Framing::ContentLength);
        c.max_inflight_incoming = 1;
        c.hold_when_busy = false;
        c.limits.max_batch_len = 2;
        // Without the LSP server's lifecycle (it would refuse requests before `initialize`).
        c.lsp_lifecycle = false;
        let mut ep = Side::new(c);
        let events = feed(
            &mut ep,
            &[
                r#"{"jsonrpc":"2.0","method":"a","id":1}"#,
                r#"{"jsonrpc":"2.0","method":"b","id":2}"#,
                r#"[{"jsonrpc":"2.0","method":"c"},{"jsonrpc":"2.0","method":"c"},{"jsonrpc":"2.0","method":"c"}]"#,
                r#"{"jsonrpc":"2.0","method":"d","id":3,"params":{"#,
            ],
        );
        let out = transmitted(&mut ep);
        let codes: Vec<_> = out.iter().map(|f| f["error"]["code"].clone()).collect();
        assert_eq!(
            codes,
            [-32002 + shift, -32003 + shift, -32700],
            "{profile:?}: busy, batch too large, parse error"
        );
        // The application's own -32002 (MCP's "resource not found") goes out as given.
        let Some(Ev::Request { id, .. }) = events.into_iter().next() else {
            panic!("{profile:?}: the first request surfaces")
        };
        let not_found = ErrorObject::new(-32002, "Resource not found");
        ep.respond_with(id, Err(&not_found)).unwrap();
        assert_eq!(transmitted(&mut ep)[0]["error"]["code"], -32002);
        let mut refusal = Vec::new();
        write_refusal(profile, None, &mut refusal);
        let refusal: serde_json::Value = serde_json::from_slice(&refusal).unwrap();
        assert_eq!(refusal["error"]["code"], -32002 + shift);
    }
}
