#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs dependencies, builds, runs every
# test (unit, integration, e2e with the official openai npm SDK, ops checks with promtool), then
# builds and checks the .deb and the container image (scripts/package.sh), builds and runs the
# unit and integration tests again under AddressSanitizer + UBSan, and gives
# every libFuzzer target a short run (scripts/fuzz.sh --smoke; the long runs are that script's).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
# Each phase says when it began, so a slow CI run shows where its time went.
phase() { echo "== $1 ($(date -u +%H:%M:%S), ${SECONDS}s in)"; }
bash scripts/install-deps.sh

# One optimised build for the tests, the benchmarks and the packages: Release (-O3, what users and
# packagers build; it inlines more than -O2 and so finds warnings -O2 does not: GCC 12's
# -Wstringop-overflow did) with line tables (-g1) so every backtrace has its files and lines.
# Both builds keep line tables only: the compile takes a quarter less time than with full debug
# info (docs/testing.md).
phase "clang-tidy on the changed files (scripts/tidy.sh)"
bash scripts/tidy.sh

phase "build (Release -O3 -g1)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_BENCH=ON -DSLUICE_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O3 -g1 -DNDEBUG" >/dev/null
cmake --build build -j "$jobs"

phase "tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

# The .deb and the container image from that build, installed and run (docs/packaging.md).
phase "packages (.deb, OCI image)"
SLUICE_PACKAGE_BUILD_DIR=build bash scripts/package.sh
bash tests/package/check_packages.sh

# CI's clone is thrown away afterwards: each build tree goes once nothing reads it, so the disk holds
# one at a time (an ASan tree and an optimised one together came to many GiB; a full disk failed a
# CI run). A developer's own trees stay.
prune() { if [ "${CI:-}" = "true" ]; then rm -rf "$@"; fi; }
prune build

phase "build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF -DSLUICE_WERROR=ON \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1" >/dev/null
cmake --build build-asan -j "$jobs"

phase "tests under ASan + UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$jobs" --timeout 900 -L 'unit|integration')
prune build-asan

phase "fuzz smoke (libFuzzer, clang-14, ASan + UBSan)"
bash scripts/fuzz.sh --smoke "${SLUICE_FUZZ_SMOKE_SECONDS:-5}"
phase "done"
