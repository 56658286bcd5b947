#!/usr/bin/env bash
# Simulator capacity (issue 2: the simulator "must hold 20,000 concurrent slow streams without being
# the bottleneck"). STREAMS slow streams straight to one `sluice sim`, opened by as many
# `sluice flood` processes as the descriptor limit needs, every stream verified. Each second the
# script samples the simulator's CPU (utime+stime of all its threads), the whole machine's idle
# time and the simulator's /sim/stats; at the end it reports:
#   - streams ok / failed, and the most the simulator held at once (its own active_streams);
#   - the simulator's CPU as a share of its threads: mean while all streams were open, busiest second;
#   - its RSS per held stream (peak - baseline, sampled by the first flood);
#   - its timer lateness (/sim/stats): how many of its timed waits (the token delays) woke more
#     than 1 / 10 / 100 ms late, and the latest. A simulator that cannot keep up wakes late; one
#     that wakes on time while its threads have CPU to spare is not what limits a measurement;
#   - what the clients saw: TTFT and inter-chunk gap percentiles (these include the load
#     generator's own queueing, which shares the machine).
# One process cannot hold more streams than its descriptor limit allows: where the hard limit is
# below STREAMS + 32 (the simulator's listener, event loop and the sampler's connection), STREAMS
# is lowered to fit, and the report says so.
#
#   bash bench/sim_capacity.sh                 # 20,000 streams, 20 tokens 1 s apart, 10 s ramp
#   bash bench/sim_capacity.sh --quick         # 2,000 streams, 5 tokens
#   STREAMS=10000 DELAY=200ms bash bench/sim_capacity.sh
#
# Loopback only. Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() {
  sed -n '2,/^set -e/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  --quick        2,000 streams of 5 tokens, 2 s ramp (the env vars below still win)
  --out DIR      results directory (default bench/out/sim-capacity-YYYYmmdd-HHMMSS)
  --no-build     use build/sluice (or $SLUICE_BIN) as it is
Env: STREAMS (20000), TOKENS (20), DELAY (1s), TOKEN_SIZE (4), RAMP (10s), SIM_THREADS (1),
     PER_FLOOD (10000: streams per flood process), SOURCE_IPS (16: the floods' --source-ips; each
     source address has its own ephemeral port range, so connect() stays cheap at 20,000 open
     connections), PIN (0; 1: the simulator alone on its own cores, the floods on the others),
     SLUICE_BIN (build/sluice)
EOF
}

QUICK=0 NO_BUILD=0 OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --out) OUT=$2; shift ;;
    --no-build) NO_BUILD=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sim_capacity.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

[ "$QUICK" = 1 ] && : "${STREAMS:=2000}" "${TOKENS:=5}" "${RAMP:=2s}"
: "${STREAMS:=20000}" "${TOKENS:=20}" "${DELAY:=1s}" "${TOKEN_SIZE:=4}" "${RAMP:=10s}" "${SIM_THREADS:=1}"
: "${PER_FLOOD:=10000}" "${SOURCE_IPS:=16}" "${PIN:=0}" "${SLUICE_BIN:=build/sluice}"

command -v python3 >/dev/null || bench_die "python3 is needed"
bench_build_sluice "$NO_BUILD" "$SLUICE_BIN"

NOFILE=$(bench_raise_nofile)
WANTED=$STREAMS
if [ "$STREAMS" -gt $((NOFILE - 32)) ]; then
  STREAMS=$((NOFILE - 32))
  bench_log "note: the descriptor limit is $NOFILE per process (hard $(ulimit -Hn)): $WANTED streams do not fit"
  bench_log "      in one simulator process here; measuring $STREAMS"
fi
[ "$PER_FLOOD" -gt $((NOFILE - 64)) ] && PER_FLOOD=$((NOFILE - 64))
FLOODS=$(( (STREAMS + PER_FLOOD - 1) / PER_FLOOD ))

bench_workdirs sim-capacity "$SLUICE_BIN"

# Seconds in a duration such as 500ms, 2s, 1m (for the flood's overall cap).
secs() { python3 -c "import re,sys;m=re.fullmatch(r'([0-9.]+)(ms|s|m)',sys.argv[1]);v=float(m[1]);print(v/1000 if m[2]=='ms' else v*60 if m[2]=='m' else v)" "$1"; }
CAP=$(python3 -c "print(int($(secs "$DELAY") * $TOKENS + $(secs "$RAMP") + 60))")

# PIN=1: the simulator on the first SIM_THREADS cores, the floods on the rest, so that its
# wakeups measure its own event loop rather than the scheduler sharing cores with the floods.
SIM_CPUS="" FLOOD_CPUS=""
if [ "$PIN" = 1 ]; then
  [ "$(nproc)" -gt "$SIM_THREADS" ] || bench_die "PIN=1 needs more cores than SIM_THREADS"
  SIM_CPUS="taskset -c 0-$((SIM_THREADS - 1))" FLOOD_CPUS="taskset -c $SIM_THREADS-$(( $(nproc) - 1 ))"
fi
bench_spawn "$OUT/sim.log" $SIM_CPUS "$BIN" sim --listen 127.0.0.1:0 --threads "$SIM_THREADS" --tokens "$TOKENS" \
  --token-delay "$DELAY" --token-size "$TOKEN_SIZE"
SIM=$BENCH_LAST_PID
PORT=$(bench_wait_port "$OUT/sim.log" "$SIM") || bench_die "the simulator did not start"

sim_stats() {  # prints the body of GET /sim/stats (empty when it cannot connect)
  local body
  body=$( { exec 3<>"/dev/tcp/127.0.0.1/$PORT" &&
            printf 'GET /sim/stats HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n' >&3 &&
            cat <&3; } 2>/dev/null | tail -n 1) || true
  printf '%s\n' "$body"
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
idle() { awk '/^cpu /{print $5 + $6; exit}' /proc/stat; }  # idle + iowait, all cores, in ticks

bench_log "sim on port $PORT ($SIM_THREADS thread(s)); $STREAMS streams x $TOKENS tokens, $DELAY apart, ramp $RAMP," \
  "from $FLOODS flood process(es); load average $(bench_load)"
FPIDS=()
left=$STREAMS
for i in $(seq 1 "$FLOODS"); do
  n=$(( left < PER_FLOOD ? left : PER_FLOOD )); left=$((left - n))
  pid_arg=0; [ "$i" = 1 ] && pid_arg=$SIM
  bench_spawn "$OUT/flood-$i.json" $FLOOD_CPUS "$BIN" flood --target "http://127.0.0.1:$PORT" --concurrency "$n" \
    --requests "$n" --ramp "$RAMP" --duration "${CAP}s" --json --progress=false --pid "$pid_arg" \
    --connect-timeout 30s --source-ips "$SOURCE_IPS"
  FPIDS+=("$BENCH_LAST_PID")
done

printf 'epoch_s\tsim_ticks\tidle_ticks\tactive_streams\tstats\n' >"$OUT/samples.tsv"
start=$EPOCHREALTIME s0=$(ticks "$SIM") i0=$(idle)
while :; do
  running=0
  for p in "${FPIDS[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
  [ "$running" = 1 ] || break
  sleep 1
  st=$(sim_stats) now=$EPOCHREALTIME s1=$(ticks "$SIM") i1=$(idle)
  active=$(printf '%s' "$st" | grep -o '"active_streams":[0-9]*' | cut -d: -f2 || true)
  printf '%s\t%s\t%s\t%s\t%s\n' "$now" $((s1 - s0)) $((i1 - i0)) \
    "${active:-}" "$st" >>"$OUT/samples.tsv"
done
for p in "${FPIDS[@]}"; do wait "$p" 2>/dev/null || true; done
sim_stats >"$OUT/sim-stats.json"
bench_stop "$SIM"

python3 - "$OUT" "$start" "$WANTED" "$STREAMS" "$TOKENS" "$DELAY" "$RAMP" "$SIM_THREADS" "$NOFILE" "$(nproc)" <<'PY' | tee "$OUT/report.md"
import glob, json, sys
out, start, wanted, streams, tokens, delay, ramp, threads, nofile, cores = sys.argv[1:]
streams, threads, cores, wanted = int(streams), int(threads), int(cores), int(wanted)
floods = [json.load(open(f)) for f in sorted(glob.glob(out + "/flood-*.json"))]
rows = [l.rstrip("\n").split("\t") for l in open(out + "/samples.tsv")][1:]
stats = json.load(open(out + "/sim-stats.json"))
ok = sum(f["ok"] for f in floods); failed = sum(f["failed"] for f in floods)
kinds = {}
for f in floods:
    for k, v in f["failed_by_kind"].items(): kinds[k] = kinds.get(k, 0) + v
# Each row holds the wall clock (epoch seconds) and cumulative figures since the start (CPU and idle
# in 1/100 s ticks);
# the per-interval figures are their differences.
TICK = 100.0
prev = {"t": 0.0, "cpu": 0, "idle": 0, "waits": 0, "late1": 0, "late10": 0}
series = []  # (t, sim CPU % of its threads, machine idle %, streams held, wakeups, % > 1 ms late, % > 10 ms)
for r in rows:
    t, c, i = float(r[0]) - float(start), int(r[1]), int(r[2])
    try:
        s = json.loads(r[4])
    except ValueError:
        s = {}
    dt = t - prev["t"]
    w = s.get("timer_waits", prev["waits"]) - prev["waits"]
    l1 = s.get("timer_late_1ms", prev["late1"]) - prev["late1"]
    l10 = s.get("timer_late_10ms", prev["late10"]) - prev["late10"]
    series.append((t, 100 * (c - prev["cpu"]) / TICK / dt / threads, 100 * (i - prev["idle"]) / TICK / dt / cores,
                   int(r[3]) if r[3] else 0, w, 100 * l1 / w if w else 0.0, 100 * l10 / w if w else 0.0))
    prev = {"t": t, "cpu": c, "idle": i, "waits": s.get("timer_waits", prev["waits"]),
            "late1": s.get("timer_late_1ms", prev["late1"]), "late10": s.get("timer_late_10ms", prev["late10"])}
peak = max((x[3] for x in series), default=0)
cpu = [x[1] for x in series]
held = [x[1] for x in series if x[3] >= 0.95 * streams]
held_idle = [x[2] for x in series if x[3] >= 0.95 * streams]
held_w = sum(x[4] for x in series if x[3] >= 0.95 * streams)
held_l1 = sum(x[4] * x[5] / 100 for x in series if x[3] >= 0.95 * streams)
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
f0 = floods[0]
rss = (f0["peak_rss_bytes"] - f0["baseline_rss_bytes"]) / peak / 1024 if peak else float("nan")
waits = stats.get("timer_waits", 0)
pct = lambda k: 100.0 * stats.get(k, 0) / waits if waits else float("nan")
def merged(key, q):  # the worst of the floods' percentiles (each flood reports its own)
    return max(f[key][q] for f in floods)
print(f"# Simulator capacity: {streams:,} streams x {tokens} tokens, {delay} apart, ramp {ramp}\n")
if wanted != streams:
    print(f"Asked for {wanted:,} streams; the descriptor limit here ({nofile} per process) fits {streams:,}.\n")
print(f"{len(floods)} flood process(es), simulator with {threads} thread(s), {cores} cores.\n")
print("| | |\n|---|---|")
print(f"| streams ok / failed | {ok:,} / {failed:,} {'' if not failed else kinds} |")
print(f"| most streams held by the simulator at once | {peak:,} |")
print(f"| simulator CPU while all were held (mean, share of its threads) | {mean(held):.0f} % over {len(held)} s |")
print(f"| simulator CPU, busiest second | {max(cpu, default=0):.0f} % |")
print(f"| machine idle while all were held (mean) | {mean(held_idle):.0f} % |")
print(f"| simulator RSS per held stream | {rss:.1f} KiB |")
print(f"| timed waits / woke > 1 ms late / > 10 ms / > 100 ms | {waits:,} / {pct('timer_late_1ms'):.2f} % / "
      f"{pct('timer_late_10ms'):.2f} % / {pct('timer_late_100ms'):.2f} % |")
print(f"| wakeups > 1 ms late while all were held | {100 * held_l1 / held_w if held_w else float('nan'):.2f} % of {held_w:,} |")
print(f"| latest wakeup | {stats.get('timer_late_max_us', 0) / 1000:.1f} ms (mean lateness "
      f"{stats.get('timer_late_sum_us', 0) / waits / 1000 if waits else float('nan'):.2f} ms) |")
print(f"| client TTFT p50 / p99 / max (worst flood) | {merged('ttft','p50_ms'):.1f} / {merged('ttft','p99_ms'):.1f} / "
      f"{merged('ttft','max_ms'):.1f} ms |")
print(f"| client inter-chunk gap p50 / p99 / max (worst flood) | {merged('gap','p50_ms'):.1f} / {merged('gap','p99_ms'):.1f} / "
      f"{merged('gap','max_ms'):.1f} ms |")
print("\nPer sample (about a second): time s, simulator CPU % of its threads, machine idle %, streams held,")
print("timed wakeups, % of them > 1 ms late, % > 10 ms late")
print("```")
for t, c, i, a, w, l1, l10 in series:
    print(f"{t:6.1f} {c:5.0f} {i:5.0f} {a:7} {w:7} {l1:6.1f} {l10:6.1f}")
print("```")
PY
bench_log "results in $OUT"
