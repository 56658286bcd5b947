#!/usr/bin/env bash
# The relay's cost per chunk in user-space instructions (callgrind counts instructions, not seconds:
# the same figure on a busy machine as on a quiet one), for a paced stream (one event per read) and
# a fast one (many events per read), for this build and, with SLUICE_BASELINE, the previous binary.
# Each figure is the difference between a long and a short flood through `sluice serve --threads 1`
# under valgrind, so start-up and shutdown cancel out.
#
#   bash bench/per_chunk.sh                                    # ~3 minutes
#   SLUICE_BASELINE=/path/to/old/sluice bash bench/per_chunk.sh
#
# FLOOD_ARGS adds flags to every flood (e.g. "--path /v1/responses" for Responses streams).
# MESSAGES=1 adds target `messages`: this build with the same upstream streams asked for through
# the Anthropic Messages API (flood --path /v1/messages), so the translating relay's cost per chunk
# reads against the plain relay's in the same run.
# TRACE_RATIO=R gives this build (not the baseline) traces: a collector (bench/otlp_sink.py) and
# --trace-endpoint at it with --trace-sample-ratio R (1: every stream's spans exported, 0: none).
# Env: SLUICE (build/sluice, built when missing and NO_BUILD is not 1), SLUICE_BASELINE, REQUESTS
# (20: the long flood's extra requests), PACED_TOKENS (50), PACED_DELAY (20ms), FAST_TOKENS (2000),
# OUT (bench/out/per-chunk-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

: "${SLUICE:=build/sluice}" "${NO_BUILD:=0}" "${REQUESTS:=20}" "${PACED_TOKENS:=50}" "${PACED_DELAY:=20ms}"
: "${FAST_TOKENS:=2000}"
command -v valgrind >/dev/null || bench_die "valgrind is needed (apt-get install valgrind)"
bench_build_sluice "$NO_BUILD" "$SLUICE"
bench_workdirs per-chunk "$SLUICE"
BASE_BIN=""
if [ -n "${SLUICE_BASELINE:-}" ]; then
  mkdir -p "$BENCH_TMP/baseline"
  BASE_BIN=$(bench_private_copy "$SLUICE_BASELINE" "$BENCH_TMP/baseline")
fi

bench_trace_flags "$OUT"

# instructions BIN SIM_PORT CONCURRENCY REQUESTS [FLOOD FLAGS] -> the program's total instructions for that flood
instructions() {
  local bin=$1 sim=$2 conc=$3 n=$4 extra=${5:-} flags=()
  [ "$bin" = "$BIN" ] && flags=("${trace_flags[@]}")
  # shellcheck disable=SC2086  # FLOOD_ARGS and extra are lists of flags
  bench_callgrind_flood "$OUT/cg-$n.log" "$bin" "$sim" "${flags[@]}" -- --concurrency "$conc" --requests "$n" ${FLOOD_ARGS:-} $extra
}

# per_chunk NAME BIN TOKENS DELAY CONCURRENCY [FLOOD FLAGS]
per_chunk() {
  local name=$1 bin=$2 tokens=$3 delay=$4 conc=$5 extra=${6:-} sim_port small large
  sim_port=$(bench_free_port)
  bench_spawn "$OUT/sim-$name.log" "$BIN" sim --listen 127.0.0.1:"$sim_port" --threads 1 --tokens "$tokens" \
    --token-delay "$delay" --ttft 0s
  local sim_pid=$BENCH_LAST_PID
  bench_wait_tcp "$sim_port" "$sim_pid" || bench_die "sim did not start"
  small=$(instructions "$bin" "$sim_port" "$conc" 4 "$extra")
  large=$(instructions "$bin" "$sim_port" "$conc" $((4 + REQUESTS)) "$extra")
  bench_stop "$sim_pid"
  echo $(( (large - small) / (REQUESTS * tokens) ))
}

results=()
for target in sluice messages baseline; do
  bin=$BIN extra=""
  if [ "$target" = baseline ]; then
    [ -n "$BASE_BIN" ] || continue
    bin=$BASE_BIN
  fi
  if [ "$target" = messages ]; then
    [ "${MESSAGES:-0}" = 1 ] || continue
    extra="--path /v1/messages"
  fi
  paced=$(per_chunk "$target-paced" "$bin" "$PACED_TOKENS" "$PACED_DELAY" 50 "$extra")
  fast=$(per_chunk "$target-fast" "$bin" "$FAST_TOKENS" 0s 4 "$extra")
  bench_log "$target: paced $paced, fast $fast instructions per chunk"
  results+=("$target $paced $fast")
done

{
  echo "| Target | paced stream ($PACED_TOKENS tokens, $PACED_DELAY apart) | fast stream ($FAST_TOKENS tokens, no delay) |"
  echo "|---|---|---|"
  for r in "${results[@]}"; do
    read -r t p f <<<"$r"
    echo "| $t | $p | $f |"
  done
  echo
  echo "User-space instructions per relayed chunk (callgrind, sluice --threads 1, $REQUESTS requests' difference)."
} | tee "$OUT/report.md"
