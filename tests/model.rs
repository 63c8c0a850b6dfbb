//! The wire protocol of two connections against a reference model: arbitrary sequences of
//! operations on both sides of a simulated link that delays, splits and reorders frames and
//! may be cut.
//!
//! The model and the link live in `tests/sim/`; the fuzz target `endpoint` runs the same
//! checks on libFuzzer's inputs. 256 cases by default; `MODEL_CASES=20000 cargo test
//! --release --test model` for a deeper run.

mod sim;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sansrpc::codec::Framing;
use sim::link::Transport;
use sim::model::{Deadline, Op, Setup, Sim};

fn deadline() -> impl Strategy<Value = Deadline> {
    prop_oneof![
        2 => Just(Deadline::Default),
        2 => Just(Deadline::Never),
        4 => (0u16..8000).prop_map(Deadline::AfterMs),
    ]
}

/// Raw bytes: noise, or the start of a frame that never completes.
fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        Just(b"Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\"".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1".to_vec()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0u8..2;
    let entries = proptest::collection::vec(proptest::option::weighted(0.7, deadline()), 0..5);
    let deliver = (
        s.clone(),
        proptest::bool::weighted(0.8),
        0u8..6,
        prop_oneof![Just(0u64), any::<u64>()],
        prop_oneof![Just(u16::MAX), 1u16..200],
        prop_oneof![Just(u16::MAX), 1u16..64],
    );
    prop_oneof![
        18 => (s.clone(), deadline()).prop_map(|(side, deadline)| Op::Request { side, deadline }),
        6 => s.clone().prop_map(|side| Op::Notify { side }),
        6 => (s.clone(), entries, proptest::bool::weighted(0.85))
            .prop_map(|(side, entries, send)| Op::Batch { side, entries, send }),
        18 => (s.clone(), any::<u16>(), proptest::bool::weighted(0.7))
            .prop_map(|(side, pick, ok)| Op::Respond { side, pick, ok }),
        6 => (s.clone(), any::<u16>()).prop_map(|(side, pick)| Op::Cancel { side, pick }),
        5 => prop_oneof![3 => 0u32..5_000, 1 => 0u32..40_000].prop_map(|ms| Op::Advance { ms }),
        5 => prop_oneof![3 => Just(0u8), 1 => 1u8..3].prop_map(|early_ms| Op::AdvanceToNext { early_ms }),
        4 => s.clone().prop_map(|side| Op::Flush { side }),
        30 => deliver.prop_map(|(from, flush, frames, seed, bytes, chunk)| Op::Deliver {
            from,
            flush,
            frames,
            seed,
            bytes,
            chunk
        }),
        1 => Just(Op::Cut),
        1 => s.clone().prop_map(|side| Op::Close { side }),
        1 => (s.clone(), garbage(), any::<bool>()).prop_map(|(from, bytes, framed)| Op::Garbage { from, bytes, framed }),
        2 => (s, any::<u8>(), 0u16..12).prop_map(|(from, kind, id)| Op::Forge { from, kind, id }),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // One scenario in four may put garbage on the link.
    (
        proptest::bool::weighted(0.25),
        proptest::collection::vec(op(), 0..100),
    )
        .prop_map(|(garbage, mut ops)| {
            if !garbage {
                ops.retain(|op| !matches!(op, Op::Garbage { .. } | Op::Forge { .. }));
            }
            ops
        })
}

fn setup() -> impl Strategy<Value = Setup> {
    let transport = prop_oneof![
        2 => Just(Transport::Stream(Framing::ContentLength)),
        1 => Just(Transport::Stream(Framing::Newline)),
        1 => Just(Transport::Messages),
    ];
    let pair = || (proptest::bool::weighted(0.5), proptest::bool::weighted(0.5));
    (transport, pair(), pair(), pair()).prop_map(
        |(transport, small, cancellation, cancel_on_timeout)| Setup {
            transport,
            small: [small.0, small.1],
            // Mostly on, as configured by default.
            cancellation: [cancellation.0 || small.0, cancellation.1 || small.1],
            cancel_on_timeout: [cancel_on_timeout.0, cancel_on_timeout.1],
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("MODEL_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/model.txt"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn endpoint_matches_the_model(setup in setup(), ops in ops()) {
        Sim::run(setup, &ops);

    }
}
