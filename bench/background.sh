#!/usr/bin/env bash
# Background responses in memory mode (issue 17, docs/queue.md): JOBS background jobs created as
# fast as CONCURRENCY clients can, run by SLOTS job slots against `sluice sim` (TOKENS tokens,
# TOKEN_DELAY apart), each polled until it is final. Prints jobs per second end to end, the gateway's
# peak and final RSS, the most jobs the simulator saw at once (must not pass SLOTS), and the store's
# bytes per stored response (sluice_response_store_bytes / sluice_responses_stored) beside the RSS
# growth per response.
#
#   bash bench/background.sh                          # 10,000 jobs over 50 slots, ~1 minute
#   JOBS=2000 SLOTS=8 bash bench/background.sh
#
# Env: SLUICE (build/sluice, built when missing and NO_BUILD is not 1), JOBS (10000), SLOTS (50),
# CONCURRENCY (64), TOKENS (16), TOKEN_DELAY (0ms), THREADS (2), OUT (bench/out/background-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

: "${SLUICE:=build/sluice}" "${NO_BUILD:=0}" "${JOBS:=10000}" "${SLOTS:=50}" "${CONCURRENCY:=64}"
: "${TOKENS:=16}" "${TOKEN_DELAY:=0ms}" "${THREADS:=2}"
bench_build_sluice "$NO_BUILD" "$SLUICE"
bench_workdirs background "$SLUICE"

bench_spawn "$OUT/sim.log" "$BIN" sim --listen 127.0.0.1:0 --threads 1 --tokens "$TOKENS" --token-delay "$TOKEN_DELAY"
SIM_PID=$BENCH_LAST_PID
SIM_PORT=$(bench_wait_port "$OUT/sim.log" "$SIM_PID")
bench_spawn "$OUT/sluice.log" "$BIN" serve --listen 127.0.0.1:0 --threads "$THREADS" --upstream "http://127.0.0.1:$SIM_PORT" \
  --worker-max-jobs "$SLOTS" --jobs-max-waiting "$JOBS" --memory-responses "$((JOBS + 10))" --memory-response-bytes 2GiB \
  --log-level warn
GW_PID=$BENCH_LAST_PID
GW_PORT=$(bench_wait_port "$OUT/sluice.log" "$GW_PID")
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }

RSS0=$(rss_kib "$GW_PID")
PEAK=$RSS0
MOST=0
( while kill -0 "$GW_PID" 2>/dev/null; do
    r=$(rss_kib "$GW_PID"); [ "$r" -gt "$PEAK" ] && PEAK=$r
    m=$(metric "$SIM_PORT" 'vllm:num_requests_running{model_name="sim-1"}' | cut -d. -f1); m=${m:-0}
    [ "$m" -gt "$MOST" ] && MOST=$m
    echo "$PEAK $MOST" > "$BENCH_TMP/peak"
    sleep 0.1
  done ) &
WATCH=$!
bench_log "load: $JOBS jobs, $SLOTS job slots, $CONCURRENCY clients (load $(bench_load))"
PORT=$GW_PORT JOBS=$JOBS CONCURRENCY=$CONCURRENCY node bench/background_load.mjs > "$OUT/load.json"
kill "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true
read -r PEAK MOST < "$BENCH_TMP/peak"
RSS1=$(rss_kib "$GW_PID")
STORED=$(metric "$GW_PORT" sluice_responses_stored)
BYTES=$(metric "$GW_PORT" sluice_response_store_bytes)
python3 - "$OUT/load.json" "$RSS0" "$PEAK" "$RSS1" "$MOST" "$SLOTS" "$STORED" "$BYTES" <<'PY' | tee "$OUT/summary.txt"
import json, sys
load = json.load(open(sys.argv[1]))
rss0, peak, rss1, most, slots = (int(float(x)) for x in sys.argv[2:7])
stored, store_bytes = float(sys.argv[7] or 0), float(sys.argv[8] or 0)
print(f"jobs            {load['jobs']} ({load['statuses']})")
print(f"jobs per second {load['jobs_per_second']:.0f} end to end (creates alone: {load['jobs'] / load['create_seconds']:.0f}/s)")
print(f"upstream at once {most} (job slots {slots})")
print(f"gateway RSS     start {rss0/1024:.1f} MiB, peak {peak/1024:.1f} MiB, end {rss1/1024:.1f} MiB")
if stored:
    print(f"stored          {stored:.0f} responses, {store_bytes/stored:.0f} bytes each as counted; "
          f"RSS growth {(rss1 - rss0) * 1024 / stored:.0f} bytes per stored response")
PY
