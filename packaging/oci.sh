#!/usr/bin/env bash
# Packs a root filesystem (packaging/rootfs.sh) into an OCI image with umoci: one layer, the
# non-root user, `sluice serve --listen 0.0.0.0:8080` as the entrypoint, OCI labels. Writes an OCI
# layout and its tar (an "oci-archive": `podman load -i`, `skopeo copy oci-archive:...`).
# Usage: packaging/oci.sh ROOTFS VERSION REVISION SOURCE_URL OUT_TAR
set -euo pipefail
rootfs=$1
version=$2
revision=$3
source_url=$4
out=$5
layout=$(mktemp -d)/sluice
# The tag a container engine names the image by when it loads the archive (podman: localhost/sluice:V).
ref="sluice:$version"
trap 'rm -rf "$(dirname "$layout")"' EXIT

umoci init --layout "$layout"
umoci new --image "$layout:$ref"
umoci insert --image "$layout:$ref" "$rootfs" /
umoci config --image "$layout:$ref" \
  --os linux --architecture amd64 \
  --config.user 65532:65532 \
  --config.workingdir / \
  --config.entrypoint /usr/bin/sluice --config.entrypoint serve \
  --config.entrypoint --listen --config.entrypoint 0.0.0.0:8080 \
  --config.exposedports 8080/tcp \
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.stopsignal SIGTERM \
  --config.label "org.opencontainers.image.title=sluice" \
  --config.label "org.opencontainers.image.description=OpenAI-compatible streaming gateway in bounded memory" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --config.label "org.opencontainers.image.source=$source_url" \
  --manifest.annotation "org.opencontainers.image.version=$version" \
  --manifest.annotation "org.opencontainers.image.revision=$revision"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
tar -C "$layout" -cf "$out" .
echo "image: $out ($(du -h "$out" | cut -f1), its layer gzip-compressed)"
