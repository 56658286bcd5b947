#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs dependencies, builds, runs every
# test (unit, integration, e2e with the official openai npm SDK, ops checks with promtool), then
# builds and runs the unit and integration tests again under AddressSanitizer + UBSan, and gives
# every libFuzzer target a short run (scripts/fuzz.sh --smoke; the long runs are that script's).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
# Each phase says when it began, so a slow CI run shows where its time went.
phase() { echo "== $1 ($(date -u +%H:%M:%S), ${SECONDS}s in)"; }
bash scripts/install-deps.sh

# Both builds keep line tables only (-g1): every backtrace and sanitizer report still has its files
# and lines, and the compile takes a quarter less time than with full debug info (docs/testing.md).
phase "build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BENCH=ON -DSLUICE_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build build -j "$jobs"

phase "tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

# The configuration users and packagers build: Release (-O3) inlines more than -O2 and so finds
# warnings the build above does not (GCC 12's -Wstringop-overflow did). Only the server binary, to
# keep CI's time down: the tests above already ran this code (docs/testing.md).
phase "build (Release, sluice only)"
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_WERROR=ON -DSLUICE_TESTS=OFF \
  -DSLUICE_BENCH=OFF >/dev/null
cmake --build build-release -j "$jobs" --target sluice

phase "build (ASan + UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF -DSLUICE_WERROR=ON \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1" >/dev/null
cmake --build build-asan -j "$jobs"

phase "tests under ASan + UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j "$jobs" --timeout 900 -L 'unit|integration')

phase "fuzz smoke (libFuzzer, clang-14, ASan + UBSan)"
bash scripts/fuzz.sh --smoke "${SLUICE_FUZZ_SMOKE_SECONDS:-5}"
phase "done"
