// viem against sansrpc's eth_node example: getChainId and getBlockNumber over HTTP, a
// batch over HTTP (one JSON array, checked as it goes out), watchBlocks over viem's
// WebSocket transport (eth_subscribe newHeads) until 5 consecutive blocks came.
// Usage: node viem.mjs PORT. Prints one JSON line: the report; exits 1 on any failure.
import { createPublicClient, http, webSocket } from 'viem';

const port = process.argv[2];
const fail = (e) => {
  console.error(e);
  process.exit(1);
};
setTimeout(() => fail(new Error('viem: not done within 60 s')), 60_000).unref();

try {
  const url = `http://127.0.0.1:${port}`;
  const client = createPublicClient({ transport: http(url) });
  const chainId = await client.getChainId();
  const blockNumber = await client.getBlockNumber();

  // A batch: viem gathers the calls of one tick into one POST.
  const bodies = [];
  const batched = createPublicClient({
    transport: http(url, {
      batch: { batchSize: 10, wait: 10 },
      onFetchRequest: async (request) => {
        bodies.push(JSON.parse(await request.clone().text()));
      },
    }),
  });
  const [batchChainId, block1, netVersion] = await Promise.all([
    batched.getChainId(),
    batched.getBlock({ blockNumber: 1n }),
    batched.request({ method: 'net_version' }),
  ]);
  const batchSizes = bodies.map((b) => (Array.isArray(b) ? b.length : 0));

  const ws = createPublicClient({ transport: webSocket(`ws://127.0.0.1:${port}`) });
  const blocks = await new Promise((resolve, reject) => {
    const seen = [];
    const unwatch = ws.watchBlocks({
      onBlock: (block) => {
        seen.push(Number(block.number));
        if (seen.length === 5) {
          unwatch();
          resolve(seen);
        }
      },
      onError: reject,
    });
  });
  const consecutive = blocks.every((n, i) => i === 0 || n === blocks[i - 1] + 1);
  await ws.transport.getRpcClient().then((c) => c.close());

  console.log(
    JSON.stringify({
      chainId,
      blockNumberPositive: blockNumber > 0n,
      batch: { chainId: batchChainId, block1: Number(block1.number), netVersion, sizes: batchSizes },
      blocks: blocks.length,
      consecutive,
    }),
  );
  process.exit(0);
} catch (e) {
  fail(e);
}
