//! The chain of the newHeads workload, shared by its two servers (`heads-sansrpc-server`,
//! `heads-jsonrpsee-server`) and the client that checks them: block `n`'s header is made
//! from `n` alone, and serializes to exactly [`BLOCK_BYTES`] of JSON, so that both servers
//! send the same bytes and the client can check each one.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The JSON size of every header (its `extraData` pads it to this).
pub const BLOCK_BYTES: usize = 1024;
/// A new block every 100 ms: 10 blocks a second.
pub const BLOCK_TIME: Duration = Duration::from_millis(100);

/// The block time a server runs with: `LOADGEN_BLOCK_MS` when the load generator sets it
/// (it does for 10,000 subscribers, so that its one client keeps up), else [`BLOCK_TIME`].
pub fn block_time() -> Duration {
    std::env::var("LOADGEN_BLOCK_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(BLOCK_TIME, Duration::from_millis)
}

/// A block header as Ethereum's `newHeads` sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub number: String,
    pub hash: String,
    pub parent_hash: String,
    pub nonce: String,
    pub mix_hash: String,
    pub sha3_uncles: String,
    pub logs_bloom: String,
    pub transactions_root: String,
    pub state_root: String,
    pub receipts_root: String,
    pub miner: String,
    pub difficulty: String,
    pub gas_limit: String,
    pub gas_used: String,
    pub timestamp: String,
    pub extra_data: String,
    pub base_fee_per_gas: String,
}

/// A 32-byte hash, from a block number and what it is for.
fn hash(n: u64, salt: u64) -> String {
    let word = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
    format!("0x{word:016x}{:016x}{word:016x}{salt:016x}", !word)
}

/// Block `n`'s header, [`BLOCK_BYTES`] of JSON.
pub fn header(n: u64) -> Header {
    const EMPTY_ROOT: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";
    let mut header = Header {
        number: format!("{n:#x}"),
        hash: hash(n, 1),
        parent_hash: hash(n.wrapping_sub(1), 1),
        nonce: "0x0000000000000000".into(),
        mix_hash: hash(n, 2),
        sha3_uncles: "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347".into(),
        logs_bloom: format!("0x{}", "0".repeat(512)),
        transactions_root: EMPTY_ROOT.into(),
        state_root: hash(n, 3),
        receipts_root: EMPTY_ROOT.into(),
        miner: "0x0000000000000000000000000000000000000000".into(),
        difficulty: "0x0".into(),
        gas_limit: "0x1c9c380".into(),
        gas_used: "0x0".into(),
        timestamp: format!("{:#x}", 1_704_067_200 + n),
        extra_data: "0x".into(),
        base_fee_per_gas: "0x3b9aca00".into(),
    };
    let bare = serde_json::to_vec(&header)
        .expect("a header serializes")
        .len();
    header
        .extra_data
        .push_str(&"0".repeat(BLOCK_BYTES.saturating_sub(bare)));
    header
}

/// The block number a header's `number` names.
pub fn number(header: &Header) -> Option<u64> {
    u64::from_str_radix(header.number.strip_prefix("0x")?, 16).ok()
}
