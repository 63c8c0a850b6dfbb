// The official MCP TypeScript SDK's client driving sansrpc's `mcp_server` example over
// stdio: initialize (by connect), list the tools, call `add`, ping, call `slow` with a
// progress callback, abort a `slow` call (the SDK sends `notifications/cancelled`), and
// list the tools again to show the server goes on. Prints one JSON line with what it saw;
// exits non-zero on the first broken expectation.
//
//   node client.mjs "COMMAND"     (run through `sh -c`, so it may pipe the server's output)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

function fail(message) {
  console.error("mcp-ts client: " + message);
  process.exit(2);
}

const transport = new StdioClientTransport({ command: "sh", args: ["-c", process.argv[2]] });
const client = new Client({ name: "sansrpc-interop", version: "0.1.0" });
await client.connect(transport);
// The small `mcp_server` example or `everything_server --stdio`: both have `add` and `slow`.
const servers = ["sansrpc-mcp-example", "sansrpc-everything-server"];
if (!servers.includes(client.getServerVersion()?.name)) fail("server info");

const tools = (await client.listTools()).tools.map((t) => t.name).sort();
if (!tools.includes("add") || !tools.includes("slow")) fail("tools " + tools);
const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
if (added.content[0].text !== "5") fail("add " + JSON.stringify(added));
await client.ping();

const progress = [];
const slept = await client.callTool({ name: "slow", arguments: { seconds: 0.5 } }, CallToolResultSchema, {
  onprogress: (p) => progress.push(p.progress),
});
if (!slept.content[0].text.startsWith("slept")) fail("slow " + JSON.stringify(slept));
if (progress.length < 3) fail("progress " + JSON.stringify(progress));

// Aborted after 0.5 s: the SDK sends notifications/cancelled and rejects the call.
const controller = new AbortController();
setTimeout(() => controller.abort("enough"), 500);
let aborted = false;
try {
  await client.callTool({ name: "slow", arguments: { seconds: 30 } }, CallToolResultSchema, {
    signal: controller.signal,
  });
} catch (e) {
  aborted = true;
}
if (!aborted) fail("the slow call finished");
await new Promise((r) => setTimeout(r, 300));
if ((await client.listTools()).tools.length !== tools.length) fail("tools after the cancel");
await client.close();
console.log(JSON.stringify({ ok: true, tools, progress: progress.length }));
