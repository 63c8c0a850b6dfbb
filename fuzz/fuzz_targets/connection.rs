//! Two connection machines over a simulated link, driven by libFuzzer's operation
//! sequences and checked by the harness `tests/connection_model.rs` runs under proptest
//! (`tests/connection_sim/`): no panic, every call ends exactly once unless forgotten,
//! `Cancel` only for running requests, everything finished after close.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/connection_sim/mod.rs"]
mod sim;

use sim::Op;

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Call { side: u8, timeout_ms: Option<u16> },
    Batch { side: u8, calls: u8, notify: bool },
    Notify { side: u8 },
    Forget { side: u8, pick: u16 },
    Respond { side: u8, pick: u16, ok: bool },
    RespondCancelled { side: u8, pick: u16 },
    Shutdown { side: u8, grace_ms: u16 },
    EndInput { side: u8 },
    Close { side: u8 },
    Advance { ms: u16 },
    Deliver { from: u8, bytes: u16 },
    Garbage { to: u8, bytes: Vec<u8> },
}

impl From<FuzzOp> for Op {
    fn from(op: FuzzOp) -> Op {
        match op {
            FuzzOp::Call { side, timeout_ms } => Op::Call { side, timeout_ms },
            FuzzOp::Batch {
                side,
                calls,
                notify,
            } => Op::Batch {
                side,
                calls,
                notify,
            },
            FuzzOp::Notify { side } => Op::Notify { side },
            FuzzOp::Forget { side, pick } => Op::Forget { side, pick },
            FuzzOp::Respond { side, pick, ok } => Op::Respond { side, pick, ok },
            FuzzOp::RespondCancelled { side, pick } => Op::RespondCancelled { side, pick },
            FuzzOp::Shutdown { side, grace_ms } => Op::Shutdown { side, grace_ms },
            FuzzOp::EndInput { side } => Op::EndInput { side },
            FuzzOp::Close { side } => Op::Close { side },
            FuzzOp::Advance { ms } => Op::Advance { ms: ms % 4000 },
            FuzzOp::Deliver { from, bytes } => Op::Deliver { from, bytes },
            FuzzOp::Garbage { to, mut bytes } => {
                bytes.truncate(256);
                Op::Garbage { to, bytes }
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    heartbeat: [bool; 2],
    ops: Vec<FuzzOp>,
}

fuzz_target!(|input: Input| {
    let ops: Vec<Op> = input.ops.into_iter().take(256).map(Op::from).collect();
    sim::run(input.heartbeat, &ops);
});
