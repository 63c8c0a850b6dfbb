"""The official MCP Python SDK's client (`mcp.Client` over its Streamable HTTP transport)
driving an MCP server at URL: connect, list the tools, call `add`, call `slow` with a
progress callback (at least 3 notifications/progress during the call), call `ask_name`
answering its elicitation with {name: "Ada"} ("hello Ada"), call `sample` answering its
sampling request (the tool returns the sampled text), read `test://hello` and get the
prompt `greet` when the server offers them, then close (DELETE of the session on legacy).
Prints one JSON line with what it saw; raises on the first broken expectation.

    python3 http_client.py URL [--mode legacy|2026] [--resume] [--ca PEM]

--mode legacy (the default) speaks 2025-11-25: initialize, Mcp-Session-Id, a standalone
GET stream, server-to-client requests (elicitation/create, sampling/createMessage) on the
call's SSE stream, DELETE on close. --mode 2026 is the SDK's mode="auto": it probes
`server/discover` at 2026-07-28 and must end up on 2026-07-28 (stateless: no session, every
POST carries MCP-Protocol-Version, Mcp-Method and Mcp-Name; elicitation and sampling come
back as an `input_required` result the SDK answers by retrying the call).

--resume (legacy only) cuts the SSE response of the `slow` call after its second progress
notification, as a dropped connection would; the SDK must reconnect by GET with
Last-Event-ID and still deliver the result and every progress notification exactly once.

--ca PEM trusts the certificates in that file (and only those) for an https:// URL.
"""
import argparse
import json
import ssl

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, ElicitResult, Implementation, TextContent

SAMPLED = "sampled by the interop client"


class Recorder(httpx2.AsyncBaseTransport):
    """An httpx2 transport that records every HTTP exchange the SDK makes, and with `cut`
    set drops the SSE response of the `slow` call after its second progress notification."""

    def __init__(self, cut: bool, ca: str | None = None) -> None:
        verify = ssl.create_default_context(cafile=ca) if ca else True
        self.inner = httpx2.AsyncHTTPTransport(verify=verify)
        self.cut = cut
        self.cuts = 0
        self.log: list[dict] = []

    async def handle_async_request(self, request):
        body = request.content.decode() if request.method == "POST" else ""
        message = json.loads(body) if body else {}
        response = await self.inner.handle_async_request(request)
        entry = {
            "http": request.method,
            "rpc": message.get("method") or ("response" if "id" in message else None),
            "status": response.status_code,
            "type": response.headers.get("content-type", "").split(";")[0],
            **{h: request.headers[h] for h in ("mcp-session-id", "mcp-protocol-version", "mcp-method",
                                               "mcp-name", "last-event-id") if h in request.headers},
        }
        self.log.append(entry)
        is_slow = message.get("method") == "tools/call" and message.get("params", {}).get("name") == "slow"
        if self.cut and is_slow and self.cuts == 0 and entry["type"] == "text/event-stream":
            self.cuts += 1
            return httpx2.Response(response.status_code, headers=response.headers,
                                   stream=CutStream(response.stream), extensions=response.extensions)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class CutStream(httpx2.AsyncByteStream):
    """Passes the body through until two progress notifications went by, then drops the
    connection (closes it towards the server and raises a read error towards the SDK)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def __aiter__(self):
        seen = 0
        async for chunk in self.inner:
            yield chunk
            seen += chunk.count(b"notifications/progress")
            if seen >= 2:
                await self.inner.aclose()
                raise httpx2.ReadError("interop client: SSE stream dropped on purpose")

    async def aclose(self) -> None:
        await self.inner.aclose()


async def main(url: str, mode: str, resume: bool, ca: str | None) -> None:
    elicited, sampled = [], []

    async def on_elicit(context, params):
        elicited.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        sampled.append(params.messages[0].content.text)
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=SAMPLED),
                                   model="interop-model", stop_reason="endTurn")

    recorder = Recorder(cut=resume, ca=ca)
    http = httpx2.AsyncClient(transport=recorder, timeout=httpx2.Timeout(30.0, read=300.0))
    transport = streamable_http_client(url, http_client=http)
    client = Client(transport, mode="legacy" if mode == "legacy" else "auto",
                    client_info=Implementation(name="sansrpc-interop", version="0.1.0"),
                    elicitation_callback=on_elicit, sampling_callback=on_sample)
    with anyio.fail_after(60):
        async with http, client:
            want = "2025-11-25" if mode == "legacy" else "2026-07-28"
            assert client.protocol_version == want, (client.protocol_version, want)
            tools = await client.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert {"add", "slow", "ask_name", "sample"} <= set(names), names
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.content[0].text == "5", added

            progress, totals = [], []

            async def on_progress(value, total, message):
                progress.append(value)
                totals.append(total)

            slept = await client.call_tool("slow", {"seconds": 0.5}, progress_callback=on_progress)
            assert slept.content[0].text.startswith("slept"), slept
            assert len(progress) >= 3, progress
            if resume:
                # Nothing repeated, nothing lost: strictly increasing, and when the server counts
                # steps towards a total, every step from 1 to the total arrived.
                assert all(a < b for a, b in zip(progress, progress[1:])), f"progress repeated: {progress}"
                assert len(progress) >= 4, f"progress lost: {progress}"
                if totals[-1] is not None and all(float(p).is_integer() for p in progress):
                    assert progress == list(range(1, int(totals[-1]) + 1)), f"progress lost: {progress}"
                resumed = [e for e in recorder.log if e["http"] == "GET" and "last-event-id" in e]
                assert recorder.cuts == 1 and resumed, recorder.log

            asked = await client.call_tool("ask_name", {})
            assert not asked.is_error, asked
            assert asked.content[0].text == "hello Ada", asked
            assert len(elicited) == 1, elicited

            answer = await client.call_tool("sample", {})
            assert not answer.is_error, answer
            assert answer.content[0].text == SAMPLED, answer
            assert len(sampled) == 1, sampled

            extras = []
            try:
                resources = [str(r.uri) for r in (await client.list_resources()).resources]
            except MCPError:
                resources = []
            if "test://hello" in resources:
                read = await client.read_resource("test://hello")
                assert read.contents[0].text == "hello", read
                extras.append("resource")
            try:
                prompts = [p.name for p in (await client.list_prompts()).prompts]
            except MCPError:
                prompts = []
            if "greet" in prompts:
                got = await client.get_prompt("greet", {"name": "Ada"})
                assert got.messages[0].role == "user", got
                assert got.messages[0].content.text == "Hello, Ada!", got
                extras.append("prompt")
            protocol = client.protocol_version

    if mode == "legacy":
        assert any("mcp-session-id" in e for e in recorder.log), f"no Mcp-Session-Id from initialize: {recorder.log}"
        last = recorder.log[-1]
        assert last["http"] == "DELETE" and (200 <= last["status"] < 300 or last["status"] == 405), recorder.log
    else:
        assert not any(e["http"] in ("GET", "DELETE") or "mcp-session-id" in e for e in recorder.log), recorder.log
    methods = {m: sum(e["http"] == m for e in recorder.log) for m in ("POST", "GET", "DELETE")}
    print(json.dumps({"ok": True, "mode": mode, "protocol": protocol, "tools": names, "progress": len(progress),
                      "ask_name": asked.content[0].text, "sample": answer.content[0].text, "extras": extras,
                      "resumed": resume, "http": methods}))


options = argparse.ArgumentParser()
options.add_argument("url")
options.add_argument("--mode", choices=["legacy", "2026"], default="legacy")
options.add_argument("--resume", action="store_true")
options.add_argument("--ca", help="a PEM file of the certificates to trust for https://")
args = options.parse_args()
if args.resume and args.mode != "legacy":
    options.error("--resume needs --mode legacy: 2026-07-28 has no SSE resumption")
anyio.run(main, args.url, args.mode, args.resume, args.ca)
