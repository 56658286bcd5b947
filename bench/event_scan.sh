#!/usr/bin/env bash
# The relay's event scan per event, skim against SAX scan (ADR 0032), in user-space instructions
# counted by callgrind: each case of build/bench/event_scan_bench run 1,000 and 11,000 times, the
# difference over 10,000 (start-up and first calls cancel out). Instructions, unlike time, do not
# move with the machine's load. Times: run build/bench/event_scan_bench itself.
#   bash bench/event_scan.sh          # ~1 minute; NO_BUILD=1 to use the built binary as it is
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
command -v valgrind >/dev/null || bench_die "valgrind is needed (apt-get install valgrind)"
BIN=build/bench/event_scan_bench
[ "${NO_BUILD:-0}" = 1 ] || cmake --build build --target event_scan_bench >/dev/null
[ -x "$BIN" ] || bench_die "no $BIN (configure with -DSLUICE_BENCH=ON)"

count() {  # case iterations -> instructions collected inside the scan
  EVENT_SCAN_ITERATIONS=$2 valgrind --tool=callgrind --callgrind-out-file=/dev/null "--toggle-collect=*scan_event*" \
    "$BIN" --benchmark_filter="^scan/$1(/|$)" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_event() { echo $(( ($(count "$1" 11000) - $(count "$1" 1000)) / 10000 )); }

echo "| event | skim + fallback (scan_event) | SAX scan | ratio |"
echo "|---|---|---|---|"
for c in chat_chunk chat_chunk_spaced chat_chunk_cjk usage_chunk responses_delta; do
  skim=$(per_event "${c}_skim")
  sax=$(per_event "${c}_sax")
  echo "| $c | $skim | $sax | $(awk -v a="$skim" -v b="$sax" 'BEGIN{printf "%.2f", a/b}') |"
done
