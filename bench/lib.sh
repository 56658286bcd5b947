# Helpers shared by the bench/ scripts (sourced, not run). Bash 5, Debian 12 userland, loopback only.
#
# Every process started through bench_spawn is remembered in BENCH_PIDS and stopped by bench_cleanup
# (install it with `trap bench_cleanup EXIT`). Nothing here touches a path outside BENCH_TMP.

BENCH_PIDS=()

bench_log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
bench_die() { bench_log "error: $*"; exit 1; }

# bench_spawn LOGFILE CMD... : starts CMD in the background with stdout+stderr to LOGFILE; sets
# BENCH_LAST_PID.
bench_spawn() {
  local logf=$1; shift
  "$@" >"$logf" 2>&1 &
  BENCH_LAST_PID=$!
  BENCH_PIDS+=("$BENCH_LAST_PID")
}

# bench_stop PID : SIGTERM, wait up to 10 s, then SIGKILL. Only ever a pid this script started.
bench_stop() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    bench_log "pid $pid ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  local keep=() p
  for p in "${BENCH_PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  BENCH_PIDS=("${keep[@]}")
}

bench_cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${BENCH_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  BENCH_PIDS=()
}

# bench_wait_port LOGFILE PID : prints the port of the first "listening on HOST:PORT" line.
bench_wait_port() {
  local f=$1 pid=$2 i
  for i in $(seq 1 400); do
    if grep -q "listening on" "$f" 2>/dev/null; then
      grep -m1 -o "listening on [0-9.]*:[0-9]*" "$f" | sed 's/.*://'
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  bench_log "process $pid did not start; its output:"; cat "$f" >&2
  return 1
}

# bench_wait_tcp PORT PID : waits until 127.0.0.1:PORT accepts a connection (for servers that do
# not print their port, i.e. nginx).
bench_wait_tcp() {
  local port=$1 pid=$2 i
  for i in $(seq 1 400); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# bench_free_port : a currently free loopback TCP port (the kernel picks it; tiny race until use).
bench_free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# bench_raise_nofile : raises the soft descriptor limit to the hard one; prints the result.
bench_raise_nofile() {
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  ulimit -n
}

# bench_workdirs NAME SLUICE_BIN : the results directory OUT (bench/out/NAME-<time> unless OUT is
# set already), a scratch directory BENCH_TMP removed on exit with every process started here, and
# BIN: a private copy of SLUICE_BIN to run (see bench_private_copy).
bench_workdirs() {
  local name=$1 src=$2
  [ -n "${OUT:-}" ] || OUT=bench/out/$name-$(date +%Y%m%d-%H%M%S)
  mkdir -p "$OUT"
  OUT=$(realpath "$OUT")
  BENCH_TMP=$(mktemp -d "/tmp/sluice-$name.XXXXXX")
  trap 'bench_cleanup; rm -rf "$BENCH_TMP"' EXIT
  trap 'exit 130' INT TERM
  BIN=$(bench_private_copy "$src" "$BENCH_TMP")
}

# bench_pins : the arrays PROXY_PIN and LOAD_PIN, command prefixes that pin the proxy under test to
# the CPUs in PROXY_CPUS and the simulator and load generator to those in LOAD_CPUS (taskset
# lists, e.g. 0 and 1: issue 31's one-core harness). Unset, a prefix is empty and nothing is pinned.
# taskset execs the command, so a spawned pid is the pinned program's own.
bench_pins() {
  PROXY_PIN=() LOAD_PIN=()
  if [ -n "${PROXY_CPUS:-}" ]; then PROXY_PIN=(taskset -c "$PROXY_CPUS"); fi
  if [ -n "${LOAD_CPUS:-}" ]; then LOAD_PIN=(taskset -c "$LOAD_CPUS"); fi
}

# bench_load : the 1-minute load average.
bench_load() { cut -d' ' -f1 /proc/loadavg; }

# bench_private_copy BIN DIR : copies BIN into DIR and prints the copy's path, so that a rebuild
# during the run cannot change what is measured. Retries while BIN is being rewritten (a build).
bench_private_copy() {
  local src=$1 dir=$2 _
  for _ in 1 2 3 4 5 6; do
    cp "$src" "$dir/sluice" 2>/dev/null && "$dir/sluice" --help >/dev/null 2>&1 && break
    bench_log "$src is being rewritten (a build?); retrying in 10 s"; sleep 10
  done
  "$dir/sluice" --help >/dev/null 2>&1 || bench_die "no usable copy of $src"
  echo "$dir/sluice"
}

# bench_build_sluice NO_BUILD BIN : builds build/sluice (RelWithDebInfo) unless NO_BUILD is 1 or BIN
# is another binary; dies when BIN is not there afterwards.
bench_build_sluice() {
  local no_build=$1 bin=$2
  if [ "$no_build" = 0 ] && [ "$bin" = build/sluice ]; then
    if [ ! -f build/CMakeCache.txt ]; then
      cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    fi
    bench_log "building sluice (RelWithDebInfo)..."
    cmake --build build -j "$(nproc)" --target sluice >/dev/null || bench_die "build failed"
  fi
  [ -x "$bin" ] || bench_die "$bin missing (build it, or drop --no-build)"
}

# bench_nginx_conf DIR WORKERS NOFILE PORT SIMPORT REUSEPORT : writes DIR/nginx.conf from
# bench/nginx.conf.template (a plain SSE pass-through to the simulator on SIMPORT; REUSEPORT is
# "reuseport" or empty); every path nginx writes lies under DIR.
bench_nginx_conf() {
  local dir=$1 workers=$2 nofile=$3 port=$4 simport=$5 reuse=$6
  mkdir -p "$dir"
  sed -e "s|@TMP@|$dir|g" -e "s|@WORKERS@|$workers|g" -e "s|@NOFILE@|$nofile|g" \
      -e "s|@PORT@|$port|g" -e "s|@SIMPORT@|$simport|g" -e "s|@REUSEPORT@|$reuse|g" \
      -e "s|@KEY@|sk-bench-not-a-real-key|g" bench/nginx.conf.template >"$dir/nginx.conf"
}

# TRACE_RATIO=R: a collector for traces (bench/otlp_sink.py, logging to OUT_DIR/otlp-sink.log) and
# the flags that send this build's spans to it, sampled at R, in the array trace_flags (empty
# without TRACE_RATIO). Usage: bench_trace_flags OUT_DIR
bench_trace_flags() {
  trace_flags=()
  [ -n "${TRACE_RATIO:-}" ] || return 0
  local port
  port=$(bench_free_port)
  bench_spawn "$1/otlp-sink.log" python3 bench/otlp_sink.py "$port"
  bench_wait_tcp "$port" "$BENCH_LAST_PID" || bench_die "the OTLP sink did not start"
  trace_flags=(--trace-endpoint "http://127.0.0.1:$port" --trace-sample-ratio "$TRACE_RATIO")
}

# bench_callgrind_flood LOG BIN SIM_PORT [SERVE FLAGS...] -- [FLOOD FLAGS...] : runs BIN's `serve
# --threads 1` under callgrind in front of the simulator on SIM_PORT, sends it one flood (this
# build's load generator, $BIN, with FLOOD FLAGS), stops it, and prints its total user-space
# instructions. The flood's JSON goes to LOG.flood.json; a failed flood ends the script. SIM_PORT
# "-": the serve flags name the upstream themselves (a --config with an upstreams: list).
bench_callgrind_flood() {
  local log=$1 bin=$2 sim=$3 serve=() port pid out
  shift 3
  [ "$sim" = - ] || serve+=(--upstream http://127.0.0.1:"$sim")
  while [ $# -gt 0 ] && [ "$1" != -- ]; do serve+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  port=$(bench_free_port)
  out=$(mktemp "$BENCH_TMP/callgrind.XXXXXX")
  bench_spawn "$log" valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" serve --listen 127.0.0.1:"$port" \
    --threads 1 --log-level warn --drain-delay 0s "${serve[@]}"
  pid=$BENCH_LAST_PID
  bench_wait_tcp "$port" "$pid" || bench_die "sluice under valgrind did not start (see $log)"
  "$BIN" flood --target "http://127.0.0.1:$port" --json --progress=false "$@" >"$log.flood.json" ||
    bench_die "the flood through sluice under valgrind failed (see $log.flood.json)"
  bench_stop "$pid"
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !seen {gsub(",", "", $1); print $1; seen = 1}'
  rm -f "$out"
}
