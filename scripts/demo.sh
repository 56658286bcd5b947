#!/usr/bin/env bash
# The demo: builds if needed, starts `sluice sim` and `sluice serve` on loopback, floods the gateway
# with 1,000 concurrent streams, and prints the report (every stream verified, TTFT percentiles,
# the gateway's peak RSS). Everything it starts is stopped when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."

STREAMS=${STREAMS:-1000}
bash scripts/install-deps.sh >/dev/null
if [ ! -x build/sluice ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$(nproc)" --target sluice
else
  cmake --build build -j "$(nproc)" --target sluice >/dev/null
fi
bin=build/sluice
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# Prints the port from a "... listening on HOST:PORT" line once the process has written it.
wait_port() {
  local file=$1
  for _ in $(seq 1 200); do
    if grep -q "listening on" "$file" 2>/dev/null; then
      grep -m1 -o "listening on [0-9.]*:[0-9]*" "$file" | sed 's/.*://'
      return 0
    fi
    sleep 0.05
  done
  echo "demo: a process did not start; its output:" >&2
  cat "$file" >&2
  return 1
}

"$bin" sim --listen 127.0.0.1:0 --threads 1 --tokens 64 --token-delay 20ms --ttft 50ms >"$tmp/sim.log" 2>&1 &
pids+=($!)
sim_port=$(wait_port "$tmp/sim.log")

# The stream cap is raised above the flood so every stream runs at once (the point is bounded memory
# under full concurrency); the overload test shows what a small cap does instead.
OPENAI_API_KEY=sk-demo-not-a-real-key "$bin" serve --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$sim_port" \
  --max-streams "$((STREAMS * 2))" --log-level warn \
  >"$tmp/serve.log" 2>&1 &
gw_pid=$!
pids+=($gw_pid)
gw_port=$(wait_port "$tmp/serve.log")

echo "sluice demo: simulator on :$sim_port (64 tokens, 20 ms apart), gateway on :$gw_port (pid $gw_pid)"
echo "flooding the gateway with $STREAMS concurrent streams..."
"$bin" flood --target "http://127.0.0.1:$gw_port" --concurrency "$STREAMS" --requests "$STREAMS" \
  --model sim-1 --pid "$gw_pid" --duration 120s
