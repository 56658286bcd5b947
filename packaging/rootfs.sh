#!/usr/bin/env bash
# Lays out the container image's root filesystem: the sluice binary, the shared libraries it links
# (from this Debian 12 machine's packages, with each package's copyright file), CA certificates for
# https upstreams, and a non-root user. No shell, no package manager, nothing else.
# Usage: packaging/rootfs.sh SLUICE_BINARY OUT_DIR     (OUT_DIR is emptied first)
set -euo pipefail
bin=$1
out=$2
uid=65532  # the "nonroot" id of distroless images; deploy/kubernetes runs the pod as it

rm -rf "$out"
mkdir -p "$out"/usr/bin "$out"/etc "$out"/tmp "$out"/proc "$out"/dev "$out"/etc/ssl/certs "$out"/usr/share/doc
chmod 1777 "$out"/tmp
install -m 0755 "$bin" "$out"/usr/bin/sluice
strip --strip-unneeded "$out"/usr/bin/sluice

# Every library the dynamic linker resolves for the binary, and the linker itself, at the same
# paths as on the host (Debian's merged /usr: /lib is a link to usr/lib, as in Debian's images).
ln -s usr/lib "$out"/lib
ln -s usr/lib64 "$out"/lib64
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
for lib in $libs; do
  real=$(readlink -f "$lib")
  case "$lib" in /lib/*|/lib64/*) dest=/usr$lib ;; *) dest=$lib ;; esac
  mkdir -p "$out$(dirname "$dest")"
  install -m 0644 "$real" "$out$dest"
  strip --strip-unneeded "$out$dest" 2>/dev/null || true
  pkg=$(dpkg -S "$real" 2>/dev/null | head -n1 | cut -d: -f1 || true)
  [ -z "$pkg" ] && pkg=$(dpkg -S "$lib" 2>/dev/null | head -n1 | cut -d: -f1 || true)
  if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$out/usr/share/doc/$pkg"
    install -m 0644 "/usr/share/doc/$pkg/copyright" "$out/usr/share/doc/$pkg/copyright"
  fi
done
chmod 0755 "$out"/usr/lib64/ld-linux-x86-64.so.2 2>/dev/null || true

install -m 0644 /etc/ssl/certs/ca-certificates.crt "$out"/etc/ssl/certs/ca-certificates.crt
mkdir -p "$out"/usr/share/doc/ca-certificates
install -m 0644 /usr/share/doc/ca-certificates/copyright "$out"/usr/share/doc/ca-certificates/copyright

cat > "$out"/etc/passwd <<PASSWD
root:x:0:0:root:/root:/usr/sbin/nologin
nonroot:x:$uid:$uid:sluice:/nonexistent:/usr/sbin/nologin
PASSWD
cat > "$out"/etc/group <<GROUP
root:x:0:
nonroot:x:$uid:
GROUP
printf 'hosts: files dns\n' > "$out"/etc/nsswitch.conf
# Without a shell nothing here needs to be writable but /tmp.
find "$out" -path "$out/tmp" -prune -o -type d -exec chmod 0755 {} +
echo "rootfs: $(du -sh "$out" | cut -f1) in $out"
