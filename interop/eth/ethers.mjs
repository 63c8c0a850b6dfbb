// ethers v6 against sansrpc's eth_node example: JsonRpcProvider over HTTP (the network,
// the block number, a block; its calls of one tick go as one batch), and
// WebSocketProvider.on("block") (eth_subscribe newHeads) until 5 consecutive blocks came.
// Usage: node ethers.mjs PORT. Prints one JSON line: the report; exits 1 on any failure.
import { JsonRpcProvider, WebSocketProvider } from 'ethers';

const port = process.argv[2];
const fail = (e) => {
  console.error(e);
  process.exit(1);
};
setTimeout(() => fail(new Error('ethers: not done within 60 s')), 60_000).unref();

try {
  const provider = new JsonRpcProvider(`http://127.0.0.1:${port}`);
  const [network, blockNumber, block1] = await Promise.all([
    provider.getNetwork(),
    provider.getBlockNumber(),
    provider.getBlock(1),
  ]);
  provider.destroy();

  const ws = new WebSocketProvider(`ws://127.0.0.1:${port}`);
  const blocks = await new Promise((resolve, reject) => {
    const seen = [];
    ws.on('error', reject);
    ws.on('block', (n) => {
      seen.push(n);
      if (seen.length === 5) resolve(seen);
    });
  });
  await ws.off('block');
  await ws.destroy();
  const consecutive = blocks.every((n, i) => i === 0 || n === blocks[i - 1] + 1);

  console.log(
    JSON.stringify({
      chainId: Number(network.chainId),
      blockNumberPositive: blockNumber > 0,
      block1: { number: block1.number, parentIsBlock0: block1.parentHash.length === 66 },
      blocks: blocks.length,
      consecutive,
    }),
  );
  process.exit(0);
} catch (e) {
  fail(e);
}
