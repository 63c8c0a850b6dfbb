//! A body the Streamable HTTP machine read comes back with what it found in it
//! ([`Endpoint::handle_request_owned`]), and a connection handed it
//! ([`Connection::handle_scanned_tagged`]) reads that rather than scanning again: what the
//! connection does must be exactly what it does with the bytes alone, and what it found under
//! other limits is not used.
#![cfg(not(target_arch = "wasm32"))]

use sansrpc::codec::http::Head;
use sansrpc::connection::Config;
use sansrpc::message::Scanned;
use sansrpc::{Connection, Instant, Limits, Profile};
use sansrpc_mcp::streamable::{Authorized, Config as McpConfig, Endpoint, Step, Verdict};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A call, a notification, an entry that is no message, a call with an escaped method and
/// string id, and a call with nested params: one body.
const BATCH: &str = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":[1,{"b":"\u00e9"}]}}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},7,{"jsonrpc":"2.0","id":"x\"y","method":"tools\/list"},{"jsonrpc":"2.0","id":3,"method":"ping","params":[[[]]]}]"#;

fn head(session: Option<&str>) -> Head {
    let mut fields: Vec<(&str, &[u8])> = vec![
        ("host", b"127.0.0.1:3000"),
        ("content-type", b"application/json"),
        ("accept", b"application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        fields.push(("mcp-session-id", id.as_bytes()));
        fields.push(("mcp-protocol-version", b"2025-11-25"));
    }
    Head::from_parts("POST", "/mcp", fields, true).expect("a head")
}

fn entropy(bytes: &mut [u8]) {
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = i as u8;
    }
}

fn post(server: &mut Endpoint, session: Option<&str>, body: &str) -> (Verdict, Option<Scanned>) {
    server.handle_request_owned(
        &head(session),
        body.as_bytes().to_vec(),
        Authorized::NotRequired,
        None,
        Instant::ZERO,
        &mut entropy,
    )
}

/// Opens a session (its `initialize` answered); its id.
fn session(server: &mut Endpoint) -> String {
    let (
        Verdict::Open {
            session, stream, ..
        },
        _,
    ) = post(server, None, INITIALIZE)
    else {
        panic!("a new session")
    };
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    server.handle_outgoing(session, result.as_bytes(), stream, Instant::ZERO);
    let (mut head, mut body) = (None, Vec::new());
    while server.poll_stream_parts(stream, &mut head, &mut body) == Step::Data {}
    let id = head.expect("a head").session_id.expect("a session id");
    String::from_utf8(id.to_vec()).unwrap()
}

/// What a connection made of its input: every event and every frame it sent, as text.
fn outcome(conn: &mut Connection) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = conn.poll_event() {
        seen.push(format!("{event:?}"));
    }
    let mut out = Vec::new();
    while let Some((len, tag)) = conn.poll_transmit_tagged(&mut out) {
        let frame = out.split_off(out.len() - len);
        seen.push(format!("{tag}: {}", String::from_utf8(frame).unwrap()));
    }
    seen
}

fn mcp_connection(limits: Limits) -> Connection {
    let mut config = Config::for_profile(Profile::Mcp);
    config.limits = limits;
    Connection::new(config, Instant::ZERO)
}

/// The same body through both doors of two connections alike: the same outcome.
fn same_both_ways(mut scanned: Scanned, limits: Limits) -> Vec<String> {
    let bytes = scanned.bytes().to_vec();
    let (mut read, mut scanning) = (mcp_connection(limits), mcp_connection(limits));
    read.handle_scanned_tagged(&mut scanned, 9, Instant::ZERO)
        .unwrap();
    scanning
        .handle_message_tagged(&bytes, 9, Instant::ZERO)
        .unwrap();
    let (a, b) = (outcome(&mut read), outcome(&mut scanning));
    assert_eq!(a, b);
    a
}

/// The body of a request that opened a stream (`new` session or not), handed on scanned.
fn opened((verdict, scanned): (Verdict, Option<Scanned>), new: bool) -> Scanned {
    let Verdict::Open { new_session, .. } = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(new_session, new);
    let scanned = scanned.expect("handed on");
    assert!(scanned.is_scanned());
    scanned
}

#[test]
fn a_delivered_body_comes_back_scanned_and_reads_as_its_bytes_do() {
    let mut server = Endpoint::new(McpConfig::default());
    let scanned = opened(post(&mut server, None, INITIALIZE), true);
    assert_eq!(scanned.bytes(), INITIALIZE.as_bytes());
    let seen = same_both_ways(scanned, Limits::default());
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].contains("initialize"), "{seen:?}");
}

#[test]
fn a_batch_read_from_what_the_machine_found_matches_it_read_from_its_bytes() {
    let mut server = Endpoint::new(McpConfig::default());
    // A session first: the batch is posted in it.
    let id = session(&mut server);
    let scanned = opened(post(&mut server, Some(&id), BATCH), false);
    let seen = same_both_ways(scanned, Limits::default());
    // Three calls and the notification (the entry `7` is answered with the batch's answer,
    // once its calls are).
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(
        seen[2].contains(r#"id: "x\"y", method: "tools/list""#),
        "{seen:?}"
    );
    assert!(seen[3].contains("RawValue([[[]]])"), "{seen:?}");
}

#[test]
fn what_was_found_under_other_limits_is_not_used() {
    let mut server = Endpoint::new(McpConfig::default());
    let id = session(&mut server);
    let (_, scanned) = post(&mut server, Some(&id), BATCH);
    // The machine took the batch under its limits; a connection allowing two entries
    // refuses it whole, as it refuses the bytes.
    let mut limits = Limits::default();
    limits.max_batch_len = 2;
    let seen = same_both_ways(scanned.expect("handed on"), limits);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0], "Rejected(BatchTooLarge)");
    assert!(
        seen[1].starts_with("9: ") && seen[1].contains("\"id\":null"),
        "{seen:?}"
    );
}

#[test]
fn a_body_not_scanned_and_a_body_refused() {
    // Made by hand: scanned by the connection.
    let scanned = Scanned::new(INITIALIZE.as_bytes().to_vec());
    assert!(!scanned.is_scanned());
    same_both_ways(scanned, Limits::default());
    // Refused by the machine (no session named, not initialize): nothing handed on.
    let mut server = Endpoint::new(McpConfig::default());
    let (verdict, scanned) = post(
        &mut server,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert!(matches!(verdict, Verdict::Respond(_)), "{verdict:?}");
    assert!(scanned.is_none());
}
