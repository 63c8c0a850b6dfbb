// viem against sansrpc's eth_node in burst mode (ETH_NODE_BURSTS=65,1000): watchBlocks
// (eth_subscribe newHeads, then eth_getBlockByNumber for each head) and watchEvent
// (eth_subscribe logs) over one WebSocket, while the node grows by 65 blocks at once, then
// by 1,000. Every block and every log must come, in order, with no block `undefined`, no
// error and no unhandled rejection.
// Usage: node burst_viem.mjs PORT TOTAL. Prints one JSON line: the report.
import { createPublicClient, webSocket } from 'viem';

const [port, total] = [process.argv[2], Number(process.argv[3])];
const fail = (e) => {
  console.error(e);
  process.exit(1);
};
setTimeout(() => fail(new Error('viem: not done within 120 s')), 120_000).unref();
const unhandled = [];
process.on('unhandledRejection', (e) => unhandled.push(String(e)));

const inOrder = (numbers) => numbers.every((n, i) => n === i + 1);

try {
  const client = createPublicClient({ transport: webSocket(`ws://127.0.0.1:${port}`) });
  const heads = [];
  const logs = [];
  const errors = [];
  let undefinedBlocks = 0;
  const unwatch = [];
  await new Promise((resolve) => {
    const done = () => {
      if (heads.length + undefinedBlocks >= total && logs.length >= total) resolve();
    };
    unwatch.push(client.watchBlocks({
      onBlock: (block) => {
        if (block === undefined) undefinedBlocks += 1;
        else heads.push(Number(block.number));
        done();
      },
      onError: (e) => errors.push(String(e)),
    }));
    unwatch.push(client.watchEvent({
      onLogs: (batch) => {
        for (const log of batch) logs.push(Number(log.blockNumber));
        done();
      },
      onError: (e) => errors.push(String(e)),
    }));
  });
  // Anything late (a rejection, an error) would show within this.
  await new Promise((r) => setTimeout(r, 300));
  const [errorsSeen, unhandledSeen] = [errors.length, unhandled.length];
  if (errorsSeen || unhandledSeen) console.error({ errors, unhandled });
  for (const stop of unwatch) stop();
  await client.transport.getRpcClient().then((c) => c.close());
  console.log(
    JSON.stringify({
      heads: heads.length,
      headsInOrder: inOrder(heads),
      logs: logs.length,
      logsInOrder: inOrder(logs),
      undefinedBlocks,
      errors: errorsSeen,
      unhandled: unhandledSeen,
    }),
  );
  process.exit(0);
} catch (e) {
  fail(e);
}
