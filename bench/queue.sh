#!/usr/bin/env bash
# Background responses through Redis (--queue redis, issue 17, docs/queue.md): one front and WORKERS
# worker processes around a redis-server, against `sluice sim`. Two phases:
#   1. with no worker running, JOBS background jobs are created on the front: Redis memory per
#      queued job (INFO used_memory, before and after);
#   2. the workers start (SLOTS job slots in all) and every job is polled until final: jobs per
#      second from the workers' start to the last final status, the most jobs the simulator saw at
#      once (must not pass SLOTS), Redis memory per stored response (events included), redis-server
#      CPU per job, and the front's and workers' RSS.
#
#   bash bench/queue.sh                          # 10,000 jobs, 2 workers x 25 slots, ~1 minute
#   JOBS=2000 WORKERS=1 SLOTS=8 bash bench/queue.sh
#
# Env: SLUICE (build/sluice, built when missing and NO_BUILD is not 1), JOBS (10000), WORKERS (2),
# SLOTS (50, split evenly over the workers), CONCURRENCY (64), TOKENS (16), TOKEN_DELAY (0ms),
# THREADS (2 per process), OUT (bench/out/queue-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

: "${SLUICE:=build/sluice}" "${NO_BUILD:=0}" "${JOBS:=10000}" "${WORKERS:=2}" "${SLOTS:=50}" "${CONCURRENCY:=64}"
: "${TOKENS:=16}" "${TOKEN_DELAY:=0ms}" "${THREADS:=2}"
command -v redis-server >/dev/null || bench_die "redis-server is missing: bash scripts/install-deps.sh"
bench_build_sluice "$NO_BUILD" "$SLUICE"
bench_workdirs queue "$SLUICE"

REDIS_PORT=$(bench_free_port)
bench_spawn "$OUT/redis.log" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no
REDIS_PID=$BENCH_LAST_PID
bench_wait_tcp "$REDIS_PORT" "$REDIS_PID" || bench_die "redis-server did not start"
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
used_memory() { rcli INFO memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }

bench_spawn "$OUT/sim.log" "$BIN" sim --listen 127.0.0.1:0 --threads 1 --tokens "$TOKENS" --token-delay "$TOKEN_DELAY"
SIM_PID=$BENCH_LAST_PID
SIM_PORT=$(bench_wait_port "$OUT/sim.log" "$SIM_PID")
common=(--listen 127.0.0.1:0 --threads "$THREADS" --upstream "http://127.0.0.1:$SIM_PORT" --redis "redis://127.0.0.1:$REDIS_PORT"
        --redis-command-timeout 1s --queue redis --jobs-max-waiting "$JOBS" --log-level warn)
bench_spawn "$OUT/front.log" "$BIN" serve "${common[@]}" --role front
FRONT_PID=$BENCH_LAST_PID
FRONT_PORT=$(bench_wait_port "$OUT/front.log" "$FRONT_PID")

MEM0=$(used_memory)
bench_log "phase 1: $JOBS jobs queued with no worker running (load $(bench_load))"
PORT=$FRONT_PORT JOBS=$JOBS CONCURRENCY=$CONCURRENCY PHASE=create IDS_FILE="$OUT/ids.json" \
  node bench/background_load.mjs > "$OUT/create.json"
MEM1=$(used_memory)
QUEUED=$(rcli XLEN 'sluice:{jobs}')

per_worker=$(( (SLOTS + WORKERS - 1) / WORKERS ))
WORKER_PIDS=()
REDIS_CPU0=$(cpu_ticks "$REDIS_PID")
for i in $(seq 1 "$WORKERS"); do
  bench_spawn "$OUT/worker$i.log" "$BIN" serve "${common[@]}" --role worker --worker-max-jobs "$per_worker"
  WORKER_PIDS+=("$BENCH_LAST_PID")
done
for i in $(seq 1 "$WORKERS"); do bench_wait_port "$OUT/worker$i.log" "${WORKER_PIDS[$((i - 1))]}" >/dev/null; done
MOST=0
( while kill -0 "$FRONT_PID" 2>/dev/null; do
    m=$(metric "$SIM_PORT" 'vllm:num_requests_running{model_name="sim-1"}' | cut -d. -f1); m=${m:-0}
    [ "$m" -gt "$MOST" ] && MOST=$m
    echo "$MOST" > "$BENCH_TMP/most"
    sleep 0.1
  done ) &
WATCH=$!
bench_log "phase 2: $WORKERS workers x $per_job slots run them (load $(bench_load))"
PORT=$FRONT_PORT JOBS=$JOBS CONCURRENCY=$CONCURRENCY PHASE=poll IDS_FILE="$OUT/ids.json" \
  node bench/background_load.mjs > "$OUT/load.json"
REDIS_CPU1=$(cpu_ticks "$REDIS_PID")
kill "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true
MOST=$(cat "$BENCH_TMP/most" 2>/dev/null || echo 0)
MEM2=$(used_memory)
FRONT_RSS=$(rss_kib "$FRONT_PID")
WORKER_RSS=$(for p in "${WORKER_PIDS[@]}"; do rss_kib "$p"; done | sort -n | tail -1)
CLK=$(getconf CLK_TCK)
python3 - "$OUT/load.json" "$JOBS" "$QUEUED" "$MEM0" "$MEM1" "$MEM2" "$REDIS_CPU0" "$REDIS_CPU1" "$CLK" "$MOST" "$SLOTS" \
  "$FRONT_RSS" "$WORKER_RSS" "$WORKERS" "$per_worker" <<'PY' | tee "$OUT/summary.txt"
import json, sys
load = json.load(open(sys.argv[1]))
jobs, queued, m0, m1, m2, c0, c1, clk, most, slots, front_rss, worker_rss, workers, per = (int(x) for x in sys.argv[2:16])
print(f"jobs             {jobs} ({load['statuses']}); {queued} were waiting in P{{jobs}} before the workers started")
print(f"jobs per second  {load['jobs_per_second']:.0f} from the workers' start to the last final status ({workers} workers x {per} slots)")
print(f"upstream at once {most} (job slots {slots})")
print(f"redis memory     {(m1 - m0) / jobs:.0f} bytes per queued job; {(m2 - m0) / jobs:.0f} bytes per stored response (events included)")
print(f"redis CPU        {(c1 - c0) / clk * 1e6 / jobs:.0f} us per job (take, start, events, final, polls)")
print(f"RSS              front {front_rss / 1024:.1f} MiB, largest worker {worker_rss / 1024:.1f} MiB")
PY
