#!/usr/bin/env bash
# Instructions per JSON-RPC request over HTTP/1.1 of one server binary, counted by
# callgrind, with C keep-alive connections each POSTing one request at a time (loadgen's
# keep-alive scenarios): the server runs under valgrind, a Python client opens the
# connections and warms each up, the counters are zeroed, it makes N requests spread over
# the connections, and the counters are dumped. User-space instructions only.
#
#   cd loadgen && cargo build --release --bins
#   callgrind/http.sh 64 20000 target/release/sansrpc-server http
#   callgrind/http.sh 1000 20000 target/release/floor-server http
#   callgrind/http.sh 64 20000 target/release/sansrpc-axum-server http
# CALLGRIND_OUT=dir keeps the dump there (for callgrind_annotate).
set -euo pipefail
conns=$1 n=$2
shift 2
bin=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=${CALLGRIND_OUT:-$(mktemp -d)}
mkdir -p "$dir"
out=$dir/callgrind.out
coproc SRV { exec valgrind --tool=callgrind --cache-sim="${CACHE_SIM:-no}" --callgrind-out-file="$out" "$@" 2>/dev/null; }
read -r addr <&"${SRV[0]}"
addr=${addr#http://}
exec 3>&2 2>/dev/null
coproc CLI { exec python3 "$here/http_client.py" "$addr" "$conns" "$n" 2>&3; }
exec 2>&3
read -r _warm <&"${CLI[0]}"
callgrind_control -z "$SRV_PID" >/dev/null 2>&1
echo go >&"${CLI[1]}"
read -r _done <&"${CLI[0]}"
callgrind_control -d "$SRV_PID" >/dev/null 2>&1
for _ in $(seq 1 50); do
  ls "$out".* >/dev/null 2>&1 && break
  sleep 0.1
done
total=$(grep -h "^summary:\|^totals:" "$out".* | tail -1 | awk '{print $2}')
echo "$(basename "$bin") $conns connections: $total instructions for $n requests, $((total / n)) per request"
kill "$SRV_PID" 2>/dev/null || true
[ -n "${CALLGRIND_OUT:-}" ] || rm -rf "$dir"
