// A JSON-RPC server written with vscode-jsonrpc (the LSP reference implementation) over
// stdio with Content-Length framing, implementing the specification's example methods, so
// that `sansrpc check --stdio "node server.js"` can check a server not written here.
"use strict";
const rpc = require("vscode-jsonrpc/node");

const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(process.stdin),
  new rpc.StreamMessageWriter(process.stdout)
);

// vscode-jsonrpc spreads positional params over the handler's arguments, passes named
// params as one object, and adds a cancellation token as the last argument.
const params = (args) => args.slice(0, -1);
const named = (p) => p.length === 1 && p[0] !== null && typeof p[0] === "object";

connection.onRequest("subtract", (...args) => {
  const p = params(args);
  return named(p) ? p[0].minuend - p[0].subtrahend : p[0] - p[1];
});
connection.onRequest("sum", (...args) => params(args).reduce((a, b) => a + b, 0));
connection.onRequest("get_data", () => ["hello", 5]);
connection.onNotification("update", () => {});
connection.onNotification("notify_hello", () => {});
connection.onNotification("notify_sum", () => {});
connection.listen();
