#!/usr/bin/env bash
# Instructions per newHeads notification of one server binary, counted by callgrind: the
# server runs under valgrind with a block every BLOCK_MS, S Python subscribers connect and
# subscribe, 3 s later the counters are zeroed, SECONDS later they are dumped; the
# notifications sent in the window are S x SECONDS x 1000 / BLOCK_MS. User-space
# instructions only; with CACHE_SIM=yes also callgrind's first-level cache misses (a model,
# not the machine's caches: it shows how much memory a notification touches).
#
#   cd loadgen && cargo build --release --bins
#   callgrind/heads.sh 200 500 10 target/release/heads-sansrpc-server
#   callgrind/heads.sh 200 500 10 target/release/heads-floor-server
#   CACHE_SIM=yes callgrind/heads.sh 1000 1000 10 target/release/heads-sansrpc-server
#   callgrind/heads.sh 200 500 10 target/release/heads-pubsub-server topic
# CALLGRIND_OUT=dir keeps the dump there (for callgrind_annotate --inclusive=yes).
set -euo pipefail
subscribers=$1 block_ms=$2 seconds=$3 bin=$4
mode=${5:-ethereum}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=${CALLGRIND_OUT:-$(mktemp -d)}
mkdir -p "$dir"
out=$dir/callgrind.out
export LOADGEN_BLOCK_MS=$block_ms
coproc SRV { exec valgrind --tool=callgrind --cache-sim="${CACHE_SIM:-no}" --callgrind-out-file="$out" "$bin" 2>/dev/null; }
read -r addr <&"${SRV[0]}"
log=$dir/client.out
python3 "$here/heads_client.py" "$addr" "$subscribers" $((seconds + 8)) "$mode" >"$log" &
client=$!
for _ in $(seq 1 200); do
  grep -q subscribed "$log" 2>/dev/null && break
  sleep 0.5
done
sleep 3
callgrind_control -z "$SRV_PID" >/dev/null 2>&1
sleep "$seconds"
callgrind_control -d "$SRV_PID" >/dev/null 2>&1
for _ in $(seq 1 50); do
  ls "$out".* >/dev/null 2>&1 && break
  sleep 0.1
done
wait "$client"
total=$(grep -h "^summary:\|^totals:" "$out".* | tail -1 | awk '{print $2}')
sent=$((subscribers * seconds * 1000 / block_ms))
echo "$(basename "$bin"): $total instructions for about $sent notifications, $((total / sent)) per notification ($(tail -1 "$log"))"
kill "$SRV_PID" 2>/dev/null || true
