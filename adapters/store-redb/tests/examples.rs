//! The example the docs name (docs/pubsub.md), run: its output compared with the exact
//! value it computes, so a broken example fails here.

// Not `interop.rs`: that one needs serde_json, which this crate does not have.
#[path = "../../../tests/support/processes.rs"]
mod processes;

#[test]
fn append_stores_the_first_message_at_sequence_1() {
    assert_eq!(
        processes::run_example("sansrpc-store-redb", "append", &[]),
        ["appended at sequence 1"]
    );
}
