//! Allocation counts: with warm buffers, the steady state allocates nothing.
//!
//! A counting global allocator counts allocations made by the current thread only, so tests
//! running in parallel do not disturb each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sansrpc::codec::{encode_frame, Decoder, Framing};
use sansrpc::message::{write_error_response, write_result_response, BatchWriter};
use sansrpc::{Classified, Classifier, ErrorObject, Incoming, Limits, RawValue};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

/// The whole server path for one decoded frame: classify, answer every request (the sum of
/// its two positional params), and frame the answer.
fn answer(
    classifier: &mut Classifier,
    frame: &[u8],
    body: &mut Vec<u8>,
    wire: &mut Vec<u8>,
    framing: Framing,
) {
    body.clear();
    let mut scratch = [0u8; 24];
    let mut respond = |entry: Incoming<'_>, body: &mut Vec<u8>| match entry {
        Incoming::Request(req) => {
            let (a, b): (i64, i64) = req.params.as_deref().unwrap().deserialize().unwrap();
            let len = format_i64(a + b, &mut scratch);
            let text = std::str::from_utf8(&scratch[..len]).unwrap();
            write_result_response(
                body,
                req.version,
                &req.id,
                RawValue::from_json(text).unwrap(),
            );
        }
        Incoming::Invalid(inv) => inv.write_response(body),
        other => panic!("unexpected {other:?}"),
    };
    match classifier.classify(frame) {
        Classified::Single(entry) => respond(entry, body),
        Classified::Batch(batch) => {
            let mut w = BatchWriter::start(body);
            for entry in batch {
                w.entry(body);
                respond(entry, body);
            }
            assert!(w.finish(body));
        }
        Classified::Rejected(r) => panic!("rejected {r:?}"),
    }
    encode_frame(framing, body, wire);
}

fn format_i64(n: i64, buf: &mut [u8; 24]) -> usize {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    write!(cursor, "{n}").unwrap();
    cursor.position() as usize
}

fn request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{id}}}"#)
}

fn run_framed(framing: Framing, body: &str, rounds: usize) -> usize {
    let mut input = Vec::new();
    encode_frame(framing, body.as_bytes(), &mut input);
    let mut decoder = Decoder::new(framing, &Limits::default());
    let mut classifier = Classifier::default();
    let (mut out, mut wire) = (Vec::with_capacity(64 * 1024), Vec::with_capacity(64 * 1024));
    let mut one_round = |count: bool| {
        wire.clear();
        let n = allocations(|| {
            let mut rest = &input[..];
            while !rest.is_empty() {
                let used = decoder.feed(rest);
                rest = &rest[used..];
                while let Some(frame) = decoder.next_frame() {
                    answer(
                        &mut classifier,
                        frame.unwrap(),
                        &mut out,
                        &mut wire,
                        framing,
                    );
                }
            }
        });
        if count {
            n
        } else {
            0
        }
    };
    // Warm-up: buffers grow to their working size.
    for _ in 0..3 {
        one_round(false);
    }
    (0..rounds).map(|_| one_round(true)).sum()
}

#[test]
fn small_framed_request_allocates_nothing_when_warm() {
    for framing in [Framing::ContentLength, Framing::Newline] {
        assert_eq!(run_framed(framing, &request(1), 100), 0, "{framing:?}");
    }
}

#[test]
fn framed_batch_of_100_allocates_nothing_when_warm() {
    let batch = format!("[{}]", (1..=100).map(request).collect::<Vec<_>>().join(","));
    for framing in [Framing::ContentLength, Framing::Newline] {
        assert_eq!(run_framed(framing, &batch, 20), 0, "{framing:?}");
    }
}

#[test]
fn string_ids_and_error_answers_allocate_nothing_when_warm() {
    let mut classifier = Classifier::default();
    let mut out = Vec::with_capacity(1024);
    let frame =
        br#"{"jsonrpc":"2.0","method":"nope","params":{"a":[1,2,{"b":"\u00e9"}]},"id":"req-4f2a"}"#;
    let mut round = || {
        out.clear();
        match classifier.classify(frame) {
            Classified::Single(Incoming::Request(req)) => write_error_response(
                &mut out,
                req.version,
                &req.id,
                &ErrorObject::method_not_found(),
            ),
            other => panic!("{other:?}"),
        }
    };
    round();
    assert_eq!(allocations(|| (0..100).for_each(|_| round())), 0);
}

#[test]
fn the_counter_counts() {
    // Guards the guard: an allocation on this thread is seen.
    assert_eq!(
        allocations(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(10)))),
        1
    );
}

/// One call per round between two connections over the wire protocol, the clock moving on
/// each round (so every call's deadline is a new one): ported from the inner endpoint, it
/// counts the same path with the connection's call and handle tables around it.
#[test]
fn endpoint_round_trip_allocates_nothing_when_warm() {
    use sansrpc::connection::{Config, Connection, Event, RequestOptions};
    use sansrpc::Instant;

    let mut client = Connection::new(Config::default(), Instant::ZERO);
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let params = RawValue::from_json("[1,2]").unwrap();
    let result = RawValue::from_json("3").unwrap();
    let (mut wire, mut back) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    let mut round = |t: u64| {
        let now = Instant::from_millis(t);
        client
            .call(t, "add", Some(params), RequestOptions::default(), now)
            .unwrap();
        wire.clear();
        while client.poll_transmit(&mut wire).is_some() {}
        assert_eq!(server.handle_input(&wire, now).unwrap(), wire.len());
        while let Some(event) = server.poll_event() {
            let Event::Request { handle, .. } = event else {
                panic!("{event:?}")
            };
            server.respond(handle, Ok(result));
        }
        assert_eq!(server.running(), 0, "answered");
        back.clear();
        while server.poll_transmit(&mut back).is_some() {}
        assert_eq!(client.handle_input(&back, now).unwrap(), back.len());
        let mut answered = false;
        while let Some(event) = client.poll_event() {
            assert!(
                matches!(event, Event::Answer { token, index: 0, result: Ok(_), last: true } if token == t)
            );
            answered = true;
        }
        assert!(answered);
    };
    for t in 0..10 {
        round(t);
    }
    assert_eq!(allocations(|| (10..1010).for_each(&mut round)), 0);
}

/// One call between two connection machines (the layer every driver runs on): the client
/// calls `add`, the server answers, the client gets the answer by its token.
fn machine_round_trip(
    client: &mut sansrpc::connection::Connection,
    server: &mut sansrpc::connection::Connection,
    token: u64,
    wire: &mut Vec<u8>,
) -> i64 {
    use sansrpc::connection::Event;
    let now = sansrpc::Instant::ZERO;
    let params = RawValue::from_json("[20,22]").unwrap();
    let options = sansrpc::connection::RequestOptions::default();
    client
        .call(token, "add", Some(params), options, now)
        .unwrap();
    wire.clear();
    while client.poll_transmit(wire).is_some() {}
    server.handle_input(wire, now).unwrap();
    let mut scratch = [0u8; 24];
    while let Some(event) = server.poll_event() {
        if let Event::Request { handle, request } = event {
            let (a, b): (i64, i64) = request.params.as_deref().unwrap().deserialize().unwrap();
            let len = format_i64(a + b, &mut scratch);
            let text = std::str::from_utf8(&scratch[..len]).unwrap();
            server.respond(handle, Ok(RawValue::from_json(text).unwrap()));
        }
    }
    wire.clear();
    while server.poll_transmit(wire).is_some() {}
    client.handle_input(wire, now).unwrap();
    let mut sum = 0;
    while let Some(event) = client.poll_event() {
        if let Event::Answer {
            token: t, result, ..
        } = event
        {
            assert_eq!(t, token);
            sum = result.unwrap().deserialize().unwrap();
        }
    }
    sum
}

#[test]
fn a_round_trip_between_connection_machines_allocates_nothing_when_warm() {
    use sansrpc::connection::{Config, Connection};
    let now = sansrpc::Instant::ZERO;
    let mut client = Connection::new(Config::default(), now);
    let mut server = Connection::new(Config::default(), now);
    let mut wire = Vec::with_capacity(4096);
    for token in 1..=10 {
        assert_eq!(
            machine_round_trip(&mut client, &mut server, token, &mut wire),
            42
        );
    }
    let n = allocations(|| {
        for token in 11..=110 {
            assert_eq!(
                machine_round_trip(&mut client, &mut server, token, &mut wire),
                42
            );
        }
    });
    assert_eq!(n, 0, "allocations in 100 warm round trips");
}

/// The path a server built from the README takes: Content-Length frames into a connection
/// machine, each request through a typed [`Router`](sansrpc::router::Router) method, the
/// answers framed out; `n` frames of `body` per round.
fn server_path_allocations(body: &str, warm: usize, rounds: usize) -> usize {
    use sansrpc::connection::{Config, Connection, Event};
    use sansrpc::router::{Reply, Router};

    sansrpc::method!(Add = "add", (i64, i64) => i64);
    let mut router = Router::new();
    router.method::<Add, _>(|(a, b)| Ok(a + b)).unwrap();
    let now = sansrpc::Instant::ZERO;
    let mut conn = Connection::new(Config::default(), now);
    let mut reply = Reply::default();
    let mut frame = Vec::new();
    encode_frame(Framing::ContentLength, body.as_bytes(), &mut frame);
    let mut out = Vec::with_capacity(64 * 1024);
    let mut serve = |conn: &mut Connection, out: &mut Vec<u8>| {
        conn.handle_input(&frame, now).unwrap();
        while let Some(event) = conn.poll_event() {
            let Event::Request { handle, request } = event else {
                panic!("{event:?}")
            };
            router.dispatch(&request, &mut reply);
            drop(request);
            reply.answer(conn, handle);
        }
        out.clear();
        while conn.poll_transmit(out).is_some() {}
        assert!(out.ends_with(b"}") || out.ends_with(b"]"), "an answer");
    };
    for _ in 0..warm {
        serve(&mut conn, &mut out);
    }
    allocations(|| {
        for _ in 0..rounds {
            serve(&mut conn, &mut out);
        }
    })
}

/// What a typed result costs: nothing with `std`; without it one allocation, because
/// serde_json can write into a buffer only through `std::io::Write`, so the result is
/// serialized with `serde_json::to_vec` and copied (a raw method writes straight into the
/// answer either way).
const PER_TYPED_RESULT: usize = if cfg!(feature = "std") { 0 } else { 1 };

#[test]
fn the_server_path_allocates_nothing_per_warm_request_or_batch() {
    let single = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[20,22]}"#;
    assert_eq!(
        server_path_allocations(single, 10, 1000),
        1000 * PER_TYPED_RESULT,
        "per request"
    );
    let batch = format!(
        "[{}]",
        (0..100)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"add","params":[{i},1]}}"#))
            .collect::<Vec<_>>()
            .join(",")
    );
    assert_eq!(
        server_path_allocations(&batch, 100, 1000),
        100 * 1000 * PER_TYPED_RESULT,
        "per batch of 100"
    );
}
