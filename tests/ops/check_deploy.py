#!/usr/bin/env python3
"""Checks of the operations kit that need a parser: the dashboard JSON, the Kubernetes manifests
and their cross-references, and that every sluice_* metric the alerts and dashboard use is one the
gateway declares. Prints one 'PASS name' or 'FAIL name: why' line per check (check_rules.sh counts
them). Usage: check_deploy.py REPO_ROOT OUT_DIR (OUT_DIR receives dashboard_rules.yaml for promtool)."""
import json
import os
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
out_dir = pathlib.Path(sys.argv[2])
results = []


def check(name, fn):
    try:
        why = fn()
    except Exception as e:  # a crash in a check is a failed check, not a crashed script
        why = f"{type(e).__name__}: {e}"
    results.append((name, why))
    print(f"PASS {name}" if not why else f"FAIL {name}: {why}")


# --- metric names -------------------------------------------------------------------------------
# Every component declares its own metrics (their *_metrics files and the schema cache's); the
# simulator and the load generator are not the gateway.
metric_sources = sorted(p for p in (root / "src").rglob("*") if p.suffix in (".cpp", ".hpp")
                        and p.parts[-2] not in ("sim", "loadgen", "cli"))
metrics_cpp = "".join(p.read_text() for p in metric_sources)
declared = set(re.findall(r'"(sluice_[a-z0-9_]+)"', metrics_cpp))
process = {"process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_virtual_memory_bytes",
           "process_resident_memory_bytes", "process_start_time_seconds"}


def used_metrics(text):
    names = set()
    for m in re.findall(r"\b((?:sluice|process)_[a-z0-9_]+)", text):
        for suffix in ("_bucket", "_sum", "_count"):
            if m.endswith(suffix) and m[: -len(suffix)] in declared:
                m = m[: -len(suffix)]
        names.add(m)
    return names


def metrics_exist(path):
    def fn():
        missing = sorted(used_metrics(path.read_text()) - declared - process)
        return f"not exported by the gateway: {missing}" if missing else None
    return fn


check("metric names declared", lambda: None if len(declared) >= 15 else f"only {sorted(declared)}")
check("alerts use exported metrics", metrics_exist(root / "deploy/prometheus/alerts.yaml"))
check("dashboard uses exported metrics", metrics_exist(root / "deploy/grafana/sluice-dashboard.json"))

# --- Grafana dashboard --------------------------------------------------------------------------
dash_path = root / "deploy/grafana/sluice-dashboard.json"
dash = None


def dashboard_parses():
    global dash
    dash = json.loads(dash_path.read_text())
    for key in ("title", "uid", "panels", "schemaVersion", "templating"):
        if key not in dash:
            return f"missing top-level key {key}"
    return None


def dashboard_panels():
    ids = [p["id"] for p in dash["panels"]]
    if len(ids) != len(set(ids)):
        return "duplicate panel ids"
    graphs = [p for p in dash["panels"] if p["type"] != "row"]
    if len(graphs) < 10:
        return f"only {len(graphs)} panels"
    for p in graphs:
        if not p.get("targets"):
            return f"panel '{p['title']}' has no query"
        g = p["gridPos"]
        if g["x"] + g["w"] > 24:
            return f"panel '{p['title']}' overflows the grid"
    # Panels must not overlap on the grid.
    cells = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    return f"panel '{p['title']}' overlaps another at {x},{y}"
                cells.add((x, y))
    want = {"sluice_stream_active_buffers", "sluice_memory_used_bytes", "sluice_rejections_total",
            "sluice_upstream_requests_total", "sluice_time_to_first_token_seconds", "sluice_queue_depth"}
    missing = want - used_metrics(dash_path.read_text())
    return f"no panel for {sorted(missing)}" if missing else None


def dashboard_rules():
    # Every panel query as a recording rule, so promtool's PromQL parser checks them all.
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    n = 0
    for p in dash["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$__rate_interval", "5m").replace("$job", ".+").replace("$instance", ".+")
            n += 1
            lines.append(f"      - record: dashboard:panel_{p['id']}_{t['refId']}")
            lines.append("        expr: " + json.dumps(expr))
    (out_dir / "dashboard_rules.yaml").write_text("\n".join(lines) + "\n")
    return None if n else "no queries found"


check("dashboard JSON parses", dashboard_parses)
if dash is not None:
    check("dashboard panels", dashboard_panels)
    check("dashboard queries exported for promtool", dashboard_rules)

# --- Kubernetes manifests -----------------------------------------------------------------------
try:
    import yaml
except ImportError:
    yaml = None
    print("SKIP kubernetes manifests: PyYAML is not installed")

if yaml is not None:
    kdir = root / "deploy/kubernetes"
    docs = {}

    def manifests_parse():
        for f in sorted(kdir.glob("*.yaml")):
            for d in yaml.safe_load_all(f.read_text()):
                if d is None:
                    continue
                if "kind" not in d:
                    return f"{f.name}: no kind"
                if d["kind"] != "Kustomization" and ("apiVersion" not in d or "name" not in d.get("metadata", {})):
                    return f"{f.name}: no apiVersion or metadata.name"
                docs[d["kind"]] = d
        want = {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor",
                "ConfigMap", "Kustomization"}
        return f"missing kinds {sorted(want - docs.keys())}" if want - docs.keys() else None

    check("kubernetes manifests parse", manifests_parse)

    def redis_manifests():
        # The Redis beside the gateways (deploy/kubernetes/redis/): it parses, its Service selects
        # its pods, and the gateway's Secret reference and Redis's own agree on the Secret's name.
        found = {}
        for f in sorted((kdir / "redis").glob("*.yaml")):
            for d in yaml.safe_load_all(f.read_text()):
                if d:
                    found[d["kind"]] = d
        if {"Deployment", "Service", "Kustomization"} - found.keys():
            return f"missing kinds in redis/: {sorted({'Deployment', 'Service', 'Kustomization'} - found.keys())}"
        labels = found["Deployment"]["spec"]["template"]["metadata"]["labels"]
        if any(labels.get(k) != v for k, v in found["Service"]["spec"]["selector"].items()):
            return "the redis Service does not select the redis pods"
        gateway_env = {e["name"]: e for e in docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]}
        secret = gateway_env.get("SLUICE_REDIS_URL", {}).get("valueFrom", {}).get("secretKeyRef", {}).get("name")
        redis_env = found["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
        if secret is None or all(e["valueFrom"]["secretKeyRef"]["name"] != secret for e in redis_env):
            return "the gateway and Redis do not read the same Secret"
        # Stored responses and queued jobs must never be evicted (docs/queue.md: Redis settings).
        args = [str(a) for a in found["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]]
        setting = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
        if setting.get("--maxmemory-policy") != "noeviction":
            return "redis must run with maxmemory-policy noeviction"
        if setting.get("--appendonly") != "yes" or setting.get("--appendfsync") != "everysec":
            return "redis must run with appendonly yes, appendfsync everysec"
        return None

    check("redis beside the gateways", redis_manifests)

    def dur(text):
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text))
        if not m:
            raise ValueError(f"not a duration: {text}")
        return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]

    def pod_spec():
        return docs["Deployment"]["spec"]["template"]["spec"]

    def container():
        return pod_spec()["containers"][0]

    def config():
        return yaml.safe_load(docs["ConfigMap"]["data"]["sluice.yaml"])

    def effective(option):
        # Flags win over the config file, as in `sluice serve`.
        for a in container().get("args", []):
            if a.startswith(f"--{option}="):
                return a.split("=", 1)[1]
        return config().get(option)

    def grace_covers_drain():
        spec = pod_spec()
        grace = spec["terminationGracePeriodSeconds"]
        pre = container()["lifecycle"]["preStop"]["sleep"]["seconds"]
        delay, timeout = dur(effective("drain-delay")), dur(effective("drain-timeout"))
        need = pre + delay + timeout
        if grace < need + 5:
            return f"terminationGracePeriodSeconds {grace} < preStop {pre} + drain {delay}+{timeout} + 5s margin"
        return None

    def config_is_flat_and_secret_free():
        c = config()
        if not isinstance(c, dict):
            return "sluice.yaml is not a map"
        for k, v in c.items():
            if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", k):
                return f"key '{k}' is not a kebab-case option name"
            if isinstance(v, dict):
                return f"key '{k}' is nested; options are flat"
            if "key" in k and k != "upstream-key-env" or re.search(r"sk-[A-Za-z0-9]{8,}", str(v)):
                return f"'{k}' looks like a secret in a ConfigMap"
        for k in ("listen", "upstream", "max-streams", "memory-limit", "drain-delay", "drain-timeout"):
            if k not in c:
                return f"missing {k}"
        return None

    def probes():
        c = container()
        if c["livenessProbe"]["httpGet"]["path"] != "/healthz":
            return "liveness must GET /healthz"
        if c["readinessProbe"]["httpGet"]["path"] != "/readyz":
            return "readiness must GET /readyz"
        ports = {p["name"] for p in c["ports"]}
        for probe in ("livenessProbe", "readinessProbe"):
            if c[probe]["httpGet"]["port"] not in ports:
                return f"{probe} port is not a container port"
        return None

    def security_and_resources():
        s, c = pod_spec()["securityContext"], container()
        if not s.get("runAsNonRoot"):
            return "runAsNonRoot is not set"
        cs = c["securityContext"]
        if not cs.get("readOnlyRootFilesystem") or cs.get("allowPrivilegeEscalation", True):
            return "container must have a read-only root fs and no privilege escalation"
        r = c["resources"]
        for k in ("cpu", "memory"):
            if k not in r["requests"] or k not in r["limits"]:
                return f"resources need requests and limits for {k}"
        return None

    def budget_fits_limit():
        units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
        def k8s_bytes(q):
            m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", q)
            return int(m.group(1)) * units[m.group(2)]
        def sluice_bytes(q):
            m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)", str(q))
            return int(m.group(1)) * units[m.group(2)[:2]]
        limit = k8s_bytes(container()["resources"]["limits"]["memory"])
        budget = sluice_bytes(effective("memory-limit"))
        return None if budget < limit else f"memory-limit {budget} must be below the container limit {limit}"

    def wiring():
        pod_labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
        for kind, sel in (("Deployment", docs["Deployment"]["spec"]["selector"]["matchLabels"]),
                          ("Service", docs["Service"]["spec"]["selector"]),
                          ("PodDisruptionBudget", docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"])):
            if any(pod_labels.get(k) != v for k, v in sel.items()):
                return f"{kind} selector does not match the pod labels"
        svc_labels = docs["Service"]["metadata"]["labels"]
        sm = docs["ServiceMonitor"]["spec"]
        if any(svc_labels.get(k) != v for k, v in sm["selector"]["matchLabels"].items()):
            return "ServiceMonitor does not select the Service"
        svc_ports = {p["name"] for p in docs["Service"]["spec"]["ports"]}
        if any(e["port"] not in svc_ports or e.get("path") != "/metrics" for e in sm["endpoints"]):
            return "ServiceMonitor must scrape /metrics on a named Service port"
        hpa = docs["HorizontalPodAutoscaler"]
        if hpa["apiVersion"] != "autoscaling/v2" or hpa["spec"]["scaleTargetRef"]["name"] != docs["Deployment"]["metadata"]["name"]:
            return "HPA must be autoscaling/v2 and target the Deployment"
        if {m["resource"]["name"] for m in hpa["spec"]["metrics"]} != {"cpu", "memory"}:
            return "HPA must scale on cpu and memory"
        cm = pod_spec()["volumes"][0]["configMap"]["name"]
        if cm != docs["ConfigMap"]["metadata"]["name"]:
            return "the config volume does not mount the ConfigMap"
        listed = set(docs["Kustomization"]["resources"])
        files = {f.name for f in kdir.glob("*.yaml")} - {"kustomization.yaml"}
        # Component directories are resources of the base; overlays (which build on "../") are not.
        files |= {d.name for d in kdir.iterdir()
                  if d.is_dir() and (d / "kustomization.yaml").exists()
                  and "../" not in (yaml.safe_load((d / "kustomization.yaml").read_text()) or {}).get("resources", [])}
        return None if listed == files else f"kustomization resources {sorted(listed)} != files {sorted(files)}"

    def options_exist():
        # The option names the code registers (option_table add/add_size/.../add_custom calls):
        # `sluice serve` rejects unknown config keys and flags, so a typo here is a failed rollout.
        registered = registered_options()
        used = set(config().keys())
        used |= {a[2:].split("=", 1)[0] for a in container().get("args", []) if a.startswith("--")}
        used -= {"config"}  # `serve --config FILE` is a CLI11 option of its own
        unknown = sorted(used - registered)
        return f"options not registered by any module: {unknown}" if unknown else None

    def registered_options():
        # The built binary's own list when the test runner names it (SLUICE_BIN: every key of
        # `sluice serve --print-config`, the packaged config), else the registrations in the source.
        binary = os.environ.get("SLUICE_BIN")
        if binary:
            text = subprocess.run([binary, "serve", "--print-config"], check=True, capture_output=True, text=True).stdout
            return set(re.findall(r"^# ([a-z0-9-]+): ", text, re.M))
        registered = set()
        for f in (root / "src").rglob("*.cpp"):
            registered |= set(re.findall(r'\badd(?:_size|_duration|_list|_custom)?\(\{?"([a-z0-9-]+)"', f.read_text()))
        return registered

    def packaged_image():
        # The manifests run the image scripts/package.sh builds: `sluice:<project version>`, whose
        # entrypoint is `sluice serve --listen 0.0.0.0:8080`, so their args are flags only.
        version = re.search(r"project\(sluice VERSION ([0-9.]+)", (root / "CMakeLists.txt").read_text()).group(1)
        want = f"sluice:{version}"
        qdir = kdir / "queue"
        workers = next(d for f in sorted(qdir.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())
                       if d and d["kind"] == "Deployment")
        for name, c in (("gateway", container()), ("workers", workers["spec"]["template"]["spec"]["containers"][0])):
            if c["image"] != want:
                return f"the {name} run {c['image']}, not the packaged {want}"
            stray = [a for a in c.get("args", []) if not str(a).startswith("--")]
            if stray:
                return f"the args of the {name} {stray} are not flags: the entrypoint already says `serve`"
            if any(p["containerPort"] != 8080 for p in c.get("ports", [])):
                return f"the {name} must expose 8080, where the entrypoint listens"
        images = {i["name"]: i for i in docs["Kustomization"].get("images", [])}
        if images.get("sluice", {}).get("newTag") != version:
            return f"kustomization.yaml must map the image sluice to tag {version}"
        entry = re.search(r"--config\.entrypoint /usr/bin/sluice --config\.entrypoint serve \\\n\s*"
                          r"--config\.entrypoint --listen --config\.entrypoint 0\.0\.0\.0:8080",
                          (root / "packaging/oci.sh").read_text())
        dockerfile, oci = (root / "Dockerfile").read_text(), (root / "packaging/oci.sh").read_text()
        docker = '["/usr/bin/sluice", "serve", "--listen", "0.0.0.0:8080"]' in dockerfile
        if not (entry and docker):
            return "packaging/oci.sh and the Dockerfile must both say sluice serve --listen 0.0.0.0:8080"
        if "USER 65532:65532" not in dockerfile or "--config.user 65532:65532" not in oci:
            return "packaging/oci.sh and the Dockerfile must both run as 65532:65532"
        if "EXPOSE 8080/tcp" not in dockerfile or "--config.exposedports 8080/tcp" not in oci:
            return "packaging/oci.sh and the Dockerfile must both expose 8080/tcp"
        return None

    def queue_overlay():
        # deploy/kubernetes/queue: the base's gateway becomes the fronts, plus the workers.
        qdir = kdir / "queue"
        found = {}
        for f in sorted(qdir.glob("*.yaml")):
            for d in yaml.safe_load_all(f.read_text()):
                if d:
                    found.setdefault(d["kind"], []).append(d)
        k = found["Kustomization"][0]
        listed = set(k["resources"])
        files = {f.name for f in qdir.glob("*.yaml")} - {"kustomization.yaml"}
        if listed != files | {"../"}:
            return f"queue/ resources {sorted(listed)} != its files and the base"
        front_args = [op["value"] for p in k["patches"] for op in yaml.safe_load(p["patch"]) if op["op"] == "add"]
        if {"--queue=redis", "--role=front"} - set(front_args):
            return "the fronts' patch must add --queue=redis and --role=front"
        workers = [d for d in found["Deployment"] if d["metadata"]["name"] == "sluice-worker"]
        if not workers:
            return "no sluice-worker Deployment"
        w = workers[0]
        spec = w["spec"]["template"]["spec"]
        c = spec["containers"][0]
        args = c["args"]
        for need in ("--queue=redis", "--role=worker"):
            if need not in args:
                return f"the workers need {need}"
        if not any(a.startswith("--redis=") for a in args):
            return "the workers need --redis"
        flags = {a[2:].split("=", 1)[0] for a in args if a.startswith("--")} - {"config"}
        flags |= {a[2:].split("=", 1)[0] for a in front_args}
        unknown = sorted(flags - registered_options())
        if unknown:
            return f"options not registered by any module: {unknown}"
        timeout = next(dur(a.split("=", 1)[1]) for a in args if a.startswith("--drain-timeout="))
        delay = next(dur(a.split("=", 1)[1]) for a in args if a.startswith("--drain-delay="))
        if spec["terminationGracePeriodSeconds"] < delay + timeout + 5:
            return "the workers' grace period does not cover their drain"
        if c["readinessProbe"]["httpGet"]["path"] != "/readyz" or c["livenessProbe"]["httpGet"]["path"] != "/healthz":
            return "the workers' probes must be /readyz and /healthz"
        labels = w["spec"]["template"]["metadata"]["labels"]
        if any(labels.get(kk) == v for kk, v in docs["Service"]["spec"]["selector"].items()):
            return "the gateway's Service must not select the workers"
        pm = found["PodMonitor"][0]["spec"]
        if any(labels.get(kk) != v for kk, v in pm["selector"]["matchLabels"].items()):
            return "the PodMonitor does not select the workers"
        hpa = found["HorizontalPodAutoscaler"][0]
        if hpa["spec"]["scaleTargetRef"]["name"] != "sluice-worker":
            return "the workers' HPA must target sluice-worker"
        names = {m.get("pods", m.get("external", {})).get("metric", {}).get("name") for m in hpa["spec"]["metrics"]}
        if names != {"sluice_jobs_running", "sluice_queue_jobs_waiting"}:
            return f"the workers' HPA must scale on busy slots and the queue: {sorted(n for n in names if n)}"
        return None

    def source_default(header, field):
        m = re.search(rf"\b{field} = \"?(\w+)\"?;", (root / "src" / header).read_text())
        if not m:
            raise ValueError(f"no default for {field} in src/{header}")
        return m.group(1)

    def worker_slots_match_hpa():
        # A worker pod runs processes x worker-max-jobs jobs at once (each process its own
        # worker-max-jobs; the pod's /metrics sums sluice_jobs_running over them). The HPA's targets
        # are figures per pod, so they must be derived from that product, not from one process's.
        qdir = kdir / "queue"
        found = [d for f in sorted(qdir.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
        w = next(d for d in found if d["kind"] == "Deployment" and d["metadata"]["name"] == "sluice-worker")
        spec = w["spec"]["template"]["spec"]
        args = spec["containers"][0]["args"]
        mounted = {v.get("configMap", {}).get("name") for v in spec.get("volumes", [])}
        conf = config() if docs["ConfigMap"]["metadata"]["name"] in mounted else {}

        def option(name, default):
            for a in args:
                if a.startswith(f"--{name}="):
                    return a.split("=", 1)[1]
            return str(conf.get(name, default))

        processes = option("processes", source_default("app/serve_options.hpp", "processes"))
        if not processes.isdigit():
            return f"the workers' processes must be a number for their slots to be known, not {processes!r}"
        per_process = option("worker-max-jobs", source_default("jobs/options.hpp", "worker_max_jobs"))
        slots = int(processes) * int(per_process)
        hpa = next(d for d in found if d["kind"] == "HorizontalPodAutoscaler")
        targets = {}
        for m in hpa["spec"]["metrics"]:
            part = m.get("pods") or m.get("external") or {}
            targets[part.get("metric", {}).get("name")] = float(part.get("target", {}).get("averageValue", "nan"))
        running = targets.get("sluice_jobs_running")
        waiting = targets.get("sluice_queue_jobs_waiting")
        if running is None or not (0.5 * slots <= running < slots):
            return (f"busy-slots target {running} is not between half and all of a pod's {slots} slots "
                    f"({processes} processes x {per_process} worker-max-jobs)")
        if waiting != slots:
            return f"queue target {waiting} per worker pod != the pod's {slots} slots ({processes} x {per_process})"
        return None

    if (kdir / "queue").is_dir() and {"Deployment", "Service"} <= docs.keys():
        check("fronts and workers (queue/)", queue_overlay)
    if (kdir / "queue").is_dir() and {"Deployment", "ConfigMap"} <= docs.keys():
        check("job slots per pod agree with the workers' HPA", worker_slots_match_hpa)

    if {"Deployment", "ConfigMap"} <= docs.keys():
        check("config keys and flags are registered options", options_exist)
        check("the manifests run the packaged image", packaged_image)
        check("grace period covers preStop + drain", grace_covers_drain)
        check("config map is flat, secret-free, complete", config_is_flat_and_secret_free)
        check("probes: /healthz liveness, /readyz readiness", probes)
        check("non-root, read-only fs, requests and limits", security_and_resources)
        check("memory budget below the container limit", budget_fits_limit)
        check("selectors, ports and references line up", wiring)

sys.exit(1 if any(why for _, why in results) else 0)
