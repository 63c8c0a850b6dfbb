#!/usr/bin/env bash
# Instructions of one server binary over HTTP/1.1, counted by callgrind (user space only):
# the server runs under valgrind, a Python client (`http_client.py`) warms it up, the
# counters are zeroed, the client does its work, and the counters are dumped.
#
#   C N:          per request: C keep-alive connections each POSTing one request at a
#                 time (loadgen's keep-alive scenarios), N requests in all.
#   burst CONC N: per connection: N connections that each connect, POST one request and
#                 close, CONC at a time (loadgen's burst keeps 100 at a time).
#   open C:       per connection: C connections all opened first, then one request on each,
#                 then all closed (loadgen's many-connections rows; mind the open-file limit).
#
#   cd loadgen && cargo build --release --bins
#   callgrind/http.sh 64 20000 target/release/sansrpc-server http
#   callgrind/http.sh 1000 20000 target/release/floor-server http
#   callgrind/http.sh 64 20000 target/release/sansrpc-axum-server http
#   callgrind/http.sh burst 50 2000 target/release/sansrpc-server http
#   callgrind/http.sh open 5000 target/release/floor-server http
# CALLGRIND_OUT=dir keeps the dump there (for callgrind_annotate); CACHE_SIM=yes adds
# callgrind's cache model (VG_EXTRA="--LL=2097152,16,64" sets its last level);
# VG_EXTRA="--dump-instr=yes" keeps each instruction's place, for footprint.py (the code a
# request runs, in 64-byte lines).
set -euo pipefail
case "$1" in
  burst) work=("$1" "$2" "$3"); n=$3 unit=connection; shift 3 ;;
  open) work=("$1" "$2"); n=$2 unit=connection; shift 2 ;;
  *) work=("$1" "$2"); n=$2 unit=request; shift 2 ;;
esac
bin=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir=${CALLGRIND_OUT:-$(mktemp -d)}
mkdir -p "$dir"
out=$dir/callgrind.out
# shellcheck disable=SC2086 # VG_EXTRA: words
coproc SRV { exec valgrind --tool=callgrind --cache-sim="${CACHE_SIM:-no}" ${VG_EXTRA:-} --callgrind-out-file="$out" "$@" 2>/dev/null; }
read -r addr <&"${SRV[0]}"
addr=${addr#http://}
exec 3>&2 2>/dev/null
coproc CLI { exec python3 "$here/http_client.py" "$addr" "${work[@]}" 2>&3; }
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
echo "$(basename "$bin") ${work[*]}: $total instructions for $n ${unit}s, $((total / n)) per $unit"
kill "$SRV_PID" 2>/dev/null || true
[ -n "${CALLGRIND_OUT:-}" ] || rm -rf "$dir"
