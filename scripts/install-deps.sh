#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of sluice from Debian 12 packages, plus the
# official `openai` npm package for the e2e client. Idempotent: safe to rerun; skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# What building the `sluice` binary needs (`--build`: the Dockerfile's build stage), then what the
# tests, benchmarks, fuzzing and packaging add.
build_pkgs=(
  build-essential g++ cmake ninja-build pkg-config git ca-certificates binutils
  libboost1.81-dev libboost-json1.81-dev libboost-system1.81-dev
  libssl-dev libre2-dev libhiredis-dev prometheus-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev
)
pkgs=("${build_pkgs[@]}"
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  redis-server nginx-light prometheus curl procps python3 python3-yaml universal-ctags valgrind
  clang-14 clang-tidy-14 libfuzzer-14-dev libclang-rt-14-dev
  dpkg-dev help2man umoci mmdebstrap podman
)
build_only=false
[ "${1:-}" = "--build" ] && build_only=true && pkgs=("${build_pkgs[@]}")
# Node.js: keep whatever node/npm the machine has; otherwise take Debian's.
if ! $build_only; then
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Do not leave the distro's nginx/redis/prometheus daemons running: tests and benches start their own.
for svc in nginx redis-server prometheus; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done

if $build_only; then echo "install-deps: ok (build only)"; exit 0; fi

# The official OpenAI SDK with zod, and the official Anthropic SDK, as real clients for e2e tests, and
# `ws`, the WebSocket package the OpenAI SDK's Realtime client needs (pinned in tests/e2e/package.json).
if [ ! -d tests/e2e/node_modules/openai ] || [ ! -d tests/e2e/node_modules/zod ] || [ ! -d tests/e2e/node_modules/@anthropic-ai/sdk ] ||
   [ ! -d tests/e2e/node_modules/ws ]; then
  (cd tests/e2e && npm install --no-audit --no-fund --loglevel=error)
fi
echo "install-deps: ok"
