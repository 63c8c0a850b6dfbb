#!/usr/bin/env bash
# Instructions per MCP `tools/call` of one server binary, counted by callgrind: the
# server runs under valgrind, a Python client (http.client, keep-alive, one call at a
# time) initializes a session and makes 50 calls to warm up, the counters are zeroed, it
# makes N calls, and the counters are dumped. User-space instructions only (the kernel's
# loopback TCP is not counted); repeatable whatever else the machine is doing.
#
#   cd loadgen && cargo build --release --bins
#   callgrind/mcp.sh target/release/mcp-sansrpc-server json 1000
#   callgrind/mcp.sh target/release/mcp-rmcp-server sse 1000
#   callgrind/mcp.sh target/release/sansrpc-axum-server json 1000
#   callgrind/mcp.sh target/release/mcp-axum-floor-server json 1000
set -euo pipefail
bin=$1 mode=$2 n=$3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=$(mktemp -d)/callgrind.out
coproc SRV { exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$mode" 2>/dev/null; }
read -r addr <&"${SRV[0]}"
addr=${addr#http://}
addr=${addr%/mcp}
# (bash warns that the server's coproc still runs: it is meant to.)
exec 3>&2 2>/dev/null
coproc CLI { exec python3 "$here/mcp_client.py" "$addr" "$n" 2>&3; }
exec 2>&3
read -r _warm <&"${CLI[0]}"
callgrind_control -z "$SRV_PID" >/dev/null 2>&1
echo go >&"${CLI[1]}"
read -r _done <&"${CLI[0]}"
callgrind_control -d "$SRV_PID" >/dev/null 2>&1
# The dump is written as the command is served.
for _ in $(seq 1 50); do
  ls "$out".* >/dev/null 2>&1 && break
  sleep 0.1
done
total=$(grep -h "^summary:\|^totals:" "$out".* | tail -1 | awk '{print $2}')
echo "$(basename "$bin") $mode: $total instructions for $n calls, $((total / n)) per call"
kill "$SRV_PID" 2>/dev/null || true
rm -rf "$(dirname "$out")"
