//! Protocol profiles (LSP, MCP): cancellation and progress in both directions, as they look
//! on the wire, over a pair of endpoints with a virtual clock.

mod pair;

use pair::{raw, Ev, Pair};
use sansrpc::codec::Framing;
use sansrpc::connection::{Config, EndReason, Profile, RequestOptions, Timeout};
use sansrpc::Id;
use serde_json::{json, Value};
use std::time::Duration;

fn pair(profile: Profile) -> Pair {
    Pair::with(config(profile), config(profile))
}

/// The profile's config, without the LSP server's lifecycle (it would refuse requests
/// before `initialize`): these tests are of the profiles' shapes on the wire.
fn config(profile: Profile) -> Config {
    let mut c = Config::for_profile(profile);
    c.lsp_lifecycle = false;
    c
}

/// The frames a side sent, decoded from its framing.
fn frames(sent: &[Vec<u8>], framing: Framing) -> Vec<Value> {
    let mut decoder = sansrpc::codec::Decoder::new(framing, &Default::default());
    let mut out = Vec::new();
    for bytes in sent {
        assert_eq!(decoder.feed(bytes), bytes.len());
        while let Some(f) = decoder.next_frame() {
            out.push(serde_json::from_slice(f.unwrap()).unwrap());
        }
    }
    out
}

#[test]
fn each_profile_frames_its_own_way() {
    let mut p = pair(Profile::Mcp);
    p.a.conn.notify("ping", None).unwrap();
    p.drive();
    assert_eq!(
        p.a.sent,
        vec![b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n".to_vec()]
    );
    let mut p = pair(Profile::Lsp);
    p.a.conn.notify("exit", None).unwrap();
    p.drive();
    let sent = String::from_utf8(p.a.sent[0].clone()).unwrap();
    assert!(sent.starts_with("Content-Length: 33\r\n\r\n"), "{sent}");
}

#[test]
fn mcp_cancel_sent_by_us_names_request_id_with_a_reason() {
    let mut p = pair(Profile::Mcp);
    p.chunk = 3;
    let id =
        p.a.call("tools/call", None, RequestOptions::default(), p.now)
            .unwrap();
    p.drive();
    let incoming = p.b.requests()[0];
    assert!(p.a.conn.cancel_call(id, p.now));
    p.drive();
    let sent = frames(&p.a.sent, Framing::Newline);
    assert_eq!(
        sent.last().unwrap(),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "Request cancelled"}})
    );
    // The MCP peer sees the cancel as a cancel, not as a notification.
    assert_eq!(p.b.take_events().last(), Some(&Ev::PeerCancelled(incoming)));
}

#[test]
fn mcp_cancelled_request_gets_no_response_on_the_wire() {
    let mut p = pair(Profile::Mcp);
    let id =
        p.a.call("slow", None, RequestOptions::default(), p.now)
            .unwrap();
    p.drive();
    let incoming = p.b.requests()[0];
    p.a.conn.cancel_call(id, p.now);
    p.drive();
    assert!(p.b.events.contains(&Ev::PeerCancelled(incoming)));
    let before = p.b.sent.len();
    // Whether the handler reports cancellation or finishes anyway, nothing goes out.
    p.b.respond_cancelled(incoming).unwrap();
    p.drive();
    assert_eq!(p.b.sent.len(), before, "no response after an MCP cancel");
    assert!(p.b.conn.is_idle());

    // The same for an answer the handler produced after the cancel.
    let id =
        p.a.call("slow", None, RequestOptions::default(), p.now)
            .unwrap();
    p.drive();
    let incoming = *p.b.requests().last().unwrap();
    p.a.conn.cancel_call(id, p.now);
    p.drive();
    p.b.respond(incoming, "\"late\"");
    p.drive();
    assert_eq!(p.b.sent.len(), before);
    assert!(p.b.conn.is_idle() && p.a.conn.is_idle());
}

/// A request cancelled before it was handed out (both in one read) is never seen, and
/// under MCP nothing is written for it.
#[test]
fn a_request_cancelled_before_it_was_handed_out_is_never_seen() {
    let mut p = pair(Profile::Mcp);
    p.a_to_b.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"slow\"}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"r-7\",\"reason\":\"user\"}}\n",
    );
    p.drive();
    assert!(p.b.requests().is_empty());
    assert!(p.b.sent.is_empty());
    assert!(p.b.conn.is_idle());
}

#[test]
fn mcp_cancel_from_a_foreign_peer_with_a_string_id_is_honoured() {
    let mut p = pair(Profile::Mcp);
    p.a_to_b
        .extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"slow\"}\n");
    p.drive();
    let incoming = p.b.requests()[0];
    p.a_to_b.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"r-7\",\"reason\":\"user\"}}\n",
    );
    p.drive();
    assert!(p.b.events.contains(&Ev::PeerCancelled(incoming)));
    // An LSP-shaped cancel on the MCP profile is only a notification.
    p.a_to_b.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"slow\"}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"id\":8}}\n",
    );
    p.drive();
    let events = p.b.take_events();
    assert!(!events
        .iter()
        .any(|e| matches!(e, Ev::PeerCancelled(h) if *h != incoming)));
}

#[test]
fn mcp_early_cancel_drops_the_request_silently() {
    let mut p = pair(Profile::Mcp);
    p.a_to_b.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}\n\
          {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"slow\"}\n",
    );
    p.drive();
    assert!(p.b.take_events().is_empty());
    assert!(p.b.sent.is_empty());
    // LSP answers the same sequence with -32800.
    let mut p = pair(Profile::Lsp);
    for f in [
        r#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"slow"}"#,
    ] {
        sansrpc::codec::encode_frame(Framing::ContentLength, f.as_bytes(), &mut p.a_to_b);
    }
    p.drive();
    let sent = frames(&p.b.sent, Framing::ContentLength);
    assert_eq!(sent[0]["error"]["code"], -32800);
    assert_eq!(sent[0]["id"], 3);
}

#[test]
fn lsp_cancel_both_ways_keeps_its_shape_and_answers() {
    let mut p = pair(Profile::Lsp);
    let id =
        p.a.call("slow", None, RequestOptions::default(), p.now)
            .unwrap();
    p.drive();
    let incoming = p.b.requests()[0];
    p.a.conn.cancel_call(id, p.now);
    p.drive();
    assert_eq!(
        frames(&p.a.sent, Framing::ContentLength).last().unwrap(),
        &json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}})
    );
    assert!(p.b.events.contains(&Ev::PeerCancelled(incoming)));
    p.b.respond_cancelled(incoming).unwrap();
    p.drive();
    let answer = frames(&p.b.sent, Framing::ContentLength);
    assert_eq!(answer.last().unwrap()["error"]["code"], -32800);
    // A call cancelled with `cancel_call` is forgotten: no event, not even for the answer
    // (the endpoint gave `Ended(Cancelled)`).
    assert_eq!(p.a.take_events(), vec![]);
    assert_eq!(p.a.conn.waiting_calls(), 0);
}

#[test]
fn mcp_timeout_sends_a_cancel_with_the_timeout_reason() {
    let mut p = pair(Profile::Mcp);
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(5)));
    let id = p.a.call("slow", None, options, p.now).unwrap();
    p.drive();
    assert!(p.step_timeout());
    assert!(p.a.events.contains(&pair::ended(id, EndReason::TimedOut)));
    assert_eq!(
        frames(&p.a.sent, Framing::Newline).last().unwrap()["params"],
        json!({"requestId": 1, "reason": "Request timed out"})
    );
}

#[test]
fn mcp_progress_sent_in_mcp_shape() {
    let mut p = pair(Profile::Mcp);
    p.b.conn
        .send_progress(
            &Id::string("tok"),
            raw(r#"{"progress": 3, "total": 10, "message": "m"}"#),
        )
        .unwrap();
    p.b.conn.send_progress(&Id::number(7), raw("0.5")).unwrap();
    p.b.conn.send_progress(&Id::number(8), raw("{}")).unwrap();
    p.drive();
    let sent = frames(&p.b.sent, Framing::Newline);
    assert_eq!(
        sent,
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "tok", "progress": 3, "total": 10, "message": "m"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 7, "progress": 0.5}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": 8}}),
        ]
    );
    // Every one still surfaces as a notification on the other side.
    assert_eq!(p.a.take_events().len(), 3);
}

#[test]
fn lsp_progress_sent_in_lsp_shape() {
    let mut p = pair(Profile::Lsp);
    p.b.conn
        .send_progress(&Id::string("t"), raw(r#"{"kind":"report"}"#))
        .unwrap();
    p.drive();
    assert_eq!(
        frames(&p.b.sent, Framing::ContentLength),
        vec![json!({"jsonrpc": "2.0", "method": "$/progress",
                    "params": {"token": "t", "value": {"kind": "report"}}})]
    );
}

/// Progress on a request's token keeps it alive past its base timeout, up to the cap, for
/// string and integer tokens alike, in each profile's own shape.
#[cfg(feature = "progress")]
fn progress_extends_the_deadline(profile: Profile, token: Id<'static>) {
    let mut p = pair(profile);
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(5)))
        .with_progress(token.clone(), Duration::from_secs(12));
    let id = p.a.call("slow", None, options, p.now).unwrap();
    p.drive();
    for _ in 0..2 {
        p.advance(Duration::from_secs(4));
        p.b.conn.send_progress(&token, raw("1")).unwrap();
        p.drive();
    }
    // 8 s after sending, beyond the 5 s base: still pending, deadline now 13 → capped at 12.
    assert!(!p.a.events.iter().any(|e| matches!(e, Ev::Ended { .. })));
    assert_eq!(p.a.conn.unanswered_requests(), 1);
    p.advance(Duration::from_secs(3));
    p.b.conn.send_progress(&token, raw("2")).unwrap();
    p.drive();
    assert_eq!(p.a.conn.unanswered_requests(), 1, "11 s: alive");
    p.advance(Duration::from_secs(1));
    assert!(
        p.a.events.contains(&pair::ended(id, EndReason::TimedOut)),
        "the cap at 12 s holds"
    );
}

#[cfg(feature = "progress")]
#[test]
fn mcp_progress_extends_deadline_with_string_and_integer_tokens() {
    progress_extends_the_deadline(Profile::Mcp, Id::string("abc"));
    progress_extends_the_deadline(Profile::Mcp, Id::number(42));
}

#[cfg(feature = "progress")]
#[test]
fn lsp_progress_extends_deadline_with_string_and_integer_tokens() {
    progress_extends_the_deadline(Profile::Lsp, Id::string("abc"));
    progress_extends_the_deadline(Profile::Lsp, Id::number(42));
}

#[cfg(feature = "progress")]
#[test]
fn progress_in_the_other_profiles_shape_extends_nothing() {
    let mut p = Pair::with(
        Config::for_profile(Profile::Mcp),
        Config::for_profile(Profile::Mcp),
    );
    let options = RequestOptions::timeout(Timeout::After(Duration::from_secs(5)))
        .with_progress(9, Duration::from_secs(60));
    let id = p.a.call("slow", None, options, p.now).unwrap();
    p.drive();
    p.advance(Duration::from_secs(4));
    p.b_to_a.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"token\":9,\"value\":1}}\n",
    );
    p.drive();
    p.advance(Duration::from_secs(1));
    assert!(p.a.events.contains(&pair::ended(id, EndReason::TimedOut)));
}

#[test]
fn progress_tokens_are_found_where_each_profile_puts_them_and_only_there() {
    let token = |profile: Profile, params: &str| {
        let raw = sansrpc::RawValue::from_json(params).unwrap();
        profile.progress_token(Some(raw))
    };
    let mcp = r#"{"name":"x","_meta":{"progressToken":"p-1"}}"#;
    let lsp = r#"{"textDocument":{"uri":"file:///a"},"workDoneToken":7}"#;
    assert_eq!(token(Profile::Mcp, mcp), Some(Id::from("p-1")));
    assert_eq!(token(Profile::Lsp, lsp), Some(Id::from(7)));
    assert_eq!(token(Profile::JsonRpc, mcp), Some(Id::from("p-1")));
    assert_eq!(token(Profile::JsonRpc, lsp), Some(Id::from(7)));
    // Each profile looks only in its own place.
    assert_eq!(token(Profile::Mcp, lsp), None);
    assert_eq!(token(Profile::Lsp, mcp), None);
    // No token: positional params, no key, a token that is neither integer nor string.
    assert_eq!(token(Profile::JsonRpc, "[1,2]"), None);
    assert_eq!(token(Profile::JsonRpc, r#"{"a":"workDone"}"#), None);
    assert_eq!(token(Profile::Lsp, r#"{"workDoneToken":[1]}"#), None);
    // A key spelled with an escape is the same key.
    let escaped = r#"{"work\u0044oneToken":"w"}"#;
    assert_eq!(token(Profile::Lsp, escaped), Some(Id::from("w")));
    assert_eq!(Profile::Lsp.progress_token(None), None);
}
