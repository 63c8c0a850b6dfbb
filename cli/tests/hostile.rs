//! Hostile peers against a real `sansrpc serve`: each abuse runs a few seconds, bounded in
//! count, while a well-behaved client calls `add` on new connections; afterwards the
//! server's peak RSS (VmHWM) is under a stated bound, the client was served and the
//! server is alive.

mod common;

use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::abuse::{
    add_once, assert_alive, peak_rss_kib, read_close_code, serve, ws_frame, ws_raw, Caller,
};

/// Peak RSS bound for every abuse: a debug build serving a handful of connections stays far
/// below it; an unbounded queue passes it within seconds.
const PEAK_RSS_KIB: u64 = 64 * 1024;

/// Fails unless the caller was served throughout (at most one slow call lost to the
/// machine's load) and the server is alive and small.
fn assert_served(caller: Caller, server: &mut common::Server, abuse: &str) {
    let (served, failed, slowest) = caller.finish();
    let peak = peak_rss_kib(server);
    eprintln!("{abuse}: served {served}, failed {failed}, slowest {slowest:?}, VmHWM {peak} KiB");
    assert!(
        served >= 5,
        "{abuse}: the well-behaved client was served {served} times"
    );
    assert!(failed <= 1, "{abuse}: {failed} calls failed");
    assert!(peak < PEAK_RSS_KIB, "{abuse}: peak RSS {peak} KiB");
    assert_alive(server);
}

#[test]
fn a_websocket_ping_flood_without_reading_keeps_memory_bounded() {
    let (mut server, addr) = serve(&["serve", "--ws", "127.0.0.1:0"], None);
    let caller = Caller::start("ws", &addr);
    let mut flood = ws_raw(&addr);
    flood
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let ping = ws_frame(0x89, true, &[b'p'; 125]);
    let pings: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * 64).collect();
    let end = Instant::now() + Duration::from_secs(4);
    let mut sent = 0u64;
    while Instant::now() < end {
        match flood.write(&pings) {
            Ok(n) => sent += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    eprintln!("ping flood: {} MiB of pings sent", sent >> 20);
    assert!(sent > 1 << 20, "the server stopped reading pings early");
    assert_served(caller, &mut server, "ping flood");
}

#[test]
fn a_tcp_request_flood_without_reading_is_closed_at_the_write_stall_timeout() {
    let args = [
        "serve",
        "--tcp",
        "127.0.0.1:0",
        "--write-stall-timeout",
        "1s",
    ];
    let (mut server, addr) = serve(&args, None);
    let caller = Caller::start("tcp", &addr);
    let mut flood = TcpStream::connect(&addr).unwrap();
    flood
        .set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let add = r#"{"jsonrpc":"2.0","id":7,"method":"add","params":[1,2]}"#;
    let frame = format!("Content-Length: {}\r\n\r\n{add}", add.len());
    let frames = frame.repeat(256);
    let (started, limit) = (Instant::now(), Duration::from_secs(25));
    let closed = loop {
        if started.elapsed() > limit {
            break false;
        }
        match flood.write(frames.as_bytes()) {
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
    };
    eprintln!("request flood: closed after {:?}", started.elapsed());
    assert!(
        closed,
        "the flooding connection was still open after {limit:?}"
    );
    assert_served(caller, &mut server, "request flood");
}

/// 40 connections each sending the start of a message, then a byte every 300 ms; every
/// one must be closed within 15 s (the frame timeout is 1 s).
fn slowloris(transport: &'static str, start: &[u8], trickle: &[u8]) {
    let listen = format!("--{transport}");
    let args = ["serve", &listen, "127.0.0.1:0", "--frame-timeout", "1s"];
    let (mut server, addr) = serve(&args, None);
    let caller = Caller::start(transport, &addr);
    let mut slow: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(start).unwrap();
            s
        })
        .collect();
    let started = Instant::now();
    while !slow.is_empty() && started.elapsed() < Duration::from_secs(15) {
        thread::sleep(Duration::from_millis(300));
        // One byte each now and then: never a whole message.
        slow.retain_mut(|s| s.write_all(trickle).is_ok());
    }
    let open = slow.len();
    eprintln!(
        "{transport} slowloris: {open} open after {:?}",
        started.elapsed()
    );
    assert_eq!(open, 0, "slowloris connections still open");
    assert_served(caller, &mut server, "slowloris");
}

#[test]
fn tcp_slowloris_connections_are_closed_at_the_frame_timeout() {
    slowloris("tcp", b"Content-Length: 100\r\n\r\n{", b" ");
}

#[test]
fn http_slowloris_connections_are_closed_at_the_frame_timeout() {
    slowloris("http", b"POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"a");
}

#[test]
fn descriptor_exhaustion_under_a_low_limit_serves_held_and_later_clients() {
    // 64 descriptors, soft and hard; a connection limit above what they can hold, so
    // accept itself runs out.
    let args = ["serve", "--tcp", "127.0.0.1:0", "--max-connections", "1000"];
    let (mut server, addr) = serve(&args, Some(64));
    let mut held = TcpStream::connect(&addr).unwrap();
    let call = |s: &mut TcpStream| {
        let add = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}"#;
        s.write_all(format!("Content-Length: {}\r\n\r\n{add}", add.len()).as_bytes())
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 512];
        let n = std::io::Read::read(s, &mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).contains("\"result\":3")
    };
    assert!(call(&mut held), "the held connection is served");
    let abusers: Vec<TcpStream> = (0..120)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    // The descriptors did run out: the server holds every one its limit allows (it may
    // keep one spare to shed a connection it cannot serve).
    let fds = format!("/proc/{}/fd", server.0.id());
    let mut open = 0;
    common::wait_until(
        Duration::from_secs(10),
        "the descriptors run out: 63 of 64 open",
        || {
            open = std::fs::read_dir(&fds).unwrap().count();
            open >= 63
        },
    );
    eprintln!("descriptor exhaustion: {open} descriptors open, limit 64");
    assert!(
        call(&mut held),
        "the held connection works while descriptors are out"
    );
    drop(abusers);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !add_once("tcp", &addr) {
        assert!(
            Instant::now() < deadline,
            "no new client served after the abusers left"
        );
    }
    assert!(call(&mut held), "the held connection still works");
    let peak = peak_rss_kib(&server);
    eprintln!("descriptor exhaustion: VmHWM {peak} KiB");
    assert!(peak < PEAK_RSS_KIB, "peak RSS {peak} KiB");
    assert_alive(&mut server);
}

#[test]
fn websocket_protocol_violations_get_their_close_codes() {
    let (mut server, addr) = serve(&["serve", "--ws", "127.0.0.1:0"], None);
    let caller = Caller::start("ws", &addr);
    let long_ping = ws_frame(0x89, true, &[0; 126]);
    let cases: [(&str, Vec<u8>, u16); 8] = [
        ("unmasked client frame", ws_frame(0x81, false, b"{}"), 1002),
        ("RSV1 bit", ws_frame(0xC1, true, b"{}"), 1002),
        ("reserved data opcode", ws_frame(0x83, true, b"{}"), 1002),
        ("reserved control opcode", ws_frame(0x8B, true, b""), 1002),
        ("control frame over 125 bytes", long_ping, 1002),
        ("fragmented ping", ws_frame(0x09, true, b"p"), 1002),
        (
            "invalid UTF-8 text",
            ws_frame(0x81, true, &[0xff, 0xfe]),
            1007,
        ),
        (
            "invalid UTF-8 close reason",
            ws_frame(0x88, true, &[0x03, 0xe8, 0xff]),
            1007,
        ),
    ];
    for (what, frame, want) in cases {
        let mut ws = ws_raw(&addr);
        ws.write_all(&frame).unwrap();
        assert_eq!(read_close_code(&mut ws), Some(want), "{what}");
    }
    // Until the well-behaved client's calls count (assert_served wants five).
    common::wait_until(
        Duration::from_secs(20),
        "the well-behaved client served 5 times",
        || caller.served() >= 5,
    );
    assert_served(caller, &mut server, "protocol violations");
}

/// `sansrpc check --strict` against `sansrpc serve` with short timeouts: the robustness
/// cases pass (other clients served, abusers closed) and are required.
fn check_robustness(transport: &str, url: impl Fn(&str) -> String) {
    let listen = format!("--{transport}");
    let args = [
        "serve",
        &listen,
        "127.0.0.1:0",
        "--frame-timeout",
        "1s",
        "--write-stall-timeout",
        "1s",
    ];
    let (mut server, addr) = serve(&args, None);
    let target = url(&addr);
    let out = common::run(
        &[
            "check",
            &listen,
            &target,
            "--strict",
            "-v",
            "--timeout",
            "5",
        ],
        Duration::from_secs(90),
    );
    for case in ["flood-without-reading", "slowloris"] {
        assert!(
            out.stdout.contains(&format!("PASS {case}")),
            "{transport} {case}:\n{}",
            out.stdout
        );
    }
    if transport == "ws" {
        assert!(out.stdout.contains("PASS ping-flood"), "{}", out.stdout);
    }
    assert_eq!(out.status, 0, "{}", out.stdout);
    assert_alive(&mut server);
}

#[test]
fn check_robustness_passes_against_serve_over_tcp() {
    check_robustness("tcp", str::to_owned);
}

#[test]
fn check_robustness_passes_against_serve_over_websocket() {
    check_robustness("ws", |addr| format!("ws://{addr}/"));
}

/// A server that never closes abusers fails the strict robustness cases: the check can
/// fail.
#[test]
fn check_robustness_fails_strict_when_abusers_are_never_closed() {
    let args = [
        "serve",
        "--tcp",
        "127.0.0.1:0",
        "--frame-timeout",
        "0",
        "--write-stall-timeout",
        "0",
    ];
    let (mut server, addr) = serve(&args, None);
    // Not closed within 2 s of the abuse fails as not closed within 35 s does (the default
    // wait, for the network defaults of the server's timeouts).
    let out = common::run(
        &[
            "check",
            "--tcp",
            &addr,
            "--strict",
            "--timeout",
            "5",
            "--close-wait",
            "2",
        ],
        Duration::from_secs(90),
    );
    assert!(out.stdout.contains("FAIL slowloris"), "{}", out.stdout);
    assert_eq!(out.status, 1, "{}", out.stdout);
    let advisory = common::run(
        &[
            "check",
            "--tcp",
            &addr,
            "--timeout",
            "5",
            "--close-wait",
            "2",
        ],
        Duration::from_secs(90),
    );
    assert_eq!(
        advisory.status, 0,
        "advisory without --strict:\n{}",
        advisory.stdout
    );
    assert_alive(&mut server);
}

/// Publishing 1 MiB messages to ever new topics (each far under its own retention) with the
/// in-memory store: the store's total bound holds the server's memory, where per-topic
/// retention alone would keep every message (150 MiB here).
#[test]
fn a_topic_flood_with_1_mib_payloads_keeps_memory_bounded() {
    use std::io::Read;
    const TOPICS: usize = 150;
    let (mut server, addr) = serve(
        &[
            "serve",
            "--tcp",
            "127.0.0.1:0",
            "--max-total-bytes",
            "16777216",
        ],
        None,
    );
    let caller = Caller::start("tcp", &addr);
    let mut flood = TcpStream::connect(&addr).unwrap();
    flood
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let data = "x".repeat(1 << 20);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    for i in 0..TOPICS {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"publish","params":{{"topic":"flood.t{i}","data":"{data}"}}}}"#
        );
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        flood.write_all(frame.as_bytes()).unwrap();
        answer.clear();
        while !String::from_utf8_lossy(&answer).contains("\"sequence_id\"") {
            let n = flood.read(&mut buf).expect("the publish is answered");
            assert!(n > 0, "the server closed the publishing connection");
            answer.extend_from_slice(&buf[..n]);
        }
    }
    let (served, failed, slowest) = caller.finish();
    let peak = peak_rss_kib(&server);
    eprintln!(
        "topic flood: {TOPICS} MiB published; served {served}, failed {failed}, slowest {slowest:?}, VmHWM {peak} KiB"
    );
    assert!(
        served >= 5,
        "the well-behaved client was served {served} times"
    );
    assert!(failed <= 1, "{failed} calls failed");
    // 16 MiB of store, a frame being read and its copies: far under the 150 MiB published.
    assert!(peak < 96 * 1024, "peak RSS {peak} KiB");
    assert_alive(&mut server);
    // The publishing connection is still served: the bound evicts, it never refuses.
    let body = r#"{"jsonrpc":"2.0","id":"p","method":"publish","params":{"topic":"flood.after","data":1}}"#;
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    flood.write_all(frame.as_bytes()).unwrap();
    answer.clear();
    while !String::from_utf8_lossy(&answer).contains("\"sequence_id\"") {
        let n = flood.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed the publishing connection");
        answer.extend_from_slice(&buf[..n]);
    }
}

/// Sends one Content-Length framed request on `stream` and returns the body of the next
/// framed message (the answer: nothing else is sent on these connections).
fn framed_call(stream: &mut TcpStream, body: &str) -> String {
    use std::io::Read;
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(frame.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("an answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length header")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

#[test]
fn a_persistent_id_flood_is_refused_at_the_server_bound() {
    // The default bound: 10,000 ids on the server, whichever connections made them.
    const BOUND: usize = 10_000;
    const BATCH: usize = 256;
    let (mut server, addr) = serve(&["serve", "--tcp", "127.0.0.1:0"], None);
    let caller = Caller::start("tcp", &addr);
    let batch = |c: usize, b: usize| {
        let subs: Vec<String> = (0..BATCH)
            .map(|i| format!(r#"{{"subscription_id":"flood-{c}-{b}-{i}","topic":"orders"}}"#))
            .collect();
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"rpc.subscribe.persistent.batch","params":{{"subscriptions":[{}]}}}}"#,
            subs.join(",")
        )
    };
    let (started, limit) = (Instant::now(), Duration::from_secs(25));
    let (mut accepted, mut refused) = (0, 0);
    // Each connection takes 4 × 256 = 1,024 new ids (its own bound), then goes away; the
    // ids stay. At least 14 connections (14,336 ids asked for), and on for 3 s after, at
    // most 400 connections.
    for c in 0..400 {
        if c >= 14 && started.elapsed() > Duration::from_secs(3) {
            break;
        }
        assert!(started.elapsed() < limit, "the flood took too long");
        let mut flood = TcpStream::connect(&addr).unwrap();
        flood
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        for b in 0..4 {
            let answer = framed_call(&mut flood, &batch(c, b));
            if answer.contains(r#""code":-32012"#) {
                refused += 1;
            } else {
                assert!(answer.contains(r#""subscriptions":["#), "{answer:.200}");
                assert_eq!(refused, 0, "accepted after a refusal: {answer:.200}");
                accepted += BATCH;
            }
        }
    }
    eprintln!(
        "persistent-id flood: {accepted} ids accepted, {refused} batches refused in {:?}",
        started.elapsed()
    );
    assert_eq!(
        accepted,
        BOUND / BATCH * BATCH,
        "every batch that fits, none beyond"
    );
    assert!(refused >= 10, "{refused} batches refused");
    // A known id is still served on a new connection; one more new id is not.
    let mut client = TcpStream::connect(&addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let known = r#"{"jsonrpc":"2.0","id":2,"method":"rpc.subscribe.persistent","params":{"subscription_id":"flood-0-0-0","topic":"orders"}}"#;
    let answer = framed_call(&mut client, known);
    assert!(answer.contains(r#""resumed_from_sequence":0"#), "{answer}");
    // New ids one by one: exactly up to the bound, then refused.
    let single = |i: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"rpc.subscribe.persistent","params":{{"subscription_id":"one-more-{i}","topic":"orders"}}}}"#
        )
    };
    for i in accepted..BOUND {
        let answer = framed_call(&mut client, &single(i));
        assert!(answer.contains(r#""resumed_from_sequence""#), "{answer}");
    }
    let answer = framed_call(&mut client, &single(BOUND));
    assert!(
        answer.contains(r#""code":-32012"#) && answer.contains("at most 10000"),
        "{answer}"
    );
    assert_served(caller, &mut server, "persistent-id flood");
}
