//! Bounded by construction, in virtual time: the connection's output buffer stays
//! proportional to what is pending however a driver drains it, the partial-frame clock
//! does not run while the core itself holds input back, and the byte-stream helper
//! ([`StreamIo`]) keeps its promises (held input, end of input after it, the read budget).

use std::time::Duration;

use sansrpc::connection::Expiry;
use sansrpc::connection::{Config, Connection, Event};
use sansrpc::driver::StreamIo;
use sansrpc::router::{Reply, Router};
use sansrpc::{Instant, RawValue};

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn request(id: u64) -> Vec<u8> {
    frame(&format!(
        r#"{{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":{id}}}"#
    ))
}

fn connection(f: impl FnOnce(&mut Config)) -> Connection {
    let mut c = Config::default();
    f(&mut c);
    Connection::new(c, Instant::ZERO)
}

/// Answers every request with `19`; true when any event came.
fn answer_all(conn: &mut Connection) -> Vec<Event<'static>> {
    let nineteen = RawValue::from_json("19").unwrap();
    let mut others = Vec::new();
    while let Some(event) = conn.poll_event() {
        match event {
            Event::Request { handle, .. } => conn.respond(handle, Ok(nineteen)),
            Event::Expired(e) => others.push(Event::Expired(e)),
            Event::Closed { reason } => others.push(Event::Closed { reason }),
            _ => {}
        }
    }
    others
}

/// A driver that takes output a frame at a time up to a chunk per turn, as the futures
/// byte stream used to, under a client that pipelines faster than it reads: the output
/// never empties, and the buffer used to keep every consumed byte (934 MiB in 20 s over
/// stdio). Now it holds at most about twice what is pending.
#[test]
fn output_taken_in_parts_each_turn_keeps_the_buffer_bounded() {
    let mut conn = connection(|_| {});
    let mut next_id = 0;
    let mut peak = 0;
    let mut taken = 0usize;
    // What the client wrote and the connection did not take yet (its socket buffer).
    let mut backlog = Vec::new();
    for turn in 0..3_000u64 {
        let now = Instant::from_millis(turn);
        for _ in 0..100 {
            next_id += 1;
            backlog.extend_from_slice(&request(next_id));
        }
        loop {
            let n = conn.handle_input(&backlog, now).unwrap();
            backlog.drain(..n);
            answer_all(&mut conn);
            if n == 0 || backlog.is_empty() {
                break;
            }
        }
        // Takes a little less than was produced: the buffer never empties.
        let mut out = Vec::new();
        while out.len() < 5_000 && conn.poll_transmit(&mut out).is_some() {}
        taken += out.len();
        conn.handle_write(true, true, now);
        peak = peak.max(conn.output_capacity());
        assert!(conn.buffered_output() > 0);
    }
    let pending = conn.buffered_output();
    // About 300 KB produced beyond what was taken; 24 MB taken over the run.
    assert!(taken > 10_000_000, "{taken}");
    assert!(
        peak <= 4 * pending.max(64 * 1024),
        "peak capacity {peak} for {pending} pending"
    );
}

/// The same with the byte-stream helper's peek and consume: a driver that writes part of
/// what is pending each turn, straight from the connection's buffer.
#[test]
fn output_written_in_parts_from_the_connection_buffer_stays_bounded() {
    let mut conn = connection(|_| {});
    let mut io = StreamIo::new();
    let mut reply = Reply::default();
    let mut router = Router::new();
    router
        .raw_method("subtract", |_, out| {
            out.extend_from_slice(b"19");
            Ok(())
        })
        .unwrap();
    let mut next_id = 0;
    let mut peak = 0;
    for turn in 0..3_000u64 {
        let now = Instant::from_millis(turn);
        let mut input = Vec::new();
        for _ in 0..100 {
            next_id += 1;
            input.extend_from_slice(&request(next_id));
        }
        let mut offered = &input[..];
        while let Some(buf) = io.read_buf(&conn) {
            let n = buf.len().min(offered.len());
            buf[..n].copy_from_slice(&offered[..n]);
            offered = &offered[n..];
            io.handle_read(&mut conn, n, now);
            loop {
                router.serve(&mut conn, &mut reply, |_| {});
                if !io.feed(&mut conn, now) {
                    break;
                }
            }
            if offered.is_empty() {
                break;
            }
        }
        let pending = io.transmit(&mut conn).len();
        io.handle_written(&mut conn, pending.saturating_sub(100), now);
        peak = peak.max(conn.output_capacity());
        let interest = io.interest(&mut conn);
        assert!(interest.read && interest.write);
    }
    assert!(conn.buffered_output() > 0);
    assert!(peak <= 256 * 1024, "peak capacity {peak}");
}

/// While the output is over its bound the connection takes no input, so a partial frame
/// in its decoder is not the peer's delay: its clock stops, and goes on once the output
/// drains. Before, a client that pipelined fast and read slowly was closed as a slowloris.
#[test]
fn the_partial_frame_clock_pauses_while_output_holds_input_back() {
    let mut conn = connection(|c| {
        c.frame_timeout = Some(Duration::from_secs(5));
        c.max_buffered_output = 2048;
    });
    let mut input = Vec::new();
    for id in 1..=100 {
        input.extend_from_slice(&request(id));
    }
    let next = request(101);
    input.extend_from_slice(&next[..10]);
    let t0 = Instant::ZERO;
    // All of it is taken: the output is empty while it is read.
    assert_eq!(conn.handle_input(&input, t0).unwrap(), input.len());
    answer_all(&mut conn);
    assert!(conn.buffered_output() > 2048);
    assert!(!conn.wants_input() || conn.handle_input(&next[10..], t0).unwrap() == 0);
    // A minute with the output full and unread: the peer is not late, we are.
    for s in 1..=60 {
        let now = t0 + Duration::from_secs(s);
        conn.handle_timeout(now);
        assert!(answer_all(&mut conn).is_empty(), "closed at {s} s");
    }
    // The output drains; the partial frame's clock goes on from where it stood.
    let resumed = t0 + Duration::from_secs(60);
    let all = conn.peek_transmit().len();
    conn.consume_transmit(all);
    conn.handle_write(true, false, resumed);
    conn.handle_timeout(resumed + Duration::from_millis(4_900));
    assert!(answer_all(&mut conn).is_empty());
    let deadline = conn.poll_timeout().unwrap();
    assert_eq!(deadline, resumed + Duration::from_secs(5));
    conn.handle_timeout(deadline);
    let events = answer_all(&mut conn);
    assert!(
        matches!(events[0], Event::Expired(Expiry::PartialFrame)),
        "{events:?}"
    );
}

/// Output held by the driver counts toward the write stall only from the last byte that
/// actually left: a write of part of the output restarts it.
#[test]
fn the_write_stall_runs_from_the_last_byte_written() {
    let mut conn = connection(|c| c.write_stall_timeout = Some(Duration::from_secs(3)));
    let mut io = StreamIo::new();
    let t0 = Instant::ZERO;
    let buf = io.read_buf(&conn).unwrap();
    let req = request(1);
    buf[..req.len()].copy_from_slice(&req);
    io.handle_read(&mut conn, req.len(), t0);
    answer_all(&mut conn);
    let pending = io.transmit(&mut conn).len();
    // Ten bytes go at 2 s; then the socket blocks.
    io.handle_written(&mut conn, 10, t0 + Duration::from_secs(2));
    io.handle_write_blocked(&mut conn, t0 + Duration::from_secs(2));
    assert_eq!(conn.buffered_output(), pending - 10);
    assert_eq!(
        conn.poll_timeout(),
        Some(t0 + Duration::from_secs(5)),
        "three seconds after the last byte written"
    );
    conn.handle_timeout(t0 + Duration::from_secs(5));
    let events = answer_all(&mut conn);
    assert!(
        matches!(events[0], Event::Expired(Expiry::WriteStall)),
        "{events:?}"
    );
    // The driver is told to reset the transport: the peer will read nothing more, and a
    // graceful close would wait behind the unsent bytes.
    let interest = io.interest(&mut conn);
    assert!(interest.finished && interest.reset, "{interest:?}");
    assert!(conn.resets_on_close());
}

/// A connection that ends otherwise is closed gracefully: no reset.
#[test]
fn other_ends_close_gracefully() {
    let mut conn = connection(|c| c.write_stall_timeout = Some(Duration::from_secs(3)));
    let mut io = StreamIo::new();
    io.handle_read(&mut conn, 0, Instant::ZERO);
    while io.feed(&mut conn, Instant::ZERO) {
        answer_all(&mut conn);
    }
    answer_all(&mut conn);
    let interest = io.interest(&mut conn);
    assert!(interest.finished && !interest.reset, "{interest:?}");
    assert!(!conn.resets_on_close());
}

/// Input the connection cannot take (its output is full) is held by the helper, nothing
/// more is read meanwhile, and the end of input reaches the connection only after it.
#[test]
fn held_input_is_offered_again_and_the_end_of_input_comes_after_it() {
    let mut conn = connection(|c| c.max_buffered_output = 10);
    let mut io = StreamIo::new();
    let now = Instant::ZERO;
    let one = RawValue::from_json("1").unwrap();
    let read = |io: &mut StreamIo, conn: &mut Connection, bytes: &[u8]| {
        let buf = io.read_buf(conn).expect("a buffer to read into");
        buf[..bytes.len()].copy_from_slice(bytes);
        io.handle_read(conn, bytes.len(), now);
    };
    let next = |conn: &mut Connection| match conn.poll_event() {
        Some(Event::Request { handle, request }) => (handle, request.id.to_string()),
        other => panic!("{other:?}"),
    };
    read(&mut io, &mut conn, &request(1));
    let (first, _) = next(&mut conn);
    conn.respond(first, Ok(one));
    assert!(!conn.wants_input(), "the answer fills the output");
    // Read anyway (a driver that does not ask): the second request waits in the helper.
    let buf = &mut io.read_buf(&conn);
    assert!(buf.is_none(), "nothing is read while the output is full");
    io.handle_chunk(&mut conn, request(2), now);
    assert_eq!(io.buffered_input(), request(2).len());
    // The peer closes; the end is not passed on while the second request is held.
    io.handle_chunk(&mut conn, Vec::new(), now);
    assert!(!conn.is_closing());
    assert!(conn.poll_event().is_none());
    let all = io.transmit(&mut conn).len();
    io.handle_written(&mut conn, all, now);
    assert!(io.feed(&mut conn, now));
    assert_eq!(next(&mut conn).1, "2");
    assert!(
        conn.is_closing(),
        "the end of input follows the held request"
    );
}

/// A peer that floods gets a bounded read per turn; the helper asks for another turn.
#[test]
fn the_read_budget_ends_a_turn_and_asks_for_another() {
    let mut conn = connection(|_| {});
    let mut io = StreamIo::with_limits(4096, 4096, 10_000);
    let now = Instant::ZERO;
    let req = request(1);
    let mut reads = 0;
    while let Some(buf) = io.read_buf(&conn) {
        let mut n = 0;
        while n + req.len() <= buf.len() {
            buf[n..n + req.len()].copy_from_slice(&req);
            n += req.len();
        }
        io.handle_read(&mut conn, n, now);
        answer_all(&mut conn);
        reads += 1;
        assert!(reads < 10, "the budget did not end the turn");
    }
    assert_eq!(reads, 3);
    let interest = io.interest(&mut conn);
    assert!(interest.again && interest.read && interest.write);
    assert!(io.read_buf(&conn).is_some(), "a new turn has a new budget");
}

/// The small-device preset keeps its bounds: a frame over 4 KiB and a batch of 9 are
/// refused with their errors (-32004, -32003) and the connection goes on; a fifth request waits while four
/// are in flight; a flood stops being taken once 4 KiB of requests wait.
#[test]
fn the_embedded_preset_keeps_its_bounds() {
    let mut conn = Connection::new(Config::embedded(), Instant::ZERO);
    let now = Instant::ZERO;
    let mut answers = Vec::new();
    let drain = |conn: &mut Connection, answers: &mut Vec<u8>| {
        while conn.poll_transmit(answers).is_some() {}
    };
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":1}}"#,
        "x".repeat(5000)
    );
    conn.handle_input(&frame(&big), now).unwrap();
    let batch: Vec<String> = (0..9)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":{i}}}"#))
        .collect();
    conn.handle_input(&frame(&format!("[{}]", batch.join(","))), now)
        .unwrap();
    assert!(answer_all(&mut conn).is_empty(), "nothing closed");
    drain(&mut conn, &mut answers);
    let text = String::from_utf8_lossy(&answers).into_owned();
    assert!(
        text.contains(r#""code":-32004,"message":"Request too large""#),
        "{text}"
    );
    assert!(
        text.contains(r#""code":-32003,"message":"Batch too large""#),
        "{text}"
    );
    // Four in flight; the fifth waits, and the flood behind it is bounded.
    let mut handles = Vec::new();
    for id in 10..15 {
        conn.handle_input(&request(id), now).unwrap();
        while let Some(event) = conn.poll_event() {
            if let Event::Request { handle, .. } = event {
                handles.push(handle);
            }
        }
    }
    assert_eq!(handles.len(), 4, "four handed out, the fifth held");
    let mut taken = 0;
    for id in 15..1000 {
        let req = request(id);
        if !conn.wants_input() {
            break;
        }
        taken += conn.handle_input(&req, now).unwrap_or(0);
    }
    assert!(
        !conn.wants_input(),
        "input stops once the held bound is reached"
    );
    assert!(
        taken <= 8 * 1024,
        "{taken} bytes taken while requests were held"
    );
}
