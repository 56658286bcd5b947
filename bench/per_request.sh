#!/usr/bin/env bash
# Cost of one request through the proxy, the part of added TTFT that is not the relay: 1-token
# streams from `sluice sim` (no delay), so each request is mostly accept, parse, upstream
# exchange, head and one write. Measured in one invocation against sluice and nginx (a plain SSE
# pass-through, bench/nginx.conf.template), alternated per repetition:
#   - CPU per request: utime+stime of the proxy's processes (from /proc) over the flood / requests
#   - TTFT p50 / p99 as the load generator sees it, and direct to the simulator for reference
#   - with STRACE=1: system calls per request (strace -c -f on the proxy's processes)
#   - with CALLGRIND=1: sluice's user-space instructions per request (valgrind, --threads 1;
#     the difference between a short and a long flood, so start-up cancels out)
#
#   bash bench/per_request.sh                  # ~1 minute
#   SLUICE_BASELINE=/path/to/old/sluice bash bench/per_request.sh   # adds target `baseline`, the
#                                              previous binary, alternated with the new one
#   REPEAT=5 CONCURRENCY=1 bash bench/per_request.sh
#
# TRACE_RATIO=R gives this build (not the baseline) traces: a collector (bench/otlp_sink.py) and
# --trace-endpoint at it with --trace-sample-ratio R (1: every request's spans exported, 0: none).
# Env: SLUICE (build/sluice, built when missing and NO_BUILD is not 1), NGINX (/usr/sbin/nginx),
# REPEAT (3), CONCURRENCY (8), REQUESTS (20000), THREADS (2: sluice threads, nginx workers),
# OUT (bench/out/per-request-<time>), SLUICE_BASELINE (a previous binary, target `baseline`),
# PROXY_CPUS / LOAD_CPUS (taskset lists: the proxies on the first, simulator and load on the second).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
trap bench_cleanup EXIT

: "${SLUICE:=build/sluice}" "${NGINX:=/usr/sbin/nginx}" "${REPEAT:=3}" "${CONCURRENCY:=8}" "${REQUESTS:=20000}"
: "${THREADS:=2}" "${NO_BUILD:=0}" "${STRACE:=0}" "${CALLGRIND:=0}"
: "${OUT:=bench/out/per-request-$(date +%Y%m%d-%H%M%S)}"
bench_build_sluice "$NO_BUILD" "$SLUICE"
mkdir -p "$OUT"
BENCH_TMP=$(mktemp -d)
bench_raise_nofile >/dev/null
BIN=$(bench_private_copy "$SLUICE" "$BENCH_TMP")
bench_pins

sim_port=$(bench_free_port) sluice_port=$(bench_free_port) nginx_port=$(bench_free_port)
bench_trace_flags "$OUT"
bench_spawn "$OUT/sim.log" "${LOAD_PIN[@]}" "$BIN" sim --listen 127.0.0.1:$sim_port --threads 2 --tokens 1
bench_wait_tcp "$sim_port" "$BENCH_LAST_PID" || bench_die "sim did not start"
bench_spawn "$OUT/sluice.log" "${PROXY_PIN[@]}" "$BIN" serve --listen 127.0.0.1:$sluice_port --upstream http://127.0.0.1:$sim_port \
  --threads "$THREADS" --max-streams 4000 --queue-depth 4000 --log-level warn "${trace_flags[@]}"
sluice_pid=$BENCH_LAST_PID
bench_wait_tcp "$sluice_port" "$sluice_pid" || bench_die "sluice did not start"
targets="direct:$sim_port sluice:$sluice_port"
baseline_pid=""
if [ -n "${SLUICE_BASELINE:-}" ]; then
  mkdir -p "$BENCH_TMP/baseline"
  BASE_BIN=$(bench_private_copy "$SLUICE_BASELINE" "$BENCH_TMP/baseline")
  baseline_port=$(bench_free_port)
  bench_spawn "$OUT/baseline.log" "${PROXY_PIN[@]}" "$BASE_BIN" serve --listen 127.0.0.1:$baseline_port --upstream http://127.0.0.1:$sim_port \
    --threads "$THREADS" --max-streams 4000 --queue-depth 4000 --log-level warn
  baseline_pid=$BENCH_LAST_PID
  bench_wait_tcp "$baseline_port" "$baseline_pid" || bench_die "the baseline sluice did not start"
  targets="$targets baseline:$baseline_port"
fi
if [ -x "$NGINX" ]; then
  bench_nginx_conf "$BENCH_TMP/nginx" "$THREADS" "$(ulimit -n)" "$nginx_port" "$sim_port" reuseport
  bench_spawn "$OUT/nginx.log" "${PROXY_PIN[@]}" "$NGINX" -p "$BENCH_TMP/nginx" -e "$BENCH_TMP/nginx/err.log" -c "$BENCH_TMP/nginx/nginx.conf"
  nginx_pid=$BENCH_LAST_PID
  bench_wait_tcp "$nginx_port" "$nginx_pid" && targets="$targets nginx:$nginx_port"
else
  bench_log "no nginx at $NGINX: sluice and direct only"
fi

# The pids of a proxy: the process and its children (nginx's workers).
tree_pids() { echo "$1 $(pgrep -P "$1" | tr '\n' ' ')"; }
# utime+stime in clock ticks, summed over the pids.
cpu_ticks() {
  local s=0 p
  for p in $1; do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$s"
}
flood() {  # PORT REQUESTS OUTFILE
  "${LOAD_PIN[@]}" "$BIN" flood --target "http://127.0.0.1:$1" --concurrency "$CONCURRENCY" --requests "$2" --duration 300s \
    --json --progress=false >"$3"
}

bench_log "load $(bench_load); targets: $targets; $REPEAT x $REQUESTS requests at concurrency $CONCURRENCY"
hz=$(getconf CLK_TCK)
for rep in $(seq 1 "$REPEAT"); do
  for t in $targets; do
    name=${t%%:*} port=${t##*:}
    pids=""
    case $name in sluice) pids=$(tree_pids "$sluice_pid") ;; baseline) pids=$(tree_pids "$baseline_pid") ;; nginx) pids=$(tree_pids "$nginx_pid") ;; esac
    [ -n "$pids" ] && before=$(cpu_ticks "$pids")
    flood "$port" "$REQUESTS" "$OUT/$name-$rep.json"
    if [ -n "$pids" ]; then
      ticks=$(( $(cpu_ticks "$pids") - before ))
      echo "{\"ticks\": $ticks, \"hz\": $hz}" >"$OUT/$name-$rep.cpu.json"
    fi
    bench_log "$name #$rep done"
  done
done

if [ "$STRACE" = 1 ] && command -v strace >/dev/null; then
  for t in $targets; do
    name=${t%%:*} port=${t##*:}
    case $name in sluice) pids=$(tree_pids "$sluice_pid") ;; baseline) pids=$(tree_pids "$baseline_pid") ;; nginx) pids=$(tree_pids "$nginx_pid") ;; *) continue ;; esac
    args=(); for p in $pids; do args+=(-p "$p"); done
    strace -c -f "${args[@]}" -o "$OUT/$name.strace" & st=$!
    sleep 1
    flood "$port" 5000 "$OUT/$name-strace.json"
    kill -INT $st; wait $st 2>/dev/null || true
    calls=$(awk '$NF == "total" {print $4}' "$OUT/$name.strace")  # % seconds usecs/call calls [errors] total
    echo "{\"calls\": $calls}" >"$OUT/$name.strace.json"
  done
fi

if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
  run_cg() {  # REQUESTS [BINARY] -> prints total Ir
    local bin=${2:-$BIN} flags=()
    [ "$bin" = "$BIN" ] && flags=("${trace_flags[@]}")
    bench_callgrind_flood "$OUT/cg-$1.log" "$bin" "$sim_port" --max-streams 4000 --queue-depth 4000 "${flags[@]}" -- \
      --concurrency "$CONCURRENCY" --requests "$1" --duration 300s
  }
  small=$(run_cg 200) large=$(run_cg 2200)
  echo "{\"instructions_per_request\": $(( (large - small) / 2000 ))}" >"$OUT/callgrind.json"
  if [ -n "$baseline_pid" ]; then
    small=$(run_cg 200 "$BASE_BIN") large=$(run_cg 2200 "$BASE_BIN")
    echo "{\"instructions_per_request\": $(( (large - small) / 2000 ))}" >"$OUT/callgrind-baseline.json"
  fi
fi

node - "$OUT" "$REPEAT" <<'JS'
const fs = require("fs"), path = require("path");
const [out, rep] = [process.argv[2], Number(process.argv[3])];
const load = (f) => { try { return JSON.parse(fs.readFileSync(path.join(out, f), "utf8")); } catch { return null; } };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const rows = {};
for (const name of ["direct", "sluice", "baseline", "nginx"]) {
  const runs = [...Array(rep).keys()].map((i) => load(`${name}-${i + 1}.json`)).filter(Boolean);
  if (!runs.length) continue;
  const cpu = [...Array(rep).keys()].map((i) => load(`${name}-${i + 1}.cpu.json`)).filter(Boolean);
  const usPerReq = cpu.length ? median(cpu.map((c, i) => (c.ticks / c.hz) * 1e6 / runs[i].ok)) : null;
  const st = load(`${name}.strace.json`), stRun = load(`${name}-strace.json`);
  rows[name] = {
    ok: runs.reduce((a, r) => a + r.ok, 0), failed: runs.reduce((a, r) => a + r.failed, 0),
    rps: median(runs.map((r) => r.ok / r.wall_seconds)), p50: median(runs.map((r) => r.ttft.p50_ms)), p99: median(runs.map((r) => r.ttft.p99_ms)), usPerReq,
    syscalls: st && stRun ? st.calls / stRun.ok : null,
  };
}
const ratio = (a, b) => (a != null && b ? ` (${(a / b).toFixed(2)}x)` : "");
const n = rows.nginx || {};
console.log("| Target | ok / failed | requests/s | TTFT p50 / p99 ms | CPU us per request | syscalls per request |");
console.log("|---|---|---|---|---|---|");
for (const [name, r] of Object.entries(rows)) {
  const cpu = r.usPerReq == null ? "–" : r.usPerReq.toFixed(1) + ratio(r.usPerReq, n.usPerReq);
  const sc = r.syscalls == null ? "–" : r.syscalls.toFixed(1) + ratio(r.syscalls, n.syscalls);
  console.log(`| ${name} | ${r.ok} / ${r.failed} | ${Math.round(r.rps)}${ratio(r.rps, n.rps)} | ${r.p50.toFixed(3)} / ${r.p99.toFixed(3)} | ${cpu} | ${sc} |`);
}
const cg = load("callgrind.json"), cgb = load("callgrind-baseline.json");
if (cg) console.log(`\nsluice user-space instructions per request (callgrind, --threads 1): ${cg.instructions_per_request}` +
  (cgb ? `; the baseline binary: ${cgb.instructions_per_request} (new / old ${(cg.instructions_per_request / cgb.instructions_per_request).toFixed(3)})` : ""));
const b = rows.baseline, s = rows.sluice;
if (b && s) console.log(`\nnew / old: CPU per request ${(s.usPerReq / b.usPerReq).toFixed(3)}, TTFT p50 ${(s.p50 / b.p50).toFixed(3)}, p99 ${(s.p99 / b.p99).toFixed(3)}` +
  (s.syscalls && b.syscalls ? `, syscalls ${(s.syscalls / b.syscalls).toFixed(3)}` : ""));
JS
bench_log "raw JSON and logs in $OUT"
