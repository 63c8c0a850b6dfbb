//! Pull-based streams and `$/progress` between two real connections over an in-memory link,
//! with a virtual clock. The server's streams are the connection's own (its stream table
//! answers the pulls; the driver keeps the producers).

use std::time::Duration;

use std::collections::HashMap;

use sansrpc::connection::stream::{
    code, stream_id, Produced, ReadItem, StreamConfig, StreamReader, NEXT_METHOD,
};
use sansrpc::connection::{Config, Connection, EndReason, Event, RequestOptions, Timeout};
use sansrpc::method::CallError;
use sansrpc::{ErrorObject, Id, Instant, RawValue};

/// A producer: counts from 1 to `to`, then fails with `fail` when set.
struct Count {
    next: u64,
    to: u64,
    fail: Option<i64>,
}

fn count(to: u64) -> Count {
    Count {
        next: 1,
        to,
        fail: None,
    }
}

fn step(c: &mut Count, out: &mut Vec<u8>) -> Produced {
    if c.next > c.to {
        return match c.fail {
            Some(code) => Produced::Error(ErrorObject::new(code, "producer failed")),
            None => Produced::End,
        };
    }
    out.extend_from_slice(c.next.to_string().as_bytes());
    c.next += 1;
    Produced::Item
}

fn link(from: &mut Connection, to: &mut Connection, now: Instant) {
    let mut wire = Vec::new();
    while from.poll_transmit(&mut wire).is_some() {}
    let mut rest = &wire[..];
    while !rest.is_empty() {
        let n = to.handle_input(rest, now).unwrap();
        rest = &rest[n..];
        assert!(n > 0, "connection pushed back in a test that drains it");
    }
}

/// The server: a stream method `count` (params `[to]`), served by the connection's own
/// stream table (it answers `rpc.stream.next` and `rpc.stream.cancel` itself); the
/// producers kept here by stream id.
struct Server {
    conn: Connection,
    producers: HashMap<u64, Count>,
    fail: Option<i64>,
}

impl Server {
    fn new(config: StreamConfig) -> Self {
        Server::with(Config::default(), config)
    }

    fn with(mut config: Config, streams: StreamConfig) -> Self {
        config.streams = streams;
        Server {
            conn: Connection::new(config, Instant::ZERO),
            producers: HashMap::new(),
            fail: None,
        }
    }

    /// Streams open in the connection's table.
    fn open_streams(&self) -> usize {
        self.conn.config().streams.max_open - self.conn.stream_room()
    }

    /// Routes every event; produces.
    fn run(&mut self, now: Instant) {
        loop {
            let mut opens = Vec::new();
            while let Some(event) = self.conn.poll_event() {
                match event {
                    Event::Request { handle, request } => {
                        assert_eq!(request.method, "count");
                        let to: (u64,) = request.params.unwrap().deserialize().unwrap();
                        opens.push((handle, to.0));
                    }
                    Event::StreamClosed { stream } => {
                        self.producers.remove(&stream);
                    }
                    _ => {}
                }
            }
            for (handle, to) in opens {
                let mut c = count(to);
                c.fail = self.fail;
                // Past the bound the request is answered with the error, and no stream opens.
                if let Some(stream) = self.conn.open_stream(handle, now) {
                    self.producers.insert(stream, c);
                }
            }
            if !self.conn.wants_items() {
                break;
            }
            let producers = &mut self.producers;
            self.conn.produce(now, 100, |stream, out, _| {
                step(producers.get_mut(&stream).unwrap(), out)
            });
        }
    }
}

/// The client: one reader, pulls sent as it asks; each call under its own token.
struct Client {
    conn: Connection,
    token: u64,
    reader: Option<StreamReader>,
    pulls: Vec<(u64, u64)>,
    opened: Option<Result<u64, (i64, String)>>,
    open_call: Option<u64>,
}

impl Client {
    fn new() -> Self {
        Client {
            conn: Connection::new(Config::default(), Instant::ZERO),
            token: 0,
            reader: None,
            pulls: Vec::new(),
            opened: None,
            open_call: None,
        }
    }

    fn call(&mut self, method: &str, params: Option<&RawValue>, now: Instant) -> u64 {
        self.token += 1;
        self.conn
            .call(self.token, method, params, RequestOptions::default(), now)
            .unwrap();
        self.token
    }

    fn open(&mut self, to: u64, now: Instant) {
        let params = RawValue::from_json(&format!("[{to}]")).unwrap().to_owned();
        let token = self.call("count", Some(&params), now);
        self.open_call = Some(token);
    }

    fn send_pulls(&mut self, now: Instant) {
        while let Some(seq) = self.reader.as_mut().and_then(StreamReader::next_pull) {
            let params = self.reader.as_ref().unwrap().pull_params().to_owned();
            let token = self.call(NEXT_METHOD, Some(&params), now);
            self.pulls.push((token, seq));
        }
    }

    fn events(&mut self, window: usize, max: u32) {
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::Answer { token, result, .. } if Some(token) == self.open_call => {
                    self.opened = Some(match result {
                        Ok(r) => {
                            let s = stream_id(&r).expect("a stream id");
                            self.reader = Some(StreamReader::new(s, window, max));
                            Ok(s)
                        }
                        Err(e) => Err((e.code, e.message.into_owned())),
                    });
                }
                Event::Answer { token, result, .. } => {
                    let Some(i) = self.pulls.iter().position(|p| p.0 == token) else {
                        continue;
                    };
                    let (_, seq) = self.pulls.remove(i);
                    let reader = self.reader.as_mut().unwrap();
                    match result {
                        Ok(r) => reader.handle_answer(seq, Ok(&r)),
                        Err(e) => reader.handle_answer(seq, Err(CallError::Rpc(e.into_owned()))),
                    }
                }
                Event::Ended { token, reason, .. } => {
                    if let Some(i) = self.pulls.iter().position(|p| p.0 == token) {
                        let (_, seq) = self.pulls.remove(i);
                        let reader = self.reader.as_mut().unwrap();
                        reader.handle_answer(seq, Err(CallError::Ended(reason)));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Runs the exchange until the client reader reports the end or a failure; returns the
/// items read and the final state.
fn read_all(
    server: &mut Server,
    client: &mut Client,
    window: usize,
    max: u32,
    now: Instant,
    limit: usize,
) -> (Vec<u64>, ReadItem) {
    let mut items = Vec::new();
    for _ in 0..10_000 {
        client.send_pulls(now);
        link(&mut client.conn, &mut server.conn, now);
        server.run(now);
        link(&mut server.conn, &mut client.conn, now);
        client.events(window, max);
        if let Some(Err(e)) = &client.opened {
            panic!("open failed: {e:?}");
        }
        let Some(reader) = client.reader.as_mut() else {
            continue;
        };
        // Bounded by the window: never more than `window` answers of `max` items held.
        assert!(reader.buffered_items() <= (window + 1) * max as usize);
        loop {
            match reader.poll_item() {
                ReadItem::Item(raw) => {
                    items.push(raw.get().parse().unwrap());
                    if items.len() == limit {
                        return (items, ReadItem::Pending);
                    }
                }
                ReadItem::Pending => break,
                end => return (items, end),
            }
        }
    }
    panic!("the stream never ended");
}

#[test]
fn items_arrive_in_order_then_the_end() {
    for (window, max) in [(1, 1), (4, 3), (16, 64)] {
        let mut server = Server::new(StreamConfig::default());
        let mut client = Client::new();
        client.open(100, Instant::ZERO);
        let (items, end) = read_all(&mut server, &mut client, window, max, Instant::ZERO, 0);
        assert_eq!(
            items,
            (1..=100).collect::<Vec<_>>(),
            "window {window} max {max}"
        );
        assert!(matches!(end, ReadItem::End));
        // The end freed the stream; pulls pipelined past it were answered too.
        assert_eq!(server.open_streams(), 0);
        assert_eq!(server.conn.requests_in_flight(), 0);
    }
}

#[test]
fn an_empty_stream_ends_at_once() {
    let mut server = Server::new(StreamConfig::default());
    let mut client = Client::new();
    client.open(0, Instant::ZERO);
    let (items, end) = read_all(&mut server, &mut client, 4, 8, Instant::ZERO, 0);
    assert!(items.is_empty());
    assert!(matches!(end, ReadItem::End));
}

#[test]
fn a_failure_comes_after_the_items_before_it() {
    let mut server = Server::new(StreamConfig::default());
    server.fail = Some(-32099);
    let mut client = Client::new();
    client.open(5, Instant::ZERO);
    let (items, end) = read_all(&mut server, &mut client, 2, 3, Instant::ZERO, 0);
    assert_eq!(items, vec![1, 2, 3, 4, 5]);
    match end {
        ReadItem::Failed(CallError::Rpc(e)) => assert_eq!(e.code, -32099),
        other => panic!("expected the producer's error, got {other:?}"),
    }
    assert_eq!(server.open_streams(), 0);
}

#[test]
fn cancel_mid_stream_frees_both_sides() {
    let mut server = Server::new(StreamConfig::default());
    let mut client = Client::new();
    client.open(1_000_000, Instant::ZERO);
    let (items, _) = read_all(&mut server, &mut client, 4, 2, Instant::ZERO, 10);
    assert_eq!(items, (1..=10).collect::<Vec<_>>());
    assert_eq!(server.open_streams(), 1);
    let reader = client.reader.as_mut().unwrap();
    assert!(reader.cancel());
    let params = reader.cancel_params();
    client
        .conn
        .notify("rpc.stream.cancel", Some(&params))
        .unwrap();
    assert!(matches!(reader.poll_item(), ReadItem::End));
    assert_eq!(reader.buffered_items(), 0);
    link(&mut client.conn, &mut server.conn, Instant::ZERO);
    server.run(Instant::ZERO);
    assert_eq!(server.open_streams(), 0);
    // The connection told the driver to drop the producer.
    assert!(server.producers.is_empty());
    // Every pull it had queued was answered (as the end): the peer's requests the
    // connection holds are its queued pulls.
    assert_eq!(server.conn.requests_in_flight(), 0);
}

/// Sends one raw request to the server and returns the answer.
fn ask(
    server: &mut Server,
    client: &mut Client,
    method: &str,
    params: &str,
) -> Result<String, i64> {
    let params = RawValue::from_json(params).unwrap().to_owned();
    let id = client.call(method, Some(&params), Instant::ZERO);
    link(&mut client.conn, &mut server.conn, Instant::ZERO);
    server.run(Instant::ZERO);
    link(&mut server.conn, &mut client.conn, Instant::ZERO);
    let mut answer = None;
    while let Some(event) = client.conn.poll_event() {
        if let Event::Answer {
            token: got, result, ..
        } = event
        {
            if got == id {
                answer = Some(result.map(|r| r.get().to_owned()).map_err(|e| e.code));
            }
        }
    }
    answer.expect("an answer")
}

#[test]
fn unknown_streams_bad_params_and_the_cancel_answer() {
    let mut server = Server::new(StreamConfig::default());
    let mut client = Client::new();
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, r#"{"stream":99}"#),
        Err(code::UNKNOWN_STREAM)
    );
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, r#"{"stream":"x"}"#),
        Err(-32602)
    );
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, "[1]"),
        Err(-32602)
    );
    let opened = ask(&mut server, &mut client, "count", "[3]").unwrap();
    assert_eq!(opened, r#"{"stream":1}"#);
    assert_eq!(
        ask(
            &mut server,
            &mut client,
            NEXT_METHOD,
            r#"{"stream":1,"max":2}"#
        )
        .unwrap(),
        r#"{"items":[1,2],"done":false}"#
    );
    assert_eq!(
        ask(
            &mut server,
            &mut client,
            NEXT_METHOD,
            r#"{"stream":1,"max":5}"#
        )
        .unwrap(),
        r#"{"items":[3],"done":true}"#
    );
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, r#"{"stream":1}"#),
        Err(code::UNKNOWN_STREAM)
    );
    ask(&mut server, &mut client, "count", "[3]").unwrap();
    assert_eq!(
        ask(
            &mut server,
            &mut client,
            "rpc.stream.cancel",
            r#"{"stream":2}"#
        )
        .unwrap(),
        "true"
    );
    assert_eq!(
        ask(
            &mut server,
            &mut client,
            "rpc.stream.cancel",
            r#"{"stream":2}"#
        )
        .unwrap(),
        "false"
    );
}

/// Under MCP the extension's codes leave the server-error range, where MCP 2026-07-28 puts
/// HeaderMismatch, MissingRequiredClientCapability and UnsupportedProtocolVersion.
#[test]
fn under_mcp_the_stream_codes_move_out_of_mcps_range() {
    use sansrpc::connection::Profile;
    let mut config = Config::for_profile(Profile::Mcp);
    config.framing = Some(sansrpc::codec::Framing::ContentLength);
    let mut server = Server::with(config, StreamConfig::default());
    let mut client = Client::new();
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, r#"{"stream":99}"#),
        Err(code::UNKNOWN_STREAM + 1000)
    );
    assert_eq!(code::UNKNOWN_STREAM + 1000, -31020);
    // The standard codes stay.
    assert_eq!(
        ask(&mut server, &mut client, NEXT_METHOD, "[1]"),
        Err(-32602)
    );
}

#[test]
fn open_streams_and_queued_pulls_are_bounded() {
    let mut config = StreamConfig::default();
    config.max_open = 3;
    config.max_queued_pulls = 2;
    let mut server = Server::new(config);
    let mut client = Client::new();
    for i in 1..=3 {
        assert_eq!(
            ask(&mut server, &mut client, "count", "[5]").unwrap(),
            format!(r#"{{"stream":{i}}}"#)
        );
    }
    assert_eq!(
        ask(&mut server, &mut client, "count", "[5]"),
        Err(code::TOO_MANY_STREAMS)
    );
    assert_eq!(server.open_streams(), 3);

    // A stream that never ends and has nothing ready (a producer that stays Pending):
    // pulls queue, up to the bound.
    let mut ep = Server::with(Config::default(), config).conn;
    let mut peer = Connection::new(Config::default(), Instant::ZERO);
    let open = 100;
    peer.call(open, "s", None, RequestOptions::default(), Instant::ZERO)
        .unwrap();
    let pulls: Vec<u64> = (0..3).collect();
    for &token in &pulls {
        let p = RawValue::from_json(r#"{"stream":1}"#).unwrap();
        let options = RequestOptions::default();
        peer.call(token, NEXT_METHOD, Some(p), options, Instant::ZERO)
            .unwrap();
    }
    link(&mut peer, &mut ep, Instant::ZERO);
    // The opening request is handed out and opens the stream at once; the connection
    // takes the pulls behind it itself.
    let mut opened = Vec::new();
    while let Some(event) = ep.poll_event() {
        match event {
            Event::Request { handle, .. } => opened.push(ep.open_stream(handle, Instant::ZERO)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(opened, [Some(1)]);
    ep.produce(Instant::ZERO, 10, |_, _, _| Produced::Pending);
    // The pulls queued are the peer's requests the connection holds.
    assert_eq!(ep.requests_in_flight(), 2);
    link(&mut ep, &mut peer, Instant::ZERO);
    let mut answered = Vec::new();
    while let Some(event) = peer.poll_event() {
        if let Event::Answer { token, result, .. } = event {
            answered.push((
                token,
                result.map(|r| r.get().to_owned()).map_err(|e| e.code),
            ));
        }
    }
    assert_eq!(answered.len(), 2, "{answered:?}");
    assert_eq!(answered[0], (open, Ok(r#"{"stream":1}"#.to_owned())));
    assert_eq!(answered[1], (pulls[2], Err(code::TOO_MANY_PULLS)));
}

#[test]
fn a_stream_nobody_pulls_is_freed_after_its_idle_timeout() {
    let mut config = StreamConfig::default();
    config.idle_timeout = Duration::from_secs(10);
    let mut server = Server::new(config);
    let mut client = Client::new();
    ask(&mut server, &mut client, "count", "[5]").unwrap();
    assert_eq!(server.open_streams(), 1);
    // The stream's idle deadline is the connection's only one here.
    assert_eq!(
        server.conn.poll_timeout(),
        Some(Instant::from_millis(10_000))
    );
    // How many streams a timeout freed: each tells the driver to drop its producer.
    let freed = |server: &mut Server, at: u64| {
        server.conn.handle_timeout(Instant::from_millis(at));
        let mut freed = 0;
        while let Some(event) = server.conn.poll_event() {
            if let Event::StreamClosed { stream } = event {
                assert!(server.producers.remove(&stream).is_some());
                freed += 1;
            }
        }
        freed
    };
    assert_eq!(freed(&mut server, 9_999), 0);
    assert_eq!(freed(&mut server, 10_000), 1);
    assert_eq!(server.open_streams(), 0);
    assert!(server.producers.is_empty());
    assert_eq!(server.conn.poll_timeout(), None);
}

#[test]
fn the_reader_ignores_answers_it_does_not_wait_for_and_fails_on_garbage() {
    let mut reader = StreamReader::new(4, 2, 10);
    assert_eq!(reader.pull_params().get(), r#"{"stream":4,"max":10}"#);
    assert_eq!(reader.cancel_params().get(), r#"{"stream":4}"#);
    let a = reader.next_pull().unwrap();
    let b = reader.next_pull().unwrap();
    assert_eq!(reader.next_pull(), None, "the window is full");
    // The second answer first: held until the first arrives.
    let second = RawValue::from_json(r#"{"items":[3],"done":false}"#).unwrap();
    reader.handle_answer(b, Ok(second));
    assert!(matches!(reader.poll_item(), ReadItem::Pending));
    let first = RawValue::from_json(r#"{"items":[1,{"x":[2]}],"done":false}"#).unwrap();
    reader.handle_answer(a, Ok(first));
    reader.handle_answer(77, Ok(first));
    let mut got = Vec::new();
    while let ReadItem::Item(i) = reader.poll_item() {
        got.push(i.get().to_owned());
    }
    assert_eq!(got, ["1", r#"{"x":[2]}"#, "3"]);
    let c = reader.next_pull().unwrap();
    reader.handle_answer(c, Ok(RawValue::from_json(r#"{"items":3}"#).unwrap()));
    assert!(matches!(
        reader.poll_item(),
        ReadItem::Failed(CallError::Decode(_))
    ));
    assert!(reader.is_finished());
    assert_eq!(reader.next_pull(), None);
}

#[test]
fn a_pull_that_times_out_fails_the_reader() {
    let mut reader = StreamReader::new(1, 1, 1);
    let a = reader.next_pull().unwrap();
    reader.handle_answer(a, Err(CallError::Ended(EndReason::TimedOut)));
    assert!(matches!(
        reader.poll_item(),
        ReadItem::Failed(CallError::Ended(EndReason::TimedOut))
    ));
}

// ----- $/progress -----

fn progress(from: &mut Connection, to: &mut Connection, token: i64, now: Instant) {
    from.send_progress(
        &Id::number(token),
        RawValue::from_json(r#"{"pct":1}"#).unwrap(),
    )
    .unwrap();
    link(from, to, now);
}

fn ended(ep: &mut Connection) -> Vec<(u64, EndReason)> {
    let mut out = Vec::new();
    while let Some(event) = ep.poll_event() {
        if let Event::Ended { token, reason, .. } = event {
            out.push((token, reason));
        }
    }
    out
}

#[test]
fn progress_keeps_a_request_alive_past_its_base_deadline_up_to_the_cap() {
    let mut client = Connection::new(Config::default(), Instant::ZERO);
    let mut server = Connection::new(Config::default(), Instant::ZERO);
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(10)))
        .with_progress(42, Duration::from_secs(30));
    let id = 1;
    client
        .call(id, "slow", None, options, Instant::ZERO)
        .unwrap();
    link(&mut client, &mut server, Instant::ZERO);
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(10_000)));

    // Progress at 8 s: the deadline moves to 18 s; the notification still surfaces.
    progress(&mut server, &mut client, 42, Instant::from_millis(8_000));
    let mut values = Vec::new();
    while let Some(event) = client.poll_event() {
        if let Event::Notification(n) = event {
            values.push((n.method.into_owned(), n.params.unwrap().get().to_owned()));
        }
    }
    assert_eq!(
        values,
        [(
            "$/progress".to_owned(),
            r#"{"token":42,"value":{"pct":1}}"#.to_owned()
        )]
    );
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(18_000)));
    // Past the base deadline: still alive.
    client.handle_timeout(Instant::from_millis(12_000));
    assert!(ended(&mut client).is_empty());
    // Progress on another token changes nothing.
    progress(&mut server, &mut client, 7, Instant::from_millis(17_000));
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(18_000)));
    progress(&mut server, &mut client, 42, Instant::from_millis(17_000));
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(27_000)));
    progress(&mut server, &mut client, 42, Instant::from_millis(26_000));
    // The cap: 30 s after sending, however much progress comes.
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(30_000)));
    progress(&mut server, &mut client, 42, Instant::from_millis(29_000));
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(30_000)));
    client.handle_timeout(Instant::from_millis(29_999));
    assert!(ended(&mut client).is_empty());
    client.handle_timeout(Instant::from_millis(30_000));
    assert_eq!(ended(&mut client), [(id, EndReason::TimedOut)]);
}

#[test]
fn without_progress_the_base_deadline_holds() {
    let mut client = Connection::new(Config::default(), Instant::ZERO);
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(10)))
        .with_progress(1, Duration::from_secs(60));
    let id = 1;
    client
        .call(id, "slow", None, options, Instant::ZERO)
        .unwrap();
    client.handle_timeout(Instant::from_millis(10_000));
    assert_eq!(ended(&mut client), [(id, EndReason::TimedOut)]);
    // A cap shorter than the base timeout wins from the start.
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(10)))
        .with_progress(2, Duration::from_secs(4));
    client
        .call(2, "slow", None, options, Instant::from_millis(10_000))
        .unwrap();
    assert_eq!(client.poll_timeout(), Some(Instant::from_millis(14_000)));
}

// ----- a property: whatever the window, the item count per pull, how the producer pauses
// and how the two sides interleave, the reader gets every item once, in order, then the end,
// and the server is left with nothing open and nothing owed. -----

mod property {
    use super::*;
    use proptest::prelude::*;

    /// A producer that has nothing ready at the steps `pauses` marks.
    struct Pausing {
        next: u64,
        to: u64,
        pauses: Vec<bool>,
        calls: usize,
    }

    fn pausing_step(p: &mut Pausing, out: &mut Vec<u8>) -> Produced {
        p.calls += 1;
        if p.pauses.get(p.calls % p.pauses.len().max(1)) == Some(&true) {
            return Produced::Pending;
        }
        if p.next > p.to {
            return Produced::End;
        }
        out.extend_from_slice(p.next.to_string().as_bytes());
        p.next += 1;
        Produced::Item
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 200,
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/streams.txt"),
            )),
            ..ProptestConfig::default()
        })]
        #[test]
        fn every_item_once_in_order_then_the_end(
            to in 0u64..300,
            window in 1usize..8,
            max in 1u32..20,
            server_max in 1u32..16,
            // Some step has an item ready, or nothing would ever come.
            pauses in proptest::collection::vec(any::<bool>(), 0..8).prop_map(|mut p| {
                p.push(false);
                p
            }),
            schedule in proptest::collection::vec(0u8..5, 1..64),
            budget in 1usize..40,
        ) {
            let mut config = StreamConfig::default();
            config.max_items_per_pull = server_max;
            // The connection's own stream table serves the stream; the producer is kept here.
            let mut server = Server::with(Config::default(), config).conn;
            let mut client = Connection::new(Config::default(), Instant::ZERO);
            let now = Instant::ZERO;
            let open = 0;
            client.call(open, "s", None, RequestOptions::default(), now).unwrap();
            link(&mut client, &mut server, now);
            let Some(Event::Request { handle, .. }) = server.poll_event() else {
                panic!("the opening request");
            };
            let mut producer = Pausing { next: 1, to, pauses, calls: 0 };
            prop_assert_eq!(server.open_stream(handle, now), Some(1));
            link(&mut server, &mut client, now);
            let mut reader = None;
            while let Some(event) = client.poll_event() {
                if let Event::Answer { token, result, .. } = event {
                    assert_eq!(token, open);
                    reader = Some(StreamReader::new(stream_id(&result.unwrap()).unwrap(), window, max));
                }
            }
            let mut reader = reader.unwrap();
            let mut pulls: Vec<(u64, u64)> = Vec::new();
            let mut token = open;
            let mut items = Vec::new();
            let mut ended = false;
            let mut turn = 0;
            while !ended {
                turn += 1;
                prop_assert!(turn < 100_000, "no progress");
                let step = schedule[turn % schedule.len()];
                // Every fifth turn runs everything, so each schedule makes progress.
                let all = turn % 5 == 0;
                if all || step == 0 {
                    while let Some(seq) = reader.next_pull() {
                        let params = reader.pull_params().to_owned();
                        token += 1;
                        client
                            .call(token, NEXT_METHOD, Some(&params), RequestOptions::default(), now)
                            .unwrap();
                        pulls.push((token, seq));
                    }
                }
                if all || step == 1 {
                    link(&mut client, &mut server, now);
                    // Every request is a pull, which the connection takes itself.
                    while let Some(event) = server.poll_event() {
                        prop_assert!(
                            matches!(event, Event::StreamClosed { stream: 1 }),
                            "{:?}", event
                        );
                    }
                }
                if all || step == 2 {
                    server.produce(now, budget, |_, out, _| pausing_step(&mut producer, out));
                }
                if all || step == 3 {
                    link(&mut server, &mut client, now);
                    while let Some(event) = client.poll_event() {
                        if let Event::Answer { token, result, .. } = event {
                            let i = pulls.iter().position(|p| p.0 == token).expect("a pull");
                            let (_, seq) = pulls.remove(i);
                            match result {
                                Ok(r) => reader.handle_answer(seq, Ok(&r)),
                                Err(e) => reader.handle_answer(seq, Err(CallError::Rpc(e.into_owned()))),
                            }
                        }
                    }
                }
                if all || step == 4 {
                    loop {
                        match reader.poll_item() {
                            ReadItem::Item(raw) => items.push(raw.get().parse::<u64>().unwrap()),
                            ReadItem::Pending => break,
                            ReadItem::End => {
                                ended = true;
                                break;
                            }
                            ReadItem::Failed(e) => panic!("failed: {e:?}"),
                        }
                    }
                }
                prop_assert!(reader.buffered_items() <= (window + 1) * max as usize);
                // The pulls queued: the peer's requests the connection holds.
                prop_assert!(server.requests_in_flight() <= window);
            }
            prop_assert_eq!(items, (1..=to).collect::<Vec<_>>());
            // Pulls still in flight past the end are answered; then nothing is left.
            link(&mut client, &mut server, now);
            while let Some(event) = server.poll_event() {
                prop_assert!(
                    matches!(event, Event::StreamClosed { stream: 1 }),
                    "{:?}", event
                );
            }
            prop_assert_eq!(server.config().streams.max_open - server.stream_room(), 0);
            prop_assert_eq!(server.requests_in_flight(), 0);
        }
    }
}
