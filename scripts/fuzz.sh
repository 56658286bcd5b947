#!/usr/bin/env bash
# libFuzzer runs of sluice's parsers (fuzz/fuzz_*.cpp), built with clang-14 under ASan + UBSan.
#   bash scripts/fuzz.sh TARGET SECONDS   run one target (e.g. sse, validator), growing its corpus
#                                         in fuzz/corpus/TARGET (minimised afterwards)
#   bash scripts/fuzz.sh all SECONDS      every target in turn, SECONDS each
#   bash scripts/fuzz.sh --smoke [SECONDS] every target briefly (default 10 s) on a copy of the
#                                         corpus, nothing written back: the CI run
#   bash scripts/fuzz.sh --list           the targets
# A crash, a leak, a timeout (10 s per input; SLUICE_FUZZ_TIMEOUT for runs beside other work, where a
# starved process makes a fast input look slow) or an out-of-memory (2 GiB) fails the run and leaves
# the input in build-fuzz/artifacts/; turn each into a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(sse dialect_stream dialect_request dialect_upstream_stream dialect_upstream_request dialect_upstream_responses event_scan upstream_framing http_request request_framing schema_compile validator canonical keys_file config wire_head exposition duplicate_members trace multipart websocket_frames)
build=build-fuzz

if [ "${1:-}" = "--list" ]; then printf '%s\n' "${targets[@]}"; exit 0; fi

if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DSLUICE_FUZZ=ON \
    -DSLUICE_WERROR=ON ${SLUICE_FUZZ_CMAKE_ARGS:-} >/dev/null
elif ! grep -q '^SLUICE_WERROR:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake -B "$build" -DSLUICE_WERROR=ON >/dev/null  # a tree configured before the option existed
fi
cmake --build "$build" -j "$(nproc)" --target fuzz_all
mkdir -p "$build/artifacts"

run() {  # target seconds corpus-dir...
  local t=$1 secs=$2; shift 2
  "$build/fuzz/fuzz_$t" "$@" ${FUZZ_SEED:+-seed=$FUZZ_SEED} -max_total_time="$secs" -timeout="${SLUICE_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" -close_fd_mask=3 2>"$build/artifacts/$t.log" || {
    tail -n 60 "$build/artifacts/$t.log" >&2
    echo "fuzz: $t FAILED (input and log in $build/artifacts/)" >&2
    return 1
  }
  local execs cov
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/artifacts/$t.log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$build/artifacts/$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  echo "fuzz: $t ok: ${secs}s, $execs inputs, coverage $cov edges"
}

if [ "${1:-}" = "--smoke" ]; then
  secs=${2:-10}
  # A fixed seed: the same mutations each run, so CI does not turn red on a new find by chance
  # (the long runs, below, explore with fresh seeds and are where new finds belong).
  FUZZ_SEED=${FUZZ_SEED:-1}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for t in "${targets[@]}"; do
    mkdir -p "$tmp/$t"
    cp -r fuzz/corpus/"$t"/. "$tmp/$t"/ 2>/dev/null || true
    run "$t" "$secs" "$tmp/$t"
  done
  exit 0
fi

[ $# -eq 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
secs=$2
list=("$1")
[ "$1" = "all" ] && list=("${targets[@]}")
for t in "${list[@]}"; do
  [ -x "$build/fuzz/fuzz_$t" ] || { echo "fuzz: no target $t (--list)" >&2; exit 2; }
  mkdir -p "fuzz/corpus/$t" "$build/corpus-new/$t"
  run "$t" "$secs" "$build/corpus-new/$t" "fuzz/corpus/$t"
  # Keep the repo's corpus minimal: merge what was found into a fresh copy of it.
  rm -rf "$build/corpus-merged/$t" && mkdir -p "$build/corpus-merged/$t"
  "$build/fuzz/fuzz_$t" -merge=1 "$build/corpus-merged/$t" "fuzz/corpus/$t" "$build/corpus-new/$t" 2>/dev/null
  rm -rf "fuzz/corpus/$t" && mv "$build/corpus-merged/$t" "fuzz/corpus/$t"
  rm -rf "$build/corpus-new/$t"
  echo "fuzz: $t corpus now $(ls "fuzz/corpus/$t" | wc -l) inputs"
done
