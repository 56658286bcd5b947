#!/usr/bin/env bash
# User-space instructions per relayed chunk and per request, counted by callgrind for fixed
# scenarios, and the guard CI runs against them (issue 31). Instructions do not depend on how busy
# the machine is, as time does, so a budget on them holds on a shared CI machine.
#
#   bash bench/instructions.sh                                   # the figures, ~2 minutes
#   bash bench/instructions.sh --check bench/instruction_budget.txt
#                                  # and exit 1 when a figure is over its budget (ctest perf.instructions)
#   SLUICE_BASELINE=/path/to/old/sluice bash bench/instructions.sh   # the previous binary beside it
#
# Scenarios, each through `sluice serve --threads 1` under valgrind in front of `sluice sim`, each
# figure the difference between a long and a short flood (start-up and shutdown cancel out):
#   paced_chunk   8 streams at a time of 32 tokens 20 ms apart: one event per read and per write,
#                 the wake-up of a paced stream (light enough that valgrind never falls behind and
#                 lets events pile up into one read); each chunk carries 1/32 of its request's own
#                 cost (about 2,800 of the figure), as a real 32-token stream does
#   fast_chunk    4 streams at a time of 2,000 tokens with no delay: many events per read
#   request       1-token streams, 8 at a time: accept, parse, upstream exchange, head, one write
#   messages_chunk  paced_chunk's streams asked for as the Anthropic Messages API (/v1/messages):
#                 the translating relay (issue 33), the request's translation in its 1/32 share
#   anthropic_upstream_chunk  paced_chunk's streams asked for as chat completions of an upstream
#                 of `dialect: anthropic` (the simulator's /v1/messages): the body filter that turns
#                 Messages events into chat chunks before the relay reads them (ADR 0025)
# Env: SLUICE (build/sluice), NO_BUILD (0), SLUICE_BASELINE, OUT (bench/out/instructions-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

CHECK=""
while [ $# -gt 0 ]; do
  case $1 in
    --check) CHECK=$2; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bench_die "unknown argument $1" ;;
  esac
  shift
done
: "${SLUICE:=build/sluice}" "${NO_BUILD:=0}"
command -v valgrind >/dev/null || bench_die "valgrind is needed (apt-get install valgrind)"
[ -z "$CHECK" ] || [ -f "$CHECK" ] || bench_die "no budget file $CHECK"
bench_build_sluice "$NO_BUILD" "$SLUICE"
bench_workdirs instructions "$SLUICE"
BASE_BIN=""
if [ -n "${SLUICE_BASELINE:-}" ]; then
  mkdir -p "$BENCH_TMP/baseline"
  BASE_BIN=$(bench_private_copy "$SLUICE_BASELINE" "$BENCH_TMP/baseline")
fi

# per_unit NAME BIN SIM_FLAGS CONCURRENCY SHORT LONG UNITS_PER_REQUEST [FLOOD_FLAGS] [DIALECT]
#   -> instructions per unit (DIALECT: the upstream's, openai by default)
per_unit() {
  local name=$1 bin=$2 sim_flags=$3 conc=$4 short=$5 long=$6 units=$7 flood_flags=${8:-} dialect=${9:-openai}
  local sim_port small large upstream
  sim_port=$(bench_free_port)
  # shellcheck disable=SC2086  # sim_flags is a list of flags
  bench_spawn "$OUT/sim-$name.log" "$BIN" sim --listen 127.0.0.1:"$sim_port" --threads 1 --ttft 0s $sim_flags
  local sim_pid=$BENCH_LAST_PID
  bench_wait_tcp "$sim_port" "$sim_pid" || bench_die "sim did not start"
  upstream=("$sim_port")
  if [ "$dialect" != openai ]; then  # the simulator as an upstream of that dialect
    printf 'upstreams:\n  - url: http://127.0.0.1:%s\n    dialect: %s\n' "$sim_port" "$dialect" >"$OUT/$name.yaml"
    upstream=(- --config "$OUT/$name.yaml")
  fi
  # shellcheck disable=SC2086  # flood_flags is a list of flags
  small=$(bench_callgrind_flood "$OUT/$name-short.log" "$bin" "${upstream[@]}" -- --concurrency "$conc" --requests "$short" $flood_flags)
  # shellcheck disable=SC2086
  large=$(bench_callgrind_flood "$OUT/$name-long.log" "$bin" "${upstream[@]}" -- --concurrency "$conc" --requests "$long" $flood_flags)
  bench_stop "$sim_pid"
  [[ $small =~ ^[0-9]+$ && $large =~ ^[0-9]+$ && $large -gt $small ]] ||
    bench_die "$name: no instruction totals from callgrind (short '$small', long '$large'; see $OUT/$name-*.log)"
  echo $(( (large - small) / ((long - short) * units) ))
}

measure() {  # TARGET BIN -> lines "TARGET FIGURE VALUE"
  local t=$1 bin=$2
  echo "$t paced_chunk $(per_unit "$t-paced" "$bin" "--tokens 32 --token-delay 20ms" 8 8 24 32)"
  echo "$t fast_chunk $(per_unit "$t-fast" "$bin" "--tokens 2000 --token-delay 0s" 4 4 12 2000)"
  echo "$t request $(per_unit "$t-request" "$bin" "--tokens 1 --token-delay 0s" 8 200 1200 1)"
  echo "$t messages_chunk $(per_unit "$t-messages" "$bin" "--tokens 32 --token-delay 20ms" 8 8 24 32 "--path /v1/messages")"
  echo "$t anthropic_upstream_chunk $(per_unit "$t-anthropic" "$bin" "--tokens 32 --token-delay 20ms" 8 8 24 32 "" anthropic)"
}

bench_log "callgrind: this build${BASE_BIN:+ and the baseline}; load $(bench_load)"
measure sluice "$BIN" | tee "$OUT/figures.txt"
[ -z "$BASE_BIN" ] || measure baseline "$BASE_BIN" | tee -a "$OUT/figures.txt"

# The report, with new / old and the budget where there is one.
budget_of() { [ -n "$CHECK" ] && awk -v k="$1" '$1 == k {print $2}' "$CHECK"; }
over=0
{
  echo "| figure | sluice | baseline | new / old | budget |"
  echo "|---|---|---|---|---|"
  for f in paced_chunk fast_chunk request messages_chunk anthropic_upstream_chunk; do
    new=$(awk -v f="$f" '$1 == "sluice" && $2 == f {print $3}' "$OUT/figures.txt")
    old=$(awk -v f="$f" '$1 == "baseline" && $2 == f {print $3}' "$OUT/figures.txt")
    ratio=$([ -n "$old" ] && awk -v a="$new" -v b="$old" 'BEGIN {printf "%.3f", a / b}' || echo "–")
    budget=$(budget_of "$f" || true)
    echo "| $f | $new | ${old:-–} | $ratio | ${budget:-–} |"
    if [ -n "$CHECK" ]; then
      [[ $budget =~ ^[0-9]+$ ]] || bench_die "$CHECK has no budget for $f"
      [[ $new =~ ^[0-9]+$ ]] && [ "$new" -le "$budget" ] || over=1  # a figure missing fails too
    fi
  done
  echo
  echo "User-space instructions (callgrind, sluice serve --threads 1) per relayed chunk and per request."
} >"$OUT/report.md"  # not piped: over is set in this shell
cat "$OUT/report.md"
if [ -n "$CHECK" ]; then
  [ "$over" = 0 ] || bench_die "a figure is over its budget in $CHECK (see the table above): a change made the hot path" \
    "dearer; if that is its measured price, say why in docs/benchmarks.md and raise the budget"
  bench_log "every figure within its budget ($CHECK)"
fi
