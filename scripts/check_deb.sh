#!/usr/bin/env bash
# By hand (root, network, a few minutes): builds kiln's .deb with CPack, installs it with apt into a
# fresh Debian 12 chroot (debootstrap, minbase) and runs it there: `kiln --version`, `kiln run` of the
# bundled model, a zoo-free ONNX control model, and `import kiln` in python3.
# usage: scripts/check_deb.sh [CHROOT_DIR]   (default /tmp/kiln-deb-chroot; made once, reused after)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
chroot_dir="${1:-/tmp/kiln-deb-chroot}"
[ "$(id -u)" -eq 0 ] || { echo "check_deb.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
(cd "$build" && cpack -G DEB > /dev/null)
deb="$(ls "$build"/kiln_*_amd64.deb | head -1)"
if [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
  command -v debootstrap > /dev/null || apt-get install -y -qq debootstrap
  debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian > "$chroot_dir.log"
fi
cp "$deb" "$chroot_dir/tmp/kiln.deb"
cp "$root/tests/data/malformed/valid_add.onnx" "$chroot_dir/tmp/valid_add.onnx"
mount --bind /proc "$chroot_dir/proc"
trap 'umount "$chroot_dir/proc"' EXIT
chroot "$chroot_dir" /bin/sh -ec '
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends /tmp/kiln.deb python3-numpy > /tmp/apt.log
  kiln --version
  kiln run --iters 3 | tail -2
  kiln run /tmp/valid_add.onnx --iters 1 | tail -1
  python3 -c "import kiln, numpy as np; s = kiln.Session(\"/tmp/valid_add.onnx\"); print(\"python:\", s.run({\"x\": np.ones((2, 3), np.float32)})[\"y\"].tolist())"
  apt-get remove -y -qq kiln > /dev/null
  [ ! -e /usr/bin/kiln ] && [ ! -e /usr/lib/libkiln.so.0 ] && echo "removed cleanly"
'
echo "check_deb.sh: $(basename "$deb") installed with apt, ran and was removed in a fresh Debian 12 chroot"
