#!/usr/bin/env bash
# Heap and RSS per open stream of `sluice serve`, and what the heap holds (issue 2's memory target).
# Starts `sluice sim` with slow streams (30 tokens, 1 s apart), `sluice serve` with the heapcount
# shim preloaded, opens N streams with `sluice flood`, and once they are all open reads the
# gateway's VmRSS and live heap. Prints per-stream figures and the size classes of which there are
# about one or more allocation per stream ("1024 x1.00" = one 1 KiB block per stream).
#
#   bash bench/heap_per_stream.sh [N=2000] [extra sluice serve flags...]
#   DIALECT=anthropic bash bench/heap_per_stream.sh   # the simulator as an upstream of that dialect
#
# The shim counts malloc'd bytes (usable size), so the heap figure excludes allocator overhead and
# fragmentation; RSS includes them. Loopback only; every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
shift || true
BIN=${SLUICE_BIN:-build/sluice}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
gcc -O2 -shared -fPIC -o "$work/heapcount.so" bench/heapcount/heapcount.c -ldl
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
wait_port() {
  for _ in $(seq 100); do
    if grep -q "listening on" "$1" 2>/dev/null; then grep -m1 -o "listening on [0-9.]*:[0-9]*" "$1" | sed 's/.*://'; return; fi
    sleep 0.1
  done
  echo "no port in $1" >&2; cat "$1" >&2; exit 1
}
"$BIN" sim --listen 127.0.0.1:0 --tokens 30 --token-delay 1s >"$work/sim.log" 2>&1 &
pids+=($!)
sim_port=$(wait_port "$work/sim.log")
upstream=(--upstream "http://127.0.0.1:$sim_port")
if [ -n "${DIALECT:-}" ]; then
  printf 'upstreams:\n  - url: http://127.0.0.1:%s\n    dialect: %s\n' "$sim_port" "$DIALECT" >"$work/upstream.yaml"
  upstream=(--config "$work/upstream.yaml")
fi
LD_PRELOAD="$work/heapcount.so" "$BIN" serve --listen 127.0.0.1:0 --threads 2 "${upstream[@]}" \
  --max-streams $((N * 2)) --log-level warn "$@" >"$work/gw.log" 2>&1 &
gw=$!
pids+=($gw)
gw_port=$(wait_port "$work/gw.log")
rss() { awk '/VmRSS/ {print $2}' "/proc/$gw/status"; }
sleep 0.5
rss0=$(rss)
kill -USR2 "$gw"
sleep 0.3
"$BIN" flood --target "http://127.0.0.1:$gw_port" --concurrency "$N" --requests "$N" --model sim-1 >"$work/flood.log" 2>&1 &
pids+=($!)
# Streams last 30 s; sample once they have all been open for a while (ramp on 2 cores: a few s).
sleep 14
rss1=$(rss)
kill -USR2 "$gw"
sleep 0.5
heap0=$(grep "heapcount: live" "$work/gw.log" | sed -n 1p | awk '{print $5}')
heap1=$(grep "heapcount: live" "$work/gw.log" | sed -n 2p | awk '{print $5}')
echo "streams: $N   RSS: ${rss0} -> ${rss1} KiB   RSS per stream: $(((rss1 - rss0) * 1024 / N)) B   heap per stream: $(((heap1 - heap0) / N)) B"
awk '/heapcount: live/ {c++} c == 2 && /heapcount: size/ {print $3, $4}' "$work/gw.log" | tr -d ':' |
  awk -v n="$N" '$2 >= n * 0.5 {printf "%d x%.2f  ", $1, $2 / n} END {print ""}'
