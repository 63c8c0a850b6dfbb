"""web3.py 8 against sansrpc's eth_node example: AsyncWeb3 over its WebSocket provider,
eth_chainId, eth.subscribe("newHeads") until 5 consecutive headers came, then
unsubscribe. Usage: python3 web3py.py PORT. Prints one JSON line: the report."""

import asyncio
import json
import sys

from web3 import AsyncWeb3, WebSocketProvider


async def main(port: str) -> None:
    async with AsyncWeb3(WebSocketProvider(f"ws://127.0.0.1:{port}")) as w3:
        chain_id = await w3.eth.chain_id
        sub_id = await w3.eth.subscribe("newHeads")
        numbers = []
        async for message in w3.socket.process_subscriptions():
            assert message["subscription"] == sub_id, message
            numbers.append(message["result"]["number"])
            if len(numbers) == 5:
                break
        unsubscribed = await w3.eth.unsubscribe(sub_id)
        block_number = await w3.eth.block_number
    consecutive = all(b == a + 1 for a, b in zip(numbers, numbers[1:]))
    print(
        json.dumps(
            {
                "chainId": chain_id,
                "blocks": len(numbers),
                "consecutive": consecutive,
                "unsubscribed": unsubscribed,
                "blockNumberAfter": block_number >= numbers[-1],
            }
        )
    )


asyncio.run(asyncio.wait_for(main(sys.argv[1]), 60))
