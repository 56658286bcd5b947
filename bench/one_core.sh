#!/usr/bin/env bash
# Issue 31's table in one command: sluice against nginx (a plain streaming proxy) on one core, the
# proxy pinned to PROXY_CPUS and the simulator and load generator to LOAD_CPUS, in the same run.
#
#   paced   A: 1,000 streams x 64 tokens 20 ms apart: CPU per paced chunk, RSS per open stream
#   slow    C: 9,900 streams x 40 tokens 200 ms apart (all open at once): all served?, TTFT p50 / p99, RSS per stream
#   bulk    B: 64 streams, 256 requests x 2,000 tokens, no delay: chunks/s
#   small   per_request.sh: 1-token requests, 8 at a time: requests/s, CPU per request
#
#   bash bench/one_core.sh                                     # ~10 minutes on 2 cores
#   SLUICE_BASELINE=/path/to/old/sluice bash bench/one_core.sh # the previous binary beside them
#   ONLY=slow bash bench/one_core.sh                           # one of paced, slow, bulk, small
#
# Env: SLUICE (build/sluice), NO_BUILD (0), SLUICE_BASELINE, PROXY_CPUS (0), LOAD_CPUS (every
# other CPU), ONLY, OUT (bench/out/one-core-<time>), and relay.sh's A_*, B_*, C_* to resize a row.
# The report is OUT/report.md: relay.sh's table for each scenario and per_request.sh's table.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

: "${SLUICE:=build/sluice}" "${NO_BUILD:=0}" "${ONLY:=}" "${PROXY_CPUS:=0}"
: "${OUT:=bench/out/one-core-$(date +%Y%m%d-%H%M%S)}"
if [ -z "${LOAD_CPUS:-}" ]; then
  LOAD_CPUS=$(seq -s, 0 $(( $(nproc) - 1 )) | tr ',' '\n' | grep -vx "$PROXY_CPUS" | paste -sd, -)
fi
[ -n "$LOAD_CPUS" ] || bench_die "one CPU only: the load needs a CPU apart from the proxy's"
command -v taskset >/dev/null || bench_die "taskset is needed (util-linux)"
bench_build_sluice "$NO_BUILD" "$SLUICE"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
export PROXY_CPUS LOAD_CPUS NO_BUILD=1

targets=sluice,nginx
[ -n "${SLUICE_BASELINE:-}" ] && targets=sluice,baseline,nginx
wants() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

relay() {  # NAME SCENARIO
  bench_log "$1: relay.sh scenario $2 (proxy on CPU $PROXY_CPUS, load on $LOAD_CPUS)"
  SLUICE_BIN=$SLUICE THREADS=1 bash bench/relay.sh --no-build --threads 1 --scenarios "$2" \
    --targets "$targets" --out "$OUT/$1" >"$OUT/$1.log" 2>&1 || bench_die "relay.sh $2 failed (see $OUT/$1.log)"
}

wants paced && A_STREAMS=${A_STREAMS:-1000} A_TOKENS=${A_TOKENS:-64} A_DELAY=${A_DELAY:-20ms} relay paced A
wants slow && C_STREAMS=${C_STREAMS:-9900} C_TOKENS=${C_TOKENS:-40} C_DELAY=${C_DELAY:-200ms} \
  C_RAMP=${C_RAMP:-4s} relay slow C
wants bulk && relay bulk B
if wants small; then
  bench_log "small: per_request.sh (proxy on CPU $PROXY_CPUS, load on $LOAD_CPUS)"
  SLUICE=$SLUICE THREADS=1 OUT=$OUT/small bash bench/per_request.sh >"$OUT/small.log" 2>&1 ||
    bench_die "per_request.sh failed (see $OUT/small.log)"
fi

{
  echo "# One core: sluice against nginx ($(date -u +%FT%TZ))"
  echo
  echo "Proxy on CPU $PROXY_CPUS, simulator and load on $LOAD_CPUS; $(nproc) CPUs:" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); sluice $(git rev-parse --short HEAD)."
  for n in paced slow bulk; do
    [ -f "$OUT/$n/report.md" ] || continue
    echo; echo "## $n"; echo; cat "$OUT/$n/report.md"
  done
  if [ -f "$OUT/small.log" ]; then
    echo; echo "## small whole requests"; echo
    grep -E '^\||^new / old|instructions' "$OUT/small.log" || true
  fi
} >"$OUT/report.md"
cat "$OUT/report.md"
