#!/usr/bin/env bash
# The artefacts of scripts/package.sh, installed and run as a platform engineer would (issue 32):
#   the .deb: installed with apt into a fresh Debian 12 root made by mmdebstrap, then
#             `sluice --version` and a streamed request through the installed service's config;
#   the image: its OCI archive unpacked with umoci and its entrypoint run, as its user, in a chroot
#             in a mount namespace of its own (podman cannot run in this sandbox), a stream through it.
# Prints one PASS or FAIL line per check and "N passed, M failed"; exits non-zero on any failure.
# Usage: bash tests/package/check_packages.sh     (after scripts/package.sh; needs root)
set -uo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root_dir" || exit 2
version=$(sed -n 's/^project(sluice VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$root_dir/dist/sluice_${version}_amd64.deb
image=$root_dir/dist/sluice-${version}-oci.tar
work=$(mktemp -d /tmp/sluice-package-test.XXXXXX)
pids=()
cleanup() {
  # The processes run as another user, so unshare's --kill-child (a parent-death signal, which a
  # change of credentials clears) does not reach them: each is the first process of a PID
  # namespace of its own, and killing it ends everything in that namespace.
  for p in "${pids[@]}"; do
    pkill -9 -P "$p" 2>/dev/null
    { kill -9 "$p" && wait "$p"; } 2>/dev/null
  done
  if [ -n "${SLUICE_PACKAGE_TEST_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' <<<"$2" | tail -n 30; failed=$((failed + 1)); }
check() { local name=$1; shift; if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi; }

# Runs a command inside ROOT as USER (uid:gid or a name), in PID and mount namespaces of its own
# (/proc and /dev mounted there); its output goes to LOG. Nothing of ROOT's is needed to run it (the image has
# no shell): the mounts are made from the host's side.
start_in_root() {
  local root=$1 user=$2 log=$3
  shift 3
  unshare --pid --mount --fork --kill-child sh -c '
    root=$1; user=$2; shift 2
    mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" || exit 97
    exec chroot --userspec="$user" "$root" "$@"' sh "$root" "$user" "$@" >"$log" 2>&1 &
  pids+=($!)
}

# The port a `sluice ... listening on HOST:PORT` line names, waiting up to 20 s for it.
port_of() {
  local log=$1
  for _ in $(seq 200); do
    local port
    port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -n1)
    if [ -n "$port" ]; then echo "$port"; return 0; fi
    sleep 0.1
  done
  echo "no 'listening on' line in $log:" >&2
  cat "$log" >&2
  return 1
}

# A streamed chat completion through the gateway at PORT: 200, every token, then [DONE].
stream_through() {
  local port=$1
  local body
  body=$(curl -sS -N --max-time 30 -H 'Content-Type: application/json' -H 'x-sim-tokens: 12' \
    -d '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
    "http://127.0.0.1:$port/v1/chat/completions") || return 1
  local events
  events=$(grep -c '^data: {' <<<"$body")
  if ! grep -q '^data: \[DONE\]' <<<"$body" || [ "$events" -lt 12 ]; then
    echo "expected 12 or more events and [DONE], got $events:"
    echo "$body" | head -n 20
    return 1
  fi
}

# --- the Debian package --------------------------------------------------------------------------
deb_root=$work/debian
deb_checks() {
  check "deb: built by scripts/package.sh" test -f "$deb"
  [ -f "$deb" ] || return
  check "deb: depends on the Debian 12 packages of the libraries it links" sh -c \
    "dpkg-deb -f '$deb' Depends | tee /dev/stderr | grep -q 'libboost-json1.81.0' && dpkg-deb -f '$deb' Depends | grep -q 'libhiredis0.14'"
  # A fresh root from Debian's packages, the .deb installed into it by apt (its dependencies too).
  if ! out=$(mmdebstrap --quiet --variant=apt --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
      --include="$deb" bookworm "$deb_root" 2>&1); then
    fail "deb: installs into a fresh Debian 12 root" "$out"
    return
  fi
  pass "deb: installs into a fresh Debian 12 root"
  check "deb: sluice --version" sh -c "chroot '$deb_root' sluice --version | tee /dev/stderr | grep -qx 'sluice $version'"
  check "deb: a system user of its own" chroot "$deb_root" getent passwd sluice
  check "deb: the secrets file is root:sluice 0640" sh -c \
    "chroot '$deb_root' stat -c '%U:%G %a' /etc/default/sluice | tee /dev/stderr | grep -qx 'root:sluice 640'"
  check "deb: the unit, the man page, the config as conffiles" sh -c "
    test -f '$deb_root/lib/systemd/system/sluice.service' && test -f '$deb_root/usr/share/man/man1/sluice.1.gz' &&
    grep -q '^# max-streams: ' '$deb_root/etc/sluice/sluice.yaml' &&
    chroot '$deb_root' dpkg-query -W -f='\${Conffiles}' sluice | grep -q /etc/sluice/sluice.yaml"
  # The installed binary, as the service's user, with the installed config: a simulator upstream
  # (the same binary) and the gateway in front of it, a stream through both.
  local user
  user="$(chroot "$deb_root" id -u sluice):$(chroot "$deb_root" id -g sluice)"
  start_in_root "$deb_root" "$user" "$work/deb-sim.log" sluice sim --listen 127.0.0.1:0
  local sim_port
  sim_port=$(port_of "$work/deb-sim.log") || { fail "deb: the installed simulator starts" "$(cat "$work/deb-sim.log")"; return; }
  start_in_root "$deb_root" "$user" "$work/deb-serve.log" sluice serve --config /etc/sluice/sluice.yaml \
    --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$sim_port"
  local port
  port=$(port_of "$work/deb-serve.log") || { fail "deb: the installed gateway starts" "$(cat "$work/deb-serve.log")"; return; }
  check "deb: a stream through the installed gateway" stream_through "$port"
}

# --- the container image -------------------------------------------------------------------------
image_checks() {
  check "image: built by scripts/package.sh" test -f "$image"
  [ -f "$image" ] || return
  mkdir -p "$work/layout" && tar -C "$work/layout" -xf "$image"
  local tag
  tag=$(umoci ls --layout "$work/layout" | head -n1)
  if ! out=$(umoci unpack --image "$work/layout:$tag" "$work/bundle" 2>&1); then
    fail "image: unpacks with umoci" "$out"
    return
  fi
  pass "image: unpacks with umoci"
  local rootfs=$work/bundle/rootfs
  check "image: tagged sluice:<version>" test "$tag" = "sluice:$version"
  check "image: no shell and no package manager" sh -c \
    "! ls '$rootfs'/bin/sh '$rootfs'/usr/bin/sh '$rootfs'/bin/bash '$rootfs'/usr/bin/dpkg '$rootfs'/usr/bin/apt 2>/dev/null | grep -q ."
  check "image: compressed size under 40 MB" sh -c "[ \$(stat -c %s '$image') -lt 40000000 ] || { du -h '$image'; exit 1; }"
  # The entrypoint, user and labels as the runtime reads them (runc's config.json from umoci).
  local spec
  spec=$(python3 - "$work/bundle/config.json" "$work/layout" "$tag" <<'PY'
import json, sys, pathlib
cfg = json.load(open(sys.argv[1]))
layout = pathlib.Path(sys.argv[2])
index = json.load(open(layout / "index.json"))
manifest = next(m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == sys.argv[3])
algo, digest = manifest["digest"].split(":")
man = json.load(open(layout / "blobs" / algo / digest))
algo, digest = man["config"]["digest"].split(":")
image_cfg = json.load(open(layout / "blobs" / algo / digest))["config"]
labels = image_cfg.get("Labels", {})
for k in ("org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.source"):
    if not labels.get(k):
        sys.exit(f"label {k} missing")
print(cfg["process"]["user"]["uid"], cfg["process"]["user"]["gid"], *cfg["process"]["args"])
PY
  ) || { fail "image: entrypoint, user and OCI labels" "$spec"; return; }
  read -r uid gid entry <<<"$spec"
  check "image: runs as a non-root user" test "$uid" != 0
  check "image: sluice serve --listen 0.0.0.0:8080 is the entrypoint" test "$entry" = "/usr/bin/sluice serve --listen 0.0.0.0:8080"
  # The image's own binary as the upstream simulator, then its entrypoint in front of it.
  start_in_root "$rootfs" "$uid:$gid" "$work/image-sim.log" /usr/bin/sluice sim --listen 127.0.0.1:0
  local sim_port
  sim_port=$(port_of "$work/image-sim.log") || { fail "image: its binary runs the simulator" "$(cat "$work/image-sim.log")"; return; }
  # The entrypoint as the image gives it, then flags for this test (a later --listen wins).
  # shellcheck disable=SC2086
  start_in_root "$rootfs" "$uid:$gid" "$work/image-serve.log" $entry --listen 127.0.0.1:0 \
    --upstream "http://127.0.0.1:$sim_port"
  local port
  port=$(port_of "$work/image-serve.log") || { fail "image: the entrypoint starts" "$(cat "$work/image-serve.log")"; return; }
  check "image: a stream through the image's gateway" stream_through "$port"
  podman_checks
}

# A real container engine, where this machine lets one run: the archive loads into podman, and a
# container of it answers `--version`. Where podman cannot start a container here, the reason is
# printed (this sandbox refuses setrlimit, which crun calls for every container).
podman_checks() {
  if ! command -v podman >/dev/null; then
    echo "SKIP podman: not installed"
    return
  fi
  local loaded
  if ! loaded=$(podman load -q -i "$image" 2>&1); then
    fail "image: loads into podman" "$loaded"
    return
  fi
  check "image: loads into podman as localhost/sluice:$version" sh -c "echo '$loaded' | grep -q 'localhost/sluice:$version'"
  local out
  if out=$(podman run --rm --network host --entrypoint /usr/bin/sluice "localhost/sluice:$version" --version 2>&1); then
    check "image: podman runs it" test "$out" = "sluice $version"
  else
    echo "SKIP image: podman cannot start a container on this machine: $(tail -n1 <<<"$out")"
  fi
  podman rmi -f "localhost/sluice:$version" >/dev/null 2>&1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP package checks: they need root (chroot, mount namespaces, mmdebstrap's root mode)"
  echo "0 passed, 0 failed"
  exit 0
fi
deb_checks
image_checks
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
