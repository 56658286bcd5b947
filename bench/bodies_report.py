#!/usr/bin/env python3
"""Report of a bench/bodies.sh run: reads DIR/config.json and, per run, DIR/<direction>-<target>-<rep>
.client.json (bench/bodies_client.py), .proc.json (bench/relay_sample.mjs on the proxy's process
tree) and .meta.json; prints a Markdown table and writes DIR/summary.json. Rerunnable on a saved
directory:
    python3 bench/bodies_report.py bench/out/bodies-YYYYmmdd-HHMMSS [SECONDS] [LOADAVG]
"""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1]
took = sys.argv[2] if len(sys.argv) > 2 else "?"
load_end = sys.argv[3] if len(sys.argv) > 3 else "?"
cfg = json.load(open(f"{d}/config.json"))
MiB = 1048576
GOAL_MIB = 64

runs = []
for meta_path in sorted(glob.glob(f"{d}/*.meta.json")):
    base = meta_path[: -len(".meta.json")]
    meta = json.load(open(meta_path))
    try:
        c = json.load(open(base + ".client.json"))
        p = json.load(open(base + ".proc.json"))
    except (OSError, ValueError):
        runs.append({**meta, "missing": True})
        continue
    mib = c["total_bytes"] / MiB
    runs.append({
        **meta, "ok": c["ok"], "failed": c["failed"], "errors": c["errors"],
        "mib": mib, "wall_s": c["wall_seconds"], "mib_s": c["mib_per_second"],
        "p50_s": c["transfer_seconds"]["p50"], "p99_s": c["transfer_seconds"]["p99"],
        "idle_mib": p["baseline_rss_bytes"] / MiB, "peak_mib": p["peak_rss_bytes"] / MiB,
        "above_mib": (p["peak_rss_bytes"] - p["baseline_rss_bytes"]) / MiB,
        "cpu_s": p["cpu_seconds"], "cpu_ms_per_mib": 1000 * p["cpu_seconds"] / mib if mib else None,
        "client_cpu_s": c["client_cpu_seconds"], "samples": p["samples"], "pids": len(p["pids"]),
    })

order_t = {"sluice": 0, "nginx": 1, "direct": 2}
order_d = {"upload": 0, "download": 1}
runs.sort(key=lambda r: (order_d.get(r["direction"], 9), order_t.get(r["target"], 9), r["rep"]))


def med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def f(v, fmt):
    return "–" if v is None else format(v, fmt)


n, size = cfg["transfers"], cfg["size_bytes"]
print(f"# Streamed bodies: {n} concurrent transfers of {size / MiB:g} MiB each way\n")
print(f"{cfg['cores']} cores ({cfg['cpu']}), loopback; sluice `{cfg['binary']}` ({cfg['sluice_commit']}) "
      f"`--threads {cfg['threads']} {cfg['sluice_args']}`; nginx {cfg['nginx']}, {cfg['threads']} workers"
      f"{', `' + cfg['nginx_buffers'].rstrip(';') + '`' if cfg['nginx_buffers'] else ', default buffers'}; simulator `{cfg['sim_args']}`; "
      f"upload route {cfg['upload_route']}{' (chunked)' if cfg['chunked'] else ''}; load average "
      f"{cfg['load_start']} at start, {load_end} at end; {took} s in all.\n")
print("| direction | target | ok / failed | wall s | MiB/s | transfer p50 / p99 s | idle RSS MiB | "
      "peak RSS above idle MiB | proxy CPU s | CPU ms per MiB | sim CPU s | client CPU s | load before / after |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in runs:
    if r.get("missing"):
        print(f"| {r['direction']} | {r['target']} #{r['rep']} | no result (client rc {r['client_rc']}) "
              "| | | | | | | | | | |")
        continue
    rep = f" #{r['rep']}" if cfg["repeat"] > 1 else ""
    died = "" if r["alive_after"] else " **died**"
    print(f"| {r['direction']} | {r['target']}{rep}{died} | {r['ok']} / {r['failed']} | {r['wall_s']:.1f} | "
          f"{r['mib_s']:.0f} | {f(r['p50_s'], '.1f')} / {f(r['p99_s'], '.1f')} | {r['idle_mib']:.1f} | "
          f"**{r['above_mib']:.1f}** | {r['cpu_s']:.2f} | **{f(r['cpu_ms_per_mib'], '.3f')}** | "
          f"{r['sim_cpu_seconds']:.2f} | {r['client_cpu_s']:.2f} | {r['load_before']} / {r['load_after']} |")

summary = {"config": cfg, "runs": runs, "ratios": {}, "goal": {}}
ratio_lines = []
for dname in ("upload", "download"):
    s = [r for r in runs if r["direction"] == dname and r["target"] == "sluice" and not r.get("missing")]
    g = [r for r in runs if r["direction"] == dname and r["target"] == "nginx" and not r.get("missing")]
    if s:
        above = max(r["above_mib"] for r in s)
        summary["goal"][dname] = {"sluice_peak_above_idle_mib": round(above, 1), "under_64_mib": above < GOAL_MIB}
    if not (s and g):
        continue
    ratio = {}
    for key, label in (("mib_s", "MiB/s"), ("above_mib", "peak RSS above idle"), ("cpu_ms_per_mib", "CPU per MiB")):
        a, b = med(s, key), med(g, key)
        ratio[key] = round(a / b, 2) if a is not None and b else None
    summary["ratios"][dname] = ratio
    ratio_lines.append(f"| {dname} | {f(ratio['mib_s'], '.2f')} | {f(ratio['above_mib'], '.2f')} | "
                       f"{f(ratio['cpu_ms_per_mib'], '.2f')} |")
if ratio_lines:
    print("\nsluice / nginx (medians over repeats):\n")
    print("| direction | MiB/s | peak RSS above idle | CPU per MiB |\n|---|---|---|---|")
    print("\n".join(ratio_lines))
if summary["goal"]:
    print("\nGoal, gateway peak RSS under 64 MiB above idle: " + "; ".join(
        f"{k} {v['sluice_peak_above_idle_mib']} MiB, {'met' if v['under_64_mib'] else 'NOT met'}"
        for k, v in summary["goal"].items()))
bad = [r for r in runs if r.get("missing") or r.get("failed") or not r.get("alive_after", 1)]
if bad:
    print("\nFailures: " + "; ".join(
        f"{r['direction']} {r['target']} #{r['rep']}: " +
        ("no result" if r.get("missing") else f"{r['failed']} failed {r['errors']}") +
        ("" if r.get("alive_after", 1) else ", proxy died") for r in bad))
json.dump(summary, open(os.path.join(d, "summary.json"), "w"), indent=1)
