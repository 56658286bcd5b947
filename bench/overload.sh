#!/usr/bin/env bash
# Overload benchmark (issue 3): a flood far above the gateway's limits. FLOOD (5000) concurrent
# streams against `sluice serve --max-streams MAX_STREAMS (200) --memory-limit MEMORY (128MiB)` in
# front of `sluice sim` (TOKENS (32) tokens, DELAY (20ms) apart). Reports how many streams were
# accepted and completed intact, how many were refused and with what (503/429 + Retry-After are the
# only acceptable refusals), the gateway's peak RSS against its memory budget, that it still serves
# afterwards, and that it exits 0 on SIGTERM.
#
#   bash bench/overload.sh            # 5,000 streams
#   FLOOD=2000 bash bench/overload.sh
#
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
FLOOD=${FLOOD:-5000} MAX_STREAMS=${MAX_STREAMS:-200} MEMORY=${MEMORY:-128MiB} TOKENS=${TOKENS:-32} DELAY=${DELAY:-20ms}
BIN=${SLUICE_BIN:-build/sluice}
[ -x "$BIN" ] || bench_die "$BIN not found (ninja -C build sluice)"
BENCH_TMP=$(mktemp -d)
trap 'bench_cleanup; rm -rf "$BENCH_TMP"' EXIT
bench_log "descriptors: $(bench_raise_nofile); load $(bench_load)"

bench_spawn "$BENCH_TMP/sim.log" "$BIN" sim --listen 127.0.0.1:0 --threads 1 --tokens "$TOKENS" --token-delay "$DELAY"
sim_port=$(bench_wait_port "$BENCH_TMP/sim.log" "$BENCH_LAST_PID")
bench_spawn "$BENCH_TMP/gw.log" "$BIN" serve --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$sim_port" \
  --max-streams "$MAX_STREAMS" --memory-limit "$MEMORY" --log-level warn
gw=$BENCH_LAST_PID
gw_port=$(bench_wait_port "$BENCH_TMP/gw.log" "$gw")
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$gw/status"; }
base=$(rss_kib)

# Sample the gateway's RSS every 50 ms during the flood.
( peak=0; while kill -0 "$gw" 2>/dev/null; do r=$(rss_kib 2>/dev/null || echo 0); [ "${r:-0}" -gt "$peak" ] && peak=$r && echo "$peak" >"$BENCH_TMP/peak"; sleep 0.05; done ) &
sampler=$!
bench_log "flooding $FLOOD streams at 127.0.0.1:$gw_port (max-streams $MAX_STREAMS, memory-limit $MEMORY)"
start=$(date +%s%N)
"$BIN" flood --target "http://127.0.0.1:$gw_port" --concurrency "$FLOOD" --requests "$FLOOD" --model sim-1 \
  --duration 5m --json >"$BENCH_TMP/flood.json" 2>"$BENCH_TMP/flood.err" || true
took=$(( ($(date +%s%N) - start) / 1000000 ))  # ms
after=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$gw_port/v1/chat/completions" \
  -H 'content-type: application/json' -d '{"model":"sim-1","messages":[{"role":"user","content":"hi"}]}')
metrics=$(curl -s "http://127.0.0.1:$gw_port/metrics")
kill "$sampler" 2>/dev/null || true
peak=$(cat "$BENCH_TMP/peak" 2>/dev/null || echo "$base")
kill -TERM "$gw"
rc=0
wait "$gw" || rc=$?
python3 - "$BENCH_TMP/flood.json" "$base" "$peak" "$MEMORY" "$after" "$rc" "$took" "$FLOOD" "$MAX_STREAMS" <<'PY' "$metrics"
import json, re, sys
flood = json.load(open(sys.argv[1]))
base, peak = int(sys.argv[2]), int(sys.argv[3])
memory, after, rc, took, n, cap = sys.argv[4], sys.argv[5], sys.argv[6], float(sys.argv[7]) / 1000, int(sys.argv[8]), int(sys.argv[9])
metrics = sys.argv[10] if len(sys.argv) > 10 else ""
units = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
m = re.match(r"(\d+)(KiB|MiB|GiB)?$", memory)
budget = int(m.group(1)) * units.get(m.group(2) or "", 1)
statuses = flood.get("status_counts", {})
kinds = flood.get("failed_by_kind", {})
refused = {k: v for k, v in statuses.items() if not k.startswith("2")}
print(f"| streams sent at once | {n:,} (gateway --max-streams {cap}, --memory-limit {memory}) |")
print(f"| completed intact (every byte verified) | {flood.get('ok', 0):,} |")
print(f"| refused, by status | {kinds.get('status', 0):,}: {json.dumps(refused)}; Retry-After on {flood.get('retry_after_seen', 0):,} |")
other = sum(v for k, v in kinds.items() if k != "status")
print(f"| other failures (connect, truncated, malformed, error event, timeout) | {other:,} |")
print(f"| gateway RSS baseline / peak | {base/1024:.1f} / {peak/1024:.1f} MiB ({peak*1024/budget*100:.0f}% of the budget) |")
print(f"| flood wall time | {took:.1f} s |")
print(f"| a request after the flood | HTTP {after} |")
print(f"| exit status on SIGTERM | {rc} |")
for line in metrics.splitlines():
    if line.startswith("sluice_rejections_total{") and not line.endswith(" 0"):
        print(f"| `{line.split(' ')[0]}` | {line.split(' ')[1]} |")
PY
