#!/usr/bin/env bash
# Streamed bodies benchmark (issue 30): N (100) concurrent uploads and N concurrent downloads of
# SIZE (50 MiB) each, through sluice and through nginx (a plain streaming proxy: request and
# response buffering off, no body size limit, HTTP/1.1 keep-alive upstream; bench/
# nginx_bodies.conf.template), to the simulator, in one invocation.
#
#   upload    POST /v1/audio/transcriptions, multipart, a `file` part of SIZE bytes (Content-Length);
#             the simulator digests it piece by piece and answers small JSON whose usage accounts
#             for SIZE bytes (verified)
#   download  POST /v1/audio/speech with x-sim-speech-bytes: SIZE; the simulator streams SIZE
#             deterministic bytes, the client counts and discards them (verified)
#
# The load client is bench/bodies_client.py (python3 asyncio, stdlib only): all N connections are
# opened, then all N transfers start at once; the upload body comes from one reused 1 MiB buffer.
# On the proxy's process tree (sluice; nginx's master and workers) bench/relay_sample.mjs sums
# VmRSS every 50 ms and takes utime+stime before and after. Each proxy is started fresh for each
# run: idle RSS is its RSS before the first request. Reported: peak RSS above idle, CPU seconds,
# CPU ms per MiB moved, MiB/s, per-transfer p50/p99, and the ratios sluice/nginx. Results (raw
# JSON, logs, the Markdown table) go to --out.
#
#   bash bench/bodies.sh              # 100 x 50 MiB each way, both targets (~2.5 min on 2 cores)
#   bash bench/bodies.sh --quick      # 20 x 8 MiB (~15 s)
#   N=50 SIZE=100MiB bash bench/bodies.sh --directions download
#
# Loopback only. sluice runs without client keys and without OPENAI_API_KEY (the client's own
# Authorization goes upstream, as nginx passes it). Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

usage() {
  sed -n '2,/^set -e/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  --quick             N=20, SIZE=8MiB (the env vars below still win)
  --targets LIST      comma-separated subset of sluice,nginx,direct (default sluice,nginx; direct:
                      the client against the simulator itself, no proxy)
  --directions LIST   comma-separated subset of upload,download (default upload,download)
  --threads N         sluice --threads and nginx worker_processes (default: nproc)
  --out DIR           results directory (default bench/out/bodies-YYYYmmdd-HHMMSS)
  --no-build          use build/sluice (or $SLUICE_BIN) as it is
Env: N (100 transfers at once), SIZE (50MiB; bytes, or with KiB/MiB/GiB), REPEAT (1), THREADS,
     SIM_THREADS (1), UPLOAD_ROUTE (transcriptions | files), CHUNKED (0; 1: uploads sent chunked),
     TIMEOUT (600 s per transfer), NGINX (/usr/sbin/nginx), NGINX_REUSEPORT (1), NGINX_BUFFER
     (unset: nginx's default buffers; e.g. 64k sets proxy_buffer_size, proxy_buffers 4 x it and
     client_body_buffer_size),
     SLUICE_BIN (build/sluice), SLUICE_ARGS (extra `sluice serve` flags), NO_BUILD (1 = --no-build),
     PROXY_CPUS LOAD_CPUS (taskset CPU lists: the proxy on the first, simulator and client on the second)
EOF
}

QUICK=0 NO_BUILD=${NO_BUILD:-0} TARGETS=sluice,nginx DIRECTIONS=upload,download OUT=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --targets) TARGETS=$2; shift ;;
    --directions) DIRECTIONS=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --no-build) NO_BUILD=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bodies.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ "$QUICK" = 1 ]; then : "${N:=20}" "${SIZE:=8MiB}"; fi
: "${N:=100}" "${SIZE:=50MiB}" "${REPEAT:=1}" "${THREADS:=$(nproc)}" "${SIM_THREADS:=1}"
: "${UPLOAD_ROUTE:=transcriptions}" "${CHUNKED:=0}" "${TIMEOUT:=600}"
: "${NGINX:=/usr/sbin/nginx}" "${NGINX_REUSEPORT:=1}" "${NGINX_BUFFER:=}"
: "${SLUICE_BIN:=build/sluice}" "${SLUICE_ARGS:=}"

to_bytes() {  # 52428800 | 50MiB | 50M | 512KiB | 1GiB
  local v=$1 n unit
  [[ $v =~ ^([0-9]+)([KMG]?)(i?B)?$ ]] || bench_die "SIZE: bytes or a number with KiB/MiB/GiB, not '$v'"
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in K) n=$(( n << 10 )) ;; M) n=$(( n << 20 )) ;; G) n=$(( n << 30 )) ;; esac
  echo "$n"
}
SIZE_BYTES=$(to_bytes "$SIZE")

command -v python3 >/dev/null || bench_die "python3 is needed"
command -v node >/dev/null || bench_die "node is needed (bench/relay_sample.mjs; bash scripts/install-deps.sh)"
[[ ,$TARGETS, != *,nginx,* ]] || [ -x "$NGINX" ] || bench_die "$NGINX not found (bash scripts/install-deps.sh installs nginx-light)"

# --- build ---------------------------------------------------------------------------------------
bench_build_sluice "$NO_BUILD" "$SLUICE_BIN"

# --- environment -------------------------------------------------------------------------------
NOFILE=$(bench_raise_nofile)
NGINX_NOFILE=$(( NOFILE < 65536 ? NOFILE : 65536 ))
CLK_TCK=$(getconf CLK_TCK)
bench_pins
bench_workdirs bodies "$SLUICE_BIN"

# sluice as the nginx reference is configured: every transfer admitted at once, an upload cap above
# SIZE, no per-request log lines, no drain delay on SIGTERM. Only flags this binary knows are passed.
serve_help=$("$BIN" serve --help 2>&1 || true)
grep -q -- '--max-upload-bytes' <<<"$serve_help" || bench_die "$SLUICE_BIN has no --max-upload-bytes: no streamed routes"
UPLOAD_CAP=$(( SIZE_BYTES + (1 << 20) ))
BENCH_SERVE_ARGS="--max-upload-bytes $UPLOAD_CAP --max-streams $(( N + 64 )) --queue-depth $(( N + 64 ))"
grep -q -- '--log-level' <<<"$serve_help" && BENCH_SERVE_ARGS+=" --log-level warn"
grep -q -- '--drain-delay' <<<"$serve_help" && BENCH_SERVE_ARGS+=" --drain-delay 0s"  # a quick stop between runs
SLUICE_ARGS="$BENCH_SERVE_ARGS${SLUICE_ARGS:+ $SLUICE_ARGS}"
SIM_ARGS=(--threads "$SIM_THREADS" --max-upload "$(( SIZE_BYTES + (1 << 20) ))")
CLIENT_ARGS=(--transfers "$N" --size "$SIZE_BYTES" --route "$UPLOAD_ROUTE" --timeout "$TIMEOUT")
[ "$CHUNKED" = 1 ] && CLIENT_ARGS+=(--chunked)
NGINX_BUFFERS=""
[ -n "$NGINX_BUFFER" ] && NGINX_BUFFERS="proxy_buffer_size $NGINX_BUFFER; proxy_buffers 4 $NGINX_BUFFER; client_body_buffer_size $NGINX_BUFFER;"

cat >"$OUT/config.json" <<EOF
{"quick": $QUICK, "transfers": $N, "size_bytes": $SIZE_BYTES, "repeat": $REPEAT, "threads": $THREADS,
 "sim_threads": $SIM_THREADS, "upload_route": "$UPLOAD_ROUTE", "chunked": $CHUNKED, "nofile": $NOFILE,
 "cores": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //;s/"//g')",
 "mem_total_kb": $(awk '/MemTotal/ {print $2}' /proc/meminfo),
 "kernel": "$(uname -r)", "nginx": "$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')", "nginx_buffers": "$NGINX_BUFFERS",
 "python": "$(python3 -c 'import platform; print(platform.python_version())')",
 "sluice_commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src 2>/dev/null || echo +local-changes)",
 "binary": "$SLUICE_BIN built $(date -u -r "$SLUICE_BIN" +%FT%TZ), sha256 $(sha256sum "$BIN" | cut -c1-12)",
 "sluice_args": "$SLUICE_ARGS", "sim_args": "${SIM_ARGS[*]}", "proxy_cpus": "${PROXY_CPUS:-}", "load_cpus": "${LOAD_CPUS:-}",
 "targets": "$TARGETS", "directions": "$DIRECTIONS", "started": "$(date -u +%FT%TZ)", "load_start": "$(cut -d' ' -f1-3 /proc/loadavg)"}
EOF

bench_log "results in $OUT; $N x $SIZE_BYTES bytes; sluice --threads $THREADS $SLUICE_ARGS; nginx workers $THREADS; load $(bench_load)"

# --- simulator ---------------------------------------------------------------------------------
bench_spawn "$OUT/sim.log" "${LOAD_PIN[@]}" "$BIN" sim --listen 127.0.0.1:0 "${SIM_ARGS[@]}"
SIM_PID=$BENCH_LAST_PID
SIM_PORT=$(bench_wait_port "$OUT/sim.log" "$SIM_PID") || bench_die "sim did not start"

cpu_ticks() {  # utime+stime of a process, every thread (fields 14 and 15 of /proc/PID/stat)
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# Starts the target; sets T_PID and T_PORT.
start_target() {
  local target=$1 logf=$2
  case $target in
    direct) T_PID=$SIM_PID T_PORT=$SIM_PORT ;;
    sluice)
      # shellcheck disable=SC2086
      bench_spawn "$logf" env -u OPENAI_API_KEY "${PROXY_PIN[@]}" "$BIN" serve \
        --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$SIM_PORT" --threads "$THREADS" $SLUICE_ARGS
      T_PID=$BENCH_LAST_PID
      T_PORT=$(bench_wait_port "$logf" "$T_PID") || bench_die "sluice serve did not start"
      ;;
    nginx)
      local dir=$BENCH_TMP/nginx-$DIR-$RUN reuse=""
      [ "$NGINX_REUSEPORT" = 1 ] && reuse=reuseport
      T_PORT=$(bench_free_port)
      mkdir -p "$dir"
      sed -e "s|@TMP@|$dir|g" -e "s|@WORKERS@|$THREADS|g" -e "s|@NOFILE@|$NGINX_NOFILE|g" \
          -e "s|@PORT@|$T_PORT|g" -e "s|@SIMPORT@|$SIM_PORT|g" -e "s|@REUSEPORT@|$reuse|g" \
          -e "s|@BUFFERS@|$NGINX_BUFFERS|g" bench/nginx_bodies.conf.template >"$dir/nginx.conf"
      cp "$dir/nginx.conf" "$OUT/nginx.conf"
      bench_spawn "$logf" "${PROXY_PIN[@]}" "$NGINX" -p "$dir" -e "$dir/nginx-error.log" -c "$dir/nginx.conf"
      T_PID=$BENCH_LAST_PID
      bench_wait_tcp "$T_PORT" "$T_PID" || { cat "$logf" "$dir/nginx-error.log" >&2; bench_die "nginx did not start"; }
      local i
      for i in $(seq 1 100); do  # every worker forked
        [ "$(cat /proc/"$T_PID"/task/*/children 2>/dev/null | wc -w)" -ge "$THREADS" ] && break
        sleep 0.05
      done
      ;;
  esac
}

# run_one DIRECTION TARGET REP
run_one() {
  local dir=$1 target=$2 rep=$3
  local base="$OUT/$dir-$target-$rep" rc=0 alive=1 exit_rc=0 load0 load1 sim0 sim1
  DIR=$dir RUN=$rep
  start_target "$target" "$base.server.log"
  sleep 0.5
  load0=$(bench_load)
  "${LOAD_PIN[@]}" node bench/relay_sample.mjs "$T_PID" "$base.proc.json" 50 "$CLK_TCK" >"$base.sampler.log" 2>&1 &
  local spid=$!
  BENCH_PIDS+=("$spid")
  for _ in $(seq 1 100); do grep -q ready "$base.sampler.log" 2>/dev/null && break; sleep 0.05; done
  sim0=$(cpu_ticks "$SIM_PID")
  "${LOAD_PIN[@]}" python3 bench/bodies_client.py --port "$T_PORT" --direction "$dir" "${CLIENT_ARGS[@]}" \
    >"$base.client.json" 2>"$base.client.err" || rc=$?
  sim1=$(cpu_ticks "$SIM_PID")
  bench_stop "$spid"
  load1=$(bench_load)
  if [ "$target" != direct ]; then
    kill -0 "$T_PID" 2>/dev/null || alive=0
    if [ "$alive" = 1 ]; then
      kill -TERM "$T_PID" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$T_PID" 2>/dev/null || break; sleep 0.1; done
    fi
    wait "$T_PID" 2>/dev/null || exit_rc=$?
    bench_stop "$T_PID"
  fi
  printf '{"direction":"%s","target":"%s","rep":%s,"client_rc":%s,"alive_after":%s,"exit_rc":%s,"load_before":%s,"load_after":%s,"sim_cpu_seconds":%s}\n' \
    "$dir" "$target" "$rep" "$rc" "$alive" "$exit_rc" "$load0" "$load1" \
    "$(awk -v a="$sim0" -v b="$sim1" -v t="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / t }')" >"$base.meta.json"
  local summary
  summary=$(python3 - "$base" <<'PY' 2>/dev/null || echo "no report (client rc $rc): $(tail -c 300 "$base.client.err")"
import json, sys
b = sys.argv[1]
c, p = json.load(open(b + ".client.json")), json.load(open(b + ".proc.json"))
mib = c["total_bytes"] / 1048576
print(f"ok {c['ok']} failed {c['failed']} {c['errors'] or ''} in {c['wall_seconds']} s, {c['mib_per_second']} MiB/s; "
      f"RSS idle {p['baseline_rss_bytes'] / 1048576:.1f} peak +{(p['peak_rss_bytes'] - p['baseline_rss_bytes']) / 1048576:.1f} MiB; "
      f"CPU {p['cpu_seconds']:.2f} s = {1000 * p['cpu_seconds'] / mib if mib else float('nan'):.3f} ms/MiB")
PY
)
  bench_log "$dir $target #$rep: $summary$([ "$alive" = 0 ] && echo ' PROXY DIED')"
  sleep 1
}

t0=$SECONDS
IFS=, read -r -a targets <<<"$TARGETS"
IFS=, read -r -a directions <<<"$DIRECTIONS"
for dir in "${directions[@]}"; do
  case $dir in upload|download) ;; *) bench_die "unknown direction $dir" ;; esac
  bench_log "$dir: $N x $SIZE_BYTES bytes at once"
  for rep in $(seq 1 "$REPEAT"); do
    n=${#targets[@]}
    for i in $(seq 0 $(( n - 1 ))); do  # the order rotates from one repeat to the next
      t=${targets[$(( (i + rep - 1) % n ))]}
      case $t in sluice|nginx|direct) ;; *) bench_die "unknown target $t" ;; esac
      run_one "$dir" "$t" "$rep"
    done
  done
done
curl -s "http://127.0.0.1:$SIM_PORT/sim/stats" >"$OUT/sim-stats.json" 2>/dev/null || true
bench_stop "$SIM_PID"

bench_log "done in $((SECONDS - t0)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/bodies_report.py "$OUT" "$((SECONDS - t0))" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/report.md"
