"""The official MCP Python SDK's client driving sansrpc's `mcp_server` example over stdio:
initialize, list the tools, call `add`, ping, call `slow` with a progress callback, cancel
a `slow` call (the SDK sends `notifications/cancelled` when the call is abandoned), and
list the tools again to show the server goes on. Prints one JSON line with what it saw;
raises on the first broken expectation.

    python3 client.py "COMMAND"     (run through `sh -c`, so it may pipe the server's output)
"""
import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(command: str) -> None:
    server = StdioServerParameters(command="sh", args=["-c", command])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            # The small `mcp_server` example or `everything_server --stdio`.
            servers = ("sansrpc-mcp-example", "sansrpc-everything-server")
            assert init.server_info.name in servers, init
            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert "add" in names and "slow" in names, names
            added = await session.call_tool("add", {"a": 2, "b": 3})
            assert added.content[0].text == "5", added
            await session.send_ping()

            progress = []

            async def on_progress(value, total, message):
                progress.append((value, total))

            slept = await session.call_tool("slow", {"seconds": 0.5}, progress_callback=on_progress)
            assert slept.content[0].text.startswith("slept"), slept
            assert len(progress) >= 3, progress

            # Abandoned after 0.5 s: the SDK tells the server with notifications/cancelled.
            with anyio.move_on_after(0.5):
                await session.call_tool("slow", {"seconds": 30})
                raise AssertionError("the slow call finished")
            await anyio.sleep(0.3)
            again = await session.list_tools()
            assert len(again.tools) == len(names)
    print(json.dumps({"ok": True, "tools": names, "progress": len(progress)}))


anyio.run(main, sys.argv[1])
