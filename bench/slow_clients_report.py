#!/usr/bin/env python3
"""Report of a bench/slow_clients.sh run: reads DIR/result.json (bench/slow_clients.py), DIR/run.json,
DIR/sim-stats.json and DIR/gateway.log, prints a Markdown table. Rerunnable on a saved directory:
    python3 bench/slow_clients_report.py bench/out/slow-clients-YYYYmmdd-HHMMSS
"""
import datetime
import json
import sys

d = sys.argv[1]
r = json.load(open(f"{d}/result.json"))
run = json.load(open(f"{d}/run.json"))
try:
    sim = json.load(open(f"{d}/sim-stats.json"))
except (OSError, ValueError):
    sim = {}
log = open(f"{d}/gateway.log").read()
load_start, load_end, alive = run["load_start"], run["load_end"], run["alive"]
nofile, stall, threads = run["nofile"], run["write_stall"], run["threads"]
mib = lambda b: b / 1048576
ma = r["metrics_after"]
# Peak concurrency from the gateway's own per-stream log lines (start = end - duration): /metrics
# scrapes can time out while the gateway is saturated.
ev = []
cut_durations = []
for line in log.splitlines():
    if '"stream completed"' not in line:
        continue
    j = json.loads(line)
    end = datetime.datetime.fromisoformat(j["ts"].replace("Z", "+00:00")).timestamp()
    ev += [(end - j["duration_ms"] / 1000, 1), (end, -1)]
    if j.get("outcome") == "cancelled":
        cut_durations.append(j["duration_ms"] / 1000)
ev.sort()
log_peak = cur = 0
for _, step in ev:
    cur += step
    log_peak = max(log_peak, cur)
peak_streams = max(r["peak_streams_active"], log_peak) or 1
cut_durations.sort()
q = lambda p: cut_durations[min(len(cut_durations) - 1, int(p * len(cut_durations)))]
dur_text = (f"{cut_durations[0]:.1f} / {q(0.5):.1f} / {q(0.99):.1f} / {cut_durations[-1]:.1f} s"
            if cut_durations else "none")
probes = r["during"]
ok = [p for p in probes if p["status"] == 200 and p["done"]]
during_text = (f"{len(ok)} of {len(probes)} served" +
               (f", first at {ok[0]['at_s']} s ({ok[0]['seconds']} s)" if ok else "") +
               (f", median {sorted(p['seconds'] for p in ok)[len(ok) // 2]} s" if ok else "") +
               "; failed: " + ", ".join(f"{p['at_s']} s {str(p['status'])[:40]}" for p in probes if p not in ok)[:400])
per_stream = (r["peak_rss_bytes"] - r["baseline_rss_bytes"]) / peak_streams
warn_emfile = log.count("out of file descriptors")
print(f"# Slow clients: {r['streams']:,} never-reading streams\n")
print(f"gateway --threads {threads}, --write-stall-timeout {stall}, descriptor limit {nofile}; "
      f"client rcvbuf {r['rcvbuf']} B, MSS {r['mss']}; load average {load_start} at start, {load_end} at end\n")
print("| figure | value |\n|---|---|")
rows = [
  ("connections opened / failed", f"{r['opened']:,} / {sum(r['open_errors'].values()):,} {r['open_errors'] or ''}"),
  ("time to open them all", f"{r['opened_s']:.2f} s"),
  ("peak streams active (from /metrics)", f"{r['peak_streams_active']:,.0f}"),
  ("gateway RSS baseline / peak / after cut / after close", f"{mib(r['baseline_rss_bytes']):.1f} / {mib(r['peak_rss_bytes']):.1f} / {mib(r['rss_after_cut_bytes']):.1f} / {mib(r['rss_after_close_bytes']):.1f} MiB"),
  ("RSS per stalled stream ((peak - baseline) / peak concurrent streams)", f"{per_stream / 1024:.1f} KiB"),
  ("kernel TCP memory (machine) baseline / peak / after cut / after clients closed", f"{mib(r['baseline_tcp_mem_bytes']):.0f} / {mib(r['peak_tcp_mem_bytes']):.0f} / {mib(r['tcp_mem_after_cut_bytes']):.0f} / {mib(r['tcp_mem_after_close_bytes']):.0f} MiB"),
  ("orphaned TCP sockets peak / after cut / after clients closed", f"{r['peak_orphans']:,} / {r['orphans_after_cut']:,} / {r['orphans_after_close']:,}"),
  ("first stream cut at", f"{r['first_cut_s']} s after the first connect"),
  ("all streams cut at", f"{r['all_cut_s']} s after the first connect, {(r['all_cut_s'] or 0) - r['opened_s']:.2f} s after the last was opened"),
  ("lifetime of each cut stream (request to cut) min / median / p99 / max", dur_text),
  ("normal requests while they were held (one every 2 s, 10 s timeout)", during_text),
  ("normal request after the cut", f"{r['after']['status']}, [DONE] {r['after']['done']}, {r['after']['seconds']} s"),
  ("stalled sockets at the end (peeked)", json.dumps(r['stalled_sockets'])),
  ("sluice_write_stalls_total", f"{ma.get('sluice_write_stalls_total', 0):,.0f}"),
  ("streams / buffers / buffered bytes / connections after", f"{ma.get('sluice_streams_active')} / {ma.get('sluice_stream_active_buffers')} / {ma.get('sluice_stream_buffered_bytes')} / {ma.get('sluice_connections_active')}"),
  ("CPU seconds until the cut: gateway / simulator", f"{r['cpu_seconds_until_cut']['gateway']} / {r['cpu_seconds_until_cut']['sim']}"),
  ("peak concurrent streams (from the gateway's log)", f"{log_peak:,}"),
  ("simulator streams started / aborted / completed", f"{sim.get('streams_started')} / {sim.get('streams_aborted')} / {sim.get('streams_completed')}"),
  ("EMFILE warnings in the gateway log", f"{warn_emfile}"),
  ("/metrics scrapes that failed (5 s timeout, every 250 ms)", f"{r['metrics_scrape_errors']}"),
  ("gateway alive at the end", alive),
]
for k, v in rows:
    print(f"| {k} | {v} |")
print("\nOther non-zero series after the run:\n")
for k, v in sorted(ma.items()):
    if k.startswith("sluice_requests_total") or k.startswith("sluice_rejections_total"):
        print(f"- `{k}` {v:,.0f}")
