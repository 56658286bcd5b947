#!/usr/bin/env bash
# Slow-clients benchmark (issue 3): STREAMS (10,000) concurrent streaming requests whose clients
# never read a byte of the response, against `sluice serve` in front of `sluice sim`. Measures the
# gateway's peak RSS and RSS per stalled stream, kernel TCP memory, how long until every stalled
# stream was cut (against --write-stall-timeout), whether a normal request is served while they
# are held and after, and the gateway's metrics afterwards (streams back to 0).
#
# The clients are bench/slow_clients.py (python3 asyncio): each sets a 4 KiB receive buffer and a
# 1460-byte MSS, sends its request, and never reads. Each stalled stream asks the simulator for
# TOKENS x TOKEN_SIZE bytes of content with no delay (150 x 1000: ~186 KB of events), about twice
# what the socket buffers between gateway and client take (80-90 KB measured), so the gateway's
# writes stop making progress, but not so much that the upstream legs of 10,000 streams need more
# kernel memory and CPU than necessary.
#
# Mind the machine: 10,000 stalled streams pin ~2 GB of kernel socket memory, around the kernel's
# tcp_mem limit, for the length of the run (see docs/benchmarks.md).
#
#   bash bench/slow_clients.sh              # 10,000 clients
#   bash bench/slow_clients.sh --quick      # 1,000 clients
#   STREAMS=5000 WRITE_STALL=5s bash bench/slow_clients.sh
#
# Loopback only. Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() {
  sed -n '2,/^set -e/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  --quick        1,000 clients instead of 10,000 (the env vars below still win)
  --out DIR      results directory (default bench/out/slow-clients-YYYYmmdd-HHMMSS)
  --no-build     use build/sluice (or $SLUICE_BIN) as it is
Env: STREAMS (10000), WRITE_STALL (10s), THREADS (nproc), SIM_THREADS (1), TOKENS (150),
     TOKEN_SIZE (1000), RCVBUF (4096), MSS (1460; 0 = loopback's own), WAIT_LIMIT (300: seconds to
     wait for the cut-off), SLUICE_BIN (build/sluice), SLUICE_ARGS (extra `sluice serve` flags)
EOF
}

QUICK=0 NO_BUILD=0 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --out) OUT=$2; shift ;;
    --no-build) NO_BUILD=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "slow_clients.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

[ "$QUICK" = 1 ] && : "${STREAMS:=1000}"
: "${STREAMS:=10000}" "${WRITE_STALL:=10s}" "${THREADS:=$(nproc)}" "${SIM_THREADS:=1}"
: "${TOKENS:=150}" "${TOKEN_SIZE:=1000}" "${RCVBUF:=4096}" "${MSS:=1460}" "${WAIT_LIMIT:=300}"
: "${SLUICE_BIN:=build/sluice}" "${SLUICE_ARGS:=}"

command -v python3 >/dev/null || bench_die "python3 is needed"

# --- build ---------------------------------------------------------------------------------------
bench_build_sluice "$NO_BUILD" "$SLUICE_BIN"

# --- environment -------------------------------------------------------------------------------
NOFILE=$(bench_raise_nofile)
bench_log "descriptor limit: soft $NOFILE (hard $(ulimit -Hn)); sim, gateway and clients each get it"
bench_workdirs slow-clients "$SLUICE_BIN"

# Each proxied stream holds two descriptors in the gateway (client + upstream).
need=$(( 2 * STREAMS + 64 ))
if [ "$NOFILE" -lt "$need" ]; then
  bench_log "note: $STREAMS proxied streams need ~$need descriptors in one process, the limit is $NOFILE:"
  bench_log "      the gateway's derived max-connections ((limit - 64) / 2) refuses the rest at once"
fi

stall_s=$(python3 -c "
import re,sys; m=re.fullmatch(r'([0-9.]+)(ms|s|m)', '$WRITE_STALL') or sys.exit('WRITE_STALL: use 500ms, 10s or 1m')
print(float(m[1]) * {'ms': 0.001, 's': 1, 'm': 60}[m[2]])")

# --- simulator and gateway ---------------------------------------------------------------------
bench_spawn "$OUT/sim.log" "$BIN" sim --listen 127.0.0.1:0 --threads "$SIM_THREADS"
SIM_PID=$BENCH_LAST_PID
SIM_PORT=$(bench_wait_port "$OUT/sim.log" "$SIM_PID") || bench_die "sim did not start"

# No admission limit below the client count (the stall cut-off is measured, not the queue);
# max-connections is left to its default (derived from the descriptor limit).
OPENAI_API_KEY=sk-bench-not-a-real-key bench_spawn "$OUT/gateway.log" "$BIN" serve \
  --listen 127.0.0.1:0 --threads "$THREADS" --upstream "http://127.0.0.1:$SIM_PORT" \
  --max-streams $(( STREAMS + 64 )) --queue-depth $(( STREAMS + 64 )) \
  --write-stall-timeout "$WRITE_STALL" --log-level info $SLUICE_ARGS
GW_PID=$BENCH_LAST_PID
GW_PORT=$(bench_wait_port "$OUT/gateway.log" "$GW_PID") || bench_die "sluice serve did not start"
sleep 0.5
cap_line=$(grep -m1 '"msg":"max-connections' "$OUT/gateway.log" || true)
bench_log "gateway pid $GW_PID port $GW_PORT; ${cap_line:-no max-connections line}"

load_start=$(bench_load)
bench_log "opening $STREAMS never-reading streams (write-stall-timeout $WRITE_STALL, load $load_start)..."
python3 bench/slow_clients.py --port "$GW_PORT" --pid "$GW_PID" --sim-pid "$SIM_PID" --streams "$STREAMS" \
  --stall-timeout "$stall_s" --tokens "$TOKENS" --token-size "$TOKEN_SIZE" --rcvbuf "$RCVBUF" --mss "$MSS" \
  --wait-limit "$WAIT_LIMIT" \
  > "$OUT/result.json" || bench_die "the client driver failed"
load_end=$(bench_load)
curl -s "http://127.0.0.1:$SIM_PORT/sim/stats" > "$OUT/sim-stats.json" || true
alive=yes; kill -0 "$GW_PID" 2>/dev/null || alive=no
bench_stop "$GW_PID"
bench_stop "$SIM_PID"

# --- report --------------------------------------------------------------------------------------
printf '{"load_start": "%s", "load_end": "%s", "alive": "%s", "nofile": "%s", "write_stall": "%s", "threads": "%s"}\n' \
  "$load_start" "$load_end" "$alive" "$NOFILE" "$WRITE_STALL" "$THREADS" > "$OUT/run.json"
python3 bench/slow_clients_report.py "$OUT" > "$OUT/report.md"
cat "$OUT/report.md"
bench_log "raw results in $OUT"
