"""An MCP server written with the official MCP Python SDK (`MCPServer`) over Streamable HTTP,
for sansrpc's HTTP MCP client and for proving the interop HTTP clients: tools `add`, `slow`
(progress every 100 ms), `ask_name` (elicits a `name`) and `sample` (samples the client's
model), the resource `test://hello` and the prompt `greet`. Serves both protocol eras on one
endpoint, `/mcp`: the 2025-11-25 session protocol (initialize, Mcp-Session-Id, GET stream,
DELETE; server-to-client requests ride the call's SSE stream; resumable with Last-Event-ID
through an in-memory event store) and the 2026-07-28 stateless revision (the SDK routes by
the MCP-Protocol-Version header; elicitation and sampling become an `input_required` result
the client answers by retrying the call).

    python3 http_server.py PORT [--log FILE] [--close-sse-after N] [--retry-ms MS] [--tls CERT KEY]

PORT 0 picks a free port; the server prints `listening on PORT` once it accepts connections.
--log FILE appends one JSON line per HTTP request and response (headers, bodies, SSE data).
--close-sse-after N makes `slow` close its SSE stream after N progress notifications on
2025-11-25 (SEP-1699 polling), so the client must reconnect with GET + Last-Event-ID.
--retry-ms MS is the `retry:` sent in priming events (default 200), the clients' reconnection
delay. --tls CERT KEY serves HTTPS with that PEM certificate chain and key. The event store is shared by all sessions and keyed by request id, so run resumption
tests with one client at a time.
"""
import argparse
import itertools
import json
import socket
import sys
import time
from typing import Annotated

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample, UserMessage
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel


class MemoryEventStore(EventStore):
    """Every event of every stream, kept for replay after a dropped SSE stream."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []  # (event id, stream id, message or None)
        self.ids = itertools.count(1)

    async def store_event(self, stream_id, message):
        event_id = f"{stream_id}:{next(self.ids)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback: EventCallback):
        index = next((i for i, (eid, _, _) in enumerate(self.events) if eid == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        # By position in the live list, not over a copy: events stored while the replay is
        # being sent are replayed too. (The SDK still loses an event stored in the short
        # window between this returning and the resumed stream's registration.)
        while (index := index + 1) < len(self.events):
            event_id, sid, message = self.events[index]
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


options = argparse.ArgumentParser()
options.add_argument("port", type=int)
options.add_argument("--log")
options.add_argument("--close-sse-after", type=int, default=0)
options.add_argument("--retry-ms", type=int, default=200)
options.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
args = options.parse_args()

server = MCPServer("python-sdk-http-server", version="1.0.0", log_level="WARNING")


@server.tool()
def add(a: float, b: float) -> str:
    """Adds two numbers."""
    total = a + b
    return str(int(total)) if total == int(total) else str(total)


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Takes its time, reporting progress every 100 ms."""
    steps = max(int(seconds * 10), 1)
    for step in range(1, steps + 1):
        await anyio.sleep(0.1)
        await ctx.report_progress(step, steps)
        if step == args.close_sse_after and ctx.protocol_version != "2026-07-28":
            await ctx.close_sse_stream()  # the client must resume with GET + Last-Event-ID
    return f"slept {seconds:g}"


class NameForm(BaseModel):
    name: str


def ask_for_name() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


@server.tool()
async def ask_name(form: Annotated[NameForm, Resolve(ask_for_name)]) -> str:
    """Asks the client for a name (elicitation) and greets it."""
    return f"hello {form.name}"


def ask_model() -> Sample:
    prompt = SamplingMessage(role="user", content=TextContent(type="text", text="Say something."))
    return Sample([prompt], max_tokens=100)


@server.tool()
async def sample(reply: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Samples the client's model and returns what it said."""
    return reply.content.text if isinstance(reply.content, TextContent) else str(reply.content)


@server.resource("test://hello", mime_type="text/plain")
def hello() -> str:
    """A fixed text."""
    return "hello"


@server.prompt()
def greet(name: str) -> list[UserMessage]:
    """Greets someone."""
    return [UserMessage(f"Hello, {name}!")]


class RequestLog:
    """ASGI middleware appending each HTTP exchange, as seen on the wire, to a JSON-lines file."""

    def __init__(self, app, path: str) -> None:
        self.app, self.file, self.seq = app, open(path, "a", buffering=1), itertools.count(1)

    def write(self, **entry) -> None:
        self.file.write(json.dumps({"t": round(time.time(), 3), **entry}) + "\n")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        n = next(self.seq)
        headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"]}
        body, logged = b"", scope["method"] in ("GET", "DELETE")
        if logged:  # no body: logged now, the app may never read it
            self.write(n=n, dir="request", method=scope["method"], path=scope["path"], headers=headers, body="")

        async def logged_receive():
            nonlocal body, logged
            message = await receive()
            if message["type"] == "http.request" and not logged:
                body += message.get("body", b"")
                if not message.get("more_body"):
                    logged = True
                    self.write(n=n, dir="request", method=scope["method"], path=scope["path"],
                               headers=headers, body=body.decode(errors="replace"))
            elif message["type"] == "http.disconnect":
                self.write(n=n, dir="disconnect")
            return message

        async def logged_send(message):
            if message["type"] == "http.response.start":
                self.write(n=n, dir="response", status=message["status"],
                           headers={k.decode(): v.decode("latin-1") for k, v in message.get("headers", [])})
            elif message["type"] == "http.response.body":
                self.write(n=n, dir="body", body=message.get("body", b"").decode(errors="replace"),
                           more=message.get("more_body", False))
            await send(message)

        await self.app(scope, logged_receive, logged_send)


def main() -> None:
    app = server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=args.retry_ms)
    if args.log:
        app = RequestLog(app, args.log)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    tls = {"ssl_certfile": args.tls[0], "ssl_keyfile": args.tls[1]} if args.tls else {}
    config = uvicorn.Config(app, log_level="warning", lifespan="on", **tls)
    uv = uvicorn.Server(config)

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uv.serve, [sock])
            while not uv.started:
                await anyio.sleep(0.01)
            print(f"listening on {sock.getsockname()[1]}", flush=True)

    anyio.run(serve)


if __name__ == "__main__":
    main()
    sys.exit(0)
