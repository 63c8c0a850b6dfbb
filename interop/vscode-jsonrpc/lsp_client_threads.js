// An LSP-style client written with vscode-jsonrpc (the library VS Code's language client
// is built on) driving sansrpc-blocking's `lsp_server_threads` example over stdio (until it
// moves onto sansrpc-lsp; the crate's examples have `lsp_client.js`): initialize, a request
// whose handler calls `workspace/configuration` back and sends `window/logMessage` and
// `$/progress`, a cancelled request, shutdown and exit. Prints one JSON line with what it
// saw; exits non-zero on the first broken expectation.
//
//   node lsp_client_threads.js PATH_TO_LSP_SERVER
"use strict";
const cp = require("child_process");
const rpc = require("vscode-jsonrpc/node");

function fail(message) {
  console.error("lsp_client: " + message);
  process.exit(2);
}

const server = cp.spawn(process.argv[2], [], { stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
server.stderr.on("data", (d) => (stderr += d));
const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));

const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(server.stdout),
  new rpc.StreamMessageWriter(server.stdin)
);
const seen = { configuration: [], logs: [], progress: [] };
connection.onRequest("workspace/configuration", (params) => {
  seen.configuration.push(params);
  return ["Howdy"];
});
connection.onNotification("window/logMessage", (params) => seen.logs.push(params));
connection.onNotification("$/progress", (params) => seen.progress.push(params));
connection.listen();

(async () => {
  const init = await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
  });
  if (init.serverInfo.name !== "sansrpc-lsp-example") fail("initialize: " + JSON.stringify(init));
  connection.sendNotification("initialized", {});

  const greeting = await connection.sendRequest("custom/greet", {
    name: "Ada",
    workDoneToken: "greet-1",
  });
  if (greeting !== "Howdy, Ada!") fail("greet answered " + JSON.stringify(greeting));
  if (seen.configuration.length !== 1) fail("configuration asked " + seen.configuration.length + " times");
  if (seen.configuration[0].items[0].section !== "greeting") fail("configuration params");
  if (seen.logs.length !== 1 || seen.logs[0].message !== "greeting Ada") fail("logs " + JSON.stringify(seen.logs));
  const progress = seen.progress[0];
  if (!progress || progress.token !== "greet-1" || progress.value.percentage !== 50) {
    fail("progress " + JSON.stringify(seen.progress));
  }

  // Cancelled through vscode-jsonrpc's own `$/cancelRequest`.
  const source = new rpc.CancellationTokenSource();
  const slow = connection.sendRequest("custom/greet", { name: "Bob", waitMs: 30000 }, source.token);
  setTimeout(() => source.cancel(), 300);
  let cancelled = null;
  try {
    await slow;
    fail("the cancelled request was answered with a result");
  } catch (e) {
    cancelled = e.code;
  }
  // LSP's RequestCancelled.
  if (cancelled !== -32800) fail("cancelled with code " + cancelled);

  await connection.sendRequest("shutdown");
  connection.sendNotification("exit");
  const code = await exited;
  if (code !== 0) fail("exit status " + code);
  if (!stderr.includes("greet: cancelled")) fail("the handler did not see the cancellation: " + stderr);
  console.log(JSON.stringify({ ok: true, cancelled, exit: code, progress: seen.progress.length }));
  process.exit(0);
})().catch((e) => fail(String(e && e.stack ? e.stack : e)));
