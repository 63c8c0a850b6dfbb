//! Protection rules in the core: the per-connection rate limit, the idle timeout, the
//! partial-frame (slowloris) timeout and the write-stall timeout, driven with raw bytes and a virtual clock.

use std::time::Duration;

use sansrpc::codec::Framing;
use sansrpc::connection::{
    CloseReason, Config, Connection, Event, Expiry, RateLimit, RequestOptions,
};
use sansrpc::{Instant, RawValue};

fn endpoint(f: impl FnOnce(&mut Config)) -> Connection {
    let mut c = Config::default();
    f(&mut c);
    Connection::new(c, Instant::ZERO)
}

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

/// Everything the endpoint has to send, as text.
fn sent(ep: &mut Connection) -> String {
    let mut out = Vec::new();
    while ep.poll_transmit(&mut out).is_some() {}
    String::from_utf8(out).unwrap()
}

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Request(String),
    Notification(String),
    Expired(Expiry),
    Closed(CloseReason),
    Other,
}

/// Drains the events; requests are answered with `"ok"`.
fn events(ep: &mut Connection, answer: bool) -> Vec<Ev> {
    let mut seen = Vec::new();
    let mut answers = Vec::new();
    while let Some(e) = ep.poll_event() {
        seen.push(match e {
            Event::Request { handle, request } => {
                answers.push(handle);
                Ev::Request(request.method.into_owned())
            }
            Event::Notification(n) => Ev::Notification(n.method.into_owned()),
            Event::Expired(x) => Ev::Expired(x),
            Event::Closed { reason } => Ev::Closed(reason),
            _ => Ev::Other,
        });
    }
    if answer {
        let ok = RawValue::from_json("\"ok\"").unwrap();
        for id in answers {
            let running = ep.running();
            ep.respond(id, Ok(ok));
            assert_eq!(ep.running() + 1, running, "answered");
        }
    }
    seen
}

fn request(id: u32, method: &str) -> Vec<u8> {
    frame(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#
    ))
}

fn notification(method: &str) -> Vec<u8> {
    frame(&format!(r#"{{"jsonrpc":"2.0","method":"{method}"}}"#))
}

#[test]
fn rate_limit_answers_requests_over_the_bucket_and_drops_notifications() {
    let mut ep = endpoint(|c| c.rate_limit = Some(RateLimit::new(2, 3)));
    let mut input = Vec::new();
    for i in 1..=5 {
        input.extend(request(i, "work"));
    }
    input.extend(notification("note"));
    assert_eq!(ep.handle_input(&input, ms(0)).unwrap(), input.len());
    // The burst of 3 goes through; the 4th and 5th requests are answered by the endpoint.
    let seen = events(&mut ep, true);
    assert_eq!(seen, vec![Ev::Request("work".into()); 3]);
    let out = sent(&mut ep);
    for id in [4, 5] {
        let busy = format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":-32002,"message":"Server busy: rate limit exceeded"}},"id":{id}}}"#
        );
        assert!(out.contains(&busy), "{out}");
    }
    assert_eq!(out.matches("\"result\":\"ok\"").count(), 3, "{out}");
    assert_eq!(ep.rate_limited_requests(), 2);
    assert_eq!(ep.dropped_notifications(), 1);

    // Half a second refills one token (2 a second): one more request passes, then none.
    let mut input = request(6, "work");
    input.extend(request(7, "work"));
    ep.handle_input(&input, ms(500)).unwrap();
    assert_eq!(events(&mut ep, true), vec![Ev::Request("work".into())]);
    let out = sent(&mut ep);
    assert!(
        out.contains(r#""code":-32002"#) && out.contains(r#""id":7"#),
        "{out}"
    );
    // Refills never exceed the burst: after a long pause, exactly 3 pass again.
    let mut input = Vec::new();
    for i in 8..=12 {
        input.extend(request(i, "work"));
    }
    ep.handle_input(&input, ms(60_000)).unwrap();
    assert_eq!(events(&mut ep, true).len(), 3);
    assert_eq!(ep.rate_limited_requests(), 5);
}

#[test]
fn rate_limit_counts_each_batch_entry_and_uses_a_configured_code() {
    let mut ep = endpoint(|c| c.rate_limit = Some(RateLimit::new(0, 2).with_code(-32099)));
    let batch = frame(
        r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","id":3,"method":"c"},{"jsonrpc":"2.0","method":"d"}]"#,
    );
    ep.handle_input(&batch, ms(0)).unwrap();
    assert_eq!(
        events(&mut ep, true),
        vec![Ev::Request("a".into()), Ev::Request("b".into())]
    );
    let out = sent(&mut ep);
    // One array: two results and the third request refused with the application's code.
    assert_eq!(out.matches("Content-Length").count(), 1, "{out}");
    assert!(out.contains(r#"{"jsonrpc":"2.0","error":{"code":-32099,"message":"Server busy: rate limit exceeded"},"id":3}"#), "{out}");
    assert_eq!(ep.dropped_notifications(), 1);
    // No refill at 0 per second.
    ep.handle_input(&request(4, "e"), ms(3_600_000)).unwrap();
    assert!(events(&mut ep, true).is_empty());
}

#[test]
fn responses_and_cancellations_are_not_rate_limited() {
    let mut ep = endpoint(|c| c.rate_limit = Some(RateLimit::new(0, 1)));
    ep.call(1, "q", None, RequestOptions::default(), ms(0))
        .unwrap();
    // Our request's id on the wire.
    let id = sent(&mut ep);
    let id: serde_json::Value =
        serde_json::from_str(&id[id.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    let id = id["id"].as_u64().unwrap();
    let mut input = request(1, "work");
    input.extend(frame(
        r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
    ));
    input.extend(frame(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#,
        id
    )));
    ep.handle_input(&input, ms(1)).unwrap();
    let mut kinds = Vec::new();
    while let Some(e) = ep.poll_event() {
        kinds.push(match e {
            Event::Request { .. } => "request",
            Event::Cancel { .. } => "cancelled",
            Event::Answer { .. } => "response",
            _ => "other",
        });
    }
    // The request was cancelled before it was handed out: answered as cancelled at once
    // (the cancellation went through the empty bucket), never seen.
    assert_eq!(kinds, ["response"]);
    assert!(sent(&mut ep).contains(r#""code":-32800"#));
    assert_eq!(ep.rate_limited_requests() + ep.dropped_notifications(), 0);
}

#[test]
fn idle_timeout_closes_a_quiet_connection() {
    let idle = Duration::from_secs(10);
    let mut ep = endpoint(|c| c.idle_timeout = Some(idle));
    // The endpoint has not been told the time yet: it asks for it at once.
    assert_eq!(ep.poll_timeout(), Some(Instant::ZERO));
    ep.handle_timeout(ms(1_000));
    assert_eq!(ep.poll_timeout(), Some(ms(11_000)));
    // Input pushes the deadline.
    ep.handle_input(&notification("ping"), ms(5_000)).unwrap();
    events(&mut ep, false);
    assert_eq!(ep.poll_timeout(), Some(ms(15_000)));
    ep.handle_timeout(ms(14_999));
    assert!(!ep.is_closed());
    ep.handle_timeout(ms(15_000));
    assert!(ep.is_closed());
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::Idle),
            Ev::Closed(CloseReason::Expired(Expiry::Idle))
        ]
    );
    assert_eq!(ep.poll_timeout(), None);
}

#[test]
fn write_stall_timeout_closes_a_peer_that_does_not_read() {
    let stall = Duration::from_secs(30);
    let mut ep = endpoint(|c| c.write_stall_timeout = Some(stall));
    let mut input = Vec::new();
    for id in 1..=1_000 {
        input.extend_from_slice(&request(id, "add"));
    }
    ep.handle_input(&input, ms(0)).unwrap();
    events(&mut ep, true);
    let waiting = ep.buffered_output();
    assert!(waiting > 32 * 1024);
    // Output waits; nothing was written yet: the clock starts.
    ep.handle_write(false, true, ms(1_000));
    assert_eq!(ep.poll_timeout(), Some(ms(31_000)));
    // A trickle (the kernel moving bytes into a full window as it compacts it, even 16 KiB
    // and seconds into the stall) does not restart it; a failed attempt does not; taking
    // all that waited does.
    ep.consume_transmit(100);
    ep.handle_write(true, true, ms(5_000));
    assert_eq!(ep.poll_timeout(), Some(ms(31_000)));
    ep.consume_transmit(16 * 1024);
    ep.handle_write(true, true, ms(8_000));
    assert_eq!(ep.poll_timeout(), Some(ms(31_000)));
    ep.handle_input(&request(1_001, "add"), ms(9_000)).unwrap();
    events(&mut ep, true);
    ep.consume_transmit(waiting - 100 - 16 * 1024);
    ep.handle_write(true, true, ms(10_000));
    ep.handle_write(false, true, ms(20_000));
    assert_eq!(ep.poll_timeout(), Some(ms(40_000)));
    ep.handle_timeout(ms(39_999));
    assert!(!ep.is_closed());
    ep.handle_timeout(ms(40_000));
    assert!(ep.is_closed());
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::WriteStall),
            Ev::Closed(CloseReason::Expired(Expiry::WriteStall))
        ]
    );
}

#[test]
fn a_small_answer_taken_whole_restarts_the_write_stall_clock() {
    let stall = Duration::from_secs(30);
    let mut ep = endpoint(|c| c.write_stall_timeout = Some(stall));
    ep.handle_input(&request(1, "add"), ms(0)).unwrap();
    events(&mut ep, true);
    ep.handle_write(false, true, ms(1_000));
    // The peer took all that waited; more came meanwhile.
    let first = ep.buffered_output();
    ep.handle_input(&request(2, "add"), ms(2_000)).unwrap();
    events(&mut ep, true);
    ep.consume_transmit(first);
    ep.handle_write(true, true, ms(3_000));
    assert_eq!(ep.poll_timeout(), Some(ms(33_000)));
}

#[test]
fn write_stall_timeout_sleeps_while_nothing_waits() {
    let mut ep = endpoint(|c| c.write_stall_timeout = Some(Duration::from_secs(1)));
    ep.handle_write(false, true, ms(0));
    // Everything written: no deadline, however long the peer then stays quiet.
    ep.handle_write(true, false, ms(500));
    assert_eq!(ep.poll_timeout(), None);
    ep.handle_timeout(ms(100_000));
    assert!(!ep.is_closed());
}

#[test]
fn idle_timeout_waits_for_work_in_flight() {
    let idle = Duration::from_secs(10);
    let mut ep = endpoint(|c| c.idle_timeout = Some(idle));
    ep.handle_input(&request(1, "slow"), ms(0)).unwrap();
    let mut handle = None;
    while let Some(e) = ep.poll_event() {
        if let Event::Request { handle: id, .. } = e {
            handle = Some(id);
        }
    }
    // A request in flight: no idle deadline, however long the handler takes.
    assert_eq!(ep.poll_timeout(), None);
    ep.handle_timeout(ms(60_000));
    assert!(!ep.is_closed());
    ep.respond(handle.unwrap(), Ok(RawValue::from_json("1").unwrap()));
    assert_eq!(ep.running(), 0, "answered");
    // The endpoint was not told when the answer came: it asks at once, then counts from then.
    assert_eq!(ep.poll_timeout(), Some(ms(60_000)));
    ep.handle_timeout(ms(100_000));
    assert_eq!(ep.poll_timeout(), Some(ms(110_000)));
    ep.handle_timeout(ms(110_000));
    assert!(ep.is_closed());

    // Our own request pending counts too.
    let mut ep = endpoint(|c| {
        c.idle_timeout = Some(idle);
        c.default_timeout = None;
    });
    ep.call(1, "q", None, RequestOptions::default(), ms(0))
        .unwrap();
    ep.handle_timeout(ms(50_000));
    assert!(!ep.is_closed());
    assert_eq!(ep.poll_timeout(), None);
    // Work that ends with no input (our call forgotten): the idle clock counts from then,
    // not from the first time the connection was given while the call was in flight.
    assert!(ep.cancel_call(1, ms(70_000)));
    ep.handle_timeout(ms(70_000));
    assert!(!ep.is_closed(), "idle since 70 s, not since 50 s");
    assert_eq!(ep.poll_timeout(), Some(ms(80_000)));
    ep.handle_timeout(ms(80_000));
    assert!(ep.is_closed());
}

#[test]
fn frame_timeout_drops_a_slowloris_peer() {
    let limit = Duration::from_secs(5);
    let mut ep = endpoint(|c| {
        c.frame_timeout = Some(limit);
        c.idle_timeout = Some(Duration::from_secs(3600));
    });
    let whole = request(1, "work");
    // A complete frame leaves nothing partial: only the (long) idle deadline.
    ep.handle_input(&whole, ms(0)).unwrap();
    assert_eq!(events(&mut ep, true), vec![Ev::Request("work".into())]);
    sent(&mut ep);
    ep.handle_timeout(ms(0));
    assert_eq!(ep.poll_timeout(), Some(ms(3_600_000)));
    // Half a frame, then a byte now and then: the clock runs from the frame's first byte.
    let slow = request(2, "work");
    let (head, rest) = slow.split_at(slow.len() / 2);
    ep.handle_input(head, ms(1_000)).unwrap();
    assert_eq!(ep.poll_timeout(), Some(ms(6_000)));
    ep.handle_input(&rest[..1], ms(4_000)).unwrap();
    ep.handle_input(&rest[1..2], ms(5_999)).unwrap();
    assert_eq!(ep.poll_timeout(), Some(ms(6_000)));
    ep.handle_timeout(ms(6_000));
    assert!(ep.is_closed());
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::PartialFrame),
            Ev::Closed(CloseReason::Expired(Expiry::PartialFrame))
        ]
    );
}

#[test]
fn frame_timeout_restarts_with_each_frame_and_covers_newline_framing() {
    let limit = Duration::from_secs(5);
    let mut ep = endpoint(|c| {
        c.frame_timeout = Some(limit);
        c.framing = Some(Framing::Newline);
    });
    let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n";
    ep.handle_input(&line[..10], ms(0)).unwrap();
    assert_eq!(ep.poll_timeout(), Some(ms(5_000)));
    // The line completes in time and the next one starts: its own clock.
    let mut more = line[10..].to_vec();
    more.extend_from_slice(&line[..3]);
    ep.handle_input(&more, ms(4_000)).unwrap();
    assert_eq!(events(&mut ep, false), vec![Ev::Notification("n".into())]);
    assert_eq!(ep.poll_timeout(), Some(ms(9_000)));
    ep.handle_input(&line[3..], ms(8_000)).unwrap();
    events(&mut ep, false);
    assert_eq!(ep.poll_timeout(), None);
    ep.handle_timeout(ms(100_000));
    assert!(!ep.is_closed());
}

#[test]
fn protection_is_off_by_default() {
    let mut ep = Connection::new(Config::default(), Instant::ZERO);
    let slow = request(1, "work");
    ep.handle_input(&slow[..10], ms(0)).unwrap();
    assert_eq!(ep.poll_timeout(), None);
    ep.handle_timeout(ms(u32::MAX as u64));
    assert!(!ep.is_closed());
}

mod bucket {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Over any arrival times, the requests admitted in any window never exceed the burst
        /// plus what the rate refills in that window, and every request is either admitted
        /// (an event) or answered -32002 by the endpoint.
        #[test]
        fn admitted_requests_never_exceed_the_bucket(
            rate in 0u32..20,
            burst in 1u32..10,
            gaps in proptest::collection::vec(0u64..400, 1..60),
        ) {
            let mut ep = endpoint(|c| c.rate_limit = Some(RateLimit::new(rate, burst)));
            let mut now = 0;
            let mut admitted = Vec::new();
            for (i, gap) in gaps.iter().enumerate() {
                now += gap;
                ep.handle_input(&request(i as u32 + 1, "m"), ms(now)).unwrap();
                if !events(&mut ep, true).is_empty() {
                    admitted.push(now);
                }
                sent(&mut ep);
            }
            prop_assert_eq!(admitted.len() as u64 + ep.rate_limited_requests(), gaps.len() as u64);
            for (i, &start) in admitted.iter().enumerate() {
                for (j, &end) in admitted.iter().enumerate().skip(i) {
                    let count = (j - i + 1) as u64;
                    let refill = (end - start) * u64::from(rate) / 1000;
                    prop_assert!(count <= u64::from(burst) + refill + 1,
                        "{count} admitted in {}ms", end - start);
                }
            }
        }
    }
}

/// The network defaults' own values, in virtual time: an endpoint with
/// `Config::with_network_defaults` closes a quiet peer after 300 s, a slowloris after 30 s
/// and a peer that does not read after 30 s, not a millisecond earlier. (The tests over real
/// sockets use short timeouts; one, `cli/tests/backpressure.rs`, waits for the 30 s
/// write-stall default of `sansrpc serve` in real time.)
#[test]
fn the_network_defaults_close_at_their_stated_values() {
    let network = || Connection::new(Config::default().with_network_defaults(), Instant::ZERO);
    assert_eq!(
        sansrpc::connection::NETWORK_IDLE_TIMEOUT,
        Duration::from_secs(300)
    );
    assert_eq!(
        sansrpc::connection::NETWORK_FRAME_TIMEOUT,
        Duration::from_secs(30)
    );
    assert_eq!(
        sansrpc::connection::NETWORK_WRITE_STALL_TIMEOUT,
        Duration::from_secs(30)
    );

    // Idle: nothing from the peer since 1 s.
    let mut ep = network();
    ep.handle_timeout(ms(1_000));
    assert_eq!(ep.poll_timeout(), Some(ms(301_000)));
    ep.handle_timeout(ms(300_999));
    assert!(!ep.is_closed());
    ep.handle_timeout(ms(301_000));
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::Idle),
            Ev::Closed(CloseReason::Expired(Expiry::Idle))
        ]
    );

    // A frame's first half at 1 s, and never the rest.
    let mut ep = network();
    let slow = request(1, "work");
    ep.handle_input(&slow[..slow.len() / 2], ms(1_000)).unwrap();
    assert_eq!(ep.poll_timeout(), Some(ms(31_000)));
    ep.handle_timeout(ms(30_999));
    assert!(!ep.is_closed());
    ep.handle_timeout(ms(31_000));
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::PartialFrame),
            Ev::Closed(CloseReason::Expired(Expiry::PartialFrame))
        ]
    );

    // Answers that wait to be written from 1 s on, with no byte taken.
    let mut ep = network();
    let mut input = Vec::new();
    for id in 1..=1_000 {
        input.extend_from_slice(&request(id, "add"));
    }
    ep.handle_input(&input, ms(0)).unwrap();
    events(&mut ep, true);
    ep.handle_write(false, true, ms(1_000));
    ep.handle_timeout(ms(1_000));
    assert_eq!(ep.poll_timeout(), Some(ms(31_000)));
    ep.handle_timeout(ms(30_999));
    assert!(!ep.is_closed());
    ep.handle_timeout(ms(31_000));
    assert_eq!(
        events(&mut ep, false),
        vec![
            Ev::Expired(Expiry::WriteStall),
            Ev::Closed(CloseReason::Expired(Expiry::WriteStall))
        ]
    );
}
