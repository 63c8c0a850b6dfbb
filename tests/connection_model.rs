//! The connection machine under random operation sequences (proptest): see
//! `tests/connection_sim/mod.rs` for what is checked. The same harness is a fuzz target
//! (`fuzz/fuzz_targets/connection.rs`).

mod connection_sim;

use connection_sim::{run, Op};
use proptest::prelude::*;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u8>(), proptest::option::of(0u16..2000))
            .prop_map(|(side, timeout_ms)| Op::Call { side, timeout_ms }),
        1 => (any::<u8>(), any::<u8>(), any::<bool>())
            .prop_map(|(side, calls, notify)| Op::Batch { side, calls, notify }),
        1 => any::<u8>().prop_map(|side| Op::Notify { side }),
        1 => (any::<u8>(), any::<u16>()).prop_map(|(side, pick)| Op::Forget { side, pick }),
        4 => (any::<u8>(), any::<u16>(), any::<bool>())
            .prop_map(|(side, pick, ok)| Op::Respond { side, pick, ok }),
        1 => (any::<u8>(), any::<u16>())
            .prop_map(|(side, pick)| Op::RespondCancelled { side, pick }),
        1 => (any::<u8>(), 0u16..3000).prop_map(|(side, grace_ms)| Op::Shutdown { side, grace_ms }),
        1 => any::<u8>().prop_map(|side| Op::EndInput { side }),
        1 => any::<u8>().prop_map(|side| Op::Close { side }),
        3 => (0u16..1500).prop_map(|ms| Op::Advance { ms }),
        6 => (any::<u8>(), prop_oneof![Just(0u16), 1u16..200])
            .prop_map(|(from, bytes)| Op::Deliver { from, bytes }),
        1 => (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(to, bytes)| Op::Garbage { to, bytes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "proptest-regressions/connection_model.txt",
            ),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_connection_machine_keeps_its_promises(
        heartbeat in any::<[bool; 2]>(),
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        run(heartbeat, &ops);
    }
}
