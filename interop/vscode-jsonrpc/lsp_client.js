// An LSP client written with vscode-jsonrpc (the library VS Code's language client is
// built on) driving sansrpc-lsp's two example servers over stdio, one after the other:
//
// 1. `todo_server`: initialize (UTF-16 offered, as VS Code does) and its exact
//    capabilities; didOpen of a CRLF document with a non-BMP character; its diagnostics;
//    an incremental didChange adding TODOs and, sent right behind it, hovers that see it
//    (`version 2: LINE`, `null` past the last line); the diagnostics of version 2 with
//    their UTF-16 ranges; shutdown and exit with status 0.
// 2. `context_server`: a request whose handler calls `workspace/configuration` back, sends
//    `window/logMessage` and work-done progress on the request's `workDoneToken`
//    (begin, report, end); a request cancelled with vscode-jsonrpc's own `$/cancelRequest`,
//    which the handler sees and answers -32800; shutdown and exit with status 0.
//
// Prints one JSON line with what it saw; exits non-zero on the first broken expectation.
// Every wait is bounded.
//
//   node lsp_client.js PATH_TO_TODO_SERVER PATH_TO_CONTEXT_SERVER
"use strict";
const assert = require("assert");
const cp = require("child_process");
const rpc = require("vscode-jsonrpc/node");

const ANSWER_MS = 10000;

function fail(message) {
  console.error("lsp_client: " + message);
  process.exit(2);
}

// `promise`, or a failure naming `what` after ANSWER_MS.
function within(what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out waiting for " + what)), ANSWER_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Starts `path` and connects to it; `exited` resolves with its exit status.
function start(path) {
  const server = cp.spawn(path, [], { stdio: ["pipe", "pipe", "pipe"] });
  const started = { stderr: "" };
  server.stderr.on("data", (d) => (started.stderr += d));
  started.exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  started.connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin)
  );
  return started;
}

async function shutDown(server, name) {
  await within(name + "'s shutdown", server.connection.sendRequest("shutdown"));
  server.connection.sendNotification("exit");
  const code = await within(name + "'s exit", server.exited);
  if (code !== 0) fail(name + " exited with status " + code + ": " + server.stderr);
  return code;
}

async function todoServer(path) {
  const server = start(path);
  const { connection } = server;
  const uri = "file:///tmp/sansrpc-vscode-jsonrpc/notes.txt";
  // Each publishDiagnostics, and whoever waits for a version.
  const published = [];
  const waiting = [];
  connection.onNotification("textDocument/publishDiagnostics", (params) => {
    published.push(params);
    for (const w of waiting.filter((w) => w.version === params.version)) w.resolve(params);
  });
  const diagnosticsOf = (version) => {
    const already = published.find((p) => p.version === version);
    if (already) return Promise.resolve(already);
    return within(
      "the diagnostics of version " + version,
      new Promise((resolve) => waiting.push({ version, resolve }))
    );
  };
  connection.listen();

  const init = await within(
    "todo_server's initialize",
    connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: {
        general: { positionEncodings: ["utf-16"] },
        textDocument: { publishDiagnostics: { versionSupport: true } },
      },
    })
  );
  assert.deepStrictEqual(init, {
    capabilities: {
      positionEncoding: "utf-16",
      textDocumentSync: { openClose: true, change: 2 },
      hoverProvider: true,
    },
    serverInfo: { name: "todo", version: "1.0" },
  });
  connection.sendNotification("initialized", {});

  const todo = (line, start) => ({
    range: { start: { line, character: start }, end: { line, character: start + 4 } },
    severity: 2,
    source: "todo",
    message: "TODO found",
  });
  connection.sendNotification("textDocument/didOpen", {
    textDocument: { uri, languageId: "plaintext", version: 1, text: "a😀b\r\nTODO" },
  });
  assert.deepStrictEqual(await diagnosticsOf(1), { uri, version: 1, diagnostics: [todo(1, 0)] });

  // "TODO " after the 😀 (two UTF-16 units: "b" is at 3), and "x" before line 1's TODO.
  connection.sendNotification("textDocument/didChange", {
    textDocument: { uri, version: 2 },
    contentChanges: [
      { range: { start: { line: 0, character: 3 }, end: { line: 0, character: 3 } }, text: "TODO " },
      { range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } }, text: "x" },
    ],
  });
  const hover = (line) =>
    connection.sendRequest("textDocument/hover", {
      textDocument: { uri },
      position: { line, character: 0 },
    });
  // Sent right behind the change, before its diagnostics arrive.
  const hovers = await within("the hovers", Promise.all([hover(0), hover(1), hover(2)]));
  const answer = (value) => ({ contents: { kind: "plaintext", value } });
  assert.deepStrictEqual(hovers, [answer("version 2: a😀TODO b"), answer("version 2: xTODO"), null]);
  assert.deepStrictEqual(await diagnosticsOf(2), {
    uri,
    version: 2,
    diagnostics: [todo(0, 3), todo(1, 1)],
  });
  const exit = await shutDown(server, "todo_server");
  return { encoding: init.capabilities.positionEncoding, published: published.map((p) => p.version), exit };
}

async function contextServer(path) {
  const server = start(path);
  const { connection } = server;
  const seen = { configuration: [], logs: [], progress: [] };
  connection.onRequest("workspace/configuration", (params) => {
    seen.configuration.push(params);
    return ["Howdy"];
  });
  connection.onNotification("window/logMessage", (params) => seen.logs.push(params));
  connection.onNotification("$/progress", (params) => seen.progress.push(params));
  connection.listen();

  const init = await within(
    "context_server's initialize",
    connection.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {} })
  );
  if (init.serverInfo.name !== "context") fail("initialize: " + JSON.stringify(init));
  connection.sendNotification("initialized", {});

  const greeting = await within(
    "custom/greet",
    connection.sendRequest("custom/greet", { name: "Ada", workDoneToken: "greet-1" })
  );
  if (greeting !== "Howdy, Ada!") fail("greet answered " + JSON.stringify(greeting));
  if (seen.configuration.length !== 1) fail("configuration asked " + seen.configuration.length + " times");
  if (seen.configuration[0].items[0].section !== "greeting") fail("configuration params");
  if (seen.logs.length !== 1 || seen.logs[0].message !== "greeting Ada") fail("logs " + JSON.stringify(seen.logs));
  const kinds = seen.progress.map((p) => p.token + ":" + p.value.kind);
  assert.deepStrictEqual(kinds, ["greet-1:begin", "greet-1:report", "greet-1:end"]);
  assert.strictEqual(seen.progress[0].value.title, "greeting");
  assert.strictEqual(seen.progress[1].value.percentage, 50);

  // Cancelled through vscode-jsonrpc's own `$/cancelRequest`.
  const source = new rpc.CancellationTokenSource();
  const slow = connection.sendRequest("custom/greet", { name: "Bob", waitMs: 30000 }, source.token);
  setTimeout(() => source.cancel(), 300);
  let cancelled = null;
  try {
    await within("the cancelled request's answer", slow);
    fail("the cancelled request was answered with a result");
  } catch (e) {
    cancelled = e.code;
  }
  // LSP's RequestCancelled.
  if (cancelled !== -32800) fail("cancelled with code " + cancelled);

  const exit = await shutDown(server, "context_server");
  if (!server.stderr.includes("greet: cancelled")) {
    fail("the handler did not see the cancellation: " + server.stderr);
  }
  return { cancelled, progress: seen.progress.map((p) => p.value.kind), exit };
}

(async () => {
  const todo = await todoServer(process.argv[2]);
  const context = await contextServer(process.argv[3]);
  console.log(JSON.stringify({ ok: true, todo, context }));
  process.exit(0);
})().catch((e) => fail(String(e && e.stack ? e.stack : e)));
