// Summarises a bench/relay.sh results directory as Markdown (stdout) and summary.json.
//
//   node bench/relay_report.mjs DIR [LOAD_AT_END]
//
// Per scenario and target, over the repetitions: ok/failed summed; every other figure the median
// of the per-run values. Added TTFT is paired per repetition (proxy run minus the direct run of the
// same repetition) before the median. Ratios are to nginx in the same scenario.
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const loadEnd = process.argv[3] || '';
if (!dir) { console.error('usage: relay_report.mjs DIR [LOAD]'); process.exit(2); }
const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const readJson = (f) => { try { return JSON.parse(fs.readFileSync(f, 'utf8')); } catch { return null; } };

const median = (xs) => {
  const v = xs.filter((x) => x !== null && x !== undefined && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

// runs[scenario][target] = [{rep, flood, proc, meta}]
const runs = {};
for (const f of fs.readdirSync(dir)) {
  const m = f.match(/^([ABCD])-(direct|sluice|baseline|nginx)-(\d+)\.meta\.json$/);
  if (!m) continue;
  const [, s, t, rep] = m;
  const base = path.join(dir, `${s}-${t}-${rep}`);
  ((runs[s] ??= {})[t] ??= []).push({
    rep: Number(rep), meta: readJson(`${base}.meta.json`), flood: readJson(`${base}.flood.json`),
    proc: readJson(`${base}.proc.json`),
  });
}

const targets = ['direct', 'sluice', 'baseline', 'nginx'];
const agg = {};
for (const s of Object.keys(runs).sort()) {
  agg[s] = {};
  const directByRep = Object.fromEntries((runs[s].direct || []).map((r) => [r.rep, r.flood]));
  for (const t of targets) {
    const rs = runs[s][t];
    if (!rs) continue;
    const a = { reps: rs.length, ok: 0, failed: 0, failed_by_kind: {}, failure_samples: [], deaths: 0, bad_exit: 0, no_report: 0 };
    const per = { cps: [], cpu: [], rss: [], rssFlood: [], open: [], p50: [], p99: [], add50: [], add99: [], gap99: [], load: [] };
    for (const r of rs) {
      const f = r.flood, p = r.proc, me = r.meta || {};
      if (me.alive_after === 0) a.deaths++;
      if (me.exit_rc) a.bad_exit++;
      per.load.push(me.load_before);
      if (!f) { a.no_report++; continue; }
      a.ok += f.ok; a.failed += f.failed;
      for (const [k, v] of Object.entries(f.failed_by_kind || {})) a.failed_by_kind[k] = (a.failed_by_kind[k] || 0) + v;
      for (const x of f.failure_samples || []) if (!a.failure_samples.includes(x)) a.failure_samples.push(x);
      per.cps.push(f.chunks_per_second);
      per.open.push(f.peak_open_streams);
      per.p50.push(f.ttft.p50_ms); per.p99.push(f.ttft.p99_ms);
      per.gap99.push(f.gap.p99_ms);
      if (t !== 'direct') {
        if (p && f.chunks > 0) per.cpu.push((p.cpu_seconds / f.chunks) * 1e5);
        if (p && f.peak_open_streams > 0) per.rss.push((p.peak_rss_bytes - p.baseline_rss_bytes) / f.peak_open_streams);
        per.rssFlood.push(f.rss_per_stream);
        const d = directByRep[r.rep];
        if (d) { per.add50.push(f.ttft.p50_ms - d.ttft.p50_ms); per.add99.push(f.ttft.p99_ms - d.ttft.p99_ms); }
      }
      if (p) { a.baseline_rss_bytes = p.baseline_rss_bytes; a.peak_rss_bytes = p.peak_rss_bytes; }
    }
    for (const [k, v] of Object.entries(per)) a[k] = median(v);
    agg[s][t] = a;
  }
}

const fmtInt = (x) => (x === null ? '–' : Math.round(x).toLocaleString('en-US'));
const fmt = (x, d = 2) => (x === null || x === undefined ? '–' : x.toFixed(d));
// CPU per 100k chunks: three significant digits (a bulk run's figure is a few hundredths).
const fmtCpu = (x) => (x === null || x === undefined ? '–' : x.toPrecision(3));
const ratio = (x, ref) => (x === null || ref === null || ref === undefined || !(ref > 0) || x < 0 ? '' : ` (${(x / ref).toFixed(2)}×)`);

const out = [];
const sc = (s) => cfg[s] || {};
const desc = {
  A: (c) => `${fmtInt(c.streams)} streams × ${c.tokens} tokens, ${c.delay} apart, ramp ${c.ramp}`,
  B: (c) => `${c.streams} streams, ${c.requests} requests × ${c.tokens} tokens, no delay`,
  C: (c) => `${fmtInt(c.streams)} streams × ${c.tokens} tokens, ${c.delay} apart, ramp ${c.ramp}`,
  D: (c) => `${fmtInt(c.streams)} streams × ${c.tokens} tokens, ${c.delay} apart, ramp ${c.ramp}`,
};
out.push(`### Streaming relay: direct vs sluice vs nginx${cfg.quick ? ' (--quick)' : ''}`);
out.push('');
out.push(`${cfg.cores} cores (${cfg.cpu}), kernel ${cfg.kernel}, nginx ${cfg.nginx}, sluice ${cfg.sluice_commit} (${cfg.binary || 'binary ?'}); ` +
  `sluice --threads ${cfg.threads}${cfg.sluice_args ? ' ' + cfg.sluice_args : ''}, nginx worker_processes ${cfg.threads}${cfg.nginx_reuseport ? ' (reuseport)' : ''}, ` +
  `sim --threads ${cfg.sim_threads}, ${cfg.token_size}-byte tokens, fd limit ${cfg.nofile}. ` +
  `Load average at start ${cfg.load_start}${loadEnd ? `, at end ${loadEnd}` : ''}.`);
out.push('');
out.push('Scenarios: ' + Object.keys(agg).map((s) => `**${s}** ${desc[s](sc(s))} (median of ${sc(s).repeat} run${sc(s).repeat > 1 ? 's' : ''})`).join('; ') + '.');
out.push('');
out.push('| Scen. | Target | ok / failed | peak open | chunks/s | CPU s per 100k chunks | RSS per open stream | TTFT p50 / p99 ms | added TTFT p50 ms | added TTFT p99 ms |');
out.push('|---|---|---|---|---|---|---|---|---|---|');
for (const s of Object.keys(agg)) {
  const n = agg[s].nginx || {};
  for (const t of targets) {
    const a = agg[s][t];
    if (!a) continue;
    const isProxy = t !== 'direct';
    let okf = `${fmtInt(a.ok)} / ${fmtInt(a.failed)}`;
    if (a.deaths) okf += ` **died ${a.deaths}×**`;
    if (a.no_report) okf += ` (no report ${a.no_report}×)`;
    out.push(`| ${s} | ${t} | ${okf} | ${fmtInt(a.open)} | ${fmtInt(a.cps)}${ratio(a.cps, n.cps)} | ` +
      `${isProxy ? fmtCpu(a.cpu) + ratio(a.cpu, n.cpu) : '–'} | ` +
      `${isProxy ? fmt(a.rss / 1024, 1) + ' KiB' + ratio(a.rss, n.rss) : '–'} | ` +
      `${fmt(a.p50)} / ${fmt(a.p99)} | ` +
      `${isProxy ? fmt(a.add50) + ratio(a.add50, n.add50) : '–'} | ${isProxy ? fmt(a.add99) + ratio(a.add99, n.add99) : '–'} |`);
  }
}
out.push('');
out.push('Ratios in parentheses are to nginx in the same scenario (omitted where nginx\'s figure is ≤ 0). ' +
  'CPU is utime+stime of the proxy\'s whole process tree during the flood; RSS per open stream is ' +
  '(peak − baseline) of the tree\'s summed VmRSS, sampled every 50 ms, over flood\'s peak_open_streams. ' +
  'Added TTFT = the proxy\'s TTFT percentile minus the direct run\'s, paired per repetition.');
out.push('');

// The new binary against the previous one (SLUICE_BASELINE), scenario by scenario.
if (Object.values(agg).some((a) => a.baseline)) {
  out.push(`#### sluice against the previous binary (${cfg.baseline || 'baseline'})`);
  out.push('');
  out.push('| Scen. | CPU s per 100k chunks, new / old | RSS per open stream, new / old | added TTFT p99 ms, new / old |');
  out.push('|---|---|---|---|');
  for (const s of Object.keys(agg)) {
    const a = agg[s].sluice, b = agg[s].baseline;
    if (!a || !b) continue;
    out.push(`| ${s} | ${fmtCpu(a.cpu)} / ${fmtCpu(b.cpu)}${ratio(a.cpu, b.cpu)} | ${fmt(a.rss / 1024, 1)} / ${fmt(b.rss / 1024, 1)} KiB${ratio(a.rss, b.rss)} | ` +
      `${fmt(a.add99)} / ${fmt(b.add99)}${ratio(a.add99, b.add99)} |`);
  }
  out.push('');
  out.push('Ratios are new / old; each repetition ran both, alternated.');
  out.push('');
}

// Targets of issue 2.
const S = (s, t) => (agg[s] && agg[s][t]) || null;
const rows = [];
const verdict = (ok) => (ok === null ? 'n/a' : ok ? '**pass**' : '**FAIL**');
{
  const c = S('C', 'sluice'), cn = S('C', 'nginx');
  const v = c && c.rss !== null ? c.rss / 1024 : null;
  rows.push(['RSS per open stream (C)', '≤ 16 KiB', v === null ? '–' : `${fmt(v, 1)} KiB`, cn && cn.rss !== null ? `${fmt(cn.rss / 1024, 1)} KiB` : '–', verdict(v === null ? null : v <= 16)]);
}
{
  const b = S('B', 'sluice'), bn = S('B', 'nginx');
  const r = b && bn && b.cpu !== null && bn.cpu > 0 ? b.cpu / bn.cpu : null;
  rows.push(['CPU per chunk vs nginx (B)', '≤ 1.5× nginx', b ? `${fmtCpu(b.cpu)} s/100k = ${fmt(r)}× nginx` : '–', bn ? `${fmtCpu(bn.cpu)} s/100k` : '–', verdict(r === null ? null : r <= 1.5)]);
}
for (const s of ['A', 'D']) {
  const a = S(s, 'sluice'), an = S(s, 'nginx');
  if (!a && !an) continue;
  const v = a ? a.add99 : null;
  rows.push([`added TTFT p99 at ${fmtInt(sc(s).streams)} streams, ${sc(s).delay} apart (${s})`, '< 1 ms', v === null ? '–' : `${fmt(v)} ms`, an && an.add99 !== null ? `${fmt(an.add99)} ms` : '–', verdict(v === null ? null : v < 1)]);
}
{
  let failed = 0, deaths = 0, any = false;
  for (const s of Object.keys(agg)) { const x = S(s, 'sluice'); if (x) { any = true; failed += x.failed + x.no_report; deaths += x.deaths; } }
  rows.push(['every stream through sluice verified ok', '0 failed', any ? `${failed} failed, ${deaths} crashes` : '–', '', verdict(any ? failed === 0 && deaths === 0 : null)]);
}
out.push('| Target (issue 2) | Limit | sluice | nginx | Result |');
out.push('|---|---|---|---|---|');
for (const r of rows) out.push(`| ${r.join(' | ')} |`);
out.push('');

const notes = [];
for (const s of Object.keys(agg)) for (const t of targets) {
  const a = agg[s][t];
  if (!a) continue;
  if (a.failed || a.deaths || a.no_report || a.bad_exit) {
    notes.push(`- ${s}/${t}: ${a.failed} failed ${JSON.stringify(Object.fromEntries(Object.entries(a.failed_by_kind).filter(([, v]) => v)))}` +
      `${a.deaths ? `, process died during ${a.deaths} run(s)` : ''}${a.bad_exit ? `, non-zero exit after SIGTERM in ${a.bad_exit} run(s)` : ''}` +
      `${a.failure_samples.length ? `; samples: ${a.failure_samples.slice(0, 4).map((x) => '`' + x.slice(0, 120) + '`').join(', ')}` : ''}`);
  }
}
if (agg.C && cfg.C && cfg.nofile < 2 * cfg.C.streams + 64) {
  notes.push(`- The descriptor limit (${cfg.nofile}, the hard limit) is below the ~${2 * cfg.C.streams + 64} a one-process proxy needs ` +
    `for ${cfg.C.streams} client + ${cfg.C.streams} upstream sockets in C; nginx's ${cfg.threads} workers each have their own limit.`);
}
if (notes.length) { out.push('Failures and notes:'); out.push(''); out.push(...notes); out.push(''); }

console.log(out.join('\n'));
fs.writeFileSync(path.join(dir, 'summary.json'), JSON.stringify({ config: cfg, load_end: loadEnd, scenarios: agg }, null, 1) + '\n');
