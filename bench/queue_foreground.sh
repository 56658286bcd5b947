#!/usr/bin/env bash
# Foreground streaming through the queue (a front, a worker, redis-server) against the direct relay
# (one `both` process), in the same run, alternated: N streams at once, 40 tokens 20 ms apart from
# the simulator. Prints, per round and path, flood's TTFT and inter-event gaps (p50/p90/p99) and
# the CPU ticks (1/100 s) each process spent. usage: N=200 ROUNDS=2 bash bench/queue_foreground.sh
# (docs/benchmarks.md, "Foreground through the queue"). Needs build/sluice and redis-server.
set -u
cd "$(dirname "$0")/.."
B=${SLUICE:-$PWD/build/sluice}
N=${N:-200}
R=$(shuf -i 20000-29999 -n1)
redis-server --port $R --save '' --appendonly no --daemonize no > /tmp/fg_redis.log 2>&1 &
RP=$!
sleep 0.5
$B sim --listen 127.0.0.1:0 --threads 1 --tokens 40 --token-delay 20ms > /tmp/fg_sim.log 2>&1 &
SP=$!
sleep 0.5
SIMPORT=$(grep -o '127.0.0.1:[0-9]*' /tmp/fg_sim.log | head -1 | cut -d: -f2)
common="--threads 1 --upstream http://127.0.0.1:$SIMPORT --log-level warn --max-streams 4000 --queue-depth 4000"
OPENAI_API_KEY=sk-x $B serve --listen 127.0.0.1:0 $common > /tmp/fg_direct.log 2>&1 &
DP=$!
OPENAI_API_KEY=sk-x $B serve --listen 127.0.0.1:0 $common --redis redis://127.0.0.1:$R --queue redis --role front > /tmp/fg_front.log 2>&1 &
FP=$!
OPENAI_API_KEY=sk-x $B serve --listen 127.0.0.1:0 $common --redis redis://127.0.0.1:$R --queue redis --role worker --worker-max-jobs 4000 > /tmp/fg_worker.log 2>&1 &
WP=$!
sleep 1.5
DPORT=$(grep -o '127.0.0.1:[0-9]*' /tmp/fg_direct.log | head -1 | cut -d: -f2)
FPORT=$(grep -o '127.0.0.1:[0-9]*' /tmp/fg_front.log | head -1 | cut -d: -f2)
echo "sim $SIMPORT direct $DPORT front $FPORT redis $R"
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for round in $(seq 1 ${ROUNDS:-2}); do
for t in direct queue; do
  port=$DPORT; [ $t = queue ] && port=$FPORT
  c0d=$(cpu $DP); c0f=$(cpu $FP); c0w=$(cpu $WP); c0r=$(cpu $RP)
  $B flood --target http://127.0.0.1:$port --concurrency $N --requests $N --json --progress=false > /tmp/fg_$t.json 2>/dev/null
  echo "$t round $round: cpu ticks direct=$(( $(cpu $DP)-c0d )) front=$(( $(cpu $FP)-c0f )) worker=$(( $(cpu $WP)-c0w )) redis=$(( $(cpu $RP)-c0r ))"
  python3 - "$t" <<'PY'
import json,sys
d=json.load(open(f"/tmp/fg_{sys.argv[1]}.json"))
t, g = d["ttft"], d["gap"]
print(f"  ok {d['ok']} failed {d['failed']}  ttft p50/p90/p99 {t['p50_ms']:.1f}/{t['p90_ms']:.1f}/{t['p99_ms']:.1f} ms"
      f"  gap p50/p90/p99 {g['p50_ms']:.1f}/{g['p90_ms']:.1f}/{g['p99_ms']:.1f} ms  chunks {d['chunks']}")
PY
done
done
if [ -n "${SHOW_ERRORS:-}" ]; then
  WPORT=$(grep -o '127.0.0.1:[0-9]*' /tmp/fg_worker.log | head -1 | cut -d: -f2)
  for p in $FPORT $WPORT; do curl -s http://127.0.0.1:$p/metrics | grep -E "^sluice_(queue_redis_errors|redis_commands_total)[^ ]* [1-9]" ; done
fi
kill $DP $FP $WP $SP $RP 2>/dev/null
wait 2>/dev/null
