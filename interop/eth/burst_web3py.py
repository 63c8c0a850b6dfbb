"""web3.py 8 against sansrpc's eth_node in burst mode (ETH_NODE_BURSTS=65,1000):
eth.subscribe("newHeads") and eth.subscribe("logs") over one WebSocket, while the node
grows by 65 blocks at once, then by 1,000. Every header and every log must come, in order.
Usage: python3 burst_web3py.py PORT TOTAL. Prints one JSON line: the report."""

import asyncio
import json
import sys

from web3 import AsyncWeb3, WebSocketProvider


async def main(port: str, total: int) -> None:
    async with AsyncWeb3(WebSocketProvider(f"ws://127.0.0.1:{port}")) as w3:
        heads_id = await w3.eth.subscribe("newHeads")
        logs_id = await w3.eth.subscribe("logs", {})
        heads, logs, other = [], [], 0
        async for message in w3.socket.process_subscriptions():
            if message["subscription"] == heads_id:
                heads.append(message["result"]["number"])
            elif message["subscription"] == logs_id:
                logs.append(message["result"]["blockNumber"])
            else:
                other += 1
            if len(heads) >= total and len(logs) >= total:
                break
    in_order = lambda numbers: all(n == i + 1 for i, n in enumerate(numbers))
    print(
        json.dumps(
            {
                "heads": len(heads),
                "headsInOrder": in_order(heads),
                "logs": len(logs),
                "logsInOrder": in_order(logs),
                "other": other,
            }
        )
    )


asyncio.run(asyncio.wait_for(main(sys.argv[1], int(sys.argv[2])), 120))
