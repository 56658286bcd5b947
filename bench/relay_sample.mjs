// Samples a process tree (a pid and all its descendants, e.g. nginx's master and workers) while a
// benchmark runs: the sum of VmRSS every INTERVAL ms, and utime+stime of the tree at the start and
// at the end. Used by bench/relay.sh for sluice and nginx alike, so both are measured the same way.
//
//   node bench/relay_sample.mjs PID OUT.json [INTERVAL_MS=50] [CLK_TCK=100]
//
// Prints "ready" on stdout after the first sample; on SIGTERM/SIGINT takes a last sample, writes
// OUT.json and exits: {baseline_rss_bytes, peak_rss_bytes, end_rss_bytes, cpu_seconds,
// cpu_seconds_by_pid, pids, samples}.
import fs from 'node:fs';

const [pidArg, out, intervalArg, tckArg] = process.argv.slice(2);
const root = Number(pidArg);
const interval = Number(intervalArg || 50);
const clkTck = Number(tckArg || 100);
if (!root || !out) {
  console.error('usage: relay_sample.mjs PID OUT.json [INTERVAL_MS] [CLK_TCK]');
  process.exit(2);
}

function read(path) {
  try { return fs.readFileSync(path, 'utf8'); } catch { return null; }
}

function tree(pid, acc = []) {
  acc.push(pid);
  let tasks = [];
  try { tasks = fs.readdirSync(`/proc/${pid}/task`); } catch { return acc; }
  for (const t of tasks) {
    const c = read(`/proc/${pid}/task/${t}/children`);
    if (!c) continue;
    for (const k of c.trim().split(/\s+/).filter(Boolean)) tree(Number(k), acc);
  }
  return acc;
}

function rssBytes(pid) {
  const s = read(`/proc/${pid}/status`);
  const m = s && s.match(/^VmRSS:\s+(\d+)\s+kB/m);
  return m ? Number(m[1]) * 1024 : 0;
}

function cpuTicks(pid) {
  const s = read(`/proc/${pid}/stat`);
  if (!s) return 0;
  const f = s.slice(s.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return Number(f[11]) + Number(f[12]);                 // fields 14 utime, 15 stime
}

const pidsSeen = new Set();
let baseline = -1, peak = 0, last = 0, samples = 0;
function sample() {
  let sum = 0;
  for (const p of tree(root)) { pidsSeen.add(p); sum += rssBytes(p); }
  if (baseline < 0) baseline = sum;
  if (sum > peak) peak = sum;
  last = sum;
  samples++;
}

function cpuSnapshot() {
  const m = {};
  for (const p of tree(root)) m[p] = cpuTicks(p);
  return m;
}

const cpuStart = cpuSnapshot();
sample();
process.stdout.write('ready\n');
const timer = setInterval(sample, interval);

function finish() {
  clearInterval(timer);
  sample();
  const cpuEnd = cpuSnapshot();
  const byPid = {};
  let total = 0;
  for (const [p, t] of Object.entries(cpuEnd)) {
    const d = (t - (cpuStart[p] || 0)) / clkTck;
    byPid[p] = d;
    total += d;
  }
  fs.writeFileSync(out, JSON.stringify({
    root, interval_ms: interval, baseline_rss_bytes: baseline, peak_rss_bytes: peak,
    end_rss_bytes: last, cpu_seconds: total, cpu_seconds_by_pid: byPid,
    pids: [...pidsSeen], samples,
  }) + '\n');
  process.exit(0);
}
process.on('SIGTERM', finish);
process.on('SIGINT', finish);
