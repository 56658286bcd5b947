#!/usr/bin/env bash
# Builds sluice's two artefacts under dist/ (docs/packaging.md):
#   dist/sluice_<version>_amd64.deb     CPack, its dependencies from Debian 12's package names
#   dist/sluice-<version>-oci.tar       an OCI image archive: the binary, its libraries, no shell
# Usage: bash scripts/package.sh        (a Release build in build-release/)
#        SLUICE_PACKAGE_BUILD_DIR=build bash scripts/package.sh   (reuse a configured build dir)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh >/dev/null
build=${SLUICE_PACKAGE_BUILD_DIR:-build-release}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_WERROR=ON -DSLUICE_TESTS=OFF \
    -DSLUICE_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target sluice sluice_package_data

version=$(sed -n 's/^project(sluice VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
revision=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# The source as git knows it, without any credentials a URL may carry.
source_url=$(git config --get remote.origin.url 2>/dev/null | sed -E 's#//[^/@]*@#//#' || true)
source_url=${source_url:-unknown}

mkdir -p dist
rm -f dist/sluice_*.deb dist/sluice-*-oci.tar
(cd "$build" && cpack -G DEB --config CPackConfig.cmake >/dev/null)
deb=dist/sluice_${version}_amd64.deb
[ -f "$deb" ] || { echo "package.sh: cpack wrote no $deb" >&2; exit 1; }
echo "deb: $deb ($(du -h "$deb" | cut -f1))"

bash packaging/rootfs.sh "$build/sluice" "$build/image-rootfs"
bash packaging/oci.sh "$build/image-rootfs" "$version" "$revision" "$source_url" "dist/sluice-${version}-oci.tar"
