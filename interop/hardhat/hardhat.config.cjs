// Hardhat's node for sansrpc's client (adapters/tokio/tests/hardhat.rs): its defaults
// (chain id 31337, HTTP and WebSocket on one port); the test mines with hardhat_mine.
module.exports = { networks: { hardhat: { chainId: 31337 } } };
