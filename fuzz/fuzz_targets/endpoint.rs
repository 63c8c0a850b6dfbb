//! Two endpoints over a simulated link, driven by libFuzzer's operation sequences and checked
//! against the reference model in `tests/sim/` (the same one `tests/model.rs` runs under
//! proptest): responses at most once and exactly once when answered, notifications never
//! answered, every request ending exactly once and never before its deadline, every table
//! empty after close. Raw and forged bytes on the link exercise the peer-facing paths.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sansrpc::codec::Framing;

#[path = "../../tests/sim/mod.rs"]
mod sim;

use sim::link::Transport;
use sim::model::{Deadline, Op, Setup, Sim};

#[derive(Arbitrary, Debug)]
enum FuzzDeadline {
    Default,
    Never,
    AfterMs(u16),
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Request {
        side: bool,
        deadline: FuzzDeadline,
    },
    Notify {
        side: bool,
    },
    Batch {
        side: bool,
        entries: Vec<Option<FuzzDeadline>>,
        send: bool,
    },
    Respond {
        side: bool,
        pick: u16,
        ok: bool,
    },
    Cancel {
        side: bool,
        pick: u16,
    },
    Advance {
        ms: u16,
    },
    AdvanceToNext {
        early: bool,
    },
    Flush {
        side: bool,
    },
    Deliver {
        from: bool,
        flush: bool,
        frames: u8,
        seed: u64,
        bytes: u16,
        chunk: u16,
    },
    Cut,
    Close {
        side: bool,
    },
    Garbage {
        from: bool,
        bytes: Vec<u8>,
        framed: bool,
    },
    Forge {
        from: bool,
        kind: u8,
        id: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    transport: u8,
    small: [bool; 2],
    cancellation: [bool; 2],
    cancel_on_timeout: [bool; 2],
    ops: Vec<FuzzOp>,
}

fn deadline(d: FuzzDeadline) -> Deadline {
    match d {
        FuzzDeadline::Default => Deadline::Default,
        FuzzDeadline::Never => Deadline::Never,
        FuzzDeadline::AfterMs(ms) => Deadline::AfterMs(ms),
    }
}

fn op(op: FuzzOp) -> Op {
    let s = u8::from;
    match op {
        FuzzOp::Request { side, deadline: d } => Op::Request {
            side: s(side),
            deadline: deadline(d),
        },
        FuzzOp::Notify { side } => Op::Notify { side: s(side) },
        FuzzOp::Batch {
            side,
            entries,
            send,
        } => Op::Batch {
            side: s(side),
            entries: entries
                .into_iter()
                .take(8)
                .map(|e| e.map(deadline))
                .collect(),
            send,
        },
        FuzzOp::Respond { side, pick, ok } => Op::Respond {
            side: s(side),
            pick,
            ok,
        },
        FuzzOp::Cancel { side, pick } => Op::Cancel {
            side: s(side),
            pick,
        },
        FuzzOp::Advance { ms } => Op::Advance { ms: ms.into() },
        FuzzOp::AdvanceToNext { early } => Op::AdvanceToNext {
            early_ms: early.into(),
        },
        FuzzOp::Flush { side } => Op::Flush { side: s(side) },
        FuzzOp::Deliver {
            from,
            flush,
            frames,
            seed,
            bytes,
            chunk,
        } => Op::Deliver {
            from: s(from),
            flush,
            frames,
            seed,
            bytes,
            chunk,
        },
        FuzzOp::Cut => Op::Cut,
        FuzzOp::Close { side } => Op::Close { side: s(side) },
        FuzzOp::Garbage {
            from,
            mut bytes,
            framed,
        } => {
            bytes.truncate(512);
            Op::Garbage {
                from: s(from),
                bytes,
                framed,
            }
        }
        FuzzOp::Forge { from, kind, id } => Op::Forge {
            from: s(from),
            kind,
            id: (id % 16).into(),
        },
    }
}

fuzz_target!(|input: Input| {
    let setup = Setup {
        transport: match input.transport % 4 {
            0 | 1 => Transport::Stream(Framing::ContentLength),
            2 => Transport::Stream(Framing::Newline),
            _ => Transport::Messages,
        },
        small: input.small,
        cancellation: input.cancellation,
        cancel_on_timeout: input.cancel_on_timeout,
    };
    let ops: Vec<Op> = input.ops.into_iter().take(256).map(op).collect();
    Sim::run(setup, &ops);
});
