#!/usr/bin/env bash
# Worker processes (issue 18): STREAMS concurrent slow streams through one `sluice serve
# --processes PROCESSES` on this machine, every one verified by `sluice flood`. Each proxied stream
# costs the gateway two descriptors and a process has RLIMIT_NOFILE of them (20,000 here), so one
# process derives max-connections 9,968 and cannot hold 19,000; three can. The floods run as
# several processes for the same reason (PER_FLOOD streams each), the simulator as one.
# Each second the script reads the pod's /metrics (the merged view) and the gateway's process tree
# (CPU ticks, RSS); at the end it reports:
#   - streams ok / failed (by kind), the most streams the pod held at once (sluice_pod_streams_in_use);
#   - the pod's RSS at its peak and per held stream (sluice_pod_resident_memory_bytes, minus the
#     idle baseline), and the gateway's CPU per relayed chunk;
#   - what the clients saw: TTFT and inter-chunk gap percentiles (worst flood).
#
#   bash bench/processes.sh                    # 19,000 streams x 16 tokens 1 s apart, 3 processes
#   bash bench/processes.sh --quick            # 2,000 streams of 4 tokens
#   PROCESSES=1 bash bench/processes.sh        # one process: what does not fit is refused
#
# Loopback only. Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() {
  sed -n '2,/^set -e/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF2'
Options:
  --quick        2,000 streams of 4 tokens, 2 s ramp (the env vars below still win)
  --out DIR      results directory (default bench/out/processes-YYYYmmdd-HHMMSS)
  --no-build     use build/sluice (or $SLUICE_BIN) as it is
Env: STREAMS (19000), TOKENS (16), DELAY (1s), RAMP (20s), PROCESSES (3), THREADS (1: per process),
     SIM_THREADS (1), PER_FLOOD (9500), SOURCE_IPS (16), SLUICE_BIN (build/sluice)
EOF2
}

QUICK=0 NO_BUILD=0 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --out) OUT=$2; shift ;;
    --no-build) NO_BUILD=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "processes.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

[ "$QUICK" = 1 ] && : "${STREAMS:=2000}" "${TOKENS:=4}" "${RAMP:=2s}"
: "${STREAMS:=19000}" "${TOKENS:=16}" "${DELAY:=1s}" "${RAMP:=20s}" "${PROCESSES:=3}" "${THREADS:=1}"
: "${SIM_THREADS:=1}" "${PER_FLOOD:=9500}" "${SOURCE_IPS:=16}" "${SLUICE_BIN:=build/sluice}"

command -v python3 >/dev/null || bench_die "python3 is needed"
bench_build_sluice "$NO_BUILD" "$SLUICE_BIN"
NOFILE=$(bench_raise_nofile)
[ "$STREAMS" -le $((NOFILE - 32)) ] || bench_die "the simulator cannot hold $STREAMS streams with $NOFILE descriptors"
[ "$PER_FLOOD" -gt $((NOFILE - 64)) ] && PER_FLOOD=$((NOFILE - 64))
FLOODS=$(( (STREAMS + PER_FLOOD - 1) / PER_FLOOD ))
bench_workdirs processes "$SLUICE_BIN"

secs() { python3 -c "import re,sys;m=re.fullmatch(r'([0-9.]+)(ms|s|m)',sys.argv[1]);v=float(m[1]);print(v/1000 if m[2]=='ms' else v*60 if m[2]=='m' else v)" "$1"; }
CAP=$(python3 -c "print(int($(secs "$DELAY") * $TOKENS + $(secs "$RAMP") + 90))")

bench_spawn "$OUT/sim.log" "$BIN" sim --listen 127.0.0.1:0 --threads "$SIM_THREADS" --tokens "$TOKENS" \
  --token-delay "$DELAY" --ttft 0s
SIM=$BENCH_LAST_PID
SIM_PORT=$(bench_wait_port "$OUT/sim.log" "$SIM") || bench_die "the simulator did not start"
OPENAI_API_KEY=sk-bench-not-a-real-key bench_spawn "$OUT/serve.log" "$BIN" serve --listen 127.0.0.1:0 \
  --upstream "http://127.0.0.1:$SIM_PORT" --processes "$PROCESSES" --threads "$THREADS" \
  --max-streams $((STREAMS + 1000)) --queue-depth 1000 --log-level warn --memory-sample-interval 500ms
GW=$BENCH_LAST_PID
PORT=$(bench_wait_port "$OUT/serve.log" "$GW") || bench_die "sluice serve did not start"

metrics() (  # the pod's /metrics (empty when it cannot connect, or the gateway closes at max-connections)
  trap '' PIPE
  { exec 3<>"/dev/tcp/127.0.0.1/$PORT" &&
    printf 'GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n' >&3 && cat <&3; } 2>/dev/null || true
)
metric() { printf '%s\n' "$1" | awk -v n="$2" '$1 == n {print $2; exit}'; }
tree_ticks() {  # utime+stime of the gateway's supervisor and workers
  local t=0 p
  for p in $GW $(cat /proc/"$GW"/task/*/children 2>/dev/null); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
sleep 1
m=$(metrics)
BASE_RSS=$(metric "$m" sluice_pod_resident_memory_bytes)
bench_log "gateway on port $PORT: $PROCESSES processes x $THREADS thread(s), idle pod RSS ${BASE_RSS:-?} B;" \
  "$STREAMS streams x $TOKENS tokens, $DELAY apart, ramp $RAMP, from $FLOODS flood process(es); load $(bench_load)"
FPIDS=()
left=$STREAMS
for i in $(seq 1 "$FLOODS"); do
  n=$(( left < PER_FLOOD ? left : PER_FLOOD )); left=$((left - n))
  bench_spawn "$OUT/flood-$i.json" "$BIN" flood --target "http://127.0.0.1:$PORT" --model sim-1 --concurrency "$n" \
    --requests "$n" --ramp "$RAMP" --duration "${CAP}s" --json --progress=false --connect-timeout 30s \
    --source-ips "$SOURCE_IPS"
  FPIDS+=("$BENCH_LAST_PID")
done
printf 'epoch_s\tgw_ticks\tstreams\tpod_rss\tworkers\n' >"$OUT/samples.tsv"
start=$EPOCHREALTIME t0=$(tree_ticks)
while :; do
  running=0
  for p in "${FPIDS[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
  [ "$running" = 1 ] || break
  sleep 1
  m=$(metrics)
  printf '%s\t%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" $(( $(tree_ticks) - t0 )) "$(metric "$m" sluice_pod_streams_in_use)" \
    "$(metric "$m" sluice_pod_resident_memory_bytes)" "$(metric "$m" sluice_worker_processes)" >>"$OUT/samples.tsv"
done
for p in "${FPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
metrics >"$OUT/metrics-end.txt"
bench_stop "$GW"
bench_stop "$SIM"

python3 - "$OUT" "$STREAMS" "$TOKENS" "$DELAY" "$RAMP" "$PROCESSES" "$THREADS" "${BASE_RSS:-0}" "$NOFILE" "$(nproc)" <<'PY' | tee "$OUT/report.md"
import glob, json, sys
out, streams, tokens, delay, ramp, procs, threads, base_rss, nofile, cores = sys.argv[1:]
streams, tokens, base_rss = int(streams), int(tokens), float(base_rss)
floods = [json.load(open(f)) for f in sorted(glob.glob(out + "/flood-*.json"))]
rows = [l.rstrip("\n").split("\t") for l in open(out + "/samples.tsv")][1:]
num = lambda s: float(s) if s not in ("", None) else 0.0
ok = sum(f["ok"] for f in floods); failed = sum(f["failed"] for f in floods)
kinds = {}
for f in floods:
    for k, v in f["failed_by_kind"].items(): kinds[k] = kinds.get(k, 0) + v
peak = max((num(r[2]) for r in rows), default=0)
peak_rss = max((num(r[3]) for r in rows), default=0)
ticks = num(rows[-1][1]) if rows else 0
chunks = ok * (tokens + 2)  # the tokens, the role chunk and the last one
worst = lambda key, q: max(f[key][q] for f in floods)
print(f"# {streams:,} streams through `sluice serve --processes {procs} --threads {threads}`\n")
print(f"{tokens} tokens {delay} apart per stream, ramp {ramp}; {len(floods)} flood process(es); {cores} cores; "
      f"descriptor limit {nofile} per process.\n")
print("| | |\n|---|---|")
print(f"| streams ok / failed | {ok:,} / {failed:,} {'' if not failed else kinds} |")
print(f"| most streams held by the pod at once | {peak:,.0f} |")
print(f"| pod RSS idle / at peak | {base_rss / 2**20:.1f} / {peak_rss / 2**20:.1f} MiB |")
print(f"| pod RSS per held stream | {(peak_rss - base_rss) / peak / 1024 if peak else float('nan'):.1f} KiB |")
print(f"| gateway CPU (all processes) | {ticks / 100:.1f} s, {ticks * 1e4 / chunks if chunks else float('nan'):.1f} us per relayed chunk |")
print(f"| client TTFT p50 / p99 / max (worst flood) | {worst('ttft','p50_ms'):.1f} / {worst('ttft','p99_ms'):.1f} / "
      f"{worst('ttft','max_ms'):.1f} ms |")
print(f"| client inter-chunk gap p50 / p99 / max (worst flood) | {worst('gap','p50_ms'):.1f} / {worst('gap','p99_ms'):.1f} / "
      f"{worst('gap','max_ms'):.1f} ms |")
PY
bench_log "results in $OUT"
