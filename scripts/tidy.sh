#!/usr/bin/env bash
# clang-tidy (the repository's .clang-tidy) over the C++ files of src/ that a change touches: the
# files that differ from SLUICE_TIDY_BASE (default HEAD~1: the last commit, plus anything not yet
# committed), a changed header standing for the .cpp of its name. Run by scripts/test.sh before
# the build; before you submit, run it against what landed last:
#   SLUICE_TIDY_BASE=<last landed commit> bash scripts/tidy.sh
# Needs no build: a configure with clang 14 (no unity batches, no precompiled headers) gives the
# compile commands. Exits 1 on any error-level finding (.clang-tidy's WarningsAsErrors).
set -euo pipefail
cd "$(dirname "$0")/.."

base=${SLUICE_TIDY_BASE:-HEAD~1}
if ! git rev-parse -q --verify "${base}^{commit}" >/dev/null; then
  echo "tidy: no commit '$base' to compare with (a shallow clone, or the first commit): nothing to check"
  exit 0
fi

mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" -- 'src/*.cpp' 'src/*.hpp'; \
                       git ls-files --others --exclude-standard -- 'src/*.cpp' 'src/*.hpp')
files=()
for f in "${changed[@]}"; do
  case "$f" in
    *.hpp) cpp="${f%.hpp}.cpp" ;;
    *) cpp="$f" ;;
  esac
  if [ -f "$cpp" ]; then files+=("$cpp"); fi
done
mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u | sed '/^$/d')
if [ "${#files[@]}" -eq 0 ]; then
  echo "tidy: no C++ file of src/ changed since $base"
  exit 0
fi

dir=$(mktemp -d /tmp/sluice-tidy.XXXXXX)
trap 'rm -rf "$dir"' EXIT
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_UNITY=OFF \
  -DSLUICE_PCH=OFF -DSLUICE_BENCH=OFF -DSLUICE_WERROR=ON >/dev/null
echo "tidy: ${#files[@]} files changed since $base"
status=0
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy-14 -p "$dir" --quiet 2> >(grep -v \
  -e '^[0-9]* warnings\? generated' -e '^Suppressed [0-9]* warnings' -e '^Use -header-filter' >&2) || status=$?
if [ "$status" -ne 0 ]; then
  echo "tidy: findings above (.clang-tidy)"
  exit 1
fi
echo "tidy: clean"
