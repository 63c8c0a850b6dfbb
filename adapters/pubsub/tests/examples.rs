//! The example the docs name (docs/pubsub.md), run: its output compared with the exact
//! values it computes, so a broken example fails here.

#[path = "../../../tests/support/interop.rs"]
mod interop;

#[test]
fn publish_appends_the_first_message_at_sequence_1() {
    let lines = interop::run_example("sansrpc-pubsub", "publish", &[]);
    let [line] = &lines[..] else {
        panic!("one line expected: {lines:#?}")
    };
    // The server listens on a free port: every other character is fixed.
    let port = line
        .strip_prefix("published on a server at 127.0.0.1:")
        .and_then(|rest| rest.strip_suffix(" (sequence Some(1))"))
        .unwrap_or_else(|| panic!("unexpected output: {line:?}"));
    assert!(
        port.parse::<u16>().is_ok_and(|p| p != 0),
        "not a port: {port:?}"
    );
}
