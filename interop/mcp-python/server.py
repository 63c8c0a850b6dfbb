"""An MCP server written with the official MCP Python SDK (`MCPServer`, stdio), for
sansrpc's `mcp_client` example: `add`, and `slow`, which reports progress every 100 ms and
writes `slow: cancelled` to stderr when the client cancels it.

    python3 server.py
"""
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("python-sdk-server")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Takes its time, reporting progress."""
    steps = int(seconds * 10)
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(0.1)
            await ctx.report_progress(step, steps)
    except anyio.get_cancelled_exc_class():
        print("slow: cancelled", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds} s"


if __name__ == "__main__":
    server.run("stdio")
