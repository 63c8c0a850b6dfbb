// The official MCP TypeScript SDK's client (StreamableHTTPClientTransport, protocol
// 2025-11-25; SDK 1.32.2 does not speak 2026-07-28) driving an MCP server at URL: initialize
// (by connect), list the tools, call `add`, call `slow` with a progress callback (at least 3
// notifications/progress during the call), call `ask_name` answering its elicitation/create
// with {name: "Ada"} ("hello Ada"), call `sample` answering its sampling/createMessage (the
// tool returns the sampled text), read `test://hello` and get the prompt `greet` when the
// server offers them, then end the session (DELETE) and close. Prints one JSON line with what
// it saw; exits non-zero on the first broken expectation.
//
//   node http_client.mjs URL [--resume]
//
// --resume cuts the SSE response of the `slow` call after its second progress notification,
// as a dropped connection would; the SDK must reconnect by GET with Last-Event-ID and still
// deliver the result and every progress notification exactly once.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const SAMPLED = "sampled by the interop client";

function fail(message) {
  console.error("mcp-ts http client: " + message);
  process.exit(2);
}

const url = process.argv[2];
const resume = process.argv.includes("--resume");
if (!url) fail("usage: node http_client.mjs URL [--resume]");
const timer = setTimeout(() => fail("timed out"), 60000);

// Every HTTP exchange the SDK makes, recorded by the fetch it is given; with --resume that
// fetch also drops the `slow` call's SSE response after two progress notifications.
const log = [];
let cuts = 0;
async function recordingFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  const body = typeof init.body === "string" ? JSON.parse(init.body) : {};
  const response = await fetch(input, init);
  const entry = {
    http: init.method ?? "GET",
    rpc: body.method ?? ("id" in body ? "response" : undefined),
    status: response.status,
    type: (response.headers.get("content-type") ?? "").split(";")[0],
  };
  for (const h of ["mcp-session-id", "mcp-protocol-version", "last-event-id"]) {
    if (headers.has(h)) entry[h] = headers.get(h);
  }
  log.push(entry);
  const isSlow = body.method === "tools/call" && body.params?.name === "slow";
  if (resume && isSlow && cuts === 0 && entry.type === "text/event-stream") {
    cuts += 1;
    return new Response(cutAfterTwoProgress(response.body), {
      status: response.status,
      headers: response.headers,
    });
  }
  return response;
}

function cutAfterTwoProgress(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let seen = 0;
  return new ReadableStream({
    async pull(controller) {
      if (seen >= 2) {
        await reader.cancel(); // closes the connection towards the server
        controller.error(new TypeError("interop client: SSE stream dropped on purpose"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) return controller.close();
      seen += decoder.decode(value, { stream: true }).split("notifications/progress").length - 1;
      controller.enqueue(value);
    },
  });
}

const elicited = [];
const sampled = [];
const client = new Client(
  { name: "sansrpc-interop", version: "0.1.0" },
  { capabilities: { elicitation: { form: {} }, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params.message);
  return { action: "accept", content: { name: "Ada" } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  sampled.push(request.params.messages[0].content.text);
  return { role: "assistant", content: { type: "text", text: SAMPLED }, model: "interop-model", stopReason: "endTurn" };
});

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
await client.connect(transport);
if (transport.protocolVersion !== "2025-11-25") fail("protocol " + transport.protocolVersion);
if (!transport.sessionId) fail("no Mcp-Session-Id from initialize");

const tools = (await client.listTools()).tools.map((t) => t.name).sort();
for (const name of ["add", "slow", "ask_name", "sample"]) if (!tools.includes(name)) fail("tools " + tools);
const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
if (added.content[0].text !== "5") fail("add " + JSON.stringify(added));

const progress = [];
let total;
const slept = await client.callTool({ name: "slow", arguments: { seconds: 0.5 } }, CallToolResultSchema, {
  onprogress: (p) => {
    progress.push(p.progress);
    total = p.total;
  },
});
if (!slept.content[0].text.startsWith("slept")) fail("slow " + JSON.stringify(slept));
if (progress.length < 3) fail("progress " + JSON.stringify(progress));
if (resume) {
  // Nothing repeated, nothing lost: strictly increasing, and when the server counts steps
  // towards a total, every step from 1 to the total arrived.
  if (progress.some((p, i) => i > 0 && p <= progress[i - 1])) fail("progress repeated: " + JSON.stringify(progress));
  if (progress.length < 4) fail("progress lost: " + JSON.stringify(progress));
  if (total !== undefined && progress.every(Number.isInteger)) {
    if (progress.join() !== Array.from({ length: total }, (_, i) => i + 1).join()) fail("progress lost: " + JSON.stringify(progress));
  }
  if (cuts !== 1 || !log.some((e) => e.http === "GET" && e["last-event-id"])) fail("no resumption " + JSON.stringify(log));
}

const asked = await client.callTool({ name: "ask_name", arguments: {} });
if (asked.isError || asked.content[0].text !== "hello Ada") fail("ask_name " + JSON.stringify(asked));
if (elicited.length !== 1) fail("elicited " + JSON.stringify(elicited));
const answer = await client.callTool({ name: "sample", arguments: {} });
if (answer.isError || answer.content[0].text !== SAMPLED) fail("sample " + JSON.stringify(answer));
if (sampled.length !== 1) fail("sampled " + JSON.stringify(sampled));

const extras = [];
const caps = client.getServerCapabilities() ?? {};
if (caps.resources && (await client.listResources()).resources.some((r) => r.uri === "test://hello")) {
  const read = await client.readResource({ uri: "test://hello" });
  if (read.contents[0].text !== "hello") fail("resource " + JSON.stringify(read));
  extras.push("resource");
}
if (caps.prompts && (await client.listPrompts()).prompts.some((p) => p.name === "greet")) {
  const got = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } });
  if (got.messages[0].role !== "user" || got.messages[0].content.text !== "Hello, Ada!") fail("prompt " + JSON.stringify(got));
  extras.push("prompt");
}

// client.close() alone sends nothing; ending the session is an explicit DELETE.
await transport.terminateSession();
await client.close();
const last = log[log.length - 1];
if (last.http !== "DELETE" || !((last.status >= 200 && last.status < 300) || last.status === 405)) fail("DELETE " + JSON.stringify(last));
clearTimeout(timer);
const http = Object.fromEntries(["POST", "GET", "DELETE"].map((m) => [m, log.filter((e) => e.http === m).length]));
console.log(JSON.stringify({ ok: true, protocol: "2025-11-25", tools, progress: progress.length,
  ask_name: asked.content[0].text, sample: answer.content[0].text, extras, resumed: resume, http }));
