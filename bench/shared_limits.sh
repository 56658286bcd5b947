#!/usr/bin/env bash
# Cost of shared client-key limits (issue 16, docs/scale-out.md): the same keys file served by two
# sluice processes, one deciding alone (`local`: keys file, no --redis) and one through Redis
# (`redis`: the same keys file and --redis), both in front of one `sluice sim` (1-token streams, no
# delay, as in per_request.sh), floods alternated per repetition. The one key is limited on every
# axis, so each request of the `redis` target runs key_admit and key_settle, but far too high to
# refuse anything. Per target:
#   - TTFT and end-to-end p50 / p99 as `sluice flood` sees them
#   - gateway CPU per request: utime+stime of the sluice process (from /proc) over the flood
#   - for `redis`: EVALSHA runs per request (a round trip each, on the worker's pipelined
#     connection), every command Redis executed per request (`INFO commandstats`, commands run
#     inside the scripts included, INFO itself left out), the script runs sluice counted by name,
#     the mean round trip sluice measured, and redis-server's CPU per 1,000 requests
#   - with STRACE=1: system calls per request of the gateway (and, for `redis`, of redis-server),
#     `strace -c -f` over a separate flood of 5,000 requests per target
#   - with CALLGRIND=1: the gateway's user-space instructions per request for each target
#     (valgrind, --threads 1; a 2,200-request flood minus a 200-request one, so start-up cancels
#     out): the figure that does not move with the machine's load
#   - refusals (429) and failed requests, which must be 0, and shared-limit fallbacks (decisions
#     made without Redis, e.g. a command past its 50 ms deadline), which should be 0
# and the ratios redis / local. The machine is shared and noisy, so the ratios come from one run.
#
#   SLUICE=/tmp/bin/sluice NO_BUILD=1 bash bench/shared_limits.sh    # ~40 s
#   REPEAT=5 REQUESTS=10000 bash bench/shared_limits.sh
#   STRACE=1 CALLGRIND=1 bash bench/shared_limits.sh                # ~2 minutes
#   CONCURRENCY=1 REQUESTS=5000 bash bench/shared_limits.sh         # one request at a time
#
# Env: SLUICE (build/sluice, built when missing and NO_BUILD is not 1), REDIS_SERVER
# (redis-server), REDIS_CLI (redis-cli), REPEAT (3), CONCURRENCY (8), REQUESTS (20000), WARMUP
# (1000 requests per target before the measured floods), THREADS (2: sluice threads), OUT
# (bench/out/shared-limits-<time>).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
trap bench_cleanup EXIT

: "${SLUICE:=build/sluice}" "${REDIS_SERVER:=redis-server}" "${REDIS_CLI:=redis-cli}"
: "${REPEAT:=3}" "${CONCURRENCY:=8}" "${REQUESTS:=20000}" "${WARMUP:=1000}" "${THREADS:=2}" "${NO_BUILD:=0}"
: "${STRACE:=0}" "${CALLGRIND:=0}"
: "${OUT:=bench/out/shared-limits-$(date +%Y%m%d-%H%M%S)}"
command -v "$REDIS_SERVER" >/dev/null || bench_die "no $REDIS_SERVER (set REDIS_SERVER)"
command -v "$REDIS_CLI" >/dev/null || bench_die "no $REDIS_CLI (set REDIS_CLI)"
command -v curl >/dev/null || bench_die "curl is needed to read sluice's /metrics"
bench_build_sluice "$NO_BUILD" "$SLUICE"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
BENCH_TMP=$(mktemp -d "/tmp/sluice-shared-limits.XXXXXX")
trap 'bench_cleanup; rm -rf "$BENCH_TMP"' EXIT
trap 'exit 130' INT TERM
bench_raise_nofile >/dev/null
BIN=$(bench_private_copy "$SLUICE" "$BENCH_TMP")

# One key, limited on max_streams, rpm and tpm (each needs Redis, and max_streams and tpm a settle),
# with limits no flood here can reach: 100,000 streams, 10^8 requests and 10^11 tokens a minute.
KEY=sk-bench-shared-limits
printf '%s 100000 100000000 bench tpm=100000000000\n' "$KEY" >"$BENCH_TMP/keys"
AUTH="Authorization: Bearer $KEY"

sim_port=$(bench_free_port) redis_port=$(bench_free_port) local_port=$(bench_free_port) shared_port=$(bench_free_port)
bench_spawn "$OUT/sim.log" "$BIN" sim --listen 127.0.0.1:$sim_port --threads 2 --tokens 1
bench_wait_tcp "$sim_port" "$BENCH_LAST_PID" || bench_die "sim did not start"
mkdir -p "$BENCH_TMP/redis"
bench_spawn "$OUT/redis.log" "$REDIS_SERVER" --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
  --dir "$BENCH_TMP/redis" --protected-mode yes
redis_pid=$BENCH_LAST_PID
bench_wait_tcp "$redis_port" "$redis_pid" || bench_die "redis-server did not start"
rcli() { "$REDIS_CLI" -h 127.0.0.1 -p "$redis_port" "$@"; }
[ "$(rcli PING)" = PONG ] || bench_die "redis-server does not answer PING"

serve() {  # LOGFILE PORT [ARGS...]
  local log=$1 port=$2; shift 2
  bench_spawn "$log" "$BIN" serve --listen 127.0.0.1:$port --upstream http://127.0.0.1:$sim_port \
    --threads "$THREADS" --max-streams 4000 --queue-depth 4000 --keys-file "$BENCH_TMP/keys" --log-level warn \
    --drain-delay 0s "$@"
  bench_wait_tcp "$port" "$BENCH_LAST_PID" || bench_die "sluice ($log) did not start"
}
serve "$OUT/local.log" "$local_port"
local_pid=$BENCH_LAST_PID
serve "$OUT/redis-target.log" "$shared_port" --redis "redis://127.0.0.1:$redis_port"
shared_pid=$BENCH_LAST_PID
targets="local:$local_port redis:$shared_port"

# utime+stime of one process (all its threads) in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
flood() {  # PORT REQUESTS OUTFILE
  "$BIN" flood --target "http://127.0.0.1:$1" --concurrency "$CONCURRENCY" --requests "$2" --duration 300s \
    --header "$AUTH" --json --progress=false >"$3"
}
# The counters read around a flood, outside the CPU window: sluice's /metrics and Redis's
# per-command statistics.
snapshot() {  # PORT PREFIX
  curl -sf "http://127.0.0.1:$1/metrics" >"$2.metrics" || bench_die "cannot read /metrics on port $1"
  rcli INFO commandstats >"$2.commandstats"
}

bench_log "load $(bench_load); targets: $targets; redis-server on $redis_port;" \
  "$REPEAT x $REQUESTS requests at concurrency $CONCURRENCY (warm-up $WARMUP each)"
for t in $targets; do
  [ "$WARMUP" -gt 0 ] && flood "${t##*:}" "$WARMUP" "$OUT/${t%%:*}-warmup.json"
done
hz=$(getconf CLK_TCK)
for rep in $(seq 1 "$REPEAT"); do
  for t in $targets; do
    name=${t%%:*} port=${t##*:}
    case $name in local) pid=$local_pid ;; redis) pid=$shared_pid ;; esac
    snapshot "$port" "$OUT/$name-$rep.before"
    g0=$(cpu_ticks "$pid") r0=$(cpu_ticks "$redis_pid")
    flood "$port" "$REQUESTS" "$OUT/$name-$rep.json"
    g1=$(cpu_ticks "$pid") r1=$(cpu_ticks "$redis_pid")
    snapshot "$port" "$OUT/$name-$rep.after"
    echo "{\"ticks\": $((g1 - g0)), \"redis_ticks\": $((r1 - r0)), \"hz\": $hz}" >"$OUT/$name-$rep.cpu.json"
    bench_log "$name #$rep done"
  done
done

if [ "$STRACE" = 1 ] && command -v strace >/dev/null; then
  strace_calls() { awk '$NF == "total" {print $4}' "$1"; }  # % seconds usecs/call calls [errors] total
  for t in $targets; do
    name=${t%%:*} port=${t##*:}
    case $name in local) pid=$local_pid ;; redis) pid=$shared_pid ;; esac
    strace -c -f -p "$pid" -o "$OUT/$name.strace" & st=$!
    st_redis=""
    if [ "$name" = redis ]; then strace -c -f -p "$redis_pid" -o "$OUT/redis-server.strace" & st_redis=$!; fi
    sleep 1
    flood "$port" 5000 "$OUT/$name-strace.json"
    kill -INT $st; wait $st 2>/dev/null || true
    redis_calls=null
    if [ -n "$st_redis" ]; then
      kill -INT "$st_redis"; wait "$st_redis" 2>/dev/null || true
      redis_calls=$(strace_calls "$OUT/redis-server.strace")
    fi
    echo "{\"calls\": $(strace_calls "$OUT/$name.strace"), \"redis_calls\": $redis_calls}" >"$OUT/$name.strace.json"
    bench_log "$name strace done"
  done
fi

if [ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null; then
  run_cg() {  # NAME REQUESTS [SERVE ARGS...] -> prints total Ir
    local name=$1 n=$2 port; shift 2; port=$(bench_free_port)
    bench_spawn "$OUT/cg-$name-$n.log" valgrind --tool=callgrind --callgrind-out-file="$OUT/cg-$name-$n.out" \
      "$BIN" serve --listen 127.0.0.1:$port --upstream http://127.0.0.1:$sim_port --threads 1 --max-streams 4000 \
      --queue-depth 4000 --keys-file "$BENCH_TMP/keys" --log-level warn --drain-delay 0s "$@"
    local pid=$BENCH_LAST_PID
    bench_wait_tcp "$port" "$pid" || bench_die "sluice under valgrind did not start"
    flood "$port" "$n" "$OUT/cg-$name-$n.json"
    bench_stop "$pid"
    callgrind_annotate "$OUT/cg-$name-$n.out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !seen {gsub(",", "", $1); print $1; seen = 1}'
  }
  for name in local redis; do
    extra=(); [ "$name" = redis ] && extra=(--redis "redis://127.0.0.1:$redis_port")
    small=$(run_cg "$name" 200 "${extra[@]}") large=$(run_cg "$name" 2200 "${extra[@]}")
    echo "{\"instructions_per_request\": $(( (large - small) / 2000 ))}" >"$OUT/$name.callgrind.json"
    bench_log "$name callgrind done"
  done
fi
bench_log "load at the end $(bench_load)"

node - "$OUT" "$REPEAT" <<'JS'
const fs = require("fs"), path = require("path");
const [out, rep] = [process.argv[2], Number(process.argv[3])];
const read = (f) => { try { return fs.readFileSync(path.join(out, f), "utf8"); } catch { return null; } };
const json = (f) => { const t = read(f); return t == null ? null : JSON.parse(t); };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
// Prometheus text: the sum of the samples of NAME whose labels contain every "k=\"v\"" in WANT.
const metric = (text, name, want = []) => text.split("\n").filter((l) => {
  if (!l.startsWith(name)) return false;
  const rest = l.slice(name.length);
  if (rest[0] !== " " && rest[0] !== "{") return false;
  return want.every((w) => rest.includes(w));
}).reduce((a, l) => a + Number(l.trim().split(/\s+/).pop()), 0);
// INFO commandstats: { command: calls }.
const cmdstats = (text) => Object.fromEntries(text.split("\n").map((l) => l.match(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/))
  .filter(Boolean).map((m) => [m[1], { calls: Number(m[2]), usec: Number(m[3]) }]));
const rows = {};
for (const name of ["local", "redis"]) {
  const runs = [];
  for (let i = 1; i <= rep; i++) {
    const f = json(`${name}-${i}.json`), c = json(`${name}-${i}.cpu.json`);
    const mb = read(`${name}-${i}.before.metrics`), ma = read(`${name}-${i}.after.metrics`);
    const cb = read(`${name}-${i}.before.commandstats`), ca = read(`${name}-${i}.after.commandstats`);
    if (!f || !c || mb == null || ma == null || cb == null || ca == null) continue;
    const d = (n, w) => metric(ma, n, w) - metric(mb, n, w);
    const sb = cmdstats(cb), sa = cmdstats(ca);
    const delta = (k, f) => (sa[k] ? sa[k][f] : 0) - (sb[k] ? sb[k][f] : 0);
    const calls = Object.keys(sa).filter((k) => k !== "info").reduce((a, k) => a + delta(k, "calls"), 0);
    const runsOf = (s) => d("sluice_redis_commands_total", [`script="${s}"`]);
    runs.push({
      ok: f.ok, failed: f.failed, s429: (f.status_counts || {})["429"] || 0,
      ttft50: f.ttft.p50_ms, ttft99: f.ttft.p99_ms, e2e50: f.e2e.p50_ms, e2e99: f.e2e.p99_ms,
      usPerReq: (c.ticks / c.hz) * 1e6 / f.ok,
      redisMsPer1k: (c.redis_ticks / c.hz) * 1e3 * 1000 / f.ok,
      evalsha: delta("evalsha", "calls") / f.ok, calls: calls / f.ok,
      // Redis's own time inside EVALSHA (the scripts and the commands they run), without its I/O.
      scriptUs: delta("evalsha", "usec") / f.ok,
      admit: runsOf("key_admit") / f.ok, settle: runsOf("key_settle") / f.ok, renew: runsOf("lease_renew"),
      notOk: d("sluice_redis_commands_total") - d("sluice_redis_commands_total", ['outcome="ok"']),
      fallbacks: d("sluice_shared_limit_fallbacks_total"),
      rejected: d("sluice_rejections_total"),
      rttUs: (() => { const n = d("sluice_redis_command_seconds_count"); return n ? d("sluice_redis_command_seconds_sum") / n * 1e6 : null; })(),
    });
  }
  if (!runs.length) continue;
  const med = (k) => { const xs = runs.map((r) => r[k]).filter((x) => x != null); return xs.length ? median(xs) : null; };
  const sum = (k) => runs.reduce((a, r) => a + r[k], 0);
  rows[name] = { n: runs.length, ok: sum("ok"), failed: sum("failed"), s429: sum("s429"), rejected: sum("rejected"),
    notOk: sum("notOk"), fallbacks: sum("fallbacks"), renew: sum("renew"),
    ...Object.fromEntries(["ttft50", "ttft99", "e2e50", "e2e99", "usPerReq", "redisMsPer1k", "evalsha", "calls",
      "admit", "settle", "rttUs", "scriptUs"].map((k) => [k, med(k)])),
    usPerReqAll: runs.map((r) => r.usPerReq.toFixed(1)).join(" / ") };
  const st = json(`${name}.strace.json`), stRun = json(`${name}-strace.json`);
  const cg = json(`${name}.callgrind.json`);
  if (cg) rows[name].instructions = cg.instructions_per_request;
  if (st && stRun) { rows[name].syscalls = st.calls / stRun.ok; rows[name].redisSyscalls = st.redis_calls == null ? null : st.redis_calls / stRun.ok; }
}
const f = (x, d = 3) => (x == null ? "–" : x.toFixed(d));
console.log("Medians over the repetitions (each value's own median).\n");
console.log("| Target | ok / failed / 429 | TTFT p50 / p99 ms | e2e p50 / p99 ms | gateway CPU µs / request (each run) | EVALSHA / request | Redis commands / request | key_admit + key_settle / request | Redis CPU ms / 1,000 requests | mean Redis round trip µs (sluice) |");
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const [name, r] of Object.entries(rows))
  console.log(`| ${name} | ${r.ok} / ${r.failed} / ${r.s429} | ${f(r.ttft50)} / ${f(r.ttft99)} | ${f(r.e2e50)} / ${f(r.e2e99)} | ` +
    `${f(r.usPerReq, 1)} (${r.usPerReqAll}) | ${f(r.evalsha, 3)} | ${f(r.calls, 2)} | ` +
    `${name === "redis" ? `${f(r.admit, 3)} + ${f(r.settle, 3)}` : "–"} | ${f(r.redisMsPer1k, 1)} | ${name === "redis" ? f(r.rttUs, 0) : "–"} |`);
const l = rows.local, s = rows.redis;
if (l && s) {
  console.log(`\nredis / local: gateway CPU per request ${(s.usPerReq / l.usPerReq).toFixed(3)} ` +
    `(+${(s.usPerReq - l.usPerReq).toFixed(1)} µs), TTFT p50 ${(s.ttft50 / l.ttft50).toFixed(3)}, ` +
    `TTFT p99 ${(s.ttft99 / l.ttft99).toFixed(3)}, e2e p50 ${(s.e2e50 / l.e2e50).toFixed(3)}, e2e p99 ${(s.e2e99 / l.e2e99).toFixed(3)}`);
  console.log(`Redis's time inside EVALSHA per request (commandstats usec): ${s.scriptUs.toFixed(1)} µs of ` +
    `${s.redisMsPer1k.toFixed(1)} µs redis-server CPU per request (the rest: reading, parsing, replying, event loop)`);
  if (s.syscalls != null && l.syscalls != null)
    console.log(`system calls per request (strace, 5,000 requests): gateway local ${l.syscalls.toFixed(1)}, redis ` +
      `${s.syscalls.toFixed(1)} (+${(s.syscalls - l.syscalls).toFixed(1)}); redis-server ${f(s.redisSyscalls, 1)}`);
  if (s.instructions != null && l.instructions != null)
    console.log(`gateway user-space instructions per request (callgrind, --threads 1): local ${l.instructions}, redis ` +
      `${s.instructions} (${(s.instructions / l.instructions).toFixed(3)}x, +${s.instructions - l.instructions})`);
  console.log(`gateway + Redis CPU per request, redis target: ${(s.usPerReq + s.redisMsPer1k).toFixed(1)} µs ` +
    `(${((s.usPerReq + s.redisMsPer1k) / l.usPerReq).toFixed(3)}x local's gateway alone)`);
}
const problems = [];
for (const [name, r] of Object.entries(rows)) {
  if (r.failed || r.s429 || r.rejected) problems.push(`${name}: ${r.failed} failed, ${r.s429} answered 429, ${r.rejected} counted as rejections`);
}
if (s && (s.fallbacks || s.notOk)) problems.push(`redis: ${s.fallbacks} decisions made without Redis (fallbacks), ${s.notOk} Redis commands not ok`);
if (l && l.evalsha) problems.push(`local: ${l.evalsha} EVALSHA per request (the local target should not touch Redis)`);
if (s) console.log(`lease_renew runs during the redis floods: ${s.renew} (not per request: every lease/3 per replica)`);
console.log(problems.length ? `\nPROBLEMS:\n  ${problems.join("\n  ")}` : "\nchecks: 0 failed, 0 refused (429), 0 fallbacks, every Redis command ok, local target sent nothing to Redis");
JS
bench_log "raw JSON, /metrics and commandstats snapshots and logs in $OUT"
