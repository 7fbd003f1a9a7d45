#!/bin/sh
# Builds steward-busybox, a tiny sandbox image, from the host's static busybox, with no registry:
# a root filesystem of /bin/busybox plus a symlink per applet, fed to `docker import`.
#
#   scripts/make-busybox-image.sh [tag]        (default tag: steward-busybox:latest)
#
# Needs a statically linked busybox at $BUSYBOX (Debian/Ubuntu: apt-get install busybox-static).
# Steward builds the same image itself (src/sandbox/image.ts) when it is missing.
set -eu

tag=${1:-steward-busybox:latest}
busybox=${BUSYBOX:-/bin/busybox}

# A dynamically linked busybox would not run in an image that has no libc.
if [ ! -x "$busybox" ] || ! ldd "$busybox" 2>&1 | grep -q 'not a dynamic executable'; then
  echo "error: $busybox is missing or not statically linked (install busybox-static)" >&2
  exit 1
fi

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT

mkdir -p "$rootfs/bin" "$rootfs/sbin" "$rootfs/usr/bin" "$rootfs/usr/sbin" \
  "$rootfs/etc" "$rootfs/root" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
cp "$busybox" "$rootfs/bin/busybox"
chmod 755 "$rootfs/bin/busybox"
"$busybox" --list-full | while read -r applet; do
  [ "$applet" = bin/busybox ] && continue
  mkdir -p "$rootfs/$(dirname "$applet")"
  ln -sf /bin/busybox "$rootfs/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"

tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -cf - . |
  docker import \
    --change 'CMD ["tail", "-f", "/dev/null"]' \
    --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$tag" >/dev/null
echo "built $tag"
