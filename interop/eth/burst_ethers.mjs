// ethers v6 against sansrpc's eth_node in burst mode (ETH_NODE_BURSTS=65,1000):
// WebSocketProvider.on("block") (eth_subscribe newHeads) and .on(filter) (eth_subscribe
// logs) over one WebSocket, while the node grows by 65 blocks at once, then by 1,000. Every
// block and every log must come, in order, with no error and no unhandled rejection.
// Usage: node burst_ethers.mjs PORT TOTAL. Prints one JSON line: the report.
import { WebSocketProvider } from 'ethers';

const [port, total] = [process.argv[2], Number(process.argv[3])];
const fail = (e) => {
  console.error(e);
  process.exit(1);
};
setTimeout(() => fail(new Error('ethers: not done within 120 s')), 120_000).unref();
const unhandled = [];
process.on('unhandledRejection', (e) => unhandled.push(String(e)));

const inOrder = (numbers) => numbers.every((n, i) => n === i + 1);

try {
  const ws = new WebSocketProvider(`ws://127.0.0.1:${port}`);
  const heads = [];
  const logs = [];
  const errors = [];
  await new Promise((resolve) => {
    const done = () => {
      if (heads.length >= total && logs.length >= total) resolve();
    };
    ws.on('error', (e) => errors.push(String(e)));
    ws.on('block', (n) => {
      heads.push(n);
      done();
    });
    ws.on({ address: '0x5FbDB2315678afecb367f032d93F642f64180aa3' }, (log) => {
      logs.push(log.blockNumber);
      done();
    });
  });
  await new Promise((r) => setTimeout(r, 300));
  const [errorsSeen, unhandledSeen] = [errors.length, unhandled.length];
  if (errorsSeen || unhandledSeen) console.error({ errors, unhandled });
  await ws.destroy();
  console.log(
    JSON.stringify({
      heads: heads.length,
      headsInOrder: inOrder(heads),
      logs: logs.length,
      logsInOrder: inOrder(logs),
      errors: errorsSeen,
      unhandled: unhandledSeen,
    }),
  );
  process.exit(0);
} catch (e) {
  fail(e);
}
