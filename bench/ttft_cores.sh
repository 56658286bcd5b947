#!/usr/bin/env bash
# Added time-to-first-token on a machine with cores to spare (issue 2's "< 1 ms p99 at 1,000
# streams"): the simulator, the proxy and the load generator each pinned to their own cores with
# taskset, so TTFT measures the proxy, not three programs queueing for two cores as in
# bench/relay.sh on the 2-core development VM. Targets: direct, sluice (--threads 2 on 2 cores),
# and nginx (2 workers on the same 2 cores) when it is installed.
#
#   bash bench/ttft_cores.sh                 # needs >= 8 cores; ~1-2 minutes
#   SLUICE="lib/ld-linux-x86-64.so.2 --library-path lib ./sluice" bash bench/ttft_cores.sh
#
# Env: SLUICE (build/sluice), REPEAT (3), OUT (bench/out/ttft-cores-<time>), NGINX (/usr/sbin/nginx),
# SIM_CPUS (0-1), PROXY_CPUS (2-3), FLOOD_CPUS (4-7); FORCE=1 runs on fewer cores (a smoke test).
# Scenarios: A 1,000 streams x 64 tokens 20 ms apart (ramp 1 s); D 1,000 streams x 16 tokens 250 ms
# apart (ramp 1 s). Prints one line per run and a summary (median over runs of p50/p99, and the
# added TTFT: the proxy's percentile minus direct's of the same repetition).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
trap bench_cleanup EXIT

: "${SLUICE:=build/sluice}" "${REPEAT:=3}" "${NGINX:=/usr/sbin/nginx}"
: "${OUT:=bench/out/ttft-cores-$(date +%Y%m%d-%H%M%S)}"
cores=$(nproc)
[ "$cores" -ge 8 ] || [ "${FORCE:-0}" = 1 ] || bench_die "needs at least 8 cores (has $cores): the point is separate cores per program"
mkdir -p "$OUT"
BENCH_TMP=$(mktemp -d)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
read -r -a SL <<<"$SLUICE"

: "${SIM_CPUS:=0-1}" "${PROXY_CPUS:=2-3}" "${FLOOD_CPUS:=4-7}"
sim_port=19081 proxy_port=19080 nginx_port=19082

bench_spawn "$OUT/sim.log" taskset -c $SIM_CPUS "${SL[@]}" sim --listen 127.0.0.1:$sim_port --threads 2 \
  --tokens 64 --token-delay 20ms
bench_wait_tcp $sim_port "$BENCH_LAST_PID" || bench_die "sim did not start"
bench_spawn "$OUT/sluice.log" taskset -c $PROXY_CPUS "${SL[@]}" serve --listen 127.0.0.1:$proxy_port \
  --upstream http://127.0.0.1:$sim_port --threads 2 --max-streams 4000 --queue-depth 4000 --log-level warn
bench_wait_tcp $proxy_port "$BENCH_LAST_PID" || bench_die "sluice did not start"
targets="direct:$sim_port sluice:$proxy_port"
if [ -x "$NGINX" ]; then
  bench_nginx_conf "$BENCH_TMP/nginx" 2 "$(ulimit -n)" "$nginx_port" "$sim_port" reuseport
  bench_spawn "$OUT/nginx.log" taskset -c $PROXY_CPUS "$NGINX" -p "$BENCH_TMP/nginx" -e "$BENCH_TMP/nginx/err.log" \
    -c "$BENCH_TMP/nginx/nginx.conf"
  bench_wait_tcp $nginx_port "$BENCH_LAST_PID" && targets="$targets nginx:$nginx_port"
fi
bench_log "cores $cores; sim on $SIM_CPUS, proxies on $PROXY_CPUS, flood on $FLOOD_CPUS; targets: $targets"

for scen in A D; do
  if [ $scen = A ]; then hdr=(--header "x-sim-tokens: 64" --header "x-sim-token-delay: 20ms")
  else hdr=(--header "x-sim-tokens: 16" --header "x-sim-token-delay: 250ms"); fi
  for rep in $(seq 1 "$REPEAT"); do
    for t in $targets; do
      name=${t%%:*} port=${t##*:}
      taskset -c $FLOOD_CPUS "${SL[@]}" flood --target http://127.0.0.1:$port --concurrency 1000 --requests 1000 \
        --ramp 1s --threads 4 --duration 60s "${hdr[@]}" --json --progress=false >"$OUT/$scen-$name-$rep.json"
      bench_log "$scen $name #$rep: $(tr -d '\n' <"$OUT/$scen-$name-$rep.json" | grep -o '"ttft":{[^}]*}')"
    done
  done
done

if command -v python3 >/dev/null; then
  python3 - "$OUT" "$REPEAT" <<'PY'
import json, statistics, sys, os
out, rep = sys.argv[1], int(sys.argv[2])
def load(s, n, r):
    p = os.path.join(out, f"{s}-{n}-{r}.json")
    return json.load(open(p)) if os.path.exists(p) else None
print("| Scen. | Target | ok / failed | TTFT p50 / p99 ms | added TTFT p50 / p99 ms |")
print("|---|---|---|---|---|")
for s in "AD":
    for n in ("direct", "sluice", "nginx"):
        runs = [load(s, n, r) for r in range(1, rep + 1)]
        if not all(runs): continue
        d = [load(s, "direct", r) for r in range(1, rep + 1)]
        p50 = statistics.median(x["ttft"]["p50_ms"] for x in runs)
        p99 = statistics.median(x["ttft"]["p99_ms"] for x in runs)
        ok = sum(x["ok"] for x in runs); bad = sum(x["failed"] for x in runs)
        add = "–" if n == "direct" else "%.2f / %.2f" % (
            statistics.median(x["ttft"]["p50_ms"] - y["ttft"]["p50_ms"] for x, y in zip(runs, d)),
            statistics.median(x["ttft"]["p99_ms"] - y["ttft"]["p99_ms"] for x, y in zip(runs, d)))
        print(f"| {s} | {n} | {ok} / {bad} | {p50:.2f} / {p99:.2f} | {add} |")
PY
fi
