#!/usr/bin/env bash
# Streaming relay benchmark (issue 2): the same SSE load sent to the simulator directly, through
# sluice and through nginx (a plain proxy_buffering-off pass-through), in one invocation, so every
# figure can be read as a ratio to nginx measured minutes apart on the same (shared, noisy) machine.
#
#   A  many concurrent streams   A_STREAMS (1000) streams x A_TOKENS (64) tokens, A_DELAY (20ms) apart
#   B  maximum throughput        B_STREAMS (64) streams, B_REQUESTS (256) requests x B_TOKENS (2000), no delay
#   C  many open slow streams    C_STREAMS (10000) streams x C_TOKENS (16) tokens, C_DELAY (1s) apart
#   D  A's concurrency, light    D_STREAMS (1000) streams x D_TOKENS (16) tokens, D_DELAY (250ms) apart:
#      a chunk rate a 2-core machine carries, so added TTFT is not just CPU saturation
#
# Per run: `sluice flood --json` (verifies every stream; TTFT, chunks/s), plus bench/relay_sample.mjs
# on the proxy's process tree (sum of VmRSS every 50 ms; utime+stime before/after). A proxy is
# started fresh for every run. Results (raw JSON, logs, the Markdown table) go to --out.
#
#   bash bench/relay.sh            # the full run (< ~10 min on 2 cores)
#   bash bench/relay.sh --quick    # smoke run (~1 min)
#   C_STREAMS=5000 REPEAT_A=5 bash bench/relay.sh --scenarios AC
#
#   SLUICE_BASELINE=/path/to/old/sluice bash bench/relay.sh   # adds target `baseline`: the previous
#                                   binary, alternated with the new one run by run (same flags)
#   SLUICE_BASELINE=build/sluice SLUICE_ARGS="--processes 2 --threads 1" BASELINE_ARGS="--processes 1 --threads 2" \
#     bash bench/relay.sh --threads 2  # one binary, two shapes: 2 worker processes vs 1 process of 2 threads
#
# Loopback only. Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  --quick            small sizes for a smoke run (the env vars below still win)
  --scenarios LIST   which of A, B, C, D to run, in the order given (default ABCD)
  --targets LIST     comma-separated subset of direct,sluice,baseline,nginx (default all; baseline
                     only with SLUICE_BASELINE)
  --threads N        sluice --threads and nginx worker_processes (default: nproc)
  --out DIR          results directory (default bench/out/relay-YYYYmmdd-HHMMSS)
  --no-build         use build/sluice (or $SLUICE_BIN) as it is
Env: A_STREAMS A_TOKENS A_DELAY A_RAMP REPEAT_A, B_STREAMS B_REQUESTS B_TOKENS REPEAT_B,
     C_STREAMS C_TOKENS C_DELAY C_RAMP REPEAT_C, D_STREAMS D_TOKENS D_DELAY D_RAMP REPEAT_D,
     A_DURATION B_DURATION C_DURATION D_DURATION (flood --duration caps), SIM_THREADS (1), THREADS, NGINX (/usr/sbin/nginx),
     NGINX_REUSEPORT (1), SLUICE_BIN (build/sluice), SLUICE_ARGS (extra `sluice serve` flags), TOKEN_SIZE (4),
     SLUICE_BASELINE (a previous sluice binary to compare with, run as target `baseline`),
     BASELINE_ARGS (flags for target `baseline` only, after SLUICE_ARGS: compares two configurations),
     PROXY_CPUS LOAD_CPUS (taskset CPU lists: the proxy on the first, simulator and load on the second)
EOF
}

QUICK=0 NO_BUILD=0 SCENARIOS=ABCD TARGETS=direct,sluice,nginx OUT=""
[ -n "${SLUICE_BASELINE:-}" ] && TARGETS=direct,sluice,baseline,nginx
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --scenarios) SCENARIOS=$2; shift ;;
    --targets) TARGETS=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --no-build) NO_BUILD=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "relay.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ "$QUICK" = 1 ]; then
  : "${A_STREAMS:=200}" "${A_TOKENS:=32}" "${A_RAMP:=500ms}" "${REPEAT_A:=1}"
  : "${B_STREAMS:=16}" "${B_REQUESTS:=32}" "${B_TOKENS:=1000}" "${REPEAT_B:=1}"
  : "${C_STREAMS:=2000}" "${C_TOKENS:=6}" "${C_DELAY:=500ms}" "${C_RAMP:=1s}" "${REPEAT_C:=1}"
  : "${D_STREAMS:=200}" "${D_TOKENS:=8}" "${D_DELAY:=250ms}" "${D_RAMP:=500ms}" "${REPEAT_D:=1}"
fi
: "${A_STREAMS:=1000}" "${A_TOKENS:=64}" "${A_DELAY:=20ms}" "${A_RAMP:=1s}" "${REPEAT_A:=3}"
: "${B_STREAMS:=64}" "${B_REQUESTS:=256}" "${B_TOKENS:=2000}" "${REPEAT_B:=2}"
: "${C_STREAMS:=10000}" "${C_TOKENS:=16}" "${C_DELAY:=1s}" "${C_RAMP:=4s}" "${REPEAT_C:=1}"
: "${D_STREAMS:=1000}" "${D_TOKENS:=16}" "${D_DELAY:=250ms}" "${D_RAMP:=1s}" "${REPEAT_D:=3}"
: "${SIM_THREADS:=1}" "${THREADS:=$(nproc)}" "${TOKEN_SIZE:=4}"
: "${NGINX:=/usr/sbin/nginx}" "${NGINX_REUSEPORT:=1}" "${SLUICE_BIN:=build/sluice}" "${SLUICE_ARGS:=}"
: "${A_DURATION:=60s}" "${B_DURATION:=120s}" "${C_DURATION:=120s}" "${D_DURATION:=60s}"

command -v node >/dev/null || bench_die "node is needed (bash scripts/install-deps.sh)"
[ -x "$NGINX" ] || bench_die "$NGINX not found (bash scripts/install-deps.sh installs nginx-light)"

# --- build ---------------------------------------------------------------------------------------
bench_build_sluice "$NO_BUILD" "$SLUICE_BIN"

# --- environment -------------------------------------------------------------------------------
NOFILE=$(bench_raise_nofile)
NGINX_NOFILE=$(( NOFILE < 65536 ? NOFILE : 65536 ))
CLK_TCK=$(getconf CLK_TCK)
bench_pins
bench_workdirs relay "$SLUICE_BIN"
BASE_BIN=""
if [ -n "${SLUICE_BASELINE:-}" ]; then
  mkdir -p "$BENCH_TMP/baseline"
  BASE_BIN=$(bench_private_copy "$SLUICE_BASELINE" "$BENCH_TMP/baseline")
fi

# Configure sluice like the nginx reference: no admission limit below the scenario's stream count
# (the relay is measured, not the queue) and no per-request log lines (nginx runs access_log off).
# Only flags this binary knows are passed, so older builds still run.
serve_help=$("$BIN" serve --help 2>&1 || true)
max_streams=$(( A_STREAMS > C_STREAMS ? A_STREAMS : C_STREAMS ))
max_streams=$(( max_streams > D_STREAMS ? max_streams : D_STREAMS ))
max_streams=$(( max_streams > B_STREAMS ? max_streams : B_STREAMS ))
BENCH_SERVE_ARGS=""
grep -q -- '--max-streams' <<<"$serve_help" && BENCH_SERVE_ARGS+=" --max-streams $(( max_streams + 64 ))"
grep -q -- '--queue-depth' <<<"$serve_help" && BENCH_SERVE_ARGS+=" --queue-depth $(( max_streams + 64 ))"
grep -q -- '--log-level' <<<"$serve_help" && BENCH_SERVE_ARGS+=" --log-level warn"
SLUICE_ARGS="${BENCH_SERVE_ARGS# } $SLUICE_ARGS"
SLUICE_ARGS=${SLUICE_ARGS% }

# The load generator spreads its connections over 16 loopback source addresses where it can
# (each has its own ephemeral port range; at thousands of connections to one target the kernel's
# port search in connect() otherwise becomes the generator's main cost). Same for every target.
FLOOD_ARGS=()
"$BIN" flood --help 2>&1 | grep -q -- '--source-ips' && FLOOD_ARGS+=(--source-ips 16)

# 10,000 proxied streams need 2 descriptors each in one process: say so up front instead of
# letting it show up as unexplained failures.
need=$(( 2 * C_STREAMS + 64 ))
if [[ $SCENARIOS == *C* ]] && [ "$NOFILE" -lt "$need" ]; then
  bench_log "note: descriptor limit is $NOFILE (hard); a one-process proxy needs ~$need for $C_STREAMS streams"
fi

cat >"$OUT/config.json" <<EOF
{"quick": $QUICK, "threads": $THREADS, "sim_threads": $SIM_THREADS, "token_size": $TOKEN_SIZE, "flood_args": "${FLOOD_ARGS[*]}",
 "nofile": $NOFILE, "nginx_nofile": $NGINX_NOFILE, "nginx_reuseport": $NGINX_REUSEPORT,
 "cores": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //;s/"//g')",
 "kernel": "$(uname -r)", "nginx": "$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')",
 "sluice_commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src 2>/dev/null || echo +local-changes)",
 "binary": "$SLUICE_BIN built $(date -u -r "$SLUICE_BIN" +%FT%TZ), sha256 $(sha256sum "$BIN" | cut -c1-12)",
 "baseline": "${SLUICE_BASELINE:+$SLUICE_BASELINE, sha256 $(sha256sum "$BASE_BIN" | cut -c1-12)}",
 "sluice_args": "$SLUICE_ARGS", "proxy_cpus": "${PROXY_CPUS:-}", "load_cpus": "${LOAD_CPUS:-}", "started": "$(date -u +%FT%TZ)", "load_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "scenarios": "$SCENARIOS", "targets": "$TARGETS",
 "A": {"streams": $A_STREAMS, "tokens": $A_TOKENS, "delay": "$A_DELAY", "ramp": "$A_RAMP", "repeat": $REPEAT_A},
 "B": {"streams": $B_STREAMS, "requests": $B_REQUESTS, "tokens": $B_TOKENS, "delay": "0s", "repeat": $REPEAT_B},
 "C": {"streams": $C_STREAMS, "tokens": $C_TOKENS, "delay": "$C_DELAY", "ramp": "$C_RAMP", "repeat": $REPEAT_C},
 "D": {"streams": $D_STREAMS, "tokens": $D_TOKENS, "delay": "$D_DELAY", "ramp": "$D_RAMP", "repeat": $REPEAT_D}}
EOF

bench_log "results in $OUT; fd limit $NOFILE; sluice --threads $THREADS $SLUICE_ARGS; nginx workers $THREADS; load $(bench_load)"

# --- one scenario ------------------------------------------------------------------------------
SIM_PID="" SIM_PORT=""
start_sim() {  # tokens delay
  bench_spawn "$OUT/sim-$SCEN.log" "${LOAD_PIN[@]}" "$BIN" sim --listen 127.0.0.1:0 --threads "$SIM_THREADS" \
    --tokens "$1" --token-delay "$2" --ttft 0s --token-size "$TOKEN_SIZE"
  SIM_PID=$BENCH_LAST_PID
  SIM_PORT=$(bench_wait_port "$OUT/sim-$SCEN.log" "$SIM_PID") || bench_die "sim did not start"
}

# Starts the target; sets T_PID and T_PORT.
start_target() {
  local target=$1 logf=$2
  case $target in
    direct) T_PID=$SIM_PID T_PORT=$SIM_PORT ;;
    sluice|baseline)
      local bin=$BIN extra=""
      [ "$target" = baseline ] && bin=$BASE_BIN extra=${BASELINE_ARGS:-}
      [ -n "$bin" ] || bench_die "target baseline needs SLUICE_BASELINE"
      OPENAI_API_KEY=sk-bench-not-a-real-key bench_spawn "$logf" "${PROXY_PIN[@]}" "$bin" serve \
        --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$SIM_PORT" --threads "$THREADS" $SLUICE_ARGS $extra
      T_PID=$BENCH_LAST_PID
      T_PORT=$(bench_wait_port "$logf" "$T_PID") || bench_die "sluice serve did not start"
      ;;
    nginx)
      local dir=$BENCH_TMP/nginx-$SCEN-$RUN reuse=""
      [ "$NGINX_REUSEPORT" = 1 ] && reuse=reuseport
      T_PORT=$(bench_free_port)
      bench_nginx_conf "$dir" "$THREADS" "$NGINX_NOFILE" "$T_PORT" "$SIM_PORT" "$reuse"
      cp "$dir/nginx.conf" "$OUT/nginx-$SCEN.conf"
      bench_spawn "$logf" "${PROXY_PIN[@]}" "$NGINX" -p "$dir" -e "$dir/nginx-error.log" -c "$dir/nginx.conf"
      T_PID=$BENCH_LAST_PID
      bench_wait_tcp "$T_PORT" "$T_PID" || { cat "$logf" "$dir/nginx-error.log" >&2; bench_die "nginx did not start"; }
      # wait for all workers (the listening socket may be up before the last one forked)
      local i
      for i in $(seq 1 100); do
        [ "$(cat /proc/"$T_PID"/task/*/children 2>/dev/null | wc -w)" -ge "$THREADS" ] && break
        sleep 0.05
      done
      ;;
  esac
}

# run_one TARGET REP FLOOD-ARGS...
run_one() {
  local target=$1 rep=$2; shift 2
  local base="$OUT/$SCEN-$target-$rep" rc=0 alive=1 exit_rc=0 load0 load1
  RUN=$rep
  start_target "$target" "$base.server.log"
  sleep 0.3
  load0=$(bench_load)
  "${LOAD_PIN[@]}" node bench/relay_sample.mjs "$T_PID" "$base.proc.json" 50 "$CLK_TCK" >"$base.sampler.log" 2>&1 &
  local spid=$!
  BENCH_PIDS+=("$spid")
  for _ in $(seq 1 100); do grep -q ready "$base.sampler.log" 2>/dev/null && break; sleep 0.05; done
  "${LOAD_PIN[@]}" "$BIN" flood --target "http://127.0.0.1:$T_PORT" --model sim-1 --pid "$T_PID" --json "${FLOOD_ARGS[@]}" "$@" \
    >"$base.flood.json" 2>"$base.flood.err" || rc=$?
  bench_stop "$spid"
  load1=$(bench_load)
  if [ "$target" != direct ]; then
    kill -0 "$T_PID" 2>/dev/null || alive=0
    if [ "$alive" = 1 ]; then
      kill -TERM "$T_PID" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$T_PID" 2>/dev/null || break; sleep 0.1; done
    fi
    wait "$T_PID" 2>/dev/null || exit_rc=$?
    bench_stop "$T_PID"
  fi
  printf '{"scenario":"%s","target":"%s","rep":%s,"flood_rc":%s,"alive_after":%s,"exit_rc":%s,"load_before":%s,"load_after":%s}\n' \
    "$SCEN" "$target" "$rep" "$rc" "$alive" "$exit_rc" "$load0" "$load1" >"$base.meta.json"
  local summary
  summary=$(node -e '
    const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
    console.log(`ok ${r.ok} failed ${r.failed} open ${r.peak_open_streams} chunks/s ${Math.round(r.chunks_per_second)} ttft p50 ${r.ttft.p50_ms.toFixed(2)} p99 ${r.ttft.p99_ms.toFixed(2)} ms`)' \
    "$base.flood.json" 2>/dev/null || echo "no report (flood rc $rc): $(tail -c 300 "$base.flood.err")")
  bench_log "$SCEN $target #$rep: $summary$([ "$alive" = 0 ] && echo ' PROXY DIED')"
  sleep 0.5
}

# Runs every target REPEAT times, rotating the order so drift in the machine's load hits all alike.
run_targets() {
  local repeat=$1; shift
  local -a ts
  IFS=, read -r -a ts <<<"$TARGETS"
  local rep i n=${#ts[@]}
  for rep in $(seq 1 "$repeat"); do
    for i in $(seq 0 $((n - 1))); do
      run_one "${ts[$(( (i + rep - 1) % n ))]}" "$rep" "$@"
    done
  done
}

t0=$SECONDS
for SCEN in $(echo "$SCENARIOS" | grep -o .); do
  case $SCEN in
    A)
      bench_log "scenario A: $A_STREAMS streams x $A_TOKENS tokens, $A_DELAY apart (ramp $A_RAMP), x$REPEAT_A"
      start_sim "$A_TOKENS" "$A_DELAY"
      run_targets "$REPEAT_A" --concurrency "$A_STREAMS" --requests "$A_STREAMS" --ramp "$A_RAMP" --duration "$A_DURATION"
      ;;
    B)
      bench_log "scenario B: $B_STREAMS streams, $B_REQUESTS requests x $B_TOKENS tokens, no delay, x$REPEAT_B"
      start_sim "$B_TOKENS" 0s
      run_targets "$REPEAT_B" --concurrency "$B_STREAMS" --requests "$B_REQUESTS" --duration "$B_DURATION"
      ;;
    C)
      bench_log "scenario C: $C_STREAMS streams x $C_TOKENS tokens, $C_DELAY apart (ramp $C_RAMP), x$REPEAT_C"
      start_sim "$C_TOKENS" "$C_DELAY"
      run_targets "$REPEAT_C" --concurrency "$C_STREAMS" --requests "$C_STREAMS" --ramp "$C_RAMP" --duration "$C_DURATION"
      ;;
    D)
      bench_log "scenario D: $D_STREAMS streams x $D_TOKENS tokens, $D_DELAY apart (ramp $D_RAMP), x$REPEAT_D"
      start_sim "$D_TOKENS" "$D_DELAY"
      run_targets "$REPEAT_D" --concurrency "$D_STREAMS" --requests "$D_STREAMS" --ramp "$D_RAMP" --duration "$D_DURATION"
      ;;
    *) bench_die "unknown scenario $SCEN" ;;
  esac
  bench_stop "$SIM_PID"
done

bench_log "done in $((SECONDS - t0)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
node bench/relay_report.mjs "$OUT" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/report.md"
