#!/usr/bin/env bash
# Configures and builds kiln (Release) into build/ (or $KILN_BUILD_DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
"$root/scripts/install_deps.sh" "$@"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${KILN_CMAKE_ARGS:-} >/dev/null
ninja -C "$build"
